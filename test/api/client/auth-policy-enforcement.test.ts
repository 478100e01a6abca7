/**
 * Auth policies at authentication: disallowed primary methods, lockout after `maxAttempts` wrong passwords
 * (identity disabled for `lockoutDurationMinutes`, released by time — moved by editing the stored lock time;
 * the count survives a restart),
 * the password rules enforced wherever a password is set, `requireTotp` forcing partial sessions, and
 * `requireExtJwtSigner` requiring a second bearer token from that signer on every request.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Secret, TOTP } from 'otpauth';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpClient } from '../../support/client.ts';
import { createIdentity } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';
import { claimsFor, createTestSigner } from '../../support/external-signer.ts';

const tc: TestController = await startTestController();
const CLIENT = '/edge/client/v1';
const AUDIENCE = 'portcullis-tests';
const idp = await createTestSigner('enforcement-idp');
const ISSUER = `https://${uniqueName('enforcement')}.example`;
const signerId = await (async () => {
  const res = await tc.mgmt.post('/external-jwt-signers', { name: uniqueName('signer'), issuer: ISSUER, audience: AUDIENCE, enabled: true, certPem: idp.certPem });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
})();

interface PolicyShape {
  cert?: Record<string, unknown>;
  updb?: Record<string, unknown>;
  extJwt?: Record<string, unknown>;
  secondary?: Record<string, unknown>;
}

async function createPolicy(shape: PolicyShape = {}): Promise<string> {
  const res = await tc.mgmt.post('/auth-policies', {
    name: uniqueName('policy'),
    primary: {
      cert: { allowed: true, allowExpiredCerts: true, ...shape.cert },
      updb: {
        allowed: true, minPasswordLength: 5, requireSpecialChar: false, requireNumberChar: false, requireMixedCase: false,
        maxAttempts: 0, lockoutDurationMinutes: 0, ...shape.updb,
      },
      extJwt: { allowed: true, allowedSigners: [], ...shape.extJwt },
    },
    secondary: { requireTotp: false, ...shape.secondary },
  });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

async function userWithPolicy(policyId: string, password = 'Good-pass-123') {
  const id = await createIdentity(tc.mgmt, { authPolicyId: policyId });
  const username = uniqueName('enforced');
  const res = await tc.mgmt.post('/authenticators', { method: 'updb', identityId: id, username, password });
  assert.equal(res.status, 201, res.text);
  return { id, username, password, authenticatorId: res.body.data.id as string };
}

function login(username: string, password: string, headers: Record<string, string> = {}) {
  return tc.http.post(`${CLIENT}/authenticate?method=password`, { username, password }, { headers });
}

function client(token: string): HttpClient {
  return createClient(`https://127.0.0.1:${tc.port}${CLIENT}`, tc.ca, { token });
}

describe('disallowed primary methods', () => {
  it('a policy without updb refuses password logins', async () => {
    const policyId = await createPolicy({ updb: { allowed: false } });
    const user = await userWithPolicy(policyId);
    assertError(await login(user.username, user.password), 401, 'INVALID_AUTH');
    assertEmptyOk(await tc.mgmt.patch(`/auth-policies/${policyId}`, { primary: { updb: { allowed: true } } }));
    assert.equal((await login(user.username, user.password)).status, 200);
  });

  it('ext-jwt is refused when the policy disallows it or the signer is not among the allowed ones', async () => {
    const policyId = await createPolicy({ extJwt: { allowed: false } });
    const id = await createIdentity(tc.mgmt, { authPolicyId: policyId });
    const jwt = await idp.sign(claimsFor(ISSUER, AUDIENCE, id));
    const extJwt = () => tc.http.post(`${CLIENT}/authenticate?method=ext-jwt`, {}, { headers: { authorization: `Bearer ${jwt}` } });
    assertError(await extJwt(), 401, 'UNAUTHORIZED');
    const other = await tc.mgmt.post('/external-jwt-signers', {
      name: uniqueName('other'), issuer: `https://${uniqueName('other')}.example`, audience: AUDIENCE, enabled: true, certPem: (await createTestSigner('other')).certPem,
    });
    assertEmptyOk(await tc.mgmt.patch(`/auth-policies/${policyId}`, { primary: { extJwt: { allowed: true, allowedSigners: [other.body.data.id] } } }));
    assertError(await extJwt(), 401, 'UNAUTHORIZED');
    assertEmptyOk(await tc.mgmt.patch(`/auth-policies/${policyId}`, { primary: { extJwt: { allowedSigners: [signerId] } } }));
    assert.equal((await extJwt()).status, 200);
  });
});

describe('lockout', () => {
  it('locks the identity after maxAttempts wrong passwords and releases it after the duration', async () => {
    const policyId = await createPolicy({ updb: { maxAttempts: 3, lockoutDurationMinutes: 1 } });
    const user = await userWithPolicy(policyId);
    const session = (await login(user.username, user.password)).body.data.token as string;
    const failures = async () => (await tc.controller.store.get<{ failed_attempts: number }>('SELECT failed_attempts FROM authenticators WHERE id = ?', [user.authenticatorId]))!;

    // Two failures, then a success resets the count.
    for (let i = 0; i < 2; i++) assertError(await login(user.username, 'Wrong-pass-1'), 401, 'INVALID_AUTH');
    assert.equal((await failures()).failed_attempts, 2);
    assert.equal((await login(user.username, user.password)).status, 200);
    assert.equal((await failures()).failed_attempts, 0);

    // The third consecutive failure locks (and still answers INVALID_AUTH).
    for (let i = 0; i < 3; i++) assertError(await login(user.username, 'Wrong-pass-1'), 401, 'INVALID_AUTH');
    const before = Date.now();
    assertError(await login(user.username, user.password), 401, 'INVALID_AUTH');
    assertError(await client(session).get('/current-api-session'), 401, 'UNAUTHORIZED');
    const identity = (await tc.mgmt.get(`/identities/${user.id}`)).body.data;
    assert.equal(identity.disabled, true);
    const until = Date.parse(identity.disabledUntil);
    assert.ok(until > before && until <= before + 61_000, identity.disabledUntil);
    assert.equal((await failures()).failed_attempts, 0);
    // Attempts while locked are not counted.
    assertError(await login(user.username, 'Wrong-pass-1'), 401, 'INVALID_AUTH');
    assert.equal((await failures()).failed_attempts, 0);

    // Move the lock into the past instead of waiting a minute.
    await tc.controller.store.write((tx) => tx.run('UPDATE identities SET disabled_until = ? WHERE id = ?', [new Date(Date.now() - 1000).toISOString(), user.id]));
    const released = await login(user.username, user.password);
    assert.equal(released.status, 200, released.text);
  });

  it('counts failed attempts across a restart of the controller', async () => {
    const user = await userWithPolicy(await createPolicy({ updb: { maxAttempts: 3, lockoutDurationMinutes: 1 } }));
    for (let i = 0; i < 2; i++) assertError(await login(user.username, 'Wrong-pass-1'), 401, 'INVALID_AUTH');
    const controllerBefore = tc.controller;
    await tc.restart();
    assert.notEqual(tc.controller, controllerBefore, 'a new controller serves the same data dir');
    const failures = (await tc.controller.store.get<{ failed_attempts: number }>('SELECT failed_attempts FROM authenticators WHERE id = ?', [user.authenticatorId]))!;
    assert.equal(failures.failed_attempts, 2);
    assert.equal((await tc.mgmt.get(`/identities/${user.id}`)).body.data.disabled, false);
    // Had the count restarted from zero, one more failure would not lock.
    assertError(await login(user.username, 'Wrong-pass-1'), 401, 'INVALID_AUTH');
    assert.equal((await tc.mgmt.get(`/identities/${user.id}`)).body.data.disabled, true, 'the third failure in all locks');
    assertError(await login(user.username, user.password), 401, 'INVALID_AUTH');
  });

  it('a zero lockout duration locks until an administrator enables the identity; maxAttempts 0 never locks', async () => {
    const indefinite = await userWithPolicy(await createPolicy({ updb: { maxAttempts: 1, lockoutDurationMinutes: 0 } }));
    assertError(await login(indefinite.username, 'Wrong-pass-1'), 401, 'INVALID_AUTH');
    const identity = (await tc.mgmt.get(`/identities/${indefinite.id}`)).body.data;
    assert.equal(identity.disabled, true);
    assert.equal(identity.disabledUntil ?? null, null);
    assertError(await login(indefinite.username, indefinite.password), 401, 'INVALID_AUTH');

    const unlimited = await userWithPolicy(await createPolicy({ updb: { maxAttempts: 0 } }));
    for (let i = 0; i < 6; i++) assertError(await login(unlimited.username, 'Wrong-pass-1'), 401, 'INVALID_AUTH');
    assert.equal((await login(unlimited.username, unlimited.password)).status, 200);
  });
});

describe('password rules', () => {
  const rules = { minPasswordLength: 10, requireSpecialChar: true, requireNumberChar: true, requireMixedCase: true };
  const weak = ['Short-1a', 'nospecial1Abc', 'No-number-Abc', 'no-upper-case-1', 'NO-LOWER-CASE-1'];
  const strong = 'Strong-pass-42';

  it('admin create, put and patch of a updb authenticator', async () => {
    const policyId = await createPolicy({ updb: rules });
    const id = await createIdentity(tc.mgmt, { authPolicyId: policyId });
    const username = uniqueName('rules');
    for (const password of weak) {
      const res = await tc.mgmt.post('/authenticators', { method: 'updb', identityId: id, username, password });
      assertFieldError(res, 'password');
      assert.ok(!res.text.includes(password), 'the password is not echoed');
    }
    const created = await tc.mgmt.post('/authenticators', { method: 'updb', identityId: id, username, password: strong });
    assert.equal(created.status, 201, created.text);
    const authId = created.body.data.id as string;
    assertFieldError(await tc.mgmt.patch(`/authenticators/${authId}`, { password: 'weakpass' }), 'password');
    assertFieldError(await tc.mgmt.put(`/authenticators/${authId}`, { username, password: 'weakpass' }), 'password');
    assertEmptyOk(await tc.mgmt.patch(`/authenticators/${authId}`, { password: 'Other-strong-7' }));
    assertEmptyOk(await tc.mgmt.patch(`/authenticators/${authId}`, { username: uniqueName('renamed') }));
    // The default policy keeps upstream's only rule (5 to 100 characters).
    const plain = await createIdentity(tc.mgmt);
    assert.equal((await tc.mgmt.post('/authenticators', { method: 'updb', identityId: plain, username: uniqueName('p'), password: 'abcde' })).status, 201);
  });

  it("the caller's own authenticator update", async () => {
    const policyId = await createPolicy({ updb: rules });
    const user = await userWithPolicy(policyId, strong);
    const token = (await login(user.username, user.password)).body.data.token as string;
    const own = client(token);
    assertFieldError(await own.put(`/current-identity/authenticators/${user.authenticatorId}`, { currentPassword: strong, username: user.username, password: 'weakpassword' }), 'password');
    assertFieldError(await own.patch(`/current-identity/authenticators/${user.authenticatorId}`, { currentPassword: strong, password: 'Nodigits-here' }), 'password');
    assertEmptyOk(await own.patch(`/current-identity/authenticators/${user.authenticatorId}`, { currentPassword: strong, password: 'Newer-strong-9' }));
    assert.equal((await login(user.username, 'Newer-strong-9')).status, 200);
  });

  it('updb enrollment', async () => {
    const policyId = await createPolicy({ updb: rules });
    const username = uniqueName('enrollee');
    const res = await tc.mgmt.post('/identities', { name: uniqueName('enrollee'), type: 'User', isAdmin: false, authPolicyId: policyId, enrollment: { updb: username } });
    assert.equal(res.status, 201, res.text);
    const token = (await tc.mgmt.get(`/identities/${res.body.data.id}`)).body.data.enrollment.updb.token as string;
    assertFieldError(await tc.http.post(`${CLIENT}/enroll/updb?token=${token}`, { password: 'weak-password' }), 'password');
    const enrolled = await tc.http.post(`${CLIENT}/enroll/updb?token=${token}`, { password: strong });
    assert.equal(enrolled.status, 200, enrolled.text);
    assert.equal((await login(username, strong)).status, 200);
  });
});

describe('secondary factors', () => {
  it('requireTotp makes sessions partial until MFA is enrolled and verified', async () => {
    const policyId = await createPolicy({ secondary: { requireTotp: true } });
    const user = await userWithPolicy(policyId);
    const res = await login(user.username, user.password);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('client', 'POST', '/authenticate', 200, res.body, { allowNullAt: ['/data/authQueries/*/scopes'] });
    // The identity has no verified MFA: the session does not claim it, yet the policy's TOTP query is pending.
    assert.equal(res.body.data.isMfaRequired, false);
    assert.equal(res.body.data.isMfaComplete, false);
    assert.deepEqual(res.body.data.authQueries.map((q: { typeId: string }) => q.typeId), ['MFA']);
    const partial = client(res.body.data.token);
    assertError(await partial.get('/current-identity'), 401, 'UNAUTHORIZED');
    assertError(await partial.get('/services'), 401, 'UNAUTHORIZED');
    // Enrolling is allowed during the partial session; verifying completes it.
    assert.equal((await partial.post('/current-identity/mfa')).status, 201);
    const url = new URL((await partial.get('/current-identity/mfa')).body.data.provisioningUrl);
    const code = new TOTP({ secret: Secret.fromBase32(url.searchParams.get('secret') as string) }).generate();
    assertEmptyOk(await partial.post('/current-identity/mfa/verify', { code }));
    assert.equal((await partial.get('/current-identity')).status, 200);
    assert.deepEqual((await partial.get('/current-api-session')).body.data.authQueries, []);
  });

  it('turning requireTotp on makes existing full sessions partial', async () => {
    const policyId = await createPolicy();
    const user = await userWithPolicy(policyId);
    const session = client((await login(user.username, user.password)).body.data.token);
    assert.equal((await session.get('/current-identity')).status, 200);
    assertEmptyOk(await tc.mgmt.patch(`/auth-policies/${policyId}`, { secondary: { requireTotp: true } }));
    assertError(await session.get('/current-identity'), 401, 'UNAUTHORIZED');
    assert.deepEqual((await session.get('/current-api-session')).body.data.authQueries.map((q: { typeId: string }) => q.typeId), ['MFA']);
    assertEmptyOk(await tc.mgmt.patch(`/auth-policies/${policyId}`, { secondary: { requireTotp: false } }));
    assert.equal((await session.get('/current-identity')).status, 200);
  });

  it('requireExtJwtSigner needs a bearer token of that signer for the same identity on every request', async () => {
    const policyId = await createPolicy({ secondary: { requireExtJwtSigner: signerId } });
    const user = await userWithPolicy(policyId);
    const res = await login(user.username, user.password);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('client', 'POST', '/authenticate', 200, res.body);
    assert.deepEqual(res.body.data.authQueries, [{ typeId: 'EXT-JWT', provider: 'url', httpUrl: '', id: signerId, scopes: [] }]);
    assert.equal(
      res.headers['www-authenticate'],
      `Bearer realm="openziti-secondary-ext-jwt" error="missing" error_description="no matching token was provided" id="${signerId}" issuer="${ISSUER}"`,
    );
    const token = res.body.data.token as string;
    const session = client(token);
    const good = await idp.sign(claimsFor(ISSUER, AUDIENCE, user.id));
    const otherIdentity = await idp.sign(claimsFor(ISSUER, AUDIENCE, 'someone-else'));
    const expired = await idp.sign(claimsFor(ISSUER, AUDIENCE, user.id, { exp: Math.floor(Date.now() / 1000) - 120 }));
    const bearer = (jwt: string) => ({ headers: { authorization: `Bearer ${jwt}` } });

    assertError(await session.get('/current-identity'), 401, 'UNAUTHORIZED');
    assert.equal((await session.get('/current-api-session')).status, 200);
    assertError(await session.get('/current-identity', bearer(otherIdentity)), 401, 'UNAUTHORIZED');
    assertError(await session.get('/current-identity', bearer(expired)), 401, 'UNAUTHORIZED');
    assert.equal((await session.get('/current-identity', bearer(good))).status, 200);
    const current = await session.get('/current-api-session', bearer(good));
    assert.deepEqual(current.body.data.authQueries, []);

    // Presented at login, the token makes the session full from the start.
    const withToken = await login(user.username, user.password, { authorization: `Bearer ${good}` });
    assert.equal(withToken.status, 200, withToken.text);
    assert.deepEqual(withToken.body.data.authQueries, []);
    assert.equal(withToken.headers['www-authenticate'], undefined);
    const expiredAtLogin = await login(user.username, user.password, { authorization: `Bearer ${expired}` });
    assert.match(String(expiredAtLogin.headers['www-authenticate']), /error="expired"/);
  });
});
