/**
 * User name and password enrollment (`updb`): the enrollment an identity create or `POST /enrollments`
 * returns, enrolling through `POST /enroll/updb?token=` and the generic JSON form, the user name coming from
 * the enrollment (never from the request), password login afterwards, and every refusal.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { assertError } from '../../support/assertions.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { identityWithEnrollment, verifyWithServerCertificate } from '../../support/enrollment.ts';
import type { HttpResponse } from '../../support/client.ts';

const tc: TestController = await startTestController();
const ENROLL = '/edge/client/v1/enroll';

async function updbIdentity(): Promise<{ id: string; username: string; token: string }> {
  const username = uniqueName('enrolled-user');
  const { id, enrollment } = await identityWithEnrollment(tc, { updb: username });
  return { id, username, token: enrollment.updb.token };
}

function assertUpdbEnrolled(res: HttpResponse, username: string, operation: '/enroll' | '/enroll/updb'): void {
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers['content-type'], 'application/json');
  assertMatchesReference('client', 'POST', operation, 200, res.body);
  assert.deepEqual(res.body, { data: { username }, meta: {} });
}

async function outstanding(identityId: string): Promise<number> {
  return ((await tc.mgmt.get(`/identities/${identityId}/enrollments`)).body.data as unknown[]).length;
}

describe('updb enrollment', () => {
  it('is in the identity read model with a JWT of method updb', async () => {
    const username = uniqueName('enrolled-user');
    const { id, enrollment } = await identityWithEnrollment(tc, { updb: username });
    assert.deepEqual(Object.keys(enrollment), ['updb']);
    const claims = await verifyWithServerCertificate(tc, enrollment.updb.jwt);
    assert.equal(claims.em, 'updb');
    assert.deepEqual(claims.ctrls, [`tls:${new URL(claims.iss as string).host}`], 'the control-channel address, as upstream');
    assert.equal(claims.sub, id);
    assert.equal(claims.jti, enrollment.updb.token);
    const list = await tc.mgmt.get(`/identities/${id}/enrollments`);
    // The enrollment keeps the user name for the enroll, but shows none (as upstream).
    assert.equal(list.body.data[0].method, 'updb');
    assert.equal(list.body.data[0].username, undefined);
  });

  it('takes ott before updb when both are requested', async () => {
    const { enrollment } = await identityWithEnrollment(tc, { updb: uniqueName('u'), ott: true });
    assert.deepEqual(Object.keys(enrollment), ['ott']);
  });

  it('creates the password authenticator through POST /enroll/updb and allows login', async () => {
    const { id, username, token } = await updbIdentity();
    assertUpdbEnrolled(await tc.http.post(`${ENROLL}/updb?token=${token}`, { password: 'first-password' }), username, '/enroll/updb');
    const auths = (await tc.mgmt.get(`/identities/${id}/authenticators`)).body.data;
    assert.equal(auths.length, 1);
    assert.equal(auths[0].method, 'updb');
    assert.equal(auths[0].username, username);
    assert.equal(await outstanding(id), 0);
    const login = await tc.http.post('/edge/client/v1/authenticate?method=password', { username, password: 'first-password' });
    assert.equal(login.status, 200, login.text);
    assert.equal(login.body.data.identity.id, id);
  });

  it('uses the enrollment user name, not the one in the request, on the generic JSON form', async () => {
    const { username, token } = await updbIdentity();
    const res = await tc.http.post(`${ENROLL}?method=updb&token=${token}`, { username: 'someone-else', password: 'second-password' });
    assertUpdbEnrolled(res, username, '/enroll');
    assert.equal((await tc.http.post('/edge/client/v1/authenticate?method=password', { username: 'someone-else', password: 'second-password' })).status, 401);
    assert.equal((await tc.http.post('/edge/client/v1/authenticate?method=password', { username, password: 'second-password' })).status, 200);
  });

  it('resolves the method from the token when none is given', async () => {
    const { username, token } = await updbIdentity();
    assertUpdbEnrolled(await tc.http.post(`${ENROLL}?token=${token}`, { password: 'third-password' }), username, '/enroll');
  });

  it('refuses a reused token', async () => {
    const { token } = await updbIdentity();
    assert.equal((await tc.http.post(`${ENROLL}/updb?token=${token}`, { password: 'reuse-password' })).status, 200);
    assertError(await tc.http.post(`${ENROLL}/updb?token=${token}`, { password: 'reuse-password' }), 400, 'INVALID_ENROLLMENT_TOKEN');
  });

  it('validates the password and the token without consuming the enrollment', async () => {
    const { id, token } = await updbIdentity();
    const short = await tc.http.post(`${ENROLL}/updb?token=${token}`, { password: 'abc' });
    assertError(short, 400, 'COULD_NOT_VALIDATE');
    assert.equal(short.body.error.cause.field, 'password');
    assertError(await tc.http.post(`${ENROLL}/updb?token=${token}`, { password: 'x'.repeat(101) }), 400, 'COULD_NOT_VALIDATE');
    assertError(await tc.http.post(`${ENROLL}/updb?token=${token}`, {}), 400, 'COULD_NOT_VALIDATE');
    assertError(await tc.http.post(`${ENROLL}?method=updb&token=${token}`, { password: 'pw', username: 'abc' }), 400, 'COULD_NOT_VALIDATE');
    assertError(await tc.http.request('POST', `${ENROLL}?method=updb&token=${token}`, { rawBody: 'some-password', contentType: 'text/plain' }), 400, 'COULD_NOT_VALIDATE');
    const badToken = await tc.http.post(`${ENROLL}/updb?token=not-a-uuid`, { password: 'valid-password' });
    assertError(badToken, 400, 'COULD_NOT_VALIDATE');
    assert.equal(badToken.body.error.cause.field, 'token');
    assertError(await tc.http.post(`${ENROLL}/updb`, { password: 'valid-password' }), 400, 'COULD_NOT_VALIDATE');
    assertError(await tc.http.post(`${ENROLL}/updb?token=0b6f3f5e-9c1a-4f9e-8d55-3a2f0c1b2d3e`, { password: 'valid-password' }), 400, 'INVALID_ENROLLMENT_TOKEN');
    assert.equal(await outstanding(id), 1);
  });

  it('refuses an expired token', async () => {
    const { id, token } = await updbIdentity();
    await tc.controller.store.write((tx) => tx.run('UPDATE enrollments SET expires_at = ? WHERE token = ?', [new Date(Date.now() - 60_000).toISOString(), token]));
    assertError(await tc.http.post(`${ENROLL}/updb?token=${token}`, { password: 'late-password' }), 400, 'ENROLLMENT_EXPIRED');
    assert.equal(await outstanding(id), 1);
  });

  it('refuses an ott token on the updb path', async () => {
    const { enrollment } = await identityWithEnrollment(tc, { ott: true });
    assertError(await tc.http.post(`${ENROLL}/updb?token=${enrollment.ott.token}`, { password: 'valid-password' }), 400, 'INVALID_ENROLL_METHOD');
  });

  it('refuses a user name an existing authenticator already holds', async () => {
    const username = uniqueName('taken');
    const first = await identityWithEnrollment(tc, { updb: username });
    const second = await identityWithEnrollment(tc, { updb: username });
    assert.equal((await tc.http.post(`${ENROLL}/updb?token=${first.enrollment.updb.token}`, { password: 'first-one' })).status, 200);
    const res = await tc.http.post(`${ENROLL}/updb?token=${second.enrollment.updb.token}`, { password: 'second-one' });
    assertError(res, 400, 'COULD_NOT_VALIDATE');
    assert.equal(res.body.error.cause.field, 'username');
    assert.equal(await outstanding(second.id), 1, 'the failed enrollment stays outstanding');
  });
});
