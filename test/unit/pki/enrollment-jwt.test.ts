import assert from 'node:assert/strict';
import { X509Certificate, createPublicKey } from 'node:crypto';
import { describe, it } from 'node:test';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { loadOrCreatePki } from '../../../src/pki/certificate-authority.ts';
import { signJwt, verifyJwt } from '../../../src/pki/enrollment-jwt.ts';
import { serverJwks } from '../../../src/pki/jwks.ts';
import { temporaryDirectory } from './pki-fixture.ts';

const enrollmentClaims = (exp: number) => ({
  iss: 'https://ctrl.example.com:1280',
  sub: 'identity-1',
  aud: [''],
  exp,
  jti: '8f14e45f-ceea-467a-9575-9b5d1d1a2f3b',
  em: 'ott',
  ctrls: ['tls:ctrl.example.com:6262'],
});

const inOneHour = () => Math.floor(Date.now() / 1000) + 3600;

function decodePart(token: string, index: number): string {
  return Buffer.from(token.split('.')[index], 'base64url').toString('utf8');
}

describe('enrollment JWTs', async () => {
  const dir = await temporaryDirectory();
  const pki = await loadOrCreatePki(dir, { advertise: 'ctrl.example.com' });

  it('signs with header exactly {alg: ES256, kid: server fingerprint, typ: JWT}', async () => {
    const token = await signJwt(enrollmentClaims(inOneHour()), pki);
    assert.equal(decodePart(token, 0), JSON.stringify({ alg: 'ES256', kid: pki.serverCertFingerprint, typ: 'JWT' }));
    assert.equal(decodeProtectedHeader(token).kid, pki.serverCertFingerprint);
  });

  it('signs the claims as given, in order, without adding iat or nbf', async () => {
    const claims = enrollmentClaims(inOneHour());
    const token = await signJwt(claims, pki);
    assert.equal(decodePart(token, 1), JSON.stringify(claims));
  });

  it('round-trips through verifyJwt', async () => {
    const claims = enrollmentClaims(inOneHour());
    assert.deepEqual(await verifyJwt(await signJwt(claims, pki), pki), claims);
  });

  it('verifies against the public key of the TLS leaf, as SDKs do', async () => {
    const token = await signJwt(enrollmentClaims(inOneHour()), pki);
    const leafKey = new X509Certificate(pki.serverCertPem).publicKey;
    const { payload } = await jwtVerify(token, leafKey, { algorithms: ['ES256'] });
    assert.equal(payload.em, 'ott');
  });

  it('rejects an expired token', async () => {
    const token = await signJwt(enrollmentClaims(Math.floor(Date.now() / 1000) - 10), pki);
    await assert.rejects(verifyJwt(token, pki), /exp/);
  });

  it('rejects a token with a tampered payload', async () => {
    const token = await signJwt(enrollmentClaims(inOneHour()), pki);
    const [header, , signature] = token.split('.');
    const forged = Buffer.from(JSON.stringify({ ...enrollmentClaims(inOneHour()), sub: 'admin' })).toString('base64url');
    await assert.rejects(verifyJwt(`${header}.${forged}.${signature}`, pki));
  });

  it('rejects a token signed by another controller', async () => {
    const other = await loadOrCreatePki(await temporaryDirectory(), { advertise: 'ctrl.example.com' });
    await assert.rejects(verifyJwt(await signJwt(enrollmentClaims(inOneHour()), other), pki));
  });

  it('still verifies tokens signed before the server certificate was renewed (same key)', async () => {
    const token = await signJwt(enrollmentClaims(inOneHour()), pki);
    const renewed = await loadOrCreatePki(dir, { advertise: 'other.example.com' });
    assert.notEqual(renewed.serverCertFingerprint, pki.serverCertFingerprint);
    assert.equal((await verifyJwt(token, renewed)).sub, 'identity-1');
  });
});

describe('serverJwks', async () => {
  const pki = await loadOrCreatePki(await temporaryDirectory(), { advertise: 'ctrl.example.com' });

  it('publishes the server key as an ES256 signing JWK with kid = fingerprint and x5c = server chain', async () => {
    const { keys } = await serverJwks(pki);
    assert.equal(keys.length, 1);
    const [jwk] = keys;
    assert.equal(jwk.kty, 'EC');
    assert.equal(jwk.crv, 'P-256');
    assert.equal(jwk.kid, pki.serverCertFingerprint);
    assert.equal(jwk.alg, 'ES256');
    assert.equal(jwk.use, 'sig');
    assert.ok(jwk.x && jwk.y);
    assert.equal('d' in jwk, false, 'the private scalar must never be published');
    const x5c = jwk.x5c!.map((der) => new X509Certificate(Buffer.from(der, 'base64')));
    assert.deepEqual(
      x5c.map((certificate) => certificate.fingerprint),
      [pki.serverCertPem, pki.intermediateCertPem].map((pem) => new X509Certificate(pem).fingerprint),
    );
    const fromJwk = createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, format: 'jwk' });
    assert.ok(fromJwk.equals(createPublicKey(pki.serverKey)));
  });

  it('verifies a signed JWT through jose createLocalJWKSet', async () => {
    const token = await signJwt(enrollmentClaims(inOneHour()), pki);
    const keySet = createLocalJWKSet(await serverJwks(pki));
    const { payload, protectedHeader } = await jwtVerify(token, keySet);
    assert.equal(payload.jti, '8f14e45f-ceea-467a-9575-9b5d1d1a2f3b');
    assert.equal(protectedHeader.kid, pki.serverCertFingerprint);
  });
});
