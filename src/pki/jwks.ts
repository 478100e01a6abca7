/**
 * The controller's JWT verification key as a JSON Web Key Set (`GET /enroll/jwks`, and anyone verifying
 * controller-issued tokens without TLS access). Upstream never implemented the endpoint; the shape here
 * follows enrollment.md §2.10's design: the server public key with `kid` = the server certificate's
 * SHA-1 fingerprint, its JWS `alg`, `use: "sig"`, and `x5c` = server certificate then intermediate
 * (standard base64 DER, RFC 7517 §4.7) so a verifier can also check the key chains to the network CA.
 *
 * `networkJwks` lists the keys of every live controller of the network (jwt-keyring.ts), the own key first: a
 * token signed by any of them verifies against the set. Other controllers' entries carry their server
 * certificate alone in `x5c` (their chain is theirs to present).
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { exportJWK } from 'jose';
import { jwtAlgorithmFor } from './keys.ts';
import type { JwtKeyring } from './jwt-keyring.ts';
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
  return { keys: [await publicJwk(createPublicKey(pki.serverKey), pki.serverCertFingerprint, pki.serverChainPem)] };
}

/** The key set of the network: this controller's key (with its chain), then each other live controller's. */
export async function networkJwks(pki: JwksSource, keyring: Pick<JwtKeyring, 'keys'>): Promise<JsonWebKeySet> {
  const keys = [await publicJwk(createPublicKey(pki.serverKey), pki.serverCertFingerprint, pki.serverChainPem)];
  for (const entry of keyring.keys()) {
    if (entry.own || entry.kid === pki.serverCertFingerprint) continue;
    keys.push(await publicJwk(entry.publicKey, entry.kid, entry.certPem ?? ''));
  }
  return { keys };
}

async function publicJwk(publicKey: KeyObject, kid: string, chainPem: string): Promise<PublicJwk> {
  const { kty, crv, x, y, n, e } = await exportJWK(publicKey);
  const x5c = parsePemBlocks(chainPem)
    .filter((block) => block.label === 'CERTIFICATE')
    .map((block) => Buffer.from(block.der).toString('base64'));
  return {
    kty: kty ?? 'EC',
    ...definedOnly({ crv, x, y, n, e }),
    kid,
    alg: jwtAlgorithmFor(publicKey),
    use: 'sig',
    ...(x5c.length > 0 ? { x5c } : {}),
  };
}

function definedOnly(fields: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(fields).filter((entry): entry is [string, string] => entry[1] !== undefined));
}
