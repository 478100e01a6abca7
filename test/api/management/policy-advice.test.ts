/**
 * The policy advisor `GET /identities/{id}/policy-advice/{serviceId}`: dial/bind permission, router counts
 * and common routers from the edge router and service edge router policies, upstream's omitted false and
 * zero values, `commonRouters: null` when none, `meta: null`, 404s and permissions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { edgeRouterRef, identityRef, serviceRef } from '../../support/refs.ts';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertEmptyOk, assertError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();

async function post(path: string, b: Record<string, unknown>): Promise<string> {
  const res = await tc.mgmt.post(path, b);
  assert.equal(res.status, 201, res.text);
  return res.body.data.id;
}

async function advice(identityId: string, serviceId: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/identities/${identityId}/policy-advice/${serviceId}`);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.meta, null);
  assertMatchesReference('management', 'GET', '/identities/{id}/policy-advice/{serviceId}', 200, res.body, { allowNullAt: ['/meta', '/data/commonRouters'] });
  return res.body.data;
}

describe('GET /identities/{id}/policy-advice/{serviceId}', () => {
  it('omits false flags and zero counts and sends commonRouters null when nothing links the pair', async () => {
    const identityName = uniqueName('i');
    const serviceName = uniqueName('s');
    const identity = await createIdentity(tc.mgmt, { name: identityName });
    const service = await post('/services', { name: serviceName, encryptionRequired: true });
    assert.deepEqual(await advice(identity, service), {
      identityId: identity,
      identity: identityRef(identity, identityName),
      serviceId: service,
      service: serviceRef(service, serviceName),
      commonRouters: null,
    });
  });

  it('reports dial and bind permission, router counts and the common routers', async () => {
    const attr = uniqueName('pa').replace(/-/g, '');
    const identity = await createIdentity(tc.mgmt, { roleAttributes: [attr] });
    const service = await post('/services', { name: uniqueName('s'), encryptionRequired: true, roleAttributes: [attr] });
    const names = [`${attr}-a`, `${attr}-b`, `${attr}-c`];
    const [ra, rb, rc] = [
      await post('/edge-routers', { name: names[0] }),
      await post('/edge-routers', { name: names[1] }),
      await post('/edge-routers', { name: names[2] }),
    ];
    await post('/service-policies', { name: uniqueName('sp'), type: 'Dial', semantic: 'AllOf', identityRoles: [`#${attr}`], serviceRoles: [`#${attr}`] });
    await post('/edge-router-policies', { name: uniqueName('erp'), semantic: 'AnyOf', identityRoles: [`@${identity}`], edgeRouterRoles: [`@${ra}`, `@${rb}`] });
    await post('/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AnyOf', serviceRoles: [`@${service}`], edgeRouterRoles: [`@${rb}`, `@${rc}`, `@${ra}`] });
    let d = await advice(identity, service);
    assert.equal(d.isDialAllowed, true);
    assert.equal('isBindAllowed' in d, false);
    assert.equal(d.identityRouterCount, 2);
    assert.equal(d.serviceRouterCount, 3);
    assert.deepEqual(
      [...d.commonRouters].sort((x: { name: string }, y: { name: string }) => (x.name < y.name ? -1 : 1)),
      [
        { ...edgeRouterRef(ra, names[0]!), isOnline: false },
        { ...edgeRouterRef(rb, names[1]!), isOnline: false },
      ],
    );

    await post('/service-policies', { name: uniqueName('sp'), type: 'Bind', semantic: 'AllOf', identityRoles: ['#all'], serviceRoles: [`@${service}`] });
    assertEmptyOk(await tc.mgmt.delete(`/edge-routers/${ra}`));
    d = await advice(identity, service);
    assert.equal(d.isBindAllowed, true);
    assert.equal(d.isDialAllowed, true);
    assert.equal(d.identityRouterCount, 1);
    assert.equal(d.serviceRouterCount, 2);
    assert.deepEqual(d.commonRouters.map((r: { id: string }) => r.id), [rb]);
  });

  it('answers an unknown identity or service with 404 NOT_FOUND', async () => {
    const identity = await createIdentity(tc.mgmt);
    const service = await post('/services', { name: uniqueName('s'), encryptionRequired: true });
    const a = await tc.mgmt.get(`/identities/nope/policy-advice/${service}`);
    assertError(a, 404, 'NOT_FOUND');
    assert.deepEqual(a.body.error.cause, { code: 'UNHANDLED', message: 'identity with id nope not found' });
    const b = await tc.mgmt.get(`/identities/${identity}/policy-advice/nope`);
    assertError(b, 404, 'NOT_FOUND');
    assert.deepEqual(b.body.error.cause, { code: 'UNHANDLED', message: 'service with id nope not found' });
  });

  it('answers a non-admin with 401 UNAUTHORIZED', async () => {
    const user = await createUserWithPassword(tc);
    const service = await post('/services', { name: uniqueName('s'), encryptionRequired: true });
    assertError(await tc.mgmt.as({ token: user.token }).get(`/identities/${user.id}/policy-advice/${service}`), 401, 'UNAUTHORIZED');
  });
});
