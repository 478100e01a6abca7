/**
 * Enrollment method `ottca`: an identity pre-created with an ottca enrollment enrolls by presenting, over
 * mutual TLS with its one-time token, a certificate issued by the enrollment's third-party CA. Covers the
 * generic and the specific route, the stored authenticator (verified with openssl), login afterwards, and
 * every refusal: reused token, no certificate, wrong CA, expired or serverAuth-only certificate, CA not
 * enabled for ottca, unverified CA, certificate already in use, CA deleted.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, type TestController } from '../../support/controller.ts';
import { createIdentity } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertError } from '../../support/assertions.ts';
import { opensslVerify, pemBlocks, sha1Of } from '../../support/router-certs.ts';
import {
  SERVER_AUTH, createTestCa, issueTestCert, registerCa, trustedCa, verifyCa, type IssuedTestCert,
} from '../../support/third-party-ca.ts';
import type { HttpResponse } from '../../support/client.ts';

const tc: TestController = await startTestController();
const DAY = 86400_000;

/** An identity with an outstanding ottca enrollment for `caId`; returns both ids and the token. */
async function ottcaEnrollment(caId: string): Promise<{ identityId: string; enrollmentId: string; token: string }> {
  const identityId = await createIdentity(tc.mgmt);
  const res = await tc.mgmt.post('/enrollments', { method: 'ottca', identityId, caId, expiresAt: new Date(Date.now() + DAY).toISOString() });
  assert.equal(res.status, 201, res.text);
  const detail = await tc.mgmt.get(`/enrollments/${res.body.data.id}`);
  assert.equal(detail.status, 200, detail.text);
  return { identityId, enrollmentId: res.body.data.id, token: detail.body.data.token };
}

/** The Go SDK's request: generic path, text/plain, empty body, the certificate over TLS. */
function enrollGeneric(token: string, cert?: IssuedTestCert, chainPem?: string): Promise<HttpResponse> {
  return tc.http.post(`/edge/client/v1/enroll?method=ottca&token=${token}`, undefined, {
    rawBody: '', contentType: 'text/plain', cert: chainPem ?? cert?.certPem, key: cert?.keyPem,
  });
}

async function certAuthenticators(identityId: string): Promise<Array<Record<string, any>>> {
  const res = await tc.mgmt.get(`/identities/${identityId}/authenticators`);
  assert.equal(res.status, 200, res.text);
  return res.body.data.filter((a: { method: string }) => a.method === 'cert');
}

describe('ottca enrollment', () => {
  it('turns the presented certificate into the identity\'s cert authenticator; the token is then used up', async () => {
    const { ca, id: caId } = await trustedCa(tc.mgmt);
    const { identityId, enrollmentId, token } = await ottcaEnrollment(caId);
    const leaf = await issueTestCert(ca);
    const res = await enrollGeneric(token, leaf);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.deepEqual(res.body, { data: {}, meta: {} });
    assertMatchesReference('client', 'POST', '/enroll/ottca', 200, res.body);

    const [authenticator] = await certAuthenticators(identityId);
    assert.equal(authenticator.fingerprint, sha1Of(leaf.certPem));
    assert.equal(authenticator.isIssuedByNetwork, undefined, 'left out when false, as upstream');
    // the stored chain runs from the leaf to the CA and verifies with openssl
    const stored = pemBlocks(authenticator.certPem);
    assert.equal(stored.length, 2);
    assert.equal(sha1Of(stored[1]), sha1Of(ca.certPem));
    assert.match(opensslVerify(authenticator.certPem, ca.certPem, 'sslclient'), /OK/);
    assertError(await tc.mgmt.get(`/enrollments/${enrollmentId}`), 404, 'NOT_FOUND');

    const login = await tc.http.post('/edge/client/v1/authenticate?method=cert', undefined, { cert: leaf.certPem, key: leaf.keyPem });
    assert.equal(login.status, 200, login.text);
    assert.equal(login.body.data.identityId, identityId);
    assert.equal(login.body.data.authenticatorId, authenticator.id);

    assertError(await enrollGeneric(token, leaf), 400, 'INVALID_ENROLLMENT_TOKEN');
  });

  it('enrolls through the specific path with a JSON token and through an intermediate CA the client presents', async () => {
    const root = await createTestCa();
    const intermediate = await createTestCa({ parent: root });
    const caId = await registerCa(tc.mgmt, root);
    await verifyCa(tc.mgmt, caId, root);
    const { identityId, token } = await ottcaEnrollment(caId);
    const leaf = await issueTestCert(intermediate);
    const res = await tc.http.post('/edge/client/v1/enroll/ottca', { token }, { cert: leaf.certPem + intermediate.certPem, key: leaf.keyPem });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { data: {}, meta: {} });
    const [authenticator] = await certAuthenticators(identityId);
    assert.equal(pemBlocks(authenticator.certPem).length, 3);
    assert.match(opensslVerify(authenticator.certPem, root.certPem, 'sslclient'), /OK/);
  });

  it('refuses a missing, foreign, expired or server-only certificate, and leaves the enrollment usable', async () => {
    const { ca, id: caId } = await trustedCa(tc.mgmt);
    const { identityId, token } = await ottcaEnrollment(caId);
    assertError(await enrollGeneric(token), 400, 'CERTIFICATE_FAILED_VALIDATION');
    assertError(await enrollGeneric(token, await issueTestCert(await createTestCa())), 400, 'CERTIFICATE_FAILED_VALIDATION');
    const expired = await issueTestCert(ca, { notBefore: new Date(Date.now() - 10 * DAY), notAfter: new Date(Date.now() - DAY) });
    assertError(await enrollGeneric(token, expired), 400, 'CERTIFICATE_FAILED_VALIDATION');
    assertError(await enrollGeneric(token, await issueTestCert(ca, { usages: [SERVER_AUTH] })), 400, 'CERTIFICATE_FAILED_VALIDATION');
    assert.equal((await certAuthenticators(identityId)).length, 0);
    assert.equal((await enrollGeneric(token, await issueTestCert(ca))).status, 200);
  });

  it('refuses CAs that do not allow ottca enrollment or are not verified', async () => {
    const { ca, id: caId } = await trustedCa(tc.mgmt, { isOttCaEnrollmentEnabled: false });
    const { token } = await ottcaEnrollment(caId);
    assertError(await enrollGeneric(token, await issueTestCert(ca)), 400, 'ENROLLMENT_CA_NOT_VALID');

    const unverified = await createTestCa();
    const unverifiedId = await registerCa(tc.mgmt, unverified);
    const pending = await ottcaEnrollment(unverifiedId);
    const leaf = await issueTestCert(unverified);
    assertError(await enrollGeneric(pending.token, leaf), 400, 'ENROLLMENT_CA_NOT_VALID');
    await verifyCa(tc.mgmt, unverifiedId, unverified);
    assert.equal((await enrollGeneric(pending.token, leaf)).status, 200);
  });

  it('answers 409 CERT_IN_USE with the fingerprint when the certificate already belongs to an authenticator', async () => {
    const { ca, id: caId } = await trustedCa(tc.mgmt);
    const leaf = await issueTestCert(ca);
    const first = await ottcaEnrollment(caId);
    assert.equal((await enrollGeneric(first.token, leaf)).status, 200);
    const second = await ottcaEnrollment(caId);
    const res = await enrollGeneric(second.token, leaf);
    assertError(res, 409, 'CERT_IN_USE');
    assert.equal(res.body.error.cause.data.fingerprint, sha1Of(leaf.certPem));
    assert.equal((await certAuthenticators(second.identityId)).length, 0);
  });

  it('deletes the authenticators enrolled through a CA together with the CA', async () => {
    const { ca, id: caId } = await trustedCa(tc.mgmt);
    const { identityId, token } = await ottcaEnrollment(caId);
    const leaf = await issueTestCert(ca);
    assert.equal((await enrollGeneric(token, leaf)).status, 200);
    const [authenticator] = await certAuthenticators(identityId);
    assert.equal((await tc.mgmt.delete(`/cas/${caId}`)).status, 200);
    assertError(await tc.mgmt.get(`/authenticators/${authenticator.id}`), 404, 'NOT_FOUND');
    assert.equal((await certAuthenticators(identityId)).length, 0);
    assert.equal((await tc.mgmt.get(`/identities/${identityId}`)).status, 200);
    const login = await tc.http.post('/edge/client/v1/authenticate?method=cert', undefined, { cert: leaf.certPem, key: leaf.keyPem });
    assertError(login, 401, 'INVALID_AUTH');
  });

  it('removes outstanding ottca enrollments when their CA is deleted', async () => {
    const { ca, id: caId } = await trustedCa(tc.mgmt);
    const { identityId, enrollmentId, token } = await ottcaEnrollment(caId);
    assert.equal((await tc.mgmt.delete(`/cas/${caId}`)).status, 200);
    assertError(await tc.mgmt.get(`/enrollments/${enrollmentId}`), 404, 'NOT_FOUND');
    assertError(await enrollGeneric(token, await issueTestCert(ca)), 400, 'INVALID_ENROLLMENT_TOKEN');
    const identity = await tc.mgmt.get(`/identities/${identityId}`);
    assert.equal(identity.status, 200, identity.text);
    assert.equal(identity.body.data.enrollment.ottca, undefined);
  });
});
