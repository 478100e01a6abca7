/**
 * Management view of API sessions: list (filterable by identity), detail and delete, which ends the
 * session so its token stops working. Reading needs admin, admin_readonly or ops.read; deleting needs
 * admin or ops.delete.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { identityRef } from '../../support/refs.ts';
import { startTestController, type TestController } from '../../support/controller.ts';
import { createClient, type HttpClient, type HttpResponse } from '../../support/client.ts';
import { createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { ERROR_META, TIMESTAMP, assertError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();

const INVALID_TOKEN_CHALLENGE = 'zt-session realm="zt-session" error="invalid" error_description="token is invalid"';

function clientFor(token: string): HttpClient {
  return createClient(`https://127.0.0.1:${tc.port}/edge/client/v1`, tc.ca, { token });
}

function identityFilter(identityId: string): string {
  return `filter=${encodeURIComponent(`identity = "${identityId}"`)}`;
}

/** The API session id behind a token, as its owner sees it. */
async function sessionIdOf(token: string): Promise<string> {
  const res = await clientFor(token).get('/current-api-session');
  assert.equal(res.status, 200, res.text);
  return res.body.data.id as string;
}

async function authenticatorIdOf(identityId: string): Promise<string> {
  return (await tc.mgmt.get(`/identities/${identityId}`)).body.data.authenticators.updb.id as string;
}

describe('GET /api-sessions', () => {
  it('lists API sessions in the list envelope', async () => {
    const user = await createUserWithPassword(tc);
    const res = await tc.mgmt.get('/api-sessions?limit=500');
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/api-sessions', 200, res.body);
    const ids = res.body.data.map((s: { id: string }) => s.id);
    assert.ok(ids.includes(await sessionIdOf(user.token)), 'lists the new session');
    assert.ok(ids.includes(await sessionIdOf(tc.adminToken)), "lists the admin's session");
    assert.equal(res.body.meta.pagination.totalCount, res.body.data.length);
    assert.equal(res.body.meta.pagination.offset, 0);
    assert.ok(res.body.meta.filterableFields.includes('identity'));
  });

  it('filters sessions by identity', async () => {
    const user = await createUserWithPassword(tc);
    const second = await tc.login(user.username, user.password);
    await createUserWithPassword(tc);
    const res = await tc.mgmt.get(`/api-sessions?${identityFilter(user.id)}`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/api-sessions', 200, res.body);
    const ids = res.body.data.map((s: { id: string }) => s.id).sort();
    assert.deepEqual(ids, [await sessionIdOf(user.token), await sessionIdOf(second)].sort());
    for (const s of res.body.data) assert.equal(s.identityId, user.id);
    assert.equal(res.body.meta.pagination.totalCount, 2);
  });

  it('pages with limit and offset', async () => {
    const user = await createUserWithPassword(tc);
    await tc.login(user.username, user.password);
    await tc.login(user.username, user.password);
    const res = await tc.mgmt.get(`/api-sessions?${identityFilter(user.id)}&limit=2&offset=1`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.meta.pagination, { limit: 2, offset: 1, totalCount: 3 });
    assert.equal(res.body.data.length, 2);
  });

  it('rejects an invalid filter with 400 INVALID_FILTER', async () => {
    const res = await tc.mgmt.get(`/api-sessions?filter=${encodeURIComponent('nosuchfield = "x"')}`);
    assertError(res, 400, 'INVALID_FILTER');
    assertMatchesReference('management', 'GET', '/api-sessions', 400, res.body);
  });
});

describe('GET /api-sessions/{id}', () => {
  it('shows the session: identity, authenticator, address, config types and activity', async () => {
    const user = await createUserWithPassword(tc);
    const login = await tc.http.post('/edge/client/v1/authenticate?method=password', {
      username: user.username,
      password: user.password,
      configTypes: ['intercept.v1'],
    });
    assert.equal(login.status, 200, login.text);
    const id = login.body.data.id as string;
    const res = await tc.mgmt.get(`/api-sessions/${id}`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/api-sessions/{id}', 200, res.body);
    assert.deepEqual(res.body.meta, {});
    const d = res.body.data;
    assert.equal(d.id, id);
    assert.equal(d.identityId, user.id);
    const name = (await tc.mgmt.get(`/identities/${user.id}`)).body.data.name;
    assert.deepEqual(d.identity, identityRef(user.id, name));
    assert.equal(d.authenticatorId, await authenticatorIdOf(user.id));
    assert.equal(d.ipAddress, '127.0.0.1');
    assert.deepEqual(d.configTypes, ['g7cIWbcGg']);
    assert.deepEqual(d.authQueries, []);
    assert.equal(d.isMfaRequired, false);
    assert.equal(d.isMfaComplete, false);
    assert.equal(typeof d.token, 'string');
    assert.match(d.createdAt, TIMESTAMP);
    assert.match(d.lastActivityAt, TIMESTAMP);
    assert.deepEqual(d.tags, {});
    assert.equal(d._links.self.href, `./api-sessions/${id}`);
    assert.ok(!('expiresAt' in d), 'the management view has no expiresAt');
    // Upstream's fields, exactly: no cachedUpdatedAt, although the reference declares it required.
    assert.deepEqual(Object.keys(d).sort(), [
      '_links', 'authQueries', 'authenticatorId', 'cachedLastActivityAt', 'configTypes', 'createdAt', 'id', 'identity', 'identityId', 'ipAddress',
      'isCertExtendable', 'isMfaComplete', 'isMfaRequired', 'lastActivityAt', 'tags', 'token', 'updatedAt',
    ]);
    const listed = (await tc.mgmt.get(`/api-sessions?filter=${encodeURIComponent(`id = "${id}"`)}`)).body.data[0];
    assert.deepEqual(Object.keys(listed).sort(), Object.keys(d).sort());
    const own = (await tc.http.as({ token: login.body.data.token }).get('/edge/client/v1/current-api-session')).body.data;
    assert.ok(!('cachedUpdatedAt' in own), 'the current API session has no cachedUpdatedAt either');
  });

  it('answers an unknown id with 404 NOT_FOUND', async () => {
    const res = await tc.mgmt.get('/api-sessions/cnosuchsession000000000000');
    assertError(res, 404, 'NOT_FOUND');
    assertMatchesReference('management', 'GET', '/api-sessions/{id}', 404, res.body);
  });
});

describe('DELETE /api-sessions/{id}', () => {
  it("ends the session: its token then gets 401 with the invalid-token challenge, the identity's other sessions live on", async () => {
    const user = await createUserWithPassword(tc);
    const other = await tc.login(user.username, user.password);
    const id = await sessionIdOf(user.token);
    const res = await tc.mgmt.delete(`/api-sessions/${id}`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { data: {}, meta: {} });
    assertMatchesReference('management', 'DELETE', '/api-sessions/{id}', 200, res.body);
    const after = await clientFor(user.token).get('/current-identity');
    assertError(after, 401, 'UNAUTHORIZED');
    assert.equal(after.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE);
    assertError(await tc.mgmt.get(`/api-sessions/${id}`), 404, 'NOT_FOUND');
    assert.equal((await clientFor(other).get('/current-identity')).status, 200);
  });

  it('clears hasApiSession on the identity once its last session is deleted', async () => {
    const user = await createUserWithPassword(tc);
    assert.equal((await tc.mgmt.get(`/identities/${user.id}`)).body.data.hasApiSession, true);
    assert.equal((await tc.mgmt.delete(`/api-sessions/${await sessionIdOf(user.token)}`)).status, 200);
    assert.equal((await tc.mgmt.get(`/identities/${user.id}`)).body.data.hasApiSession, false);
  });

  it('answers an unknown id with 404 NOT_FOUND', async () => {
    const res = await tc.mgmt.delete('/api-sessions/cnosuchsession000000000000');
    assertError(res, 404, 'NOT_FOUND');
    assertMatchesReference('management', 'DELETE', '/api-sessions/{id}', 404, res.body);
  });
});

describe('API session operations: authorization', () => {
  it('answers a non-admin identity with 401 UNAUTHORIZED on list, detail and delete', async () => {
    const user = await createUserWithPassword(tc);
    const victim = await createUserWithPassword(tc);
    const asUser = tc.mgmt.as({ token: user.token });
    const victimSession = await sessionIdOf(victim.token);
    for (const [method, path] of [
      ['GET', '/api-sessions'],
      ['GET', `/api-sessions/${victimSession}`],
      ['DELETE', `/api-sessions/${victimSession}`],
      ['GET', `/api-sessions/${await sessionIdOf(user.token)}`],
    ]) {
      const res = await asUser.request(method, path);
      assertError(res, 401, 'UNAUTHORIZED');
      assert.equal(res.headers['www-authenticate'], undefined, `${method} ${path}`);
    }
    assert.equal((await clientFor(victim.token).get('/current-identity')).status, 200, 'the session was not deleted');
  });

  it('answers requests without a token with 401 UNAUTHORIZED', async () => {
    for (const [method, path] of [['GET', '/api-sessions'], ['GET', '/api-sessions/x'], ['DELETE', '/api-sessions/x']]) {
      assertError(await tc.http.request(method, `/edge/management/v1${path}`), 401, 'UNAUTHORIZED');
    }
  });

  it('lets an identity with ops.read list and read sessions but not delete them', async () => {
    const operator = await createUserWithPassword(tc, { permissions: ['ops.read'] });
    const asOperator = tc.mgmt.as({ token: operator.token });
    const victim = await createUserWithPassword(tc);
    const victimSession = await sessionIdOf(victim.token);
    const list = await asOperator.get(`/api-sessions?${identityFilter(victim.id)}`);
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.body.data.map((s: { id: string }) => s.id), [victimSession]);
    assert.equal((await asOperator.get(`/api-sessions/${victimSession}`)).status, 200);
    assertError(await asOperator.delete(`/api-sessions/${victimSession}`), 401, 'UNAUTHORIZED');
    assert.equal((await clientFor(victim.token).get('/current-identity')).status, 200, 'the session was not deleted');
  });

  it('lets an admin_readonly identity list sessions but not delete them', async () => {
    const auditor = await createUserWithPassword(tc, { permissions: ['admin_readonly'] });
    const asAuditor = tc.mgmt.as({ token: auditor.token });
    const victim = await createUserWithPassword(tc);
    assert.equal((await asAuditor.get('/api-sessions')).status, 200);
    assertError(await asAuditor.delete(`/api-sessions/${await sessionIdOf(victim.token)}`), 401, 'UNAUTHORIZED');
  });

  it('lets an identity with ops.delete delete a session', async () => {
    const operator = await createUserWithPassword(tc, { permissions: ['ops.delete'] });
    const victim = await createUserWithPassword(tc);
    const res = await tc.mgmt.as({ token: operator.token }).delete(`/api-sessions/${await sessionIdOf(victim.token)}`);
    assert.equal(res.status, 200, res.text);
    assertError(await clientFor(victim.token).get('/current-identity'), 401, 'UNAUTHORIZED');
  });
});
