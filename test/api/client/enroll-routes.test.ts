/**
 * The enroll surface beyond single methods: the enrollment signing keys (`GET /enroll/jwks`), the nonce
 * challenge (`POST /enroll/challenge`), the network JWT on both APIs (`GET /network-jwts`), and the generic
 * dispatch rules (method resolution, path-only and token-less methods, content types, public access).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID, verify as verifySignature, X509Certificate, createPublicKey } from 'node:crypto';
import { createLocalJWKSet, importJWK, jwtVerify } from 'jose';
import { startTestController, type TestController } from '../../support/controller.ts';
import { assertDecodeError, assertError } from '../../support/assertions.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { identityWithEnrollment, jwtClaims, sha1Of, verifyWithServerCertificate } from '../../support/enrollment.ts';

const tc: TestController = await startTestController();
const CLIENT = '/edge/client/v1';

describe('GET /enroll/jwks', () => {
  it('publishes the TLS server key, unenveloped, and enrollment JWTs verify against it', async () => {
    const res = await tc.http.get(`${CLIENT}/enroll/jwks`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers['content-type'], 'application/json');
    assertMatchesReference('client', 'GET', '/enroll/jwks', 200, res.body);
    assert.deepEqual(Object.keys(res.body), ['keys']);
    assert.equal(res.body.keys.length, 1);
    const [jwk] = res.body.keys;
    assert.equal(jwk.kid, sha1Of(tc.controller.pki.serverCertPem));
    assert.equal(jwk.alg, 'ES256');
    assert.equal(jwk.use, 'sig');
    assert.equal(jwk.d, undefined, 'no private part');
    assert.equal(new X509Certificate(Buffer.from(jwk.x5c[0], 'base64')).fingerprint, new X509Certificate(tc.controller.pki.serverCertPem).fingerprint);

    const { enrollment } = await identityWithEnrollment(tc, { ott: true });
    const { payload, protectedHeader } = await jwtVerify(enrollment.ott.jwt, createLocalJWKSet(res.body));
    assert.equal(protectedHeader.kid, jwk.kid);
    assert.equal(payload.jti, enrollment.ott.token);
  });

  it('needs no session', async () => {
    const res = await tc.http.get('/enroll/jwks');
    assert.equal(res.status, 200, res.text);
  });
});

describe('POST /enroll/challenge', () => {
  it('signs the nonce with the key the kid names and returns the CA pool', async () => {
    const jwks = (await tc.http.get(`${CLIENT}/enroll/jwks`)).body;
    const kid = jwks.keys[0].kid as string;
    const nonce = randomUUID();
    const res = await tc.http.post(`${CLIENT}/enroll/challenge`, { nonce, keyId: kid });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers['content-type'], 'application/json');
    assertMatchesReference('client', 'POST', '/enroll/challenge', 200, res.body);
    assert.deepEqual(Object.keys(res.body).sort(), ['algorithm', 'caPool', 'kid', 'signature']);
    assert.equal(res.body.algorithm, 'ES256');
    assert.equal(res.body.kid, kid);
    assert.equal(res.body.caPool, tc.ca);
    const key = await importJWK(jwks.keys[0], 'ES256');
    const signature = Buffer.from(res.body.signature, 'base64url');
    assert.equal(signature.length, 64, 'raw r||s for P-256');
    assert.ok(verifySignature('sha256', Buffer.from(nonce), { key: key as never, dsaEncoding: 'ieee-p1363' }, signature));
    const serverKey = createPublicKey(tc.controller.pki.serverCertPem);
    assert.ok(verifySignature('sha256', Buffer.from(nonce), { key: serverKey, dsaEncoding: 'ieee-p1363' }, signature));
    assert.ok(!verifySignature('sha256', Buffer.from(randomUUID()), { key: serverKey, dsaEncoding: 'ieee-p1363' }, signature));
  });

  it('refuses an unknown key id, a nonce that is not a UUID and missing fields', async () => {
    const kid = sha1Of(tc.controller.pki.serverCertPem);
    const unknown = await tc.http.post(`${CLIENT}/enroll/challenge`, { nonce: randomUUID(), keyId: 'ab'.repeat(20) });
    assertError(unknown, 400, 'COULD_NOT_VALIDATE');
    assert.equal(unknown.body.error.cause.field, 'keyId');
    const badNonce = await tc.http.post(`${CLIENT}/enroll/challenge`, { nonce: 'not-a-uuid', keyId: kid });
    assertError(badNonce, 400, 'COULD_NOT_VALIDATE');
    assert.equal(badNonce.body.error.cause.field, 'nonce');
    assertError(await tc.http.post(`${CLIENT}/enroll/challenge`, { nonce: randomUUID() }), 400, 'COULD_NOT_VALIDATE');
    assertError(await tc.http.post(`${CLIENT}/enroll/challenge`, undefined), 400, 'COULD_NOT_VALIDATE');
  });
});

describe('GET /network-jwts', () => {
  for (const api of ['client', 'management'] as const) {
    it(`serves the network JWT on the ${api} API without a session`, async () => {
      const res = await tc.http.get(`/edge/${api}/v1/network-jwts?limit=10&offset=0`);
      assert.equal(res.status, 200, res.text);
      assertMatchesReference(api, 'GET', '/network-jwts', 200, res.body);
      assert.deepEqual(res.body.meta, {});
      assert.equal(res.body.data.length, 1);
      assert.equal(res.body.data[0].name, 'default');
      const token = res.body.data[0].token as string;
      const claims = await verifyWithServerCertificate(tc, token);
      assert.deepEqual(Object.keys(jwtClaims(token)), ['iss', 'sub', 'aud', 'jti', 'em', 'ctrls']);
      assert.match(claims.iss as string, new RegExp(`^https://[^/]+:${tc.port}/$`), 'iss with a trailing slash');
      assert.equal(claims.sub, claims.iss);
      assert.deepEqual(claims.aud, ['openziti-enroller']);
      assert.equal(claims.em, 'network');
      assert.equal(claims.exp, undefined);
      assert.equal(claims.ctrls, null);
    });
  }

  it('is signed once per process: both APIs and repeated calls return the same token', async () => {
    const a = (await tc.http.get(`${CLIENT}/network-jwts`)).body.data[0].token;
    const b = (await tc.http.get('/edge/management/v1/network-jwts')).body.data[0].token;
    const c = (await tc.http.get('/network-jwts')).body.data[0].token;
    assert.equal(a, b);
    assert.equal(a, c);
  });
});

describe('enroll dispatch', () => {
  it('reaches extend-router only through its own path', async () => {
    assertError(await tc.http.post(`${CLIENT}/enroll?method=extend-router`, { certCsr: 'x', serverCertCsr: 'y' }), 400, 'INVALID_ENROLL_METHOD');
  });

  it('resolves ca without a token, on the generic and the specific path alike', async () => {
    const generic = await tc.http.post(`${CLIENT}/enroll?method=ca`, {});
    const specific = await tc.http.post(`${CLIENT}/enroll/ca`, undefined);
    const legacyEmpty = await tc.http.request('POST', `${CLIENT}/enroll?method=ca`, {});
    assert.notEqual(generic.body?.error?.code, 'INVALID_ENROLLMENT_TOKEN', generic.text);
    assert.equal(generic.status, specific.status, specific.text);
    assert.equal(generic.body?.error?.code, specific.body?.error?.code);
    assert.equal(legacyEmpty.body?.error?.code, specific.body?.error?.code, legacyEmpty.text);
  });

  it('resolves token without an enrollment lookup, on the generic and the specific path alike', async () => {
    const headers = { authorization: 'Bearer eyJhbGciOiJub25lIn0.e30.c2ln' };
    const generic = await tc.http.post(`${CLIENT}/enroll?method=token`, {}, { headers });
    const specific = await tc.http.post(`${CLIENT}/enroll/token`, {}, { headers });
    assert.equal(generic.status, specific.status, `${generic.text} / ${specific.text}`);
    assert.equal(generic.body?.error?.code, specific.body?.error?.code);
  });

  it('refuses a JSON body that is not an object', async () => {
    const { enrollment } = await identityWithEnrollment(tc, { ott: true });
    const res = await tc.http.request('POST', `${CLIENT}/enroll?method=ott&token=${enrollment.ott.token}`, { rawBody: '"text"', contentType: 'application/json' });
    // A JSON string is the one non-object the generic form reads (PEM bodies arrive as text), then refuses.
    assertError(res, 400, 'COULD_NOT_VALIDATE');
    const array = await tc.http.request('POST', `${CLIENT}/enroll?method=ott&token=${enrollment.ott.token}`, { rawBody: '[]', contentType: 'application/json' });
    assertDecodeError(array, '');
    const broken = await tc.http.request('POST', `${CLIENT}/enroll?method=ott&token=${enrollment.ott.token}`, { rawBody: '{', contentType: 'application/json' });
    assertError(broken, 400, 'COULD_NOT_PARSE_BODY');
  });

  it('answers unknown tokens with no method the same as with one', async () => {
    assertError(await tc.http.post(`${CLIENT}/enroll`, {}), 400, 'INVALID_ENROLLMENT_TOKEN');
    assertError(await tc.http.post(`${CLIENT}/enroll?token=${randomUUID()}`, {}), 400, 'INVALID_ENROLLMENT_TOKEN');
  });
});
