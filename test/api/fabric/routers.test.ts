/**
 * Fabric API routers (`/fabric/v1/routers`, `/routers/{id}`, `/routers/{id}/terminators`): every router, edge
 * and transit, in the fabric routerDetail with the live state of its control channel (connected, version,
 * link listeners), upstream's router filter fields (`connected` among them), paging and sorting, bad filters,
 * unknown ids, and a router's terminators.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpClient } from '../../support/client.ts';
import { createRecord } from '../../support/factories.ts';
import { assertError } from '../../support/assertions.ts';
import { assertFabricDetail, assertFabricList } from '../../support/fabric-spec.ts';
import { connectRouter, enrolledRouter, eventually, routerHello } from '../../support/test-router.ts';
import { HelloHeader } from '../../../src/fabric/channel/hello.ts';
import { encode } from '../../../src/fabric/proto/index.ts';

const tc: TestController = await startTestController();
const fabric: HttpClient = createClient(`https://127.0.0.1:${tc.port}/fabric/v1`, tc.ca, { token: tc.adminToken });

/** Upstream renders these null for a router that is not connected (or not enrolled). */
const NULLS = { allowNullAt: ['/fingerprint', '/listenerAddresses', '/interfaces'] };

const q = (filter: string) => encodeURIComponent(filter);

async function routerList(query = ''): Promise<Record<string, any>> {
  const res = await fabric.get(`/routers${query ? `?${query}` : ''}`);
  assert.equal(res.status, 200, res.text);
  assertFabricList('routerDetail', res.body, NULLS);
  return res.body;
}

async function routerDetail(id: string): Promise<Record<string, any>> {
  const res = await fabric.get(`/routers/${id}`);
  assert.equal(res.status, 200, res.text);
  assertFabricDetail('routerDetail', res.body, NULLS);
  return res.body.data;
}

async function ids(filter: string): Promise<string[]> {
  return (await routerList(`filter=${q(`${filter} sort by name`)}&limit=500`)).data.map((r: { id: string }) => r.id);
}

const prefix = uniqueName('fr');
const transit = await createRecord(tc.mgmt, '/transit-routers', { name: `${prefix}-a-transit`, cost: 7, noTraversal: true, tags: { site: 'lab' } });
const edge = await createRecord(tc.mgmt, '/edge-routers', { name: `${prefix}-b-edge`, cost: 3, disabled: true });

describe('GET /fabric/v1/routers', () => {
  it('lists edge and transit routers alike in the fabric read model', async () => {
    const body = await routerList(`filter=${q(`name contains "${prefix}" sort by name`)}`);
    assert.deepEqual(body.data.map((r: { id: string }) => r.id), [transit, edge]);
    const [t, e] = body.data;
    assert.deepEqual(t._links, { self: { href: `./routers/${transit}` }, terminators: { href: `./routers/${transit}/terminators` } });
    assert.equal(t.name, `${prefix}-a-transit`);
    assert.deepEqual(t.tags, { site: 'lab' });
    assert.equal(t.cost, 7);
    assert.equal(t.noTraversal, true);
    assert.equal(t.disabled, false);
    assert.equal(t.connected, false);
    assert.equal(t.fingerprint, null, 'not enrolled yet');
    assert.equal(t.listenerAddresses, null);
    assert.equal(t.interfaces, null);
    assert.ok(!('versionInfo' in t), 'no version while not connected');
    assert.equal(e.cost, 3);
    assert.equal(e.disabled, true);
    // Edge-only fields of the management API are not part of the fabric model.
    for (const field of ['roleAttributes', 'isOnline', 'isVerified', 'enrollmentJwt', 'appData']) assert.ok(!(field in e), field);
    assert.deepEqual(body.meta.pagination, { limit: 10, offset: 0, totalCount: 2 });
  });

  it('offers upstream\'s router filter fields, and filters on each', async () => {
    const body = await routerList('limit=1');
    assert.deepEqual([...body.meta.filterableFields].sort(), ['connected', 'cost', 'createdAt', 'disabled', 'fingerprint', 'id', 'isSystem', 'name', 'noTraversal', 'tags', 'updatedAt']);
    const mine = `name contains "${prefix}"`;
    assert.deepEqual(await ids(`${mine} and cost > 5`), [transit]);
    assert.deepEqual(await ids(`${mine} and noTraversal = true`), [transit]);
    assert.deepEqual(await ids(`${mine} and disabled = true`), [edge]);
    assert.deepEqual(await ids(`${mine} and connected = false`), [transit, edge]);
    assert.deepEqual(await ids(`${mine} and fingerprint = null`), [transit, edge]);
    assert.deepEqual(await ids(`${mine} and tags.site = "lab"`), [transit]);
    assert.deepEqual(await ids(`id = "${edge}"`), [edge]);
  });

  it('sorts and pages', async () => {
    const mine = `name contains "${prefix}"`;
    const desc = await routerList(`filter=${q(`${mine} sort by name desc`)}`);
    assert.deepEqual(desc.data.map((r: { id: string }) => r.id), [edge, transit]);
    const second = await routerList(`filter=${q(`${mine} sort by name`)}&limit=1&offset=1`);
    assert.deepEqual(second.data.map((r: { id: string }) => r.id), [edge]);
    assert.deepEqual(second.meta.pagination, { limit: 1, offset: 1, totalCount: 2 });
    const inFilter = await routerList(`filter=${q(`${mine} sort by name skip 1 limit 1`)}`);
    assert.deepEqual(inFilter.data.map((r: { id: string }) => r.id), [edge]);
  });

  it('refuses filters on fields the router store does not declare, and bad syntax, with INVALID_FILTER', async () => {
    for (const filter of ['isOnline = true', 'roleAttributes contains "x"', 'isVerified = true', 'name = ', 'name ~ "x"']) {
      assertError(await fabric.get(`/routers?filter=${q(filter)}`), 400, 'INVALID_FILTER');
    }
    assertError(await fabric.get(`/routers?limit=x`), 400, 'COULD_NOT_VALIDATE');
  });
});

describe('GET /fabric/v1/routers/{id}', () => {
  it('reads one router as the list shows it', async () => {
    const d = await routerDetail(transit);
    const listed = (await routerList(`filter=${q(`id = "${transit}"`)}`)).data[0];
    assert.deepEqual(d, listed);
  });

  it('answers 404 for an unknown id', async () => {
    const res = await fabric.get('/routers/no-such-router');
    assertError(res, 404, 'NOT_FOUND');
    assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: 'router with id no-such-router not found' });
  });
});

describe('a connected router', () => {
  it('shows connected, with the version and link listeners it announced, and not connected once it leaves', async () => {
    const router = await enrolledRouter(tc, 'transit');
    const listeners = encode('ctrl.Listeners', {
      listeners: [{ address: 'tls:router-a.test:4022', protocol: 'tls', costTags: [], groups: ['default'] }],
    });
    const { conn } = await connectRouter(tc, router, routerHello(router.id, [[HelloHeader.Listeners, listeners]]));
    await eventually(async () => (await routerDetail(router.id)).connected === true, 'the router shows connected');
    const d = await routerDetail(router.id);
    assert.equal(typeof d.fingerprint, 'string', 'an enrolled router has its fingerprint');
    assert.deepEqual(d.versionInfo, { version: 'v2.0.0-pre3', revision: 'a0c6f0dd', buildDate: '2026-03-06T16:10:46Z', os: 'linux', arch: 'amd64' });
    assert.deepEqual(d.listenerAddresses, [{ address: 'tls:router-a.test:4022', protocol: 'tls' }]);
    assert.equal(d.interfaces, null);
    assert.deepEqual(await ids(`connected = true and id = "${router.id}"`), [router.id]);
    assert.deepEqual(await ids(`connected = false and id = "${router.id}"`), []);

    conn.close();
    await eventually(async () => (await routerDetail(router.id)).connected === false, 'the router shows disconnected');
    const after = await routerDetail(router.id);
    assert.equal(after.listenerAddresses, null);
    assert.ok(!('versionInfo' in after));
  });

  it('shows an edge router without link listeners with listenerAddresses null', async () => {
    const router = await enrolledRouter(tc, 'edge');
    const { conn } = await connectRouter(tc, router);
    await eventually(async () => (await routerDetail(router.id)).connected === true, 'the edge router shows connected');
    assert.equal((await routerDetail(router.id)).listenerAddresses, null);
    conn.close();
  });
});

describe('GET /fabric/v1/routers/{id}/terminators', () => {
  it('lists the router\'s terminators in the fabric terminatorDetail, filterable and paged', async () => {
    const service = await createRecord(tc.mgmt, '/services', { name: uniqueName('svc'), encryptionRequired: true });
    const first = await createRecord(tc.mgmt, '/terminators', { service, router: transit, binding: 'transport', address: 'tcp:a.test:1' });
    const second = await createRecord(tc.mgmt, '/terminators', { service, router: transit, binding: 'transport', address: 'tcp:b.test:2' });
    await createRecord(tc.mgmt, '/terminators', { service, router: edge, binding: 'transport', address: 'tcp:c.test:3' });
    const res = await fabric.get(`/routers/${transit}/terminators`);
    assert.equal(res.status, 200, res.text);
    assertFabricList('terminatorDetail', res.body);
    assert.deepEqual(res.body.data.map((t: { id: string }) => t.id).sort(), [first, second].sort());
    assert.ok(res.body.data.every((t: { routerId: string }) => t.routerId === transit));
    const filtered = await fabric.get(`/routers/${transit}/terminators?filter=${q('address = "tcp:b.test:2"')}`);
    assert.deepEqual(filtered.body.data.map((t: { id: string }) => t.id), [second]);
    const paged = await fabric.get(`/routers/${transit}/terminators?limit=1`);
    assert.equal(paged.body.data.length, 1);
    assert.equal(paged.body.meta.pagination.totalCount, 2);
    assertError(await fabric.get(`/routers/${transit}/terminators?filter=${q('nope = 1')}`), 400, 'INVALID_FILTER');
  });

  it('answers an empty page for a router that does not exist', async () => {
    const res = await fabric.get('/routers/no-such-router/terminators');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.data, []);
    assert.equal(res.body.meta.pagination.totalCount, 0);
  });
});
