/**
 * Association lists derived from the policies: the policies matching an identity, a service or an edge
 * router, and the identities a service (by policy type) or an edge router reaches. Each is checked for its
 * members as policies and attributes change, filter/sort/paging, the 404 of an unknown parent, and
 * permissions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesDefinition, assertMatchesReference } from '../../support/reference-spec.ts';
import { assertEmptyList, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();

/** Fields the reference does not mark nullable but upstream sends as null (empty role lists, no interfaces). */
const NULLS_BY_TEMPLATE: Array<[RegExp, string[]]> = [
  [/service-policies$/, ['identityRoles', 'serviceRoles', 'postureCheckRoles']],
  [/\/edge-router-policies$/, ['identityRoles', 'edgeRouterRoles']],
  [/service-edge-router-policies$/, ['serviceRoles', 'edgeRouterRoles']],
  [/identities$/, ['interfaces']],
];

function nullsFor(template: string): string[] {
  const entry = NULLS_BY_TEMPLATE.find(([re]) => re.test(template));
  return (entry?.[1] ?? []).map((f) => `/data/*/${f}`);
}

function q(filter: string): string {
  return encodeURIComponent(filter);
}

async function post(path: string, b: Record<string, unknown>): Promise<string> {
  const res = await tc.mgmt.post(path, b);
  assert.equal(res.status, 201, res.text);
  return res.body.data.id;
}

const service = () => post('/services', { name: uniqueName('svc'), encryptionRequired: true });
const edgeRouter = (roleAttributes: string[] = []) => post('/edge-routers', { name: uniqueName('er'), roleAttributes });
const sp = (b: Record<string, unknown>) => post('/service-policies', { name: uniqueName('sp'), type: 'Dial', semantic: 'AllOf', ...b });
const erp = (b: Record<string, unknown>) => post('/edge-router-policies', { name: uniqueName('erp'), semantic: 'AllOf', ...b });
const serp = (b: Record<string, unknown>) => post('/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AllOf', ...b });

/** GETs a derived list, validates it against the reference (or a definition per item) and returns the ids. */
async function ids(path: string, template: string, opts: { definition?: string } = {}): Promise<string[]> {
  const res = await tc.mgmt.get(path);
  assert.equal(res.status, 200, res.text);
  if (opts.definition) {
    for (const item of res.body.data) assertMatchesDefinition('management', opts.definition, item, { allowNullAt: ['/serviceRoles', '/edgeRouterRoles'] });
  } else {
    assertMatchesReference('management', 'GET', template, 200, res.body, { allowNullAt: nullsFor(template) });
  }
  return res.body.data.map((e: { id: string }) => e.id).sort();
}

describe('policies matching an entity', () => {
  it('/identities/{id}/service-policies and /edge-router-policies follow role changes', async () => {
    const attr = uniqueName('ia').replace(/-/g, '');
    const identity = await createIdentity(tc.mgmt, { roleAttributes: [attr] });
    const byAttr = await sp({ identityRoles: [`#${attr}`] });
    const byId = await sp({ type: 'Bind', identityRoles: [`@${identity}`] });
    await sp({ identityRoles: [`#${attr}`, '#other'] });
    const erpAll = await erp({ identityRoles: ['#all'] });
    assert.deepEqual(await ids(`/identities/${identity}/service-policies`, '/identities/{id}/service-policies'), [byAttr, byId].sort());
    assert.ok((await ids(`/identities/${identity}/edge-router-policies`, '/identities/{id}/edge-router-policies')).includes(erpAll));
    const filtered = await ids(`/identities/${identity}/service-policies?filter=${q('type = 2')}`, '/identities/{id}/service-policies');
    assert.deepEqual(filtered, [byId]);
    assertEmptyOk(await tc.mgmt.patch(`/identities/${identity}`, { roleAttributes: [] }));
    assert.deepEqual(await ids(`/identities/${identity}/service-policies`, '/identities/{id}/service-policies'), [byId]);
  });

  it('/services/{id}/service-policies and /service-edge-router-policies', async () => {
    const svc = await service();
    const a = await sp({ serviceRoles: [`@${svc}`] });
    const b = await sp({ serviceRoles: ['#all'] });
    const s1 = await serp({ serviceRoles: [`@${svc}`] });
    await serp({ serviceRoles: ['#nothing-has-this'] });
    const policies = await ids(`/services/${svc}/service-policies`, '/services/{id}/service-policies');
    assert.ok(policies.includes(a) && policies.includes(b));
    const serps = await ids(`/services/${svc}/service-edge-router-policies`, '/services/{id}/service-edge-router-policies');
    assert.deepEqual(serps, [s1]);
    const paged = await tc.mgmt.get(`/services/${svc}/service-policies?filter=${q(`id = "${a}" or id = "${b}"`)}&limit=1`);
    assert.equal(paged.body.data.length, 1);
    assert.equal(paged.body.meta.pagination.totalCount, 2);
  });

  it('/edge-routers/{id}/edge-router-policies and /service-edge-router-policies', async () => {
    const attr = uniqueName('ra').replace(/-/g, '');
    const router = await edgeRouter([attr]);
    const e1 = await erp({ semantic: 'AnyOf', edgeRouterRoles: [`#${attr}`, '#x'] });
    const s1 = await serp({ edgeRouterRoles: [`@${router}`] });
    assert.deepEqual(await ids(`/edge-routers/${router}/edge-router-policies`, '/edge-routers/{id}/edge-router-policies'), [e1]);
    // The reference declares the service-policy envelope here (an upstream spec slip); items are SERPs.
    assert.deepEqual(await ids(`/edge-routers/${router}/service-edge-router-policies`, '', { definition: 'serviceEdgeRouterPolicyDetail' }), [s1]);
  });
});

describe('identities reached through policies', () => {
  it('/services/{id}/identities honours policyType dial|bind', async () => {
    const svc = await service();
    const dialer = await createIdentity(tc.mgmt);
    const binder = await createIdentity(tc.mgmt);
    await sp({ type: 'Dial', identityRoles: [`@${dialer}`], serviceRoles: [`@${svc}`] });
    await sp({ type: 'Bind', identityRoles: [`@${binder}`], serviceRoles: [`@${svc}`] });
    await sp({ type: 'Dial', identityRoles: [`@${binder}`] });
    const t = '/services/{id}/identities';
    assert.deepEqual(await ids(`/services/${svc}/identities`, t), [dialer, binder].sort());
    assert.deepEqual(await ids(`/services/${svc}/identities?policyType=dial`, t), [dialer]);
    assert.deepEqual(await ids(`/services/${svc}/identities?policyType=bind`, t), [binder]);
    assert.deepEqual(await ids(`/services/${svc}/identities?policyType=bind&filter=${q(`id = "${dialer}"`)}`, t), []);
    assertFieldError(await tc.mgmt.get(`/services/${svc}/identities?policyType=Dial`), 'policyType');
  });

  it('/edge-routers/{id}/identities', async () => {
    const router = await edgeRouter();
    const attr = uniqueName('ea').replace(/-/g, '');
    const a = await createIdentity(tc.mgmt, { roleAttributes: [attr], name: `${attr}-a` });
    const b = await createIdentity(tc.mgmt, { roleAttributes: [attr], name: `${attr}-b` });
    await erp({ identityRoles: [`#${attr}`], edgeRouterRoles: [`@${router}`] });
    assert.deepEqual(await ids(`/edge-routers/${router}/identities`, '/edge-routers/{id}/identities'), [a, b].sort());
    const page = await tc.mgmt.get(`/edge-routers/${router}/identities?filter=${q('true sort by name desc')}&limit=1`);
    assert.deepEqual(page.body.data.map((i: { id: string }) => i.id), [b]);
    assertEmptyOk(await tc.mgmt.delete(`/identities/${b}`));
    assert.deepEqual(await ids(`/edge-routers/${router}/identities`, '/edge-routers/{id}/identities'), [a]);
  });
});

describe('unknown parents and permissions', () => {
  it('answers an unknown parent, or a record of another type, with an empty list, as upstream', async () => {
    for (const path of [
      '/identities/nope/service-policies',
      '/identities/nope/edge-router-policies',
      '/services/nope/service-policies',
      '/services/nope/service-edge-router-policies',
      '/services/nope/identities',
      '/edge-routers/nope/edge-router-policies',
      '/edge-routers/nope/service-edge-router-policies',
      '/edge-routers/nope/identities',
    ]) {
      assertEmptyList(await tc.mgmt.get(path));
    }
    // An identity's id names no service or edge router: no members leak through the wrong parent type.
    const someone = await createIdentity(tc.mgmt);
    for (const path of [`/services/${someone}/identities`, `/edge-routers/${someone}/identities`]) assertEmptyList(await tc.mgmt.get(path));
  });

  it('answers a non-admin with 401 UNAUTHORIZED; a sub-list needs read access to the listed type', async () => {
    const user = await createUserWithPassword(tc);
    const asUser = tc.mgmt.as({ token: user.token });
    const svc = await service();
    const router = await edgeRouter();
    const lists = [
      `/services/${svc}/service-policies`,
      `/services/${svc}/identities`,
      `/edge-routers/${router}/identities`,
      `/identities/${user.id}/service-policies`,
      `/identities/${user.id}/edge-router-policies`,
      `/edge-routers/${router}/edge-router-policies`,
    ];
    for (const path of lists) assertError(await asUser.get(path), 401, 'UNAUTHORIZED');
    // Reading the parent's type is not enough; reading the listed type is.
    const identityReader = tc.mgmt.as({ token: (await createUserWithPassword(tc, { permissions: ['identity.read'] })).token });
    assertError(await identityReader.get(`/identities/${user.id}/service-policies`), 401, 'UNAUTHORIZED');
    assert.equal((await identityReader.get(`/services/${svc}/identities`)).status, 200);
    const policyReader = tc.mgmt.as({ token: (await createUserWithPassword(tc, { permissions: ['service-policy.read'] })).token });
    assert.equal((await policyReader.get(`/identities/${user.id}/service-policies`)).status, 200);
    assertError(await policyReader.get(`/identities/${user.id}/edge-router-policies`), 401, 'UNAUTHORIZED');
  });
});
