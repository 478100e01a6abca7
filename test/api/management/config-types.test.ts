/**
 * Management config types: the built-in types with their fixed ids and upstream's schema documents, CRUD, schema checks (must compile, root
 * type object, non-object schemas refused, `{}` is no schema), the reserved name `all`, delete refused while configs of
 * the type exist (409, the seed contract), the configs of a type, unknown ids and permissions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpResponse } from '../../support/client.ts';
import { createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertEmptyList, TIMESTAMP, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();

/** Upstream renders `schema` as null when a type has none; the reference does not mark it nullable. */
const DETAIL_NULLS = { allowNullAt: ['/data/schema'] };
const LIST_NULLS = { allowNullAt: ['/data/*/schema'] };

const BUILTIN: Array<[string, string]> = [
  ['ziti-tunneler-client.v1', 'f2dd2df0-9c04-4b84-a91e-71437ac229f1'],
  ['ziti-tunneler-server.v1', 'cea49285-6c07-42cf-9f52-09a9b115c783'],
  ['intercept.v1', 'g7cIWbcGg'],
  ['host.v1', 'NH5p4FpGR'],
  ['host.v2', 'host.v2'],
  ['interfaces.v1', 'interfaces.v1'],
  ['proxy.v1', 'proxy.v1'],
];

const PORT_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['port'],
  properties: { port: { type: 'integer', minimum: 1, maximum: 100 } },
};

async function createType(body: Record<string, unknown> = {}): Promise<string> {
  const res = await tc.mgmt.post('/config-types', { name: uniqueName('ct'), schema: PORT_SCHEMA, ...body });
  assert.equal(res.status, 201, res.text);
  assertMatchesReference('management', 'POST', '/config-types', 201, res.body);
  return res.body.data.id as string;
}

async function createConfig(configTypeId: string, data: Record<string, unknown> = { port: 5 }): Promise<string> {
  const res = await tc.mgmt.post('/configs', { name: uniqueName('cfg'), configTypeId, data });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

async function detail(id: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/config-types/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/config-types/{id}', 200, res.body, DETAIL_NULLS);
  return res.body.data;
}

async function list(query: string): Promise<HttpResponse> {
  const res = await tc.mgmt.get(`/config-types?${query}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/config-types', 200, res.body, LIST_NULLS);
  return res;
}

async function typeCount(): Promise<number> {
  return (await list('limit=1')).body.meta.pagination.totalCount as number;
}

async function expectCreateRejected(body: Record<string, unknown>, field: string, reason?: string | RegExp): Promise<void> {
  const before = await typeCount();
  const res = await tc.mgmt.post('/config-types', body);
  assertFieldError(res, field);
  assertMatchesReference('management', 'POST', '/config-types', 400, res.body);
  if (typeof reason === 'string') assert.equal(res.body.error.cause.reason, reason);
  else if (reason) assert.match(res.body.error.cause.reason, reason);
  assert.equal(await typeCount(), before, 'nothing was created');
}

describe('built-in config types', () => {
  it('exist with their fixed ids, names and object schemas', async () => {
    for (const [name, id] of BUILTIN) {
      const d = await detail(id);
      assert.equal(d.name, name);
      assert.equal(d.schema.type, 'object');
      assert.equal(typeof d.schema.$id, 'string');
    }
  });

  it("serve upstream's own schema documents: shared pieces as definitions behind $ref, deprecated fields flagged", async () => {
    const intercept = (await detail('g7cIWbcGg')).schema;
    assert.equal(intercept.$id, 'http://edge.openziti.org/schemas/intercept.v1.config.json');
    assert.deepEqual(intercept.properties.addresses, {
      allOf: [{ $ref: '#/definitions/inhabitedSet' }, { items: { $ref: '#/definitions/listenAddress' } }],
    });
    assert.deepEqual(intercept.definitions.inhabitedSet, { minItems: 1, type: 'array', uniqueItems: true });
    assert.deepEqual(intercept.required, ['protocols', 'addresses', 'portRanges']);
    const hostV1 = (await detail('NH5p4FpGR')).schema;
    assert.equal(hostV1.$id, 'http://ziti-edge.netfoundry.io/schemas/host.v1.schema.json');
    const timeout = hostV1.properties.listenOptions.properties.connectTimeoutSeconds;
    assert.equal(timeout.$ref, '#/definitions/timeoutSeconds');
    assert.equal(timeout.deprecated, true);
    const hostV2 = (await detail('host.v2')).schema;
    assert.equal(hostV2.definitions.terminator.properties.listenOptions.properties.connectTimeoutSeconds.deprecated, true);
  });

  it('validate configs through their $refs as upstream: an empty intercept address fails the listenAddress "not" rule', async () => {
    const res = await tc.mgmt.post('/configs', {
      name: uniqueName('cfg'),
      configTypeId: 'g7cIWbcGg',
      data: { protocols: ['tcp'], addresses: [''], portRanges: [{ low: 80, high: 443 }] },
    });
    assertFieldError(res, 'addresses.0');
    assert.equal(res.body.error.cause.reason, 'addresses.0 is invalid: addresses.0: Must not validate the schema (not)');
    const ok = await tc.mgmt.post('/configs', {
      name: uniqueName('cfg'),
      configTypeId: 'NH5p4FpGR',
      data: { protocol: 'tcp', address: 'localhost', port: 8080, listenOptions: { connectTimeoutSeconds: 5 } },
    });
    assert.equal(ok.status, 201, ok.text);
  });
});

describe('POST /config-types', () => {
  it('creates a type and reads it back with base fields and self link only', async () => {
    const name = uniqueName('ct');
    const id = await createType({ name, tags: { team: 'net' } });
    const d = await detail(id);
    assert.equal(d.id, id);
    assert.equal(d.name, name);
    assert.deepEqual(d.schema, PORT_SCHEMA);
    assert.deepEqual(d.tags, { team: 'net' });
    assert.deepEqual(d._links, { self: { href: `./config-types/${id}` } });
    assert.match(d.createdAt, TIMESTAMP);
    assert.match(d.updatedAt, TIMESTAMP);
  });

  it('accepts a type without schema (schema null) and one with draft-07 keywords and unknown formats', async () => {
    const bare = await detail(await createType({ schema: undefined }));
    assert.equal(bare.schema, null);
    const rich = {
      type: 'object',
      properties: { host: { type: 'string', format: 'idn-hostname' }, other: { type: 'string', format: 'made-up' }, c: { const: 1 } },
      if: { properties: { c: { const: 1 } } },
      then: { required: ['host'] },
    };
    assert.deepEqual((await detail(await createType({ schema: rich }))).schema, rich);
  });

  it('refuses a schema that is not a JSON object, as upstream; an empty object means no schema', async () => {
    for (const schema of ['notAnObject', [1, 2], 7, true]) {
      await expectCreateRejected({ name: uniqueName('bad'), schema }, 'schema', /must be of type object/);
    }
    const empty = await createType({ schema: {} });
    assert.deepEqual((await detail(empty)).schema, {});
    const config = await tc.mgmt.post('/configs', { name: uniqueName('cfg'), configTypeId: empty, data: { anything: [1, 'two'] } });
    assert.equal(config.status, 201, config.text);
    for (const schema of [{ type: 'object' }]) {
      assert.ok(await createType({ schema }), JSON.stringify(schema));
    }
  });

  it('rejects a missing or empty name', async () => {
    await expectCreateRejected({ schema: PORT_SCHEMA }, 'name');
    await expectCreateRejected({ name: '', schema: PORT_SCHEMA }, 'name', 'name is required');
  });

  it('reserves the name "all"', async () => {
    await expectCreateRejected({ name: 'all' }, 'name');
  });

  it('rejects a schema that does not compile', async () => {
    await expectCreateRejected({ name: uniqueName('bad'), schema: { type: 'object', properties: { a: { type: 'no-such-type' } } } }, 'schema', /^invalid schema /);
    await expectCreateRejected({ name: uniqueName('bad'), schema: { type: 'object', minProperties: 'three' } }, 'schema', /^invalid schema /);
  });

  it('rejects a schema whose root is not typed object', async () => {
    const reason = 'invalid config type schema, root type must be object';
    await expectCreateRejected({ name: uniqueName('bad'), schema: { type: 'string' } }, 'schema', reason);
    await expectCreateRejected({ name: uniqueName('bad'), schema: { properties: { a: { type: 'string' } } } }, 'schema', reason);
    const res = await tc.mgmt.post('/config-types', { name: uniqueName('bad'), schema: { type: 'array' } });
    assert.equal(res.body.error.cause.value, 'map[type:array]');
  });

  it('rejects a duplicate name, also of a built-in type', async () => {
    const name = uniqueName('dup');
    await createType({ name });
    await expectCreateRejected({ name }, 'name', 'name must be unique');
    await expectCreateRejected({ name: 'host.v1' }, 'name', 'name must be unique');
  });
});

describe('GET /config-types', () => {
  it('filters, sorts and pages', async () => {
    const prefix = uniqueName('page');
    for (const n of ['c', 'a', 'b']) await createType({ name: `${prefix}-${n}` });
    const f = encodeURIComponent(`name contains "${prefix}"`);
    const all = await list(`filter=${f}&sort=name desc`);
    assert.deepEqual(all.body.data.map((t: { name: string }) => t.name), [`${prefix}-c`, `${prefix}-b`, `${prefix}-a`]);
    assert.equal(all.body.meta.pagination.totalCount, 3);
    assert.ok(all.body.meta.filterableFields.includes('name'));
    const page = await list(`filter=${f}&sort=name&limit=1&offset=1`);
    assert.deepEqual(page.body.data.map((t: { name: string }) => t.name), [`${prefix}-b`]);
    assert.deepEqual(page.body.meta.pagination, { limit: 1, offset: 1, totalCount: 3 });
    const builtin = await list(`filter=${encodeURIComponent('id = "g7cIWbcGg"')}`);
    assert.deepEqual(builtin.body.data.map((t: { name: string }) => t.name), ['intercept.v1']);
  });

  it('answers INVALID_FILTER for a bad filter', async () => {
    assertError(await tc.mgmt.get(`/config-types?filter=${encodeURIComponent('nme = "x"')}`), 400, 'INVALID_FILTER');
  });
});

describe('PUT and PATCH /config-types/{id}', () => {
  it('put replaces name, schema and tags; an omitted schema becomes none', async () => {
    const id = await createType({ tags: { a: 'b' } });
    const name = uniqueName('put');
    assertEmptyOk(await tc.mgmt.put(`/config-types/${id}`, { name, schema: { type: 'object' }, tags: { c: true } }));
    let d = await detail(id);
    assert.equal(d.name, name);
    assert.deepEqual(d.schema, { type: 'object' });
    assert.deepEqual(d.tags, { c: true });
    assertEmptyOk(await tc.mgmt.put(`/config-types/${id}`, { name }));
    d = await detail(id);
    assert.equal(d.schema, null);
    assert.deepEqual(d.tags, {});
  });

  it('patch changes only the supplied fields and ignores anything else', async () => {
    const id = await createType();
    const before = await detail(id);
    assertEmptyOk(await tc.mgmt.patch(`/config-types/${id}`, { tags: { x: 'y' }, id: 'other-id', createdAt: '2000-01-01T00:00:00.000Z' }));
    const d = await detail(id);
    assert.equal(d.name, before.name);
    assert.deepEqual(d.schema, PORT_SCHEMA);
    assert.deepEqual(d.tags, { x: 'y' });
    assert.equal(d.createdAt, before.createdAt);
    const name = uniqueName('patched');
    assertEmptyOk(await tc.mgmt.patch(`/config-types/${id}`, { name }));
    assert.equal((await detail(id)).name, name);
  });

  it('validates the schema and the name on update', async () => {
    const id = await createType();
    assertFieldError(await tc.mgmt.patch(`/config-types/${id}`, { schema: { type: 'string' } }), 'schema');
    assertFieldError(await tc.mgmt.patch(`/config-types/${id}`, { schema: { type: 'object', required: 'port' } }), 'schema');
    assertFieldError(await tc.mgmt.patch(`/config-types/${id}`, { name: 'all' }), 'name');
    assertFieldError(await tc.mgmt.put(`/config-types/${id}`, { schema: PORT_SCHEMA }), 'name');
    assertFieldError(await tc.mgmt.patch(`/config-types/${id}`, { name: 'host.v2' }), 'name');
    assert.deepEqual((await detail(id)).schema, PORT_SCHEMA, 'nothing changed');
  });

  it('a schema change applies to later config writes', async () => {
    const id = await createType();
    const configId = await createConfig(id, { port: 50 });
    assertEmptyOk(await tc.mgmt.patch(`/config-types/${id}`, { schema: { ...PORT_SCHEMA, properties: { port: { type: 'integer', maximum: 10 } } } }));
    assert.equal((await tc.mgmt.get(`/configs/${configId}`)).body.data.data.port, 50);
    assertFieldError(await tc.mgmt.patch(`/configs/${configId}`, { data: { port: 20 } }), 'port');
  });

  it('answers 404 for an unknown id', async () => {
    assertError(await tc.mgmt.put('/config-types/nope', { name: uniqueName('x') }), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.patch('/config-types/nope', { name: uniqueName('x') }), 404, 'NOT_FOUND');
  });
});

describe('DELETE /config-types/{id}', () => {
  it('deletes an unused type', async () => {
    const id = await createType();
    assertEmptyOk(await tc.mgmt.delete(`/config-types/${id}`));
    assertError(await tc.mgmt.get(`/config-types/${id}`), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.delete(`/config-types/${id}`), 404, 'NOT_FOUND');
  });

  it('answers 409 while configs of the type exist, and deletes once they are gone', async () => {
    const id = await createType();
    const configId = await createConfig(id);
    const res = await tc.mgmt.delete(`/config-types/${id}`);
    assertError(res, 409, 'CAN_NOT_DELETE_REFERENCED_ENTITY');
    assertMatchesReference('management', 'DELETE', '/config-types/{id}', 409, res.body);
    assert.equal(res.body.error.cause.message, `cannot delete config type ${id}, as configs of that type exist`);
    await detail(id);
    assertEmptyOk(await tc.mgmt.delete(`/configs/${configId}`));
    assertEmptyOk(await tc.mgmt.delete(`/config-types/${id}`));
  });
});

describe('GET /config-types/{id}/configs', () => {
  it('lists the configs of the type, filterable and paged', async () => {
    const id = await createType();
    const other = await createType();
    const a = await createConfig(id, { port: 1 });
    const b = await createConfig(id, { port: 2 });
    await createConfig(other);
    const res = await tc.mgmt.get(`/config-types/${id}/configs?sort=createdAt`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/config-types/{id}/configs', 200, res.body);
    assert.deepEqual(new Set(res.body.data.map((c: { id: string }) => c.id)), new Set([a, b]));
    assert.equal(res.body.data[0].configType.id, id);
    const filtered = await tc.mgmt.get(`/config-types/${id}/configs?filter=${encodeURIComponent(`id = "${b}"`)}`);
    assert.deepEqual(filtered.body.data.map((c: { id: string }) => c.id), [b]);
    const page = await tc.mgmt.get(`/config-types/${id}/configs?limit=1`);
    assert.equal(page.body.data.length, 1);
    assert.equal(page.body.meta.pagination.totalCount, 2);
  });

  it('answers an empty list for an unknown type, as upstream', async () => {
    assertEmptyList(await tc.mgmt.get('/config-types/nope/configs'));
  });
});

describe('config type permissions', () => {
  it('refuses a non-admin without permissions, and lets config-type.read only read', async () => {
    const id = await createType();
    const plain = await createUserWithPassword(tc);
    const asPlain = createClient(tc.mgmt.baseUrl, tc.ca, { token: plain.token });
    assertError(await asPlain.get('/config-types'), 401, 'UNAUTHORIZED');
    assertError(await asPlain.get(`/config-types/${id}`), 401, 'UNAUTHORIZED');
    assertError(await asPlain.post('/config-types', { name: uniqueName('x') }), 401, 'UNAUTHORIZED');
    const reader = await createUserWithPassword(tc, { permissions: ['config-type.read'] });
    const asReader = createClient(tc.mgmt.baseUrl, tc.ca, { token: reader.token });
    assert.equal((await asReader.get('/config-types')).status, 200);
    assert.equal((await asReader.get(`/config-types/${id}`)).status, 200);
    assertError(await asReader.post('/config-types', { name: uniqueName('x') }), 401, 'UNAUTHORIZED');
    assertError(await asReader.patch(`/config-types/${id}`, { name: uniqueName('x') }), 401, 'UNAUTHORIZED');
    assertError(await asReader.delete(`/config-types/${id}`), 401, 'UNAUTHORIZED');
    assertError(await asPlain.delete(`/config-types/${id}`), 401, 'UNAUTHORIZED');
    const deleter = await createUserWithPassword(tc, { permissions: ['config-type.delete'] });
    assertEmptyOk(await createClient(tc.mgmt.baseUrl, tc.ca, { token: deleter.token }).delete(`/config-types/${id}`));
  });
});
