/**
 * Identity service-config overrides (`/identities/{id}/service-configs`, model.md §2.5): one config per
 * identity, service and config type (a later pair replaces an earlier one), unknown config or service → 404,
 * removal by the type of the named config, an empty removal body removes nothing, the merged client view,
 * the identity's service-update mark, unknown identities and permissions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serviceRef } from '../../support/refs.ts';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient } from '../../support/client.ts';
import { createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertDecodeError, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();

const INTERCEPT = 'g7cIWbcGg';
const HOST_V1 = 'NH5p4FpGR';
const interceptData = (host: string) => ({ protocols: ['tcp'], addresses: [host], portRanges: [{ low: 80, high: 80 }] });
const hostData = (port: number) => ({ protocol: 'tcp', address: 'localhost', port });

async function createService(body: Record<string, unknown> = {}): Promise<{ id: string; name: string }> {
  const name = uniqueName('svc');
  const res = await tc.mgmt.post('/services', { name, encryptionRequired: true, ...body });
  assert.equal(res.status, 201, res.text);
  return { id: res.body.data.id as string, name };
}

async function createConfig(configTypeId: string, data: Record<string, unknown>): Promise<{ id: string; name: string }> {
  const name = uniqueName('cfg');
  const res = await tc.mgmt.post('/configs', { name, configTypeId, data });
  assert.equal(res.status, 201, res.text);
  return { id: res.body.data.id as string, name };
}

async function overrides(identityId: string): Promise<Array<Record<string, any>>> {
  const res = await tc.mgmt.get(`/identities/${identityId}/service-configs`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/identities/{id}/service-configs', 200, res.body);
  const n = res.body.data.length;
  assert.deepEqual(res.body.meta, { pagination: { limit: n, offset: 0, totalCount: n } });
  return res.body.data;
}

function pairs(list: Array<Record<string, any>>): Array<[string, string]> {
  return list.map((o) => [o.serviceId, o.configId] as [string, string]).sort();
}

async function marked(identityId: string): Promise<boolean> {
  return (await tc.controller.store.get('SELECT 1 FROM identity_service_marks WHERE identity_id = ?', [identityId])) !== undefined;
}

async function clearMarks(): Promise<void> {
  await tc.controller.store.write((tx) => tx.run('DELETE FROM identity_service_marks'));
}

describe('POST /identities/{id}/service-configs', () => {
  it('adds overrides and lists them with service and config refs', async () => {
    const identity = await createIdentity(tc.mgmt);
    const s = await createService();
    const c = await createConfig(INTERCEPT, interceptData('o.example'));
    assert.deepEqual(await overrides(identity), []);
    await clearMarks();
    const res = await tc.mgmt.post(`/identities/${identity}/service-configs`, [{ serviceId: s.id, configId: c.id }]);
    assertEmptyOk(res);
    assertMatchesReference('management', 'POST', '/identities/{id}/service-configs', 200, res.body);
    assert.ok(await marked(identity), 'the identity is told its services changed');
    assert.deepEqual(await overrides(identity), [
      {
        config: { _links: { self: { href: `./configs/${c.id}` } }, entity: 'configs', id: c.id, name: c.name },
        configId: c.id,
        service: serviceRef(s.id, s.name),
        serviceId: s.id,
      },
    ]);
  });

  it('keeps one override per service and config type; a later pair replaces an earlier one', async () => {
    const identity = await createIdentity(tc.mgmt);
    const s1 = await createService();
    const s2 = await createService();
    const i1 = await createConfig(INTERCEPT, interceptData('1.example'));
    const i2 = await createConfig(INTERCEPT, interceptData('2.example'));
    const h1 = await createConfig(HOST_V1, hostData(1));
    assertEmptyOk(await tc.mgmt.post(`/identities/${identity}/service-configs`, [
      { serviceId: s1.id, configId: i1.id },
      { serviceId: s1.id, configId: i2.id },
      { serviceId: s1.id, configId: h1.id },
      { serviceId: s2.id, configId: i1.id },
    ]));
    assert.deepEqual(pairs(await overrides(identity)), ([[s1.id, i2.id], [s1.id, h1.id], [s2.id, i1.id]] as Array<[string, string]>).sort());
    assertEmptyOk(await tc.mgmt.post(`/identities/${identity}/service-configs`, [{ serviceId: s2.id, configId: i2.id }]));
    assert.deepEqual(pairs(await overrides(identity)), ([[s1.id, i2.id], [s1.id, h1.id], [s2.id, i2.id]] as Array<[string, string]>).sort());
    // Identity updates never touch overrides.
    assertEmptyOk(await tc.mgmt.patch(`/identities/${identity}`, { roleAttributes: ['changed'] }));
    assert.equal((await overrides(identity)).length, 3);
  });

  it('answers 404 for an unknown config, service or identity, and applies nothing', async () => {
    const identity = await createIdentity(tc.mgmt);
    const s = await createService();
    const c = await createConfig(HOST_V1, hostData(2));
    let res = await tc.mgmt.post(`/identities/${identity}/service-configs`, [{ serviceId: s.id, configId: c.id }, { serviceId: s.id, configId: 'nope' }]);
    assertError(res, 404, 'NOT_FOUND');
    assert.equal(res.body.error.cause.message, 'config with id nope not found');
    res = await tc.mgmt.post(`/identities/${identity}/service-configs`, [{ serviceId: 'nope', configId: c.id }]);
    assertError(res, 404, 'NOT_FOUND');
    assert.equal(res.body.error.cause.message, 'service with id nope not found');
    assert.deepEqual(await overrides(identity), []);
    assertError(await tc.mgmt.post('/identities/nope/service-configs', [{ serviceId: s.id, configId: c.id }]), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.get('/identities/nope/service-configs'), 404, 'NOT_FOUND');
  });

  it('validates the body', async () => {
    const identity = await createIdentity(tc.mgmt);
    assertFieldError(await tc.mgmt.post(`/identities/${identity}/service-configs`, [{ serviceId: 'x' }]), /configId/);
    assertDecodeError(await tc.mgmt.post(`/identities/${identity}/service-configs`, { serviceId: 'x', configId: 'y' }), '');
    assertFieldError(await tc.mgmt.post(`/identities/${identity}/service-configs`), 'body');
  });
});

describe('DELETE /identities/{id}/service-configs', () => {
  it('removes by the type of the named config; an empty or absent body removes nothing', async () => {
    const identity = await createIdentity(tc.mgmt);
    const s = await createService();
    const i1 = await createConfig(INTERCEPT, interceptData('d1.example'));
    const i2 = await createConfig(INTERCEPT, interceptData('d2.example'));
    const h1 = await createConfig(HOST_V1, hostData(3));
    assertEmptyOk(await tc.mgmt.post(`/identities/${identity}/service-configs`, [{ serviceId: s.id, configId: i1.id }, { serviceId: s.id, configId: h1.id }]));
    assertEmptyOk(await tc.mgmt.delete(`/identities/${identity}/service-configs`));
    assertEmptyOk(await tc.mgmt.delete(`/identities/${identity}/service-configs`, { body: [] }));
    assert.equal((await overrides(identity)).length, 2);
    await clearMarks();
    // i2 is not the stored override, but its type decides what goes.
    const res = await tc.mgmt.delete(`/identities/${identity}/service-configs`, { body: [{ serviceId: s.id, configId: i2.id }] });
    assertEmptyOk(res);
    assertMatchesReference('management', 'DELETE', '/identities/{id}/service-configs', 200, res.body);
    assert.ok(await marked(identity));
    assert.deepEqual(pairs(await overrides(identity)), [[s.id, h1.id]]);
    assertError(await tc.mgmt.delete(`/identities/${identity}/service-configs`, { body: [{ serviceId: s.id, configId: 'nope' }] }), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.delete('/identities/nope/service-configs', { body: [] }), 404, 'NOT_FOUND');
  });
});

describe('overrides in the client service view', () => {
  it('replace the service config of the same type and add types the service lacks', async () => {
    const user = await createUserWithPassword(tc);
    const own = await createConfig(INTERCEPT, interceptData('own.example'));
    const s = await createService({ configs: [own.id] });
    const policy = await tc.mgmt.post('/service-policies', { name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${user.id}`], serviceRoles: [`@${s.id}`] });
    assert.equal(policy.status, 201, policy.text);
    const token = await tc.login(user.username, user.password, 'client');
    const asUser = createClient(tc.client.baseUrl, tc.ca, { token });
    const view = async () => (await asUser.get(`/services?configTypes=all&filter=${encodeURIComponent(`id = "${s.id}"`)}`)).body.data[0].config;
    assert.deepEqual(await view(), { 'intercept.v1': interceptData('own.example') });
    const over = await createConfig(INTERCEPT, interceptData('mine.example'));
    const host = await createConfig(HOST_V1, hostData(4));
    assertEmptyOk(await tc.mgmt.post(`/identities/${user.id}/service-configs`, [{ serviceId: s.id, configId: over.id }, { serviceId: s.id, configId: host.id }]));
    assert.deepEqual(await view(), { 'intercept.v1': interceptData('mine.example'), 'host.v1': hostData(4) });
    // Another identity with access sees the service's own config.
    const adminId = (await tc.client.get('/current-identity')).body.data.id as string;
    const adminPolicy = await tc.mgmt.post('/service-policies', { name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${adminId}`], serviceRoles: [`@${s.id}`] });
    assert.equal(adminPolicy.status, 201, adminPolicy.text);
    const admin = await tc.client.get(`/services?configTypes=intercept.v1&filter=${encodeURIComponent(`id = "${s.id}"`)}`);
    assert.deepEqual(admin.body.data[0].config, { 'intercept.v1': interceptData('own.example') });
  });
});

describe('service-config permissions', () => {
  it('needs identity permissions', async () => {
    const identity = await createIdentity(tc.mgmt);
    const plain = await createUserWithPassword(tc);
    const asPlain = createClient(tc.mgmt.baseUrl, tc.ca, { token: plain.token });
    assertError(await asPlain.get(`/identities/${identity}/service-configs`), 401, 'UNAUTHORIZED');
    assertError(await asPlain.post(`/identities/${identity}/service-configs`, []), 401, 'UNAUTHORIZED');
    assertError(await asPlain.delete(`/identities/${identity}/service-configs`), 401, 'UNAUTHORIZED');
    const reader = await createUserWithPassword(tc, { permissions: ['identity.read'] });
    const asReader = createClient(tc.mgmt.baseUrl, tc.ca, { token: reader.token });
    assert.equal((await asReader.get(`/identities/${identity}/service-configs`)).status, 200);
    assertError(await asReader.post(`/identities/${identity}/service-configs`, []), 401, 'UNAUTHORIZED');
  });
});
