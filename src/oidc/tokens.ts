/**
 * The tokens of an OIDC login: access (`z_t` "a"), refresh (`z_t` "r") and ID token, as JWTs signed with the
 * controller's server key under its certificate's `kid` (routers validate access tokens with the same keys they
 * get in the router data model). Claims follow upstream (`z_asid` API session, `z_ct` config types, `z_cfs` client
 * certificate fingerprints, …) with the fixes its later releases made: the access token carries `amr` and
 * `auth_time`, and the ID token carries `sid`, the API session id, which `end_session` reads.
 */
import { randomUUID } from 'node:crypto';
import { signJwt, type JwtClaims, type JwtSigningKey } from '../pki/enrollment-jwt.ts';
import type { JwtVerifier } from '../pki/jwt-keyring.ts';

export interface OidcLifetimes {
  accessTokenSeconds: number;
  refreshTokenSeconds: number;
  idTokenSeconds: number;
}

export const DEFAULT_LIFETIMES: OidcLifetimes = { accessTokenSeconds: 30 * 60, refreshTokenSeconds: 24 * 60 * 60, idTokenSeconds: 30 * 60 };

/** What a login established, carried from token to token: everything but the times, `jti` and `z_t`. */
export interface SessionClaims {
  iss: string;
  sub: string;
  clientId: string;
  apiSessionId: string;
  amr: string[];
  authTime: number;
  scopes: string[];
  configTypes: string[];
  certFingerprints: string[];
  remoteAddress: string;
  authenticatorId: string;
  isAdmin: boolean;
  externalId: string;
  sdkInfo: Record<string, string> | null;
  envInfo: Record<string, string> | null;
  certFlags: { extendable: boolean; extendRequested: boolean; keyRollRequested: boolean; improperChain: boolean };
}

export interface IdentityFacts {
  name: string;
  isAdmin: boolean;
  externalId: string;
}

function customClaims(s: SessionClaims): JwtClaims {
  return {
    z_asid: s.apiSessionId,
    z_aid: s.clientId,
    ...(s.configTypes.length > 0 ? { z_ct: s.configTypes } : {}),
    z_cfs: s.certFingerprints.length > 0 ? s.certFingerprints : null,
    ...(s.isAdmin ? { z_ia: true } : {}),
    ...(s.externalId !== '' ? { z_eid: s.externalId } : {}),
    scopes: s.scopes,
    z_sdk: s.sdkInfo,
    z_env: s.envInfo,
    z_ra: s.remoteAddress,
    ...(s.authenticatorId !== '' ? { z_authid: s.authenticatorId } : {}),
    z_ice: s.certFlags.extendable,
    z_cer: s.certFlags.extendRequested,
    z_ckrr: s.certFlags.keyRollRequested,
    z_iccc: s.certFlags.improperChain,
  };
}

export interface IssuedTokens {
  accessToken: string;
  refreshToken: string;
  idToken: string;
  expiresIn: number;
  /** Seconds since the epoch at which the refresh token expires (the API session ends then). */
  refreshExpiresAt: number;
}

export function createOidcTokens(key: JwtSigningKey, lifetimes: OidcLifetimes, now: () => number) {
  const seconds = () => Math.floor(now() / 1000);

  function standard(s: SessionClaims, iat: number, lifetime: number, jti: string): JwtClaims {
    return { iss: s.iss, sub: s.sub, aud: [s.clientId], exp: iat + lifetime, iat, nbf: iat, jti, auth_time: s.authTime, amr: s.amr, client_id: s.clientId };
  }

  function access(s: SessionClaims, iat = seconds(), jti: string = randomUUID()): Promise<string> {
    return signJwt({ ...standard(s, iat, lifetimes.accessTokenSeconds, jti), ...customClaims(s), z_t: 'a' }, key);
  }

  function refresh(s: SessionClaims, iat = seconds(), jti: string = randomUUID()): Promise<string> {
    return signJwt({ ...standard(s, iat, lifetimes.refreshTokenSeconds, jti), ...customClaims(s), z_t: 'r' }, key);
  }

  function id(s: SessionClaims, identity: IdentityFacts, nonce: string, iat = seconds()): Promise<string> {
    return signJwt(
      {
        iss: s.iss,
        sub: s.sub,
        aud: [s.clientId],
        exp: iat + lifetimes.idTokenSeconds,
        iat,
        auth_time: s.authTime,
        ...(nonce !== '' ? { nonce } : {}),
        amr: s.amr,
        azp: s.clientId,
        client_id: s.clientId,
        sid: s.apiSessionId,
        name: identity.name,
        ...(identity.isAdmin ? { z_ia: true } : {}),
        ...(identity.externalId !== '' ? { z_eid: identity.externalId } : {}),
      },
      key,
    );
  }

  /**
   * Access, refresh and (unless `withIdToken` is false: a token exchange answers without one) ID token for a
   * session, all issued now. Each is a signature, most of what issuing costs with an RSA key.
   */
  async function issue(s: SessionClaims, identity: IdentityFacts, nonce: string, withIdToken = true): Promise<IssuedTokens> {
    const iat = seconds();
    return {
      accessToken: await access(s, iat),
      refreshToken: await refresh(s, iat, randomUUID()),
      idToken: withIdToken ? await id(s, identity, nonce, iat) : '',
      expiresIn: lifetimes.accessTokenSeconds,
      refreshExpiresAt: iat + lifetimes.refreshTokenSeconds,
    };
  }

  return { access, refresh, id, issue, lifetimes };
}

export type OidcTokens = ReturnType<typeof createOidcTokens>;

/** The session claims a verified access or refresh token carries; undefined when a claim is missing or malformed. */
export function sessionClaimsOf(claims: JwtClaims): SessionClaims | undefined {
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const strings = (v: unknown) => (Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : undefined);
  const info = (v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string') ? (v as Record<string, string>) : null;
  const aud = strings(claims.aud) ?? (typeof claims.aud === 'string' ? [claims.aud] : undefined);
  const iss = str(claims.iss);
  const sub = str(claims.sub);
  const apiSessionId = str(claims.z_asid);
  const clientId = str(claims.client_id) ?? aud?.[0];
  if (!iss || !sub || !apiSessionId || !clientId) return undefined;
  return {
    iss,
    sub,
    clientId,
    apiSessionId,
    amr: strings(claims.amr) ?? [],
    authTime: typeof claims.auth_time === 'number' ? claims.auth_time : 0,
    scopes: strings(claims.scopes) ?? [],
    configTypes: strings(claims.z_ct) ?? [],
    certFingerprints: strings(claims.z_cfs) ?? [],
    remoteAddress: str(claims.z_ra) ?? '',
    authenticatorId: str(claims.z_authid) ?? '',
    isAdmin: claims.z_ia === true,
    externalId: str(claims.z_eid) ?? '',
    sdkInfo: info(claims.z_sdk),
    envInfo: info(claims.z_env),
    certFlags: { extendable: claims.z_ice === true, extendRequested: claims.z_cer === true, keyRollRequested: claims.z_ckrr === true, improperChain: claims.z_iccc === true },
  };
}

/** Why a token was refused: `expired` (answered as such to REST callers) or anything else. */
export class TokenRefused extends Error {
  constructor(readonly reason: 'expired' | 'invalid') {
    super(reason === 'expired' ? 'token expired' : 'token is invalid');
  }
}

const OUR_AUDIENCES = new Set(['openziti', 'native']);

/**
 * Verifies a token a controller of the network signed for a login: signature (the key its `kid` names among the
 * live controllers' keys, that key's algorithm only: `none` and HMAC are refused; src/pki/jwt-keyring.ts), time
 * claims, `z_t` and an audience of our clients. Throws TokenRefused.
 */
export async function verifyOidcToken(token: string, keys: JwtVerifier, type: 'a' | 'r', now: Date): Promise<{ claims: JwtClaims; session: SessionClaims }> {
  let claims: JwtClaims;
  try {
    claims = await keys.verify(token, { currentDate: now });
  } catch (err) {
    throw new TokenRefused((err as { code?: string }).code === 'ERR_JWT_EXPIRED' ? 'expired' : 'invalid');
  }
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (claims.z_t !== type || !aud.some((a) => typeof a === 'string' && OUR_AUDIENCES.has(a))) throw new TokenRefused('invalid');
  if (typeof claims.nbf === 'number' && claims.nbf > Math.floor(now.getTime() / 1000) + 5) throw new TokenRefused('invalid');
  const session = sessionClaimsOf(claims);
  if (!session) throw new TokenRefused('invalid');
  return { claims, session };
}
