/**
 * One-time-token enrollment of identities (`ott`): the enrollment JWT an identity create returns, the
 * generic `POST /enroll` in every body form real clients use (raw PEM as application/x-pem-file, text/plain
 * and application/pkcs7; JSON genericEnroll), the specific `POST /enroll/ott`, the unprefixed legacy path,
 * the certificate that comes back (chain, profile, openssl verification, authenticator record, cert login)
 * and every refusal: reused, unknown, expired and wrong-method tokens, bad CSRs, Accept and Content-Type.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { startTestController, type TestController } from '../../support/controller.ts';
import { assertError } from '../../support/assertions.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import {
  csrFor,
  identityWithEnrollment,
  jwtClaims,
  newEcKey,
  opensslVerify,
  pemBlocks,
  sha1Of,
  tamperedCsr,
  verifyWithServerCertificate,
} from '../../support/enrollment.ts';
import type { HttpResponse } from '../../support/client.ts';

const tc: TestController = await startTestController();
const ENROLL = '/edge/client/v1/enroll';

async function ottIdentity(): Promise<{ id: string; token: string; jwt: string }> {
  const { id, enrollment } = await identityWithEnrollment(tc, { ott: true });
  return { id, token: enrollment.ott.token, jwt: enrollment.ott.jwt };
}

function assertEnrolled(res: HttpResponse): string {
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers['content-type'], 'application/json', 'exactly application/json, no charset');
  assertMatchesReference('client', 'POST', '/enroll', 200, res.body);
  assert.deepEqual(Object.keys(res.body.data), ['cert'], 'ott answers only the client chain');
  assert.deepEqual(res.body.meta, {});
  return res.body.data.cert as string;
}

async function authenticators(identityId: string): Promise<Array<Record<string, any>>> {
  const res = await tc.mgmt.get(`/identities/${identityId}/authenticators`);
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

async function outstanding(identityId: string): Promise<number> {
  const res = await tc.mgmt.get(`/identities/${identityId}/enrollments`);
  assert.equal(res.status, 200, res.text);
  return res.body.data.length as number;
}

describe('the ott enrollment JWT', () => {
  it('is in the identity read model and signed by the TLS server key with upstream claims', async () => {
    const before = Math.floor(Date.now() / 1000);
    const { id, enrollment } = await identityWithEnrollment(tc, { ott: true });
    assert.deepEqual(Object.keys(enrollment), ['ott']);
    assert.deepEqual(Object.keys(enrollment.ott).sort(), ['expiresAt', 'id', 'jwt', 'token']);
    assert.match(enrollment.ott.token, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const claims = await verifyWithServerCertificate(tc, enrollment.ott.jwt);
    assert.deepEqual(Object.keys(jwtClaims(enrollment.ott.jwt)), ['iss', 'sub', 'aud', 'exp', 'jti', 'em', 'ctrls']);
    const version = await tc.http.get('/version');
    const clientBase = version.body.data.apiVersions['edge-client'].v1.apiBaseUrls[0] as string;
    assert.equal(claims.iss, clientBase.replace(/\/edge\/client\/v1$/, ''), 'iss is the edge client API base without path');
    assert.match(claims.iss as string, new RegExp(`^https://[^/]+:${tc.port}$`));
    assert.equal(claims.sub, id);
    assert.deepEqual(claims.aud, ['']);
    assert.equal(claims.jti, enrollment.ott.token);
    assert.equal(claims.em, 'ott');
    // As upstream for a standalone controller: the one control-channel address, on the API's host and port.
    assert.deepEqual(claims.ctrls, [`tls:${new URL(claims.iss as string).host}`]);
    assert.equal(claims.exp, Math.floor(Date.parse(enrollment.ott.expiresAt) / 1000));
    // Upstream's default identity enrollment lifetime is 180 minutes.
    const lifetime = (claims.exp as number) - before;
    assert.ok(lifetime > 179 * 60 && lifetime <= 180 * 60 + 5, `lifetime ${lifetime}s`);
    const detail = await tc.mgmt.get(`/identities/${id}`);
    assertMatchesReference('management', 'GET', '/identities/{id}', 200, detail.body, { allowNullAt: ['/data/interfaces'] });
  });

  it('is absent when no enrollment or ott:false is requested', async () => {
    assert.deepEqual((await identityWithEnrollment(tc, { ott: false })).enrollment, {});
    const res = await tc.mgmt.post('/identities', { name: `plain-${Date.now()}`, type: 'User', isAdmin: false });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual((await tc.mgmt.get(`/identities/${res.body.data.id}`)).body.data.enrollment, {});
  });
});

describe('enrolling with ott', () => {
  const forms: Array<[string, (token: string, csr: string) => Promise<HttpResponse>]> = [
    ['raw PEM as application/x-pem-file without Accept (Go SDK)', (token, csr) =>
      tc.http.request('POST', `${ENROLL}?method=ott&token=${token}`, { rawBody: csr, contentType: 'application/x-pem-file', headers: { accept: '' } })],
    ['raw PEM as text/plain with Accept application/json (C SDK, unprefixed path)', (token, csr) =>
      tc.http.request('POST', `/enroll?method=ott&token=${token}`, { rawBody: csr, contentType: 'text/plain' })],
    ['raw PEM as application/pkcs7 without a method', (token, csr) =>
      tc.http.request('POST', `${ENROLL}?token=${token}`, { rawBody: csr, contentType: 'application/pkcs7', headers: { accept: 'text/html, */*' } })],
    ['JSON genericEnroll', (token, csr) => tc.http.post(`${ENROLL}?method=ott&token=${token}`, { clientCsr: csr })],
    ['the specific path /enroll/ott', (token, csr) => tc.http.post(`${ENROLL}/ott`, { token, clientCsr: csr })],
  ];

  for (const [name, send] of forms) {
    it(`issues a client certificate for ${name}`, async () => {
      const { id, token } = await ottIdentity();
      const key = await newEcKey();
      const cert = assertEnrolled(await send(token, await csrFor(key, id)));

      const blocks = pemBlocks(cert);
      assert.equal(blocks.length, 2, 'leaf and signing intermediate, never the root');
      assert.equal(blocks[1], tc.controller.pki.intermediateCertPem);
      opensslVerify(cert, tc.ca, 'sslclient');
      const leaf = new X509Certificate(blocks[0]);
      assert.match(leaf.subject, new RegExp(`CN=${id.replace(/[.]/g, '\\.')}`));
      assert.ok(leaf.checkIssued(new X509Certificate(tc.controller.pki.intermediateCertPem)));
      assert.equal(leaf.subjectAltName, undefined, '0.27-era ott certificates carry no SAN');
      assert.ok(leaf.publicKey.equals((await import('node:crypto')).createPublicKey(key.keyPem)));

      const auths = await authenticators(id);
      assert.equal(auths.length, 1);
      assert.equal(auths[0].method, 'cert');
      assert.equal(auths[0].fingerprint, sha1Of(blocks[0]));
      assert.equal(auths[0].isIssuedByNetwork, true);
      assert.equal(await outstanding(id), 0, 'the enrollment is consumed');
      assert.deepEqual((await tc.mgmt.get(`/identities/${id}`)).body.data.enrollment, {});
    });
  }

  it('lets the identity log in with the issued certificate', async () => {
    const { id, token } = await ottIdentity();
    const key = await newEcKey('P-384');
    const cert = assertEnrolled(await tc.http.post(`${ENROLL}/ott`, { token, clientCsr: await csrFor(key, id) }));
    const login = await tc.http.post('/edge/client/v1/authenticate?method=cert', undefined, { cert, key: key.keyPem });
    assert.equal(login.status, 200, login.text);
    assert.equal(login.body.data.identity.id, id);
  });

  it('refuses a token that was already used', async () => {
    const { id, token } = await ottIdentity();
    const csr = await csrFor(await newEcKey(), id);
    assertEnrolled(await tc.http.post(`${ENROLL}?method=ott&token=${token}`, { clientCsr: csr }));
    assertError(await tc.http.post(`${ENROLL}?method=ott&token=${token}`, { clientCsr: csr }), 400, 'INVALID_ENROLLMENT_TOKEN');
    assertError(await tc.http.post(`${ENROLL}/ott`, { token, clientCsr: csr }), 400, 'INVALID_ENROLLMENT_TOKEN');
    assert.equal((await authenticators(id)).length, 1);
  });

  it('refuses unknown and missing tokens', async () => {
    const csr = await csrFor(await newEcKey(), 'nobody');
    const unknown = '5b0e6a36-2a2b-4c0c-9f0e-0123456789ab';
    assertError(await tc.http.post(`${ENROLL}?method=ott&token=${unknown}`, { clientCsr: csr }), 400, 'INVALID_ENROLLMENT_TOKEN');
    assertError(await tc.http.post(`${ENROLL}?method=ott`, { clientCsr: csr }), 400, 'INVALID_ENROLLMENT_TOKEN');
    assertError(await tc.http.request('POST', `${ENROLL}?method=ott&token=not-a-uuid`, { rawBody: csr, contentType: 'text/plain' }), 400, 'INVALID_ENROLLMENT_TOKEN');
    assertError(await tc.http.post(`${ENROLL}/ott`, { token: 'not-a-uuid', clientCsr: csr }), 400, 'INVALID_ENROLLMENT_TOKEN');
  });

  it('validates the token format on the JSON form', async () => {
    const res = await tc.http.post(`${ENROLL}?method=ott&token=not-a-uuid`, { clientCsr: 'x' });
    assertError(res, 400, 'COULD_NOT_VALIDATE');
    assert.equal(res.body.error.cause.field, 'token');
  });

  it('refuses an expired token and keeps it outstanding', async () => {
    const { id, token } = await ottIdentity();
    await tc.controller.store.write((tx) => tx.run('UPDATE enrollments SET expires_at = ? WHERE token = ?', [new Date(Date.now() - 1000).toISOString(), token]));
    const csr = await csrFor(await newEcKey(), id);
    assertError(await tc.http.post(`${ENROLL}?method=ott&token=${token}`, { clientCsr: csr }), 400, 'ENROLLMENT_EXPIRED');
    assertError(await tc.http.post(`${ENROLL}/ott`, { token, clientCsr: csr }), 400, 'ENROLLMENT_EXPIRED');
    assert.equal(await outstanding(id), 1);
    assert.equal((await authenticators(id)).length, 0);
  });

  it('refuses a method other than the enrollment method', async () => {
    const { id, token } = await ottIdentity();
    const csr = await csrFor(await newEcKey(), id);
    assertError(await tc.http.post(`${ENROLL}?method=updb&token=${token}`, { password: 'secret-pw' }), 400, 'INVALID_ENROLL_METHOD');
    assertError(await tc.http.post(`${ENROLL}?method=bogus&token=${token}`, { clientCsr: csr }), 400, 'INVALID_ENROLL_METHOD');
    assertError(await tc.http.post(`${ENROLL}/updb?token=${token}`, { password: 'secret-pw' }), 400, 'INVALID_ENROLL_METHOD');
    assert.equal(await outstanding(id), 1);
  });

  it('refuses missing, malformed and forged CSRs without consuming the token', async () => {
    const { id, token } = await ottIdentity();
    const good = await csrFor(await newEcKey(), id);
    const url = `${ENROLL}?method=ott&token=${token}`;
    for (const res of [
      await tc.http.request('POST', url, { rawBody: '', contentType: 'application/x-pem-file' }),
      await tc.http.post(url, {}),
      await tc.http.request('POST', url, { rawBody: 'not a csr', contentType: 'text/plain' }),
      await tc.http.request('POST', url, { rawBody: '-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n', contentType: 'text/plain' }),
      await tc.http.request('POST', url, { rawBody: tamperedCsr(good), contentType: 'application/x-pem-file' }),
      await tc.http.request('POST', url, { rawBody: tc.controller.pki.intermediateCertPem, contentType: 'application/x-pem-file' }),
    ]) {
      assertError(res, 400, 'COULD_NOT_PROCESS_CSR');
    }
    assert.equal(await outstanding(id), 1);
    assertEnrolled(await tc.http.request('POST', url, { rawBody: good, contentType: 'application/x-pem-file' }));
  });

  it('answers 406 on field Accept for a raw PEM request that accepts only application/x-pem-file', async () => {
    const { id, token } = await ottIdentity();
    const csr = await csrFor(await newEcKey(), id);
    const res = await tc.http.request('POST', `${ENROLL}?method=ott&token=${token}`, { rawBody: csr, contentType: 'text/plain', headers: { accept: 'application/x-pem-file' } });
    assertError(res, 406, 'COULD_NOT_VALIDATE');
    assert.equal(res.body.error.cause.field, 'Accept');
    assert.equal(res.body.error.cause.value, 'application/x-pem-file');
    assert.equal(await outstanding(id), 1);
  });

  it('answers 415 for a body in a media type enroll does not consume', async () => {
    const { id, token } = await ottIdentity();
    const res = await tc.http.request('POST', `${ENROLL}?method=ott&token=${token}`, { rawBody: 'x', contentType: 'application/octet-stream' });
    assert.equal(res.status, 415, res.text);
    assert.equal(await outstanding(id), 1);
  });

  it('needs no session and ignores one', async () => {
    const { id, token } = await ottIdentity();
    const csr = await csrFor(await newEcKey(), id);
    assertEnrolled(await tc.http.post(`${ENROLL}/ott`, { token, clientCsr: csr }, { token: 'not-a-session' }));
  });

  it('fails with INVALID_ENROLLMENT_TOKEN once the identity is deleted', async () => {
    const { id, token } = await ottIdentity();
    assert.equal((await tc.mgmt.delete(`/identities/${id}`)).status, 200);
    assertError(await tc.http.post(`${ENROLL}/ott`, { token, clientCsr: await csrFor(await newEcKey(), id) }), 400, 'INVALID_ENROLLMENT_TOKEN');
  });
});
