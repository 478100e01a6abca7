/**
 * Test helpers for third-party CAs: a CA (root, or intermediate under another test CA) generated with real
 * keys, client certificates it issues (any subject, SANs, key usage and validity), and the API steps that
 * register and verify such a CA on a controller.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { x509 } from '../../src/pki/x509-library.ts';
import { newKey, type TestKey } from './router-certs.ts';
import { uniqueName } from './controller.ts';
import type { HttpClient } from './client.ts';

const SIGNING = { name: 'ECDSA', hash: 'SHA-256' } as const;
const DAY = 24 * 60 * 60 * 1000;
export const CLIENT_AUTH = x509.ExtendedKeyUsage.clientAuth;
export const SERVER_AUTH = x509.ExtendedKeyUsage.serverAuth;

export interface TestCa {
  certPem: string;
  key: TestKey;
  certificate: x509.X509Certificate;
}

export interface IssuedTestCert {
  certPem: string;
  keyPem: string;
  key: TestKey;
}

function serial(): string {
  const bytes = randomBytes(16);
  bytes[0] &= 0x7f;
  return bytes.toString('hex');
}

/** A CA certificate: self-signed, or signed by `parent` when given. */
export async function createTestCa(options: { cn?: string; parent?: TestCa; notBefore?: Date; notAfter?: Date } = {}): Promise<TestCa> {
  const key = await newKey();
  const subject = `CN=${options.cn ?? uniqueName('test-ca')}, O=Portcullis Tests`;
  const extensions = [
    new x509.BasicConstraintsExtension(true, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
    await x509.SubjectKeyIdentifierExtension.create(key.keys.publicKey),
  ];
  const notBefore = options.notBefore ?? new Date(Date.now() - DAY);
  const notAfter = options.notAfter ?? new Date(Date.now() + 365 * DAY);
  const certificate = options.parent
    ? await x509.X509CertificateGenerator.create({
        serialNumber: serial(),
        subject,
        issuer: options.parent.certificate.subject,
        notBefore,
        notAfter,
        publicKey: key.keys.publicKey,
        signingKey: options.parent.key.keys.privateKey,
        signingAlgorithm: SIGNING,
        extensions,
      })
    : await x509.X509CertificateGenerator.createSelfSigned({
        serialNumber: serial(),
        name: subject,
        notBefore,
        notAfter,
        keys: key.keys,
        signingAlgorithm: SIGNING,
        extensions,
      });
  return { certPem: certificate.toString('pem') + '\n', key, certificate };
}

export interface LeafOptions {
  /** Full subject, e.g. `CN=x, O=y`; defaults to a unique CN. */
  subject?: string;
  uris?: string[];
  emails?: string[];
  /** Extended key usages; default clientAuth. An empty list omits the extension. */
  usages?: string[];
  notBefore?: Date;
  notAfter?: Date;
  /** Reuse a key (e.g. to present the same key with a new certificate). */
  key?: TestKey;
}

/** An end-entity certificate issued by `ca`. */
export async function issueTestCert(ca: TestCa, options: LeafOptions = {}): Promise<IssuedTestCert> {
  const key = options.key ?? (await newKey());
  const names: x509.JsonGeneralNames = [
    ...(options.uris ?? []).map((value) => ({ type: 'url' as const, value })),
    ...(options.emails ?? []).map((value) => ({ type: 'email' as const, value })),
  ];
  const usages = options.usages ?? [CLIENT_AUTH];
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
  ];
  if (usages.length > 0) extensions.push(new x509.ExtendedKeyUsageExtension(usages, false));
  if (names.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(names));
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: options.subject ?? `CN=${uniqueName('leaf')}, O=Portcullis Tests`,
    issuer: ca.certificate.subject,
    notBefore: options.notBefore ?? new Date(Date.now() - DAY),
    notAfter: options.notAfter ?? new Date(Date.now() + 30 * DAY),
    publicKey: key.keys.publicKey,
    signingKey: ca.key.keys.privateKey,
    signingAlgorithm: SIGNING,
    extensions,
  });
  return { certPem: certificate.toString('pem') + '\n', keyPem: key.keyPem, key };
}

export interface CaFlags {
  isAuthEnabled?: boolean;
  isAutoCaEnrollmentEnabled?: boolean;
  isOttCaEnrollmentEnabled?: boolean;
  identityRoles?: string[];
  identityNameFormat?: string;
  externalIdClaim?: Record<string, unknown>;
  name?: string;
}

/** Registers `ca` through `POST /cas`; returns the new CA's id. */
export async function registerCa(mgmt: HttpClient, ca: TestCa, flags: CaFlags = {}): Promise<string> {
  const res = await mgmt.post('/cas', {
    name: flags.name ?? uniqueName('ca'),
    certPem: ca.certPem,
    isAuthEnabled: flags.isAuthEnabled ?? true,
    isAutoCaEnrollmentEnabled: flags.isAutoCaEnrollmentEnabled ?? true,
    isOttCaEnrollmentEnabled: flags.isOttCaEnrollmentEnabled ?? true,
    identityRoles: flags.identityRoles ?? [],
    ...(flags.identityNameFormat !== undefined ? { identityNameFormat: flags.identityNameFormat } : {}),
    ...(flags.externalIdClaim !== undefined ? { externalIdClaim: flags.externalIdClaim } : {}),
  });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

/** Proves possession of the CA key: a certificate whose CN is the CA's verification token, posted as text/plain. */
export async function verifyCa(mgmt: HttpClient, caId: string, ca: TestCa): Promise<void> {
  const detail = await mgmt.get(`/cas/${caId}`);
  assert.equal(detail.status, 200, detail.text);
  const proof = await issueTestCert(ca, { subject: `CN=${detail.body.data.verificationToken as string}`, usages: [] });
  const res = await mgmt.post(`/cas/${caId}/verify`, undefined, { rawBody: proof.certPem, contentType: 'text/plain' });
  assert.equal(res.status, 200, res.text);
}

/** A new CA, registered and verified, with the given flags. */
export async function trustedCa(mgmt: HttpClient, flags: CaFlags = {}): Promise<{ ca: TestCa; id: string }> {
  const ca = await createTestCa();
  const id = await registerCa(mgmt, ca, flags);
  await verifyCa(mgmt, id, ca);
  return { ca, id };
}
