/**
 * Test helpers for router enrollment and the CA bundle: EC P-256 keys and CSRs made with real cryptography,
 * PEM splitting, and `openssl` as an independent verifier of the chains the controller returns.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate, createHash } from 'node:crypto';
import { x509 } from '../../src/pki/x509-library.ts';

export interface TestKey {
  keys: CryptoKeyPair;
  /** PKCS#8 PEM of the private key, for mutual TLS. */
  keyPem: string;
}

const EC = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING = { name: 'ECDSA', hash: 'SHA-256' } as const;

export async function newKey(): Promise<TestKey> {
  const keys = (await crypto.subtle.generateKey(EC, true, ['sign', 'verify'])) as CryptoKeyPair;
  const pkcs8 = Buffer.from(await crypto.subtle.exportKey('pkcs8', keys.privateKey));
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END PRIVATE KEY-----\n`;
  return { keys, keyPem };
}

export interface CsrRequest {
  /** e.g. `CN=<routerId>, O=Example`. */
  subject: string;
  dns?: string[];
  ips?: string[];
}

/** A PEM CSR for `key`, with the given subject and SANs. */
export async function csrPem(key: TestKey, request: CsrRequest): Promise<string> {
  const names: x509.JsonGeneralNames = [
    ...(request.dns ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(request.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: request.subject,
    keys: key.keys,
    signingAlgorithm: SIGNING,
    extensions: names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : [],
  });
  return csr.toString('pem');
}

/** Every CERTIFICATE block of `text`, in order, as PEM. */
export function pemBlocks(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n?/g) ?? [];
}

export function certificate(pem: string): X509Certificate {
  return new X509Certificate(pem);
}

/** Lower-case hex SHA-1 of a PEM certificate's DER. */
export function sha1Of(pem: string): string {
  return createHash('sha1').update(certificate(pem).raw).digest('hex');
}

/** Runs openssl; returns stdout, throws with stderr on failure. */
export function openssl(args: string[], input?: string | Uint8Array): string {
  return execFileSync('openssl', args, { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
}

/**
 * `openssl verify` of a returned chain (leaf first, then intermediates) against `trusted` (PEM, one or more
 * certificates) with the given purpose. Returns openssl's output; throws when verification fails.
 */
export function opensslVerify(chainPem: string, trusted: string, purpose: 'sslclient' | 'sslserver'): string {
  const [leaf, ...intermediates] = pemBlocks(chainPem);
  const dir = mkdtempSync(join(tmpdir(), 'portcullis-verify-'));
  try {
    writeFileSync(join(dir, 'trusted.pem'), trusted);
    writeFileSync(join(dir, 'leaf.pem'), leaf ?? '');
    const args = ['verify', '-purpose', purpose, '-CAfile', join(dir, 'trusted.pem')];
    if (intermediates.length > 0) {
      writeFileSync(join(dir, 'untrusted.pem'), intermediates.join(''));
      args.push('-untrusted', join(dir, 'untrusted.pem'));
    }
    return openssl([...args, join(dir, 'leaf.pem')]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
