/**
 * Password authentication and the caller's own session and identity, on the client API, the management
 * API and the legacy root path: `POST /authenticate`, `GET|DELETE /current-api-session`,
 * `GET /current-identity`, idle expiry of API sessions, and the caller's own authenticators (list, detail,
 * patch and put with the current password).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { identityRef } from '../../support/refs.ts';
import { ADMIN_PASSWORD, ADMIN_USER, startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpClient, type HttpResponse } from '../../support/client.ts';
import { createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference, type ApiName } from '../../support/reference-spec.ts';
import { ERROR_META, TIMESTAMP, assertEmptyOk, assertError, assertFieldError, sleep } from '../../support/assertions.ts';

const tc: TestController = await startTestController();
/** A second controller whose API sessions expire after 2 idle seconds. */
const shortLived: TestController = await startTestController({ env: { PORTCULLIS_API_SESSION_TIMEOUT_SECONDS: '2' } });

const APIS: ApiName[] = ['client', 'management'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** Go's time.String(), e.g. `2026-03-10 07:30:00.123 +0000 UTC`. */
const GO_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)? [+-]\d{4} \S+$/;
const INVALID_TOKEN_CHALLENGE = 'zt-session realm="zt-session" error="invalid" error_description="token is invalid"';
/** Upstream renders `interfaces` as null when none were reported (upstream model §3.2). */
const IDENTITY_NULLS = ['/data/interfaces'];

function base(api: ApiName): string {
  return `/edge/${api}/v1`;
}

/** POST <path>?method=password on the unauthenticated root client; `path` is the full path to /authenticate. */
function authenticate(path: string, body: Record<string, unknown>, on: TestController = tc): Promise<HttpResponse> {
  return on.http.post(`${path}?method=password`, body);
}

function apiClient(api: ApiName, token: string, on: TestController = tc): HttpClient {
  return createClient(`https://127.0.0.1:${on.port}${base(api)}`, on.ca, { token });
}

async function assertTokenInvalid(client: HttpClient): Promise<void> {
  const res = await client.get('/current-api-session');
  assertError(res, 401, 'UNAUTHORIZED');
  assert.equal(res.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE);
}

async function authenticatorIdOf(identityId: string): Promise<string> {
  const res = await tc.mgmt.get(`/identities/${identityId}`);
  assert.equal(res.status, 200, res.text);
  return res.body.data.authenticators.updb.id as string;
}

/** A fresh identity with a password authenticator (not logged in). */
async function createCredentials(on: TestController = tc, admin: HttpClient = on.mgmt) {
  const name = uniqueName('caller');
  const id = await createIdentity(admin, { name });
  const username = uniqueName('user');
  const password = 'Caller-pass-1';
  const res = await admin.post('/authenticators', { method: 'updb', identityId: id, username, password });
  assert.equal(res.status, 201, res.text);
  return { id, name, username, password, authenticatorId: res.body.data.id as string };
}

function assertSessionDetail(data: Record<string, any>, who: { id: string; name: string; authenticatorId: string }, timeoutSeconds = 1800): void {
  assert.match(data.id, /^c[a-z0-9]{24}$/);
  assert.match(data.token, UUID);
  assert.equal(data.identityId, who.id);
  assert.deepEqual(data.identity, identityRef(who.id, who.name));
  assert.equal(data.authenticatorId, who.authenticatorId);
  assert.equal(data.ipAddress, '127.0.0.1');
  assert.deepEqual(data.authQueries, []);
  assert.equal(data.isMfaRequired, false);
  assert.equal(data.isMfaComplete, false);
  assert.equal(data.expirationSeconds, timeoutSeconds);
  assert.match(data.createdAt, TIMESTAMP);
  assert.match(data.updatedAt, TIMESTAMP);
  assert.match(data.lastActivityAt, TIMESTAMP);
  assert.match(data.expiresAt, TIMESTAMP);
  assert.deepEqual(data.tags, {});
  assert.equal(data._links.self.href, `./api-sessions/${data.id}`);
  const expectedExpiry = Date.now() + timeoutSeconds * 1000;
  assert.ok(Math.abs(Date.parse(data.expiresAt) - expectedExpiry) < 60_000, `expiresAt ${data.expiresAt} is about now + ${timeoutSeconds}s`);
}

describe('POST /authenticate?method=password', () => {
  const paths: Array<{ label: string; path: string; reference: ApiName }> = [
    { label: 'the client API', path: '/edge/client/v1/authenticate', reference: 'client' },
    { label: 'the management API', path: '/edge/management/v1/authenticate', reference: 'management' },
    { label: 'the legacy root path', path: '/authenticate', reference: 'client' },
  ];
  for (const { label, path, reference } of paths) {
    it(`answers 200 with the current API session and the session headers on ${label}`, async () => {
      const who = await createCredentials();
      const res = await authenticate(path, { username: who.username, password: who.password });
      assert.equal(res.status, 200, res.text);
      assertMatchesReference(reference, 'POST', '/authenticate', 200, res.body);
      assert.deepEqual(res.body.meta, {});
      assertSessionDetail(res.body.data, who);
      assert.deepEqual(res.body.data.configTypes, []);
      assert.equal(res.headers['zt-session'], res.body.data.token);
      assert.equal(res.headers['expiration-seconds'], '1800');
      assert.match(String(res.headers['expires-at']), GO_TIME);
      assert.equal(res.headers['www-authenticate'], undefined);
      for (const api of APIS) {
        assert.equal((await apiClient(api, res.body.data.token).get('/current-api-session')).status, 200, `the token works on the ${api} API`);
      }
      const legacy = await tc.http.get('/current-api-session', { token: res.body.data.token });
      assert.equal(legacy.status, 200, legacy.text);
      assert.equal(legacy.body.data.id, res.body.data.id);
    });
  }

  it('issues a new session with a new token on every login', async () => {
    const who = await createCredentials();
    const first = await authenticate('/edge/client/v1/authenticate', { username: who.username, password: who.password });
    const second = await authenticate('/edge/client/v1/authenticate', { username: who.username, password: who.password });
    assert.notEqual(first.body.data.id, second.body.data.id);
    assert.notEqual(first.body.data.token, second.body.data.token);
    assert.equal((await apiClient('client', first.body.data.token).get('/current-api-session')).status, 200);
  });

  it('resolves configTypes names to ids, keeps ids, and drops unknown entries', async () => {
    const who = await createCredentials();
    const cases: Array<[unknown[], string[]]> = [
      [['intercept.v1'], ['g7cIWbcGg']],
      [['g7cIWbcGg'], ['g7cIWbcGg']],
      [['host.v1', 'no-such-config-type'], ['NH5p4FpGR']],
      [['no-such-config-type'], []],
    ];
    for (const [requested, expected] of cases) {
      const res = await authenticate('/edge/client/v1/authenticate', { username: who.username, password: who.password, configTypes: requested });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.data.configTypes, expected, JSON.stringify(requested));
      const current = await apiClient('client', res.body.data.token).get('/current-api-session');
      assert.deepEqual(current.body.data.configTypes, expected);
    }
  });

  it('keeps configTypes ["all"] as it is, whatever else is listed', async () => {
    const who = await createCredentials();
    for (const requested of [['all'], ['intercept.v1', 'all', 'nope']]) {
      const res = await authenticate('/edge/client/v1/authenticate', { username: who.username, password: who.password, configTypes: requested });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.data.configTypes, ['all']);
    }
  });

  it('records envInfo and sdkInfo on the identity, visible in the management identity detail', async () => {
    const who = await createCredentials();
    const envInfo = { arch: 'amd64', os: 'linux', osRelease: '6.8.0', osVersion: '#1 SMP', domain: 'corp.example', hostname: 'laptop-7' };
    const sdkInfo = { appId: 'my-app', appVersion: '1.2.3', branch: 'main', revision: 'abc123', type: 'ziti-sdk-golang', version: '1.0.0' };
    const res = await authenticate('/edge/client/v1/authenticate', { username: who.username, password: who.password, envInfo, sdkInfo });
    assert.equal(res.status, 200, res.text);
    const identity = await eventually(async () => {
      const d = await tc.mgmt.get(`/identities/${who.id}`);
      return Object.keys(d.body.data.envInfo).length > 0 ? d : undefined;
    });
    assert.deepEqual(identity.body.data.envInfo, envInfo);
    assert.deepEqual(identity.body.data.sdkInfo, sdkInfo);
    assertMatchesReference('management', 'GET', '/identities/{id}', 200, identity.body, { allowNullAt: IDENTITY_NULLS });
  });

  it('matches envInfo and sdkInfo keys case-insensitively, as the C SDK sends appID', async () => {
    const who = await createCredentials();
    const res = await authenticate('/edge/client/v1/authenticate', {
      username: who.username,
      password: who.password,
      sdkInfo: { appID: 'c-app', type: 'ziti-sdk-c' },
      envInfo: { OS: 'windows', deviceId: 'ignored' },
    });
    assert.equal(res.status, 200, res.text);
    const identity = await eventually(async () => {
      const d = await tc.mgmt.get(`/identities/${who.id}`);
      return Object.keys(d.body.data.sdkInfo).length > 0 ? d : undefined;
    });
    assert.deepEqual(identity.body.data.sdkInfo, { appId: 'c-app', type: 'ziti-sdk-c' });
    assert.deepEqual(identity.body.data.envInfo, { os: 'windows' });
  });

  it('answers a wrong password with 401 INVALID_AUTH and no WWW-Authenticate header', async () => {
    const who = await createCredentials();
    for (const api of APIS) {
      const res = await authenticate(`${base(api)}/authenticate`, { username: who.username, password: 'Wrong-pass-1' });
      assertError(res, 401, 'INVALID_AUTH');
      assert.equal(res.headers['www-authenticate'], undefined);
      assert.equal(res.headers['zt-session'], undefined);
      assertMatchesReference(api, 'POST', '/authenticate', 401, res.body);
    }
    const identity = await tc.mgmt.get(`/identities/${who.id}`);
    assert.equal(identity.body.data.hasApiSession, false);
  });

  it('answers an unknown username with 401 INVALID_AUTH and no WWW-Authenticate header', async () => {
    const res = await authenticate('/edge/client/v1/authenticate', { username: uniqueName('nobody'), password: 'Some-pass-1' });
    assertError(res, 401, 'INVALID_AUTH');
    assert.equal(res.headers['www-authenticate'], undefined);
  });

  it('treats the username as case-sensitive', async () => {
    const who = await createCredentials();
    const res = await authenticate('/edge/client/v1/authenticate', { username: who.username.toUpperCase(), password: who.password });
    assertError(res, 401, 'INVALID_AUTH');
  });

  it('rejects a request without the method parameter with 400 COULD_NOT_VALIDATE naming it', async () => {
    const who = await createCredentials();
    const res = await tc.http.post('/edge/client/v1/authenticate', { username: who.username, password: who.password });
    assertFieldError(res, 'method');
    assert.equal(res.headers['zt-session'], undefined);
  });

  it('rejects a method outside password, cert and ext-jwt with 400 COULD_NOT_VALIDATE naming it', async () => {
    const who = await createCredentials();
    const res = await tc.http.post('/edge/client/v1/authenticate?method=foo', { username: who.username, password: who.password });
    assertFieldError(res, 'method');
  });

  it('rejects a password of 4 characters with 400 COULD_NOT_VALIDATE naming the field', async () => {
    const who = await createCredentials();
    const res = await authenticate('/edge/client/v1/authenticate', { username: who.username, password: 'abcd' });
    assertFieldError(res, 'password');
    assertMatchesReference('client', 'POST', '/authenticate', 400, res.body);
  });

  it('rejects a username of 3 characters with 400 COULD_NOT_VALIDATE naming the field', async () => {
    const res = await authenticate('/edge/client/v1/authenticate', { username: 'abc', password: 'Some-pass-1' });
    assertFieldError(res, 'username');
  });

  it('rejects a password request without username or password with 400 COULD_NOT_VALIDATE', async () => {
    assertError(await authenticate('/edge/client/v1/authenticate', {}), 400, 'COULD_NOT_VALIDATE');
    assertError(await authenticate('/edge/client/v1/authenticate', { username: uniqueName('only') }), 400, 'COULD_NOT_VALIDATE');
  });

  it('answers empty credentials as missing ones (upstream skips the length rules of empty values), short ones by length', async () => {
    const required = { code: 'UNHANDLED', message: 'username and password fields are required' };
    for (const body of [{ username: '', password: '' }, { username: uniqueName('user'), password: '' }, { username: '', password: 'Some-pass-1' }]) {
      const res = await authenticate('/edge/client/v1/authenticate', body);
      assertError(res, 400, 'COULD_NOT_VALIDATE');
      assert.deepEqual(res.body.error.cause, required, JSON.stringify(body));
    }
    assertFieldError(await authenticate('/edge/client/v1/authenticate', { username: 'a', password: '' }), 'username');
  });
});

describe('GET /current-api-session', () => {
  for (const api of APIS) {
    it(`returns the caller's session with a fresh expiresAt on the ${api} API`, async () => {
      const who = await createCredentials();
      const login = await authenticate('/edge/client/v1/authenticate', { username: who.username, password: who.password, configTypes: ['intercept.v1'] });
      assert.equal(login.status, 200, login.text);
      await sleep(30);
      const res = await apiClient(api, login.body.data.token).get('/current-api-session');
      assert.equal(res.status, 200, res.text);
      assertMatchesReference(api, 'GET', '/current-api-session', 200, res.body);
      assert.deepEqual(res.body.meta, {});
      assertSessionDetail(res.body.data, who);
      assert.equal(res.body.data.id, login.body.data.id);
      assert.equal(res.body.data.token, login.body.data.token);
      assert.deepEqual(res.body.data.configTypes, ['g7cIWbcGg']);
      assert.ok(res.body.data.expiresAt > login.body.data.expiresAt, `${res.body.data.expiresAt} is later than ${login.body.data.expiresAt}`);
    });
  }

  it('answers without a token with 401 UNAUTHORIZED and the missing-token challenge', async () => {
    for (const api of APIS) {
      const res = await tc.http.get(`${base(api)}/current-api-session`);
      assertError(res, 401, 'UNAUTHORIZED');
      assert.match(String(res.headers['www-authenticate']), /^zt-session realm="zt-session" error="missing"/);
    }
  });

  it('answers an unknown token with 401 UNAUTHORIZED and the invalid-token challenge', async () => {
    await assertTokenInvalid(apiClient('client', '6f1c8a2e-1b7d-4c3e-9a5f-0d2b4e6f8a1c'));
    await assertTokenInvalid(apiClient('management', 'not-a-uuid-at-all'));
  });
});

describe('DELETE /current-api-session', () => {
  for (const api of APIS) {
    it(`logs out on the ${api} API: the token then gets 401 with the invalid-token challenge on both APIs`, async () => {
      const who = await createCredentials();
      const token = await tc.login(who.username, who.password, 'client');
      const other = await tc.login(who.username, who.password, 'client');
      const res = await apiClient(api, token).delete('/current-api-session');
      assertEmptyOk(res);
      for (const each of APIS) await assertTokenInvalid(apiClient(each, token));
      assert.equal((await apiClient(api, other).get('/current-api-session')).status, 200, "the identity's other session survives");
      const sessions = await tc.mgmt.get(`/api-sessions?filter=${encodeURIComponent(`identity = "${who.id}"`)}`);
      assert.equal(sessions.body.meta.pagination.totalCount, 1);
    });
  }

  it('answers without a token with 401 UNAUTHORIZED', async () => {
    assertError(await tc.http.delete('/edge/client/v1/current-api-session'), 401, 'UNAUTHORIZED');
  });
});

describe('GET /current-identity', () => {
  for (const api of APIS) {
    it(`returns the caller's identity with meta null on the ${api} API`, async () => {
      const who = await createCredentials();
      const token = await tc.login(who.username, who.password, api);
      const res = await apiClient(api, token).get('/current-identity');
      assert.equal(res.status, 200, res.text);
      assertMatchesReference(api, 'GET', '/current-identity', 200, res.body, { allowNullAt: ['/meta', ...IDENTITY_NULLS] });
      assert.equal(res.body.meta, null);
      const d = res.body.data;
      assert.equal(d.id, who.id);
      assert.equal(d.name, who.name);
      assert.equal(d.isAdmin, false);
      assert.equal(d.hasApiSession, true);
      assert.equal(d.typeId, 'Default');
      assert.deepEqual(d.authenticators, { updb: { id: who.authenticatorId, username: who.username } });
      assert.match(d.createdAt, TIMESTAMP);
      assert.ok(!res.text.includes(who.password));
    });
  }

  it('links to itself as ./current-identity with an mfa link', async () => {
    const who = await createCredentials();
    const res = await apiClient('client', await tc.login(who.username, who.password, 'client')).get('/current-identity');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.data._links, { self: { href: './current-identity' }, mfa: { href: './current-identity/mfa' } });
  });

  it('answers without a token with 401 UNAUTHORIZED', async () => {
    for (const api of APIS) assertError(await tc.http.get(`${base(api)}/current-identity`), 401, 'UNAUTHORIZED');
  });
});

describe('API session idle expiry', () => {
  it('keeps a session alive past the timeout while it is used, and ends it after the timeout of idleness', async () => {
    const adminToken = await shortLived.login(ADMIN_USER, ADMIN_PASSWORD);
    const admin = apiClient('management', adminToken, shortLived);
    const who = await createCredentials(shortLived, admin);
    const login = await authenticate('/edge/client/v1/authenticate', { username: who.username, password: who.password }, shortLived);
    assert.equal(login.status, 200, login.text);
    assert.equal(login.headers['expiration-seconds'], '2');
    assert.equal(login.body.data.expirationSeconds, 2);
    const started = Date.now();
    const client = apiClient('client', login.body.data.token, shortLived);
    while (Date.now() - started < 3200) {
      await sleep(400);
      const res = await client.get('/current-api-session');
      assert.equal(res.status, 200, `still alive after ${Date.now() - started} ms: ${res.text}`);
    }
    await sleep(2500);
    await assertTokenInvalid(client);
  });
});

describe('own authenticators (/current-identity/authenticators)', () => {
  for (const api of APIS) {
    describe(`on the ${api} API`, () => {
      async function caller() {
        const user = await createUserWithPassword(tc);
        const authenticatorId = await authenticatorIdOf(user.id);
        return { ...user, authenticatorId, client: apiClient(api, user.token) };
      }

      it("lists only the caller's authenticators, without passwords", async () => {
        const me = await caller();
        await createUserWithPassword(tc);
        const res = await me.client.get('/current-identity/authenticators');
        assert.equal(res.status, 200, res.text);
        assertMatchesReference(api, 'GET', '/current-identity/authenticators', 200, res.body);
        assert.deepEqual(res.body.data.map((a: { id: string }) => a.id), [me.authenticatorId]);
        assert.equal(res.body.data[0].identityId, me.id);
        assert.equal(res.body.data[0].username, me.username);
        assert.equal(res.body.data[0].method, 'updb');
        // Links point where the caller may follow them, not to the admin-only authenticator path.
        assert.deepEqual(res.body.data[0]._links, { self: { href: `./current-identity/authenticators/${me.authenticatorId}` } });
        assert.equal(res.body.meta.pagination.totalCount, 1);
        assert.ok(!res.text.includes(me.password));
      });

      it('shows one of its own authenticators', async () => {
        const me = await caller();
        const res = await me.client.get(`/current-identity/authenticators/${me.authenticatorId}`);
        assert.equal(res.status, 200, res.text);
        assertMatchesReference(api, 'GET', '/current-identity/authenticators/{id}', 200, res.body);
        assert.equal(res.body.data.id, me.authenticatorId);
        assert.deepEqual(res.body.data._links, { self: { href: `./current-identity/authenticators/${me.authenticatorId}` } });
        assert.equal(res.body.data.identityId, me.id);
        assert.ok(!res.text.includes(me.password));
      });

      it("answers another identity's authenticator with 404 NOT_FOUND on detail, patch and put", async () => {
        const me = await caller();
        const other = await createUserWithPassword(tc);
        const otherAuthenticator = await authenticatorIdOf(other.id);
        const detail = await me.client.get(`/current-identity/authenticators/${otherAuthenticator}`);
        assertError(detail, 404, 'NOT_FOUND');
        assertMatchesReference(api, 'GET', '/current-identity/authenticators/{id}', 404, detail.body);
        const patch = await me.client.patch(`/current-identity/authenticators/${otherAuthenticator}`, { currentPassword: other.password, password: 'Stolen-pass-1' });
        assertError(patch, 404, 'NOT_FOUND');
        const put = await me.client.put(`/current-identity/authenticators/${otherAuthenticator}`, {
          currentPassword: other.password,
          username: uniqueName('stolen'),
          password: 'Stolen-pass-1',
        });
        assertError(put, 404, 'NOT_FOUND');
        await tc.login(other.username, other.password);
      });

      it('changes the password with patch when the current password is right', async () => {
        const me = await caller();
        const res = await me.client.patch(`/current-identity/authenticators/${me.authenticatorId}`, { currentPassword: me.password, password: 'Patched-pass-2' });
        assertEmptyOk(res);
        assertMatchesReference(api, 'PATCH', '/current-identity/authenticators/{id}', 200, res.body);
        assertError(await authenticate('/edge/client/v1/authenticate', { username: me.username, password: me.password }), 401, 'INVALID_AUTH');
        await tc.login(me.username, 'Patched-pass-2');
      });

      it('changes username and password with put when the current password is right', async () => {
        const me = await caller();
        const username = uniqueName('renamed');
        const res = await me.client.put(`/current-identity/authenticators/${me.authenticatorId}`, { currentPassword: me.password, username, password: 'Put-pass-3' });
        assertEmptyOk(res);
        assertMatchesReference(api, 'PUT', '/current-identity/authenticators/{id}', 200, res.body);
        await tc.login(username, 'Put-pass-3');
        assertError(await authenticate('/edge/client/v1/authenticate', { username: me.username, password: me.password }), 401, 'INVALID_AUTH');
      });

      it('answers a wrong current password with 401 UNAUTHORIZED and changes nothing', async () => {
        const me = await caller();
        const patch = await me.client.patch(`/current-identity/authenticators/${me.authenticatorId}`, { currentPassword: 'Wrong-pass-9', password: 'Never-pass-1' });
        assertError(patch, 401, 'UNAUTHORIZED');
        const put = await me.client.put(`/current-identity/authenticators/${me.authenticatorId}`, {
          currentPassword: 'Wrong-pass-9',
          username: uniqueName('never'),
          password: 'Never-pass-1',
        });
        assertError(put, 401, 'UNAUTHORIZED');
        await tc.login(me.username, me.password);
        assertError(await authenticate('/edge/client/v1/authenticate', { username: me.username, password: 'Never-pass-1' }), 401, 'INVALID_AUTH');
        assert.equal((await me.client.get('/current-api-session')).status, 200, 'the session stays valid');
      });

      it('rejects a missing current password with 400 COULD_NOT_VALIDATE and changes nothing', async () => {
        const me = await caller();
        const patch = await me.client.patch(`/current-identity/authenticators/${me.authenticatorId}`, { password: 'Never-pass-1' });
        assertFieldError(patch, 'currentPassword');
        const put = await me.client.put(`/current-identity/authenticators/${me.authenticatorId}`, { username: uniqueName('never'), password: 'Never-pass-1' });
        assertFieldError(put, 'currentPassword');
        await tc.login(me.username, me.password);
      });

      it('rejects a put without username or password with 400 COULD_NOT_VALIDATE naming the field', async () => {
        const me = await caller();
        assertFieldError(await me.client.put(`/current-identity/authenticators/${me.authenticatorId}`, { currentPassword: me.password, password: 'Never-pass-1' }), 'username');
        assertFieldError(await me.client.put(`/current-identity/authenticators/${me.authenticatorId}`, { currentPassword: me.password, username: uniqueName('x') }), 'password');
        await tc.login(me.username, me.password);
      });

      it('answers requests without a token with 401 UNAUTHORIZED', async () => {
        const me = await caller();
        assertError(await tc.http.get(`${base(api)}/current-identity/authenticators`), 401, 'UNAUTHORIZED');
        assertError(await tc.http.get(`${base(api)}/current-identity/authenticators/${me.authenticatorId}`), 401, 'UNAUTHORIZED');
        const patch = await tc.http.patch(`${base(api)}/current-identity/authenticators/${me.authenticatorId}`, { currentPassword: me.password, password: 'Never-pass-1' });
        assertError(patch, 401, 'UNAUTHORIZED');
        await tc.login(me.username, me.password);
      });
    });
  }
});

/** Polls until `probe` yields a value (upstream records envInfo/sdkInfo in the background). */
async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs = 2000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await sleep(50);
  }
}
