/**
 * Management service edge router policies: CRUD, validation, read model, filters, sort and paging, `@id`
 * stripping when a service or edge router is deleted, unknown ids and permissions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();

const ROLE_FIELDS = ['serviceRoles', 'edgeRouterRoles'];
const DETAIL_NULLS = { allowNullAt: ROLE_FIELDS.map((f) => `/data/${f}`) };
const LIST_NULLS = { allowNullAt: ROLE_FIELDS.map((f) => `/data/*/${f}`) };

function q(filter: string): string {
  return encodeURIComponent(filter);
}

function body(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: uniqueName('serp'), semantic: 'AllOf', ...overrides };
}

async function create(overrides: Record<string, unknown> = {}): Promise<string> {
  const res = await tc.mgmt.post('/service-edge-router-policies', body(overrides));
  assert.equal(res.status, 201, res.text);
  assertMatchesReference('management', 'POST', '/service-edge-router-policies', 201, res.body);
  return res.body.data.id;
}

async function detail(id: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/service-edge-router-policies/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/service-edge-router-policies/{id}', 200, res.body, DETAIL_NULLS);
  return res.body.data;
}

async function createService(): Promise<{ id: string; name: string }> {
  const name = uniqueName('svc');
  const res = await tc.mgmt.post('/services', { name, encryptionRequired: true });
  assert.equal(res.status, 201, res.text);
  return { id: res.body.data.id, name };
}

async function createEdgeRouter(): Promise<{ id: string; name: string }> {
  const name = uniqueName('er');
  const res = await tc.mgmt.post('/edge-routers', { name });
  assert.equal(res.status, 201, res.text);
  return { id: res.body.data.id, name };
}

describe('service edge router policy CRUD', () => {
  it('creates a policy whose read model shows roles, displays and links', async () => {
    const svc = await createService();
    const router = await createEdgeRouter();
    const empty = await detail(await create());
    assert.equal(empty.serviceRoles, null);
    assert.equal(empty.edgeRouterRoles, null);
    assert.deepEqual(empty.serviceRolesDisplay, []);
    const id = await create({ semantic: 'AnyOf', serviceRoles: [`@${svc.id}`, '#web'], edgeRouterRoles: [`@${router.id}`] });
    const d = await detail(id);
    assert.equal(d.semantic, 'AnyOf');
    assert.deepEqual(d.serviceRoles, ['#web', `@${svc.id}`]);
    assert.deepEqual(d.serviceRolesDisplay, [
      { role: '#web', name: '#web' },
      { role: `@${svc.id}`, name: `@${svc.name}` },
    ]);
    assert.deepEqual(d.edgeRouterRolesDisplay, [{ role: `@${router.id}`, name: `@${router.name}` }]);
    assert.deepEqual(d._links, {
      self: { href: `./service-edge-router-policies/${id}` },
      'edge-routers': { href: `./service-edge-router-policies/${id}/edge-routers` },
      services: { href: `./service-edge-router-policies/${id}/services` },
    });
    assert.equal('isSystem' in d, false);
  });

  it('validates name, semantic and roles', async () => {
    assertFieldError(await tc.mgmt.post('/service-edge-router-policies', { semantic: 'AllOf' }), 'name');
    assertFieldError(await tc.mgmt.post('/service-edge-router-policies', { name: uniqueName('x') }), 'semantic');
    const unknown = await tc.mgmt.post('/service-edge-router-policies', body({ serviceRoles: ['@no-such-service'] }));
    assertFieldError(unknown, 'serviceRoles');
    assert.equal(unknown.body.error.cause.reason, 'no services found with the given ids');
    assertFieldError(await tc.mgmt.post('/service-edge-router-policies', body({ edgeRouterRoles: ['@no-such-router'] })), 'edgeRouterRoles');
    assertFieldError(await tc.mgmt.post('/service-edge-router-policies', body({ edgeRouterRoles: ['#all', '#x'] })), 'edgeRouterRoles');
    const name = uniqueName('dup');
    await create({ name });
    assertFieldError(await tc.mgmt.post('/service-edge-router-policies', body({ name })), 'name');
  });

  it('put replaces, patch merges, delete removes, unknown ids answer 404', async () => {
    const id = await create({ serviceRoles: ['#a'], edgeRouterRoles: ['#b'], tags: { t: 'x' } });
    assertEmptyOk(await tc.mgmt.patch(`/service-edge-router-policies/${id}`, { serviceRoles: [] }));
    let d = await detail(id);
    assert.equal(d.serviceRoles, null);
    assert.deepEqual(d.edgeRouterRoles, ['#b']);
    assert.deepEqual(d.tags, { t: 'x' });
    assertEmptyOk(await tc.mgmt.put(`/service-edge-router-policies/${id}`, { name: uniqueName('put'), semantic: 'AnyOf', serviceRoles: ['#z'] }));
    d = await detail(id);
    assert.deepEqual(d.serviceRoles, ['#z']);
    assert.equal(d.edgeRouterRoles, null);
    assert.deepEqual(d.tags, {});
    assertEmptyOk(await tc.mgmt.delete(`/service-edge-router-policies/${id}`));
    for (const res of [
      await tc.mgmt.get(`/service-edge-router-policies/${id}`),
      await tc.mgmt.patch(`/service-edge-router-policies/${id}`, { semantic: 'AnyOf' }),
      await tc.mgmt.delete(`/service-edge-router-policies/${id}`),
    ]) {
      assertError(res, 404, 'NOT_FOUND');
      assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: `serviceEdgeRouterPolicy with id ${id} not found` });
    }
  });

  it('strips the @id of a deleted service or edge router', async () => {
    const svc = await createService();
    const router = await createEdgeRouter();
    const id = await create({ serviceRoles: [`@${svc.id}`], edgeRouterRoles: [`@${router.id}`, '#keep'] });
    assertEmptyOk(await tc.mgmt.delete(`/services/${svc.id}`));
    assertEmptyOk(await tc.mgmt.delete(`/edge-routers/${router.id}`));
    const d = await detail(id);
    assert.equal(d.serviceRoles, null);
    assert.deepEqual(d.edgeRouterRoles, ['#keep']);
  });
});

describe('GET /service-edge-router-policies', () => {
  it('filters on role sets, sorts and pages', async () => {
    const tag = uniqueName('f').replace(/-/g, '');
    await create({ name: `${tag}-a`, serviceRoles: ['#web'] });
    await create({ name: `${tag}-b`, serviceRoles: ['#web', '#db'], edgeRouterRoles: ['#all'] });
    await create({ name: `${tag}-c` });
    const names = async (filter: string) => {
      const res = await tc.mgmt.get(`/service-edge-router-policies?filter=${q(filter)}`);
      assert.equal(res.status, 200, res.text);
      assertMatchesReference('management', 'GET', '/service-edge-router-policies', 200, res.body, LIST_NULLS);
      return res.body.data.map((p: { name: string }) => p.name);
    };
    const mine = `name contains "${tag}"`;
    assert.deepEqual(await names(`${mine} and anyOf(serviceRoles) = "#web" sort by name desc`), [`${tag}-b`, `${tag}-a`]);
    assert.deepEqual(await names(`${mine} and anyOf(edgeRouterRoles) = "#all"`), [`${tag}-b`]);
    assert.deepEqual(await names(`${mine} and isEmpty(serviceRoles)`), [`${tag}-c`]);
    assert.deepEqual(await names(`${mine} sort by name limit 2`), [`${tag}-a`, `${tag}-b`]);
  });
});

describe('service edge router policy permissions', () => {
  it('answers a non-admin with 401 on every operation', async () => {
    const id = await create();
    const user = await createUserWithPassword(tc);
    const asUser = tc.mgmt.as({ token: user.token });
    for (const res of [
      await asUser.get('/service-edge-router-policies'),
      await asUser.post('/service-edge-router-policies', body()),
      await asUser.get(`/service-edge-router-policies/${id}`),
      await asUser.put(`/service-edge-router-policies/${id}`, body()),
      await asUser.patch(`/service-edge-router-policies/${id}`, { semantic: 'AnyOf' }),
      await asUser.delete(`/service-edge-router-policies/${id}`),
    ]) {
      assertError(res, 401, 'UNAUTHORIZED');
    }
    const writer = await createUserWithPassword(tc, { permissions: ['service-edge-router-policy'] });
    assertEmptyOk(await tc.mgmt.as({ token: writer.token }).patch(`/service-edge-router-policies/${id}`, { semantic: 'AnyOf' }));
    assert.equal((await detail(id)).semantic, 'AnyOf');
  });
});
