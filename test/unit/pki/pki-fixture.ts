/**
 * Shared helpers for the PKI unit tests: temporary directories, CSRs built with real keys, and a thin
 * wrapper around the `openssl` command line, which serves as an independent verifier of what we produce.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { x509 } from '../../../src/pki/x509-library.ts';

/** A fresh temporary directory removed when the test file finishes. */
export async function temporaryDirectory(prefix = 'portcullis-pki-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export interface CsrOptions {
  subject?: string;
  key?: 'P-256' | 'P-384' | 'RSA-2048' | 'RSA-1024';
  sans?: x509.JsonGeneralNames;
}

/** A PEM CSR signed by a newly generated key of the requested kind. */
export async function generateCsrPem(options: CsrOptions = {}): Promise<string> {
  const { algorithm, signingAlgorithm } = keyAlgorithms(options.key ?? 'P-256');
  const keys = (await crypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as CryptoKeyPair;
  const extensions = options.sans ? [new x509.SubjectAlternativeNameExtension(options.sans)] : [];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: options.subject ?? 'CN=test-subject, O=Example',
    keys,
    signingAlgorithm,
    extensions,
  });
  return csr.toString('pem');
}

function keyAlgorithms(kind: NonNullable<CsrOptions['key']>) {
  if (kind.startsWith('RSA')) {
    const modulusLength = Number(kind.slice(4));
    const algorithm = { name: 'RSASSA-PKCS1-v1_5', modulusLength, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' };
    return { algorithm, signingAlgorithm: algorithm };
  }
  return {
    algorithm: { name: 'ECDSA', namedCurve: kind },
    signingAlgorithm: { name: 'ECDSA', hash: kind === 'P-384' ? 'SHA-384' : 'SHA-256' },
  };
}

/** Runs openssl with `args`; returns stdout. Throws (with stderr) on a non-zero exit. */
export function openssl(args: string[], input?: string | Uint8Array): string {
  return execFileSync('openssl', args, { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
}

/** Like `openssl` but returns raw stdout bytes (for DER output). */
export function opensslBytes(args: string[], input?: string | Uint8Array): Buffer {
  return execFileSync('openssl', args, { input, stdio: ['pipe', 'pipe', 'pipe'] });
}

/** Writes `files` (name -> text) into `dir` and returns their paths by name. */
export async function writeFiles(dir: string, files: Record<string, string>): Promise<Record<string, string>> {
  const paths: Record<string, string> = {};
  for (const [name, text] of Object.entries(files)) {
    paths[name] = join(dir, name);
    await writeFile(paths[name], text);
  }
  return paths;
}
