/**
 * Templates for the controller's own certificates (enrollment.md §7.2): a self-signed root CA, the
 * intermediate "signing" CA under it that issues every identity and router certificate, and the TLS
 * server certificate the HTTPS listener presents. The server certificate's key doubles as the
 * enrollment-JWT signing key, and SDKs verify the JWT against that leaf and then check its hostname
 * while trusting only the leaf, so its SANs must cover every host that appears in a JWT `iss`.
 */
import { randomBytes } from 'node:crypto';
import { generateKeyPair, certificateSigningAlgorithm } from './keys.ts';
import type { Der } from './pem.ts';
import {
  addYears,
  authorityKeyIdentifier,
  backdated,
  randomSerialNumber,
  signLeafCertificate,
  type LeafProfile,
  type SigningAuthority,
} from './issue-certificate.ts';
import { canonicalIp, emptySubjectAltNames, type SubjectAltNames } from './subject-alt-names.ts';
import { x509 } from './x509-library.ts';

export interface GeneratedCa {
  certificate: x509.X509Certificate;
  keys: CryptoKeyPair;
}

const ROOT_VALIDITY_YEARS = 10;
const SERVER_VALIDITY_YEARS = 1;

const CA_KEY_USAGES = x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature;

/** The controller's listener: serverAuth for HTTPS, clientAuth so the same certificate can dial routers. */
export const CONTROLLER_SERVER_PROFILE: LeafProfile = {
  keyUsages: x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
  extendedKeyUsages: [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth],
};

/** Hosts every controller certificate covers besides the advertised one: clients on the same machine. */
export const LOCAL_HOSTS = ['localhost', '127.0.0.1', '::1'] as const;

/**
 * A new PKI generation's tag, put into both CA names. Two controllers' roots then never share a subject,
 * which keeps trust stores and `openssl verify` from confusing them.
 */
export function newGenerationTag(): string {
  return randomBytes(4).toString('hex');
}

/** Self-signed root: CA without a path length limit, ten years. */
export async function createRootCa(now: Date, tag: string): Promise<GeneratedCa> {
  const keys = await generateKeyPair();
  const subjectKeyId = await x509.SubjectKeyIdentifierExtension.create(keys.publicKey);
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerialNumber(),
    name: portcullisName(`Portcullis Root CA ${tag}`),
    keys,
    signingAlgorithm: certificateSigningAlgorithm(keys.privateKey),
    notBefore: backdated(now),
    notAfter: addYears(now, ROOT_VALIDITY_YEARS),
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(CA_KEY_USAGES, true),
      subjectKeyId,
      new x509.AuthorityKeyIdentifierExtension(subjectKeyId.keyId, false),
    ],
  });
  return { certificate, keys };
}

/** The signing CA under `root`: pathLen 0 (it signs leaves only), valid as long as the root. */
export async function createIntermediateCa(root: GeneratedCa, now: Date, tag: string): Promise<GeneratedCa> {
  const keys = await generateKeyPair();
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerialNumber(),
    subject: portcullisName(`Portcullis Signing CA ${tag}`),
    issuer: root.certificate.subjectName,
    publicKey: keys.publicKey,
    signingKey: root.keys.privateKey,
    signingAlgorithm: certificateSigningAlgorithm(root.keys.privateKey),
    notBefore: backdated(now),
    notAfter: root.certificate.notAfter,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(CA_KEY_USAGES, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      authorityKeyIdentifier(root.certificate),
    ],
  });
  return { certificate, keys };
}

/** The controller's TLS certificate for `spkiDer`, covering the local hosts and `advertisedHost`, one year. */
export async function issueControllerServerCertificate(
  authority: SigningAuthority,
  spkiDer: Der,
  advertisedHost: string,
  now: Date,
): Promise<x509.X509Certificate> {
  return signLeafCertificate(authority, {
    subjectDer: new Uint8Array(portcullisName(advertisedHost).toArrayBuffer()),
    spkiDer,
    sans: controllerSubjectAltNames(advertisedHost),
    profile: CONTROLLER_SERVER_PROFILE,
    notBefore: backdated(now),
    notAfter: addYears(now, SERVER_VALIDITY_YEARS),
  });
}

/** SANs of the controller certificate: the local hosts plus the advertised host as a DNS name or IP. */
export function controllerSubjectAltNames(advertisedHost: string): SubjectAltNames {
  const sans = emptySubjectAltNames();
  for (const host of [...LOCAL_HOSTS, advertisedHost]) {
    const ip = canonicalIp(host);
    const list = ip === undefined ? sans.dns : sans.ip;
    const value = ip ?? host.toLowerCase();
    if (!list.includes(value)) list.push(value);
  }
  return sans;
}

function portcullisName(commonName: string): x509.Name {
  return new x509.Name([{ O: ['Portcullis'] }, { CN: [commonName] }]);
}
