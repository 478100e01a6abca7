/**
 * Management sessions: list (filter, sort, paging), detail, delete and route path; the `ops`
 * permissions (read for lists and details, delete for delete); unknown ids; and the cascade that ends
 * a session with its identity.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { apiSessionRef } from '../../support/refs.ts';
import { startTestController, uniqueName } from '../../support/controller.ts';
import { createClient, type HttpClient } from '../../support/client.ts';
import { createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { TIMESTAMP, assertEmptyOk, assertError } from '../../support/assertions.ts';

const tc = await startTestController();
const root = `https://127.0.0.1:${tc.port}`;

async function create(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await tc.mgmt.post(path, body);
  assert.equal(res.status, 201, `${path}: ${res.text}`);
  return res.body.data.id as string;
}

async function dialer(): Promise<{ id: string; client: HttpClient; mgmt: HttpClient; apiSessionId: string }> {
  const u = await createUserWithPassword(tc, { roleAttributes: ['mgmt-sess-user'] });
  const res = await tc.http.post('/edge/client/v1/authenticate?method=password', { username: u.username, password: u.password });
  assert.equal(res.status, 200, res.text);
  return {
    id: u.id,
    client: createClient(`${root}/edge/client/v1`, tc.ca, { token: res.body.data.token }),
    mgmt: createClient(`${root}/edge/management/v1`, tc.ca, { token: u.token }),
    apiSessionId: res.body.data.id,
  };
}

async function session(client: HttpClient, serviceId: string, type = 'Dial'): Promise<string> {
  const res = await client.post('/sessions', { serviceId, type });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

const erName = uniqueName('er');
await create('/edge-routers', { name: erName, roleAttributes: ['mgmt-sess-er'] });
await create('/edge-router-policies', { name: uniqueName('erp'), semantic: 'AnyOf', identityRoles: ['#mgmt-sess-user'], edgeRouterRoles: ['#mgmt-sess-er'] });
await create('/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AnyOf', serviceRoles: ['#mgmt-sess-svc'], edgeRouterRoles: ['#mgmt-sess-er'] });
const svcName = uniqueName('svc');
const svc = await create('/services', { name: svcName, encryptionRequired: true, roleAttributes: ['mgmt-sess-svc'] });
const policyName = uniqueName('sp');
await create('/service-policies', { name: policyName, type: 'Dial', semantic: 'AnyOf', identityRoles: ['#mgmt-sess-user'], serviceRoles: ['#mgmt-sess-svc'] });
await create('/service-policies', { name: uniqueName('sp-bind'), type: 'Bind', semantic: 'AnyOf', identityRoles: ['#mgmt-sess-user'], serviceRoles: ['#mgmt-sess-svc'] });

const u1 = await dialer();
const u2 = await dialer();
const s1dial = await session(u1.client, svc);
const s1bind = await session(u1.client, svc, 'Bind');
const s2dial = await session(u2.client, svc);

describe('GET /sessions (management)', () => {
  it('lists every session with the management read model', async () => {
    const res = await tc.mgmt.get('/sessions');
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/sessions', 200, res.body);
    const ids = res.body.data.map((s: { id: string }) => s.id);
    for (const id of [s1dial, s1bind, s2dial]) assert.ok(ids.includes(id));
    const one = res.body.data.find((s: { id: string }) => s.id === s1dial);
    assert.equal(one.identityId, u1.id);
    assert.equal(one.apiSessionId, u1.apiSessionId);
    assert.deepEqual(one.apiSession, apiSessionRef(u1.apiSessionId));
    assert.equal(one.service.name, svcName);
    assert.equal(one.token, s1dial);
    assert.match(one.createdAt, TIMESTAMP);
    assert.deepEqual(one._links, { self: { href: `./sessions/${s1dial}` }, 'route-path': { href: `./sessions/${s1dial}/route-path` } });
    assert.equal(one.edgeRouters[0].name, erName);
    assert.deepEqual(res.body.meta.filterableFields, ['id', 'createdAt', 'updatedAt', 'tags', 'isSystem', 'apiSession', 'service', 'token', 'type']);
  });

  it('filters, sorts and pages', async () => {
    const byIdentity = await tc.mgmt.get(`/sessions?filter=${encodeURIComponent(`identity = "${u1.id}"`)}`);
    assert.deepEqual(byIdentity.body.data.map((s: { id: string }) => s.id).sort(), [s1dial, s1bind].sort());
    const byType = await tc.mgmt.get(`/sessions?filter=${encodeURIComponent(`type = "Bind" and apiSession = "${u1.apiSessionId}"`)}`);
    assert.deepEqual(byType.body.data.map((s: { id: string }) => s.id), [s1bind]);
    const sorted = await tc.mgmt.get(`/sessions?filter=${encodeURIComponent(`service = "${svc}" sort by id desc`)}`);
    const ids = sorted.body.data.map((s: { id: string }) => s.id);
    assert.deepEqual(ids, [...ids].sort().reverse());
    const page = await tc.mgmt.get(`/sessions?filter=${encodeURIComponent(`service = "${svc}"`)}&limit=2&offset=1`);
    assert.equal(page.body.data.length, 2);
    assert.deepEqual(page.body.meta.pagination, { limit: 2, offset: 1, totalCount: 3 });
    assertError(await tc.mgmt.get(`/sessions?filter=${encodeURIComponent('bogus = 1')}`), 400, 'INVALID_FILTER');
  });
});

describe('GET /sessions/{id}, route path, DELETE', () => {
  it('shows any session to admins', async () => {
    const res = await tc.mgmt.get(`/sessions/${s2dial}`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/sessions/{id}', 200, res.body);
    assert.equal(res.body.data.identityId, u2.id);
    assertError(await tc.mgmt.get('/sessions/unknown-session'), 404, 'NOT_FOUND');
  });

  it('answers an empty route path (no circuits without a data plane)', async () => {
    const res = await tc.mgmt.get(`/sessions/${s2dial}/route-path`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/sessions/{id}/route-path', 200, res.body);
    assert.deepEqual(res.body, { data: { routePath: [] }, meta: {} });
    assertError(await tc.mgmt.get('/sessions/unknown-session/route-path'), 404, 'NOT_FOUND');
  });

  it('deletes a session', async () => {
    const id = await session(u2.client, svc, 'Bind');
    assertEmptyOk(await tc.mgmt.delete(`/sessions/${id}`));
    assertError(await tc.mgmt.get(`/sessions/${id}`), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.delete(`/sessions/${id}`), 404, 'NOT_FOUND');
    assertError(await u2.client.get(`/sessions/${id}`), 404, 'NOT_FOUND');
  });
});

describe('permissions', () => {
  it('refuses callers without admin or ops permissions', async () => {
    assertError(await u1.mgmt.get('/sessions'), 401, 'UNAUTHORIZED');
    assertError(await u1.mgmt.get(`/sessions/${s1dial}`), 401, 'UNAUTHORIZED');
    assertError(await u1.mgmt.get(`/sessions/${s1dial}/route-path`), 401, 'UNAUTHORIZED');
    assertError(await u1.mgmt.delete(`/sessions/${s1dial}`), 401, 'UNAUTHORIZED');
    assertError(await tc.http.get('/edge/management/v1/sessions'), 401, 'UNAUTHORIZED');
  });

  it('ops.read may read but not delete; ops.delete may delete', async () => {
    const reader = await createUserWithPassword(tc, { permissions: ['ops.read'] });
    const rm = createClient(`${root}/edge/management/v1`, tc.ca, { token: reader.token });
    assert.equal((await rm.get('/sessions')).status, 200);
    assert.equal((await rm.get(`/sessions/${s1dial}`)).status, 200);
    assert.equal((await rm.get(`/sessions/${s1dial}/route-path`)).status, 200);
    assertError(await rm.delete(`/sessions/${s1dial}`), 401, 'UNAUTHORIZED');

    const deleter = await createUserWithPassword(tc, { permissions: ['ops.delete'] });
    const dm = createClient(`${root}/edge/management/v1`, tc.ca, { token: deleter.token });
    assertError(await dm.get('/sessions'), 401, 'UNAUTHORIZED');
    const id = await session(u1.client, svc, 'Bind');
    assert.equal(id, s1bind, 'the existing Bind session is reused');
    assertEmptyOk(await dm.delete(`/sessions/${id}`));
  });
});

describe('cascades', () => {
  it('deleting the identity removes its sessions', async () => {
    const u3 = await dialer();
    const id = await session(u3.client, svc);
    assertEmptyOk(await tc.mgmt.delete(`/identities/${u3.id}`));
    assertError(await tc.mgmt.get(`/sessions/${id}`), 404, 'NOT_FOUND');
  });

  it('deleting the API session removes its sessions', async () => {
    const u4 = await dialer();
    const id = await session(u4.client, svc);
    assertEmptyOk(await tc.mgmt.delete(`/api-sessions/${u4.apiSessionId}`));
    assertError(await tc.mgmt.get(`/sessions/${id}`), 404, 'NOT_FOUND');
  });
});

void policyName;
