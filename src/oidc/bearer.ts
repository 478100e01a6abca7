/**
 * `Authorization: Bearer <access token>` on both Edge APIs: the API session of an OIDC login. The token must be one
 * a live controller of the network signed (src/pki/jwt-keyring.ts; access type, one of our audiences, not expired);
 * its `z_asid` then names the API session, resolved with exactly the rules of a zt-session
 * (authentication.service.ts `resolveOidcCaller`): ending the session, disabling or deleting the identity refuse the
 * token at the next request, on every process.
 *
 * Verifying a signature costs far more than the rest of a request, so verified tokens are kept per process until
 * they expire (bounded; a hit still checks the expiry and resolves the session as above, but not whether the
 * controller that signed it is still live).
 */
import { ApiError } from '../errors.ts';
import type { Caller } from '../http/caller.ts';
import type { JwtSigningKey } from '../pki/enrollment-jwt.ts';
import { createJwtKeyring } from '../pki/jwt-keyring.ts';
import type { Membership } from '../cluster/membership.ts';
import type { Clock } from '../resources/entity-service.ts';
import type { AuthenticationService } from '../auth/authentication.service.ts';
import { TokenRefused, verifyOidcToken, type SessionClaims } from './tokens.ts';
import { bearerTokens, looksLikeJwt } from '../resources/external-jwt-signers/signer-tokens.ts';

const MAX_VERIFIED = 10_000;

export const invalidBearerChallenge = 'Bearer realm="openziti-oidc" error="invalid" error_description="token is invalid"';
export const expiredBearerChallenge = 'Bearer realm="openziti-oidc" error="expired" error_description="token expired"';

interface Verified {
  session: SessionClaims;
  claims: Record<string, unknown>;
  expMs: number;
}

/** The unverified payload of a compact JWT, or undefined. */
function peek(token: string): Record<string, unknown> | undefined {
  if (!looksLikeJwt(token) || token.length > 16_384) return undefined;
  try {
    const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as unknown;
    return payload && typeof payload === 'object' && !Array.isArray(payload) ? (payload as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The bearer token among a request's that claims to be an access token of ours (`z_t` "a" with a `z_asid`). */
export function accessTokenOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  for (const token of bearerTokens(headers)) {
    const claims = peek(token);
    if (claims?.z_t === 'a' && typeof claims.z_asid === 'string' && claims.z_asid !== '') return token;
  }
  return undefined;
}

export interface BearerDeps {
  /** This controller's signing key. */
  key: JwtSigningKey;
  /** The network's controllers: an access token any live one signed is accepted. Absent: this controller alone. */
  membership?: Pick<Membership, 'known'>;
  auth: Pick<AuthenticationService, 'resolveOidcCaller'>;
  clock: Clock;
}

export function createBearerResolver(deps: BearerDeps) {
  const keyring = createJwtKeyring(deps.key, () => deps.membership?.known() ?? []);
  const verified = new Map<string, Verified>();

  async function verify(token: string): Promise<Verified> {
    const now = deps.clock.now();
    const hit = verified.get(token);
    if (hit) {
      if (hit.expMs > now.getTime()) return hit;
      verified.delete(token);
      throw new TokenRefused('expired');
    }
    const { claims, session } = await verifyOidcToken(token, keyring, 'a', now);
    const entry = { session, claims, expMs: (claims.exp as number) * 1000 };
    if (verified.size >= MAX_VERIFIED) verified.delete(verified.keys().next().value as string);
    verified.set(token, entry);
    return entry;
  }

  /** The caller a request's access token names; throws 401 with the Bearer challenge when it names none. */
  async function resolve(token: string, headers: Record<string, string | string[] | undefined>): Promise<Caller> {
    let entry: Verified;
    try {
      entry = await verify(token);
    } catch (err) {
      const expired = err instanceof TokenRefused && err.reason === 'expired';
      throw new ApiError('UNAUTHORIZED', { headers: { 'www-authenticate': expired ? expiredBearerChallenge : invalidBearerChallenge } });
    }
    const caller = await deps.auth.resolveOidcCaller(entry.session.apiSessionId, token, headers);
    if (!caller || caller.identity.id !== entry.session.sub) {
      throw new ApiError('UNAUTHORIZED', { headers: { 'www-authenticate': invalidBearerChallenge } });
    }
    caller.jwt = { claims: entry.claims, expiresAt: new Date(entry.expMs) };
    return caller;
  }

  return { resolve };
}

export type BearerResolver = ReturnType<typeof createBearerResolver>;
