/**
 * Certificates presented by clients and operators, and path validation against a chosen set of roots.
 * The TLS listener requests client certificates without verifying them (enrollment.md §2.1), so every
 * trust decision (cert login, ottca and CA auto enrollment, extension, CA verification) is made here in
 * application code, with an explicit root pool, the client-supplied intermediates, an optional point in
 * time (cert login ignores validity dates, enrollment does not) and an optional clientAuth requirement.
 * Signatures are checked by OpenSSL through node:crypto; names, dates and extensions are read with the
 * X.509 library.
 */
import { createHash, X509Certificate } from 'node:crypto';
import type { PeerCertificate } from 'node:tls';
import { ApiError } from '../errors.ts';
import { sha1Fingerprint } from './fingerprint.ts';
import { encodePem, parsePemBlocks, type Der } from './pem.ts';
import { subjectAltNamesFromExtensions, type SubjectAltNames } from './subject-alt-names.ts';
import { x509 } from './x509-library.ts';

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const ANY_EXTENDED_KEY_USAGE = '2.5.29.37.0';
const MAX_CHAIN_LENGTH = 10;

/** One certificate, parsed once, with what the trust decisions need. */
export interface ParsedCertificate {
  readonly pem: string;
  readonly der: Der;
  /** Lower-case hex SHA-1 of the DER. */
  readonly fingerprint: string;
  readonly commonName: string | undefined;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly isCa: boolean;
  readonly sans: SubjectAltNames;
  /** Extended key usage OIDs; undefined when the certificate has no EKU extension (any usage). */
  readonly extendedKeyUsages: string[] | undefined;
  /** Lower-case hex SHA-256 of the SubjectPublicKeyInfo DER (detects key rolls). */
  readonly publicKeyPrint: string;
  readonly native: X509Certificate;
}

/** Parses one DER certificate; throws COULD_NOT_PARSE_DER_BLOCK when it is not one. */
/**
 * Parsed certificates by their DER bytes. The same few certificates (our CAs, registered third-party CAs,
 * the clients of busy sessions) are presented on every authentication; parsing them again dominated the
 * cost of cert authentication. Parsed certificates are never mutated, so sharing them is safe.
 */
const parsedCache = new Map<string, ParsedCertificate>();
const PARSED_CACHE_MAX = 4096;

export function readCertificateDer(der: Uint8Array): ParsedCertificate {
  const key = Buffer.from(der.buffer, der.byteOffset, der.byteLength).toString('base64');
  const cached = parsedCache.get(key);
  if (cached) return cached;
  const parsed = parseCertificateDer(der);
  if (parsedCache.size >= PARSED_CACHE_MAX) parsedCache.delete(parsedCache.keys().next().value!);
  parsedCache.set(key, parsed);
  return parsed;
}

function parseCertificateDer(der: Uint8Array): ParsedCertificate {
  const bytes = new Uint8Array(der);
  let native: X509Certificate;
  let cert: x509.X509Certificate;
  try {
    native = new X509Certificate(Buffer.from(bytes));
    cert = new x509.X509Certificate(bytes);
  } catch {
    throw new ApiError('COULD_NOT_PARSE_DER_BLOCK');
  }
  const eku = cert.getExtension(x509.ExtendedKeyUsageExtension);
  const basic = cert.getExtension(x509.BasicConstraintsExtension);
  const spki = native.publicKey.export({ type: 'spki', format: 'der' });
  return {
    pem: encodePem(bytes, 'CERTIFICATE'),
    der: bytes,
    fingerprint: sha1Fingerprint(bytes),
    commonName: cert.subjectName.getField('CN')[0],
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
    isCa: basic?.ca === true,
    sans: subjectAltNamesFromExtensions(cert.extensions),
    extendedKeyUsages: eku ? eku.usages.map((usage) => String(usage)) : undefined,
    publicKeyPrint: createHash('sha256').update(spki).digest('hex'),
    native,
  };
}

/**
 * Every CERTIFICATE block of a PEM text, in order. Throws COULD_NOT_PARSE_PEM_BLOCK on a malformed block
 * and COULD_NOT_PARSE_DER_BLOCK on a block that is not a certificate; other block types are skipped.
 */
export function readCertificateBundle(pem: string): ParsedCertificate[] {
  return parsePemBlocks(pem)
    .filter((block) => block.label === 'CERTIFICATE')
    .map((block) => readCertificateDer(block.der));
}

/** The TLS peer chain as parsed certificates, leaf first. */
export function readPeerCertificates(peers: readonly PeerCertificate[]): ParsedCertificate[] {
  return peers.filter((peer) => peer.raw && peer.raw.length > 0).map((peer) => readCertificateDer(peer.raw));
}

export function isValidAt(cert: ParsedCertificate, at: Date): boolean {
  const t = at.getTime();
  return cert.notBefore.getTime() <= t && t <= cert.notAfter.getTime();
}

export interface ChainOptions {
  /** Trust anchors; a chain is valid when it reaches one of them. */
  roots: readonly ParsedCertificate[];
  /** Certificates that may appear between the leaf and a root (usually the rest of the peer chain). */
  intermediates?: readonly ParsedCertificate[];
  /** Every certificate of the chain must be valid at this time; omitted: validity dates are ignored. */
  at?: Date;
  /** The leaf (and any intermediate with an EKU extension) must allow client authentication. */
  clientAuth?: boolean;
}

/**
 * The chain from `leaf` to one of the roots (leaf first, root last), or undefined when none exists. Each
 * link requires the issuer name to match, the issuer to be a CA and the signature to verify.
 */
export function verifyChain(leaf: ParsedCertificate, options: ChainOptions): ParsedCertificate[] | undefined {
  if (options.clientAuth && !allowsClientAuth(leaf)) return undefined;
  const rootPrints = new Set(options.roots.map((root) => root.fingerprint));
  const candidates = [...options.roots, ...(options.intermediates ?? [])];
  const usable = (cert: ParsedCertificate) => options.at === undefined || isValidAt(cert, options.at);

  const extend = (chain: ParsedCertificate[]): ParsedCertificate[] | undefined => {
    const current = chain[chain.length - 1];
    if (!usable(current)) return undefined;
    if (rootPrints.has(current.fingerprint)) return chain;
    if (chain.length >= MAX_CHAIN_LENGTH) return undefined;
    for (const issuer of candidates) {
      if (chain.some((link) => link.fingerprint === issuer.fingerprint)) continue;
      if (!issuer.isCa || !issuedBy(current, issuer)) continue;
      if (options.clientAuth && !rootPrints.has(issuer.fingerprint) && !allowsClientAuth(issuer)) continue;
      const found = extend([...chain, issuer]);
      if (found) return found;
    }
    return undefined;
  };
  return extend([leaf]);
}

/** True when `issuer` issued and signed `cert`. */
export function issuedBy(cert: ParsedCertificate, issuer: ParsedCertificate): boolean {
  try {
    return cert.native.checkIssued(issuer.native) && cert.native.verify(issuer.native.publicKey);
  } catch {
    return false;
  }
}

function allowsClientAuth(cert: ParsedCertificate): boolean {
  const usages = cert.extendedKeyUsages;
  return usages === undefined || usages.includes(CLIENT_AUTH) || usages.includes(ANY_EXTENDED_KEY_USAGE);
}
