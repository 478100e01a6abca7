/**
 * The authorization matrix's escalation section: once an operation's rule let a permission value through, can
 * its holder act as, take over or weaken an identity with rights it does not hold? Every path is tried with
 * every permission value that reaches its operation (alone, as upstream's rule admits it), checks that the
 * refusal is upstream's 401 UNAUTHORIZED for a non-admin, that nothing changed, and that the same call on an
 * identity the caller does cover (or by an admin) still works, so each refusal is the rights rule and not a
 * broken operation. Signers and CAs are tried with real tokens and certificates: a signer or CA last set by a
 * caller logs in only identities that caller covers.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Secret, TOTP } from 'otpauth';
import { startTestController, uniqueName, type TestController } from '../support/controller.ts';
import { createIdentity, createUserWithPassword } from '../support/factories.ts';
import type { HttpClient, HttpResponse } from '../support/client.ts';
import { assertError } from '../support/assertions.ts';
import { expectedAllowed, PERMISSION_VALUES } from '../support/upstream-access.ts';
import { claimsFor, createTestSigner, insertAuthPolicy } from '../support/external-signer.ts';
import { createTestCa, issueTestCert, registerCa, verifyCa, type IssuedTestCert } from '../support/third-party-ca.ts';

const tc: TestController = await startTestController();
const DAY = 86_400_000;
const future = () => new Date(Date.now() + DAY).toISOString();

/** One management session per set of permission values, made on first use. */
const sessions = new Map<string, Promise<HttpClient>>();
function as(...permissions: string[]): Promise<HttpClient> {
  const key = permissions.join(',');
  let session = sessions.get(key);
  if (!session) {
    session = createUserWithPassword(tc, { permissions }).then((u) => tc.mgmt.as({ token: u.token }));
    sessions.set(key, session);
  }
  return session;
}

/** The values that pass an operation's rule on their own (admin_readonly included for reads). */
function reaching(rule: string): string[] {
  const values = ['admin_readonly', ...PERMISSION_VALUES].filter((v) => expectedAllowed(rule, { name: v, permissions: [v] }));
  assert.ok(values.length > 0, `no value reaches ${rule}`);
  return values;
}

/** Every value there is: for operations no value reaches, each must still be refused. */
const EVERY_VALUE = ['admin_readonly', ...PERMISSION_VALUES];

/** Runs `attempt` as each value and collects every answer that is not upstream's refusal of a non-admin. */
async function refusals(values: string[], attempt: (client: HttpClient, value: string) => Promise<HttpResponse>, cause?: RegExp): Promise<string[]> {
  const problems: string[] = [];
  for (const value of values) {
    const res = await attempt(await as(value), value);
    if (res.status !== 401 || res.body?.error?.code !== 'UNAUTHORIZED') problems.push(`${value}: ${res.status} ${res.text.slice(0, 200)}`);
    else if (cause && !cause.test(String(res.body.error.cause?.message))) problems.push(`${value}: cause ${JSON.stringify(res.body.error.cause)}`);
  }
  return problems;
}

function ok(res: HttpResponse, status = 200): HttpResponse {
  assert.equal(res.status, status, res.text);
  return res;
}

async function adminIdentity(overrides: Record<string, unknown> = {}): Promise<string> {
  return createIdentity(tc.mgmt, { isAdmin: true, ...overrides });
}

async function ottEnrollment(identityId: string): Promise<{ id: string; token: string; jwt: string }> {
  const id = ok(await tc.mgmt.post('/enrollments', { method: 'ott', identityId, expiresAt: future() }), 201).body.data.id as string;
  const detail = ok(await tc.mgmt.get(`/enrollments/${id}`)).body.data;
  return { id, token: detail.token, jwt: detail.jwt };
}

async function identityDetail(id: string): Promise<Record<string, any>> {
  return ok(await tc.mgmt.get(`/identities/${id}`)).body.data;
}

const ADMIN_TARGET = /admin identities/;

describe('escalation: enrollments of an admin', () => {
  it('no value that may create enrollments creates one for an admin; for a plain identity it may', async () => {
    const admin = await adminIdentity();
    const problems = await refusals(reaching('enrollment.create'), (client) =>
      client.post('/enrollments', { method: 'ott', identityId: admin, expiresAt: future() }), /may not enroll admin identities/);
    assert.deepEqual(problems, []);
    assert.equal(ok(await tc.mgmt.get(`/identities/${admin}/enrollments`)).body.data.length, 0);
    for (const method of ['updb', 'ottca'] as const) {
      const extra = method === 'updb' ? { username: uniqueName('u') } : { caId: 'no-such-ca' };
      assert.deepEqual(await refusals(['enrollment'], (client) => client.post('/enrollments', { method, identityId: admin, expiresAt: future(), ...extra })), []);
    }
    const plain = await createIdentity(tc.mgmt);
    ok(await (await as('enrollment.create')).post('/enrollments', { method: 'ott', identityId: plain, expiresAt: future() }), 201);
    ok(await tc.mgmt.post('/enrollments', { method: 'ott', identityId: admin, expiresAt: future() }), 201);
  });

  it('no value refreshes or deletes an admin\'s enrollment; a plain identity\'s it may', async () => {
    const admin = await adminIdentity();
    const enrollment = await ottEnrollment(admin);
    assert.deepEqual(await refusals(reaching('enrollment.update'), (client) =>
      client.post(`/enrollments/${enrollment.id}/refresh`, { expiresAt: future() }), /may not refresh the enrollments of admin identities/), []);
    assert.deepEqual(await refusals(reaching('enrollment.delete'), (client) => client.delete(`/enrollments/${enrollment.id}`), ADMIN_TARGET), []);
    assert.equal(ok(await tc.mgmt.get(`/enrollments/${enrollment.id}`)).body.data.token, enrollment.token, 'the token did not change');

    const plain = await ottEnrollment(await createIdentity(tc.mgmt));
    ok(await (await as('enrollment.update')).post(`/enrollments/${plain.id}/refresh`, { expiresAt: future() }));
    assert.notEqual(ok(await tc.mgmt.get(`/enrollments/${plain.id}`)).body.data.token, plain.token);
    ok(await (await as('enrollment.delete')).delete(`/enrollments/${plain.id}`));
  });

  it('readers of enrollments and identities never see the token or JWT of an admin\'s enrollment', async () => {
    const admin = await adminIdentity();
    const plainId = await createIdentity(tc.mgmt);
    const secret = await ottEnrollment(admin);
    const open = await ottEnrollment(plainId);
    const problems: string[] = [];
    for (const value of reaching('enrollment.read')) {
      const client = await as(value);
      const detail = ok(await client.get(`/enrollments/${secret.id}`)).body.data;
      if (detail.token !== '' || 'jwt' in detail) problems.push(`${value}: detail shows ${JSON.stringify({ token: detail.token, jwt: detail.jwt })}`);
      const listed = ok(await client.get(`/enrollments?filter=${encodeURIComponent(`id="${secret.id}"`)}`)).body.data[0];
      if (listed.token !== '' || 'jwt' in listed) problems.push(`${value}: list shows the secret`);
      const ofIdentity = ok(await client.get(`/identities/${admin}/enrollments`)).body.data[0];
      if (ofIdentity.token !== '' || 'jwt' in ofIdentity) problems.push(`${value}: identity enrollments show the secret`);
      const visible = ok(await client.get(`/enrollments/${open.id}`)).body.data;
      if (visible.token !== open.token || visible.jwt !== open.jwt) problems.push(`${value}: a plain identity's enrollment is hidden`);
    }
    for (const value of reaching('identity.read')) {
      const client = await as(value);
      const embedded = ok(await client.get(`/identities/${admin}`)).body.data.enrollment.ott;
      if (!embedded || 'jwt' in embedded || 'token' in embedded) problems.push(`${value}: identity detail shows ${JSON.stringify(embedded)}`);
      const listed = ok(await client.get(`/identities?filter=${encodeURIComponent(`id="${admin}"`)}`)).body.data[0].enrollment.ott;
      if ('jwt' in listed || 'token' in listed) problems.push(`${value}: identity list shows the secret`);
      const visible = ok(await client.get(`/identities/${plainId}`)).body.data.enrollment.ott;
      if (visible.jwt !== open.jwt) problems.push(`${value}: a plain identity's enrollment JWT is hidden`);
    }
    assert.deepEqual(problems, []);
    assert.equal(ok(await tc.mgmt.get(`/enrollments/${secret.id}`)).body.data.jwt, secret.jwt, 'an admin still reads it');
  });
});

describe('escalation: authenticators and MFA of an admin', () => {
  it('no value re-enrolls or flags an admin\'s authenticator (admins only)', async () => {
    const admin = await createUserWithPassword(tc, { isAdmin: true });
    const [authenticator] = ok(await tc.mgmt.get(`/identities/${admin.id}/authenticators`)).body.data;
    assert.deepEqual(await refusals(EVERY_VALUE, (client) => client.post(`/authenticators/${authenticator.id}/re-enroll`, { expiresAt: future() })), []);
    assert.deepEqual(await refusals(EVERY_VALUE, (client) => client.post(`/authenticators/${authenticator.id}/request-extend`, {})), []);
    assert.deepEqual(await refusals(EVERY_VALUE, (client) => client.patch(`/authenticators/${authenticator.id}`, { password: 'Taken-over-123' })), []);
    assert.equal(typeof (await tc.login(admin.username, admin.password)), 'string', 'the admin still logs in with its password');
  });

  it('no value that may update identities removes an admin\'s MFA', async () => {
    const admin = await createUserWithPassword(tc, { isAdmin: true });
    const own = tc.http.as({ token: admin.token });
    ok(await own.post('/edge/client/v1/current-identity/mfa'), 201);
    const url = ok(await own.get('/edge/client/v1/current-identity/mfa')).body.data.provisioningUrl as string;
    const code = new TOTP({ secret: Secret.fromBase32(new URL(url).searchParams.get('secret') as string) }).generate();
    ok(await own.post('/edge/client/v1/current-identity/mfa/verify', { code }));
    assert.deepEqual(await refusals(reaching('identity.update'), (client) => client.delete(`/identities/${admin.id}/mfa`), /may not remove the MFA of admin identities/), []);
    assert.equal((await identityDetail(admin.id)).isMfaEnabled, true);
  });
});

describe('escalation: an admin identity\'s own record', () => {
  it('no value changes how an admin authenticates, disables, traces or deletes it', async () => {
    const admin = await adminIdentity({ externalId: uniqueName('admin-ext') });
    const policy = await insertAuthPolicy(tc);
    const before = await identityDetail(admin);
    const update = reaching('identity.update');
    const problems = [
      ...(await refusals(update, (client) => client.patch(`/identities/${admin}`, { externalId: uniqueName('mine') }), ADMIN_TARGET)),
      ...(await refusals(update, (client) => client.patch(`/identities/${admin}`, { authPolicyId: policy }), ADMIN_TARGET)),
      ...(await refusals(update, (client) => client.post(`/identities/${admin}/disable`, { durationMinutes: 0 }), /may not disable admin identities/)),
      ...(await refusals(update, (client) => client.post(`/identities/${admin}/enable`), /may not enable admin identities/)),
      ...(await refusals(update, (client) => client.put(`/identities/${admin}/trace`, { enabled: true, duration: '1m', traceId: 'x', channels: [] }), ADMIN_TARGET)),
      ...(await refusals(update, (client) => client.post(`/identities/${admin}/service-configs`, []), ADMIN_TARGET)),
      ...(await refusals(update, (client) => client.delete(`/identities/${admin}/service-configs`), ADMIN_TARGET)),
      ...(await refusals(reaching('identity.delete'), (client) => client.delete(`/identities/${admin}`), ADMIN_TARGET)),
    ];
    assert.deepEqual(problems, []);
    const after = await identityDetail(admin);
    assert.equal(after.externalId, before.externalId);
    assert.equal(after.authPolicyId, before.authPolicyId);
    assert.equal(after.disabled, false);
  });

  it('between non-admins: a holder of `identity` can not change an identity holding `service`; a holder of both can', async () => {
    const target = await createIdentity(tc.mgmt, { permissions: ['service'] });
    assert.deepEqual(await refusals(['identity', 'identity.update'], (client) =>
      client.patch(`/identities/${target}`, { externalId: uniqueName('taken') }), /identities holding rights the caller does not hold/), []);
    assert.deepEqual(await refusals(['identity'], (client) => client.post('/enrollments', { method: 'ott', identityId: target, expiresAt: future() })), []);
    ok(await (await as('identity', 'service')).patch(`/identities/${target}`, { roleAttributes: ['moved'] }));
    ok(await (await as('enrollment', 'service.read', 'service.update', 'service.create', 'service.delete')).post('/enrollments', { method: 'ott', identityId: target, expiresAt: future() }), 201);
  });
});

describe('escalation: auth policies an admin logs in with', () => {
  it('no value changes or deletes a policy an admin uses (the default one included); other policies it may', async () => {
    const policy = await insertAuthPolicy(tc);
    const admin = await adminIdentity();
    ok(await tc.mgmt.patch(`/identities/${admin}`, { authPolicyId: policy }));
    const weaker = { primary: { updb: { allowed: true, maxAttempts: 0 } } };
    const full = ok(await tc.mgmt.get(`/auth-policies/${policy}`)).body.data;
    const put = { name: full.name, primary: full.primary, secondary: full.secondary };
    const cause = /may not change the auth policy of admin identities/;
    const problems = [
      ...(await refusals(reaching('auth-policy.update'), (client) => client.patch(`/auth-policies/${policy}`, weaker), cause)),
      ...(await refusals(reaching('auth-policy.update'), (client) => client.put(`/auth-policies/${policy}`, put), cause)),
      ...(await refusals(reaching('auth-policy.update'), (client) => client.patch('/auth-policies/default', weaker), cause)),
      ...(await refusals(reaching('auth-policy.delete'), (client) => client.delete(`/auth-policies/${policy}`), /may not delete the auth policy of admin identities/)),
    ];
    assert.deepEqual(problems, []);
    assert.deepEqual(ok(await tc.mgmt.get(`/auth-policies/${policy}`)).body.data.primary, full.primary);

    const plainPolicy = await insertAuthPolicy(tc);
    ok(await tc.mgmt.patch(`/identities/${await createIdentity(tc.mgmt)}`, { authPolicyId: plainPolicy }));
    ok(await (await as('auth-policy.update')).patch(`/auth-policies/${plainPolicy}`, weaker));
    // Under a policy that an identity holding `service` uses, a holder of auth-policy alone is refused too.
    ok(await tc.mgmt.patch(`/identities/${await createIdentity(tc.mgmt, { permissions: ['service'] })}`, { authPolicyId: plainPolicy }));
    assert.deepEqual(await refusals(['auth-policy'], (client) => client.patch(`/auth-policies/${plainPolicy}`, weaker)), []);
  });
});

describe('escalation: external JWT signers log in only identities their last author covers', () => {
  const AUDIENCE = 'escalation-tests';
  const login = (token: string) =>
    tc.http.post('/edge/management/v1/authenticate?method=ext-jwt', {}, { headers: { authorization: `Bearer ${token}` } });

  it('a signer made or re-keyed by a non-admin does not log in an admin; one an admin saved does', async () => {
    const admin = await adminIdentity();
    const plain = await createIdentity(tc.mgmt);
    const problems: string[] = [];
    for (const value of reaching('external-jwt-signer.create')) {
      const idp = await createTestSigner();
      const issuer = uniqueName('https://idp.example.test');
      const created = await (await as(value)).post('/external-jwt-signers', {
        name: uniqueName('signer'), issuer, audience: AUDIENCE, enabled: true, certPem: idp.certPem, claimsProperty: 'sub', useExternalId: false,
      });
      if (created.status !== 201) {
        problems.push(`${value}: create ${created.status} ${created.text}`);
        continue;
      }
      const signerId = created.body.data.id as string;
      const adminToken = await idp.sign(claimsFor(issuer, AUDIENCE, admin));
      if ((await login(adminToken)).status !== 401) problems.push(`${value}: its signer logs in an admin`);
      if ((await login(await idp.sign(claimsFor(issuer, AUDIENCE, plain)))).status !== 200) problems.push(`${value}: its signer does not log in a plain identity`);
      // Renaming is no vouching; saving what it authenticates is.
      ok(await tc.mgmt.patch(`/external-jwt-signers/${signerId}`, { name: uniqueName('renamed') }));
      if ((await login(adminToken)).status !== 401) problems.push(`${value}: an admin's rename made its signer log in an admin`);
      ok(await tc.mgmt.patch(`/external-jwt-signers/${signerId}`, { claimsProperty: 'sub' }));
      if ((await login(adminToken)).status !== 200) problems.push(`${value}: the signer an admin saved does not log in an admin`);
    }
    assert.deepEqual(problems, []);
  });

  it('a non-admin that changes an admin\'s signer takes away its admin logins, also as a second factor', async () => {
    const admin = await createUserWithPassword(tc, { isAdmin: true });
    const idp = await createTestSigner();
    const issuer = uniqueName('https://idp.example.test');
    const signerId = ok(await tc.mgmt.post('/external-jwt-signers', {
      name: uniqueName('signer'), issuer, audience: AUDIENCE, enabled: true, certPem: idp.certPem, claimsProperty: 'sub',
    }), 201).body.data.id as string;
    const token = await idp.sign(claimsFor(issuer, AUDIENCE, admin.id));
    ok(await login(token));
    const policy = await insertAuthPolicy(tc, {}, { requireExtJwtSigner: signerId });
    ok(await tc.mgmt.patch(`/identities/${admin.id}`, { authPolicyId: policy }));
    const secondFactor = async () => {
      const res = ok(await tc.http.post('/edge/management/v1/authenticate?method=password', { username: admin.username, password: admin.password }, {
        headers: { authorization: `Bearer ${token}` },
      }));
      return (res.body.data.authQueries ?? []).length;
    };
    assert.equal(await secondFactor(), 0, 'the admin\'s signer is its second factor');
    const problems: string[] = [];
    for (const value of reaching('external-jwt-signer.update')) {
      ok(await (await as(value)).patch(`/external-jwt-signers/${signerId}`, { claimsProperty: 'sub' }));
      if ((await login(token)).status !== 401) problems.push(`${value}: the signer still logs in the admin`);
      if ((await secondFactor()) === 0) problems.push(`${value}: the signer still passes the admin's second factor`);
      ok(await tc.mgmt.patch(`/external-jwt-signers/${signerId}`, { claimsProperty: 'sub' }));
    }
    assert.deepEqual(problems, []);
  });

  it('token enrollment through a signer whose author may not create identities is refused', async () => {
    const idp = await createTestSigner();
    const issuer = uniqueName('https://idp.example.test');
    const body = { name: uniqueName('signer'), issuer, audience: AUDIENCE, enabled: true, certPem: idp.certPem, enrollToTokenEnabled: true };
    const signerId = ok(await (await as('external-jwt-signer')).post('/external-jwt-signers', body), 201).body.data.id as string;
    const enroll = async () => tc.http.post('/edge/client/v1/enroll?method=token', {}, {
      headers: { authorization: `Bearer ${await idp.sign(claimsFor(issuer, AUDIENCE, uniqueName('newcomer')))}` },
    });
    assertError(await enroll(), 409, 'INVALID_ENROLLMENT_NOT_ALLOWED');
    ok(await (await as('external-jwt-signer', 'identity.create')).patch(`/external-jwt-signers/${signerId}`, { issuer }));
    ok(await enroll());
  });
});

describe('escalation: third-party CAs log in and enroll only identities their last author covers', () => {
  const claim = { location: 'COMMON_NAME', matcher: 'ALL', matcherCriteria: '', parser: 'NONE', parserCriteria: '', index: 0 };
  const certLogin = (leaf: IssuedTestCert) => tc.http.post('/edge/management/v1/authenticate?method=cert', undefined, { cert: leaf.certPem, key: leaf.keyPem });

  it('a CA made by a non-admin (verified by an admin) does not log in an admin until an admin saves it', async () => {
    const adminExt = uniqueName('admin-ext');
    const plainExt = uniqueName('plain-ext');
    await adminIdentity({ externalId: adminExt });
    await createIdentity(tc.mgmt, { externalId: plainExt });
    const problems: string[] = [];
    for (const value of reaching('ca.create')) {
      const ca = await createTestCa();
      const caId = await registerCa(await as(value), ca, { externalIdClaim: claim, isAutoCaEnrollmentEnabled: false });
      await verifyCa(tc.mgmt, caId, ca);
      const asAdmin = await issueTestCert(ca, { subject: `CN=${adminExt}` });
      if ((await certLogin(asAdmin)).status !== 401) problems.push(`${value}: its CA logs in an admin`);
      if ((await certLogin(await issueTestCert(ca, { subject: `CN=${plainExt}` }))).status !== 200) problems.push(`${value}: its CA does not log in a plain identity`);
      ok(await tc.mgmt.patch(`/cas/${caId}`, { isAuthEnabled: true }));
      if ((await certLogin(asAdmin)).status !== 200) problems.push(`${value}: the CA an admin saved does not log in an admin`);
      ok(await tc.mgmt.delete(`/cas/${caId}`));
    }
    assert.deepEqual(problems, []);
  });

  it('a non-admin that changes or verifies an admin\'s CA takes away its admin logins', async () => {
    const adminExt = uniqueName('admin-ext');
    await adminIdentity({ externalId: adminExt });
    const problems: string[] = [];
    for (const value of reaching('ca.update')) {
      const ca = await createTestCa();
      const caId = await registerCa(tc.mgmt, ca, { externalIdClaim: claim, isAutoCaEnrollmentEnabled: false });
      // The verification token is read by the admin; the proof is posted by the value's holder (it holds the key).
      const verificationToken = ok(await tc.mgmt.get(`/cas/${caId}`)).body.data.verificationToken as string;
      const proof = await issueTestCert(ca, { subject: `CN=${verificationToken}`, usages: [] });
      ok(await (await as(value)).post(`/cas/${caId}/verify`, undefined, { rawBody: proof.certPem, contentType: 'text/plain' }));
      const asAdmin = await issueTestCert(ca, { subject: `CN=${adminExt}` });
      if ((await certLogin(asAdmin)).status !== 401) problems.push(`${value}: the CA it verified logs in an admin`);
      ok(await tc.mgmt.patch(`/cas/${caId}`, { isAuthEnabled: true }));
      if ((await certLogin(asAdmin)).status !== 200) problems.push(`${value}: the CA an admin saved does not log in an admin`);
      ok(await (await as(value)).patch(`/cas/${caId}`, { externalIdClaim: claim }));
      if ((await certLogin(asAdmin)).status !== 401) problems.push(`${value}: the CA it changed logs in an admin`);
      ok(await tc.mgmt.delete(`/cas/${caId}`));
    }
    assert.deepEqual(problems, []);
  });

  it('ottca enrollment of an admin and auto enrollment go only through CAs whose author may do them', async () => {
    const ca = await createTestCa();
    const caId = await registerCa(await as('ca'), ca, { isAutoCaEnrollmentEnabled: true });
    await verifyCa(await as('ca'), caId, ca);
    const enrollThrough = async (identityId: string) => {
      const id = ok(await tc.mgmt.post('/enrollments', { method: 'ottca', identityId, caId, expiresAt: future() }), 201).body.data.id;
      const token = ok(await tc.mgmt.get(`/enrollments/${id}`)).body.data.token as string;
      const leaf = await issueTestCert(ca);
      return tc.http.post(`/edge/client/v1/enroll?method=ottca&token=${token}`, undefined, { rawBody: '', contentType: 'text/plain', cert: leaf.certPem, key: leaf.keyPem });
    };
    assertError(await enrollThrough(await adminIdentity()), 400, 'ENROLLMENT_CA_NOT_VALID');
    ok(await enrollThrough(await createIdentity(tc.mgmt)));

    const autoLeaf = await issueTestCert(ca);
    const auto = () => tc.http.post('/edge/client/v1/enroll?method=ca', {}, { cert: autoLeaf.certPem, key: autoLeaf.keyPem });
    assertError(await auto(), 400, 'ENROLLMENT_CA_NOT_VALID');
    ok(await (await as('ca', 'identity.create')).patch(`/cas/${caId}`, { isAutoCaEnrollmentEnabled: true }));
    ok(await auto());
  });
});
