/**
 * Management services: CRUD (encryptionRequired only at create, terminator strategies, configs one per type,
 * role attributes), the per-caller read parts (permissions, config, postureQueries) with and without
 * roleFilter, the service role attributes, every derived list returning services (identity, edge router,
 * service policy, service edge router policy, config) and a service's configs, delete cascades, marks,
 * unknown ids and permissions. Posture checks are created last: before that none exist.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpResponse } from '../../support/client.ts';
import { createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertEmptyList, assertDecodeError, TIMESTAMP, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();

/** Upstream renders these as null (model.md §3.4, §2.4); the reference does not mark them nullable. */
// Upstream sends a posture query's `processes` as null unless its check is PROCESS_MULTI.
const ONE_NULLS = {
  allowNullAt: ['/data/permissions', '/data/config', '/data/configs', '/data/roleAttributes', '/data/postureQueries/*/postureQueries/*/processes'],
};
const LIST_NULLS = {
  allowNullAt: ['/data/*/permissions', '/data/*/config', '/data/*/configs', '/data/*/roleAttributes', '/data/*/postureQueries/*/postureQueries/*/processes'],
};
const INTERCEPT = 'g7cIWbcGg';
const HOST_V1 = 'NH5p4FpGR';
const q = encodeURIComponent;

const adminId: string = (await tc.mgmt.get('/current-identity')).body.data.id;

async function createService(body: Record<string, unknown> = {}): Promise<string> {
  const res = await tc.mgmt.post('/services', { name: uniqueName('svc'), encryptionRequired: true, ...body });
  assert.equal(res.status, 201, res.text);
  assertMatchesReference('management', 'POST', '/services', 201, res.body);
  return res.body.data.id as string;
}

async function createConfig(configTypeId: string, data: Record<string, unknown>): Promise<string> {
  const res = await tc.mgmt.post('/configs', { name: uniqueName('cfg'), configTypeId, data });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

const interceptData = (host: string) => ({ protocols: ['tcp'], addresses: [host], portRanges: [{ low: 80, high: 80 }] });
const hostData = (port: number) => ({ protocol: 'tcp', address: 'localhost', port });

async function createPolicy(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await tc.mgmt.post(path, { name: uniqueName('policy'), semantic: 'AnyOf', ...body });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

async function detail(id: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/services/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/services/{id}', 200, res.body, ONE_NULLS);
  return res.body.data;
}

async function list(path: string): Promise<HttpResponse> {
  const res = await tc.mgmt.get(path);
  assert.equal(res.status, 200, res.text);
  const template = path.split('?')[0]!.replace(/^\/(identities|edge-routers|service-policies|service-edge-router-policies|configs)\/[^/]+\//, '/$1/{id}/');
  assertMatchesReference('management', 'GET', template, 200, res.body, LIST_NULLS);
  return res;
}

const ids = (res: HttpResponse) => res.body.data.map((s: { id: string }) => s.id);

async function serviceCount(): Promise<number> {
  return (await list('/services?limit=1')).body.meta.pagination.totalCount;
}

async function expectCreateRejected(body: Record<string, unknown>, check: (res: HttpResponse) => void): Promise<void> {
  const before = await serviceCount();
  const res = await tc.mgmt.post('/services', { encryptionRequired: true, ...body });
  check(res);
  if (res.status === 400 || res.status === 401) assertMatchesReference('management', 'POST', '/services', res.status, res.body);
  assert.equal(await serviceCount(), before, 'nothing was created');
}

async function markedIdentities(): Promise<Set<string>> {
  return new Set(await tc.controller.store.column<string>('SELECT identity_id FROM identity_service_marks'));
}

async function clearMarks(): Promise<void> {
  await tc.controller.store.write((tx) => tx.run('DELETE FROM identity_service_marks'));
}

describe('POST /services', () => {
  it('creates a service and reads back defaults and the caller view', async () => {
    const name = uniqueName('svc');
    const id = await createService({ name });
    const d = await detail(id);
    assert.equal(d.name, name);
    assert.equal(d.terminatorStrategy, 'smartrouting');
    assert.equal(d.encryptionRequired, true);
    assert.equal(d.maxIdleTimeMillis, 0);
    assert.equal(d.roleAttributes, null);
    assert.equal(d.configs, null);
    assert.deepEqual(d.permissions, ['Invalid']);
    assert.equal(d.config, null);
    assert.deepEqual(d.postureQueries, [{ isPassing: true, policyId: 'dummy invalid policy: no posture checks defined', policyType: 'Invalid', postureQueries: [] }]);
    assert.deepEqual(d.tags, {});
    assert.match(d.createdAt, TIMESTAMP);
    const self = `./services/${id}`;
    assert.deepEqual(d._links, {
      self: { href: self },
      'service-edge-router-policies': { href: `${self}/service-edge-router-policies` },
      'service-policies': { href: `${self}/service-policies` },
      terminators: { href: `${self}/terminators` },
      configs: { href: `${self}/configs` },
    });
  });

  it('stores every field: strategy, idle time, sorted attributes and configs, tags', async () => {
    const c1 = await createConfig(INTERCEPT, interceptData('a.example'));
    const c2 = await createConfig(HOST_V1, hostData(80));
    const id = await createService({
      encryptionRequired: false, terminatorStrategy: 'weighted', maxIdleTimeMillis: 5000,
      roleAttributes: ['zeta', 'alpha', 'zeta'], configs: [c2, c1, c1], tags: { owner: 'ops' },
    });
    const d = await detail(id);
    assert.equal(d.encryptionRequired, false);
    assert.equal(d.terminatorStrategy, 'weighted');
    assert.equal(d.maxIdleTimeMillis, 5000);
    assert.deepEqual(d.roleAttributes, ['alpha', 'zeta']);
    assert.deepEqual(d.configs, [c1, c2].sort());
    assert.deepEqual(d.tags, { owner: 'ops' });
    for (const strategy of ['smartrouting', 'random', 'sticky']) assert.equal((await detail(await createService({ terminatorStrategy: strategy }))).terminatorStrategy, strategy);
  });

  it('requires name and encryptionRequired', async () => {
    await expectCreateRejected({ name: uniqueName('x'), encryptionRequired: undefined }, (res) => assertFieldError(res, 'encryptionRequired'));
    await expectCreateRejected({}, (res) => assertFieldError(res, 'name'));
    await expectCreateRejected({ name: '' }, (res) => assertFieldError(res, 'name'));
    await expectCreateRejected({ name: uniqueName('x'), encryptionRequired: 'yes' }, (res) => assertDecodeError(res, 'encryptionRequired'));
    // Upstream names the first value that can not be decoded, in document order.
    assertDecodeError(await tc.mgmt.post('/services', { name: 5, encryptionRequired: 'x' }), 'name');
    assertDecodeError(await tc.mgmt.post('/services', { encryptionRequired: 'x', name: 5 }), 'encryptionRequired');
  });

  it('answers 404 for an unknown terminator strategy', async () => {
    await expectCreateRejected({ name: uniqueName('x'), terminatorStrategy: 'roundrobin' }, (res) => {
      assertError(res, 404, 'NOT_FOUND');
      assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: 'terminatorStrategy with name roundrobin not found' });
    });
  });

  it('checks configs: each must exist, one per config type', async () => {
    await expectCreateRejected({ name: uniqueName('x'), configs: ['nope'] }, (res) => {
      assertError(res, 404, 'NOT_FOUND');
      assert.equal(res.body.error.cause.message, 'config with id nope not found');
    });
    const a = await createConfig(INTERCEPT, interceptData('a.example'));
    const b = await createConfig(INTERCEPT, interceptData('b.example'));
    await expectCreateRejected({ name: uniqueName('x'), configs: [a, b] }, (res) => {
      assertFieldError(res, 'configs');
      assert.match(res.body.error.cause.reason, /^duplicate configs named .* found for config type intercept\.v1/);
    });
  });

  it('refuses prefixed role attributes and duplicate names', async () => {
    await expectCreateRejected({ name: uniqueName('x'), roleAttributes: ['#bad'] }, (res) => assertFieldError(res, 'roleAttributes'));
    await expectCreateRejected({ name: uniqueName('x'), roleAttributes: ['@bad'] }, (res) => assertFieldError(res, 'roleAttributes'));
    const name = uniqueName('dup');
    await createService({ name });
    await expectCreateRejected({ name }, (res) => {
      assertFieldError(res, 'name');
      assert.equal(res.body.error.cause.reason, 'name must be unique');
    });
  });
});

describe('PUT and PATCH /services/{id}', () => {
  it('ignores encryptionRequired on patch and put (settable only at create)', async () => {
    const id = await createService({ encryptionRequired: true });
    assertEmptyOk(await tc.mgmt.patch(`/services/${id}`, { encryptionRequired: false }));
    assert.equal((await detail(id)).encryptionRequired, true);
    assertEmptyOk(await tc.mgmt.put(`/services/${id}`, { name: uniqueName('put'), encryptionRequired: false }));
    assert.equal((await detail(id)).encryptionRequired, true);
  });

  it('put resets omitted fields to defaults; patch changes only supplied fields', async () => {
    const c = await createConfig(INTERCEPT, interceptData('p.example'));
    const id = await createService({ terminatorStrategy: 'random', maxIdleTimeMillis: 9, roleAttributes: ['x'], configs: [c], tags: { a: 'b' } });
    assertEmptyOk(await tc.mgmt.patch(`/services/${id}`, { maxIdleTimeMillis: 10 }));
    let d = await detail(id);
    assert.equal(d.terminatorStrategy, 'random');
    assert.deepEqual(d.roleAttributes, ['x']);
    assert.deepEqual(d.configs, [c]);
    assert.equal(d.maxIdleTimeMillis, 10);
    const name = uniqueName('put');
    assertEmptyOk(await tc.mgmt.put(`/services/${id}`, { name }));
    d = await detail(id);
    assert.equal(d.name, name);
    assert.equal(d.terminatorStrategy, 'smartrouting');
    assert.equal(d.maxIdleTimeMillis, 0);
    assert.equal(d.roleAttributes, null);
    assert.equal(d.configs, null);
    assert.deepEqual(d.tags, {});
  });

  it('validates on update and changes nothing when refused', async () => {
    const id = await createService({ roleAttributes: ['keep'] });
    assertError(await tc.mgmt.patch(`/services/${id}`, { terminatorStrategy: 'nope' }), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.patch(`/services/${id}`, { configs: ['nope'] }), 404, 'NOT_FOUND');
    assertFieldError(await tc.mgmt.patch(`/services/${id}`, { roleAttributes: ['#x'] }), 'roleAttributes');
    assertFieldError(await tc.mgmt.put(`/services/${id}`, { roleAttributes: [] }), 'name');
    assertDecodeError(await tc.mgmt.patch(`/services/${id}`, { maxIdleTimeMillis: 'long' }), 'maxIdleTimeMillis');
    assert.deepEqual((await detail(id)).roleAttributes, ['keep']);
  });

  it('answers 404 for an unknown id', async () => {
    assertError(await tc.mgmt.get('/services/nope'), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.patch('/services/nope', { maxIdleTimeMillis: 1 }), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.put('/services/nope', { name: uniqueName('x') }), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.delete('/services/nope'), 404, 'NOT_FOUND');
  });
});

describe('GET /services', () => {
  it('filters, sorts and pages; configs and roleAttributes are set symbols', async () => {
    const prefix = uniqueName('list');
    const c = await createConfig(HOST_V1, hostData(81));
    const a = await createService({ name: `${prefix}-a`, roleAttributes: ['red'], configs: [c] });
    const b = await createService({ name: `${prefix}-b`, roleAttributes: ['red', 'blue'], terminatorStrategy: 'sticky' });
    const cc = await createService({ name: `${prefix}-c`, encryptionRequired: false });
    let res = await list(`/services?filter=${q(`name contains "${prefix}"`)}&sort=name desc`);
    assert.deepEqual(ids(res), [cc, b, a]);
    for (const field of ['name', 'terminatorStrategy', 'roleAttributes', 'configs']) assert.ok(res.body.meta.filterableFields.includes(field), field);
    res = await list(`/services?filter=${q(`name contains "${prefix}" and anyOf(roleAttributes) = "red"`)}&sort=name`);
    assert.deepEqual(ids(res), [a, b]);
    res = await list(`/services?filter=${q(`anyOf(configs) = "${c}"`)}`);
    assert.deepEqual(ids(res), [a]);
    res = await list(`/services?filter=${q(`name contains "${prefix}" and terminatorStrategy = "sticky"`)}`);
    assert.deepEqual(ids(res), [b]);
    res = await list(`/services?filter=${q(`name contains "${prefix}" and encryptionRequired = false`)}`);
    assert.deepEqual(ids(res), [cc]);
    res = await list(`/services?filter=${q(`name contains "${prefix}"`)}&sort=name&limit=1&offset=2`);
    assert.deepEqual(ids(res), [cc]);
    assert.deepEqual(res.body.meta.pagination, { limit: 1, offset: 2, totalCount: 3 });
  });

  it('without roleFilter shows the caller view; config follows configTypes (first value, comma separated)', async () => {
    const c1 = await createConfig(INTERCEPT, interceptData('v.example'));
    const c2 = await createConfig(HOST_V1, hostData(82));
    const id = await createService({ configs: [c1, c2] });
    const one = async (query: string) => {
      const res = await list(`/services?filter=${q(`id = "${id}"`)}${query}`);
      return res.body.data[0];
    };
    let s = await one('');
    assert.deepEqual(s.permissions, ['Invalid']);
    assert.deepEqual(s.config, {});
    s = await one('&configTypes=all');
    assert.deepEqual(s.config, { 'intercept.v1': interceptData('v.example'), 'host.v1': hostData(82) });
    s = await one(`&configTypes=${q('intercept.v1,nope')}&configTypes=host.v1`);
    assert.deepEqual(s.config, { 'intercept.v1': interceptData('v.example') });
    s = await one(`&configTypes=${HOST_V1}`);
    assert.deepEqual(s.config, { 'host.v1': hostData(82) });
    // A session that asked for config types at login gets them without the parameter.
    const token = (await tc.http.post('/edge/management/v1/authenticate?method=password', { username: 'admin', password: 'admin-password-for-tests', configTypes: ['host.v1'] })).body.data.token;
    const res = await createClient(tc.mgmt.baseUrl, tc.ca, { token }).get(`/services?filter=${q(`id = "${id}"`)}`);
    assert.deepEqual(res.body.data[0].config, { 'host.v1': hostData(82) });
  });

  it('with roleFilter lists by attributes and @ids, without permissions or config', async () => {
    const attr = uniqueName('attr');
    const a = await createService({ roleAttributes: [attr, 'x'] });
    const b = await createService({ roleAttributes: [attr] });
    const c = await createService();
    let res = await list(`/services?roleFilter=${q(`#${attr}`)}&sort=createdAt`);
    assert.deepEqual(new Set(ids(res)), new Set([a, b]));
    for (const s of res.body.data) {
      assert.equal(s.permissions, null);
      assert.equal(s.config, null);
      assert.deepEqual(s.postureQueries, []);
    }
    res = await list(`/services?roleFilter=${q(`#${attr}`)}&roleFilter=${q('#x')}&roleSemantic=AllOf`);
    assert.deepEqual(ids(res), [a]);
    res = await list(`/services?roleFilter=${q(`#${attr}`)}&roleFilter=${q(`@${c}`)}&roleSemantic=AnyOf`);
    assert.deepEqual(new Set(ids(res)), new Set([a, b, c]));
    assertFieldError(await tc.mgmt.get(`/services?roleFilter=${q(`#${attr}`)}&roleSemantic=Some`), 'semantic');
  });

  it('permissions list Bind before Dial for the caller', async () => {
    const id = await createService();
    await createPolicy('/service-policies', { type: 'Dial', identityRoles: [`@${adminId}`], serviceRoles: [`@${id}`] });
    assert.deepEqual((await detail(id)).permissions, ['Dial']);
    await createPolicy('/service-policies', { type: 'Bind', identityRoles: [`@${adminId}`], serviceRoles: [`@${id}`] });
    const d = await detail(id);
    assert.deepEqual(d.permissions, ['Bind', 'Dial']);
    assert.deepEqual(d.postureQueries.map((p: { policyId: string }) => p.policyId), ['dummy bind policy: no posture checks defined', 'dummy dial policy: no posture checks defined']);
  });
});

describe('GET /service-role-attributes', () => {
  it('lists the distinct attributes in use, filterable', async () => {
    const attr = uniqueName('role');
    await createService({ roleAttributes: [attr, `${attr}-2`] });
    await createService({ roleAttributes: [attr] });
    const res = await tc.mgmt.get(`/service-role-attributes?filter=${q(`id contains "${attr}"`)}&sort=id`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/service-role-attributes', 200, res.body);
    assert.deepEqual(res.body.data, [attr, `${attr}-2`]);
  });
});

describe('derived service lists', () => {
  it('/identities/{id}/services by policy type', async () => {
    const identity = await createIdentity(tc.mgmt);
    const attr = uniqueName('grp');
    const dial = await createService({ roleAttributes: [attr] });
    const bind = await createService();
    await createService({ roleAttributes: [attr + 'x'] });
    await createPolicy('/service-policies', { type: 'Dial', identityRoles: [`@${identity}`], serviceRoles: [`#${attr}`] });
    await createPolicy('/service-policies', { type: 'Bind', identityRoles: [`@${identity}`], serviceRoles: [`@${bind}`] });
    assert.deepEqual(new Set(ids(await list(`/identities/${identity}/services`))), new Set([dial, bind]));
    assert.deepEqual(ids(await list(`/identities/${identity}/services?policyType=dial`)), [dial]);
    assert.deepEqual(ids(await list(`/identities/${identity}/services?policyType=bind`)), [bind]);
    const filtered = await list(`/identities/${identity}/services?filter=${q(`id = "${bind}"`)}`);
    assert.deepEqual(ids(filtered), [bind]);
    assert.equal(filtered.body.data[0].permissions, null);
    assertFieldError(await tc.mgmt.get(`/identities/${identity}/services?policyType=both`), 'policyType');
    assertEmptyList(await tc.mgmt.get('/identities/nope/services'));
  });

  it('/service-policies/{id}/services and /service-edge-router-policies/{id}/services', async () => {
    const attr = uniqueName('grp');
    const a = await createService({ roleAttributes: [attr] });
    const b = await createService({ roleAttributes: [attr] });
    const sp = await createPolicy('/service-policies', { type: 'Dial', identityRoles: [], serviceRoles: [`#${attr}`] });
    const serp = await createPolicy('/service-edge-router-policies', { edgeRouterRoles: [], serviceRoles: [`#${attr}`] });
    for (const path of [`/service-policies/${sp}/services`, `/service-edge-router-policies/${serp}/services`]) {
      assert.deepEqual(new Set(ids(await list(`${path}?sort=name`))), new Set([a, b]), path);
      const page = await list(`${path}?limit=1`);
      assert.equal(page.body.data.length, 1);
      assert.equal(page.body.meta.pagination.totalCount, 2);
      assert.deepEqual(ids(await list(`${path}?filter=${q(`id = "${b}"`)}`)), [b]);
    }
    // A service created later with the attribute joins the policy's members.
    const c = await createService({ roleAttributes: [attr] });
    assert.ok(ids(await list(`/service-policies/${sp}/services?limit=100`)).includes(c));
    assertEmptyList(await tc.mgmt.get('/service-policies/nope/services'));
    assertEmptyList(await tc.mgmt.get('/service-edge-router-policies/nope/services'));
    assertEmptyList(await tc.mgmt.get(`/service-edge-router-policies/${sp}/services`));
  });

  it('/edge-routers/{id}/services', async () => {
    const er = await tc.mgmt.post('/edge-routers', { name: uniqueName('er') });
    assert.equal(er.status, 201, er.text);
    const routerId = er.body.data.id as string;
    const a = await createService();
    await createService();
    await createPolicy('/service-edge-router-policies', { edgeRouterRoles: [`@${routerId}`], serviceRoles: [`@${a}`] });
    assert.deepEqual(ids(await list(`/edge-routers/${routerId}/services`)), [a]);
    assertEmptyList(await tc.mgmt.get('/edge-routers/nope/services'));
  });

  it('/services/{id}/configs', async () => {
    const c1 = await createConfig(INTERCEPT, interceptData('l.example'));
    const c2 = await createConfig(HOST_V1, hostData(83));
    const id = await createService({ configs: [c1, c2] });
    const res = await tc.mgmt.get(`/services/${id}/configs?sort=name`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/services/{id}/configs', 200, res.body);
    assert.deepEqual(new Set(ids(res)), new Set([c1, c2]));
    assert.deepEqual(ids(await tc.mgmt.get(`/services/${id}/configs?filter=${q(`type = "${HOST_V1}"`)}`)), [c2]);
    assertEmptyList(await tc.mgmt.get('/services/nope/configs'));
  });
});

describe('DELETE /services/{id}', () => {
  it('removes the service, its overrides and its @id from policies, and marks its users', async () => {
    const identity = await createIdentity(tc.mgmt);
    const id = await createService();
    const other = await createService();
    const sp = await createPolicy('/service-policies', { type: 'Dial', identityRoles: [`@${identity}`], serviceRoles: [`@${id}`, `@${other}`] });
    const c = await createConfig(HOST_V1, hostData(84));
    assertEmptyOk(await tc.mgmt.post(`/identities/${identity}/service-configs`, [{ serviceId: id, configId: c }]));
    await clearMarks();
    assertEmptyOk(await tc.mgmt.delete(`/services/${id}`));
    assert.ok((await markedIdentities()).has(identity));
    assertError(await tc.mgmt.get(`/services/${id}`), 404, 'NOT_FOUND');
    assert.deepEqual((await tc.mgmt.get(`/service-policies/${sp}`)).body.data.serviceRoles, [`@${other}`]);
    assert.deepEqual((await tc.mgmt.get(`/identities/${identity}/service-configs`)).body.data, []);
    assert.deepEqual(ids(await list(`/identities/${identity}/services`)), [other]);
    // The config is no longer in use and can go.
    assertEmptyOk(await tc.mgmt.delete(`/configs/${c}`));
  });

  it('an update marks the identities with access', async () => {
    const identity = await createIdentity(tc.mgmt);
    const bystander = await createIdentity(tc.mgmt);
    const id = await createService();
    await createPolicy('/service-policies', { type: 'Bind', identityRoles: [`@${identity}`], serviceRoles: [`@${id}`] });
    await clearMarks();
    assertEmptyOk(await tc.mgmt.patch(`/services/${id}`, { maxIdleTimeMillis: 1 }));
    const marked = await markedIdentities();
    assert.ok(marked.has(identity));
    assert.ok(!marked.has(bystander));
  });
});

describe('service permissions', () => {
  it('refuses a non-admin without permissions; service.read may only read', async () => {
    const id = await createService();
    const plain = await createUserWithPassword(tc);
    const asPlain = createClient(tc.mgmt.baseUrl, tc.ca, { token: plain.token });
    for (const [method, path] of [['GET', '/services'], ['GET', `/services/${id}`], ['GET', `/services/${id}/configs`], ['GET', '/service-role-attributes'], ['DELETE', `/services/${id}`]]) {
      assertError(await asPlain.request(method!, path!), 401, 'UNAUTHORIZED');
    }
    assertError(await asPlain.post('/services', { name: uniqueName('x'), encryptionRequired: true }), 401, 'UNAUTHORIZED');
    const reader = await createUserWithPassword(tc, { permissions: ['service.read'] });
    const asReader = createClient(tc.mgmt.baseUrl, tc.ca, { token: reader.token });
    assert.equal((await asReader.get(`/services/${id}`)).status, 200);
    assert.equal((await asReader.get('/services')).status, 200);
    assertError(await asReader.patch(`/services/${id}`, { maxIdleTimeMillis: 2 }), 401, 'UNAUTHORIZED');
    // A sub-list needs read access to the listed type: services of an identity yes, configs of a service no.
    assert.equal((await asReader.get(`/identities/${plain.id}/services`)).status, 200);
    assertError(await asReader.get(`/services/${id}/configs`), 401, 'UNAUTHORIZED');
    const identityReader = createClient(tc.mgmt.baseUrl, tc.ca, { token: (await createUserWithPassword(tc, { permissions: ['identity.read'] })).token });
    assertError(await identityReader.get(`/identities/${plain.id}/services`), 401, 'UNAUTHORIZED');
  });
});

describe('postureQueries once posture checks exist', () => {
  it('lists each linking policy with its checks; checks fail, a policy without checks passes', async () => {
    const id = await createService();
    const pc = await tc.mgmt.post('/posture-checks', { name: uniqueName('pc'), typeId: 'PROCESS', process: { osType: 'Linux', path: '/bin/agent', hashes: ['aa'] } });
    assert.equal(pc.status, 201, pc.text);
    const mfa = await tc.mgmt.post('/posture-checks', { name: uniqueName('mfa'), typeId: 'MFA', timeoutSeconds: 300, promptOnWake: true });
    assert.equal(mfa.status, 201, mfa.text);
    const multi = await tc.mgmt.post('/posture-checks', { name: uniqueName('multi'), typeId: 'PROCESS_MULTI', semantic: 'AnyOf', processes: [{ osType: 'Windows', path: 'C:\\a.exe' }] });
    assert.equal(multi.status, 201, multi.text);
    const checked = await createPolicy('/service-policies', { type: 'Dial', identityRoles: [`@${adminId}`], serviceRoles: [`@${id}`], postureCheckRoles: [`@${pc.body.data.id}`, `@${mfa.body.data.id}`, `@${multi.body.data.id}`] });
    const open = await createPolicy('/service-policies', { type: 'Bind', identityRoles: [`@${adminId}`], serviceRoles: [`@${id}`] });
    const d = await detail(id);
    const byPolicy = new Map(d.postureQueries.map((p: { policyId: string }) => [p.policyId, p]));
    assert.equal(byPolicy.size, 2);
    const c = byPolicy.get(checked) as Record<string, any>;
    assert.equal(c.policyType, 'Dial');
    assert.equal(c.isPassing, false);
    const queries = new Map(c.postureQueries.map((x: { id: string }) => [x.id, x]));
    const proc = queries.get(pc.body.data.id) as Record<string, any>;
    assert.equal(proc.queryType, 'PROCESS');
    assert.equal(proc.isPassing, false);
    assert.deepEqual(proc.process, { osType: 'Linux', path: '/bin/agent' });
    assert.equal(proc.timeout, -1);
    assert.equal(proc.timeoutRemaining, -1);
    assert.deepEqual(proc._links, { self: { href: `./posture-checks/${pc.body.data.id}` } });
    const m = queries.get(mfa.body.data.id) as Record<string, any>;
    assert.equal(m.queryType, 'MFA');
    assert.equal(m.timeout, 300);
    assert.equal(m.timeoutRemaining, 0);
    assert.equal(m.promptOnWake, true);
    assert.equal(m.promptOnUnlock, undefined, 'left out when not set, as upstream');
    assert.match(m.timeoutAt, TIMESTAMP);
    assert.deepEqual((queries.get(multi.body.data.id) as Record<string, any>).processes, [{ osType: 'Windows', path: 'C:\\a.exe' }]);
    assert.deepEqual(byPolicy.get(open), { isPassing: true, policyId: open, policyType: 'Bind', postureQueries: [] });
    // Posture checks exist but no policy links the pair: the pseudo entries remain.
    const other = await detail(await createService());
    assert.deepEqual(other.postureQueries, [{ isPassing: true, policyId: 'dummy invalid policy: no posture checks defined', policyType: 'Invalid', postureQueries: [] }]);
    // roleFilter lists still show the caller's linking policies.
    const rf = await list(`/services?roleFilter=${q(`@${id}`)}`);
    assert.equal(rf.body.data[0].postureQueries.length, 2);
  });
});
