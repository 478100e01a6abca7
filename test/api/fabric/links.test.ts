/**
 * Fabric API links (`/fabric/v1/links`, `/links/{id}`): the links a connected router reports (here a scripted
 * router sends its RouterLinks), in the fabric linkDetail (no base fields; router references; latencies 0
 * while unmeasured), upstream's link filter fields, paging and sorting, bad filters, unknown ids, and links
 * gone with their router or, when a process died holding it, at the next controller start.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpClient } from '../../support/client.ts';
import { createRecord } from '../../support/factories.ts';
import { assertError } from '../../support/assertions.ts';
import { assertFabricDetail, assertFabricList } from '../../support/fabric-spec.ts';
import { connectRouter, enrolledRouter, eventually } from '../../support/test-router.ts';
import { message } from '../../../src/fabric/channel/message.ts';
import { CtrlContentType } from '../../../src/fabric/proto/ctrl.ts';
import { encode } from '../../../src/fabric/proto/index.ts';

const tc: TestController = await startTestController();
const fabric: HttpClient = createClient(`https://127.0.0.1:${tc.port}/fabric/v1`, tc.ca, { token: tc.adminToken });

/** Upstream renders `connections` null until the routers report connection state. */
const NULLS = { allowNullAt: ['/connections'] };

const q = (filter: string) => encodeURIComponent(filter);

async function linkList(query = ''): Promise<Record<string, any>> {
  const res = await fabric.get(`/links${query ? `?${query}` : ''}`);
  assert.equal(res.status, 200, res.text);
  assertFabricList('linkDetail', res.body, NULLS);
  return res.body;
}

async function ids(filter: string): Promise<string[]> {
  return (await linkList(`filter=${q(`${filter} sort by id`)}&limit=500`)).data.map((l: { id: string }) => l.id);
}

function routerRef(id: string, name: string) {
  return { _links: { self: { href: `./routers/${id}` }, terminators: { href: `./routers/${id}/terminators` } }, entity: 'routers', id, name };
}

describe('GET /fabric/v1/links with no links', () => {
  it('answers an empty page with the link filter fields', async () => {
    const body = await linkList();
    assert.deepEqual(body.data, []);
    assert.deepEqual(body.meta.pagination, { limit: 10, offset: 0, totalCount: 0 });
    assert.deepEqual([...body.meta.filterableFields].sort(), [
      'cost', 'destLatency', 'destRouter', 'dialAddress', 'id', 'iteration', 'protocol', 'sourceLatency', 'sourceRouter', 'state', 'staticCost',
    ]);
  });
});

describe('links reported by a router', async () => {
  const dialer = await enrolledRouter(tc, 'transit');
  const bName = uniqueName('tr-b');
  const cName = uniqueName('tr-c');
  const b = await createRecord(tc.mgmt, '/transit-routers', { name: bName });
  const c = await createRecord(tc.mgmt, '/transit-routers', { name: cName });
  const { conn } = await connectRouter(tc, dialer);
  const [l1, l2] = [`${uniqueName('link')}-1`, `${uniqueName('link')}-2`];
  conn.send(
    message(
      CtrlContentType.RouterLinks,
      encode('ctrl.RouterLinks', {
        links: [
          { id: l1, destRouterId: b, linkProtocol: 'tls', linkCostTags: [], dialAddress: 'tls:b.test:4022', iteration: 1 },
          { id: l2, destRouterId: c, linkProtocol: 'dtls', linkCostTags: [], dialAddress: 'dtls:c.test:4023', iteration: 3 },
        ],
        fullRefresh: true,
      }),
    ),
  );
  await eventually(async () => (await linkList()).meta.pagination.totalCount === 2, 'the links are listed');

  it('lists each link with references to its routers and upstream\'s fields', async () => {
    const body = await linkList(`filter=${q('true sort by id')}`);
    assert.deepEqual(body.data.map((l: { id: string }) => l.id), [l1, l2]);
    assert.deepEqual(body.data[0], {
      connections: null,
      cost: 1,
      destLatency: 0,
      destRouter: routerRef(b, bName),
      down: false,
      id: l1,
      iteration: 1,
      protocol: 'tls',
      sourceLatency: 0,
      sourceRouter: routerRef(dialer.id, dialer.name),
      state: 'Connected',
      staticCost: 1,
    });
    assert.equal(body.data[1].protocol, 'dtls');
    assert.equal(body.data[1].iteration, 3);
    assert.deepEqual(body.data[1].destRouter, routerRef(c, cName));
  });

  it('filters on each of upstream\'s link fields', async () => {
    assert.deepEqual(await ids(`sourceRouter = "${dialer.id}"`), [l1, l2]);
    assert.deepEqual(await ids(`destRouter = "${c}"`), [l2]);
    assert.deepEqual(await ids('protocol = "dtls"'), [l2]);
    assert.deepEqual(await ids('dialAddress contains "b.test"'), [l1]);
    assert.deepEqual(await ids('iteration > 1'), [l2]);
    assert.deepEqual(await ids('state = "Connected" and cost = 1 and staticCost >= 1'), [l1, l2]);
    assert.deepEqual(await ids(`sourceLatency = 0 and destLatency < 1 and id = "${l1}"`), [l1]);
    for (const filter of ['down = false', 'createdAt > datetime(2020-01-01T00:00:00Z)', 'tags.x = "y"', 'src_router_id = "x"', 'protocol =']) {
      assertError(await fabric.get(`/links?filter=${q(filter)}`), 400, 'INVALID_FILTER');
    }
  });

  it('sorts and pages', async () => {
    const page = await linkList(`filter=${q('true sort by iteration desc')}&limit=1`);
    assert.deepEqual(page.data.map((l: { id: string }) => l.id), [l2]);
    assert.deepEqual(page.meta.pagination, { limit: 1, offset: 0, totalCount: 2 });
    const next = await linkList(`filter=${q('true sort by iteration desc')}&limit=1&offset=1`);
    assert.deepEqual(next.data.map((l: { id: string }) => l.id), [l1]);
  });

  it('reads one link as the list shows it, and answers 404 for an unknown id', async () => {
    const res = await fabric.get(`/links/${l2}`);
    assert.equal(res.status, 200, res.text);
    assertFabricDetail('linkDetail', res.body, NULLS);
    assert.deepEqual(res.body.data, (await linkList(`filter=${q(`id = "${l2}"`)}`)).data[0]);
    const missing = await fabric.get('/links/no-such-link');
    assertError(missing, 404, 'NOT_FOUND');
    assert.deepEqual(missing.body.error.cause, { code: 'UNHANDLED', message: 'link with id no-such-link not found' });
  });

  it('drops a router\'s links when it disconnects', async () => {
    conn.close();
    await eventually(async () => (await linkList()).meta.pagination.totalCount === 0, 'the links are gone');
    assertError(await fabric.get(`/links/${l1}`), 404, 'NOT_FOUND');
  });
});

describe('links left behind by a process that died', () => {
  it('are gone after a controller start', async () => {
    const a = await createRecord(tc.mgmt, '/transit-routers', { name: uniqueName('tr-a') });
    const b = await createRecord(tc.mgmt, '/transit-routers', { name: uniqueName('tr-b') });
    // What a crashed process would have left in the store (no router connection ends it).
    const at = new Date().toISOString();
    tc.controller.db
      .prepare("INSERT INTO links (id, src_router_id, dst_router_id, protocol, owner, created_at, updated_at) VALUES (?, ?, ?, 'tls', 'gone-process', ?, ?)")
      .run('stale-link', a, b, at, at);
    assert.equal((await fabric.get('/links/stale-link')).status, 200);
    await tc.restart();
    assertError(await fabric.get('/links/stale-link'), 404, 'NOT_FOUND');
    assert.equal((await linkList()).meta.pagination.totalCount, 0);
  });
});
