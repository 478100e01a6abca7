/**
 * Management router operations under `/routers` and its alias `/transit-routers`: create (with its trott
 * enrollment), detail, list (every router, edge routers included), put and patch (name, tags and listeners
 * only; edge routers refused with 409), delete and its cascades, unknown ids and permissions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import type { HttpClient, HttpResponse } from '../../support/client.ts';
import { createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertDecodeError, TIMESTAMP, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';
import { verifyJwt } from '../../../src/pki/enrollment-jwt.ts';

const tc: TestController = await startTestController();

/** Upstream renders `interfaces` as null and `fingerprint` as null until enrollment (upstream model §3.6). */
const DETAIL_NULLS = { allowNullAt: ['/data/interfaces', '/data/fingerprint'] };
const LIST_NULLS = { allowNullAt: ['/data/*/interfaces', '/data/*/fingerprint'] };
const BASES = ['/routers', '/transit-routers'] as const;

function q(filter: string): string {
  return encodeURIComponent(filter);
}

async function createRouter(body: Record<string, unknown> = {}, base: string = '/routers'): Promise<string> {
  const res = await tc.mgmt.post(base, { name: uniqueName('tr'), ...body });
  assert.equal(res.status, 201, res.text);
  assertMatchesReference('management', 'POST', base, 201, res.body);
  return res.body.data.id as string;
}

async function createEdgeRouter(body: Record<string, unknown> = {}): Promise<string> {
  const res = await tc.mgmt.post('/edge-routers', { name: uniqueName('er'), ...body });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

async function detail(id: string, base: string = '/routers', client: HttpClient = tc.mgmt): Promise<Record<string, any>> {
  const res = await client.get(`${base}/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', `${base}/{id}`, 200, res.body, DETAIL_NULLS);
  return res.body.data;
}

async function list(base: string, query: string): Promise<HttpResponse> {
  const res = await tc.mgmt.get(`${base}?${query}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', base, 200, res.body, LIST_NULLS);
  return res;
}

async function routerCount(): Promise<number> {
  return (await tc.mgmt.get('/routers?limit=1')).body.meta.pagination.totalCount as number;
}

function assertRouterNotFound(res: HttpResponse, id: string): void {
  assertError(res, 404, 'NOT_FOUND');
  assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: `router with id ${id} not found` });
}

describe('POST /routers and /transit-routers', () => {
  for (const base of BASES) {
    it(`${base}: creates a router with a short id and a transit-routers self link`, async () => {
      const res = await tc.mgmt.post(base, { name: uniqueName('tr') });
      assert.equal(res.status, 201, res.text);
      const id = res.body.data.id;
      assert.match(id, /^[0-9A-Za-z][0-9A-Za-z.-]{8}$/);
      assert.deepEqual(res.body, { data: { id, _links: { self: { href: `./transit-routers/${id}` } } }, meta: {} });
    });
  }

  it('reads back the unenrolled read model with a trott enrollment', async () => {
    const name = uniqueName('tr');
    const id = await createRouter({ name, cost: 12, noTraversal: true, disabled: true, tags: { env: 'lab' }, ctrlChanListeners: { 'tls:a:1': ['g'] } });
    const d = await detail(id);
    assert.equal(d.name, name);
    assert.match(d.createdAt, TIMESTAMP);
    assert.deepEqual(d._links, { self: { href: `./transit-routers/${id}` } });
    assert.equal(d.cost, 12);
    assert.equal(d.noTraversal, true);
    assert.equal(d.disabled, false, 'disabled is ignored on create');
    assert.deepEqual(d.tags, { env: 'lab' });
    assert.deepEqual(d.ctrlChanListeners, { 'tls:a:1': ['g'] });
    assert.equal(d.isOnline, false);
    assert.equal(d.isVerified, false);
    assert.equal(d.fingerprint, null);
    assert.equal(d.unverifiedFingerprint, null);
    assert.equal(d.unverifiedCertPem, null);
    assert.equal(d.interfaces, null);
    const claims = JSON.parse(Buffer.from(d.enrollmentJwt.split('.')[1], 'base64url').toString());
    assert.equal(claims.em, 'trott');
    assert.equal(claims.sub, id);
    assert.equal(claims.jti, d.enrollmentToken);
    assert.equal(claims.iss, `https://localhost:${tc.port}`);
    assert.equal(Date.parse(d.enrollmentExpiresAt) - Date.parse(d.enrollmentCreatedAt), 180 * 60_000);
    assert.equal((await verifyJwt(d.enrollmentJwt, tc.controller.pki)).em, 'trott');
    const rows = await tc.controller.store.all<{ method: string }>('SELECT method FROM enrollments WHERE router_id = ?', [id]);
    assert.deepEqual(rows.map((r) => r.method), ['trott']);
    assert.deepEqual(await detail(id, '/transit-routers'), d, 'both paths show the same record');
  });

  it('defaults omitted and null fields, and omits empty listeners', async () => {
    const id = await createRouter({ cost: null, noTraversal: null, ctrlChanListeners: null });
    const d = await detail(id);
    assert.equal(d.cost, 0);
    assert.equal(d.noTraversal, false);
    assert.equal(d.disabled, false);
    assert.deepEqual(d.tags, {});
    assert.equal('ctrlChanListeners' in d, false);
  });

  it('rejects invalid bodies naming the field; a duplicate name is reported by the router name index', async () => {
    const taken = uniqueName('taken');
    await createRouter({ name: taken });
    const edgeName = uniqueName('edge');
    await createEdgeRouter({ name: edgeName });
    for (const base of BASES) {
      const cases: Array<[Record<string, unknown>, string | RegExp, string?]> = [
        [{}, 'name'],
        [{ name: '' }, 'name', 'name is required'],
        [{ name: taken }, 'name', `duplicate value '${taken}' in unique index on routers store`],
        [{ name: edgeName }, 'name', `duplicate value '${edgeName}' in unique index on routers store`],
        [{ name: uniqueName('x'), cost: 65536 }, 'cost'],
      ];
      const decodeCases: Array<[Record<string, unknown>, string]> = [
        [{ name: 5 }, 'name'],
        [{ name: uniqueName('x'), cost: 'high' }, 'cost'],
        [{ name: uniqueName('x'), noTraversal: 'no' }, 'noTraversal'],
        [{ name: uniqueName('x'), ctrlChanListeners: ['a'] }, 'ctrlChanListeners'],
      ];
      for (const [body, field] of decodeCases) assertDecodeError(await tc.mgmt.post(base, body), field);
      for (const [body, field, reason] of cases) {
        const before = await routerCount();
        const res = await tc.mgmt.post(base, body);
        assertFieldError(res, field);
        assertMatchesReference('management', 'POST', base, 400, res.body);
        if (reason) assert.equal(res.body.error.cause.reason, reason);
        assert.equal(await routerCount(), before, `${base} ${JSON.stringify(body)}`);
      }
    }
  });
});

describe('GET /routers and /transit-routers', () => {
  const prefix = uniqueName('rl');
  it('list every router, edge routers included (shown verified, without enrollment)', async () => {
    const transit = await createRouter({ name: `${prefix}-t`, cost: 3 });
    const edge = await createEdgeRouter({ name: `${prefix}-e`, cost: 9 });
    for (const base of BASES) {
      const res = await list(base, `filter=${q(`name contains "${prefix}"`)}&sort=name`);
      assert.deepEqual(res.body.data.map((r: { id: string }) => r.id), [edge, transit]);
      const e = res.body.data[0];
      assert.equal(e.isVerified, true);
      assert.equal('enrollmentJwt' in e, false);
      assert.equal(e.cost, 9);
      for (const field of ['id', 'name', 'fingerprint', 'cost', 'noTraversal', 'disabled']) {
        assert.ok(res.body.meta.filterableFields.includes(field), field);
      }
    }
  });

  it('filters, sorts and pages', async () => {
    const p = uniqueName('page');
    for (const cost of [1, 2, 3]) await createRouter({ name: `${p}-${cost}`, cost });
    const res = await list('/routers', `filter=${q(`name contains "${p}" and cost >= 2`)}&sort=${q('cost desc')}&limit=1&offset=1`);
    assert.deepEqual(res.body.data.map((r: { name: string }) => r.name), [`${p}-2`]);
    assert.deepEqual(res.body.meta.pagination, { limit: 1, offset: 1, totalCount: 2 });
    assertError(await tc.mgmt.get(`/routers?filter=${q('roleAttributes = "x"')}`), 400, 'INVALID_FILTER');
  });

  it('answers 404 for unknown ids', async () => {
    for (const base of BASES) assertRouterNotFound(await tc.mgmt.get(`${base}/nope`), 'nope');
  });
});

describe('PUT and PATCH /routers/{id}', () => {
  it('change only name, tags and ctrlChanListeners; cost, noTraversal and disabled are ignored', async () => {
    const id = await createRouter({ cost: 4, noTraversal: true, tags: { a: 'b' } });
    const name = uniqueName('renamed');
    assertEmptyOk(await tc.mgmt.patch(`/routers/${id}`, { name, cost: 99, noTraversal: false, disabled: true, ctrlChanListeners: { x: ['y'] } }));
    let d = await detail(id);
    assert.equal(d.name, name);
    assert.equal(d.cost, 4);
    assert.equal(d.noTraversal, true);
    assert.equal(d.disabled, false);
    assert.deepEqual(d.tags, { a: 'b' }, 'patch leaves omitted tags alone');
    assert.deepEqual(d.ctrlChanListeners, { x: ['y'] });
    const other = uniqueName('put');
    assertEmptyOk(await tc.mgmt.put(`/transit-routers/${id}`, { name: other, cost: 1 }));
    d = await detail(id);
    assert.equal(d.name, other);
    assert.equal(d.cost, 4);
    assert.deepEqual(d.tags, {});
    assert.equal('ctrlChanListeners' in d, false);
  });

  it('validate the body and answer 404 for unknown ids', async () => {
    const id = await createRouter();
    const before = await detail(id);
    assertFieldError(await tc.mgmt.put(`/routers/${id}`, {}), 'name');
    assertFieldError(await tc.mgmt.patch(`/routers/${id}`, { name: '' }), 'name');
    assertFieldError(await tc.mgmt.patch(`/routers/${id}`, { cost: -1 }), 'cost');
    assert.deepEqual(await detail(id), before);
    assertRouterNotFound(await tc.mgmt.patch('/routers/nope', { name: uniqueName('x') }), 'nope');
    assertRouterNotFound(await tc.mgmt.put('/transit-routers/nope', { name: uniqueName('x') }), 'nope');
  });

  it('refuse to update an edge router with 409 CAN_NOT_UPDATE_ROUTER', async () => {
    const edge = await createEdgeRouter();
    const before = await detail(edge);
    for (const base of BASES) {
      assertError(await tc.mgmt.patch(`${base}/${edge}`, { name: uniqueName('x') }), 409, 'CAN_NOT_UPDATE_ROUTER');
      assertError(await tc.mgmt.put(`${base}/${edge}`, { name: uniqueName('x') }), 409, 'CAN_NOT_UPDATE_ROUTER');
    }
    assert.deepEqual(await detail(edge), before);
  });
});

describe('DELETE /routers/{id}', () => {
  it('deletes a transit router and its enrollments', async () => {
    const id = await createRouter();
    assertEmptyOk(await tc.mgmt.delete(`/routers/${id}`));
    assertRouterNotFound(await tc.mgmt.get(`/routers/${id}`), id);
    assert.equal(Number(await tc.controller.store.value('SELECT COUNT(*) AS n FROM enrollments WHERE router_id = ?', [id])), 0);
    const other = await createRouter(undefined, '/transit-routers');
    assertEmptyOk(await tc.mgmt.delete(`/transit-routers/${other}`));
    assertRouterNotFound(await tc.mgmt.delete(`/transit-routers/${other}`), other);
  });

  it('deletes an edge router with the same cleanup as an edge router delete', async () => {
    const edge = await createEdgeRouter({ isTunnelerEnabled: true });
    assert.equal((await tc.mgmt.get(`/identities/${edge}`)).status, 200);
    assertEmptyOk(await tc.mgmt.delete(`/routers/${edge}`));
    assertError(await tc.mgmt.get(`/edge-routers/${edge}`), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.get(`/identities/${edge}`), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.get(`/edge-router-policies/${edge}`), 404, 'NOT_FOUND');
  });

  it('answers 404 for unknown ids', async () => {
    assertRouterNotFound(await tc.mgmt.delete('/routers/nope'), 'nope');
  });
});

describe('router operations: authorization', () => {
  it('answers a non-admin identity with 401 UNAUTHORIZED and changes nothing', async () => {
    const user = await createUserWithPassword(tc);
    const asUser = tc.mgmt.as({ token: user.token });
    const id = await createRouter();
    const before = await detail(id);
    for (const base of BASES) {
      const ops: Array<[string, string, unknown?]> = [
        ['GET', base],
        ['POST', base, { name: uniqueName('x') }],
        ['GET', `${base}/${id}`],
        ['PUT', `${base}/${id}`, { name: uniqueName('x') }],
        ['PATCH', `${base}/${id}`, { name: uniqueName('x') }],
        ['DELETE', `${base}/${id}`],
      ];
      for (const [method, path, body] of ops) assertError(await asUser.request(method, path, body === undefined ? {} : { body }), 401, 'UNAUTHORIZED');
    }
    assert.deepEqual(await detail(id), before);
  });

  it('lets router.read read but not write', async () => {
    const reader = await createUserWithPassword(tc, { permissions: ['router.read'] });
    const asReader = tc.mgmt.as({ token: reader.token });
    const id = await createRouter();
    await detail(id, '/routers', asReader);
    assert.equal((await asReader.get('/transit-routers')).status, 200);
    assertError(await asReader.post('/routers', { name: uniqueName('x') }), 401, 'UNAUTHORIZED');
    assertError(await asReader.delete(`/routers/${id}`), 401, 'UNAUTHORIZED');
  });
});
