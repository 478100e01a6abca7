/**
 * Fabric API services (`/fabric/v1/services`, `/services/{id}`, `/services/{id}/terminators`): every service in
 * the fabric serviceDetail (name, terminator strategy, idle timeout; none of the edge fields), upstream's base
 * service filter fields, paging and sorting, bad filters, unknown ids, and a service's terminators.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpClient } from '../../support/client.ts';
import { createRecord } from '../../support/factories.ts';
import { assertError } from '../../support/assertions.ts';
import { assertFabricDetail, assertFabricList } from '../../support/fabric-spec.ts';

const tc: TestController = await startTestController();
const fabric: HttpClient = createClient(`https://127.0.0.1:${tc.port}/fabric/v1`, tc.ca, { token: tc.adminToken });

const q = (filter: string) => encodeURIComponent(filter);

async function serviceList(query: string): Promise<Record<string, any>> {
  const res = await fabric.get(`/services?${query}`);
  assert.equal(res.status, 200, res.text);
  assertFabricList('serviceDetail', res.body);
  return res.body;
}

const prefix = uniqueName('fs');
const weighted = await createRecord(tc.mgmt, '/services', {
  name: `${prefix}-a`, encryptionRequired: true, terminatorStrategy: 'weighted', maxIdleTimeMillis: 5000, roleAttributes: ['web'], tags: { tier: 'gold' },
});
const plain = await createRecord(tc.mgmt, '/services', { name: `${prefix}-b`, encryptionRequired: false });
const mine = `name contains "${prefix}"`;

async function ids(filter: string): Promise<string[]> {
  return (await serviceList(`filter=${q(`${filter} sort by name`)}&limit=500`)).data.map((s: { id: string }) => s.id);
}

describe('GET /fabric/v1/services', () => {
  it('lists services with the fabric fields only', async () => {
    const body = await serviceList(`filter=${q(`${mine} sort by name`)}`);
    assert.deepEqual(body.data.map((s: { id: string }) => s.id), [weighted, plain]);
    const [a, b] = body.data;
    assert.deepEqual(Object.keys(a).sort(), ['_links', 'createdAt', 'id', 'maxIdleTimeMillis', 'name', 'tags', 'terminatorStrategy', 'updatedAt']);
    assert.deepEqual(a._links, { self: { href: `./services/${weighted}` }, terminators: { href: `./services/${weighted}/terminators` } });
    assert.equal(a.name, `${prefix}-a`);
    assert.equal(a.terminatorStrategy, 'weighted');
    assert.equal(a.maxIdleTimeMillis, 5000);
    assert.deepEqual(a.tags, { tier: 'gold' });
    assert.equal(b.terminatorStrategy, 'smartrouting', 'the default strategy');
    assert.equal(b.maxIdleTimeMillis, 0);
    assert.deepEqual(b.tags, {});
  });

  it('offers the base service store\'s filter fields only', async () => {
    const body = await serviceList('limit=1');
    assert.deepEqual([...body.meta.filterableFields].sort(), ['createdAt', 'id', 'isSystem', 'name', 'tags', 'terminatorStrategy', 'updatedAt']);
    assert.deepEqual(await ids(`${mine} and terminatorStrategy = "weighted"`), [weighted]);
    assert.deepEqual(await ids(`${mine} and tags.tier = "gold"`), [weighted]);
    assert.deepEqual(await ids(`name = "${prefix}-b"`), [plain]);
    assert.deepEqual(await ids(`${mine} and createdAt <= datetime(2999-01-01T00:00:00Z)`), [weighted, plain]);
    // Edge fields are the management API's.
    for (const filter of ['anyOf(roleAttributes) = "web"', 'encryptionRequired = true', 'maxIdleTimeMillis > 0', 'isEmpty(configs)', 'name = ']) {
      assertError(await fabric.get(`/services?filter=${q(filter)}`), 400, 'INVALID_FILTER');
    }
  });

  it('sorts and pages', async () => {
    const page = await serviceList(`filter=${q(`${mine} sort by name desc`)}&limit=1`);
    assert.deepEqual(page.data.map((s: { id: string }) => s.id), [plain]);
    assert.deepEqual(page.meta.pagination, { limit: 1, offset: 0, totalCount: 2 });
    const next = await serviceList(`filter=${q(`${mine} sort by name desc`)}&limit=1&offset=1`);
    assert.deepEqual(next.data.map((s: { id: string }) => s.id), [weighted]);
    const all = await serviceList(`filter=${q(`${mine} limit none`)}`);
    assert.equal(all.data.length, 2);
    assert.equal(all.meta.pagination.limit, 9223372036854775807);
  });
});

describe('GET /fabric/v1/services/{id}', () => {
  it('reads one service as the list shows it', async () => {
    const res = await fabric.get(`/services/${weighted}`);
    assert.equal(res.status, 200, res.text);
    assertFabricDetail('serviceDetail', res.body);
    const listed = (await serviceList(`filter=${q(`id = "${weighted}"`)}`)).data[0];
    assert.deepEqual(res.body.data, listed);
  });

  it('answers 404 for an unknown id', async () => {
    const res = await fabric.get('/services/no-such-service');
    assertError(res, 404, 'NOT_FOUND');
    assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: 'service with id no-such-service not found' });
  });
});

describe('GET /fabric/v1/services/{id}/terminators', () => {
  it('lists the service\'s terminators, filterable and paged', async () => {
    const router = await createRecord(tc.mgmt, '/transit-routers', { name: uniqueName('tr') });
    const first = await createRecord(tc.mgmt, '/terminators', { service: weighted, router, binding: 'transport', address: 'tcp:a.test:1' });
    const second = await createRecord(tc.mgmt, '/terminators', { service: weighted, router, binding: 'udp', address: 'udp:b.test:2' });
    await createRecord(tc.mgmt, '/terminators', { service: plain, router, binding: 'transport', address: 'tcp:c.test:3' });
    const res = await fabric.get(`/services/${weighted}/terminators`);
    assert.equal(res.status, 200, res.text);
    assertFabricList('terminatorDetail', res.body);
    assert.deepEqual(res.body.data.map((t: { id: string }) => t.id).sort(), [first, second].sort());
    assert.ok(res.body.data.every((t: { serviceId: string }) => t.serviceId === weighted));
    const udp = await fabric.get(`/services/${weighted}/terminators?filter=${q('binding = "udp"')}`);
    assert.deepEqual(udp.body.data.map((t: { id: string }) => t.id), [second]);
    const paged = await fabric.get(`/services/${weighted}/terminators?limit=1&offset=1`);
    assert.equal(paged.body.data.length, 1);
    assert.deepEqual(paged.body.meta.pagination, { limit: 1, offset: 1, totalCount: 2 });
    assertError(await fabric.get(`/services/${weighted}/terminators?filter=${q('(')}`), 400, 'INVALID_FILTER');
  });

  it('answers an empty page for a service that does not exist', async () => {
    const res = await fabric.get('/services/no-such-service/terminators');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.data, []);
    assert.equal(res.body.meta.pagination.totalCount, 0);
  });
});
