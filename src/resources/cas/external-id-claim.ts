/**
 * A CA's `externalIdClaim`: how to read an identity's externalId out of a certificate the CA issued
 * (enrollment.md §4.4). Candidates are located (subject CN, URI SANs or e-mail SANs), filtered by a
 * matcher (ALL; PREFIX and SUFFIX strip what they match; SCHEME keeps URIs of one scheme), optionally
 * split, concatenated, and the value at `index` is the externalId. Configurations that could never work
 * are refused when stored (upstream's newer validation), so evaluation never meets them.
 */
import { fieldError } from '../../errors.ts';
import type { ParsedCertificate } from '../../pki/certificate-chain.ts';

export type ClaimLocation = 'COMMON_NAME' | 'SAN_URI' | 'SAN_EMAIL';
export type ClaimMatcher = 'ALL' | 'PREFIX' | 'SUFFIX' | 'SCHEME';
export type ClaimParser = 'NONE' | 'SPLIT';

export interface ExternalIdClaim {
  location: ClaimLocation | null;
  matcher: ClaimMatcher | null;
  matcherCriteria: string | null;
  parser: ClaimParser | null;
  parserCriteria: string | null;
  index: number | null;
}

export const CLAIM_FIELDS = ['index', 'location', 'matcher', 'matcherCriteria', 'parser', 'parserCriteria'] as const;

const MATCHERS_BY_LOCATION: Record<ClaimLocation, readonly ClaimMatcher[]> = {
  COMMON_NAME: ['ALL', 'PREFIX', 'SUFFIX'],
  SAN_EMAIL: ['ALL', 'PREFIX', 'SUFFIX'],
  SAN_URI: ['ALL', 'SCHEME'],
};

function invalid(field: string, reason: string, value: unknown) {
  return fieldError(`externalIdClaim.${field}`, reason, value);
}

/** Fills absent members with null so the stored claim always has all six. */
export function completeClaim(claim: Partial<ExternalIdClaim>): ExternalIdClaim {
  return {
    index: claim.index ?? null,
    location: claim.location ?? null,
    matcher: claim.matcher ?? null,
    matcherCriteria: claim.matcherCriteria ?? null,
    parser: claim.parser ?? null,
    parserCriteria: claim.parserCriteria ?? null,
  };
}

/** A claim of a create or put body: upstream requires all six members, none null, and names the first missing in this order. */
export function assertWholeClaim(claim: Record<string, unknown>): void {
  for (const field of CLAIM_FIELDS) {
    if (claim[field] === undefined || claim[field] === null) throw invalid(field, `externalIdClaim.${field} in body is required`, null);
  }
}

/** Refuses a claim that can not yield a value; throws 400 COULD_NOT_VALIDATE naming the member. */
export function validateExternalIdClaim(claim: ExternalIdClaim): void {
  if (!claim.location) throw invalid('location', 'externalIdClaim.location in body is required', claim.location);
  if (!claim.matcher) throw invalid('matcher', 'externalIdClaim.matcher in body is required', claim.matcher);
  if (!MATCHERS_BY_LOCATION[claim.location].includes(claim.matcher)) {
    throw invalid('matcher', `matcher ${claim.matcher} can not be used with location ${claim.location}`, claim.matcher);
  }
  if (claim.matcher !== 'ALL' && !claim.matcherCriteria) {
    throw invalid('matcherCriteria', `matcher ${claim.matcher} requires matcherCriteria`, claim.matcherCriteria);
  }
  if (!claim.parser) throw invalid('parser', 'externalIdClaim.parser in body is required', claim.parser);
  if (claim.parser === 'SPLIT' && !claim.parserCriteria) {
    throw invalid('parserCriteria', 'parser SPLIT requires parserCriteria (the separator)', claim.parserCriteria);
  }
  if (claim.index !== null && claim.index < 0) throw invalid('index', 'index must be at least 0', claim.index);
}

function candidates(claim: ExternalIdClaim, cert: ParsedCertificate): string[] {
  switch (claim.location) {
    case 'COMMON_NAME':
      return cert.commonName === undefined ? [] : [cert.commonName];
    case 'SAN_URI':
      return cert.sans.uri;
    case 'SAN_EMAIL':
      return cert.sans.email;
    default:
      return [];
  }
}

function uriScheme(value: string): string | undefined {
  const match = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(value);
  return match ? match[1] : undefined;
}

function matched(claim: ExternalIdClaim, value: string): string | undefined {
  const criteria = claim.matcherCriteria ?? '';
  switch (claim.matcher) {
    case 'ALL':
      return value;
    case 'PREFIX':
      return value.startsWith(criteria) ? value.slice(criteria.length) : undefined;
    case 'SUFFIX':
      return value.endsWith(criteria) ? value.slice(0, value.length - criteria.length) : undefined;
    case 'SCHEME':
      return uriScheme(value)?.toLowerCase() === criteria.toLowerCase() ? value : undefined;
    default:
      return undefined;
  }
}

/** The externalId the claim yields for `cert`, or undefined when it yields none (or an empty value). */
export function externalIdFrom(claim: ExternalIdClaim, cert: ParsedCertificate): string | undefined {
  const values: string[] = [];
  for (const candidate of candidates(claim, cert)) {
    const value = matched(claim, candidate);
    if (value === undefined) continue;
    if (claim.parser === 'SPLIT' && claim.parserCriteria) values.push(...value.split(claim.parserCriteria));
    else values.push(value);
  }
  const result = values[claim.index ?? 0];
  return result === undefined || result === '' ? undefined : result;
}
