/**
 * Management identity operations: list (filter, sort, paging, roleFilter), create, detail, put, patch,
 * delete, an identity's authenticators, the identity role-attribute list and the identity types. Covers
 * the read model, each validation failure (and that it changes nothing), unknown ids, permissions, and
 * persistence across a restart.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_PASSWORD, ADMIN_USER, startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpClient, type HttpResponse } from '../../support/client.ts';
import { createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertEmptyList, ERROR_META, TIMESTAMP, assertDecodeError, assertEmptyOk, assertError, assertFieldError, sleep } from '../../support/assertions.ts';

const tc: TestController = await startTestController();

const NESTED_LINKS = [
  'edge-router-policies',
  'edge-routers',
  'service-policies',
  'services',
  'posture-data',
  'failed-service-requests',
  'authenticators',
  'enrollments',
  'service-configs',
];
/** Upstream renders `interfaces` as null when none were reported (upstream model §3.2). */
const DETAIL_NULLS = { allowNullAt: ['/data/interfaces'] };
const LIST_NULLS = { allowNullAt: ['/data/*/interfaces'] };

function q(filter: string): string {
  return encodeURIComponent(filter);
}

async function detail(id: string, client: HttpClient = tc.mgmt): Promise<Record<string, any>> {
  const res = await client.get(`/identities/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/identities/{id}', 200, res.body, DETAIL_NULLS);
  return res.body.data;
}

async function identityCount(): Promise<number> {
  const res = await tc.mgmt.get('/identities?limit=1');
  assert.equal(res.status, 200, res.text);
  return res.body.meta.pagination.totalCount as number;
}

async function list(query: string): Promise<HttpResponse> {
  const res = await tc.mgmt.get(`/identities?${query}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/identities', 200, res.body, LIST_NULLS);
  return res;
}

async function namesFor(filter: string): Promise<string[]> {
  const res = await list(`filter=${q(filter)}&limit=500`);
  return res.body.data.map((i: { name: string }) => i.name);
}

function assertIdentityNotFound(res: HttpResponse, id: string): void {
  assertError(res, 404, 'NOT_FOUND');
  assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: `identity with id ${id} not found` });
}

/** Creates an identity through the API and expects the create to fail; the number of identities must not move. */
async function expectCreateRejected(body: Record<string, unknown>, check: (res: HttpResponse) => void): Promise<void> {
  const before = await identityCount();
  const res = await tc.mgmt.post('/identities', body);
  check(res);
  // The reference declares only 400 and 401 error bodies for this operation (upstream also answers 404).
  if (res.status === 400 || res.status === 401) assertMatchesReference('management', 'POST', '/identities', res.status, res.body);
  assert.equal(await identityCount(), before, 'no identity was created');
}

function validBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: uniqueName('identity'), type: 'User', isAdmin: false, ...overrides };
}

/** Every identity operation with a request that would succeed for an admin. */
function identityOperations(targetId: string): Array<{ method: string; path: string; body?: unknown }> {
  return [
    { method: 'GET', path: '/identities' },
    { method: 'POST', path: '/identities', body: validBody() },
    { method: 'GET', path: `/identities/${targetId}` },
    { method: 'PUT', path: `/identities/${targetId}`, body: { name: uniqueName('put'), type: 'User', isAdmin: false } },
    { method: 'PATCH', path: `/identities/${targetId}`, body: { roleAttributes: ['patched'] } },
    { method: 'DELETE', path: `/identities/${targetId}` },
    { method: 'GET', path: `/identities/${targetId}/authenticators` },
    { method: 'GET', path: '/identity-role-attributes' },
    { method: 'GET', path: '/identity-types' },
    { method: 'GET', path: '/identity-types/Default' },
  ];
}

async function adminIdentityId(): Promise<string> {
  const res = await tc.mgmt.get('/current-identity');
  assert.equal(res.status, 200, res.text);
  return res.body.data.id as string;
}

describe('POST /identities', () => {
  it('creates an identity and answers 201 with only its id and self link', async () => {
    const res = await tc.mgmt.post('/identities', validBody());
    assert.equal(res.status, 201, res.text);
    assertMatchesReference('management', 'POST', '/identities', 201, res.body);
    const id = res.body.data.id;
    assert.equal(typeof id, 'string');
    assert.ok(id.length > 0);
    assert.deepEqual(res.body, { data: { id, _links: { self: { href: `./identities/${id}` } } }, meta: {} });
  });

  it('reads back defaults for every optional field, the base fields and all links', async () => {
    const name = uniqueName('defaults');
    const id = await createIdentity(tc.mgmt, { name });
    const d = await detail(id);
    assert.equal(d.id, id);
    assert.equal(d.name, name);
    assert.match(d.createdAt, TIMESTAMP);
    assert.match(d.updatedAt, TIMESTAMP);
    assert.equal(d.createdAt, d.updatedAt);
    assert.ok(Math.abs(Date.parse(d.createdAt) - Date.now()) < 60_000, 'createdAt is now');
    assert.deepEqual(d.tags, {});
    const links: Record<string, { href: string }> = { self: { href: `./identities/${id}` } };
    for (const nested of NESTED_LINKS) links[nested] = { href: `./identities/${id}/${nested}` };
    links['auth-policies'] = { href: './auth-policies/default' };
    assert.deepEqual(d._links, links);
    assert.deepEqual(d.type, { _links: { self: { href: './identity-types/Default' } }, entity: 'identity-types', id: 'Default', name: 'Default' });
    assert.equal(d.typeId, 'Default');
    assert.equal(d.authPolicyId, 'default');
    assert.deepEqual(d.authPolicy, { _links: { self: { href: './auth-policies/default' } }, entity: 'auth-policies', id: 'default', name: 'Default' });
    assert.deepEqual(d.roleAttributes, []);
    assert.deepEqual(d.appData, {});
    assert.equal(d.defaultHostingCost, 0);
    assert.equal(d.defaultHostingPrecedence, 'default');
    assert.equal(d.externalId, null);
    assert.equal(d.permissions, null);
    assert.deepEqual(d.serviceHostingCosts, {});
    assert.deepEqual(d.serviceHostingPrecedences, {});
    assert.equal(d.isAdmin, false);
    assert.equal(d.isDefaultAdmin, false);
    assert.equal(d.disabled, false);
    assert.equal(d.hasApiSession, false);
    assert.equal(d.isMfaEnabled, false);
    assert.deepEqual(d.authenticators, {});
    assert.deepEqual(d.enrollment, {});
    assert.deepEqual(d.envInfo, {});
    assert.deepEqual(d.sdkInfo, {});
    assert.ok(!('disabledAt' in d) || d.disabledAt === null);
  });

  it('stores every supplied field, with role attributes deduplicated and sorted', async () => {
    const name = uniqueName('full');
    const externalId = uniqueName('ext');
    const res = await tc.mgmt.post('/identities', {
      name,
      type: 'User',
      isAdmin: true,
      roleAttributes: ['web', 'db', 'web', 'api'],
      appData: { team: 'blue', nested: { list: [1, 2], flag: true } },
      defaultHostingCost: 65535,
      defaultHostingPrecedence: 'required',
      externalId,
      permissions: ['identity.read', 'ops'],
      tags: { env: 'prod', managed: true, note: null },
    });
    assert.equal(res.status, 201, res.text);
    const d = await detail(res.body.data.id);
    assert.equal(d.name, name);
    assert.equal(d.isAdmin, true);
    assert.equal(d.isDefaultAdmin, false);
    assert.deepEqual(d.roleAttributes, ['api', 'db', 'web']);
    assert.deepEqual(d.appData, { team: 'blue', nested: { list: [1, 2], flag: true } });
    assert.equal(d.defaultHostingCost, 65535);
    assert.equal(d.defaultHostingPrecedence, 'required');
    assert.equal(d.externalId, externalId);
    assert.deepEqual(d.permissions, ['identity.read', 'ops']);
    assert.deepEqual(d.tags, { env: 'prod', managed: true, note: null });
  });

  it('stores the type as Default whichever of User, Device, Service or Default was requested', async () => {
    for (const type of ['User', 'Device', 'Service', 'Default']) {
      const id = await createIdentity(tc.mgmt, { type });
      const d = await detail(id);
      assert.equal(d.typeId, 'Default', type);
      assert.equal(d.type.id, 'Default', type);
      assert.equal(d.type.name, 'Default', type);
    }
  });

  it('ignores the requested type Router and creates a Default identity (upstream ignores the type on create)', async () => {
    const res = await tc.mgmt.post('/identities', validBody({ type: 'Router' }));
    assert.equal(res.status, 201, res.text);
    assert.equal((await detail(res.body.data.id)).typeId, 'Default');
  });

  it('ignores unknown properties in the body', async () => {
    const res = await tc.mgmt.post('/identities', validBody({ noSuchField: 'x', another: { deep: 1 } }));
    assert.equal(res.status, 201, res.text);
    const d = await detail(res.body.data.id);
    assert.ok(!('noSuchField' in d));
  });

  it('rejects a missing name with COULD_NOT_VALIDATE naming the field', async () => {
    await expectCreateRejected({ type: 'User', isAdmin: false }, (res) => assertFieldError(res, 'name'));
  });

  it('rejects an empty name with COULD_NOT_VALIDATE naming the field', async () => {
    await expectCreateRejected({ name: '', type: 'User', isAdmin: false }, (res) => assertFieldError(res, 'name'));
  });

  it('rejects a missing isAdmin with COULD_NOT_VALIDATE naming the field', async () => {
    await expectCreateRejected({ name: uniqueName('no-admin-flag'), type: 'User' }, (res) => assertFieldError(res, 'isAdmin'));
  });

  it('rejects a missing type with COULD_NOT_VALIDATE naming the field', async () => {
    await expectCreateRejected({ name: uniqueName('no-type'), isAdmin: false }, (res) => assertFieldError(res, 'type'));
  });

  it('rejects a name that is not a string with COULD_NOT_PARSE_BODY naming the field, as upstream', async () => {
    await expectCreateRejected(validBody({ name: 5 }), (res) => assertDecodeError(res, 'name'));
  });

  it('names the first value that can not be decoded, in document order, before any validation', async () => {
    await expectCreateRejected({ name: 5, type: 'Bogus', isAdmin: false }, (res) => assertDecodeError(res, 'name'));
    await expectCreateRejected({ isAdmin: 'yes', name: 5, type: 'User' }, (res) => assertDecodeError(res, 'isAdmin'));
    await expectCreateRejected({ name: 'ok', isAdmin: false, type: 'Bogus' }, (res) => assertFieldError(res, 'type'));
    for (const body of [[], 'x', 7]) {
      const res = await tc.mgmt.post('/identities', body);
      assertDecodeError(res, '');
      assert.match(res.body.error.cause.message, /rest_model\.IdentityCreate/);
    }
  });

  it('rejects a type outside the identityType enum with COULD_NOT_VALIDATE naming the field', async () => {
    await expectCreateRejected(validBody({ type: 'Robot' }), (res) => assertFieldError(res, 'type'));
  });

  it('rejects an isAdmin that is not a boolean with COULD_NOT_PARSE_BODY naming the field', async () => {
    await expectCreateRejected(validBody({ isAdmin: 'yes' }), (res) => assertDecodeError(res, 'isAdmin'));
  });

  it('rejects a defaultHostingCost above 65535 or below 0 with COULD_NOT_VALIDATE naming the field', async () => {
    await expectCreateRejected(validBody({ defaultHostingCost: 70000 }), (res) => assertFieldError(res, 'defaultHostingCost'));
    await expectCreateRejected(validBody({ defaultHostingCost: -1 }), (res) => assertFieldError(res, 'defaultHostingCost'));
    await expectCreateRejected(validBody({ defaultHostingCost: 1.5 }), (res) => assertDecodeError(res, 'defaultHostingCost'));
  });

  it('rejects a defaultHostingPrecedence outside the enum with COULD_NOT_VALIDATE naming the field', async () => {
    await expectCreateRejected(validBody({ defaultHostingPrecedence: 'sometimes' }), (res) => assertFieldError(res, 'defaultHostingPrecedence'));
  });

  it('rejects an unknown permission value with COULD_NOT_VALIDATE naming the field', async () => {
    await expectCreateRejected(validBody({ permissions: ['identity.read', 'identity.fly'] }), (res) => assertFieldError(res, /^permissions/));
    await expectCreateRejected(validBody({ permissions: ['ops.create'] }), (res) => assertFieldError(res, /^permissions/));
  });

  it('rejects tags with a nested object with COULD_NOT_VALIDATE naming the field', async () => {
    await expectCreateRejected(validBody({ tags: { env: { nested: 'x' } } }), (res) => assertFieldError(res, /^tags/));
    await expectCreateRejected(validBody({ tags: { env: ['a'] } }), (res) => assertFieldError(res, /^tags/));
  });

  it('rejects roleAttributes that are not an array of strings with COULD_NOT_PARSE_BODY naming the field', async () => {
    await expectCreateRejected(validBody({ roleAttributes: 'web' }), (res) => assertDecodeError(res, 'roleAttributes'));
    await expectCreateRejected(validBody({ roleAttributes: { web: true } }), (res) => assertDecodeError(res, 'roleAttributes'));
    await expectCreateRejected(validBody({ roleAttributes: [1, 2] }), (res) => assertDecodeError(res, 'roleAttributes'));
  });

  it('rejects a name that is already used with COULD_NOT_VALIDATE "name must be unique"', async () => {
    const name = uniqueName('taken');
    await createIdentity(tc.mgmt, { name });
    await expectCreateRejected(validBody({ name }), (res) => {
      assertFieldError(res, 'name');
      assert.equal(res.body.error.cause.reason, 'name must be unique');
      assert.equal(res.body.error.cause.value, name);
    });
    assert.deepEqual(await namesFor(`name = "${name}"`), [name]);
  });

  it('rejects an externalId that is already used with COULD_NOT_VALIDATE naming the field', async () => {
    const externalId = uniqueName('ext');
    await createIdentity(tc.mgmt, { externalId });
    await expectCreateRejected(validBody({ externalId }), (res) => {
      assertFieldError(res, 'externalId');
      assert.equal(res.body.error.cause.reason, `duplicate value '${externalId}' in unique index on identities store`);
    });
    const res = await list(`filter=${q(`externalId = "${externalId}"`)}`);
    assert.equal(res.body.meta.pagination.totalCount, 1);
  });

  it('rejects hosting costs keyed by a service that does not exist with 404 NOT_FOUND', async () => {
    await expectCreateRejected(validBody({ serviceHostingCosts: { noSuchService: 5 } }), (res) => assertError(res, 404, 'NOT_FOUND'));
  });

  it('rejects a malformed JSON body with COULD_NOT_PARSE_BODY and a wrong content type with 415', async () => {
    const before = await identityCount();
    const broken = await tc.mgmt.request('POST', '/identities', { rawBody: '{"name": "x", ', contentType: 'application/json' });
    assertError(broken, 400, 'COULD_NOT_PARSE_BODY');
    const text = await tc.mgmt.request('POST', '/identities', { rawBody: JSON.stringify(validBody()), contentType: 'text/plain' });
    assertError(text, 415, 'COULD_NOT_VALIDATE');
    assert.equal(await identityCount(), before);
  });
});

describe('GET /identities/{id}', () => {
  it('shows a logged-in identity with hasApiSession and its password authenticator', async () => {
    const user = await createUserWithPassword(tc);
    const d = await detail(user.id);
    assert.equal(d.hasApiSession, true);
    assert.equal(d.authenticators.updb.username, user.username);
    assert.equal(typeof d.authenticators.updb.id, 'string');
    assert.equal(d.authenticators.cert, undefined);
  });

  it('shows the default admin as isAdmin and isDefaultAdmin', async () => {
    const d = await detail(await adminIdentityId());
    assert.equal(d.isAdmin, true);
    assert.equal(d.isDefaultAdmin, true);
    assert.equal(d.authenticators.updb.username, ADMIN_USER);
  });

  it('answers an unknown id with 404 NOT_FOUND naming the identity', async () => {
    const res = await tc.mgmt.get('/identities/doesNotExist');
    assertIdentityNotFound(res, 'doesNotExist');
    assertMatchesReference('management', 'GET', '/identities/{id}', 404, res.body);
  });
});

describe('PATCH /identities/{id}', () => {
  async function seeded(): Promise<{ id: string; before: Record<string, any> }> {
    const id = await createIdentity(tc.mgmt, {
      roleAttributes: ['alpha', 'beta'],
      appData: { keep: 'me' },
      externalId: uniqueName('ext'),
      defaultHostingCost: 7,
      defaultHostingPrecedence: 'failed',
      permissions: ['identity.read'],
      tags: { env: 'dev' },
    });
    return { id, before: await detail(id) };
  }

  it('changes only the supplied fields, answers an empty envelope and refreshes updatedAt', async () => {
    const { id, before } = await seeded();
    await sleep(5);
    const newName = uniqueName('patched');
    const res = await tc.mgmt.patch(`/identities/${id}`, { name: newName, defaultHostingCost: 9 });
    assertEmptyOk(res);
    assertMatchesReference('management', 'PATCH', '/identities/{id}', 200, res.body);
    const after = await detail(id);
    assert.equal(after.name, newName);
    assert.equal(after.defaultHostingCost, 9);
    assert.equal(after.createdAt, before.createdAt);
    assert.ok(after.updatedAt > before.updatedAt, `${after.updatedAt} > ${before.updatedAt}`);
    const { name: _n1, defaultHostingCost: _c1, updatedAt: _u1, ...restAfter } = after;
    const { name: _n2, defaultHostingCost: _c2, updatedAt: _u2, ...restBefore } = before;
    assert.deepEqual(restAfter, restBefore);
  });

  it('ignores fields whose value is null', async () => {
    const { id, before } = await seeded();
    const res = await tc.mgmt.patch(`/identities/${id}`, {
      name: null,
      isAdmin: null,
      roleAttributes: null,
      appData: null,
      externalId: null,
      permissions: null,
      defaultHostingCost: null,
      defaultHostingPrecedence: null,
      type: null,
      tags: null,
      authPolicyId: null,
      serviceHostingCosts: null,
      serviceHostingPrecedences: null,
    });
    assertEmptyOk(res);
    const after = await detail(id);
    const { updatedAt: _a, ...restAfter } = after;
    const { updatedAt: _b, ...restBefore } = before;
    assert.deepEqual(restAfter, restBefore);
  });

  it('replaces a whole map field when one is supplied', async () => {
    const { id } = await seeded();
    assertEmptyOk(await tc.mgmt.patch(`/identities/${id}`, { appData: { other: 1 }, tags: { owner: 'ops' } }));
    const after = await detail(id);
    assert.deepEqual(after.appData, { other: 1 });
    assert.deepEqual(after.tags, { owner: 'ops' });
  });

  it('replaces role attributes, deduplicated and sorted', async () => {
    const { id } = await seeded();
    assertEmptyOk(await tc.mgmt.patch(`/identities/${id}`, { roleAttributes: ['zeta', 'eta', 'zeta'] }));
    assert.deepEqual((await detail(id)).roleAttributes, ['eta', 'zeta']);
    assertEmptyOk(await tc.mgmt.patch(`/identities/${id}`, { roleAttributes: [] }));
    assert.deepEqual((await detail(id)).roleAttributes, []);
  });

  it('accepts a legacy type and keeps the identity Default', async () => {
    const { id } = await seeded();
    assertEmptyOk(await tc.mgmt.patch(`/identities/${id}`, { type: 'Device' }));
    assert.equal((await detail(id)).typeId, 'Default');
  });

  it('refuses to change the type to Router and changes nothing', async () => {
    const { id, before } = await seeded();
    const res = await tc.mgmt.patch(`/identities/${id}`, { type: 'Router', name: uniqueName('router') });
    assertFieldError(res, 'type');
    assertMatchesReference('management', 'PATCH', '/identities/{id}', 400, res.body);
    assert.deepEqual(await detail(id), before);
  });

  it('rejects invalid values with COULD_NOT_VALIDATE naming the field and changes nothing', async () => {
    const { id, before } = await seeded();
    const cases: Array<[Record<string, unknown>, string | RegExp]> = [
      [{ type: 'Robot' }, 'type'],
      [{ defaultHostingCost: 70000 }, 'defaultHostingCost'],
      [{ defaultHostingCost: -1 }, 'defaultHostingCost'],
      [{ defaultHostingPrecedence: 'never' }, 'defaultHostingPrecedence'],
      [{ permissions: ['nope'] }, /^permissions/],
      [{ tags: { env: { deep: true } } }, /^tags/],
    ];
    for (const [body, field] of cases) {
      const res = await tc.mgmt.patch(`/identities/${id}`, { ...body, externalId: uniqueName('should-not-apply') });
      assertFieldError(res, field);
    }
    // Values of the wrong JSON kind can not be decoded at all.
    for (const [body, field] of [[{ name: 5 }, 'name'], [{ isAdmin: 'no' }, 'isAdmin'], [{ roleAttributes: 'alpha' }, 'roleAttributes']] as const) {
      assertDecodeError(await tc.mgmt.patch(`/identities/${id}`, { ...body, externalId: uniqueName('should-not-apply') }), field);
    }
    assert.deepEqual(await detail(id), before);
  });

  it('rejects an externalId used by another identity and changes nothing', async () => {
    const { id, before } = await seeded();
    const other = await detail(await createIdentity(tc.mgmt, { externalId: uniqueName('ext') }));
    const res = await tc.mgmt.patch(`/identities/${id}`, { externalId: other.externalId });
    assert.ok(res.status >= 400 && res.status < 500, `a 4xx answer, got ${res.status} ${res.text}`);
    assert.deepEqual(await detail(id), before);
  });

  it('answers an unknown id with 404 NOT_FOUND naming the identity', async () => {
    const res = await tc.mgmt.patch('/identities/doesNotExist', { roleAttributes: ['x'] });
    assertIdentityNotFound(res, 'doesNotExist');
    assertMatchesReference('management', 'PATCH', '/identities/{id}', 404, res.body);
  });
});

describe('PUT /identities/{id}', () => {
  it('takes the default auth policy when authPolicyId is missing, empty or null', async () => {
    const policy = await tc.mgmt.post('/auth-policies', {
      name: uniqueName('ap'),
      primary: { cert: { allowed: true, allowExpiredCerts: false }, extJwt: { allowed: false, allowedSigners: [] }, updb: { allowed: true, lockoutDurationMinutes: 0, maxAttempts: 0, minPasswordLength: 5, requireMixedCase: false, requireNumberChar: false, requireSpecialChar: false } },
      secondary: { requireTotp: false },
    });
    assert.equal(policy.status, 201, policy.text);
    for (const authPolicyId of [undefined, '', null]) {
      const id = await createIdentity(tc.mgmt, { authPolicyId: policy.body.data.id });
      assertEmptyOk(await tc.mgmt.put(`/identities/${id}`, { name: uniqueName('put'), type: 'User', isAdmin: false, ...(authPolicyId === undefined ? {} : { authPolicyId }) }));
      assert.equal((await detail(id)).authPolicyId, 'default', String(authPolicyId));
    }
    const created = await tc.mgmt.post('/identities', { ...validBody(), authPolicyId: '' });
    assert.equal(created.status, 201, created.text);
    assert.equal((await detail(created.body.data.id)).authPolicyId, 'default');
    assertError(await tc.mgmt.put(`/identities/${created.body.data.id}`, { name: uniqueName('put'), type: 'User', isAdmin: false, authPolicyId: 'nope' }), 404, 'NOT_FOUND');
  });

  it('replaces every field and resets omitted optional fields to their defaults', async () => {
    const id = await createIdentity(tc.mgmt, {
      roleAttributes: ['alpha'],
      appData: { a: 1 },
      externalId: uniqueName('ext'),
      defaultHostingCost: 12,
      defaultHostingPrecedence: 'required',
      permissions: ['identity.read'],
      tags: { env: 'prod' },
      isAdmin: true,
    });
    const before = await detail(id);
    await sleep(5);
    const name = uniqueName('put');
    const res = await tc.mgmt.put(`/identities/${id}`, { name, type: 'Service', isAdmin: false });
    assertEmptyOk(res);
    assertMatchesReference('management', 'PUT', '/identities/{id}', 200, res.body);
    const d = await detail(id);
    assert.equal(d.name, name);
    assert.equal(d.isAdmin, false);
    assert.equal(d.typeId, 'Default');
    assert.deepEqual(d.roleAttributes, []);
    assert.deepEqual(d.appData, {});
    assert.equal(d.externalId, null);
    assert.equal(d.defaultHostingCost, 0);
    assert.equal(d.defaultHostingPrecedence, 'default');
    assert.equal(d.permissions, null);
    assert.deepEqual(d.tags, {});
    assert.equal(d.authPolicyId, 'default');
    assert.deepEqual(d.serviceHostingCosts, {});
    assert.deepEqual(d.serviceHostingPrecedences, {});
    assert.equal(d.createdAt, before.createdAt);
    assert.ok(d.updatedAt > before.updatedAt);
  });

  it('stores every supplied field', async () => {
    const id = await createIdentity(tc.mgmt);
    const externalId = uniqueName('ext');
    const name = uniqueName('put-full');
    assertEmptyOk(
      await tc.mgmt.put(`/identities/${id}`, {
        name,
        type: 'User',
        isAdmin: true,
        roleAttributes: ['b', 'a', 'a'],
        appData: { k: 'v' },
        externalId,
        defaultHostingCost: 100,
        defaultHostingPrecedence: 'failed',
        permissions: ['admin_readonly'],
        tags: { env: 'qa' },
      }),
    );
    const d = await detail(id);
    assert.equal(d.name, name);
    assert.equal(d.isAdmin, true);
    assert.deepEqual(d.roleAttributes, ['a', 'b']);
    assert.deepEqual(d.appData, { k: 'v' });
    assert.equal(d.externalId, externalId);
    assert.equal(d.defaultHostingCost, 100);
    assert.equal(d.defaultHostingPrecedence, 'failed');
    assert.deepEqual(d.permissions, ['admin_readonly']);
    assert.deepEqual(d.tags, { env: 'qa' });
  });

  it('requires name, type and isAdmin, each missing one answering COULD_NOT_VALIDATE naming it, and changes nothing', async () => {
    const id = await createIdentity(tc.mgmt, { roleAttributes: ['keep'] });
    const before = await detail(id);
    const full = { name: uniqueName('put'), type: 'User', isAdmin: false };
    for (const field of ['name', 'type', 'isAdmin'] as const) {
      const { [field]: _omitted, ...body } = full;
      const res = await tc.mgmt.put(`/identities/${id}`, body);
      assertFieldError(res, field);
      assertMatchesReference('management', 'PUT', '/identities/{id}', 400, res.body);
    }
    assert.deepEqual(await detail(id), before);
  });

  it('rejects invalid values with COULD_NOT_VALIDATE naming the field and changes nothing', async () => {
    const id = await createIdentity(tc.mgmt);
    const before = await detail(id);
    const base = { name: uniqueName('put'), type: 'User', isAdmin: false };
    const cases: Array<[Record<string, unknown>, string | RegExp]> = [
      [{ type: 'Robot' }, 'type'],
      [{ defaultHostingCost: 70000 }, 'defaultHostingCost'],
      [{ permissions: ['identity.fly'] }, /^permissions/],
      [{ tags: { a: { b: 'c' } } }, /^tags/],
    ];
    for (const [override, field] of cases) assertFieldError(await tc.mgmt.put(`/identities/${id}`, { ...base, ...override }), field);
    assertDecodeError(await tc.mgmt.put(`/identities/${id}`, { ...base, name: 5 }), 'name');
    assertDecodeError(await tc.mgmt.put(`/identities/${id}`, { ...base, roleAttributes: 'x' }), 'roleAttributes');
    assert.deepEqual(await detail(id), before);
  });

  it('refuses to change the type to Router and changes nothing', async () => {
    const id = await createIdentity(tc.mgmt);
    const before = await detail(id);
    const res = await tc.mgmt.put(`/identities/${id}`, { name: uniqueName('router'), type: 'Router', isAdmin: false });
    assertFieldError(res, 'type');
    assert.deepEqual(await detail(id), before);
  });

  it('answers an unknown id with 404 NOT_FOUND naming the identity', async () => {
    const res = await tc.mgmt.put('/identities/doesNotExist', { name: uniqueName('ghost'), type: 'User', isAdmin: false });
    assertIdentityNotFound(res, 'doesNotExist');
    assertMatchesReference('management', 'PUT', '/identities/{id}', 404, res.body);
  });
});

describe('DELETE /identities/{id}', () => {
  it('deletes the identity and answers an empty envelope', async () => {
    const id = await createIdentity(tc.mgmt);
    const res = await tc.mgmt.delete(`/identities/${id}`);
    assertEmptyOk(res);
    assertMatchesReference('management', 'DELETE', '/identities/{id}', 200, res.body);
    assertIdentityNotFound(await tc.mgmt.get(`/identities/${id}`), id);
    assertIdentityNotFound(await tc.mgmt.delete(`/identities/${id}`), id);
  });

  it('removes its authenticators and API sessions, so its token stops working and it can no longer log in', async () => {
    const user = await createUserWithPassword(tc);
    const authenticatorId = (await detail(user.id)).authenticators.updb.id as string;
    const asUser = tc.mgmt.as({ token: user.token });
    assert.equal((await asUser.get('/current-api-session')).status, 200);
    assertEmptyOk(await tc.mgmt.delete(`/identities/${user.id}`));
    const afterToken = await asUser.get('/current-api-session');
    assertError(afterToken, 401, 'UNAUTHORIZED');
    assertError(await tc.mgmt.get(`/authenticators/${authenticatorId}`), 404, 'NOT_FOUND');
    const sessions = await tc.mgmt.get(`/api-sessions?filter=${q(`identity = "${user.id}"`)}`);
    assert.equal(sessions.status, 200, sessions.text);
    assert.equal(sessions.body.meta.pagination.totalCount, 0);
    const login = await tc.http.post('/edge/management/v1/authenticate?method=password', { username: user.username, password: user.password });
    assertError(login, 401, 'INVALID_AUTH');
  });

  it('refuses to delete the default admin with 400 ENTITY_CAN_NOT_BE_DELETED', async () => {
    const adminId = await adminIdentityId();
    const res = await tc.mgmt.delete(`/identities/${adminId}`);
    assertError(res, 400, 'ENTITY_CAN_NOT_BE_DELETED');
    assertMatchesReference('management', 'DELETE', '/identities/{id}', 400, res.body);
    assert.equal((await detail(adminId)).isDefaultAdmin, true);
    assert.equal((await tc.mgmt.get('/current-api-session')).status, 200, 'the admin session survives');
  });

  it('answers an unknown id with 404 NOT_FOUND naming the identity', async () => {
    const res = await tc.mgmt.delete('/identities/doesNotExist');
    assertIdentityNotFound(res, 'doesNotExist');
    assertMatchesReference('management', 'DELETE', '/identities/{id}', 404, res.body);
  });
});

describe('GET /identities', () => {
  /** Three identities sharing a unique name prefix: b (admin, attrs x+y, tags env=prod), a (attr x), c (attr y). */
  async function family() {
    const prefix = uniqueName('fam');
    const attrX = uniqueName('attrx');
    const attrY = uniqueName('attry');
    const b = await createIdentity(tc.mgmt, { name: `${prefix}-b`, isAdmin: true, roleAttributes: [attrX, attrY], tags: { env: 'prod' } });
    const a = await createIdentity(tc.mgmt, { name: `${prefix}-a`, roleAttributes: [attrX], tags: { env: 'dev' } });
    const c = await createIdentity(tc.mgmt, { name: `${prefix}-c`, roleAttributes: [attrY] });
    return { prefix, attrX, attrY, a, b, c };
  }

  it('answers the list envelope with pagination and the filterable fields', async () => {
    const res = await list('');
    assert.ok(Array.isArray(res.body.data));
    const { pagination, filterableFields } = res.body.meta;
    assert.equal(pagination.limit, 10);
    assert.equal(pagination.offset, 0);
    assert.equal(pagination.totalCount, await identityCount());
    assert.ok(res.body.data.length <= 10);
    assert.ok(filterableFields.includes('name'));
    assert.ok(filterableFields.includes('roleAttributes'));
    assert.ok(filterableFields.includes('isAdmin'));
    for (const item of res.body.data) {
      assert.match(item.createdAt, TIMESTAMP);
      assert.match(item.updatedAt, TIMESTAMP);
      assert.equal(item._links.self.href, `./identities/${item.id}`);
    }
  });

  it('filters by exact name', async () => {
    const f = await family();
    assert.deepEqual(await namesFor(`name = "${f.prefix}-a"`), [`${f.prefix}-a`]);
    assert.deepEqual(await namesFor(`name = "${f.prefix}"`), []);
  });

  it('filters by name contains', async () => {
    const f = await family();
    assert.deepEqual((await namesFor(`name contains "${f.prefix}"`)).sort(), [`${f.prefix}-a`, `${f.prefix}-b`, `${f.prefix}-c`]);
  });

  it('filters by a role attribute with anyOf(roleAttributes)', async () => {
    const f = await family();
    assert.deepEqual((await namesFor(`anyOf(roleAttributes) = "${f.attrX}"`)).sort(), [`${f.prefix}-a`, `${f.prefix}-b`]);
    assert.deepEqual((await namesFor(`anyOf(roleAttributes) = "${f.attrY}" and anyOf(roleAttributes) = "${f.attrX}"`)), [`${f.prefix}-b`]);
  });

  it('filters by isAdmin = true', async () => {
    const f = await family();
    assert.deepEqual(await namesFor(`name contains "${f.prefix}" and isAdmin = true`), [`${f.prefix}-b`]);
    assert.deepEqual((await namesFor(`name contains "${f.prefix}" and isAdmin = false`)).sort(), [`${f.prefix}-a`, `${f.prefix}-c`]);
  });

  it('filters by a tag value', async () => {
    const f = await family();
    assert.deepEqual(await namesFor(`name contains "${f.prefix}" and tags.env = "prod"`), [`${f.prefix}-b`]);
    assert.deepEqual(await namesFor(`name contains "${f.prefix}" and tags.env = null`), [`${f.prefix}-c`]);
  });

  it('sorts by name descending', async () => {
    const f = await family();
    assert.deepEqual(await namesFor(`name contains "${f.prefix}" sort by name desc`), [`${f.prefix}-c`, `${f.prefix}-b`, `${f.prefix}-a`]);
    const viaParam = await list(`filter=${q(`name contains "${f.prefix}"`)}&sort=${q('name asc')}`);
    assert.deepEqual(viaParam.body.data.map((i: { name: string }) => i.name), [`${f.prefix}-a`, `${f.prefix}-b`, `${f.prefix}-c`]);
  });

  it('pages with limit and offset and reports limit, offset and the unpaged total', async () => {
    const f = await family();
    const filter = q(`name contains "${f.prefix}" sort by name`);
    const page = await list(`filter=${filter}&limit=2&offset=1`);
    assert.deepEqual(page.body.meta.pagination, { limit: 2, offset: 1, totalCount: 3 });
    assert.deepEqual(page.body.data.map((i: { name: string }) => i.name), [`${f.prefix}-b`, `${f.prefix}-c`]);
    const past = await list(`filter=${filter}&limit=2&offset=5`);
    assert.deepEqual(past.body.data, []);
    assert.deepEqual(past.body.meta.pagination, { limit: 2, offset: 5, totalCount: 3 });
    const inFilter = await list(`filter=${q(`name contains "${f.prefix}" sort by name skip 2 limit 1`)}`);
    assert.deepEqual(inFilter.body.meta.pagination, { limit: 1, offset: 2, totalCount: 3 });
    assert.deepEqual(inFilter.body.data.map((i: { name: string }) => i.name), [`${f.prefix}-c`]);
  });

  it('rejects an unknown filter field with 400 INVALID_FILTER', async () => {
    const res = await tc.mgmt.get(`/identities?filter=${q('nme = "x"')}`);
    assertError(res, 400, 'INVALID_FILTER');
    assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: "unknown symbol 'nme'" });
    assertMatchesReference('management', 'GET', '/identities', 400, res.body);
  });

  it('rejects a filter with a syntax error or a set used as a scalar with 400 INVALID_FILTER', async () => {
    for (const filter of ['name = ', 'name = "x" and', '(name = "x"', 'roleAttributes = "x"', 'createdAt = "x"', ' ']) {
      assertError(await tc.mgmt.get(`/identities?filter=${q(filter)}`), 400, 'INVALID_FILTER');
    }
  });

  it('rejects a non-integer limit or offset with 400 COULD_NOT_VALIDATE naming the parameter', async () => {
    assertFieldError(await tc.mgmt.get('/identities?limit=abc'), 'limit');
    assertFieldError(await tc.mgmt.get('/identities?limit=1.5'), 'limit');
    assertFieldError(await tc.mgmt.get('/identities?offset=xyz'), 'offset');
  });

  it('pre-selects by role attribute with roleFilter, all roles required by default', async () => {
    const f = await family();
    const both = await list(`roleFilter=${q('#' + f.attrX)}&roleFilter=${q('#' + f.attrY)}`);
    assert.deepEqual(both.body.data.map((i: { id: string }) => i.id), [f.b]);
    const allOf = await list(`roleFilter=${q('#' + f.attrX)}&roleFilter=${q('#' + f.attrY)}&roleSemantic=AllOf`);
    assert.deepEqual(allOf.body.data.map((i: { id: string }) => i.id), [f.b]);
  });

  it('pre-selects identities with any of the roles with roleSemantic AnyOf', async () => {
    const f = await family();
    const res = await list(`roleFilter=${q('#' + f.attrX)}&roleFilter=${q('#' + f.attrY)}&roleSemantic=AnyOf&limit=500`);
    assert.deepEqual(res.body.data.map((i: { id: string }) => i.id).sort(), [f.a, f.b, f.c].sort());
    assert.equal(res.body.meta.pagination.totalCount, 3);
  });

  it('pre-selects by id with an @ role and combines roleFilter with the filter', async () => {
    const f = await family();
    const byId = await list(`roleFilter=${q('@' + f.c)}`);
    assert.deepEqual(byId.body.data.map((i: { id: string }) => i.id), [f.c]);
    const combined = await list(`roleFilter=${q('#' + f.attrX)}&filter=${q('isAdmin = false')}`);
    assert.deepEqual(combined.body.data.map((i: { id: string }) => i.id), [f.a]);
  });

  it('unions @ ids with the identities the # roles select (upstream roleFilter semantics)', async () => {
    const f = await family();
    const res = await list(`roleFilter=${q('#' + f.attrX)}&roleFilter=${q('@' + f.c)}&limit=500`);
    assert.deepEqual(res.body.data.map((i: { id: string }) => i.id).sort(), [f.a, f.b, f.c].sort());
  });

  it('rejects an unknown roleSemantic with 400 COULD_NOT_VALIDATE naming the semantic', async () => {
    const res = await tc.mgmt.get(`/identities?roleFilter=${q('#x')}&roleSemantic=SomeOf`);
    assertFieldError(res, 'semantic');
  });
});

describe('GET /identities/{id}/authenticators', () => {
  it("lists only that identity's authenticators", async () => {
    const user = await createUserWithPassword(tc);
    await createUserWithPassword(tc);
    const res = await tc.mgmt.get(`/identities/${user.id}/authenticators`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/identities/{id}/authenticators', 200, res.body);
    assert.equal(res.body.data.length, 1);
    const [authenticator] = res.body.data;
    assert.equal(authenticator.identityId, user.id);
    assert.equal(authenticator.identity.id, user.id);
    assert.equal(authenticator.method, 'updb');
    assert.equal(authenticator.username, user.username);
    assert.ok(!res.text.includes(user.password), 'never shows the password');
    assert.equal(res.body.meta.pagination.totalCount, 1);
  });

  it('answers an empty list for an identity without authenticators', async () => {
    const id = await createIdentity(tc.mgmt);
    const res = await tc.mgmt.get(`/identities/${id}/authenticators`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.data, []);
  });

  it('answers an empty list for an unknown identity, as upstream', async () => {
    const res = await tc.mgmt.get('/identities/doesNotExist/authenticators');
    assertEmptyList(res);
    assertMatchesReference('management', 'GET', '/identities/{id}/authenticators', 200, res.body);
  });
});

describe('GET /identity-role-attributes', () => {
  it('lists each attribute in use once, in ascending order', async () => {
    const stem = uniqueName('ra').replace(/-/g, '');
    await createIdentity(tc.mgmt, { roleAttributes: [`${stem}-b`, `${stem}-a`] });
    await createIdentity(tc.mgmt, { roleAttributes: [`${stem}-b`] });
    const res = await tc.mgmt.get(`/identity-role-attributes?filter=${q(`id contains "${stem}"`)}`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/identity-role-attributes', 200, res.body);
    assert.deepEqual(res.body.data, [`${stem}-a`, `${stem}-b`]);
    assert.equal(res.body.meta.pagination.totalCount, 2);
  });

  it('drops an attribute once no identity carries it', async () => {
    const attr = uniqueName('gone');
    const id = await createIdentity(tc.mgmt, { roleAttributes: [attr] });
    const filter = `?filter=${q(`id = "${attr}"`)}`;
    assert.deepEqual((await tc.mgmt.get(`/identity-role-attributes${filter}`)).body.data, [attr]);
    assertEmptyOk(await tc.mgmt.patch(`/identities/${id}`, { roleAttributes: [] }));
    assert.deepEqual((await tc.mgmt.get(`/identity-role-attributes${filter}`)).body.data, []);
  });

  it('rejects an invalid filter with 400 INVALID_FILTER', async () => {
    assertError(await tc.mgmt.get(`/identity-role-attributes?filter=${q('name = "x"')}`), 400, 'INVALID_FILTER');
  });

  it('lists every value, ignoring the limit, offset and sort parameters as upstream; the filter may page', async () => {
    const stem = uniqueName('many').replace(/-/g, '');
    const values = Array.from({ length: 12 }, (_, i) => `${stem}-${String(i).padStart(2, '0')}`);
    await createIdentity(tc.mgmt, { roleAttributes: values });
    const mine = `filter=${q(`id contains "${stem}"`)}`;
    for (const extra of ['', '&sort=name%20asc', '&limit=2&offset=3', '&sort=id%20desc', '&sort=bogus']) {
      const res = await tc.mgmt.get(`/identity-role-attributes?${mine}${extra}`);
      assert.equal(res.status, 200, `${extra}: ${res.text}`);
      assert.deepEqual(res.body.data, values, extra);
      assert.deepEqual(res.body.meta.pagination, { limit: 9223372036854775807, offset: 0, totalCount: 12 });
    }
    const paged = await tc.mgmt.get(`/identity-role-attributes?filter=${q(`id contains "${stem}" sort by id desc skip 1 limit 3`)}`);
    assert.deepEqual(paged.body.data, [values[10], values[9], values[8]]);
    assert.deepEqual(paged.body.meta.pagination, { limit: 3, offset: 1, totalCount: 12 });
    // No filter: still every value.
    const all = await tc.mgmt.get('/identity-role-attributes?sort=name%20asc');
    assert.ok(all.body.data.length >= 12 && values.every((v) => all.body.data.includes(v)));
  });
});

describe('GET /identity-types and GET /identity-types/{id}', () => {
  it('lists the Default and Router types', async () => {
    const res = await tc.mgmt.get('/identity-types');
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/identity-types', 200, res.body);
    const byId = Object.fromEntries(res.body.data.map((t: { id: string; name: string }) => [t.id, t.name]));
    assert.deepEqual(byId, { Default: 'Default', Router: 'Router' });
    assert.equal(res.body.meta.pagination.totalCount, 2);
    for (const t of res.body.data) {
      assert.equal(t._links.self.href, `./identity-types/${t.id}`);
      assert.match(t.createdAt, TIMESTAMP);
      assert.deepEqual(t.tags, {});
    }
  });

  it('filters identity types by name', async () => {
    const res = await tc.mgmt.get(`/identity-types?filter=${q('name = "Router"')}`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.data.map((t: { id: string }) => t.id), ['Router']);
  });

  it('shows one identity type', async () => {
    const res = await tc.mgmt.get('/identity-types/Default');
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/identity-types/{id}', 200, res.body);
    assert.equal(res.body.data.id, 'Default');
    assert.equal(res.body.data.name, 'Default');
    assert.equal(res.body.data._links.self.href, './identity-types/Default');
  });

  it('answers an unknown identity type with 404 NOT_FOUND', async () => {
    const res = await tc.mgmt.get('/identity-types/User');
    assertError(res, 404, 'NOT_FOUND');
    assertMatchesReference('management', 'GET', '/identity-types/{id}', 404, res.body);
  });
});

describe('identity operations: authorization', () => {
  it('answers every operation without a token with 401 UNAUTHORIZED and the missing-token challenge', async () => {
    const target = await createIdentity(tc.mgmt);
    const before = await identityCount();
    for (const op of identityOperations(target)) {
      const res = await tc.http.request(op.method, `/edge/management/v1${op.path}`, op.body === undefined ? {} : { body: op.body });
      assertError(res, 401, 'UNAUTHORIZED');
      assert.match(String(res.headers['www-authenticate']), /^zt-session realm="zt-session" error="missing"/, `${op.method} ${op.path}`);
    }
    await detail(target);
    assert.equal(await identityCount(), before);
  });

  it('answers every operation of a non-admin identity with 401 UNAUTHORIZED without a challenge', async () => {
    const user = await createUserWithPassword(tc);
    const asUser = tc.mgmt.as({ token: user.token });
    const target = await createIdentity(tc.mgmt);
    const targetBefore = await detail(target);
    const before = await identityCount();
    // Identity types are a catalogue any session may read, as upstream.
    for (const op of identityOperations(target).filter((o) => !o.path.startsWith('/identity-types'))) {
      const res = await asUser.request(op.method, op.path, op.body === undefined ? {} : { body: op.body });
      assertError(res, 401, 'UNAUTHORIZED');
      assert.equal(res.headers['www-authenticate'], undefined, `${op.method} ${op.path}`);
    }
    assert.deepEqual(await detail(target), targetBefore);
    assert.equal(await identityCount(), before);
    assert.equal((await asUser.get('/current-api-session')).status, 200, 'the session itself stays valid');
    assert.equal((await asUser.get('/identity-types')).status, 200);
  });

  it('lets an identity with identity.read list and read identities but not create, update or delete them', async () => {
    const reader = await createUserWithPassword(tc, { permissions: ['identity.read'] });
    const asReader = tc.mgmt.as({ token: reader.token });
    const target = await createIdentity(tc.mgmt);
    const targetBefore = await detail(target);
    assert.equal((await asReader.get('/identities')).status, 200);
    assert.equal((await asReader.get(`/identities/${target}`)).status, 200);
    // Authenticators are covered by no permission value: admins and admin_readonly only.
    assertError(await asReader.get(`/identities/${target}/authenticators`), 401, 'UNAUTHORIZED');
    assert.equal((await asReader.get('/identity-role-attributes')).status, 200);
    const before = await identityCount();
    assertError(await asReader.post('/identities', validBody()), 401, 'UNAUTHORIZED');
    assertError(await asReader.patch(`/identities/${target}`, { roleAttributes: ['x'] }), 401, 'UNAUTHORIZED');
    assertError(await asReader.put(`/identities/${target}`, { name: uniqueName('x'), type: 'User', isAdmin: false }), 401, 'UNAUTHORIZED');
    assertError(await asReader.delete(`/identities/${target}`), 401, 'UNAUTHORIZED');
    assert.equal(await identityCount(), before);
    assert.deepEqual(await detail(target), targetBefore);
  });

  it('lets an admin_readonly identity read identities but not create or delete them', async () => {
    const auditor = await createUserWithPassword(tc, { permissions: ['admin_readonly'] });
    const asAuditor = tc.mgmt.as({ token: auditor.token });
    const target = await createIdentity(tc.mgmt);
    const list = await asAuditor.get('/identities');
    assert.equal(list.status, 200);
    assertMatchesReference('management', 'GET', '/identities', 200, list.body, LIST_NULLS);
    assert.equal((await asAuditor.get(`/identities/${target}`)).status, 200);
    assert.equal((await asAuditor.get('/identity-types')).status, 200);
    const before = await identityCount();
    assertError(await asAuditor.delete(`/identities/${target}`), 401, 'UNAUTHORIZED');
    assertError(await asAuditor.post('/identities', validBody()), 401, 'UNAUTHORIZED');
    assert.equal(await identityCount(), before);
    await detail(target);
  });
});

describe('a caller managing identities without being an admin can not raise rights', () => {
  const manager = async () => tc.mgmt.as({ token: (await createUserWithPassword(tc, { permissions: ['identity'] })).token });
  const refusedBecause = (res: HttpResponse, reason: RegExp) => {
    assertError(res, 401, 'UNAUTHORIZED');
    assert.match(String(res.body.error.cause?.message), reason);
  };

  it('may not create an admin or an identity with permissions, but may create a plain one', async () => {
    const client = await manager();
    const before = await identityCount();
    refusedBecause(await client.post('/identities', { ...validBody(), isAdmin: true }), /non-admins may not create admin users/);
    refusedBecause(await client.post('/identities', { ...validBody(), permissions: ['identity'] }), /non-admins may not create users with permissions/);
    refusedBecause(await client.post('/identities', { ...validBody(), permissions: ['ca.read'] }), /with permissions/);
    assert.equal(await identityCount(), before);
    assert.equal((await client.post('/identities', { ...validBody(), permissions: [] })).status, 201);
  });

  it('may not use PUT, patch isAdmin or permissions, nor change or delete an admin', async () => {
    const client = await manager();
    const plain = await createIdentity(tc.mgmt);
    const admin = await createIdentity(tc.mgmt, { isAdmin: true });
    const [plainBefore, adminBefore] = [await detail(plain), await detail(admin)];
    refusedBecause(await client.put(`/identities/${plain}`, { name: uniqueName('put'), type: 'User', isAdmin: false }), /may not use the PUT method/);
    refusedBecause(await client.patch(`/identities/${plain}`, { isAdmin: true }), /field 'isAdmin'/);
    refusedBecause(await client.patch(`/identities/${plain}`, { isAdmin: false }), /field 'isAdmin'/);
    refusedBecause(await client.patch(`/identities/${plain}`, { permissions: ['identity'] }), /field 'permissions'/);
    refusedBecause(await client.patch(`/identities/${admin}`, { name: uniqueName('renamed') }), /may not modify admin identities/);
    refusedBecause(await client.delete(`/identities/${admin}`), /may not delete admin identities/);
    assert.deepEqual(await detail(plain), plainBefore);
    assert.deepEqual(await detail(admin), adminBefore);
    // What is left is allowed: patch a plain identity's other fields, delete it.
    assertEmptyOk(await client.patch(`/identities/${plain}`, { roleAttributes: ['managed'] }));
    assertEmptyOk(await client.delete(`/identities/${plain}`));
  });

  it('an admin may do all of it', async () => {
    const id = await createIdentity(tc.mgmt);
    assertEmptyOk(await tc.mgmt.patch(`/identities/${id}`, { permissions: ['identity.read'] }));
    assert.deepEqual((await detail(id)).permissions, ['identity.read']);
  });
});

describe('identities across a restart', () => {
  it('keeps created identities, and the default admin can still log in', async () => {
    const name = uniqueName('durable');
    const id = await createIdentity(tc.mgmt, { name, roleAttributes: ['durable'], tags: { env: 'prod' } });
    const before = await detail(id);
    await tc.restart();
    const token = await tc.login(ADMIN_USER, ADMIN_PASSWORD);
    const fresh = createClient(`https://127.0.0.1:${tc.port}/edge/management/v1`, tc.ca, { token });
    const after = await detail(id, fresh);
    const { hasApiSession: _a, ...restAfter } = after;
    const { hasApiSession: _b, ...restBefore } = before;
    assert.deepEqual(restAfter, restBefore);
  });

  it('keeps API sessions, so a token issued before the restart still works', async () => {
    const res = await tc.mgmt.get('/identities?limit=1');
    assert.equal(res.status, 200, res.text);
  });
});
