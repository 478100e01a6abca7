/**
 * The edge routers a client sees: `GET /services/{id}/edge-routers` (routers granted by both an edge
 * router policy and a service edge router policy; 404 unless the caller may dial or bind; an optional
 * `session-token` that must be a session JWT we signed for this service) and
 * `GET /current-identity/edge-routers` (verified routers: all for admins, by edge router policy for
 * others), with filter and paging.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SignJWT } from 'jose';
import { generateKeyPairSync } from 'node:crypto';
import { startTestController, uniqueName } from '../../support/controller.ts';
import { createClient, type HttpClient } from '../../support/client.ts';
import { createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { TIMESTAMP, assertError } from '../../support/assertions.ts';

const tc = await startTestController();
const root = `https://127.0.0.1:${tc.port}`;

async function create(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await tc.mgmt.post(path, body);
  assert.equal(res.status, 201, `${path}: ${res.text}`);
  return res.body.data.id as string;
}

async function clientUser(roleAttributes: string[]): Promise<{ id: string; client: HttpClient }> {
  const u = await createUserWithPassword(tc, { roleAttributes });
  const res = await tc.http.post('/edge/client/v1/authenticate?method=password', { username: u.username, password: u.password });
  assert.equal(res.status, 200, res.text);
  return { id: u.id, client: createClient(`${root}/edge/client/v1`, tc.ca, { token: res.body.data.token }) };
}

async function verify(...ids: string[]): Promise<void> {
  for (const id of ids) await tc.controller.store.write((tx) => tx.run('UPDATE routers SET is_verified = 1 WHERE id = ?', [id]));
}

const alice = await clientUser(['ercv-alice']);
const bob = await clientUser(['ercv-bob']);
const names = { a: uniqueName('er-a'), b: uniqueName('er-b'), c: uniqueName('er-c'), d: uniqueName('er-d') };
const erA = await create('/edge-routers', { name: names.a, roleAttributes: ['ercv-1'], cost: 3 });
const erB = await create('/edge-routers', { name: names.b, roleAttributes: ['ercv-1', 'ercv-2'] });
const erC = await create('/edge-routers', { name: names.c, roleAttributes: ['ercv-2'], disabled: true });
const erD = await create('/edge-routers', { name: names.d });
await create('/edge-router-policies', { name: uniqueName('erp'), semantic: 'AnyOf', identityRoles: ['#ercv-alice'], edgeRouterRoles: ['#ercv-1', '#ercv-2'] });
await create('/edge-router-policies', { name: uniqueName('erp'), semantic: 'AnyOf', identityRoles: ['#ercv-bob'], edgeRouterRoles: [`@${erC}`] });
const svc = await create('/services', { name: uniqueName('svc'), encryptionRequired: true, roleAttributes: ['ercv-svc'] });
const other = await create('/services', { name: uniqueName('svc'), encryptionRequired: true, roleAttributes: ['ercv-svc'] });
await create('/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AnyOf', serviceRoles: [`@${svc}`], edgeRouterRoles: ['#ercv-1'] });
await create('/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AnyOf', serviceRoles: [`@${other}`], edgeRouterRoles: ['#ercv-2'] });
await create('/service-policies', { name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: ['#ercv-alice'], serviceRoles: ['#ercv-svc'] });

describe('GET /services/{id}/edge-routers (client)', () => {
  it('lists the routers both policy kinds grant, verified or not', async () => {
    const res = await alice.client.get(`/services/${svc}/edge-routers`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('client', 'GET', '/services/{id}/edge-routers', 200, res.body);
    assert.deepEqual(res.body.meta, {});
    assert.deepEqual(res.body.data.edgeRouters, [
      { cost: 3, disabled: false, hostname: '', isOnline: false, name: names.a, noTraversal: false, supportedProtocols: {}, syncStatus: 'SYNC_UNKNOWN' },
      { cost: 0, disabled: false, hostname: '', isOnline: false, name: names.b, noTraversal: false, supportedProtocols: {}, syncStatus: 'SYNC_UNKNOWN' },
    ].sort((x, y) => (x.name < y.name ? -1 : 1)));
    const viaOther = await alice.client.get(`/services/${other}/edge-routers`);
    assert.deepEqual(viaOther.body.data.edgeRouters.map((r: { name: string }) => r.name).sort(), [names.b, names.c].sort());
  });

  it('answers 404 unless the caller may dial or bind the service', async () => {
    assertError(await bob.client.get(`/services/${svc}/edge-routers`), 404, 'NOT_FOUND');
    assertError(await alice.client.get('/services/no-such-service/edge-routers'), 404, 'NOT_FOUND');
    assertError(await tc.http.get(`/edge/client/v1/services/${svc}/edge-routers`), 401, 'UNAUTHORIZED');
  });

  it('accepts a session token of this service and refuses any other token', async () => {
    const s = await alice.client.post('/sessions', { serviceId: svc });
    assert.equal(s.status, 201, s.text);
    const ok = await alice.client.get(`/services/${svc}/edge-routers`, { headers: { 'session-token': s.body.data.token } });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.data.edgeRouters.length, 2);

    const forOther = await alice.client.post('/sessions', { serviceId: other });
    assertError(await alice.client.get(`/services/${svc}/edge-routers`, { headers: { 'session-token': forOther.body.data.token } }), 401, 'UNAUTHORIZED');
    assertError(await alice.client.get(`/services/${svc}/edge-routers`, { headers: { 'session-token': 'not-a-jwt' } }), 401, 'UNAUTHORIZED');

    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const forged = await new SignJWT({ sub: svc, z_t: 's', z_iid: alice.id, aud: ['openziti'] }).setProtectedHeader({ alg: 'ES256' }).sign(privateKey);
    assertError(await alice.client.get(`/services/${svc}/edge-routers`, { headers: { 'session-token': forged } }), 401, 'UNAUTHORIZED');
  });
});

describe('GET /current-identity/edge-routers', () => {
  it('lists nothing while no router is verified', async () => {
    const res = await alice.client.get('/current-identity/edge-routers');
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('client', 'GET', '/current-identity/edge-routers', 200, res.body);
    assert.deepEqual(res.body.data, []);
    assert.equal(res.body.meta.pagination.totalCount, 0);
  });

  it("lists the verified routers of the caller's edge router policies", async () => {
    await verify(erA, erC, erD);
    const res = await alice.client.get('/current-identity/edge-routers');
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('client', 'GET', '/current-identity/edge-routers', 200, res.body);
    assert.deepEqual(res.body.data.map((r: { name: string }) => r.name).sort(), [names.a, names.c].sort());
    const a = res.body.data.find((r: { id: string }) => r.id === erA);
    assert.equal(a.cost, 3);
    assert.equal(a.isOnline, false);
    assert.match(a.createdAt, TIMESTAMP);
    assert.deepEqual(a._links.self, { href: `./edge-routers/${erA}` });
    const c = res.body.data.find((r: { id: string }) => r.id === erC);
    assert.equal(c.disabled, true);

    const bobs = await bob.client.get('/current-identity/edge-routers');
    assert.deepEqual(bobs.body.data.map((r: { id: string }) => r.id), [erC]);
  });

  it('admins see every verified edge router', async () => {
    const res = await tc.client.get('/current-identity/edge-routers?limit=500');
    assert.equal(res.status, 200, res.text);
    const ids = res.body.data.map((r: { id: string }) => r.id);
    for (const id of [erA, erC, erD]) assert.ok(ids.includes(id));
    assert.ok(!ids.includes(erB));
  });

  it('filters, sorts and pages', async () => {
    const filtered = await alice.client.get(`/current-identity/edge-routers?filter=${encodeURIComponent(`name = "${names.c}"`)}`);
    assert.deepEqual(filtered.body.data.map((r: { id: string }) => r.id), [erC]);
    const sorted = await alice.client.get(`/current-identity/edge-routers?filter=${encodeURIComponent('true sort by name desc')}`);
    assert.deepEqual(sorted.body.data.map((r: { name: string }) => r.name), [names.a, names.c].sort().reverse());
    const page = await alice.client.get('/current-identity/edge-routers?limit=1&offset=1');
    assert.equal(page.body.data.length, 1);
    assert.deepEqual(page.body.meta.pagination, { limit: 1, offset: 1, totalCount: 2 });
    assertError(await alice.client.get(`/current-identity/edge-routers?filter=${encodeURIComponent('bogus = 1')}`), 400, 'INVALID_FILTER');
  });

  it('needs a session', async () => {
    assertError(await tc.http.get('/edge/client/v1/current-identity/edge-routers'), 401, 'UNAUTHORIZED');
  });
});

describe('at most 25 edge routers', () => {
  it('caps the service router list and the routers of a session at 25', async () => {
    const capSvc = await create('/services', { name: uniqueName('svc-cap'), encryptionRequired: true, roleAttributes: ['ercv-svc'] });
    for (let i = 0; i < 26; i++) await create('/edge-routers', { name: uniqueName(`er-many-${i}`), roleAttributes: ['ercv-many'] });
    await create('/edge-router-policies', { name: uniqueName('erp'), semantic: 'AnyOf', identityRoles: ['#ercv-alice'], edgeRouterRoles: ['#ercv-many'] });
    await create('/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AnyOf', serviceRoles: [`@${capSvc}`], edgeRouterRoles: ['#ercv-many'] });
    const list = await alice.client.get(`/services/${capSvc}/edge-routers`);
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.data.edgeRouters.length, 25);
    const s = await alice.client.post('/sessions', { serviceId: capSvc });
    assert.equal(s.status, 201, s.text);
    assert.equal(s.body.data.edgeRouters.length, 25);
  });
});
