/**
 * Helpers for the identity enrollment suites: EC keys and CSRs made with real cryptography, enrollment JWT
 * decoding and verification with jose against the controller's TLS certificate, PEM splitting, and
 * `openssl verify` as an independent check of issued chains.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { x509 } from '../../src/pki/x509-library.ts';
import type { TestController } from './controller.ts';
import { uniqueName } from './controller.ts';
import { opensslVerify as verifyChain, pemBlocks, sha1Of } from './router-certs.ts';

export { pemBlocks, sha1Of };

export interface TestKey {
  keys: CryptoKeyPair;
  /** PKCS#8 PEM of the private key, for mutual TLS. */
  keyPem: string;
}

export async function newEcKey(namedCurve: 'P-256' | 'P-384' = 'P-256'): Promise<TestKey> {
  const keys = (await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve }, true, ['sign', 'verify'])) as CryptoKeyPair;
  const pkcs8 = Buffer.from(await crypto.subtle.exportKey('pkcs8', keys.privateKey));
  const body = pkcs8.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return { keys, keyPem: `-----BEGIN PRIVATE KEY-----\n${body}\n-----END PRIVATE KEY-----\n` };
}

/** A PEM CSR for `key` with the subject the Go SDK uses (C, O, CN). */
export async function csrFor(key: TestKey, commonName: string): Promise<string> {
  const hash = (key.keys.privateKey.algorithm as EcKeyAlgorithm).namedCurve === 'P-384' ? 'SHA-384' : 'SHA-256';
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: `C=US, O=NetFoundry, CN=${commonName}`,
    keys: key.keys,
    signingAlgorithm: { name: 'ECDSA', hash },
  });
  return csr.toString('pem');
}

/** The same CSR with one byte of its signature changed: it parses but does not verify. */
export function tamperedCsr(pem: string): string {
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  der[der.length - 3] ^= 0xff;
  const body = der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return `-----BEGIN CERTIFICATE REQUEST-----\n${body}\n-----END CERTIFICATE REQUEST-----\n`;
}

/** `openssl verify` of a chain against `trusted`, for a client certificate unless told otherwise. */
export function opensslVerify(chainPem: string, trusted: string, purpose: 'sslclient' | 'sslserver' = 'sslclient'): string {
  return verifyChain(chainPem, trusted, purpose);
}

/** The JSON body of a JWT, keys in their wire order. */
export function jwtClaims(jwt: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8')) as Record<string, unknown>;
}

/**
 * Verifies a controller JWT against the public key of the TLS server certificate (what SDKs do) and
 * checks the header upstream sends: `{alg: ES256, kid: <server cert SHA-1>, typ: JWT}`.
 */
export async function verifyWithServerCertificate(tc: TestController, jwt: string): Promise<Record<string, unknown>> {
  const serverCert = new X509Certificate(tc.controller.pki.serverCertPem);
  const header = decodeProtectedHeader(jwt);
  assert.deepEqual(header, { alg: 'ES256', kid: sha1Of(tc.controller.pki.serverCertPem), typ: 'JWT' });
  const { payload } = await jwtVerify(jwt, serverCert.publicKey, { algorithms: ['ES256'] });
  return payload as Record<string, unknown>;
}

/** An identity created with an inline enrollment; returns its id and the enrollment from its read model. */
export async function identityWithEnrollment(
  tc: TestController,
  enrollment: Record<string, unknown>,
): Promise<{ id: string; enrollment: Record<string, any> }> {
  const res = await tc.mgmt.post('/identities', { name: uniqueName('enrollee'), type: 'Device', isAdmin: false, enrollment });
  assert.equal(res.status, 201, res.text);
  const id = res.body.data.id as string;
  const detail = await tc.mgmt.get(`/identities/${id}`);
  assert.equal(detail.status, 200, detail.text);
  return { id, enrollment: detail.body.data.enrollment };
}
