/**
 * The keys a controller accepts JWTs under: its own server key, and the server keys of the other live controllers
 * of its network (src/cluster/membership.ts), so that a token one controller signed verifies on every other. Each
 * controller still signs with its own key only (enrollment-jwt.ts `signJwt`).
 *
 * A token's key is chosen by the `kid` of its protected header, never by trying keys in turn:
 *
 * - the own certificate's fingerprint: the own key;
 * - a live member's fingerprint: the public key of that member's certificate, after checking that the certificate
 *   really has that fingerprint (a member whose certificate does not match, or whose key type no controller
 *   signs with, verifies nothing);
 * - no `kid`, or a `kid` no live controller has: the own key only. A server certificate renewed at startup keeps
 *   its key, so a token signed under an earlier certificate of this controller must still verify; for any other
 *   key such a token is refused.
 *
 * The algorithm is fixed by the chosen key's type (keys.ts `jwtAlgorithmFor`: ES256/ES384/ES512 or RS256); the
 * header's `alg` must equal it, so `none`, HMAC and any other algorithm are refused. Verification is jose's;
 * failures reject with jose's errors (`code` ERR_JWT_EXPIRED, ERR_JWS_SIGNATURE_VERIFICATION_FAILED, …; a `kid`
 * naming a member whose certificate is unusable: ERR_JWKS_NO_MATCHING_KEY).
 *
 * Parsed member keys are kept by fingerprint (a fingerprint names one certificate); the members themselves are
 * read on every verification, so a controller that leaves stops verifying at once.
 */
import { createHash, createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import { decodeProtectedHeader, errors, jwtVerify } from 'jose';
import type { ControllerMember } from '../cluster/membership.ts';
import type { JwtClaims, JwtSigningKey, VerifyJwtOptions } from './enrollment-jwt.ts';
import { jwtAlgorithmFor, type JwtAlgorithm } from './keys.ts';

/** What the keyring needs of a member: its server certificate and that certificate's fingerprint (its `kid`). */
export type KeyringMember = Pick<ControllerMember, 'certPem' | 'fingerprint'>;

/** One key tokens verify under. */
export interface KeyringEntry {
  /** The `kid` of the tokens it signs: its certificate's fingerprint. */
  kid: string;
  publicKey: KeyObject;
  algorithm: JwtAlgorithm;
  /** True for this controller's own key. */
  own: boolean;
  /** The member's certificate (PEM); undefined for the own key (the PKI has its chain). */
  certPem?: string;
}

export interface VerifiedJwt {
  claims: JwtClaims;
  /** The key that verified the token. */
  key: KeyringEntry;
}

/** Anything that checks a controller-signed JWT and returns its claims. */
export interface JwtVerifier {
  verify(token: string, options?: VerifyJwtOptions): Promise<JwtClaims>;
}

export interface JwtKeyring<M extends KeyringMember = KeyringMember> extends JwtVerifier {
  /** The claims and the key that verified them. */
  verifyWithKey(token: string, options?: VerifyJwtOptions): Promise<VerifiedJwt>;
  /** The keys of the own controller (first) and of each live member with a usable certificate, in member order. */
  keys(): KeyringEntry[];
  /** The live member whose certificate has this fingerprint, if any (the own controller included when listed). */
  member(kid: string): M | undefined;
}

/** Parsed member keys kept beyond this many are dropped unless a live member still has them. */
const CACHE_LIMIT = 64;

/**
 * A keyring over `own` (this controller's signing key) and `members` (read on every use; the own controller may be
 * among them). Without `members`, only the own key verifies.
 */
export function createJwtKeyring<M extends KeyringMember = KeyringMember>(own: JwtSigningKey, members: () => readonly M[] = () => []): JwtKeyring<M> {
  const ownEntry: KeyringEntry = {
    kid: own.serverCertFingerprint,
    publicKey: createPublicKey(own.serverKey),
    algorithm: jwtAlgorithmFor(own.serverKey),
    own: true,
  };
  // null: the member's certificate is unusable (does not parse, wrong fingerprint, unsupported key type).
  const parsed = new Map<string, KeyringEntry | null>();

  function entryOf(member: KeyringMember): KeyringEntry | null {
    const kid = member.fingerprint;
    let entry = parsed.get(kid);
    if (entry === undefined) {
      entry = parseMember(member);
      if (parsed.size >= CACHE_LIMIT) prune();
      parsed.set(kid, entry);
    }
    return entry;
  }

  function prune(): void {
    const live = new Set(members().map((m) => m.fingerprint));
    for (const kid of parsed.keys()) if (!live.has(kid)) parsed.delete(kid);
  }

  function member(kid: string): M | undefined {
    return members().find((m) => m.fingerprint === kid);
  }

  /** The key a token with this header `kid` must verify under; throws when that is a member's unusable key. */
  function keyFor(kid: unknown): KeyringEntry {
    if (typeof kid !== 'string' || kid === ownEntry.kid) return ownEntry;
    const named = member(kid);
    if (!named) return ownEntry;
    const entry = entryOf(named);
    if (!entry) throw new errors.JWKSNoMatchingKey(`the certificate of controller key ${kid} is not usable`);
    return entry;
  }

  async function verifyWithKey(token: string, options: VerifyJwtOptions = {}): Promise<VerifiedJwt> {
    let kid: unknown;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      throw new errors.JWSInvalid('the token is not a compact JWS');
    }
    const key = keyFor(kid);
    const { payload } = await jwtVerify(token, key.publicKey, { algorithms: [key.algorithm], currentDate: options.currentDate });
    return { claims: payload, key };
  }

  return {
    verifyWithKey,
    verify: async (token, options) => (await verifyWithKey(token, options)).claims,
    keys() {
      const entries = [ownEntry];
      for (const m of members()) {
        if (m.fingerprint === ownEntry.kid) continue;
        const entry = entryOf(m);
        if (entry && !entries.some((e) => e.kid === entry.kid)) entries.push(entry);
      }
      return entries;
    },
    member,
  };
}

/** The key of a member's certificate, or null when the certificate cannot stand for that member's `kid`. */
function parseMember(member: KeyringMember): KeyringEntry | null {
  try {
    const cert = new X509Certificate(member.certPem);
    if (createHash('sha1').update(cert.raw).digest('hex') !== member.fingerprint) return null;
    const publicKey = cert.publicKey;
    return { kid: member.fingerprint, publicKey, algorithm: jwtAlgorithmFor(publicKey), own: false, certPem: cert.toString() };
  } catch {
    return null;
  }
}
