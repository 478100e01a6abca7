/**
 * The controller PKI as one loaded value. Upstream's controller never generates PKI (its quickstart
 * does); Portcullis must give a working controller on first start, so `loadOrCreatePki` creates a root
 * CA, a signing intermediate and a TLS server certificate in the data directory when none exist, and
 * afterwards loads them unchanged. Only the server certificate is ever replaced automatically (when
 * it no longer covers the advertised host or is about to expire), and it keeps its key, because that key
 * signs enrollment JWTs and every outstanding JWT stays verifiable against the renewed leaf. The CAs are
 * never regenerated over existing files: that would orphan every certificate the controller issued.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import {
  LOCAL_HOSTS,
  createIntermediateCa,
  createRootCa,
  issueControllerServerCertificate,
  newGenerationTag,
  type GeneratedCa,
} from './ca-certificates.ts';
import { sha1Fingerprint } from './fingerprint.ts';
import { createIssuer, type Issuer, type SigningAuthority } from './issue-certificate.ts';
import {
  exportPrivateKeyPem,
  generateKeyPair,
  jwtAlgorithmFor,
  loadPrivateKey,
  type JwtAlgorithm,
  type LoadedPrivateKey,
} from './keys.ts';
import { certificateDer, encodePem } from './pem.ts';
import { ensurePkiDirectory, readPkiFile, writePkiFiles, PKI_FILES, type PkiFile } from './pki-files.ts';
import { canonicalIp, subjectAltNamesCover, subjectAltNamesFromExtensions } from './subject-alt-names.ts';
import { x509 } from './x509-library.ts';

export interface ControllerPki {
  readonly dir: string;
  readonly rootCertPem: string;
  readonly intermediateCertPem: string;
  readonly serverCertPem: string;
  /** What the HTTPS listener presents: server certificate, then intermediate. */
  readonly serverChainPem: string;
  /** The CA bundle (intermediate, then root): `/.well-known/est/cacerts` and the `ca` of enroll responses. */
  readonly caBundlePem: string;
  /** The same bundle as one PEM per certificate. */
  readonly caCertPems: readonly string[];
  /** PKCS#8 PEM of the server key, for the TLS listener. */
  readonly serverKeyPem: string;
  /** The server key, which also signs enrollment and session JWTs. */
  readonly serverKey: KeyObject;
  readonly jwtAlgorithm: JwtAlgorithm;
  /** Lower-case hex SHA-1 of the server certificate DER: the `kid` of every JWT the controller signs. */
  readonly serverCertFingerprint: string;
  readonly serverCertNotAfter: Date;
  /** Issues identity and router certificates from the intermediate. */
  readonly issuer: Issuer;
}

export interface LoadPkiOptions {
  /** The host clients use to reach the controller (DNS name or IP; a port or URL form is tolerated). */
  advertise: string;
  /** Current time, for tests; defaults to now. */
  now?: Date;
}

/** The server certificate is renewed when it would expire within this window. */
export const SERVER_CERT_RENEWAL_WINDOW_MS = 30 * 24 * 60 * 60 * 1000;

const CA_FILES: readonly PkiFile[] = ['rootCert', 'rootKey', 'intermediateCert', 'intermediateKey'];

interface LoadedCa {
  root: x509.X509Certificate;
  intermediate: x509.X509Certificate;
  intermediateKey: LoadedPrivateKey;
}

interface ServerIdentity {
  certificate: x509.X509Certificate;
  key: LoadedPrivateKey;
}

/** Loads the PKI from `dir`, creating it on first start and renewing the server certificate when needed. */
export async function loadOrCreatePki(dir: string, options: LoadPkiOptions): Promise<ControllerPki> {
  const host = advertisedHost(options.advertise);
  const now = options.now ?? new Date();
  await ensurePkiDirectory(dir);
  const files = await readAllFiles(dir);
  const ca = CA_FILES.some((file) => files[file] !== undefined) ? await loadCa(dir, files) : await createCa(dir, now);
  assertCaUsable(ca, now);
  const server = await loadOrIssueServer(dir, files, ca, host, now);
  return assemble(dir, ca, server);
}

/** The bare host of an `advertise` value: `host`, `host:port`, `[v6]:port` or a URL are all accepted. */
export function advertisedHost(advertise: string): string {
  const text = advertise.trim();
  let host = text;
  if (text.includes('://')) host = new URL(text).hostname;
  else if (canonicalIp(text) === undefined) {
    const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text);
    host = bracketed ? bracketed[1] : text.replace(/:\d+$/, '');
  }
  host = host.replace(/^\[(.*)\]$/, '$1');
  if (host.length === 0) throw new Error(`advertised address "${advertise}" has no host`);
  return host;
}

async function readAllFiles(dir: string): Promise<Partial<Record<PkiFile, string>>> {
  const entries = await Promise.all(
    (Object.keys(PKI_FILES) as PkiFile[]).map(async (file) => [file, await readPkiFile(dir, file)] as const),
  );
  return Object.fromEntries(entries.filter(([, text]) => text !== undefined));
}

async function createCa(dir: string, now: Date): Promise<LoadedCa> {
  const tag = newGenerationTag();
  const root = await createRootCa(now, tag);
  const intermediate = await createIntermediateCa(root, now, tag);
  const intermediateKeyPem = await exportPrivateKeyPem(intermediate.keys.privateKey);
  await writePkiFiles(dir, {
    rootKey: await exportPrivateKeyPem(root.keys.privateKey),
    intermediateKey: intermediateKeyPem,
    intermediateCert: certificatePem(intermediate),
    rootCert: certificatePem(root),
  });
  return {
    root: root.certificate,
    intermediate: intermediate.certificate,
    intermediateKey: await loadPrivateKey(intermediateKeyPem),
  };
}

// The root key is deliberately not required: an operator may keep it offline once the intermediate exists.
async function loadCa(dir: string, files: Partial<Record<PkiFile, string>>): Promise<LoadedCa> {
  const required = ['rootCert', 'intermediateCert', 'intermediateKey'] as const;
  const missing = required.filter((file) => files[file] === undefined);
  if (missing.length > 0) {
    const names = missing.map((file) => PKI_FILES[file]).join(', ');
    throw new Error(
      `incomplete PKI in ${dir}: missing ${names}. Restore the files, or remove the directory to create ` +
        'a new PKI (which invalidates every certificate issued so far).',
    );
  }
  const root = parseCertificateFile(dir, 'rootCert', files.rootCert!);
  const intermediate = parseCertificateFile(dir, 'intermediateCert', files.intermediateCert!);
  const intermediateKey = await loadPrivateKey(files.intermediateKey!);
  if (!(await intermediate.verify({ publicKey: root.publicKey, signatureOnly: true }))) {
    throw new Error(`${PKI_FILES.intermediateCert} in ${dir} is not signed by ${PKI_FILES.rootCert}`);
  }
  if (!keyMatchesCertificate(intermediateKey, intermediate)) {
    throw new Error(`${PKI_FILES.intermediateKey} in ${dir} does not belong to ${PKI_FILES.intermediateCert}`);
  }
  return { root, intermediate, intermediateKey };
}

function assertCaUsable(ca: LoadedCa, now: Date): void {
  if (ca.intermediate.notAfter.getTime() <= now.getTime()) {
    throw new Error(`the signing CA expired on ${ca.intermediate.notAfter.toISOString()}; a new PKI is required`);
  }
}

async function loadOrIssueServer(
  dir: string,
  files: Partial<Record<PkiFile, string>>,
  ca: LoadedCa,
  host: string,
  now: Date,
): Promise<ServerIdentity> {
  const key = files.serverKey === undefined ? undefined : await loadPrivateKey(files.serverKey);
  if (key && files.serverCert !== undefined) {
    const certificate = parseCertificateFile(dir, 'serverCert', files.serverCert);
    if (await isServerCertificateCurrent(certificate, key, ca, host, now)) return { certificate, key };
  }
  return issueServer(dir, ca, key, host, now);
}

async function isServerCertificateCurrent(
  certificate: x509.X509Certificate,
  key: LoadedPrivateKey,
  ca: LoadedCa,
  host: string,
  now: Date,
): Promise<boolean> {
  const sans = subjectAltNamesFromExtensions(certificate.extensions);
  return (
    keyMatchesCertificate(key, certificate) &&
    [...LOCAL_HOSTS, host].every((name) => subjectAltNamesCover(sans, name)) &&
    certificate.notAfter.getTime() - now.getTime() > SERVER_CERT_RENEWAL_WINDOW_MS &&
    (await certificate.verify({ publicKey: ca.intermediate.publicKey, signatureOnly: true }))
  );
}

// Keeps an existing server key so outstanding enrollment JWTs stay verifiable against the new leaf.
async function issueServer(
  dir: string,
  ca: LoadedCa,
  existingKey: LoadedPrivateKey | undefined,
  host: string,
  now: Date,
): Promise<ServerIdentity> {
  const newKeyPem = existingKey ? undefined : await exportPrivateKeyPem((await generateKeyPair()).privateKey);
  const key = existingKey ?? (await loadPrivateKey(newKeyPem!));
  const certificate = await issueControllerServerCertificate(signingAuthority(ca), key.spkiDer, host, now);
  await writePkiFiles(dir, {
    ...(newKeyPem ? { serverKey: newKeyPem } : {}),
    serverCert: encodePem(certificate.rawData, 'CERTIFICATE'),
  });
  return { certificate, key };
}

function signingAuthority(ca: LoadedCa): SigningAuthority {
  return {
    certificate: ca.intermediate,
    privateKey: ca.intermediateKey.cryptoKey,
    chainPem: encodePem(ca.intermediate.rawData, 'CERTIFICATE'),
  };
}

function assemble(dir: string, ca: LoadedCa, server: ServerIdentity): ControllerPki {
  const rootCertPem = encodePem(ca.root.rawData, 'CERTIFICATE');
  const intermediateCertPem = encodePem(ca.intermediate.rawData, 'CERTIFICATE');
  const serverCertPem = encodePem(server.certificate.rawData, 'CERTIFICATE');
  return Object.freeze({
    dir,
    rootCertPem,
    intermediateCertPem,
    serverCertPem,
    serverChainPem: serverCertPem + intermediateCertPem,
    caBundlePem: intermediateCertPem + rootCertPem,
    caCertPems: Object.freeze([intermediateCertPem, rootCertPem]),
    serverKeyPem: server.key.pem,
    serverKey: server.key.keyObject,
    jwtAlgorithm: jwtAlgorithmFor(server.key.keyObject),
    serverCertFingerprint: sha1Fingerprint(new Uint8Array(server.certificate.rawData)),
    serverCertNotAfter: server.certificate.notAfter,
    issuer: createIssuer(signingAuthority(ca)),
  });
}

function parseCertificateFile(dir: string, file: PkiFile, pem: string): x509.X509Certificate {
  try {
    return new x509.X509Certificate(certificateDer(pem));
  } catch {
    throw new Error(`${PKI_FILES[file]} in ${dir} does not hold a readable certificate`);
  }
}

// Compared through OpenSSL's re-encoding, so equivalent encodings of one key (e.g. compressed points) match.
function keyMatchesCertificate(key: LoadedPrivateKey, certificate: x509.X509Certificate): boolean {
  const publicKey = createPublicKey({ key: Buffer.from(certificate.publicKey.rawData), format: 'der', type: 'spki' });
  const certificateSpki = publicKey.export({ type: 'spki', format: 'der' });
  return Buffer.compare(certificateSpki, Buffer.from(key.spkiDer)) === 0;
}

function certificatePem(ca: GeneratedCa): string {
  return encodePem(ca.certificate.rawData, 'CERTIFICATE');
}
