/**
 * Signs and verifies the JWTs the controller issues (enrollment, CA, network and session tokens). They
 * are signed with the TLS server key, not a separate JWT key, because SDKs bootstrap trust by verifying
 * the token against the certificate the server presents at `iss` (enrollment.md §1.3-1.4). The header is
 * exactly `{alg, kid, typ}` with `kid` = the server certificate's SHA-1 fingerprint; the payload is
 * signed as given, in the caller's key order, and nothing (no `iat`, no `nbf`) is added.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import { jwtAlgorithmFor } from './keys.ts';

/** The part of the controller PKI a JWT signer needs; `ControllerPki` satisfies it. */
export interface JwtSigningKey {
  serverKey: KeyObject;
  serverCertFingerprint: string;
}

export type JwtClaims = Record<string, unknown>;

export interface VerifyJwtOptions {
  /** Time against which `exp` is checked; defaults to now. */
  currentDate?: Date;
}

/** A compact JWS over `claims`, header `{alg, kid, typ: "JWT"}` (keys in that, sorted, order as upstream). */
export async function signJwt(claims: JwtClaims, pki: JwtSigningKey): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: jwtAlgorithmFor(pki.serverKey), kid: pki.serverCertFingerprint, typ: 'JWT' })
    .sign(pki.serverKey);
}

/**
 * The claims of a token signed by the server key; rejects on a bad signature, a different algorithm, or
 * an `exp` in the past. The `kid` is not compared: a renewed server certificate keeps its key, and tokens
 * signed under the previous certificate remain valid, as they do for SDKs that check only the key.
 */
export async function verifyJwt(token: string, pki: JwtSigningKey, options: VerifyJwtOptions = {}): Promise<JwtClaims> {
  const { payload } = await jwtVerify(token, createPublicKey(pki.serverKey), {
    algorithms: [jwtAlgorithmFor(pki.serverKey)],
    currentDate: options.currentDate,
  });
  return payload;
}
