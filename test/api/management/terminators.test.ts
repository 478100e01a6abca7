/**
 * Management terminator operations: create (binding and precedence defaults, service and router must
 * exist), detail, list (filter incl. `service.name`/`router.name`, sort, paging), put, patch (service
 * fixed), delete, a service's terminators, cascades from service and router deletes, unknown ids and
 * permissions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serviceRef } from '../../support/refs.ts';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import type { HttpClient, HttpResponse } from '../../support/client.ts';
import { createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertEmptyList, assertDecodeError, TIMESTAMP, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();

function q(filter: string): string {
  return encodeURIComponent(filter);
}

async function createService(name = uniqueName('svc')): Promise<string> {
  const res = await tc.mgmt.post('/services', { name, encryptionRequired: true });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

async function createEdgeRouter(name = uniqueName('er')): Promise<string> {
  const res = await tc.mgmt.post('/edge-routers', { name });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

async function createTransitRouter(name = uniqueName('tr')): Promise<string> {
  const res = await tc.mgmt.post('/transit-routers', { name });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

const shared = { service: '', router: '' };
async function fixtures(): Promise<{ service: string; router: string }> {
  if (!shared.service) {
    shared.service = await createService();
    shared.router = await createEdgeRouter();
  }
  return shared;
}

async function createTerminator(body: Record<string, unknown> = {}): Promise<string> {
  const f = await fixtures();
  const res = await tc.mgmt.post('/terminators', { service: f.service, router: f.router, binding: 'transport', address: 'tcp:host:80', ...body });
  assert.equal(res.status, 201, res.text);
  assertMatchesReference('management', 'POST', '/terminators', 201, res.body);
  return res.body.data.id as string;
}

async function detail(id: string, client: HttpClient = tc.mgmt): Promise<Record<string, any>> {
  const res = await client.get(`/terminators/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/terminators/{id}', 200, res.body);
  return res.body.data;
}

async function list(path: string, query: string): Promise<HttpResponse> {
  const res = await tc.mgmt.get(`${path}?${query}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', path.startsWith('/services/') ? '/services/{id}/terminators' : path, 200, res.body);
  return res;
}

async function terminatorCount(): Promise<number> {
  return (await tc.mgmt.get('/terminators?limit=1')).body.meta.pagination.totalCount as number;
}

function assertTerminatorNotFound(res: HttpResponse, id: string): void {
  assertError(res, 404, 'NOT_FOUND');
  assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: `terminator with id ${id} not found` });
}

describe('POST /terminators', () => {
  it('creates a terminator with a base62 id and reads back its read model', async () => {
    const serviceName = uniqueName('svc');
    const routerName = uniqueName('er');
    const service = await createService(serviceName);
    const router = await createEdgeRouter(routerName);
    const res = await tc.mgmt.post('/terminators', {
      service, router, binding: 'edge', address: 'hosted:abc', cost: 42, precedence: 'required', identity: 'inst-1',
      identitySecret: Buffer.from('secret').toString('base64'), tags: { k: 'v' },
    });
    assert.equal(res.status, 201, res.text);
    const id = res.body.data.id;
    assert.match(id, /^[0-9A-Za-z]{16,22}$/);
    assert.deepEqual(res.body, { data: { id, _links: { self: { href: `./terminators/${id}` } } }, meta: {} });
    const d = await detail(id);
    assert.match(d.createdAt, TIMESTAMP);
    assert.deepEqual(d._links, { self: { href: `./terminators/${id}` } });
    assert.equal(d.serviceId, service);
    assert.deepEqual(d.service, serviceRef(service, serviceName));
    assert.equal(d.routerId, router);
    assert.deepEqual(d.router, { _links: { self: { href: `./transit-routers/${router}` } }, entity: 'transit-routers', id: router, name: routerName });
    assert.equal(d.binding, 'edge');
    assert.equal(d.address, 'hosted:abc');
    assert.equal(d.identity, 'inst-1');
    assert.equal(d.cost, 42);
    assert.equal(d.precedence, 'required');
    assert.equal(d.dynamicCost, 0);
    assert.deepEqual(d.tags, { k: 'v' });
    assert.equal('identitySecret' in d, false);
  });

  it('defaults cost, precedence and identity; refuses an unknown precedence; empty binding is derived', async () => {
    for (const precedence of ['urgent', 'Required', '']) {
      const res = await tc.mgmt.post('/terminators', { service: await createService(), router: await createTransitRouter(), binding: 'transport', address: 'tcp:x:1', precedence });
      assertFieldError(res, 'precedence');
      assert.match(res.body.error.cause.reason, /should be one of \[default required failed\]/);
    }
    const d1 = await detail(await createTerminator({}));
    assert.equal(d1.cost, 0);
    assert.equal(d1.precedence, 'default');
    assert.equal(d1.identity, '');
    assert.equal((await detail(await createTerminator({ binding: '', address: 'udp:1.2.3.4:53' }))).binding, 'udp');
    assert.equal((await detail(await createTerminator({ binding: '', address: 'tcp:1.2.3.4:53' }))).binding, 'transport');
    assert.equal((await detail(await createTerminator({ router: await createTransitRouter() }))).router.entity, 'transit-routers');
  });

  it('answers 404 when the service or router does not exist, creating nothing', async () => {
    const f = await fixtures();
    const before = await terminatorCount();
    const noService = await tc.mgmt.post('/terminators', { service: 'nope', router: f.router, binding: 'transport', address: 'a' });
    assertError(noService, 404, 'NOT_FOUND');
    assert.deepEqual(noService.body.error.cause, { code: 'UNHANDLED', message: 'service with id nope not found' });
    const noRouter = await tc.mgmt.post('/terminators', { service: f.service, router: 'nope', binding: 'transport', address: 'a' });
    assertError(noRouter, 404, 'NOT_FOUND');
    assert.deepEqual(noRouter.body.error.cause, { code: 'UNHANDLED', message: 'router with id nope not found' });
    assert.equal(await terminatorCount(), before);
  });

  it('rejects invalid bodies with COULD_NOT_VALIDATE naming the field', async () => {
    const f = await fixtures();
    const ok = { service: f.service, router: f.router, binding: 'transport', address: 'tcp:a:1' };
    const drop = (k: keyof typeof ok) => Object.fromEntries(Object.entries(ok).filter(([key]) => key !== k));
    const cases: Array<[Record<string, unknown>, string | RegExp]> = [
      [drop('service'), 'service'],
      [drop('router'), 'router'],
      [drop('address'), 'address'],
      [drop('binding'), 'binding'],
      [{ ...ok, cost: 65536 }, 'cost'],
      [{ ...ok, cost: -1 }, 'cost'],
      [{ ...ok, identitySecret: '%%%not base64%%%' }, 'identitySecret'],
      [{ ...ok, tags: { a: [1] } }, /^tags/],
    ];
    assertDecodeError(await tc.mgmt.post('/terminators', { ...ok, address: 5 }), 'address');
    assertDecodeError(await tc.mgmt.post('/terminators', { ...ok, cost: 'x' }), 'cost');
    for (const [body, field] of cases) {
      const before = await terminatorCount();
      const res = await tc.mgmt.post('/terminators', body);
      assertFieldError(res, field);
      assertMatchesReference('management', 'POST', '/terminators', 400, res.body);
      assert.equal(await terminatorCount(), before, JSON.stringify(body));
    }
  });
});

describe('GET /terminators', () => {
  it('filters (incl. service.name and router.name), sorts and pages', async () => {
    const svcName = uniqueName('lsvc');
    const service = await createService(svcName);
    const routerName = uniqueName('lrt');
    const router = await createEdgeRouter(routerName);
    const f = await fixtures();
    const ids = [];
    for (const cost of [3, 1, 2]) ids.push(await createTerminator({ service, router, cost, address: `tcp:list:${cost}` }));
    const other = await createTerminator({ service: f.service, address: 'tcp:elsewhere:1' });
    const byService = await list('/terminators', `filter=${q(`service.name = "${svcName}"`)}&sort=${q('address desc')}`);
    assert.deepEqual(byService.body.data.map((t: { address: string }) => t.address), ['tcp:list:3', 'tcp:list:2', 'tcp:list:1']);
    for (const field of ['id', 'binding', 'address', 'instanceId', 'hostId', 'service', 'router', 'service.name', 'router.name']) {
      assert.ok(byService.body.meta.filterableFields.includes(field), field);
    }
    const byRouter = await list('/terminators', `filter=${q(`router.name = "${routerName}" and address contains "list"`)}&limit=2&offset=2`);
    assert.deepEqual(byRouter.body.meta.pagination, { limit: 2, offset: 2, totalCount: 3 });
    const byId = await list('/terminators', `filter=${q(`service = "${f.service}" and id = "${other}"`)}`);
    assert.deepEqual(byId.body.data.map((t: { id: string }) => t.id), [other]);
    assertError(await tc.mgmt.get(`/terminators?filter=${q('name = "x"')}`), 400, 'INVALID_FILTER');
  });
});

describe('GET /terminators/{id}', () => {
  it('answers 404 for an unknown id', async () => {
    assertTerminatorNotFound(await tc.mgmt.get('/terminators/nope'), 'nope');
  });
});

describe('PUT and PATCH /terminators/{id}', () => {
  it('patch changes only supplied fields; the service can not be changed', async () => {
    const id = await createTerminator({ cost: 5, precedence: 'failed', tags: { a: 'b' } });
    const before = await detail(id);
    const otherService = await createService();
    const otherRouter = await createTransitRouter();
    assertEmptyOk(await tc.mgmt.patch(`/terminators/${id}`, { service: otherService, router: otherRouter, cost: 9 }));
    const d = await detail(id);
    assert.equal(d.serviceId, before.serviceId, 'service stays');
    assert.equal(d.routerId, otherRouter);
    assert.equal(d.cost, 9);
    assert.equal(d.precedence, 'failed');
    assert.equal(d.address, before.address);
    assert.deepEqual(d.tags, { a: 'b' });
    assertFieldError(await tc.mgmt.patch(`/terminators/${id}`, { precedence: 'bogus' }), 'precedence');
    assertEmptyOk(await tc.mgmt.patch(`/terminators/${id}`, { precedence: 'default', binding: '', address: 'udp:x:1' }));
    const p = await detail(id);
    assert.equal(p.precedence, 'default');
    assert.equal(p.binding, 'udp');
  });

  it('put replaces every updatable field; omitted ones reset', async () => {
    const f = await fixtures();
    const id = await createTerminator({ cost: 5, precedence: 'required', tags: { a: 'b' }, identity: 'keep-me' });
    assertEmptyOk(await tc.mgmt.put(`/terminators/${id}`, { service: f.service, router: f.router, binding: 'tunnel', address: 'tcp:new:1' }));
    const d = await detail(id);
    assert.equal(d.binding, 'tunnel');
    assert.equal(d.address, 'tcp:new:1');
    assert.equal(d.cost, 0);
    assert.equal(d.precedence, 'default');
    assert.deepEqual(d.tags, {});
    assert.equal(d.identity, 'keep-me', 'the instance id is set at create only');
  });

  it('validate, check the router and answer 404 for unknown ids', async () => {
    const f = await fixtures();
    const id = await createTerminator();
    const before = await detail(id);
    assertFieldError(await tc.mgmt.put(`/terminators/${id}`, { service: f.service, router: f.router, binding: 'x' }), 'address');
    assertFieldError(await tc.mgmt.patch(`/terminators/${id}`, { cost: 70000 }), 'cost');
    const noRouter = await tc.mgmt.patch(`/terminators/${id}`, { router: 'nope' });
    assertError(noRouter, 404, 'NOT_FOUND');
    assert.deepEqual(noRouter.body.error.cause, { code: 'UNHANDLED', message: 'router with id nope not found' });
    assert.deepEqual(await detail(id), before);
    assertTerminatorNotFound(await tc.mgmt.patch('/terminators/nope', { cost: 1 }), 'nope');
    assertTerminatorNotFound(await tc.mgmt.put('/terminators/nope', { service: f.service, router: f.router, binding: 'b', address: 'a' }), 'nope');
  });
});

describe('DELETE /terminators/{id}', () => {
  it('deletes the terminator and answers 404 afterwards', async () => {
    const id = await createTerminator();
    assertEmptyOk(await tc.mgmt.delete(`/terminators/${id}`));
    assertTerminatorNotFound(await tc.mgmt.get(`/terminators/${id}`), id);
    assertTerminatorNotFound(await tc.mgmt.delete(`/terminators/${id}`), id);
  });

  it('goes with its service, its edge router or its transit router', async () => {
    const service = await createService();
    const edge = await createEdgeRouter();
    const transit = await createTransitRouter();
    const f = await fixtures();
    const viaService = await createTerminator({ service });
    const viaEdge = await createTerminator({ router: edge });
    const viaTransit = await createTerminator({ router: transit });
    assertEmptyOk(await tc.mgmt.delete(`/services/${service}`));
    assertTerminatorNotFound(await tc.mgmt.get(`/terminators/${viaService}`), viaService);
    assertEmptyOk(await tc.mgmt.delete(`/edge-routers/${edge}`));
    assertTerminatorNotFound(await tc.mgmt.get(`/terminators/${viaEdge}`), viaEdge);
    assertEmptyOk(await tc.mgmt.delete(`/routers/${transit}`));
    assertTerminatorNotFound(await tc.mgmt.get(`/terminators/${viaTransit}`), viaTransit);
    assert.equal((await tc.mgmt.get(`/services/${f.service}`)).status, 200);
  });
});

describe('GET /services/{id}/terminators', () => {
  it('lists the terminators of one service, filterable and paged; 404 for an unknown service', async () => {
    const service = await createService();
    const a = await createTerminator({ service, address: 'tcp:a:1' });
    const b = await createTerminator({ service, address: 'tcp:b:1' });
    await createTerminator();
    const res = await list(`/services/${service}/terminators`, `sort=address`);
    assert.deepEqual(res.body.data.map((t: { id: string }) => t.id), [a, b]);
    const filtered = await list(`/services/${service}/terminators`, `filter=${q('address = "tcp:b:1"')}`);
    assert.deepEqual(filtered.body.data.map((t: { id: string }) => t.id), [b]);
    const paged = await list(`/services/${service}/terminators`, 'limit=1&offset=1&sort=address');
    assert.deepEqual(paged.body.meta.pagination, { limit: 1, offset: 1, totalCount: 2 });
    const empty = await list(`/services/${await createService()}/terminators`, '');
    assert.deepEqual(empty.body.data, []);
    assertEmptyList(await tc.mgmt.get('/services/nope/terminators'));
  });
});

describe('terminator operations: authorization', () => {
  it('answers a non-admin identity with 401 UNAUTHORIZED and changes nothing', async () => {
    const f = await fixtures();
    const user = await createUserWithPassword(tc);
    const asUser = tc.mgmt.as({ token: user.token });
    const id = await createTerminator();
    const before = await detail(id);
    const ops: Array<[string, string, unknown?]> = [
      ['GET', '/terminators'],
      ['POST', '/terminators', { service: f.service, router: f.router, binding: 'b', address: 'a' }],
      ['GET', `/terminators/${id}`],
      ['PUT', `/terminators/${id}`, { service: f.service, router: f.router, binding: 'b', address: 'a' }],
      ['PATCH', `/terminators/${id}`, { cost: 3 }],
      ['DELETE', `/terminators/${id}`],
    ];
    for (const [method, path, body] of ops) assertError(await asUser.request(method, path, body === undefined ? {} : { body }), 401, 'UNAUTHORIZED');
    assert.deepEqual(await detail(id), before);
  });

  it('lets terminator.read read but not write', async () => {
    const reader = await createUserWithPassword(tc, { permissions: ['terminator.read'] });
    const asReader = tc.mgmt.as({ token: reader.token });
    const id = await createTerminator();
    await detail(id, asReader);
    assert.equal((await asReader.get('/terminators')).status, 200);
    assertError(await asReader.delete(`/terminators/${id}`), 401, 'UNAUTHORIZED');
    assertError(await asReader.patch(`/terminators/${id}`, { cost: 1 }), 401, 'UNAUTHORIZED');
  });
});
