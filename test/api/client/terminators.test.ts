/**
 * Client `GET /services/{id}/terminators`: the terminators of a service the caller may dial or bind
 * (404 otherwise, and for unknown services; admins see every service), in the client read model, with
 * filter, sort and paging.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serviceRef } from '../../support/refs.ts';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpClient } from '../../support/client.ts';
import { createIdentity } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();

async function post(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await tc.mgmt.post(path, body);
  assert.equal(res.status, 201, `${path}: ${res.text}`);
  return res.body.data.id as string;
}

/** A non-admin identity logged in on the client API. */
async function clientUser(): Promise<{ id: string; client: HttpClient }> {
  const id = await createIdentity(tc.mgmt);
  const username = uniqueName('user');
  const password = 'Secret-pass-123';
  await post('/authenticators', { method: 'updb', identityId: id, username, password });
  const token = await tc.login(username, password, 'client');
  return { id, client: createClient(`https://127.0.0.1:${tc.port}/edge/client/v1`, tc.ca, { token }) };
}

const serviceName = uniqueName('svc');
const service = await post('/services', { name: serviceName, encryptionRequired: true });
const router = await post('/edge-routers', { name: uniqueName('er') });
const t1 = await post('/terminators', { service, router, binding: 'edge', address: 'hosted:1', identity: 'inst-a', cost: 2 });
const t2 = await post('/terminators', { service, router, binding: 'edge', address: 'hosted:2' });
await post('/terminators', { service: await post('/services', { name: uniqueName('other'), encryptionRequired: true }), router, binding: 'edge', address: 'hosted:3' });

async function listAs(client: HttpClient, query = ''): Promise<Record<string, any>> {
  const res = await client.get(`/services/${service}/terminators${query}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('client', 'GET', '/services/{id}/terminators', 200, res.body);
  return res.body;
}

describe('client GET /services/{id}/terminators', () => {
  it('lists the terminators of a dialable service in the client read model', async () => {
    const user = await clientUser();
    await post('/service-policies', { name: uniqueName('dial'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${user.id}`], serviceRoles: [`@${service}`] });
    const body = await listAs(user.client, '?sort=address');
    assert.deepEqual(body.data.map((t: { id: string }) => t.id), [t1, t2]);
    const first = body.data[0];
    assert.deepEqual(Object.keys(first).sort(), ['_links', 'createdAt', 'id', 'identity', 'routerId', 'service', 'serviceId', 'tags', 'updatedAt']);
    assert.equal(first.identity, 'inst-a');
    assert.equal(first.routerId, router);
    assert.equal(first.serviceId, service);
    assert.deepEqual(first.service, serviceRef(service, serviceName));
    assert.deepEqual(first._links, { self: { href: `./terminators/${t1}` } });
    assert.equal(body.data[1].identity, '');
  });

  it('lists them for a bindable service too, with filter and paging', async () => {
    const user = await clientUser();
    await post('/service-policies', { name: uniqueName('bind'), type: 'Bind', semantic: 'AnyOf', identityRoles: [`@${user.id}`], serviceRoles: [`@${service}`] });
    const filtered = await listAs(user.client, `?filter=${encodeURIComponent('address = "hosted:2"')}`);
    assert.deepEqual(filtered.data.map((t: { id: string }) => t.id), [t2]);
    const paged = await listAs(user.client, '?limit=1&offset=1&sort=address');
    assert.deepEqual(paged.meta.pagination, { limit: 1, offset: 1, totalCount: 2 });
    assert.deepEqual(paged.data.map((t: { id: string }) => t.id), [t2]);
  });

  it('answers 404 when the caller may neither dial nor bind the service, and for unknown services', async () => {
    const user = await clientUser();
    const res = await user.client.get(`/services/${service}/terminators`);
    assertError(res, 404, 'NOT_FOUND');
    assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: `service with id ${service} not found` });
    assertError(await user.client.get('/services/nope/terminators'), 404, 'NOT_FOUND');
  });

  it('shows every service to an admin; unknown services are still 404', async () => {
    const body = await listAs(tc.client, '?sort=address');
    assert.deepEqual(body.data.map((t: { id: string }) => t.id), [t1, t2]);
    assertError(await tc.client.get('/services/nope/terminators'), 404, 'NOT_FOUND');
  });

  it('answers 401 without a session', async () => {
    assertError(await tc.http.get(`/edge/client/v1/services/${service}/terminators`), 401, 'UNAUTHORIZED');
  });

  it('follows access changes: removing the policy hides the list again', async () => {
    const user = await clientUser();
    const policy = await post('/service-policies', { name: uniqueName('tmp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${user.id}`], serviceRoles: [`@${service}`] });
    await listAs(user.client);
    assert.equal((await tc.mgmt.delete(`/service-policies/${policy}`)).status, 200);
    assertError(await user.client.get(`/services/${service}/terminators`), 404, 'NOT_FOUND');
  });
});
