/**
 * Management service policies: create, detail, list (filter incl. role-list sets and the numeric `type`,
 * sort, paging), put, patch, delete; role-list validation and normalization, the `*RolesDisplay` read
 * model, `@id` stripping when the referenced entity is deleted, the identities and posture checks a
 * policy currently matches, unknown ids and permissions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import type { HttpResponse } from '../../support/client.ts';
import { createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertEmptyList, assertDecodeError, TIMESTAMP, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();

/** Upstream sends empty raw role lists as null although the reference does not mark them nullable. */
const ROLE_NULLS = ['identityRoles', 'serviceRoles', 'postureCheckRoles'];
const DETAIL_NULLS = { allowNullAt: ROLE_NULLS.map((f) => `/data/${f}`) };
const LIST_NULLS = { allowNullAt: ROLE_NULLS.map((f) => `/data/*/${f}`) };
const IDENTITY_LIST_NULLS = { allowNullAt: ['/data/*/interfaces'] };

function q(filter: string): string {
  return encodeURIComponent(filter);
}

function body(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: uniqueName('sp'), type: 'Dial', semantic: 'AllOf', ...overrides };
}

async function create(overrides: Record<string, unknown> = {}): Promise<string> {
  const res = await tc.mgmt.post('/service-policies', body(overrides));
  assert.equal(res.status, 201, res.text);
  assertMatchesReference('management', 'POST', '/service-policies', 201, res.body);
  return res.body.data.id as string;
}

async function detail(id: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/service-policies/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/service-policies/{id}', 200, res.body, DETAIL_NULLS);
  return res.body.data;
}

async function count(): Promise<number> {
  const res = await tc.mgmt.get('/service-policies?limit=1');
  assert.equal(res.status, 200, res.text);
  return res.body.meta.pagination.totalCount;
}

async function listNames(filter: string): Promise<string[]> {
  const res = await tc.mgmt.get(`/service-policies?filter=${q(filter)}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/service-policies', 200, res.body, LIST_NULLS);
  return res.body.data.map((p: { name: string }) => p.name);
}

async function createPostureCheck(overrides: Record<string, unknown> = {}): Promise<string> {
  const res = await tc.mgmt.post('/posture-checks', { name: uniqueName('pc'), typeId: 'DOMAIN', domains: ['corp.example'], ...overrides });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id;
}

async function memberIds(policyId: string, sub: 'identities' | 'posture-checks', query = ''): Promise<string[]> {
  const res = await tc.mgmt.get(`/service-policies/${policyId}/${sub}?limit=500${query}`);
  assert.equal(res.status, 200, res.text);
  if (sub === 'identities') assertMatchesReference('management', 'GET', '/service-policies/{id}/identities', 200, res.body, IDENTITY_LIST_NULLS);
  else assertMatchesReference('management', 'GET', '/service-policies/{id}/posture-checks', 200, res.body);
  return res.body.data.map((e: { id: string }) => e.id).sort();
}

async function expectRejected(send: () => Promise<HttpResponse>, check: (res: HttpResponse) => void): Promise<void> {
  const before = await count();
  const res = await send();
  check(res);
  assert.equal(await count(), before, 'nothing was created');
}

describe('POST /service-policies', () => {
  it('creates a policy whose read model has null raw role lists, empty display arrays and the policy links', async () => {
    const name = uniqueName('sp-min');
    const res = await tc.mgmt.post('/service-policies', { name, type: 'Bind', semantic: 'AnyOf' });
    assert.equal(res.status, 201, res.text);
    const id = res.body.data.id;
    assert.deepEqual(res.body, { data: { id, _links: { self: { href: `./service-policies/${id}` } } }, meta: {} });
    const d = await detail(id);
    assert.equal(d.name, name);
    assert.equal(d.type, 'Bind');
    assert.equal(d.semantic, 'AnyOf');
    for (const f of ROLE_NULLS) {
      assert.equal(d[f], null, f);
      assert.deepEqual(d[`${f}Display`], [], `${f}Display`);
    }
    assert.deepEqual(d.tags, {});
    assert.match(d.createdAt, TIMESTAMP);
    assert.equal(d.createdAt, d.updatedAt);
    assert.deepEqual(d._links, {
      self: { href: `./service-policies/${id}` },
      services: { href: `./service-policies/${id}/services` },
      identities: { href: `./service-policies/${id}/identities` },
      'posture-checks': { href: `./service-policies/${id}/posture-checks` },
    });
  });

  it('stores role lists sorted and de-duplicated and displays @ids by the current entity name', async () => {
    const identityName = uniqueName('named');
    const identityId = await createIdentity(tc.mgmt, { name: identityName });
    const checkId = await createPostureCheck();
    const checkName = (await tc.mgmt.get(`/posture-checks/${checkId}`)).body.data.name;
    const id = await create({
      identityRoles: ['#web', `@${identityId}`, '#db', '#web'],
      postureCheckRoles: [`@${checkId}`],
      serviceRoles: ['#all'],
      tags: { env: 'prod', flag: true },
    });
    const d = await detail(id);
    assert.deepEqual(d.identityRoles, ['#db', '#web', `@${identityId}`]);
    assert.deepEqual(d.identityRolesDisplay, [
      { role: '#db', name: '#db' },
      { role: '#web', name: '#web' },
      { role: `@${identityId}`, name: `@${identityName}` },
    ]);
    assert.deepEqual(d.serviceRoles, ['#all']);
    assert.deepEqual(d.serviceRolesDisplay, [{ role: '#all', name: '#all' }]);
    assert.deepEqual(d.postureCheckRolesDisplay, [{ role: `@${checkId}`, name: `@${checkName}` }]);
    assert.deepEqual(d.tags, { env: 'prod', flag: true });

    const renamed = uniqueName('renamed');
    assertEmptyOk(await tc.mgmt.patch(`/identities/${identityId}`, { name: renamed }));
    assert.deepEqual((await detail(id)).identityRolesDisplay[2], { role: `@${identityId}`, name: `@${renamed}` });
  });

  it('requires name, type and semantic', async () => {
    await expectRejected(() => tc.mgmt.post('/service-policies', { type: 'Dial', semantic: 'AllOf' }), (res) => assertFieldError(res, 'name'));
    await expectRejected(() => tc.mgmt.post('/service-policies', { name: uniqueName('x'), semantic: 'AllOf' }), (res) => {
      assertFieldError(res, 'type');
      assert.equal(res.body.error.cause.reason, 'type in body is required');
    });
    await expectRejected(() => tc.mgmt.post('/service-policies', { name: uniqueName('x'), type: 'Dial' }), (res) => assertFieldError(res, 'semantic'));
    await expectRejected(() => tc.mgmt.post('/service-policies', body({ name: '' })), (res) => {
      assertFieldError(res, 'name');
      assert.equal(res.body.error.cause.reason, 'name is required');
    });
  });

  it('refuses semantic and type spellings outside the enums, and the Invalid type as field policyType', async () => {
    await expectRejected(() => tc.mgmt.post('/service-policies', body({ semantic: 'allof' })), (res) => {
      assertFieldError(res, 'semantic');
      assert.equal(res.body.error.cause.value, 'allof');
    });
    await expectRejected(() => tc.mgmt.post('/service-policies', body({ type: 'dial' })), (res) => assertFieldError(res, 'type'));
    await expectRejected(() => tc.mgmt.post('/service-policies', body({ type: 'Invalid' })), (res) => {
      assertFieldError(res, 'policyType');
      assert.equal(res.body.error.cause.value, 'Invalid');
    });
  });

  it('refuses role entries without a prefix, #all beside other roles, and unknown @ids, naming the field', async () => {
    await expectRejected(() => tc.mgmt.post('/service-policies', body({ identityRoles: ['#ok', 'plain', 'other'] })), (res) => {
      assertFieldError(res, 'identityRoles');
      assert.equal(res.body.error.cause.reason, 'role entries must prefixed with # (to indicate role attributes) or @ (to indicate a name or id)');
      assert.equal(res.body.error.cause.value, '[other plain]');
    });
    await expectRejected(() => tc.mgmt.post('/service-policies', body({ serviceRoles: ['#all', '#web'] })), (res) => {
      assertFieldError(res, 'serviceRoles');
      assert.equal(res.body.error.cause.reason, 'if using #all, it should be the only role specified');
    });
    await expectRejected(() => tc.mgmt.post('/service-policies', body({ identityRoles: ['@nope-1', '#x'] })), (res) => {
      assertFieldError(res, 'identityRoles');
      assert.equal(res.body.error.cause.reason, 'no identities found with the given ids');
      assert.equal(res.body.error.cause.value, '[nope-1]');
    });
    await expectRejected(() => tc.mgmt.post('/service-policies', body({ serviceRoles: ['@nope-2'] })), (res) => {
      assertFieldError(res, 'serviceRoles');
      assert.equal(res.body.error.cause.reason, 'no services found with the given ids');
    });
    await expectRejected(() => tc.mgmt.post('/service-policies', body({ postureCheckRoles: ['@nope-3'] })), (res) => {
      assertFieldError(res, 'postureCheckRoles');
      assert.equal(res.body.error.cause.reason, 'no postureChecks found with the given ids');
    });
    await expectRejected(() => tc.mgmt.post('/service-policies', body({ identityRoles: 'not-a-list' })), (res) => assertDecodeError(res, 'identityRoles'));
  });

  it('refuses a name already used by another service policy', async () => {
    const name = uniqueName('taken');
    await create({ name });
    await expectRejected(() => tc.mgmt.post('/service-policies', body({ name })), (res) => {
      assertFieldError(res, 'name');
      assert.equal(res.body.error.cause.reason, 'name must be unique');
    });
  });
});

describe('GET /service-policies', () => {
  it('filters on name, semantic, the numeric type and role-list sets, sorts and pages', async () => {
    const tag = uniqueName('f').replace(/-/g, '');
    const a = await create({ name: `${tag}-a`, type: 'Dial', semantic: 'AllOf', identityRoles: ['#sales'], serviceRoles: ['#all'] });
    await create({ name: `${tag}-b`, type: 'Bind', semantic: 'AnyOf', identityRoles: ['#eng', '#sales'] });
    await create({ name: `${tag}-c`, type: 'Bind', semantic: 'AllOf' });
    const mine = `name contains "${tag}"`;
    assert.deepEqual(await listNames(`${mine} sort by name`), [`${tag}-a`, `${tag}-b`, `${tag}-c`]);
    assert.deepEqual(await listNames(`${mine} sort by name desc`), [`${tag}-c`, `${tag}-b`, `${tag}-a`]);
    assert.deepEqual(await listNames(`${mine} and type = 2 sort by name`), [`${tag}-b`, `${tag}-c`]);
    assert.deepEqual(await listNames(`${mine} and type = 1`), [`${tag}-a`]);
    assert.deepEqual(await listNames(`${mine} and semantic = "AnyOf"`), [`${tag}-b`]);
    assert.deepEqual(await listNames(`${mine} and anyOf(identityRoles) = "#sales" sort by name`), [`${tag}-a`, `${tag}-b`]);
    assert.deepEqual(await listNames(`${mine} and anyOf(serviceRoles) = "#all"`), [`${tag}-a`]);
    assert.deepEqual(await listNames(`${mine} and isEmpty(identityRoles)`), [`${tag}-c`]);
    assert.deepEqual(await listNames(`id = "${a}"`), [`${tag}-a`]);

    const page = await tc.mgmt.get(`/service-policies?filter=${q(`${mine} sort by name`)}&limit=1&offset=1`);
    assert.equal(page.status, 200, page.text);
    assert.deepEqual(page.body.data.map((p: { name: string }) => p.name), [`${tag}-b`]);
    assert.deepEqual(page.body.meta.pagination, { limit: 1, offset: 1, totalCount: 3 });
    for (const f of ['name', 'semantic', 'type', 'identityRoles', 'serviceRoles', 'postureCheckRoles']) {
      assert.ok(page.body.meta.filterableFields.includes(f), f);
    }
  });

  it('answers an invalid filter with 400 INVALID_FILTER', async () => {
    assertError(await tc.mgmt.get(`/service-policies?filter=${q('name = ')}`), 400, 'INVALID_FILTER');
  });
});

describe('PUT and PATCH /service-policies/{id}', () => {
  it('put replaces every field: omitted role lists and tags are cleared', async () => {
    const id = await create({ identityRoles: ['#a'], serviceRoles: ['#b'], tags: { x: 'y' } });
    const before = await detail(id);
    const name = uniqueName('put');
    assertEmptyOk(await tc.mgmt.put(`/service-policies/${id}`, { name, type: 'Bind', semantic: 'AnyOf', postureCheckRoles: ['#mfa'] }));
    const d = await detail(id);
    assert.equal(d.name, name);
    assert.equal(d.type, 'Bind');
    assert.equal(d.semantic, 'AnyOf');
    assert.equal(d.identityRoles, null);
    assert.equal(d.serviceRoles, null);
    assert.deepEqual(d.postureCheckRoles, ['#mfa']);
    assert.deepEqual(d.tags, {});
    assert.equal(d.createdAt, before.createdAt);
    assert.ok(d.updatedAt >= before.updatedAt);
  });

  it('put requires name, type and semantic and validates roles', async () => {
    const id = await create();
    const before = await detail(id);
    assertFieldError(await tc.mgmt.put(`/service-policies/${id}`, { name: uniqueName('x'), semantic: 'AllOf' }), 'type');
    assertFieldError(await tc.mgmt.put(`/service-policies/${id}`, { name: uniqueName('x'), type: 'Dial' }), 'semantic');
    assertFieldError(await tc.mgmt.put(`/service-policies/${id}`, { type: 'Dial', semantic: 'AllOf' }), 'name');
    assertFieldError(await tc.mgmt.put(`/service-policies/${id}`, body({ identityRoles: ['bad'] })), 'identityRoles');
    assertFieldError(await tc.mgmt.put(`/service-policies/${id}`, body({ type: 'Invalid' })), 'policyType');
    assert.deepEqual(await detail(id), before);
  });

  it('patch changes only the supplied fields; [] clears a role list and null leaves it', async () => {
    const id = await create({ identityRoles: ['#a'], serviceRoles: ['#b'], tags: { keep: 'me' } });
    assertEmptyOk(await tc.mgmt.patch(`/service-policies/${id}`, { semantic: 'AnyOf', identityRoles: null }));
    let d = await detail(id);
    assert.equal(d.semantic, 'AnyOf');
    assert.deepEqual(d.identityRoles, ['#a']);
    assert.deepEqual(d.serviceRoles, ['#b']);
    assert.deepEqual(d.tags, { keep: 'me' });
    assertEmptyOk(await tc.mgmt.patch(`/service-policies/${id}`, { serviceRoles: [], type: 'Bind' }));
    d = await detail(id);
    assert.equal(d.serviceRoles, null);
    assert.deepEqual(d.serviceRolesDisplay, []);
    assert.equal(d.type, 'Bind');
    assertFieldError(await tc.mgmt.patch(`/service-policies/${id}`, { postureCheckRoles: ['#all', '#x'] }), 'postureCheckRoles');
    assertFieldError(await tc.mgmt.patch(`/service-policies/${id}`, { semantic: 'Nope' }), 'semantic');
    assert.deepEqual(await detail(id), d);
  });

  it('refuses a rename to a name another service policy uses', async () => {
    const taken = uniqueName('taken');
    await create({ name: taken });
    const id = await create();
    assertFieldError(await tc.mgmt.patch(`/service-policies/${id}`, { name: taken }), 'name');
  });
});

describe('DELETE /service-policies/{id} and unknown ids', () => {
  it('deletes a policy, after which it is gone and its identities no longer reach it', async () => {
    const identityId = await createIdentity(tc.mgmt);
    const id = await create({ identityRoles: [`@${identityId}`] });
    assertEmptyOk(await tc.mgmt.delete(`/service-policies/${id}`));
    assertError(await tc.mgmt.get(`/service-policies/${id}`), 404, 'NOT_FOUND');
    const res = await tc.mgmt.get(`/identities/${identityId}/service-policies`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.data, []);
  });

  it('answers every operation on an unknown id with 404 NOT_FOUND', async () => {
    const cause = { code: 'UNHANDLED', message: 'servicePolicy with id missing-sp not found' };
    for (const res of [
      await tc.mgmt.get('/service-policies/missing-sp'),
      await tc.mgmt.put('/service-policies/missing-sp', body()),
      await tc.mgmt.patch('/service-policies/missing-sp', { name: uniqueName('x') }),
      await tc.mgmt.delete('/service-policies/missing-sp'),
    ]) {
      assertError(res, 404, 'NOT_FOUND');
      assert.deepEqual(res.body.error.cause, cause);
    }
    // Lists below it are empty, as upstream answers them.
    assertEmptyList(await tc.mgmt.get('/service-policies/missing-sp/identities'));
    assertEmptyList(await tc.mgmt.get('/service-policies/missing-sp/posture-checks'));
  });
});

describe('cascades', () => {
  it('deleting an identity or posture check strips its @id from the role lists that name it', async () => {
    const identityId = await createIdentity(tc.mgmt);
    const checkId = await createPostureCheck();
    const id = await create({ identityRoles: [`@${identityId}`, '#x'], postureCheckRoles: [`@${checkId}`] });
    assertEmptyOk(await tc.mgmt.delete(`/identities/${identityId}`));
    assertEmptyOk(await tc.mgmt.delete(`/posture-checks/${checkId}`));
    const d = await detail(id);
    assert.deepEqual(d.identityRoles, ['#x']);
    assert.deepEqual(d.identityRolesDisplay, [{ role: '#x', name: '#x' }]);
    assert.equal(d.postureCheckRoles, null);
    assert.deepEqual(await listNames(`anyOf(identityRoles) = "@${identityId}"`), []);
  });
});

describe('GET /service-policies/{id}/identities and /posture-checks', () => {
  it('lists the identities the policy matches under AllOf, AnyOf, @ids and #all (including identities created later)', async () => {
    const attr = uniqueName('team').replace(/-/g, '');
    const both = await createIdentity(tc.mgmt, { roleAttributes: [`${attr}a`, `${attr}b`] });
    const onlyA = await createIdentity(tc.mgmt, { roleAttributes: [`${attr}a`] });
    const byId = await createIdentity(tc.mgmt);
    const allOf = await create({ semantic: 'AllOf', identityRoles: [`#${attr}a`, `#${attr}b`, `@${byId}`] });
    const anyOf = await create({ semantic: 'AnyOf', identityRoles: [`#${attr}a`, `#${attr}b`] });
    const empty = await create({ identityRoles: [] });
    const all = await create({ identityRoles: ['#all'] });
    assert.deepEqual(await memberIds(allOf, 'identities'), [both, byId].sort());
    assert.deepEqual(await memberIds(anyOf, 'identities'), [both, onlyA].sort());
    assert.deepEqual(await memberIds(empty, 'identities'), []);

    const later = await createIdentity(tc.mgmt);
    assert.ok((await memberIds(all, 'identities')).includes(later));
    assertEmptyOk(await tc.mgmt.patch(`/identities/${onlyA}`, { roleAttributes: [`${attr}a`, `${attr}b`] }));
    assert.deepEqual(await memberIds(allOf, 'identities'), [both, byId, onlyA].sort());
    assertEmptyOk(await tc.mgmt.patch(`/service-policies/${anyOf}`, { identityRoles: [`#${attr}zzz`] }));
    assert.deepEqual(await memberIds(anyOf, 'identities'), []);
  });

  it('filters, sorts and pages the identities', async () => {
    const attr = uniqueName('pg').replace(/-/g, '');
    const ids = [];
    for (const n of ['c', 'a', 'b']) ids.push(await createIdentity(tc.mgmt, { name: `${attr}-${n}`, roleAttributes: [attr] }));
    const policy = await create({ identityRoles: [`#${attr}`] });
    const res = await tc.mgmt.get(`/service-policies/${policy}/identities?filter=${q('true sort by name')}&limit=2&offset=1`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.data.map((i: { name: string }) => i.name), [`${attr}-b`, `${attr}-c`]);
    assert.deepEqual(res.body.meta.pagination, { limit: 2, offset: 1, totalCount: 3 });
    const filtered = await tc.mgmt.get(`/service-policies/${policy}/identities?filter=${q(`name = "${attr}-a"`)}`);
    assert.deepEqual(filtered.body.data.map((i: { id: string }) => i.id), [ids[1]]);
  });

  it('lists the posture checks the policy includes', async () => {
    const attr = uniqueName('pcattr').replace(/-/g, '');
    const tagged = await createPostureCheck({ roleAttributes: [attr] });
    const other = await createPostureCheck();
    const policy = await create({ semantic: 'AnyOf', postureCheckRoles: [`#${attr}`, `@${other}`] });
    assert.deepEqual(await memberIds(policy, 'posture-checks'), [tagged, other].sort());
    const later = await createPostureCheck({ roleAttributes: [attr] });
    assert.deepEqual(await memberIds(policy, 'posture-checks'), [tagged, other, later].sort());
    assert.deepEqual(await memberIds(policy, 'posture-checks', `&filter=${q(`id = "${later}"`)}`), [later]);
  });
});

describe('service policy permissions', () => {
  it('answers a non-admin identity with 401 UNAUTHORIZED on every operation and changes nothing', async () => {
    const user = await createUserWithPassword(tc);
    const asUser = tc.mgmt.as({ token: user.token });
    const id = await create();
    const before = await count();
    for (const res of [
      await asUser.get('/service-policies'),
      await asUser.post('/service-policies', body()),
      await asUser.get(`/service-policies/${id}`),
      await asUser.put(`/service-policies/${id}`, body()),
      await asUser.patch(`/service-policies/${id}`, { semantic: 'AnyOf' }),
      await asUser.delete(`/service-policies/${id}`),
      await asUser.get(`/service-policies/${id}/identities`),
      await asUser.get(`/service-policies/${id}/posture-checks`),
    ]) {
      assertError(res, 401, 'UNAUTHORIZED');
    }
    assert.equal(await count(), before);
    assert.equal((await detail(id)).semantic, 'AllOf');
  });

  it('lets service-policy.read read but not write', async () => {
    const reader = await createUserWithPassword(tc, { permissions: ['service-policy.read'] });
    const asReader = tc.mgmt.as({ token: reader.token });
    const id = await create();
    assert.equal((await asReader.get('/service-policies')).status, 200);
    assert.equal((await asReader.get(`/service-policies/${id}`)).status, 200);
    // The identities of a policy are identities: reading them needs identity read access too.
    assertError(await asReader.get(`/service-policies/${id}/identities`), 401, 'UNAUTHORIZED');
    const both = tc.mgmt.as({ token: (await createUserWithPassword(tc, { permissions: ['service-policy.read', 'identity.read'] })).token });
    assert.equal((await both.get(`/service-policies/${id}/identities`)).status, 200);
    assertError(await asReader.post('/service-policies', body()), 401, 'UNAUTHORIZED');
    assertError(await asReader.delete(`/service-policies/${id}`), 401, 'UNAUTHORIZED');
  });
});
