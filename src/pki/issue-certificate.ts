/**
 * Issues end-entity certificates from the controller's signing (intermediate) CA, following upstream's
 * templates (enrollment.md §3): subject from the CSR, validity from one minute ago to one year ahead,
 * key usage digitalSignature + keyEncipherment + dataEncipherment (critical), and exactly one extended
 * key usage per profile: clientAuth for identities and routers' control-plane certificates, serverAuth
 * for routers' listeners. `Issuer` is the small interface the rest of the controller sees (style §4.7);
 * the software implementation here is the only one today, but an external CA could implement it later.
 */
import { randomBytes } from 'node:crypto';
import type { ParsedCsr } from './csr.ts';
import { sha1Fingerprint } from './fingerprint.ts';
import { certificateSigningAlgorithm } from './keys.ts';
import { encodePem, type Der } from './pem.ts';
import { subjectAltNameExtension, emptySubjectAltNames, type SubjectAltNames } from './subject-alt-names.ts';
import { isEmptyName, withCommonName } from './subject-name.ts';
import { x509 } from './x509-library.ts';

export interface IssueOptions {
  /** Replaces (or adds) the subject CN, e.g. the identity or router id; the rest of the subject is kept. */
  commonName?: string;
  /**
   * SANs of the certificate. Client certificates carry none unless given (0.27-era ott identities have
   * none; router control-plane and extension certificates pass `csr.sans` or the stored SANs). Server
   * certificates default to the CSR's SANs, as a router's listener certificate is useless without them.
   */
  sans?: SubjectAltNames;
  /** Issuance time; defaults to the current time. */
  now?: Date;
  /** Expiry; defaults to one calendar year after `now`. Never later than the signing CA's own expiry. */
  notAfter?: Date;
}

export interface IssuedCertificate {
  /** The new certificate alone. */
  certPem: string;
  /** The certificate followed by the issuing CA(s), without the root: the `cert` of enroll responses. */
  chainPem: string;
  /** Lower-case hex SHA-1 of the DER: what cert authenticators and routers store. */
  fingerprint: string;
  /** Lower-case hex. */
  serialNumber: string;
  notBefore: Date;
  notAfter: Date;
}

export interface Issuer {
  issueClientCertificate(csr: ParsedCsr, options?: IssueOptions): Promise<IssuedCertificate>;
  issueServerCertificate(csr: ParsedCsr, options?: IssueOptions): Promise<IssuedCertificate>;
  /** PEM of the issuing CA chain appended to issued leaves: the intermediate(s), never the root. */
  chainPem(): string;
}

/** A CA able to sign: its certificate, its key, and the chain from it up to (excluding) the root. */
export interface SigningAuthority {
  certificate: x509.X509Certificate;
  privateKey: CryptoKey;
  /** The authority's certificate followed by any further non-root issuers, as PEM. */
  chainPem: string;
}

/** What a leaf looks like apart from subject, key and validity. */
export interface LeafProfile {
  keyUsages: x509.KeyUsageFlags;
  extendedKeyUsages: string[];
}

const ISSUED_KEY_USAGES =
  x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment | x509.KeyUsageFlags.dataEncipherment;

export const CLIENT_PROFILE: LeafProfile = {
  keyUsages: ISSUED_KEY_USAGES,
  extendedKeyUsages: [x509.ExtendedKeyUsage.clientAuth],
};

export const SERVER_PROFILE: LeafProfile = {
  keyUsages: ISSUED_KEY_USAGES,
  extendedKeyUsages: [x509.ExtendedKeyUsage.serverAuth],
};

/** Clock skew tolerated by backdating notBefore one minute, as upstream does. */
const BACKDATE_MS = 60_000;

export function backdated(now: Date): Date {
  return new Date(now.getTime() - BACKDATE_MS);
}

/** The software issuer backed by the controller's intermediate CA. */
export function createIssuer(authority: SigningAuthority): Issuer {
  const issueFromCsr = async (csr: ParsedCsr, profile: LeafProfile, sans: SubjectAltNames, options: IssueOptions) => {
    const subjectDer = options.commonName === undefined ? csr.subjectDer : withCommonName(csr.subjectDer, options.commonName);
    const now = options.now ?? new Date();
    const certificate = await signLeafCertificate(authority, {
      subjectDer,
      spkiDer: csr.publicKey.spkiDer,
      sans,
      profile,
      notBefore: backdated(now),
      notAfter: options.notAfter ?? addYears(now, 1),
    });
    return describeIssued(certificate, authority.chainPem);
  };
  return {
    issueClientCertificate: (csr, options = {}) =>
      issueFromCsr(csr, CLIENT_PROFILE, options.sans ?? emptySubjectAltNames(), options),
    issueServerCertificate: (csr, options = {}) => issueFromCsr(csr, SERVER_PROFILE, options.sans ?? csr.sans, options),
    chainPem: () => authority.chainPem,
  };
}

export interface LeafRequest {
  subjectDer: Der;
  spkiDer: Der;
  sans: SubjectAltNames;
  profile: LeafProfile;
  notBefore: Date;
  notAfter: Date;
}

/** Signs one end-entity certificate. Expiry is capped at the authority's, since a chain is only as valid as its CA. */
export async function signLeafCertificate(authority: SigningAuthority, request: LeafRequest): Promise<x509.X509Certificate> {
  const emptySubject = isEmptyName(request.subjectDer);
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(request.profile.keyUsages, true),
    new x509.ExtendedKeyUsageExtension(request.profile.extendedKeyUsages, false),
    await x509.SubjectKeyIdentifierExtension.create(request.spkiDer),
    authorityKeyIdentifier(authority.certificate),
  ];
  // RFC 5280 §4.2.1.6: with an empty subject the SAN extension carries the identity and must be critical.
  const san = subjectAltNameExtension(request.sans, emptySubject);
  if (san) extensions.push(san);
  return x509.X509CertificateGenerator.create({
    serialNumber: randomSerialNumber(),
    subject: new x509.Name(request.subjectDer),
    issuer: authority.certificate.subjectName,
    publicKey: request.spkiDer,
    signingKey: authority.privateKey,
    signingAlgorithm: certificateSigningAlgorithm(authority.privateKey),
    notBefore: request.notBefore,
    notAfter: earliest(request.notAfter, authority.certificate.notAfter),
    extensions,
  });
}

/**
 * A fresh serial number as hex: 159 random bits, so it is positive in DER and unguessable (CA/B Forum
 * asks for at least 64 bits of entropy; upstream HEAD draws from [1, 2^159-1] as well).
 */
export function randomSerialNumber(): string {
  let bytes: Buffer;
  do {
    bytes = randomBytes(20);
    bytes[0] &= 0x7f;
  } while (bytes.every((byte) => byte === 0));
  return bytes.toString('hex');
}

/** AuthorityKeyIdentifier pointing at the issuer's own SubjectKeyIdentifier, so path building matches keys. */
export function authorityKeyIdentifier(issuer: x509.X509Certificate): x509.AuthorityKeyIdentifierExtension {
  const issuerKeyId = issuer.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId;
  if (!issuerKeyId) throw new Error(`signing CA ${issuer.subject} has no SubjectKeyIdentifier`);
  return new x509.AuthorityKeyIdentifierExtension(issuerKeyId, false);
}

/** Adds calendar years in UTC (Go's AddDate(1, 0, 0), which upstream uses for issued certificates). */
export function addYears(date: Date, years: number): Date {
  const result = new Date(date.getTime());
  result.setUTCFullYear(result.getUTCFullYear() + years);
  return result;
}

function earliest(a: Date, b: Date): Date {
  return a.getTime() <= b.getTime() ? a : b;
}

function describeIssued(certificate: x509.X509Certificate, issuerChainPem: string): IssuedCertificate {
  const certPem = encodePem(certificate.rawData, 'CERTIFICATE');
  return {
    certPem,
    chainPem: certPem + issuerChainPem,
    fingerprint: sha1Fingerprint(new Uint8Array(certificate.rawData)),
    serialNumber: certificate.serialNumber.toLowerCase(),
    notBefore: certificate.notBefore,
    notAfter: certificate.notAfter,
  };
}
