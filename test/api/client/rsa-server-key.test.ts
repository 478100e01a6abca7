/**
 * `--server-key-type rsa` (PORTCULLIS_SERVER_KEY_TYPE): the controller's TLS key, which also signs every
 * enrollment JWT, is generated as RSA-4096 as in an upstream quickstart PKI, so JWTs are RS256. C SDK releases
 * before 2023 (the ones the Python `openziti` wheels carry) verify only RSA enrollment JWT signatures.
 * Covers the TLS leaf, the JWT header and signature, the JWKS, the enroll challenge, a full ott enrollment,
 * that an existing key is kept whatever the option says, and the option's parsing.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:tls';
import { randomUUID, verify as verifySignature, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { startTestController, type TestController } from '../../support/controller.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { csrFor, identityWithEnrollment, newEcKey, opensslVerify, pemBlocks, sha1Of } from '../../support/enrollment.ts';
import { loadConfig } from '../../../src/config.ts';
import { loadOrCreatePki } from '../../../src/pki/certificate-authority.ts';

const tc: TestController = await startTestController({ extraArgs: ['--server-key-type', 'rsa'] });
const CLIENT = '/edge/client/v1';

function presentedLeaf(): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: tc.port, servername: 'localhost', ca: tc.ca }, () => {
      const raw = socket.getPeerCertificate().raw;
      socket.end();
      resolve(new X509Certificate(raw));
    });
    socket.on('error', reject);
  });
}

describe('a controller started with --server-key-type rsa', () => {
  it('presents an RSA-4096 server certificate that chains to the CA bundle', async () => {
    const leaf = await presentedLeaf();
    assert.equal(leaf.publicKey.asymmetricKeyType, 'rsa');
    assert.equal(leaf.publicKey.asymmetricKeyDetails?.modulusLength, 4096);
    assert.equal(leaf.fingerprint, new X509Certificate(tc.controller.pki.serverCertPem).fingerprint);
    opensslVerify(tc.controller.pki.serverChainPem, tc.ca, 'sslserver');
  });

  it('signs enrollment JWTs RS256 with the TLS key; the kid is the server certificate SHA-1', async () => {
    const { enrollment } = await identityWithEnrollment(tc, { ott: true });
    const jwt = enrollment.ott.jwt as string;
    assert.deepEqual(decodeProtectedHeader(jwt), { alg: 'RS256', kid: sha1Of(tc.controller.pki.serverCertPem), typ: 'JWT' });
    const leaf = await presentedLeaf();
    const { payload } = await jwtVerify(jwt, leaf.publicKey, { algorithms: ['RS256'] });
    assert.equal(payload.jti, enrollment.ott.token);
    assert.equal(payload.em, 'ott');
  });

  it('publishes the RSA key in /enroll/jwks', async () => {
    const res = await tc.http.get(`${CLIENT}/enroll/jwks`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('client', 'GET', '/enroll/jwks', 200, res.body);
    const [jwk] = res.body.keys;
    assert.equal(jwk.kty, 'RSA');
    assert.equal(jwk.alg, 'RS256');
    assert.equal(jwk.kid, sha1Of(tc.controller.pki.serverCertPem));
    assert.equal(jwk.d, undefined, 'no private part');
    const { enrollment } = await identityWithEnrollment(tc, { ott: true });
    const { protectedHeader } = await jwtVerify(enrollment.ott.jwt, createLocalJWKSet(res.body));
    assert.equal(protectedHeader.alg, 'RS256');
  });

  it('answers the enroll challenge with an RS256 signature', async () => {
    const kid = sha1Of(tc.controller.pki.serverCertPem);
    const nonce = randomUUID();
    const res = await tc.http.post(`${CLIENT}/enroll/challenge`, { nonce, keyId: kid });
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('client', 'POST', '/enroll/challenge', 200, res.body);
    assert.equal(res.body.algorithm, 'RS256');
    const leaf = await presentedLeaf();
    assert.ok(verifySignature('sha256', Buffer.from(nonce), leaf.publicKey, Buffer.from(res.body.signature, 'base64url')));
  });

  it('enrolls an ott identity whose certificate chains to the bundle', async () => {
    const { id, enrollment } = await identityWithEnrollment(tc, { ott: true });
    const csr = await csrFor(await newEcKey(), id);
    const res = await tc.http.request('POST', `/enroll?method=ott&token=${enrollment.ott.token}`, { rawBody: csr, contentType: 'text/plain' });
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('client', 'POST', '/enroll', 200, res.body);
    assert.ok(pemBlocks(res.body.data.cert).length >= 1);
    opensslVerify(res.body.data.cert, tc.ca, 'sslclient');
  });
});

describe('the server key type option', () => {
  it('defaults to ec, and is read from --server-key-type or PORTCULLIS_SERVER_KEY_TYPE', () => {
    assert.equal(loadConfig([], {}).serverKeyType, 'ec');
    assert.equal(loadConfig(['--server-key-type', 'rsa'], {}).serverKeyType, 'rsa');
    assert.equal(loadConfig([], { PORTCULLIS_SERVER_KEY_TYPE: 'rsa' }).serverKeyType, 'rsa');
    assert.equal(loadConfig(['--server-key-type', 'ec'], { PORTCULLIS_SERVER_KEY_TYPE: 'rsa' }).serverKeyType, 'ec', 'the flag wins');
  });

  it('rejects other values', () => {
    assert.throws(() => loadConfig(['--server-key-type', 'dsa'], {}));
    assert.throws(() => loadConfig(['--server-key-type', 'RSA'], {}));
    assert.throws(() => loadConfig([], { PORTCULLIS_SERVER_KEY_TYPE: 'ed25519' }));
  });

  it('only applies to a key it generates: an existing server key is kept', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'portcullis-keytype-'));
    try {
      const ec = await loadOrCreatePki(dir, { advertise: 'localhost' });
      assert.equal(ec.jwtAlgorithm, 'ES256');
      const again = await loadOrCreatePki(dir, { advertise: 'localhost', serverKeyType: 'rsa' });
      assert.equal(again.jwtAlgorithm, 'ES256');
      assert.equal(again.serverKeyPem, ec.serverKeyPem);

      const rsaDir = join(dir, 'rsa');
      const rsa = await loadOrCreatePki(rsaDir, { advertise: 'localhost', serverKeyType: 'rsa' });
      assert.equal(rsa.jwtAlgorithm, 'RS256');
      const kept = await loadOrCreatePki(rsaDir, { advertise: 'other.example.com', serverKeyType: 'ec' });
      assert.equal(kept.jwtAlgorithm, 'RS256', 'a reissued server certificate keeps the RSA key');
      assert.equal(kept.serverKeyPem, rsa.serverKeyPem);
      assert.notEqual(kept.serverCertFingerprint, rsa.serverCertFingerprint);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
