/**
 * `method=ext-jwt` (auth.md §1.5): the caller proves itself with a JWT from an external signer, sent as
 * `Authorization: Bearer <jwt>`. Each bearer token (at most three) is bound to the signer whose issuer
 * equals its `iss`; tokens that bind to no enabled signer are ignored. The first token that verifies,
 * names an existing enabled identity (by id, or by externalId when the signer says so) whose rights the
 * signer's stamped rights cover (auth/rights.ts) and is allowed by that identity's auth policy wins, with authenticator id `extJwtId:<signerId>`.
 *
 * Failure is 401 UNAUTHORIZED (not INVALID_AUTH) with a `WWW-Authenticate` header in the primary realm
 * saying why: `expired`, `invalid`, or `missing` (also when tokens verified but led nowhere). With no
 * enabled signer at all the header is left out. As in upstream's newest controller, a token whose
 * audience does not match is `invalid`.
 */
import { ApiError } from '../../errors.ts';
import { covers } from '../rights.ts';
import type { Store } from '../../store/store.ts';
import type { IdentityService } from '../../resources/identities/identity.service.ts';
import type { AuthPolicyReader } from '../auth-policy-reader.ts';
import type { AuthMethod, AuthRequest } from './auth-method.ts';
import {
  bearerTokens,
  ExternalJwtError,
  resolveClaim,
  type SignerRecord,
  type SignerTokens,
} from '../../resources/external-jwt-signers/signer-tokens.ts';

const descriptions = {
  missing: 'no matching token was provided',
  expired: 'token expired',
  invalid: 'token is invalid',
} as const;

type Outcome = keyof typeof descriptions;

/** The `WWW-Authenticate` value of a failed primary ext-jwt authentication. */
export function primaryChallenge(error: Outcome, signers: SignerRecord[]): string {
  const ids = signers.map((s) => s.id).join('|');
  const issuers = signers.map((s) => s.issuer).join('|');
  return `Bearer realm="openziti-primary-ext-jwt" error="${error}" error_description="${descriptions[error]}" id="${ids}" issuer="${issuers}"`;
}

export function createExtJwtMethod(deps: {
  store: Store;
  signers: SignerTokens;
  identities: IdentityService;
  policies: AuthPolicyReader;
}): AuthMethod {
  const { store, signers, identities, policies } = deps;

  async function identityFor(signer: SignerRecord, claimValue: string): Promise<string | undefined> {
    if (!signer.useExternalId) return claimValue;
    const row = await store.get<{ id: string }>('SELECT id FROM identities WHERE external_id = ?', [claimValue]);
    return row?.id;
  }

  return {
    name: 'ext-jwt',
    async authenticate(req: AuthRequest) {
      // With a zt-session header every bearer token is a secondary factor, never a primary credential.
      const tokens = req.headers['zt-session'] !== undefined ? [] : bearerTokens(req.headers);
      let sawExpired = false;
      let sawInvalid = false;
      for (const token of tokens) {
        const iss = signers.decode(token)?.claims.iss;
        const signer = typeof iss === 'string' ? await signers.byIssuer(iss) : undefined;
        if (!signer || !signer.enabled) continue;
        let claims: Record<string, unknown>;
        try {
          claims = await signers.verify(signer, token);
        } catch (err) {
          if (err instanceof ExternalJwtError && err.reason === 'expired') sawExpired = true;
          else sawInvalid = true;
          continue;
        }
        const claimValue = resolveClaim(claims, signer.claimsProperty);
        if (typeof claimValue !== 'string') {
          sawInvalid = true;
          continue;
        }
        const identityId = await identityFor(signer, claimValue);
        const identity = identityId ? await identities.summary(identityId) : undefined;
        // A signer logs in only identities whose rights are covered by whoever last set its keys and claims.
        if (!identity || identity.disabled || !covers(signer.trust, identity)) continue;
        const policy = await policies.primary(identity.authPolicyId || 'default');
        if (!policy || !policy.extJwt.allowed) continue;
        const allowed = policy.extJwt.allowedSigners ?? [];
        if (allowed.length > 0 && !allowed.includes(signer.id)) continue;
        return { identityId: identity.id, authenticatorId: `extJwtId:${signer.id}` };
      }
      const enabled = await signers.enabledSigners();
      if (enabled.length === 0) throw new ApiError('UNAUTHORIZED');
      const outcome: Outcome = sawExpired ? 'expired' : sawInvalid ? 'invalid' : 'missing';
      throw new ApiError('UNAUTHORIZED', { headers: { 'WWW-Authenticate': primaryChallenge(outcome, enabled) } });
    },
  };
}
