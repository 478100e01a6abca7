/**
 * Token enrollment (`POST /enroll/token`, `/enroll?method=token`; enrollment.md §2.9): a caller holding a
 * JWT from an external signer creates its own identity. The token comes in `Authorization: Bearer`; the
 * signer is the one named by the `ziti-token-issuer-id` header, or else the enabled signer whose issuer
 * equals the token's `iss`. After verification (signature, `kid`, `exp`/`nbf`, `iss`, `aud`):
 *
 * - the id claim (`claimsProperty`) becomes the identity's externalId, the name claim
 *   (`enrollNameClaimsSelector`) its name and the optional attribute claim (`enrollAttributeClaimsSelector`,
 *   a string or an array of strings) its role attributes; any problem here is INVALID_ENROLLMENT_TOKEN;
 * - an identity with that externalId already existing is 409 ENROLLMENT_IDENTITY_ALREADY_ENROLLED;
 * - with a `clientCsr` the signer must allow enroll-to-cert and the auth policy (`enrollAuthPolicyId`) cert
 *   authentication: the identity gets a network-issued certificate authenticator, and the response carries
 *   `cert` (leaf and intermediate) and `ca` (the CA bundle);
 * - without one the signer must allow enroll-to-token and the policy ext-jwt authentication from this
 *   signer: only the identity is created, and the response data is `{}`.
 *
 * The certificate is signed before the write transaction; the transaction re-checks the externalId so two
 * concurrent enrollments with one token can not both create an identity.
 */
import { mayCreateIdentities } from '../../auth/rights.ts';
import { ApiError } from '../../errors.ts';
import { newShortId } from '../../ids.ts';
import { parseCsr } from '../../pki/csr.ts';
import type { IssuedCertificate, Issuer } from '../../pki/issue-certificate.ts';
import type { Store } from '../../store/store.ts';
import { insertEntity } from '../../store/entity-table.ts';
import { isoNow, systemClock, valuesFromBody, type Clock } from '../../resources/entity-service.ts';
import { identityResource } from '../../resources/identities/identity.resource.ts';
import { normalizeRoleAttributes, type AccessService } from '../../access/access.service.ts';
import {
  bearerTokens,
  looksLikeJwt,
  resolveClaim,
  type SignerRecord,
  type SignerTokens,
} from '../../resources/external-jwt-signers/signer-tokens.ts';
import type { EnrollInput, EnrollMethod } from '../enroll-method.ts';
import { insertIssuedCertAuthenticator } from '../enrollment-store.ts';

export const TOKEN_ISSUER_HEADER = 'ziti-token-issuer-id';

export interface TokenEnrollDeps {
  store: Store;
  access: AccessService;
  signers: SignerTokens;
  pki: { issuer: Issuer; caCertPems: readonly string[] };
  clock?: Clock;
}

interface VerifiedToken {
  signer: SignerRecord;
  externalId: string;
  name: string;
  roleAttributes: string[];
}

const invalidToken = () => new ApiError('INVALID_ENROLLMENT_TOKEN');
const notAllowed = (message: string) => new ApiError('INVALID_ENROLLMENT_NOT_ALLOWED', { cause: { code: 'UNHANDLED', message } });

function headerValue(headers: EnrollInput['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

interface PolicySettings {
  cert?: { allowed?: boolean };
  extJwt?: { allowed?: boolean; allowedSigners?: string[] | null };
}

export function createTokenEnrollMethod(deps: TokenEnrollDeps): EnrollMethod {
  const { store, access, signers, pki } = deps;
  const clock = deps.clock ?? systemClock;
  const caField = pki.caCertPems.map((pem) => `\n${pem}`).join('');

  /** The identity's parts from verified claims; undefined when a claim is missing or mistyped. */
  function identityClaims(signer: SignerRecord, claims: Record<string, unknown>): Omit<VerifiedToken, 'signer'> | undefined {
    const externalId = resolveClaim(claims, signer.claimsProperty);
    const name = resolveClaim(claims, signer.enrollNameClaimsSelector);
    if (typeof externalId !== 'string' || externalId === '' || typeof name !== 'string' || name === '') return undefined;
    let roleAttributes: string[] = [];
    if (signer.enrollAttributeClaimsSelector !== '') {
      const attrs = resolveClaim(claims, signer.enrollAttributeClaimsSelector);
      if (attrs === undefined || attrs === null) roleAttributes = [];
      else if (typeof attrs === 'string') roleAttributes = [attrs];
      else if (Array.isArray(attrs) && attrs.every((a) => typeof a === 'string')) roleAttributes = attrs as string[];
      else return undefined;
    }
    return { externalId, name, roleAttributes };
  }

  async function verifiedWith(signer: SignerRecord, token: string): Promise<VerifiedToken | undefined> {
    try {
      const claims = await signers.verify(signer, token, { refetchOnUnknownKid: true });
      const parts = identityClaims(signer, claims);
      return parts ? { signer, ...parts } : undefined;
    } catch {
      return undefined;
    }
  }

  async function verifyToken(headers: EnrollInput['headers']): Promise<VerifiedToken> {
    const tokens = bearerTokens(headers, Number.MAX_SAFE_INTEGER);
    const issuerId = headerValue(headers, TOKEN_ISSUER_HEADER);
    if (issuerId !== undefined) {
      const signer = await signers.byId(issuerId);
      if (!signer || !signer.enabled) throw invalidToken();
      for (const token of tokens) {
        const verified = await verifiedWith(signer, token);
        if (verified) return verified;
      }
      throw invalidToken();
    }
    for (const token of tokens) {
      if (!looksLikeJwt(token)) continue;
      const iss = signers.decode(token)?.claims.iss;
      const signer = typeof iss === 'string' ? await signers.byIssuer(iss) : undefined;
      if (!signer || !signer.enabled) continue;
      const verified = await verifiedWith(signer, token);
      if (verified) return verified;
    }
    throw invalidToken();
  }

  async function existingByExternalId(externalId: string): Promise<boolean> {
    return (await store.get('SELECT 1 FROM identities WHERE external_id = ?', [externalId])) !== undefined;
  }

  async function policySettings(id: string): Promise<PolicySettings> {
    const row = await store.get<{ primary_settings: string }>('SELECT primary_settings FROM auth_policies WHERE id = ?', [id]);
    if (!row) throw new ApiError('UNHANDLED', { cause: { code: 'UNHANDLED', message: 'could not read auth policy' } });
    return JSON.parse(row.primary_settings) as PolicySettings;
  }

  return {
    name: 'token',
    usesToken: false,
    async enroll(input: EnrollInput) {
      const verified = await verifyToken(input.headers);
      const { signer } = verified;
      if (await existingByExternalId(verified.externalId)) throw new ApiError('ENROLLMENT_IDENTITY_ALREADY_ENROLLED');

      const csrPem = typeof input.body.clientCsr === 'string' ? input.body.clientCsr : '';
      const toCert = csrPem.trim() !== '';
      if (toCert && !signer.enrollToCertEnabled) throw notAllowed(`the token issuer ${signer.name} does not allow enrollment to a certificate`);
      if (!toCert && !signer.enrollToTokenEnabled) throw notAllowed(`the token issuer ${signer.name} does not allow enrollment to a token`);
      // Enrolling creates an identity: only a signer last set by a caller who may create identities does it.
      if (!mayCreateIdentities(signer.trust)) throw notAllowed(`the token issuer ${signer.name} was last changed by a caller who may not create identities`);

      const policyId = signer.enrollAuthPolicyId || 'default';
      const policy = await policySettings(policyId);
      if (toCert && policy.cert?.allowed === false) throw notAllowed(`auth policy ${policyId} does not allow certificate authentication`);
      if (!toCert) {
        if (policy.extJwt?.allowed === false) throw notAllowed(`auth policy ${policyId} does not allow ext-jwt authentication`);
        const allowed = policy.extJwt?.allowedSigners ?? [];
        if (allowed.length > 0 && !allowed.includes(signer.id)) {
          throw notAllowed(`auth policy ${policyId} does not allow ext-jwt authentication from ${signer.id}`);
        }
      }

      let issued: IssuedCertificate | undefined;
      if (toCert) issued = await pki.issuer.issueClientCertificate(await parseCsr(csrPem));

      const roleAttributes = normalizeRoleAttributes(verified.roleAttributes, { checkPrefix: false });
      const now = isoNow(clock);
      const identityId = newShortId();
      await store.write(async (tx) => {
        if (await tx.get('SELECT 1 FROM identities WHERE external_id = ?', [verified.externalId])) {
          throw new ApiError('ENROLLMENT_IDENTITY_ALREADY_ENROLLED');
        }
        const identity = {
          ...valuesFromBody(identityResource, { name: verified.name, type: 'Default', isAdmin: false }, 'create'),
          id: identityId,
          type: 'Default',
          authPolicyId: policyId,
          externalId: verified.externalId,
          roleAttributes,
          createdAt: now,
          updatedAt: now,
        };
        await insertEntity(tx, identityResource.decl, identity);
        await access.entityChanged(tx, 'identity', identityId, roleAttributes);
        if (issued) {
          await insertIssuedCertAuthenticator(tx, identityId, issued, now);
        }
      });
      return issued ? { cert: issued.chainPem, ca: caField } : {};
    },
  };
}
