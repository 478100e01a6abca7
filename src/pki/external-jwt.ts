/**
 * JWTs issued by someone else: the tokens of external JWT signers (identity providers), used for ext-jwt
 * authentication and token enrollment. This module only does the cryptography and the key material:
 * reading a token's unverified header and claims, describing a signer's certificate, turning a JSON Web
 * Key Set into public keys, and verifying a token against one key. Which signer a token belongs to, key
 * caching and what the claims mean are decided by the callers.
 */
import { X509Certificate, createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import { ApiError } from '../errors.ts';
import { sha1Fingerprint } from './fingerprint.ts';
import { parsePemBlocks } from './pem.ts';

export interface UnverifiedJwt {
  kid: string | undefined;
  alg: string | undefined;
  claims: Record<string, unknown>;
}

/** Header and claims of a compact JWS without checking anything; undefined when it does not parse. */
export function decodeUnverifiedJwt(token: string): UnverifiedJwt | undefined {
  try {
    const header = decodeProtectedHeader(token);
    const claims = decodeJwt(token) as Record<string, unknown>;
    return {
      kid: typeof header.kid === 'string' ? header.kid : undefined,
      alg: typeof header.alg === 'string' ? header.alg : undefined,
      claims,
    };
  } catch {
    return undefined;
  }
}

export interface SignerCertificate {
  /** Lower-case hex SHA-1 of the DER. */
  fingerprint: string;
  commonName: string;
  notBefore: Date;
  notAfter: Date;
  publicKey: KeyObject;
}

/**
 * A signer's certificate: the PEM must hold exactly one CERTIFICATE block that parses as X.509
 * (otherwise 400 INVALID_CERT_PEM, as upstream answers).
 */
export function describeSignerCertificate(pem: string): SignerCertificate {
  let blocks;
  try {
    blocks = parsePemBlocks(pem).filter((b) => b.label === 'CERTIFICATE');
  } catch {
    throw new ApiError('INVALID_CERT_PEM');
  }
  if (blocks.length !== 1) throw new ApiError('INVALID_CERT_PEM');
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(Buffer.from(blocks[0].der));
  } catch {
    throw new ApiError('INVALID_CERT_PEM');
  }
  const cn = /^CN=(.*)$/m.exec(cert.subject)?.[1] ?? '';
  return {
    fingerprint: sha1Fingerprint(blocks[0].der),
    commonName: cn,
    notBefore: new Date(cert.validFrom),
    notAfter: new Date(cert.validTo),
    publicKey: cert.publicKey,
  };
}

/**
 * The public keys of a JSON Web Key Set by `kid`. An entry with `x5c` contributes its first
 * certificate's key; others are read from their JWK parameters. Entries without a kid, private keys
 * and entries that do not parse are skipped.
 */
export function keysFromJwks(jwks: unknown): Map<string, KeyObject> {
  const out = new Map<string, KeyObject>();
  const keys = (jwks as { keys?: unknown })?.keys;
  if (!Array.isArray(keys)) return out;
  for (const entry of keys) {
    if (!entry || typeof entry !== 'object') continue;
    const jwk = entry as Record<string, unknown>;
    if (typeof jwk.kid !== 'string' || jwk.kid === '' || jwk.d !== undefined) continue;
    try {
      if (Array.isArray(jwk.x5c) && typeof jwk.x5c[0] === 'string') {
        out.set(jwk.kid, new X509Certificate(Buffer.from(jwk.x5c[0], 'base64')).publicKey);
      } else {
        const { kty, crv, x, y, n, e } = jwk as Record<string, string>;
        const fields = Object.fromEntries(Object.entries({ kty, crv, x, y, n, e }).filter(([, v]) => v !== undefined));
        out.set(jwk.kid, createPublicKey({ key: fields as JsonWebKey, format: 'jwk' }));
      }
    } catch {
      // An entry this controller cannot use is ignored; the others still count.
    }
  }
  return out;
}

export type ExternalJwtFailure = 'expired' | 'invalid';

/** Why a token failed verification: `expired`, or `invalid` for everything else. */
export class ExternalJwtError extends Error {
  readonly reason: ExternalJwtFailure;
  constructor(reason: ExternalJwtFailure, message: string) {
    super(message);
    this.name = 'ExternalJwtError';
    this.reason = reason;
  }
}

export interface ExternalJwtChecks {
  /** Required `iss`, when given. */
  issuer?: string;
  /** Value `aud` (string or array) must contain, when given. */
  audience?: string;
  currentDate?: Date;
}

/**
 * Verifies the signature with `key` (any JOSE algorithm that fits the key; `none` never verifies) and
 * the time claims `exp` and `nbf` without leeway, then the issuer and audience. Returns the claims.
 */
export async function verifyExternalJwt(token: string, key: KeyObject, checks: ExternalJwtChecks = {}): Promise<Record<string, unknown>> {
  try {
    const { payload } = await jwtVerify(token, key, {
      issuer: checks.issuer,
      audience: checks.audience,
      currentDate: checks.currentDate,
    });
    return payload as Record<string, unknown>;
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) throw new ExternalJwtError('expired', 'token expired');
    throw new ExternalJwtError('invalid', err instanceof Error ? err.message : 'token is invalid');
  }
}
