/**
 * Fabric API terminators (`/fabric/v1/terminators`, `/terminators/{id}`): every terminator in the fabric
 * terminatorDetail (`instanceId`, `hostId`, references into the fabric API), upstream's terminator filter
 * fields, paging and sorting, bad filters and unknown ids.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpClient } from '../../support/client.ts';
import { createRecord } from '../../support/factories.ts';
import { assertError } from '../../support/assertions.ts';
import { assertFabricDetail, assertFabricList, TERMINATOR_PRECEDENCES } from '../../support/fabric-spec.ts';

const tc: TestController = await startTestController();
const fabric: HttpClient = createClient(`https://127.0.0.1:${tc.port}/fabric/v1`, tc.ca, { token: tc.adminToken });

const q = (filter: string) => encodeURIComponent(filter);

const serviceName = uniqueName('svc');
const service = await createRecord(tc.mgmt, '/services', { name: serviceName, encryptionRequired: true });
const routerName = uniqueName('tr');
const router = await createRecord(tc.mgmt, '/transit-routers', { name: routerName });
const first = await createRecord(tc.mgmt, '/terminators', {
  service, router, binding: 'transport', address: 'tcp:a.test:80', cost: 12, precedence: 'required', identity: 'inst-1', tags: { zone: 'a' },
});
const second = await createRecord(tc.mgmt, '/terminators', { service, router, binding: 'udp', address: 'udp:b.test:53' });

async function terminatorList(query: string): Promise<Record<string, any>> {
  const res = await fabric.get(`/terminators?${query}`);
  assert.equal(res.status, 200, res.text);
  assertFabricList('terminatorDetail', res.body);
  return res.body;
}

async function ids(filter: string): Promise<string[]> {
  return (await terminatorList(`filter=${q(`${filter} sort by address`)}&limit=500`)).data.map((t: { id: string }) => t.id);
}

describe('GET /fabric/v1/terminators', () => {
  it('lists terminators in the fabric read model', async () => {
    const body = await terminatorList(`filter=${q(`service = "${service}" sort by address`)}`);
    assert.deepEqual(body.data.map((t: { id: string }) => t.id), [first, second]);
    const t = body.data[0];
    assert.deepEqual(t._links, { self: { href: `./terminators/${first}` } });
    assert.equal(t.serviceId, service);
    assert.deepEqual(t.service, {
      _links: { self: { href: `./services/${service}` }, terminators: { href: `./services/${service}/terminators` } },
      entity: 'services', id: service, name: serviceName,
    });
    assert.equal(t.routerId, router);
    assert.deepEqual(t.router, {
      _links: { self: { href: `./routers/${router}` }, terminators: { href: `./routers/${router}/terminators` } },
      entity: 'routers', id: router, name: routerName,
    });
    assert.equal(t.binding, 'transport');
    assert.equal(t.address, 'tcp:a.test:80');
    assert.equal(t.instanceId, 'inst-1');
    assert.equal(t.hostId, '');
    assert.equal(t.cost, 12);
    assert.equal(t.dynamicCost, 0);
    assert.equal(t.precedence, 'required');
    assert.deepEqual(t.tags, { zone: 'a' });
    assert.ok(!('identity' in t), 'the management API\'s name for instanceId');
    for (const item of body.data) assert.ok(TERMINATOR_PRECEDENCES.includes(item.precedence));
    assert.equal(body.data[1].precedence, 'default');
    assert.equal(body.data[1].instanceId, '');
  });

  it('offers upstream\'s terminator filter fields, and filters on each', async () => {
    const body = await terminatorList('limit=1');
    for (const field of ['id', 'createdAt', 'updatedAt', 'tags', 'isSystem', 'binding', 'address', 'instanceId', 'hostId', 'sourceCtrl', 'service', 'router', 'service.name', 'router.name']) {
      assert.ok(body.meta.filterableFields.includes(field), field);
    }
    assert.deepEqual(await ids(`router = "${router}"`), [first, second]);
    assert.deepEqual(await ids(`service.name = "${serviceName}" and binding = "udp"`), [second]);
    assert.deepEqual(await ids(`router.name = "${routerName}" and address contains "a.test"`), [first]);
    assert.deepEqual(await ids(`service = "${service}" and instanceId = "inst-1"`), [first]);
    assert.deepEqual(await ids(`service = "${service}" and hostId = ""`), [first, second]);
    assert.deepEqual(await ids(`service = "${service}" and tags.zone = "a"`), [first]);
    for (const filter of ['identity = "inst-1"', 'precedence = "required"', 'address = ']) {
      assertError(await fabric.get(`/terminators?filter=${q(filter)}`), 400, 'INVALID_FILTER');
    }
  });

  it('sorts and pages', async () => {
    const page = await terminatorList(`filter=${q(`service = "${service}" sort by address desc`)}&limit=1`);
    assert.deepEqual(page.data.map((t: { id: string }) => t.id), [second]);
    assert.deepEqual(page.meta.pagination, { limit: 1, offset: 0, totalCount: 2 });
    const next = await terminatorList(`filter=${q(`service = "${service}" sort by address desc skip 1`)}`);
    assert.deepEqual(next.data.map((t: { id: string }) => t.id), [first]);
    assertError(await fabric.get('/terminators?sort=nope'), 400, 'INVALID_SORT_IDENTIFIER');
  });
});

describe('GET /fabric/v1/terminators/{id}', () => {
  it('reads one terminator as the list shows it', async () => {
    const res = await fabric.get(`/terminators/${first}`);
    assert.equal(res.status, 200, res.text);
    assertFabricDetail('terminatorDetail', res.body);
    const listed = (await terminatorList(`filter=${q(`id = "${first}"`)}`)).data[0];
    assert.deepEqual(res.body.data, listed);
  });

  it('answers 404 for an unknown id', async () => {
    const res = await fabric.get('/terminators/no-such-terminator');
    assertError(res, 404, 'NOT_FOUND');
    assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: 'terminator with id no-such-terminator not found' });
  });
});
