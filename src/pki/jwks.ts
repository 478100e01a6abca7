/**
 * The controller's JWT verification key as a JSON Web Key Set (`GET /enroll/jwks`, and anyone verifying
 * controller-issued tokens without TLS access). Upstream never implemented the endpoint; the shape here
 * follows enrollment.md §2.10's design: the server public key with `kid` = the server certificate's
 * SHA-1 fingerprint, its JWS `alg`, `use: "sig"`, and `x5c` = server certificate then intermediate
 * (standard base64 DER, RFC 7517 §4.7) so a verifier can also check the key chains to the network CA.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { exportJWK } from 'jose';
import { jwtAlgorithmFor } from './keys.ts';
import { parsePemBlocks } from './pem.ts';

/** An RFC 7517 public key entry: EC keys carry `crv, x, y`; RSA keys carry `n, e`. */
export interface PublicJwk {
  kty: string;
  crv?: string;
  x?: string;
  y?: string;
  n?: string;
  e?: string;
  kid: string;
  alg: string;
  use: 'sig';
  x5c?: string[];
}

export interface JsonWebKeySet {
  keys: PublicJwk[];
}

/** What the key set is built from; `ControllerPki` satisfies it. */
export interface JwksSource {
  serverKey: KeyObject;
  serverCertFingerprint: string;
  /** Server certificate followed by its issuing CA(s). */
  serverChainPem: string;
}

/** The key set holding the server's public signing key. */
export async function serverJwks(pki: JwksSource): Promise<JsonWebKeySet> {
  const { kty, crv, x, y, n, e } = await exportJWK(createPublicKey(pki.serverKey));
  const x5c = parsePemBlocks(pki.serverChainPem)
    .filter((block) => block.label === 'CERTIFICATE')
    .map((block) => Buffer.from(block.der).toString('base64'));
  const jwk: PublicJwk = {
    kty: kty ?? 'EC',
    ...definedOnly({ crv, x, y, n, e }),
    kid: pki.serverCertFingerprint,
    alg: jwtAlgorithmFor(pki.serverKey),
    use: 'sig',
    ...(x5c.length > 0 ? { x5c } : {}),
  };
  return { keys: [jwk] };
}

function definedOnly(fields: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(fields).filter((entry): entry is [string, string] => entry[1] !== undefined));
}
