/**
 * Client API services: the list holds exactly the services the caller may dial or bind (admins: all), with
 * `permissions` in upstream's order, `config` by configTypes (parameter or the API session's), and
 * postureQueries; filter, paging and roleFilter apply within that set. Detail answers 404 for a service the
 * caller can not use and renders `config: null` when no type is wanted. Patch, put and delete are admin only.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpClient, type HttpResponse } from '../../support/client.ts';
import { createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertEmptyOk, assertError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();

// Upstream sends a posture query's `processes` as null unless its check is PROCESS_MULTI.
const ONE_NULLS = { allowNullAt: ['/data/config', '/data/configs', '/data/roleAttributes', '/data/postureQueries/*/postureQueries/*/processes'] };
const LIST_NULLS = { allowNullAt: ['/data/*/configs', '/data/*/roleAttributes', '/data/*/postureQueries/*/postureQueries/*/processes'] };
const INTERCEPT = 'g7cIWbcGg';
const HOST_V1 = 'NH5p4FpGR';
const q = encodeURIComponent;
const interceptData = { protocols: ['tcp'], addresses: ['c.example'], portRanges: [{ low: 443, high: 443 }] };
const hostData = { protocol: 'tcp', address: 'localhost', port: 443 };

async function createService(body: Record<string, unknown> = {}): Promise<string> {
  const res = await tc.mgmt.post('/services', { name: uniqueName('svc'), encryptionRequired: true, ...body });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

async function createConfig(configTypeId: string, data: Record<string, unknown>): Promise<string> {
  const res = await tc.mgmt.post('/configs', { name: uniqueName('cfg'), configTypeId, data });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

async function grant(type: 'Dial' | 'Bind', identityId: string, serviceRoles: string[]): Promise<string> {
  const res = await tc.mgmt.post('/service-policies', { name: uniqueName('sp'), type, semantic: 'AnyOf', identityRoles: [`@${identityId}`], serviceRoles });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

/** A non-admin identity logged in on the client API, optionally asking for config types at login. */
async function clientUser(configTypes?: string[]): Promise<{ id: string; api: HttpClient }> {
  const user = await createUserWithPassword(tc);
  const res = await tc.http.post('/edge/client/v1/authenticate?method=password', { username: user.username, password: user.password, ...(configTypes ? { configTypes } : {}) });
  assert.equal(res.status, 200, res.text);
  return { id: user.id, api: createClient(tc.client.baseUrl, tc.ca, { token: res.body.data.token }) };
}

async function list(api: HttpClient, query = ''): Promise<HttpResponse> {
  const res = await api.get(`/services${query}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('client', 'GET', '/services', 200, res.body, LIST_NULLS);
  return res;
}

async function detail(api: HttpClient, id: string): Promise<Record<string, any>> {
  const res = await api.get(`/services/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('client', 'GET', '/services/{id}', 200, res.body, ONE_NULLS);
  return res.body.data;
}

const ids = (res: HttpResponse) => res.body.data.map((s: { id: string }) => s.id);

describe('GET /services (client)', () => {
  it('lists exactly the services the caller may dial or bind, with permissions Bind before Dial', async () => {
    const user = await clientUser();
    const dial = await createService();
    const bind = await createService();
    const both = await createService();
    const hidden = await createService();
    await grant('Dial', user.id, [`@${dial}`, `@${both}`]);
    await grant('Bind', user.id, [`@${bind}`, `@${both}`]);
    const res = await list(user.api, '?limit=100');
    assert.deepEqual(new Set(ids(res)), new Set([dial, bind, both]));
    assert.ok(!ids(res).includes(hidden));
    assert.equal(res.body.meta.pagination.totalCount, 3);
    const perms = new Map(res.body.data.map((s: { id: string; permissions: string[] }) => [s.id, s.permissions]));
    assert.deepEqual(perms.get(dial), ['Dial']);
    assert.deepEqual(perms.get(bind), ['Bind']);
    assert.deepEqual(perms.get(both), ['Bind', 'Dial']);
    const s = res.body.data.find((x: { id: string }) => x.id === both);
    assert.deepEqual(s.config, {});
    assert.deepEqual(s.postureQueries, [
      { isPassing: true, policyId: 'dummy bind policy: no posture checks defined', policyType: 'Bind', postureQueries: [] },
      { isPassing: true, policyId: 'dummy dial policy: no posture checks defined', policyType: 'Dial', postureQueries: [] },
    ]);
  });

  it('follows attribute-based policies and sees a newly matching service at once', async () => {
    const user = await clientUser();
    const attr = uniqueName('app');
    const policy = await tc.mgmt.post('/service-policies', { name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${user.id}`], serviceRoles: [`#${attr}`] });
    assert.equal(policy.status, 201, policy.text);
    assert.deepEqual(ids(await list(user.api)), []);
    const id = await createService({ roleAttributes: [attr] });
    assert.deepEqual(ids(await list(user.api)), [id]);
    assertEmptyOk(await tc.mgmt.patch(`/services/${id}`, { roleAttributes: ['other'] }));
    assert.deepEqual(ids(await list(user.api)), []);
  });

  it('filters, sorts, pages and applies roleFilter within the visible set', async () => {
    const user = await clientUser();
    const prefix = uniqueName('vis');
    const a = await createService({ name: `${prefix}-a`, roleAttributes: ['red'] });
    const b = await createService({ name: `${prefix}-b`, roleAttributes: ['blue'] });
    const c = await createService({ name: `${prefix}-c`, roleAttributes: ['red'] });
    await createService({ name: `${prefix}-d`, roleAttributes: ['red'] });
    await grant('Dial', user.id, [`@${a}`, `@${b}`, `@${c}`]);
    assert.deepEqual(ids(await list(user.api, `?sort=${q('name desc')}`)), [c, b, a]);
    assert.deepEqual(ids(await list(user.api, `?filter=${q(`name = "${prefix}-b"`)}`)), [b]);
    const page = await list(user.api, '?sort=name&limit=1&offset=1');
    assert.deepEqual(ids(page), [b]);
    assert.deepEqual(page.body.meta.pagination, { limit: 1, offset: 1, totalCount: 3 });
    assert.deepEqual(ids(await list(user.api, `?roleFilter=${q('#red')}&sort=name`)), [a, c]);
    assert.deepEqual(ids(await list(user.api, `?roleFilter=${q('#red')}&roleFilter=${q(`@${b}`)}&roleSemantic=AnyOf&sort=name`)), [a, b, c]);
    assertError(await user.api.get(`/services?filter=${q('nme = 1')}`), 400, 'INVALID_FILTER');
  });

  it('admins, as upstream, see only the services a policy grants their identity', async () => {
    const id = await createService();
    const other = await createService();
    const mine = `?filter=${q(`id = "${id}" or id = "${other}"`)}`;
    assert.deepEqual(ids(await list(tc.client, mine)), []);
    assertError(await tc.client.get(`/services/${id}`), 404, 'NOT_FOUND');
    const adminId = (await tc.client.get('/current-identity')).body.data.id as string;
    await grant('Dial', adminId, [`@${id}`]);
    const res = await list(tc.client, mine);
    assert.deepEqual(ids(res), [id]);
    assert.deepEqual(res.body.data[0].permissions, ['Dial']);
    assert.deepEqual(ids(await list(tc.client, '?limit=500')).filter((s: string) => s === id || s === other), [id]);
    assert.deepEqual((await detail(tc.client, id)).permissions, ['Dial']);
  });

  it('merges config by configTypes: names, ids, all; else the API session config types', async () => {
    const ic = await createConfig(INTERCEPT, interceptData);
    const hc = await createConfig(HOST_V1, hostData);
    const id = await createService({ configs: [ic, hc] });
    const user = await clientUser(['intercept.v1']);
    await grant('Dial', user.id, [`@${id}`]);
    const config = async (query: string) => (await list(user.api, query)).body.data[0].config;
    assert.deepEqual(await config(''), { 'intercept.v1': interceptData });
    assert.deepEqual(await config('?configTypes=all'), { 'intercept.v1': interceptData, 'host.v1': hostData });
    assert.deepEqual(await config(`?configTypes=host.v1&configTypes=${INTERCEPT}`), { 'intercept.v1': interceptData, 'host.v1': hostData });
    assert.deepEqual(await config('?configTypes=host.v1&configTypes=unknown'), { 'host.v1': hostData });
    assert.deepEqual(await config('?configTypes=unknown'), {});
    const plain = await clientUser();
    await grant('Dial', plain.id, [`@${id}`]);
    assert.deepEqual((await list(plain.api)).body.data[0].config, {});
    const all = await clientUser(['all']);
    await grant('Dial', all.id, [`@${id}`]);
    assert.deepEqual((await list(all.api)).body.data[0].config, { 'intercept.v1': interceptData, 'host.v1': hostData });
  });

  it('needs a session', async () => {
    assertError(await tc.http.get('/edge/client/v1/services'), 401, 'UNAUTHORIZED');
  });
});

describe('GET /services/{id} (client)', () => {
  it('shows a usable service and answers 404 for one the caller can not use', async () => {
    const ic = await createConfig(INTERCEPT, interceptData);
    const id = await createService({ configs: [ic] });
    const hidden = await createService();
    const user = await clientUser(['intercept.v1']);
    await grant('Bind', user.id, [`@${id}`]);
    const d = await detail(user.api, id);
    assert.deepEqual(d.permissions, ['Bind']);
    assert.deepEqual(d.config, { 'intercept.v1': interceptData });
    const res = await user.api.get(`/services/${hidden}`);
    assertError(res, 404, 'NOT_FOUND');
    assertMatchesReference('client', 'GET', '/services/{id}', 404, res.body);
    assertError(await user.api.get('/services/nope'), 404, 'NOT_FOUND');
    // No config types wanted: the detail renders config null (the list renders {}).
    const plain = await clientUser();
    await grant('Dial', plain.id, [`@${id}`]);
    assert.equal((await detail(plain.api, id)).config, null);
  });
});

describe('PATCH, PUT and DELETE /services/{id} (client)', () => {
  it('are for admins only', async () => {
    const id = await createService();
    const user = await clientUser();
    await grant('Dial', user.id, [`@${id}`]);
    assertError(await user.api.patch(`/services/${id}`, { maxIdleTimeMillis: 5 }), 401, 'UNAUTHORIZED');
    assertError(await user.api.put(`/services/${id}`, { name: uniqueName('x') }), 401, 'UNAUTHORIZED');
    assertError(await user.api.delete(`/services/${id}`), 401, 'UNAUTHORIZED');
    let res = await tc.client.patch(`/services/${id}`, { maxIdleTimeMillis: 5, encryptionRequired: false });
    assertEmptyOk(res);
    assertMatchesReference('client', 'PATCH', '/services/{id}', 200, res.body);
    let d = (await tc.mgmt.get(`/services/${id}`)).body.data;
    assert.equal(d.maxIdleTimeMillis, 5);
    assert.equal(d.encryptionRequired, true);
    const name = uniqueName('put');
    res = await tc.client.put(`/services/${id}`, { name, terminatorStrategy: 'random' });
    assertEmptyOk(res);
    d = (await tc.mgmt.get(`/services/${id}`)).body.data;
    assert.equal(d.name, name);
    assert.equal(d.terminatorStrategy, 'random');
    assert.equal(d.maxIdleTimeMillis, 0);
    assertError(await tc.client.patch(`/services/${id}`, { terminatorStrategy: 'nope' }), 404, 'NOT_FOUND');
    assertEmptyOk(await tc.client.delete(`/services/${id}`));
    assertError(await tc.mgmt.get(`/services/${id}`), 404, 'NOT_FOUND');
    assertError(await tc.client.delete(`/services/${id}`), 404, 'NOT_FOUND');
  });
});

describe('postureQueries on the client view', () => {
  it('shows linking policies with failing checks once posture checks exist', async () => {
    const id = await createService();
    const user = await clientUser();
    const pc = await tc.mgmt.post('/posture-checks', { name: uniqueName('pc'), typeId: 'MFA', timeoutSeconds: 0, promptOnUnlock: true });
    assert.equal(pc.status, 201, pc.text);
    const checked = await tc.mgmt.post('/service-policies', { name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${user.id}`], serviceRoles: [`@${id}`], postureCheckRoles: [`@${pc.body.data.id}`] });
    assert.equal(checked.status, 201, checked.text);
    const d = await detail(user.api, id);
    assert.equal(d.postureQueries.length, 1);
    const entry = d.postureQueries[0];
    assert.equal(entry.policyId, checked.body.data.id);
    assert.equal(entry.policyType, 'Dial');
    assert.equal(entry.isPassing, false);
    assert.equal(entry.postureQueries[0].queryType, 'MFA');
    assert.equal(entry.postureQueries[0].timeout, -1);
    assert.equal(entry.postureQueries[0].timeoutRemaining, -1);
    assert.equal(entry.postureQueries[0].promptOnUnlock, true);
    assert.ok(!('timeoutAt' in entry.postureQueries[0]));
    // As upstream: a prompt that is not set is left out, and `processes` is null for a check that is not PROCESS_MULTI.
    assert.ok(!('promptOnWake' in entry.postureQueries[0]));
    assert.ok('processes' in entry.postureQueries[0]);
    assert.equal(entry.postureQueries[0].processes, null);
    const listed = await list(user.api, `?filter=${encodeURIComponent(`id = "${id}"`)}`);
    assert.equal(listed.body.data[0].postureQueries[0].postureQueries[0].processes, null);
  });
});
