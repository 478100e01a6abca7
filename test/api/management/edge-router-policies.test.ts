/**
 * Management edge router policies: CRUD, validation, the read model (isSystem, role displays), filters
 * (role sets, isSystem, semantic), sort and paging, refusal of updates and deletes of system policies, the
 * identities a policy matches, `@id` stripping, unknown ids and permissions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertEmptyList, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();

const ROLE_FIELDS = ['identityRoles', 'edgeRouterRoles'];
const DETAIL_NULLS = { allowNullAt: ROLE_FIELDS.map((f) => `/data/${f}`) };
const LIST_NULLS = { allowNullAt: ROLE_FIELDS.map((f) => `/data/*/${f}`) };

function q(filter: string): string {
  return encodeURIComponent(filter);
}

function body(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: uniqueName('erp'), semantic: 'AllOf', ...overrides };
}

async function create(overrides: Record<string, unknown> = {}): Promise<string> {
  const res = await tc.mgmt.post('/edge-router-policies', body(overrides));
  assert.equal(res.status, 201, res.text);
  assertMatchesReference('management', 'POST', '/edge-router-policies', 201, res.body);
  return res.body.data.id;
}

async function detail(id: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/edge-router-policies/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/edge-router-policies/{id}', 200, res.body, DETAIL_NULLS);
  return res.body.data;
}

async function createEdgeRouter(overrides: Record<string, unknown> = {}): Promise<{ id: string; name: string }> {
  const name = uniqueName('er');
  const res = await tc.mgmt.post('/edge-routers', { name, ...overrides });
  assert.equal(res.status, 201, res.text);
  return { id: res.body.data.id, name };
}

async function listNames(filter: string): Promise<string[]> {
  const res = await tc.mgmt.get(`/edge-router-policies?filter=${q(filter)}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/edge-router-policies', 200, res.body, LIST_NULLS);
  return res.body.data.map((p: { name: string }) => p.name);
}

/** A system policy as the edge router service writes one for a tunneler-enabled router. */
async function insertSystemPolicy(): Promise<string> {
  const id = uniqueName('sys');
  const now = new Date().toISOString();
  await tc.controller.store.write((tx) =>
    tx.run("INSERT INTO edge_router_policies (id, name, semantic, created_at, updated_at, is_system) VALUES (?, ?, 'AnyOf', ?, ?, 1)", [
      id,
      `edge-router-${id}-system`,
      now,
      now,
    ]),
  );
  return id;
}

describe('edge router policy CRUD', () => {
  it('creates a policy with isSystem false, null raw role lists and its links', async () => {
    const id = await create();
    const d = await detail(id);
    assert.equal(d.isSystem, false);
    assert.equal(d.semantic, 'AllOf');
    assert.equal(d.identityRoles, null);
    assert.equal(d.edgeRouterRoles, null);
    assert.deepEqual(d.identityRolesDisplay, []);
    assert.deepEqual(d.edgeRouterRolesDisplay, []);
    assert.deepEqual(d._links, {
      self: { href: `./edge-router-policies/${id}` },
      'edge-routers': { href: `./edge-router-policies/${id}/edge-routers` },
      identities: { href: `./edge-router-policies/${id}/identities` },
    });
  });

  it('stores and displays edge router and identity roles', async () => {
    const router = await createEdgeRouter();
    const identityName = uniqueName('i');
    const identity = await createIdentity(tc.mgmt, { name: identityName });
    const id = await create({ edgeRouterRoles: [`@${router.id}`, '#east'], identityRoles: [`@${identity}`] });
    const d = await detail(id);
    assert.deepEqual(d.edgeRouterRoles, ['#east', `@${router.id}`]);
    assert.deepEqual(d.edgeRouterRolesDisplay, [
      { role: '#east', name: '#east' },
      { role: `@${router.id}`, name: `@${router.name}` },
    ]);
    assert.deepEqual(d.identityRolesDisplay, [{ role: `@${identity}`, name: `@${identityName}` }]);
  });

  it('validates name, semantic and roles', async () => {
    assertFieldError(await tc.mgmt.post('/edge-router-policies', { semantic: 'AllOf' }), 'name');
    assertFieldError(await tc.mgmt.post('/edge-router-policies', { name: uniqueName('x') }), 'semantic');
    assertFieldError(await tc.mgmt.post('/edge-router-policies', body({ semantic: 'ANYOF' })), 'semantic');
    const unknown = await tc.mgmt.post('/edge-router-policies', body({ edgeRouterRoles: ['@no-such-router'] }));
    assertFieldError(unknown, 'edgeRouterRoles');
    assert.equal(unknown.body.error.cause.reason, 'no routers found with the given ids');
    assertFieldError(await tc.mgmt.post('/edge-router-policies', body({ identityRoles: ['#all', '@x'] })), 'identityRoles');
    assertFieldError(await tc.mgmt.post('/edge-router-policies', body({ identityRoles: ['x'] })), 'identityRoles');
    const name = uniqueName('dup');
    await create({ name });
    assertFieldError(await tc.mgmt.post('/edge-router-policies', body({ name })), 'name');
  });

  it('put replaces, patch merges, delete removes', async () => {
    const id = await create({ identityRoles: ['#a'], edgeRouterRoles: ['#b'] });
    assertEmptyOk(await tc.mgmt.patch(`/edge-router-policies/${id}`, { edgeRouterRoles: ['#c'] }));
    let d = await detail(id);
    assert.deepEqual(d.identityRoles, ['#a']);
    assert.deepEqual(d.edgeRouterRoles, ['#c']);
    const name = uniqueName('put');
    assertEmptyOk(await tc.mgmt.put(`/edge-router-policies/${id}`, { name, semantic: 'AnyOf' }));
    d = await detail(id);
    assert.equal(d.name, name);
    assert.equal(d.semantic, 'AnyOf');
    assert.equal(d.identityRoles, null);
    assert.equal(d.edgeRouterRoles, null);
    assertFieldError(await tc.mgmt.put(`/edge-router-policies/${id}`, { name }), 'semantic');
    assertEmptyOk(await tc.mgmt.delete(`/edge-router-policies/${id}`));
    assertError(await tc.mgmt.get(`/edge-router-policies/${id}`), 404, 'NOT_FOUND');
  });

  it('answers unknown ids with 404 NOT_FOUND', async () => {
    for (const res of [
      await tc.mgmt.get('/edge-router-policies/nope'),
      await tc.mgmt.patch('/edge-router-policies/nope', { semantic: 'AnyOf' }),
      await tc.mgmt.put('/edge-router-policies/nope', body()),
      await tc.mgmt.delete('/edge-router-policies/nope'),
    ]) {
      assertError(res, 404, 'NOT_FOUND');
      assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: 'edgeRouterPolicy with id nope not found' });
    }
    // Its identities: an empty list, as upstream answers a list below an unknown record.
    assertEmptyList(await tc.mgmt.get('/edge-router-policies/nope/identities'));
  });
});

describe('system edge router policies', () => {
  it('refuses updates and deletes of a system policy with 400 and lists it with isSystem true', async () => {
    const id = await insertSystemPolicy();
    const before = await detail(id);
    assert.equal(before.isSystem, true);
    assertError(await tc.mgmt.patch(`/edge-router-policies/${id}`, { semantic: 'AllOf' }), 400, 'ENTITY_CAN_NOT_BE_UPDATED');
    assertError(await tc.mgmt.put(`/edge-router-policies/${id}`, body()), 400, 'ENTITY_CAN_NOT_BE_UPDATED');
    assertError(await tc.mgmt.delete(`/edge-router-policies/${id}`), 400, 'ENTITY_CAN_NOT_BE_DELETED');
    assert.deepEqual(await detail(id), before);
    assert.ok((await listNames('isSystem = true')).includes(before.name));
    assert.ok(!(await listNames('isSystem = false')).includes(before.name));
  });
});

describe('GET /edge-router-policies', () => {
  it('filters on role sets and semantic, sorts and pages', async () => {
    const tag = uniqueName('f').replace(/-/g, '');
    await create({ name: `${tag}-a`, identityRoles: ['#sales'] });
    await create({ name: `${tag}-b`, semantic: 'AnyOf', edgeRouterRoles: ['#all'] });
    await create({ name: `${tag}-c`, identityRoles: ['#sales', '#eng'] });
    const mine = `name contains "${tag}"`;
    assert.deepEqual(await listNames(`${mine} and anyOf(identityRoles) = "#sales" sort by name desc`), [`${tag}-c`, `${tag}-a`]);
    assert.deepEqual(await listNames(`${mine} and anyOf(edgeRouterRoles) = "#all"`), [`${tag}-b`]);
    assert.deepEqual(await listNames(`${mine} and semantic = "AnyOf"`), [`${tag}-b`]);
    assert.deepEqual(await listNames(`${mine} and count(identityRoles) = 2`), [`${tag}-c`]);
    assert.deepEqual(await listNames(`${mine} sort by name skip 1 limit 1`), [`${tag}-b`]);
  });
});

describe('GET /edge-router-policies/{id}/identities', () => {
  it('lists the matching identities, follows attribute changes and @id deletes, and pages', async () => {
    const attr = uniqueName('erpa').replace(/-/g, '');
    const a = await createIdentity(tc.mgmt, { roleAttributes: [attr] });
    const b = await createIdentity(tc.mgmt);
    const id = await create({ semantic: 'AnyOf', identityRoles: [`#${attr}`, `@${b}`] });
    const ids = async (query = '') => {
      const res = await tc.mgmt.get(`/edge-router-policies/${id}/identities?${query}`);
      assert.equal(res.status, 200, res.text);
      assertMatchesReference('management', 'GET', '/edge-router-policies/{id}/identities', 200, res.body, { allowNullAt: ['/data/*/interfaces'] });
      return res;
    };
    assert.deepEqual((await ids()).body.data.map((i: { id: string }) => i.id).sort(), [a, b].sort());
    const paged = await ids(`filter=${q('true sort by id')}&limit=1`);
    assert.equal(paged.body.data.length, 1);
    assert.equal(paged.body.meta.pagination.totalCount, 2);
    assertEmptyOk(await tc.mgmt.patch(`/identities/${a}`, { roleAttributes: [] }));
    assertEmptyOk(await tc.mgmt.delete(`/identities/${b}`));
    assert.deepEqual((await ids()).body.data, []);
    assert.deepEqual((await detail(id)).identityRoles, [`#${attr}`]);
  });
});

describe('edge router policy permissions', () => {
  it('answers a non-admin with 401 and lets edge-router-policy.read read', async () => {
    const id = await create();
    const user = await createUserWithPassword(tc);
    const asUser = tc.mgmt.as({ token: user.token });
    for (const res of [
      await asUser.get('/edge-router-policies'),
      await asUser.post('/edge-router-policies', body()),
      await asUser.get(`/edge-router-policies/${id}`),
      await asUser.put(`/edge-router-policies/${id}`, body()),
      await asUser.patch(`/edge-router-policies/${id}`, { semantic: 'AnyOf' }),
      await asUser.delete(`/edge-router-policies/${id}`),
      await asUser.get(`/edge-router-policies/${id}/identities`),
    ]) {
      assertError(res, 401, 'UNAUTHORIZED');
    }
    const reader = await createUserWithPassword(tc, { permissions: ['edge-router-policy.read'] });
    const asReader = tc.mgmt.as({ token: reader.token });
    assert.equal((await asReader.get(`/edge-router-policies/${id}`)).status, 200);
    assertError(await asReader.patch(`/edge-router-policies/${id}`, { semantic: 'AnyOf' }), 401, 'UNAUTHORIZED');
    assert.equal((await detail(id)).semantic, 'AllOf');
  });
});
