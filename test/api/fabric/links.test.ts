/**
 * Fabric API links (`/fabric/v1/links`, `/links/{id}`): the links a connected router reports (here a scripted
 * router sends its RouterLinks), in the fabric linkDetail (no base fields; router references; the initial
 * latency of 65 s on both ends until measured), latencies and costs from the routers' metrics, the link patch
 * (static cost, down) and its bad input, upstream's link filter fields, paging and sorting, bad filters,
 * unknown ids, a link taken down that stays down when its router reports it again (also after reconnecting)
 * until it is lifted, and links gone with their router or, when a process died holding it, at the next
 * controller start.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpClient } from '../../support/client.ts';
import { createRecord } from '../../support/factories.ts';
import { assertError } from '../../support/assertions.ts';
import { assertFabricDetail, assertFabricList } from '../../support/fabric-spec.ts';
import { connectRouter, enrolledRouter, eventually, type TestRouterConnection } from '../../support/test-router.ts';
import { message } from '../../../src/fabric/channel/message.ts';
import { CtrlContentType } from '../../../src/fabric/proto/ctrl.ts';
import { encode } from '../../../src/fabric/proto/index.ts';

const tc: TestController = await startTestController();
const fabric: HttpClient = createClient(`https://127.0.0.1:${tc.port}/fabric/v1`, tc.ca, { token: tc.adminToken });

/** Upstream renders `connections` null until the routers report connection state. */
const NULLS = { allowNullAt: ['/connections'] };

const q = (filter: string) => encodeURIComponent(filter);

/** Each end of a new link counts 65 s until its router has measured it; the cost adds both in milliseconds. */
const INITIAL_NS = 65_000_000_000;
const INITIAL_COST = 1 + 65_000 + 65_000;

function metricsMessage(sourceId: string, histograms: Record<string, number>) {
  const entries = Object.fromEntries(Object.entries(histograms).map(([name, mean]) => [name, { count: 5n, mean, min: 0n, max: 0n }]));
  return message(CtrlContentType.Metrics, encode('metrics.MetricsMessage', { sourceId, histograms: entries }));
}

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
      cost: INITIAL_COST,
      destLatency: INITIAL_NS,
      destRouter: routerRef(b, bName),
      down: false,
      id: l1,
      iteration: 1,
      protocol: 'tls',
      sourceLatency: INITIAL_NS,
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
    assert.deepEqual(await ids(`state = "Connected" and cost = ${INITIAL_COST} and staticCost >= 1`), [l1, l2]);
    assert.deepEqual(await ids(`sourceLatency = ${INITIAL_NS} and destLatency > 1 and id = "${l1}"`), [l1]);
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

  it('takes each end\'s latency from its router\'s metrics: latency plus queue time, the cost in whole milliseconds', async () => {
    conn.send(metricsMessage(dialer.id, {
      [`link.${l1}.latency`]: 2_500_000.7,
      [`link.${l1}.queue_time`]: 600_000,
      'link.unknown-link.latency': 9_000_000,
      'ctrl.latency': 4_000_000,
    }));
    await eventually(async () => (await fabric.get(`/links/${l1}`)).body.data.sourceLatency === 3_100_000, 'the source latency is measured');
    const link = (await fabric.get(`/links/${l1}`)).body.data;
    assert.equal(link.destLatency, INITIAL_NS, 'the other end has not measured it');
    assert.equal(link.cost, 1 + 3 + 65_000);
    assert.equal((await fabric.get(`/links/${l2}`)).body.data.cost, INITIAL_COST, 'a link without a histogram keeps its latency');
    // A histogram without samples (no heartbeat answered yet) measures nothing.
    conn.send(message(CtrlContentType.Metrics, encode('metrics.MetricsMessage', {
      sourceId: dialer.id,
      histograms: { [`link.${l2}.latency`]: { count: 0n, mean: 0 }, [`link.${l1}.latency`]: { count: 9n, mean: 3_100_000 } },
    })));
    conn.send(metricsMessage(dialer.id, { [`link.${l1}.latency`]: 3_200_000 }));
    await eventually(async () => (await fabric.get(`/links/${l1}`)).body.data.sourceLatency === 3_200_000, 'the next metrics are read');
    assert.equal((await fabric.get(`/links/${l2}`)).body.data.sourceLatency, INITIAL_NS);
    assert.deepEqual(await ids('sourceLatency < 5000000'), [l1]);
  });

  it('ignores metrics it can not read, and the channel stays up', async () => {
    conn.send(message(CtrlContentType.Metrics, Buffer.from([0x42, 0x7f, 0x01])));
    conn.send(metricsMessage(dialer.id, { [`link.${l1}.latency`]: 1_000_000 }));
    await eventually(async () => (await fabric.get(`/links/${l1}`)).body.data.sourceLatency === 1_000_000, 'later metrics still count');
    assert.equal((await fabric.get(`/links/${l1}`)).body.data.cost, 1 + 1 + 65_000);
  });

  it('lets an operator set a link\'s static cost and take it down; the cost follows', async () => {
    const patch = await fabric.patch(`/links/${l1}`, { staticCost: 40 });
    assert.equal(patch.status, 200, patch.text);
    assert.deepEqual(patch.body, { data: {}, meta: {} });
    let link = (await fabric.get(`/links/${l1}`)).body.data;
    assert.deepEqual([link.staticCost, link.cost, link.down], [40, 40 + 1 + 65_000, false]);
    assert.equal((await fabric.patch(`/links/${l1}`, { down: true, staticCost: null })).status, 200);
    link = (await fabric.get(`/links/${l1}`)).body.data;
    assert.deepEqual([link.staticCost, link.down], [40, true], 'null leaves a field as it is');
    assert.equal((await fabric.patch(`/links/${l1}`, { down: false, staticCost: 1 })).status, 200);
    link = (await fabric.get(`/links/${l1}`)).body.data;
    assert.deepEqual([link.staticCost, link.cost, link.down], [1, 1 + 1 + 65_000, false]);
  });

  it('refuses a bad link patch and changes nothing', async () => {
    const before = (await fabric.get(`/links/${l1}`)).body.data;
    for (const body of [{ staticCost: -1 }, { staticCost: 2 ** 31 }]) {
      const res = await fabric.patch(`/links/${l1}`, body);
      assertError(res, 400, 'COULD_NOT_VALIDATE');
      assert.equal(res.body.error.cause.field, 'staticCost', JSON.stringify(body));
    }
    // Values of the wrong type fail to decode, as in upstream's Go model.
    for (const body of [{ staticCost: 1.5 }, { staticCost: 'high' }, { down: 'yes' }]) {
      const res = await fabric.patch(`/links/${l1}`, body);
      assertError(res, 400, 'COULD_NOT_PARSE_BODY');
      assert.match(res.body.error.cause.message, new RegExp(`LinkPatch\\.${Object.keys(body)[0]}`), JSON.stringify(body));
    }
    assertError(await fabric.patch('/links/no-such-link', { staticCost: 5 }), 404, 'NOT_FOUND');
    assert.deepEqual((await fabric.get(`/links/${l1}`)).body.data, before);
  });

  it('drops a router\'s links when it disconnects', async () => {
    conn.close();
    await eventually(async () => (await linkList()).meta.pagination.totalCount === 0, 'the links are gone');
    assertError(await fabric.get(`/links/${l1}`), 404, 'NOT_FOUND');
  });
});

describe('a link an operator took down', async () => {
  const dialer = await enrolledRouter(tc, 'transit');
  const peer = await createRecord(tc.mgmt, '/transit-routers', { name: uniqueName('tr-peer') });
  const linkId = `${uniqueName('link')}-held`;

  function report(conn: TestRouterConnection, iteration: number): void {
    const links = [{ id: linkId, destRouterId: peer, linkProtocol: 'tls', linkCostTags: [], dialAddress: 'tls:peer.test:4022', iteration }];
    conn.send(message(CtrlContentType.RouterLinks, encode('ctrl.RouterLinks', { links, fullRefresh: true })));
  }

  async function reported(iteration: number): Promise<Record<string, any>> {
    await eventually(async () => (await fabric.get(`/links/${linkId}`)).body.data?.iteration === iteration, `iteration ${iteration} is reported`);
    return (await fabric.get(`/links/${linkId}`)).body.data;
  }

  it('stays down when its router reports it again or reconnects and re-announces it, until the operator lifts it', async () => {
    let { conn } = await connectRouter(tc, dialer);
    report(conn, 1);
    assert.equal((await reported(1)).down, false);
    assert.equal((await fabric.patch(`/links/${linkId}`, { down: true })).status, 200);
    assert.equal((await fabric.get(`/links/${linkId}`)).body.data.down, true);

    // The router reports it again (a re-dial keeps the id with the next iteration).
    report(conn, 2);
    assert.equal((await reported(2)).down, true, 'a report does not lift it');

    // The router reconnects: its links went with the connection, and it re-announces them.
    conn.close();
    await eventually(async () => (await fabric.get(`/links/${linkId}`)).status === 404, 'the link goes with the connection');
    ({ conn } = await connectRouter(tc, dialer));
    report(conn, 3);
    assert.equal((await reported(3)).down, true, 'still down after the reconnect');

    // Lifted: down until then, up from then on, also when reported again.
    assert.equal((await fabric.patch(`/links/${linkId}`, { down: false })).status, 200);
    assert.equal((await fabric.get(`/links/${linkId}`)).body.data.down, false);
    conn.close();
    await eventually(async () => (await fabric.get(`/links/${linkId}`)).status === 404, 'the link goes with the connection');
    ({ conn } = await connectRouter(tc, dialer));
    report(conn, 4);
    assert.equal((await reported(4)).down, false, 'a lifted link comes back up');
    conn.close();
    await eventually(async () => (await fabric.get(`/links/${linkId}`)).status === 404, 'the link goes with the connection');
  });
});

describe('links left behind by a process that died', () => {
  it('are gone after a controller start', async () => {
    const a = await createRecord(tc.mgmt, '/transit-routers', { name: uniqueName('tr-a') });
    const b = await createRecord(tc.mgmt, '/transit-routers', { name: uniqueName('tr-b') });
    // What a crashed process would have left in the store (no router connection ends it).
    const at = new Date().toISOString();
    await tc.controller.store.write((tx) =>
      tx.run("INSERT INTO links (id, src_router_id, dst_router_id, protocol, owner, created_at, updated_at) VALUES (?, ?, ?, 'tls', 'gone-process', ?, ?)", [
        'stale-link',
        a,
        b,
        at,
        at,
      ]),
    );
    assert.equal((await fabric.get('/links/stale-link')).status, 200);
    await tc.restart();
    assertError(await fabric.get('/links/stale-link'), 404, 'NOT_FOUND');
    assert.equal((await linkList()).meta.pagination.totalCount, 0);
  });
});
