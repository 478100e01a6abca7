/**
 * Management configs: CRUD, the type fixed at create, data validated against the type's schema (upstream's
 * first-error rendering, its format rules: idn-hostname and unknown formats accepted, ipv4 checked), delete
 * removing the config from services and from identity overrides, the services of a
 * config, service-update marks, unknown ids and permissions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpResponse } from '../../support/client.ts';
import { createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertEmptyList, TIMESTAMP, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();

const SERVICE_NULLS = { allowNullAt: ['/data/*/permissions', '/data/*/config', '/data/*/configs', '/data/*/roleAttributes'] };
const INTERCEPT = 'g7cIWbcGg';
const HOST_V1 = 'NH5p4FpGR';
const TUNNELER_CLIENT = 'f2dd2df0-9c04-4b84-a91e-71437ac229f1';

const PORT_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['port'],
  properties: { port: { type: 'integer', minimum: 1, maximum: 100 }, proto: { type: 'string', enum: ['tcp', 'udp'] }, ip: { type: 'string', format: 'ipv4' } },
};

async function createType(schema: unknown = PORT_SCHEMA): Promise<string> {
  const res = await tc.mgmt.post('/config-types', { name: uniqueName('ct'), schema });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

async function createConfig(configTypeId: string, data: Record<string, unknown> = { port: 5 }, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await tc.mgmt.post('/configs', { name: uniqueName('cfg'), configTypeId, data, ...extra });
  assert.equal(res.status, 201, res.text);
  assertMatchesReference('management', 'POST', '/configs', 201, res.body);
  return res.body.data.id as string;
}

async function createService(body: Record<string, unknown> = {}): Promise<string> {
  const res = await tc.mgmt.post('/services', { name: uniqueName('svc'), encryptionRequired: true, ...body });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

async function detail(id: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/configs/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/configs/{id}', 200, res.body);
  return res.body.data;
}

async function configCount(): Promise<number> {
  const res = await tc.mgmt.get('/configs?limit=1');
  return res.body.meta.pagination.totalCount as number;
}

async function expectCreateRejected(body: Record<string, unknown>, check: (res: HttpResponse) => void): Promise<void> {
  const before = await configCount();
  const res = await tc.mgmt.post('/configs', body);
  check(res);
  assertMatchesReference('management', 'POST', '/configs', res.status, res.body);
  assert.equal(await configCount(), before, 'nothing was created');
}

function reasonIs(field: string, reason: string, value?: string) {
  return (res: HttpResponse) => {
    assertFieldError(res, field);
    assert.equal(res.body.error.cause.reason, reason);
    if (value !== undefined) assert.equal(res.body.error.cause.value, value);
  };
}

/** Identity marks written after this call: the access service records service changes there. */
async function clearMarks(): Promise<void> {
  await tc.controller.store.write((tx) => tx.run('DELETE FROM identity_service_marks'));
}

async function markedIdentities(): Promise<string[]> {
  return tc.controller.store.column<string>('SELECT identity_id FROM identity_service_marks');
}

describe('POST /configs', () => {
  it('creates a config; the read model carries the type id and ref and the data', async () => {
    const typeId = await createType();
    const name = uniqueName('cfg');
    const id = await createConfig(typeId, { port: 80, proto: 'tcp' }, { name, tags: { env: 'test' } });
    const d = await detail(id);
    assert.equal(d.name, name);
    assert.equal(d.configTypeId, typeId);
    const typeName = (await tc.mgmt.get(`/config-types/${typeId}`)).body.data.name;
    assert.deepEqual(d.configType, { _links: { self: { href: `./config-types/${typeId}` } }, entity: 'config-types', id: typeId, name: typeName });
    assert.deepEqual(d.data, { port: 80, proto: 'tcp' });
    assert.deepEqual(d.tags, { env: 'test' });
    assert.deepEqual(d._links, { self: { href: `./configs/${id}` } });
    assert.match(d.createdAt, TIMESTAMP);
  });

  it('validates against the built-in schemas with upstream format rules', async () => {
    // Wildcards and CIDRs pass as addresses: idn-hostname is not enforced.
    await createConfig(INTERCEPT, { protocols: ['tcp', 'udp'], addresses: ['*.example.com', '10.0.0.0/8', '1.2.3.4/56'], portRanges: [{ low: 1, high: 65535 }] });
    await createConfig(HOST_V1, { protocol: 'tcp', address: 'localhost', port: 8080 });
    await createConfig(HOST_V1, { forwardProtocol: true, allowedProtocols: ['tcp'], forwardAddress: true, allowedAddresses: ['*.corp'], forwardPort: true, allowedPortRanges: [{ low: 1, high: 2 }] });
    await createConfig(TUNNELER_CLIENT, { hostname: 'example.com', port: 443 });
    await expectCreateRejected({ name: uniqueName('c'), configTypeId: TUNNELER_CLIENT, data: { hostname: 'x', port: 70000 } },
      reasonIs('port', 'port is invalid: port: Must be less than or equal to 65535', '70000'));
    await expectCreateRejected({ name: uniqueName('c'), configTypeId: HOST_V1, data: { protocol: 'tcp', address: 'x' } },
      reasonIs('(root)', '(root) is invalid: (root): Must validate "else" as "if" was not valid'));
  });

  it('reports the first schema error as upstream renders it', async () => {
    const typeId = await createType();
    const base = { name: uniqueName('c'), configTypeId: typeId };
    await expectCreateRejected({ ...base, data: {} }, reasonIs('(root)', '(root) is invalid: (root): port is required', 'map[]'));
    await expectCreateRejected({ ...base, data: { port: 0 } }, reasonIs('port', 'port is invalid: port: Must be greater than or equal to 1', '0'));
    await expectCreateRejected({ ...base, data: { port: 'x' } }, reasonIs('port', 'port is invalid: port: Invalid type. Expected: integer, given: string', 'x'));
    await expectCreateRejected({ ...base, data: { port: 1, extra: true } }, reasonIs('(root)', '(root) is invalid: (root): Additional property extra is not allowed'));
    await expectCreateRejected({ ...base, data: { port: 1, proto: 'icmp' } }, reasonIs('proto', 'proto is invalid: proto: proto must be one of the following: "tcp", "udp"', 'icmp'));
    await expectCreateRejected({ ...base, data: { port: 1, ip: 'not-an-ip' } }, reasonIs('ip', "ip is invalid: ip: Does not match format 'ipv4'", 'not-an-ip'));
  });

  it('accepts any object when the type has no schema', async () => {
    const typeId = await createType(null);
    const id = await createConfig(typeId, { anything: [1, { nested: true }] });
    assert.deepEqual((await detail(id)).data, { anything: [1, { nested: true }] });
  });

  it('requires configTypeId, a known type, and object data', async () => {
    const typeId = await createType();
    await expectCreateRejected({ name: uniqueName('c'), data: { port: 1 } }, (res) => assertFieldError(res, 'configTypeId'));
    await expectCreateRejected({ name: uniqueName('c'), configTypeId: '', data: { port: 1 } }, reasonIs('type', 'config type must be specified'));
    await expectCreateRejected({ name: uniqueName('c'), configTypeId: 'nope', data: { port: 1 } }, reasonIs('type', 'invalid config type', 'nope'));
    await expectCreateRejected({ name: uniqueName('c'), configTypeId: typeId }, (res) => assertFieldError(res, 'data'));
    await expectCreateRejected({ name: uniqueName('c'), configTypeId: typeId, data: null }, (res) => assertFieldError(res, 'data'));
    await expectCreateRejected({ name: uniqueName('c'), configTypeId: typeId, data: [1] }, reasonIs('data', 'invalid type, expected object'));
    await expectCreateRejected({ name: uniqueName('c'), configTypeId: typeId, data: 'text' }, reasonIs('data', 'invalid type, expected object', 'text'));
  });

  it('requires a unique, non-empty name', async () => {
    const typeId = await createType();
    const name = uniqueName('dup');
    await createConfig(typeId, { port: 1 }, { name });
    await expectCreateRejected({ name, configTypeId: typeId, data: { port: 1 } }, reasonIs('name', 'name must be unique'));
    await expectCreateRejected({ name: '', configTypeId: typeId, data: { port: 1 } }, (res) => assertFieldError(res, 'name'));
    await expectCreateRejected({ configTypeId: typeId, data: { port: 1 } }, (res) => assertFieldError(res, 'name'));
  });
});

describe('GET /configs', () => {
  it('filters by name, type and data, sorts and pages', async () => {
    const typeId = await createType();
    const prefix = uniqueName('list');
    const ids: string[] = [];
    for (const [n, port] of [['b', 2], ['a', 1], ['c', 3]] as const) ids.push(await createConfig(typeId, { port }, { name: `${prefix}-${n}` }));
    const f = (expr: string) => `filter=${encodeURIComponent(expr)}`;
    const res = await tc.mgmt.get(`/configs?${f(`name contains "${prefix}"`)}&sort=name`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/configs', 200, res.body);
    assert.deepEqual(res.body.data.map((c: { name: string }) => c.name), [`${prefix}-a`, `${prefix}-b`, `${prefix}-c`]);
    assert.deepEqual([...res.body.meta.filterableFields].sort(), ['createdAt', 'id', 'isSystem', 'name', 'tags', 'type', 'updatedAt']);
    const byType = await tc.mgmt.get(`/configs?${f(`type = "${typeId}"`)}`);
    assert.equal(byType.body.meta.pagination.totalCount, 3);
    const byData = await tc.mgmt.get(`/configs?${f(`configTypeId = "${typeId}" and data.port > 1`)}&sort=name desc`);
    assert.deepEqual(byData.body.data.map((c: { name: string }) => c.name), [`${prefix}-c`, `${prefix}-b`]);
    const page = await tc.mgmt.get(`/configs?${f(`type = "${typeId}"`)}&sort=name&limit=2&offset=2`);
    assert.deepEqual(page.body.data.map((c: { name: string }) => c.name), [`${prefix}-c`]);
    assert.deepEqual(page.body.meta.pagination, { limit: 2, offset: 2, totalCount: 3 });
  });
});

describe('PUT and PATCH /configs/{id}', () => {
  it('put replaces name, data and tags; the type never changes', async () => {
    const typeId = await createType();
    const otherType = await createType(null);
    const id = await createConfig(typeId, { port: 5 }, { tags: { a: 'b' } });
    const name = uniqueName('put');
    assertEmptyOk(await tc.mgmt.put(`/configs/${id}`, { name, data: { port: 6 }, configTypeId: otherType }));
    const d = await detail(id);
    assert.equal(d.name, name);
    assert.deepEqual(d.data, { port: 6 });
    assert.deepEqual(d.tags, {});
    assert.equal(d.configTypeId, typeId);
  });

  it('put requires name and data and validates the data', async () => {
    const id = await createConfig(await createType());
    assertFieldError(await tc.mgmt.put(`/configs/${id}`, { data: { port: 1 } }), 'name');
    assertFieldError(await tc.mgmt.put(`/configs/${id}`, { name: uniqueName('x') }), 'data');
    assertFieldError(await tc.mgmt.put(`/configs/${id}`, { name: uniqueName('x'), data: { port: 101 } }), 'port');
    assert.deepEqual((await detail(id)).data, { port: 5 });
  });

  it('patch changes only supplied fields; data is replaced as a whole and validated', async () => {
    const typeId = await createType();
    const id = await createConfig(typeId, { port: 5, proto: 'tcp' });
    const before = await detail(id);
    assertEmptyOk(await tc.mgmt.patch(`/configs/${id}`, { tags: { t: true } }));
    let d = await detail(id);
    assert.equal(d.name, before.name);
    assert.deepEqual(d.data, { port: 5, proto: 'tcp' });
    assertEmptyOk(await tc.mgmt.patch(`/configs/${id}`, { data: { port: 7 }, configTypeId: INTERCEPT }));
    d = await detail(id);
    assert.deepEqual(d.data, { port: 7 });
    assert.equal(d.configTypeId, typeId);
    assertFieldError(await tc.mgmt.patch(`/configs/${id}`, { data: { proto: 'tcp' } }), '(root)');
    assertFieldError(await tc.mgmt.patch(`/configs/${id}`, { data: 5 }), 'data');
    // As upstream: a null `data` is checked against the type's schema, which refuses it on (root); nothing changes.
    const nulled = await tc.mgmt.patch(`/configs/${id}`, { data: null, name: uniqueName('not-applied') });
    assertFieldError(nulled, '(root)');
    assert.equal(nulled.body.error.cause.reason, '(root) is invalid: (root): Invalid type. Expected: object, given: null');
    assert.equal(nulled.body.error.cause.value, '<nil>');
    assert.deepEqual((await detail(id)).data, { port: 7 });
    assert.equal((await detail(id)).name, before.name);
  });

  it('keeps the data when a patch sends null data for a type without schema, as upstream', async () => {
    const schemaless = await tc.mgmt.post('/config-types', { name: uniqueName('ct') });
    assert.equal(schemaless.status, 201, schemaless.text);
    const created = await tc.mgmt.post('/configs', { name: uniqueName('c'), configTypeId: schemaless.body.data.id, data: { a: 1 } });
    assert.equal(created.status, 201, created.text);
    assertEmptyOk(await tc.mgmt.patch(`/configs/${created.body.data.id}`, { data: null }));
    assert.deepEqual((await detail(created.body.data.id)).data, { a: 1 });
  });

  it('answers 404 for an unknown id', async () => {
    assertError(await tc.mgmt.get('/configs/nope'), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.patch('/configs/nope', { name: uniqueName('x') }), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.put('/configs/nope', { name: uniqueName('x'), data: {} }), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.delete('/configs/nope'), 404, 'NOT_FOUND');
  });
});

describe('DELETE /configs/{id}', () => {
  it('removes the config from every service that lists it', async () => {
    const typeId = await createType();
    const otherType = await createType(null);
    const id = await createConfig(typeId);
    const keep = await createConfig(otherType, {});
    const s1 = await createService({ configs: [id, keep] });
    const s2 = await createService({ configs: [id] });
    assertEmptyOk(await tc.mgmt.delete(`/configs/${id}`));
    assertError(await tc.mgmt.get(`/configs/${id}`), 404, 'NOT_FOUND');
    assert.deepEqual((await tc.mgmt.get(`/services/${s1}`)).body.data.configs, [keep]);
    assert.equal((await tc.mgmt.get(`/services/${s2}`)).body.data.configs, null);
    assert.deepEqual((await tc.mgmt.get(`/services/${s1}/configs`)).body.data.map((c: { id: string }) => c.id), [keep]);
    const bySet = await tc.mgmt.get(`/services?filter=${encodeURIComponent(`anyOf(configs) = "${id}"`)}`);
    assert.equal(bySet.body.data.length, 0);
  });

  it('removes the config from the identity overrides that used it', async () => {
    const id = await createConfig(await createType());
    const serviceId = await createService();
    const identityId = await createIdentity(tc.mgmt);
    assertEmptyOk(await tc.mgmt.post(`/identities/${identityId}/service-configs`, [{ serviceId, configId: id }]));
    assert.equal((await tc.mgmt.get(`/identities/${identityId}/service-configs`)).body.data.length, 1);
    assertEmptyOk(await tc.mgmt.delete(`/configs/${id}`));
    assert.deepEqual((await tc.mgmt.get(`/identities/${identityId}/service-configs`)).body.data, []);
    const row = (await tc.controller.store.get<{ n: number }>('SELECT count(*) AS n FROM identity_service_configs WHERE config_id = ?', [id]))!;
    assert.equal(Number(row.n), 0);
    assert.ok(await tc.controller.store.get('SELECT 1 FROM identity_service_marks WHERE identity_id = ?', [identityId]));
  });
});

describe('GET /configs/{id}/services', () => {
  it('lists the services that reference the config, filterable and paged', async () => {
    const id = await createConfig(await createType());
    const prefix = uniqueName('ref');
    const a = await createService({ name: `${prefix}-a`, configs: [id] });
    const b = await createService({ name: `${prefix}-b`, configs: [id] });
    await createService({ name: `${prefix}-c` });
    const res = await tc.mgmt.get(`/configs/${id}/services?sort=name`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/configs/{id}/services', 200, res.body, SERVICE_NULLS);
    assert.deepEqual(res.body.data.map((s: { id: string }) => s.id), [a, b]);
    assert.equal(res.body.data[0].permissions, null);
    assert.equal(res.body.data[0].config, null);
    const filtered = await tc.mgmt.get(`/configs/${id}/services?filter=${encodeURIComponent(`name = "${prefix}-b"`)}`);
    assert.deepEqual(filtered.body.data.map((s: { id: string }) => s.id), [b]);
    const page = await tc.mgmt.get(`/configs/${id}/services?sort=name&limit=1&offset=1`);
    assert.deepEqual(page.body.data.map((s: { id: string }) => s.id), [b]);
    assert.deepEqual(page.body.meta.pagination, { limit: 1, offset: 1, totalCount: 2 });
  });

  it('answers an empty list for an unknown config, as upstream', async () => {
    assertEmptyList(await tc.mgmt.get('/configs/nope/services'));
  });
});

describe('config changes and service-update marks', () => {
  it('an update marks identities using a service with the config and identities overriding with it', async () => {
    const typeId = await createType();
    const id = await createConfig(typeId);
    const serviceId = await createService({ configs: [id] });
    const user = await createIdentity(tc.mgmt);
    const overrider = await createIdentity(tc.mgmt);
    const bystander = await createIdentity(tc.mgmt);
    const plainService = await createService();
    const policy = await tc.mgmt.post('/service-policies', { name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${user}`, `@${bystander}`], serviceRoles: [`@${serviceId}`] });
    assert.equal(policy.status, 201, policy.text);
    const policy2 = await tc.mgmt.post('/service-policies', { name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${bystander}`], serviceRoles: [`@${plainService}`] });
    assert.equal(policy2.status, 201, policy2.text);
    const overrideConfig = await createConfig(typeId);
    assertEmptyOk(await tc.mgmt.post(`/identities/${overrider}/service-configs`, [{ serviceId: plainService, configId: overrideConfig }]));

    await clearMarks();
    assertEmptyOk(await tc.mgmt.patch(`/configs/${id}`, { data: { port: 9 } }));
    assert.deepEqual(new Set(await markedIdentities()), new Set([user, bystander]));

    await clearMarks();
    assertEmptyOk(await tc.mgmt.patch(`/configs/${overrideConfig}`, { name: uniqueName('renamed') }));
    assert.deepEqual(await markedIdentities(), [overrider]);

    await clearMarks();
    assertEmptyOk(await tc.mgmt.delete(`/configs/${id}`));
    assert.deepEqual(new Set(await markedIdentities()), new Set([user, bystander]));
  });
});

describe('config permissions', () => {
  it('refuses a non-admin without permissions; config.read may only read', async () => {
    const id = await createConfig(await createType());
    const plain = await createUserWithPassword(tc);
    const asPlain = createClient(tc.mgmt.baseUrl, tc.ca, { token: plain.token });
    assertError(await asPlain.get('/configs'), 401, 'UNAUTHORIZED');
    assertError(await asPlain.get(`/configs/${id}`), 401, 'UNAUTHORIZED');
    assertError(await asPlain.get(`/configs/${id}/services`), 401, 'UNAUTHORIZED');
    assertError(await asPlain.post('/configs', { name: uniqueName('x'), configTypeId: INTERCEPT, data: {} }), 401, 'UNAUTHORIZED');
    const reader = await createUserWithPassword(tc, { permissions: ['config.read'] });
    const asReader = createClient(tc.mgmt.baseUrl, tc.ca, { token: reader.token });
    assert.equal((await asReader.get(`/configs/${id}`)).status, 200);
    assertError(await asReader.delete(`/configs/${id}`), 401, 'UNAUTHORIZED');
    assertError(await asReader.put(`/configs/${id}`, { name: uniqueName('x'), data: {} }), 401, 'UNAUTHORIZED');
  });
});
