/**
 * Identity lifecycle: `POST /identities/{id}/disable` and `/enable` (upstream auth §7, seeds management §3
 * and §2.13) and the identity read-model fields that follow authentication: disabled, disabledAt,
 * disabledUntil, hasApiSession, authenticators, envInfo, sdkInfo and hasEdgeRouterConnection. Covers the
 * effect on existing sessions and on new logins, the lock that ends by itself, each bad body, unknown ids
 * and permissions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertDecodeError, TIMESTAMP, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();

/** Upstream renders `interfaces` as null when none were reported (upstream model §3.2). */
const DETAIL_NULLS = { allowNullAt: ['/data/interfaces'] };

async function detail(id: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/identities/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/identities/{id}', 200, res.body, DETAIL_NULLS);
  return res.body.data;
}

async function login(username: string, password: string, body: Record<string, unknown> = {}) {
  return tc.http.post('/edge/client/v1/authenticate?method=password', { username, password, ...body });
}

describe('POST /identities/{id}/disable', () => {
  it('disables indefinitely with 0: sessions end, logins are refused, the read model shows it', async () => {
    const user = await createUserWithPassword(tc);
    assert.equal((await detail(user.id)).hasApiSession, true);
    const before = Date.now();
    const res = await tc.mgmt.post(`/identities/${user.id}/disable`, { durationMinutes: 0 });
    assertEmptyOk(res);
    assertMatchesReference('management', 'POST', '/identities/{id}/disable', 200, res.body);

    // The session that existed is gone: its token answers 401 with the "invalid" challenge.
    const old = await tc.http.get('/edge/client/v1/current-api-session', { token: user.token });
    assertError(old, 401, 'UNAUTHORIZED');
    assert.match(String(old.headers['www-authenticate']), /error="invalid"/);

    // New logins answer upstream's INVALID_AUTH, without a challenge header.
    const refused = await login(user.username, user.password);
    assertError(refused, 401, 'INVALID_AUTH');
    assert.equal(refused.headers['www-authenticate'], undefined);

    const d = await detail(user.id);
    assert.equal(d.disabled, true);
    assert.match(d.disabledAt, TIMESTAMP);
    assert.ok(Date.parse(d.disabledAt) >= before - 1000 && Date.parse(d.disabledAt) <= Date.now() + 1000);
    assert.equal('disabledUntil' in d, false, 'an indefinite lock has no disabledUntil');
    assert.equal(d.hasApiSession, false);

    const listed = await tc.mgmt.get(`/api-sessions?filter=${encodeURIComponent(`identity = "${user.id}"`)}`);
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body.data.length, 0);
  });

  it('disables for N minutes: disabledUntil is disabledAt + N minutes', async () => {
    const user = await createUserWithPassword(tc);
    assertEmptyOk(await tc.mgmt.post(`/identities/${user.id}/disable`, { durationMinutes: 90 }));
    const d = await detail(user.id);
    assert.equal(d.disabled, true);
    assert.match(d.disabledUntil, TIMESTAMP);
    assert.equal(Date.parse(d.disabledUntil) - Date.parse(d.disabledAt), 90 * 60_000);
    assertError(await login(user.username, user.password), 401, 'INVALID_AUTH');
  });

  it('treats a negative duration as 0 (indefinitely)', async () => {
    const id = await createIdentity(tc.mgmt);
    assertEmptyOk(await tc.mgmt.post(`/identities/${id}/disable`, { durationMinutes: -5 }));
    const d = await detail(id);
    assert.equal(d.disabled, true);
    assert.equal('disabledUntil' in d, false);
  });

  it('ends by itself once disabledUntil has passed', async () => {
    const user = await createUserWithPassword(tc);
    assertEmptyOk(await tc.mgmt.post(`/identities/${user.id}/disable`, { durationMinutes: 1 }));
    assertError(await login(user.username, user.password), 401, 'INVALID_AUTH');
    // Move the end of the lock into the past instead of waiting for it.
    const past = new Date(Date.now() - 1000).toISOString();
    await tc.controller.store.write((tx) => tx.run('UPDATE identities SET disabled_until = ? WHERE id = ?', [past, user.id]));
    const d = await detail(user.id);
    assert.equal(d.disabled, false, 'the lock is over');
    assert.equal(d.disabledUntil, past, 'the times stay until enabled');
    const res = await login(user.username, user.password);
    assert.equal(res.status, 200, res.text);
  });

  it('refuses every bad body with 400 and changes nothing', async () => {
    const id = await createIdentity(tc.mgmt);
    for (const body of [{}, { durationMinutes: null }]) {
      const res = await tc.mgmt.post(`/identities/${id}/disable`, body);
      assertFieldError(res, /durationMinutes/);
    }
    for (const body of [{ durationMinutes: 'ten' }, { durationMinutes: 1.5 }]) assertDecodeError(await tc.mgmt.post(`/identities/${id}/disable`, body), 'durationMinutes');
    const raw = await tc.mgmt.post(`/identities/${id}/disable`, undefined, { rawBody: '{"durationMinutes":', contentType: 'application/json' });
    assertError(raw, 400, 'COULD_NOT_PARSE_BODY');
    const wrongType = await tc.mgmt.post(`/identities/${id}/disable`, undefined, { rawBody: 'durationMinutes=0', contentType: 'text/plain' });
    assert.equal(wrongType.status, 415, wrongType.text);
    assert.equal((await detail(id)).disabled, false);
  });

  it('answers 404 for an unknown identity', async () => {
    assertError(await tc.mgmt.post('/identities/no-such-identity/disable', { durationMinutes: 0 }), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.post('/identities/no-such-identity/enable'), 404, 'NOT_FOUND');
  });
});

describe('POST /identities/{id}/enable', () => {
  it('clears the disabled state; logins work again', async () => {
    const user = await createUserWithPassword(tc);
    assertEmptyOk(await tc.mgmt.post(`/identities/${user.id}/disable`, { durationMinutes: 0 }));
    const res = await tc.mgmt.post(`/identities/${user.id}/enable`);
    assertEmptyOk(res);
    assertMatchesReference('management', 'POST', '/identities/{id}/enable', 200, res.body);
    const d = await detail(user.id);
    assert.equal(d.disabled, false);
    assert.equal('disabledAt' in d, false);
    assert.equal('disabledUntil' in d, false);
    const again = await login(user.username, user.password);
    assert.equal(again.status, 200, again.text);
    // Enabling an identity that is not disabled is harmless.
    assertEmptyOk(await tc.mgmt.post(`/identities/${user.id}/enable`));
  });

  it('ignores a body', async () => {
    const id = await createIdentity(tc.mgmt);
    assertEmptyOk(await tc.mgmt.post(`/identities/${id}/enable`, {}));
  });
});

describe('disable and enable permissions', () => {
  it('no session: 401 with the "missing" challenge', async () => {
    const id = await createIdentity(tc.mgmt);
    const res = await tc.http.post(`/edge/management/v1/identities/${id}/disable`, { durationMinutes: 0 });
    assertError(res, 401, 'UNAUTHORIZED');
    assert.match(String(res.headers['www-authenticate']), /error="missing"/);
  });

  it('needs admin or identity update rights', async () => {
    const target = await createIdentity(tc.mgmt);
    for (const permissions of [[], ['admin_readonly'], ['identity.read'], ['service']]) {
      const caller = await createUserWithPassword(tc, { permissions });
      const as = tc.mgmt.as({ token: caller.token });
      assertError(await as.post(`/identities/${target}/disable`, { durationMinutes: 0 }), 401, 'UNAUTHORIZED');
      assertError(await as.post(`/identities/${target}/enable`), 401, 'UNAUTHORIZED');
    }
    assert.equal((await detail(target)).disabled, false);
    for (const permissions of [['identity'], ['identity.update']]) {
      const caller = await createUserWithPassword(tc, { permissions });
      const as = tc.mgmt.as({ token: caller.token });
      assertEmptyOk(await as.post(`/identities/${target}/disable`, { durationMinutes: 0 }));
      assertEmptyOk(await as.post(`/identities/${target}/enable`));
    }
  });

  it('an identity that disables itself ends its own session', async () => {
    const self = await createUserWithPassword(tc, { isAdmin: true });
    const as = tc.mgmt.as({ token: self.token });
    assertEmptyOk(await as.post(`/identities/${self.id}/disable`, { durationMinutes: 0 }));
    assertError(await as.get('/current-api-session'), 401, 'UNAUTHORIZED');
    assertEmptyOk(await tc.mgmt.post(`/identities/${self.id}/enable`));
  });
});

describe('identity read model after authentication', () => {
  it('records envInfo and sdkInfo (known members, any key case) and shows the session and authenticators', async () => {
    const id = await createIdentity(tc.mgmt);
    const untouched = await detail(id);
    assert.deepEqual(untouched.envInfo, {});
    assert.deepEqual(untouched.sdkInfo, {});
    assert.deepEqual(untouched.authenticators, {});
    assert.equal(untouched.hasApiSession, false);
    assert.equal(untouched.hasEdgeRouterConnection, false);
    assert.equal(untouched.edgeRouterConnectionStatus, 'offline');
    assert.equal(untouched.disabled, false);
    assert.equal('disabledAt' in untouched, false);

    const username = uniqueName('user');
    const password = 'Secret-pass-123';
    const auth = await tc.mgmt.post('/authenticators', { method: 'updb', identityId: id, username, password });
    assert.equal(auth.status, 201, auth.text);
    const res = await login(username, password, {
      envInfo: { arch: 'amd64', os: 'linux', osRelease: '6.1', osVersion: '#1 SMP', hostname: 'host-1', domain: '', bogus: 'x' },
      sdkInfo: { appID: 'tunneler', appVersion: '1.2.3', branch: 'main', revision: 'abc123', type: 'ziti-sdk-c', version: '1.0.0', extra: 1 },
    });
    assert.equal(res.status, 200, res.text);

    const d = await detail(id);
    assert.deepEqual(d.envInfo, { arch: 'amd64', os: 'linux', osRelease: '6.1', osVersion: '#1 SMP', hostname: 'host-1' });
    assert.deepEqual(d.sdkInfo, { appId: 'tunneler', appVersion: '1.2.3', branch: 'main', revision: 'abc123', type: 'ziti-sdk-c', version: '1.0.0' });
    assert.equal(d.hasApiSession, true);
    assert.equal(d.hasEdgeRouterConnection, false);
    assert.deepEqual(d.authenticators, { updb: { id: auth.body.data.id, username } });

    // A later login without the objects keeps what was recorded.
    assert.equal((await login(username, password)).status, 200);
    assert.deepEqual((await detail(id)).envInfo.arch, 'amd64');

    // The caller's own view carries the same fields.
    const own = await tc.http.get('/edge/client/v1/current-identity', { token: res.body.data.token });
    assert.equal(own.status, 200, own.text);
    assert.deepEqual(own.body.data.sdkInfo, d.sdkInfo);
    assert.equal(own.body.data.hasApiSession, true);

    // Logging out of every session clears hasApiSession.
    for (const token of [res.body.data.token]) await tc.http.delete('/edge/client/v1/current-api-session', { token });
    const sessions = await tc.mgmt.get(`/api-sessions?filter=${encodeURIComponent(`identity = "${id}"`)}`);
    for (const s of sessions.body.data) assertEmptyOk(await tc.mgmt.delete(`/api-sessions/${s.id}`));
    assert.equal((await detail(id)).hasApiSession, false);
  });

  it('lists disabled identities by filter', async () => {
    const id = await createIdentity(tc.mgmt);
    assertEmptyOk(await tc.mgmt.post(`/identities/${id}/disable`, { durationMinutes: 0 }));
    const res = await tc.mgmt.get(`/identities?filter=${encodeURIComponent(`id = "${id}" and disabledAt != null`)}`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.length, 1);
    assert.equal(res.body.data[0].disabled, true);
  });
});
