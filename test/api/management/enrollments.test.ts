/**
 * Management enrollment operations: list (filters, an identity's enrollments), create (ott, ottca, updb and
 * each refusal), detail, delete and refresh; inline enrollments on identity create (ottca with a real CA,
 * unknown CA); router enrollments in the list; reverting authenticators to enrollments (re-enroll) and
 * flagging certificate authenticators for extension (request-extend); unknown ids and permissions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { assertEmptyList, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { createClient, type HttpResponse } from '../../support/client.ts';
import { csrFor, identityWithEnrollment, newEcKey, verifyWithServerCertificate } from '../../support/enrollment.ts';
import { x509 } from '../../../src/pki/x509-library.ts';

const tc: TestController = await startTestController();

function inHours(hours: number): string {
  return new Date(Date.now() + hours * 3600_000).toISOString();
}

async function detail(id: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/enrollments/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/enrollments/{id}', 200, res.body);
  return res.body.data;
}

async function createEnrollment(body: Record<string, unknown>): Promise<HttpResponse> {
  return tc.mgmt.post('/enrollments', body);
}

/** A self-signed CA certificate registered through POST /cas; returns its id. */
async function createCa(): Promise<string> {
  const keys = (await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${uniqueName('third-party-ca')}`,
    keys,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true)],
  });
  const res = await tc.mgmt.post('/cas', {
    name: uniqueName('ca'),
    certPem: cert.toString('pem'),
    isAutoCaEnrollmentEnabled: false,
    isOttCaEnrollmentEnabled: true,
    isAuthEnabled: true,
    identityRoles: [],
  });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

/** An identity enrolled with ott: its id, cert authenticator id, certificate and key. */
async function certIdentity(): Promise<{ id: string; authenticatorId: string; cert: string; keyPem: string }> {
  const { id, enrollment } = await identityWithEnrollment(tc, { ott: true });
  const key = await newEcKey();
  const res = await tc.http.post('/edge/client/v1/enroll/ott', { token: enrollment.ott.token, clientCsr: await csrFor(key, id) });
  assert.equal(res.status, 200, res.text);
  const auths = (await tc.mgmt.get(`/identities/${id}/authenticators`)).body.data;
  return { id, authenticatorId: auths[0].id, cert: res.body.data.cert, keyPem: key.keyPem };
}

describe('POST /enrollments', () => {
  it('creates an ott enrollment with a signed JWT and the requested expiry', async () => {
    const identityId = await createIdentity(tc.mgmt);
    const expiresAt = new Date(Date.now() + 2 * 3600_000 + 123);
    const res = await createEnrollment({ method: 'ott', identityId, expiresAt: expiresAt.toISOString().replace('Z', '+00:00') });
    assert.equal(res.status, 201, res.text);
    assertMatchesReference('management', 'POST', '/enrollments', 201, res.body);
    const id = res.body.data.id as string;
    assert.deepEqual(res.body.data._links, { self: { href: `./enrollments/${id}` } });

    const e = await detail(id);
    assert.equal(e.method, 'ott');
    assert.equal(e.identityId, identityId);
    assert.equal(e.identity.id, identityId);
    assert.equal(e.expiresAt, expiresAt.toISOString());
    assert.equal(e.caId, undefined);
    assert.equal(e.username, undefined);
    assert.equal(e.edgeRouterId, undefined);
    const claims = await verifyWithServerCertificate(tc, e.jwt);
    assert.equal(claims.sub, identityId);
    assert.equal(claims.jti, e.token);
    assert.equal(claims.em, 'ott');
    assert.equal(claims.exp, Math.floor(expiresAt.getTime() / 1000));
    // The identity read model shows it too.
    const identity = (await tc.mgmt.get(`/identities/${identityId}`)).body.data;
    assert.deepEqual(identity.enrollment.ott, { id, jwt: e.jwt, token: e.token, expiresAt: e.expiresAt });
  });

  it('creates updb (with its user name) and ottca (with its CA) enrollments, showing upstream\'s fields only', async () => {
    const identityId = await createIdentity(tc.mgmt);
    const username = uniqueName('pending-user');
    const updb = await createEnrollment({ method: 'updb', identityId, expiresAt: inHours(1), username });
    assert.equal(updb.status, 201, updb.text);
    // As upstream: no user name and no `details` on the enrollment, though the reference names both.
    const BASE = ['_links', 'createdAt', 'expiresAt', 'id', 'identity', 'identityId', 'jwt', 'method', 'tags', 'token', 'updatedAt'];
    assert.deepEqual(Object.keys(await detail(updb.body.data.id)).sort(), BASE);

    const caId = await createCa();
    const ottca = await createEnrollment({ method: 'ottca', identityId, expiresAt: inHours(1), caId });
    assert.equal(ottca.status, 201, ottca.text);
    const e = await detail(ottca.body.data.id);
    assert.deepEqual(Object.keys(e).sort(), [...BASE, 'caId'].sort());
    assert.equal(e.caId, caId);
    assert.equal((await verifyWithServerCertificate(tc, e.jwt)).em, 'ottca');
    const summary = (await tc.mgmt.get(`/identities/${identityId}`)).body.data.enrollment;
    assert.deepEqual(Object.keys(summary).sort(), ['ottca', 'updb']);
    assert.equal(summary.ottca.caId, caId);
    // The CA reference carries the CA's own links, as its detail does (unverified: `verify`).
    const caName = (await tc.mgmt.get(`/cas/${caId}`)).body.data.name;
    assert.deepEqual(summary.ottca.ca, {
      _links: { self: { href: `./cas/${caId}` }, verify: { href: `./cas/${caId}/verify` } }, entity: 'cas', id: caId, name: caName,
    });
  });

  it('answers 409 ENROLLMENT_EXISTS while one of the same method is outstanding', async () => {
    const identityId = await createIdentity(tc.mgmt);
    assert.equal((await createEnrollment({ method: 'ott', identityId, expiresAt: inHours(1) })).status, 201);
    assertError(await createEnrollment({ method: 'ott', identityId, expiresAt: inHours(2) }), 409, 'ENROLLMENT_EXISTS');
    assert.equal((await createEnrollment({ method: 'updb', identityId, expiresAt: inHours(1), username: uniqueName('u') })).status, 201);
    assert.equal((await tc.mgmt.get(`/identities/${identityId}/enrollments`)).body.data.length, 2);
  });

  it('refuses each invalid request and creates nothing', async () => {
    const identityId = await createIdentity(tc.mgmt);
    assertFieldError(await createEnrollment({ method: 'ott', identityId: 'no-such-identity', expiresAt: inHours(1) }), 'identityId');
    assertFieldError(await createEnrollment({ method: 'ott', identityId, expiresAt: new Date(Date.now() - 60_000).toISOString() }), 'expiresAt');
    assertFieldError(await createEnrollment({ method: 'ott', identityId, expiresAt: 'tomorrow' }), 'expiresAt');
    assertFieldError(await createEnrollment({ method: 'ott', identityId }), 'expiresAt');
    assertFieldError(await createEnrollment({ method: 'ott', expiresAt: inHours(1) }), 'identityId');
    assertFieldError(await createEnrollment({ identityId, expiresAt: inHours(1) }), 'method');
    assertFieldError(await createEnrollment({ method: 'erott', identityId, expiresAt: inHours(1) }), 'method');
    assertFieldError(await createEnrollment({ method: 'updb', identityId, expiresAt: inHours(1) }), 'username');
    assertFieldError(await createEnrollment({ method: 'ottca', identityId, expiresAt: inHours(1) }), 'caId');
    assertFieldError(await createEnrollment({ method: 'ottca', identityId, expiresAt: inHours(1), caId: 'no-such-ca' }), 'caId');
    const res = await createEnrollment({ method: 'ott', identityId: 'x', expiresAt: inHours(1) });
    assertMatchesReference('management', 'POST', '/enrollments', 400, res.body);
    assert.equal((await tc.mgmt.get(`/identities/${identityId}/enrollments`)).body.data.length, 0);
  });
});

describe('listing enrollments', () => {
  it('lists, filters and pages, and lists one identity\'s enrollments', async () => {
    const a = await createIdentity(tc.mgmt);
    const b = await createIdentity(tc.mgmt);
    await createEnrollment({ method: 'ott', identityId: a, expiresAt: inHours(1) });
    await createEnrollment({ method: 'updb', identityId: a, expiresAt: inHours(1), username: uniqueName('u') });
    await createEnrollment({ method: 'ott', identityId: b, expiresAt: inHours(1) });

    const all = await tc.mgmt.get('/enrollments?limit=500');
    assert.equal(all.status, 200, all.text);
    assertMatchesReference('management', 'GET', '/enrollments', 200, all.body);
    assert.ok(!all.body.meta.filterableFields.includes('method'), 'upstream does not list method, though a filter may use it');

    const ofA = await tc.mgmt.get(`/enrollments?filter=${encodeURIComponent(`identityId = "${a}"`)}`);
    assert.deepEqual(ofA.body.data.map((e: { method: string }) => e.method).sort(), ['ott', 'updb']);
    const ottOfA = await tc.mgmt.get(`/enrollments?filter=${encodeURIComponent(`identity = "${a}" and method = "ott"`)}`);
    assert.equal(ottOfA.body.data.length, 1);
    const paged = await tc.mgmt.get(`/enrollments?limit=1&filter=${encodeURIComponent(`identityId = "${a}"`)}`);
    assert.equal(paged.body.data.length, 1);
    assert.equal(paged.body.meta.pagination.totalCount, 2);
    assertError(await tc.mgmt.get(`/enrollments?filter=${encodeURIComponent('bogus = 1')}`), 400, 'INVALID_FILTER');

    const sub = await tc.mgmt.get(`/identities/${b}/enrollments`);
    assert.equal(sub.status, 200, sub.text);
    assertMatchesReference('management', 'GET', '/identities/{id}/enrollments', 200, sub.body);
    assert.equal(sub.body.data.length, 1);
    assert.equal(sub.body.data[0].identityId, b);
    assertEmptyList(await tc.mgmt.get('/identities/no-such-identity/enrollments'));
  });

  it('shows router enrollments with their edge router reference', async () => {
    const router = await tc.mgmt.post('/edge-routers', { name: uniqueName('er') });
    assert.equal(router.status, 201, router.text);
    const routerId = router.body.data.id as string;
    const res = await tc.mgmt.get(`/enrollments?filter=${encodeURIComponent(`edgeRouterId = "${routerId}"`)}`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/enrollments', 200, res.body);
    assert.equal(res.body.data.length, 1);
    const e = res.body.data[0];
    assert.equal(e.method, 'erott');
    assert.equal(e.edgeRouterId, routerId);
    assert.equal(e.edgeRouter.id, routerId);
    assert.equal(e.identityId, undefined);

    // Refreshing a router enrollment keeps the router as the JWT subject.
    assertEmptyOk(await tc.mgmt.post(`/enrollments/${e.id}/refresh`, { expiresAt: inHours(5) }));
    const refreshed = await detail(e.id);
    assert.equal((await verifyWithServerCertificate(tc, refreshed.jwt)).sub, routerId);
    assert.equal((await verifyWithServerCertificate(tc, refreshed.jwt)).em, 'erott');
  });
});

describe('refresh and delete', () => {
  it('refresh gives a new token, JWT and expiry; the old token stops working', async () => {
    const { id: identityId, enrollment } = await identityWithEnrollment(tc, { ott: true });
    const old = enrollment.ott;
    const expiresAt = inHours(6);
    const res = await tc.mgmt.post(`/enrollments/${old.id}/refresh`, { expiresAt });
    assertEmptyOk(res);
    assertMatchesReference('management', 'POST', '/enrollments/{id}/refresh', 200, res.body);
    const e = await detail(old.id);
    assert.notEqual(e.token, old.token);
    assert.notEqual(e.jwt, old.jwt);
    assert.equal(e.expiresAt, expiresAt);
    const claims = await verifyWithServerCertificate(tc, e.jwt);
    assert.equal(claims.jti, e.token);
    assert.equal(claims.exp, Math.floor(Date.parse(expiresAt) / 1000));

    const csr = await csrFor(await newEcKey(), identityId);
    assertError(await tc.http.post('/edge/client/v1/enroll/ott', { token: old.token, clientCsr: csr }), 400, 'INVALID_ENROLLMENT_TOKEN');
    assert.equal((await tc.http.post('/edge/client/v1/enroll/ott', { token: e.token, clientCsr: csr })).status, 200);
  });

  it('refresh revives an expired enrollment', async () => {
    const { enrollment } = await identityWithEnrollment(tc, { ott: true });
    await tc.controller.store.write((tx) => tx.run('UPDATE enrollments SET expires_at = ? WHERE id = ?', [new Date(Date.now() - 1000).toISOString(), enrollment.ott.id]));
    assertEmptyOk(await tc.mgmt.post(`/enrollments/${enrollment.ott.id}/refresh`, { expiresAt: inHours(1) }));
    assert.ok(Date.parse((await detail(enrollment.ott.id)).expiresAt) > Date.now());
  });

  it('refresh refuses a past, malformed or missing expiry and an unknown id, changing nothing', async () => {
    const { enrollment } = await identityWithEnrollment(tc, { ott: true });
    const url = `/enrollments/${enrollment.ott.id}/refresh`;
    assertFieldError(await tc.mgmt.post(url, { expiresAt: new Date(Date.now() - 1000).toISOString() }), 'expiresAt');
    assertFieldError(await tc.mgmt.post(url, { expiresAt: 'soon' }), 'expiresAt');
    assertFieldError(await tc.mgmt.post(url, {}), 'expiresAt');
    assert.equal((await detail(enrollment.ott.id)).token, enrollment.ott.token);
    assertError(await tc.mgmt.post('/enrollments/no-such-enrollment/refresh', { expiresAt: inHours(1) }), 404, 'NOT_FOUND');
  });

  it('delete removes the enrollment and invalidates its token', async () => {
    const { id: identityId, enrollment } = await identityWithEnrollment(tc, { ott: true });
    assertEmptyOk(await tc.mgmt.delete(`/enrollments/${enrollment.ott.id}`));
    assertError(await tc.mgmt.get(`/enrollments/${enrollment.ott.id}`), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.delete(`/enrollments/${enrollment.ott.id}`), 404, 'NOT_FOUND');
    assert.deepEqual((await tc.mgmt.get(`/identities/${identityId}`)).body.data.enrollment, {});
    const csr = await csrFor(await newEcKey(), identityId);
    assertError(await tc.http.post('/edge/client/v1/enroll/ott', { token: enrollment.ott.token, clientCsr: csr }), 400, 'INVALID_ENROLLMENT_TOKEN');
  });

  it('answers 404 for an unknown enrollment', async () => {
    assertError(await tc.mgmt.get('/enrollments/no-such-enrollment'), 404, 'NOT_FOUND');
  });
});

describe('inline enrollment on identity create', () => {
  it('creates an ottca enrollment naming an existing CA', async () => {
    const caId = await createCa();
    const { id, enrollment } = await identityWithEnrollment(tc, { ottca: caId });
    assert.deepEqual(Object.keys(enrollment), ['ottca']);
    assert.equal(enrollment.ottca.caId, caId);
    assert.equal(enrollment.ottca.ca.id, caId);
    const claims = await verifyWithServerCertificate(tc, enrollment.ottca.jwt);
    assert.equal(claims.em, 'ottca');
    assert.deepEqual(claims.ctrls, [`tls:${new URL(claims.iss as string).host}`], 'the control-channel address, as upstream');
    assert.equal(claims.sub, id);
  });

  it('answers 404 with a caId cause for an unknown CA and creates no identity', async () => {
    const name = uniqueName('orphan');
    const res = await tc.mgmt.post('/identities', { name, type: 'User', isAdmin: false, enrollment: { ottca: 'no-such-ca' } });
    assertError(res, 404, 'NOT_FOUND');
    assert.equal(res.body.error.cause.field, 'caId');
    const list = await tc.mgmt.get(`/identities?filter=${encodeURIComponent(`name = "${name}"`)}`);
    assert.equal(list.body.data.length, 0);
  });
});

describe('POST /authenticators/{id}/re-enroll', () => {
  it('turns an updb authenticator into an updb enrollment with the same user name', async () => {
    const user = await createUserWithPassword(tc);
    const authenticatorId = (await tc.mgmt.get(`/identities/${user.id}/authenticators`)).body.data[0].id as string;
    const expiresAt = inHours(3);
    const res = await tc.mgmt.post(`/authenticators/${authenticatorId}/re-enroll`, { expiresAt });
    assert.equal(res.status, 201, res.text);
    assertMatchesReference('management', 'POST', '/authenticators/{id}/re-enroll', 201, res.body);
    const enrollmentId = res.body.data.id as string;
    assert.deepEqual(res.body.data._links, { self: { href: `./enrollments/${enrollmentId}` } });
    const e = await detail(enrollmentId);
    assert.equal(e.method, 'updb');
    assert.equal(e.username, undefined, 'the user name is kept, not shown (as upstream); the login below proves it');
    assert.equal(e.identityId, user.id);
    assert.equal(e.expiresAt, expiresAt);
    assertError(await tc.mgmt.get(`/authenticators/${authenticatorId}`), 404, 'NOT_FOUND');
    assert.equal((await tc.http.post('/edge/client/v1/authenticate?method=password', { username: user.username, password: user.password })).status, 401);
    // The session opened with the replaced password ended with it, on both APIs.
    const old = tc.http.as({ token: user.token });
    assertError(await old.get('/edge/client/v1/current-api-session'), 401, 'UNAUTHORIZED');
    assertError(await old.get('/edge/management/v1/current-identity'), 401, 'UNAUTHORIZED');
    // The user sets a new password through the enrollment.
    const enrolled = await tc.http.post(`/edge/client/v1/enroll/updb?token=${e.token}`, { password: 'brand-new-password' });
    assert.equal(enrolled.status, 200, enrolled.text);
    const fresh = await tc.http.post('/edge/client/v1/authenticate?method=password', { username: user.username, password: 'brand-new-password' });
    assert.equal(fresh.status, 200);
    assertError(await old.get('/edge/client/v1/current-api-session'), 401, 'UNAUTHORIZED');
    assert.equal((await tc.http.as({ token: fresh.body.data.token }).get('/edge/client/v1/current-api-session')).status, 200);
  });

  it('turns a network-issued certificate authenticator into an ott enrollment', async () => {
    const identity = await certIdentity();
    const res = await tc.mgmt.post(`/authenticators/${identity.authenticatorId}/re-enroll`, { expiresAt: inHours(1) });
    assert.equal(res.status, 201, res.text);
    const e = await detail(res.body.data.id);
    assert.equal(e.method, 'ott');
    assert.equal((await tc.mgmt.get(`/identities/${identity.id}/authenticators`)).body.data.length, 0);
    const login = await tc.http.post('/edge/client/v1/authenticate?method=cert', undefined, { cert: identity.cert, key: identity.keyPem });
    assert.equal(login.status, 401, 'the old certificate no longer authenticates');
  });

  it('turns a certificate authenticator from a third-party CA into an ottca enrollment for that CA', async () => {
    const identity = await certIdentity();
    const caId = await createCa();
    await tc.controller.store.write((tx) => tx.run('UPDATE authenticators SET ca_id = ? WHERE id = ?', [caId, identity.authenticatorId]));
    const res = await tc.mgmt.post(`/authenticators/${identity.authenticatorId}/re-enroll`, { expiresAt: inHours(1) });
    assert.equal(res.status, 201, res.text);
    const e = await detail(res.body.data.id);
    assert.equal(e.method, 'ottca');
    assert.equal(e.caId, caId);
  });

  it('refuses a pending enrollment of the same method, a past expiry and unknown ids, keeping the authenticator', async () => {
    const user = await createUserWithPassword(tc);
    const authenticatorId = (await tc.mgmt.get(`/identities/${user.id}/authenticators`)).body.data[0].id as string;
    assert.equal((await createEnrollment({ method: 'updb', identityId: user.id, expiresAt: inHours(1), username: uniqueName('other') })).status, 201);
    assertError(await tc.mgmt.post(`/authenticators/${authenticatorId}/re-enroll`, { expiresAt: inHours(1) }), 409, 'ENROLLMENT_EXISTS');
    assertFieldError(await tc.mgmt.post(`/authenticators/${authenticatorId}/re-enroll`, { expiresAt: new Date(Date.now() - 1000).toISOString() }), 'expiresAt');
    assertFieldError(await tc.mgmt.post(`/authenticators/${authenticatorId}/re-enroll`, {}), 'expiresAt');
    assert.equal((await tc.mgmt.get(`/authenticators/${authenticatorId}`)).status, 200);
    assertError(await tc.mgmt.post('/authenticators/no-such-authenticator/re-enroll', { expiresAt: inHours(1) }), 404, 'NOT_FOUND');
  });
});

describe('POST /authenticators/{id}/request-extend', () => {
  it('flags a certificate authenticator and the API sessions using it', async () => {
    const identity = await certIdentity();
    const login = await tc.http.post('/edge/client/v1/authenticate?method=cert', undefined, { cert: identity.cert, key: identity.keyPem });
    assert.equal(login.status, 200, login.text);
    const session = createClient(`https://127.0.0.1:${tc.port}/edge/client/v1`, tc.ca, { token: login.body.data.token, cert: identity.cert, key: identity.keyPem });

    const res = await tc.mgmt.post(`/authenticators/${identity.authenticatorId}/request-extend`, { rollKeys: true });
    assertEmptyOk(res);
    assertMatchesReference('management', 'POST', '/authenticators/{id}/request-extend', 200, res.body);
    const auth = (await tc.mgmt.get(`/authenticators/${identity.authenticatorId}`)).body.data;
    assert.equal(auth.isExtendRequested, true);
    assert.equal(auth.isKeyRollRequested, true);
    assert.ok(Date.parse(auth.extendRequestedAt) > Date.now() - 60_000);
    const current = await session.get('/current-api-session');
    assert.equal(current.status, 200, current.text);
    assert.equal(current.body.data.isCertExtendRequested, true);
    assert.equal(current.body.data.isCertKeyRollRequested, true);

    assertEmptyOk(await tc.mgmt.post(`/authenticators/${identity.authenticatorId}/request-extend`, {}));
    const again = (await tc.mgmt.get(`/authenticators/${identity.authenticatorId}`)).body.data;
    assert.equal(again.isExtendRequested, true);
    assert.equal(again.isKeyRollRequested, undefined, 'left out when false, as upstream');
  });

  it('answers 403 for a password authenticator and 404 for an unknown one', async () => {
    const user = await createUserWithPassword(tc);
    const authenticatorId = (await tc.mgmt.get(`/identities/${user.id}/authenticators`)).body.data[0].id as string;
    const res = await tc.mgmt.post(`/authenticators/${authenticatorId}/request-extend`, { rollKeys: false });
    assertError(res, 403, 'FORBIDDEN');
    assertMatchesReference('management', 'POST', '/authenticators/{id}/request-extend', 403, res.body);
    assert.equal((await tc.mgmt.get(`/authenticators/${authenticatorId}`)).body.data.isExtendRequested, undefined, 'left out when false, as upstream');
    assertError(await tc.mgmt.post('/authenticators/no-such-authenticator/request-extend', {}), 404, 'NOT_FOUND');
  });
});

describe('permissions', () => {
  it('refuses callers without the enrollment or identity permissions', async () => {
    const user = await createUserWithPassword(tc);
    const plain = tc.mgmt.as({ token: user.token });
    const identityId = await createIdentity(tc.mgmt);
    const created = await createEnrollment({ method: 'ott', identityId, expiresAt: inHours(1) });
    const enrollmentId = created.body.data.id as string;
    for (const res of [
      await plain.get('/enrollments'),
      await plain.get(`/enrollments/${enrollmentId}`),
      await plain.post('/enrollments', { method: 'ott', identityId, expiresAt: inHours(1) }),
      await plain.delete(`/enrollments/${enrollmentId}`),
      await plain.post(`/enrollments/${enrollmentId}/refresh`, { expiresAt: inHours(1) }),
      await plain.post('/authenticators/any/re-enroll', { expiresAt: inHours(1) }),
      await plain.post('/authenticators/any/request-extend', {}),
      await tc.http.get('/edge/management/v1/enrollments'),
    ]) {
      assertError(res, 401, 'UNAUTHORIZED');
    }
    assertError(await plain.get(`/identities/${identityId}/enrollments`), 401, 'UNAUTHORIZED');
    assert.equal((await detail(enrollmentId)).identityId, identityId);
    // An identity's enrollment list needs read access to enrollments, as upstream.
    const reader = tc.mgmt.as({ token: (await createUserWithPassword(tc, { permissions: ['enrollment.read'] })).token });
    assert.equal((await reader.get(`/identities/${identityId}/enrollments`)).status, 200);
  });

  it('lets a caller with the enrollment permission manage enrollments', async () => {
    const operator = await createUserWithPassword(tc, { permissions: ['enrollment'] });
    const client = tc.mgmt.as({ token: operator.token });
    const identityId = await createIdentity(tc.mgmt);
    const res = await client.post('/enrollments', { method: 'ott', identityId, expiresAt: inHours(1) });
    assert.equal(res.status, 201, res.text);
    assert.equal((await client.get(`/enrollments/${res.body.data.id}`)).status, 200);
    assertEmptyOk(await client.delete(`/enrollments/${res.body.data.id}`));
  });
});
