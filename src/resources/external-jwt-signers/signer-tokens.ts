/**
 * Verification of tokens issued by external JWT signers, shared by ext-jwt authentication and token
 * enrollment (auth.md §1.5, enrollment.md §2.9). It finds the signer a token belongs to (by exact `iss`,
 * or by id), picks the key by the token's mandatory `kid` — the signer's certificate (its kid is the
 * configured `kid`, else the certificate fingerprint) or its JWKS endpoint — and verifies signature,
 * `exp`/`nbf`, `iss` and `aud`.
 *
 * JWKS keys are cached per signer and endpoint. Every verification refreshes the set unless it was
 * fetched less than a second ago; keys learned once are kept even when they leave the set, as upstream
 * does. Fetches (`jwks-fetch.ts`) time out after 5 s, follow at most 5 redirects, and refuse link-local and
 * cloud metadata addresses; a refused fetch counts as an unreachable endpoint and logs one warning.
 */
import type { KeyObject } from 'node:crypto';
import type { Store } from '../../store/store.ts';
import { parseRights, type Rights } from '../../auth/rights.ts';
import {
  decodeUnverifiedJwt,
  describeSignerCertificate,
  ExternalJwtError,
  keysFromJwks,
  verifyExternalJwt,
} from '../../pki/external-jwt.ts';

import { fetchJwks, RefusedAddressError, type ResolveHost } from './jwks-fetch.ts';

export { ExternalJwtError } from '../../pki/external-jwt.ts';

/** Where a refused JWKS fetch is reported (the controller's logger). */
export interface SignerTokensLog {
  warn(obj: object, msg: string): void;
}

export interface SignerTokensOptions {
  refreshIntervalMs?: number;
  now?: () => number;
  /** Host name resolution for JWKS fetches (the system resolver by default). */
  resolve?: ResolveHost;
  log?: SignerTokensLog;
}

/** The stored signer, as verification and enrollment need it. */
export interface SignerRecord {
  id: string;
  name: string;
  issuer: string;
  audience: string | null;
  certPem: string | null;
  jwksEndpoint: string | null;
  kid: string | null;
  fingerprint: string | null;
  enabled: boolean;
  claimsProperty: string;
  useExternalId: boolean;
  enrollToCertEnabled: boolean;
  enrollToTokenEnabled: boolean;
  enrollNameClaimsSelector: string;
  enrollAttributeClaimsSelector: string;
  enrollAuthPolicyId: string;
  /** The rights of whoever last set whose tokens the signer accepts: it logs in only identities they cover. */
  trust: Rights;
}

interface SignerRow {
  id: string;
  name: string;
  issuer: string;
  audience: string | null;
  cert_pem: string | null;
  jwks_endpoint: string | null;
  kid: string | null;
  fingerprint: string | null;
  enabled: number;
  claims_property: string | null;
  use_external_id: number;
  enroll_to_cert_enabled: number;
  enroll_to_token_enabled: number;
  enroll_name_claims_selector: string | null;
  enroll_attribute_claims_selector: string | null;
  enroll_auth_policy_id: string | null;
  trust_rights: string;
}

function toRecord(r: SignerRow): SignerRecord {
  return {
    id: r.id,
    name: r.name,
    issuer: r.issuer,
    audience: r.audience,
    certPem: r.cert_pem,
    jwksEndpoint: r.jwks_endpoint,
    kid: r.kid,
    fingerprint: r.fingerprint,
    enabled: r.enabled === 1,
    claimsProperty: r.claims_property || '/sub',
    useExternalId: r.use_external_id === 1,
    enrollToCertEnabled: r.enroll_to_cert_enabled === 1,
    enrollToTokenEnabled: r.enroll_to_token_enabled === 1,
    enrollNameClaimsSelector: r.enroll_name_claims_selector || '/sub',
    enrollAttributeClaimsSelector: r.enroll_attribute_claims_selector ?? '',
    enrollAuthPolicyId: r.enroll_auth_policy_id || 'default',
    trust: parseRights(r.trust_rights),
  };
}

const COLUMNS =
  'id, name, issuer, audience, cert_pem, jwks_endpoint, kid, fingerprint, enabled, claims_property, use_external_id, ' +
  'enroll_to_cert_enabled, enroll_to_token_enabled, enroll_name_claims_selector, enroll_attribute_claims_selector, enroll_auth_policy_id, trust_rights';

/** Resolves a JSON Pointer (a leading `/` is added when missing) in the claims; undefined when absent. */
export function resolveClaim(claims: Record<string, unknown>, selector: string): unknown {
  const pointer = selector.startsWith('/') ? selector : `/${selector}`;
  let cur: unknown = claims;
  for (const raw of pointer.split('/').slice(1)) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9][0-9]*)$/.test(seg)) return undefined;
      cur = cur[Number(seg)];
    } else if (cur !== null && typeof cur === 'object') {
      if (!Object.prototype.hasOwnProperty.call(cur, seg)) return undefined;
      cur = (cur as Record<string, unknown>)[seg];
    } else {
      return undefined;
    }
  }
  return cur;
}

/** A selector is a JSON Pointer after adding the leading `/`: `~` may only escape `0` or `1`. */
export function isValidPointer(selector: string): boolean {
  return !/~(?![01])/.test(selector);
}

/** The `Bearer ` values of the Authorization header(s), in order, at most `limit`. */
export function bearerTokens(headers: Record<string, string | string[] | undefined>, limit = 3): string[] {
  const raw = headers.authorization;
  const values = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  return values
    .filter((v) => v.startsWith('Bearer '))
    .map((v) => v.slice('Bearer '.length).trim())
    .slice(0, limit);
}

/** Shape check used before inspecting a token: starts with `e`, three non-empty dot-separated parts. */
export function looksLikeJwt(token: string): boolean {
  const parts = token.split('.');
  return token.startsWith('e') && parts.length === 3 && parts.every((p) => p.length > 0);
}

interface JwksEntry {
  keys: Map<string, KeyObject>;
  fetchedAt: number;
}

export interface VerifyOptions {
  /** Fetch the JWKS again when the kid is unknown (the enrollment path), even within the refresh interval. */
  refetchOnUnknownKid?: boolean;
}

export function createSignerTokens(store: Store, opts: SignerTokensOptions = {}) {
  const refreshIntervalMs = opts.refreshIntervalMs ?? 1000;
  const now = opts.now ?? Date.now;
  const jwksCache = new Map<string, JwksEntry>();

  async function byIssuer(issuer: string): Promise<SignerRecord | undefined> {
    const row = await store.get<SignerRow>(`SELECT ${COLUMNS} FROM external_jwt_signers WHERE issuer = ?`, [issuer]);
    return row ? toRecord(row) : undefined;
  }

  async function byId(id: string): Promise<SignerRecord | undefined> {
    const row = await store.get<SignerRow>(`SELECT ${COLUMNS} FROM external_jwt_signers WHERE id = ?`, [id]);
    return row ? toRecord(row) : undefined;
  }

  async function enabledSigners(): Promise<SignerRecord[]> {
    const rows = await store.all<SignerRow>(`SELECT ${COLUMNS} FROM external_jwt_signers WHERE enabled = 1 ORDER BY created_at, id`);
    return rows.map(toRecord);
  }

  async function refresh(signerId: string, key: string, url: string, entry: JwksEntry | undefined): Promise<JwksEntry | undefined> {
    try {
      const fetched = keysFromJwks(await fetchJwks(url, { resolve: opts.resolve }));
      const next: JwksEntry = { keys: new Map([...(entry?.keys ?? []), ...fetched]), fetchedAt: now() };
      jwksCache.set(key, next);
      return next;
    } catch (err) {
      if (err instanceof RefusedAddressError) {
        // The host only: the URL's path or query may carry a secret.
        opts.log?.warn({ signerId, host: err.host, address: err.address }, 'JWKS fetch refused: link-local or cloud metadata address');
      }
      // An unreachable endpoint leaves the keys learned earlier usable.
      if (entry) entry.fetchedAt = now();
      return entry;
    }
  }

  async function jwksKey(signer: SignerRecord, kid: string, options: VerifyOptions): Promise<KeyObject | undefined> {
    const url = signer.jwksEndpoint as string;
    const cacheKey = `${signer.id}|${url}`;
    let entry = jwksCache.get(cacheKey);
    let fetchedNow = false;
    if (!entry || now() - entry.fetchedAt >= refreshIntervalMs) {
      entry = await refresh(signer.id, cacheKey, url, entry);
      fetchedNow = true;
    }
    let key = entry?.keys.get(kid);
    if (!key && options.refetchOnUnknownKid && !fetchedNow) {
      entry = await refresh(signer.id, cacheKey, url, entry);
      key = entry?.keys.get(kid);
    }
    return key;
  }

  async function signingKey(signer: SignerRecord, kid: string, options: VerifyOptions): Promise<KeyObject | undefined> {
    if (signer.certPem) {
      const cert = describeSignerCertificate(signer.certPem);
      const expectedKid = signer.kid || cert.fingerprint;
      return kid === expectedKid ? cert.publicKey : undefined;
    }
    if (signer.jwksEndpoint) return jwksKey(signer, kid, options);
    return undefined;
  }

  /**
   * Verifies `token` against `signer`; returns its claims or throws ExternalJwtError (`expired` or
   * `invalid`). The signer's `enabled` flag is the caller's business.
   */
  async function verify(signer: SignerRecord, token: string, options: VerifyOptions = {}): Promise<Record<string, unknown>> {
    const unverified = decodeUnverifiedJwt(token);
    if (!unverified) throw new ExternalJwtError('invalid', 'token is not a JWT');
    if (!unverified.kid) throw new ExternalJwtError('invalid', 'token has no kid');
    let key: KeyObject | undefined;
    try {
      key = await signingKey(signer, unverified.kid, options);
    } catch {
      key = undefined;
    }
    if (!key) throw new ExternalJwtError('invalid', `no key with kid ${unverified.kid}`);
    return verifyExternalJwt(token, key, { issuer: signer.issuer, audience: signer.audience ?? undefined });
  }

  return { byIssuer, byId, enabledSigners, verify, decode: decodeUnverifiedJwt };
}

export type SignerTokens = ReturnType<typeof createSignerTokens>;
