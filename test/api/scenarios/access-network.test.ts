/**
 * Scenario: a small network with all three policy kinds (AllOf and AnyOf, #attributes, @ids and #all),
 * and who sees what across the derived management lists, the client service list, sessions and the
 * policy advisor — before and after attribute changes, policy edits and deletes. Every view must agree,
 * because they all answer from the one access index.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName } from '../../support/controller.ts';
import { createClient, type HttpClient } from '../../support/client.ts';
import { createUserWithPassword } from '../../support/factories.ts';
import { assertError, assertFieldError } from '../../support/assertions.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';

const tc = await startTestController();
const root = `https://127.0.0.1:${tc.port}`;

interface User {
  id: string;
  name: string;
  client: HttpClient;
}

async function user(roleAttributes: string[]): Promise<User> {
  const u = await createUserWithPassword(tc, { roleAttributes });
  const token = await tc.login(u.username, u.password, 'client');
  const detail = await tc.mgmt.get(`/identities/${u.id}`);
  return { id: u.id, name: detail.body.data.name, client: createClient(`${root}/edge/client/v1`, tc.ca, { token }) };
}

async function create(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await tc.mgmt.post(path, body);
  assert.equal(res.status, 201, `${path}: ${res.text}`);
  return res.body.data.id as string;
}

/** Names of every item of a management list (limit none so nothing is paged away). */
async function names(path: string): Promise<string[]> {
  const sep = path.includes('?') ? '&' : '?';
  const res = await tc.mgmt.get(`${path}${sep}filter=${encodeURIComponent('true limit none')}`);
  assert.equal(res.status, 200, `${path}: ${res.text}`);
  return (res.body.data as Array<{ name: string }>).map((x) => x.name).sort();
}

async function clientServices(u: User): Promise<Record<string, string[]>> {
  const res = await u.client.get('/services?limit=500');
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('client', 'get', '/services', 200, res.body, { allowNullAt: ['/data/*/configs', '/data/*/roleAttributes'] });
  return Object.fromEntries((res.body.data as Array<{ name: string; permissions: string[] }>).map((s) => [s.name, s.permissions]));
}

async function serviceUpdates(u: User): Promise<string> {
  const res = await u.client.get('/current-api-session/service-updates');
  assert.equal(res.status, 200, res.text);
  return res.body.data.lastChangeAt as string;
}

// ---- the network ---------------------------------------------------------------------------------------
const alice = await user(['sales', 'eu']);
const bob = await user(['sales']);
const carol = await user(['eng']);
const dave = await user([]);

const n = (s: string) => uniqueName(s);
const crmName = n('crm');
const wikiName = n('wiki');
const buildName = n('build');
const hrName = n('hr');
const crm = await create('/services', { name: crmName, encryptionRequired: true, roleAttributes: ['sales-apps'] });
const wiki = await create('/services', { name: wikiName, encryptionRequired: true, roleAttributes: ['docs'] });
const build = await create('/services', { name: buildName, encryptionRequired: true, roleAttributes: ['eng-apps'] });
const hr = await create('/services', { name: hrName, encryptionRequired: true });

const er1Name = n('er1');
const er2Name = n('er2');
const er1 = await create('/edge-routers', { name: er1Name, roleAttributes: ['eu'] });
const er2 = await create('/edge-routers', { name: er2Name, roleAttributes: ['us'] });
await create('/edge-routers', { name: n('er3') });

const dialSales = await create('/service-policies', {
  name: n('dial-sales'), type: 'Dial', semantic: 'AllOf', identityRoles: ['#sales', '#eu'], serviceRoles: ['#sales-apps'],
});
const dialDocs = await create('/service-policies', {
  name: n('dial-docs'), type: 'Dial', semantic: 'AnyOf', identityRoles: ['#sales', '#eng'], serviceRoles: ['#docs'],
});
const bindBuild = await create('/service-policies', {
  name: n('bind-build'), type: 'Bind', semantic: 'AllOf', identityRoles: [`@${carol.id}`], serviceRoles: ['#eng-apps'],
});
await create('/service-policies', { name: n('dial-hr'), type: 'Dial', semantic: 'AllOf', identityRoles: ['#all'], serviceRoles: [`@${hr}`] });
const erpEu = await create('/edge-router-policies', { name: n('erp-eu'), semantic: 'AllOf', identityRoles: ['#eu'], edgeRouterRoles: ['#eu'] });
await create('/edge-router-policies', { name: n('erp-all'), semantic: 'AllOf', identityRoles: ['#all'], edgeRouterRoles: [`@${er2}`] });
await create('/service-edge-router-policies', { name: n('serp-eu'), semantic: 'AllOf', serviceRoles: ['#all'], edgeRouterRoles: ['#eu'] });
await create('/service-edge-router-policies', { name: n('serp-hr'), semantic: 'AllOf', serviceRoles: [`@${hr}`], edgeRouterRoles: [`@${er2}`] });

test('client service lists follow the service policies, with Bind before Dial', async () => {
  assert.deepEqual(await clientServices(alice), { [crmName]: ['Dial'], [hrName]: ['Dial'], [wikiName]: ['Dial'] });
  assert.deepEqual(await clientServices(bob), { [hrName]: ['Dial'], [wikiName]: ['Dial'] });
  assert.deepEqual(await clientServices(carol), { [buildName]: ['Bind'], [hrName]: ['Dial'], [wikiName]: ['Dial'] });
  assert.deepEqual(await clientServices(dave), { [hrName]: ['Dial'] });
});

test('client service detail is 404 for a service the caller can not use', async () => {
  assertError(await dave.client.get(`/services/${crm}`), 404, 'NOT_FOUND');
  const res = await alice.client.get(`/services/${crm}`);
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.body.data.permissions, ['Dial']);
});

test('derived management lists agree with the client view', async () => {
  assert.deepEqual(await names(`/identities/${alice.id}/services`), [crmName, hrName, wikiName].sort());
  assert.deepEqual(await names(`/identities/${carol.id}/services?policyType=bind`), [buildName]);
  assert.deepEqual(await names(`/identities/${carol.id}/services?policyType=dial`), [hrName, wikiName].sort());
  assert.deepEqual(await names(`/services/${wiki}/identities`), [alice.name, bob.name, carol.name].sort());
  assert.deepEqual(await names(`/services/${build}/identities?policyType=bind`), [carol.name]);
  assert.deepEqual(await names(`/identities/${alice.id}/edge-routers`), [er1Name, er2Name].sort());
  assert.deepEqual(await names(`/identities/${bob.id}/edge-routers`), [er2Name]);
  assert.deepEqual(await names(`/services/${crm}/edge-routers`), [er1Name]);
  assert.deepEqual(await names(`/services/${hr}/edge-routers`), [er1Name, er2Name].sort());
  assert.deepEqual(await names(`/edge-routers/${er1}/identities`), [alice.name]);
  assert.ok((await names(`/edge-routers/${er1}/services`)).includes(crmName));
  assert.deepEqual(await names(`/edge-router-policies/${erpEu}/identities`), [alice.name]);
  assert.deepEqual(await names(`/edge-router-policies/${erpEu}/edge-routers`), [er1Name]);
  assert.deepEqual(await names(`/service-policies/${dialDocs}/identities`), [alice.name, bob.name, carol.name].sort());
  assert.deepEqual(await names(`/service-policies/${dialSales}/services`), [crmName]);
  const policies = await names(`/identities/${alice.id}/service-policies`);
  assert.equal(policies.length, 3);
});

test('sessions need the requested permission and a router both policy kinds grant', async () => {
  const ok = await alice.client.post('/sessions', { serviceId: crm, type: 'Dial' });
  assert.equal(ok.status, 201, ok.text);
  assert.deepEqual((ok.body.data.edgeRouters as Array<{ name: string }>).map((r) => r.name), [er1Name]);
  assertError(await bob.client.post('/sessions', { serviceId: wiki, type: 'Dial' }), 400, 'NO_EDGE_ROUTERS_AVAILABLE');
  const viaEr2 = await bob.client.post('/sessions', { serviceId: hr, type: 'Dial' });
  assert.equal(viaEr2.status, 201, viaEr2.text);
  assert.deepEqual((viaEr2.body.data.edgeRouters as Array<{ name: string }>).map((r) => r.name), [er2Name]);
  assertFieldError(await carol.client.post('/sessions', { serviceId: build, type: 'Dial' }), 'ServiceId');
  assertError(await dave.client.post('/sessions', { serviceId: crm, type: 'Dial' }), 404, 'NOT_FOUND');
});

test('the policy advisor agrees with sessions', async () => {
  const res = await tc.mgmt.get(`/identities/${alice.id}/policy-advice/${crm}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'get', '/identities/{id}/policy-advice/{serviceId}', 200, res.body, { allowNullAt: ['/meta'] });
  assert.equal(res.body.data.isDialAllowed, true);
  assert.equal(res.body.data.isBindAllowed, undefined);
  assert.equal(res.body.data.identityRouterCount, 2);
  assert.equal(res.body.data.serviceRouterCount, 1);
  assert.deepEqual((res.body.data.commonRouters as Array<{ name: string }>).map((r) => r.name), [er1Name]);
  const none = await tc.mgmt.get(`/identities/${bob.id}/policy-advice/${wiki}`);
  assert.equal(none.body.data.isDialAllowed, true);
  assert.equal(none.body.data.commonRouters, null);
});

test('an attribute change grants access and bumps service-updates only for that identity', async () => {
  const bobBefore = await serviceUpdates(bob);
  const carolBefore = await serviceUpdates(carol);
  await new Promise((r) => setTimeout(r, 5)); // marks have millisecond resolution
  const res = await tc.mgmt.patch(`/identities/${bob.id}`, { roleAttributes: ['sales', 'eu'] });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(await clientServices(bob), { [crmName]: ['Dial'], [hrName]: ['Dial'], [wikiName]: ['Dial'] });
  assert.ok((await serviceUpdates(bob)) > bobBefore);
  assert.equal(await serviceUpdates(carol), carolBefore);
  assert.deepEqual(await names(`/identities/${bob.id}/edge-routers`), [er1Name, er2Name].sort());
});

test('changing a policy type moves its identities from Dial to Bind', async () => {
  const res = await tc.mgmt.patch(`/service-policies/${dialDocs}`, { type: 'Bind' });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual((await clientServices(alice))[wikiName], ['Bind']);
  assert.deepEqual(await names(`/services/${wiki}/identities?policyType=dial`), []);
  await tc.mgmt.patch(`/service-policies/${dialDocs}`, { type: 'Dial' });
  assert.deepEqual((await clientServices(alice))[wikiName], ['Dial']);
});

test('losing a policy ends the sessions it allowed', async () => {
  const session = await bob.client.post('/sessions', { serviceId: wiki, type: 'Dial' });
  assert.equal(session.status, 201, session.text);
  const id = session.body.data.id as string;
  assert.equal((await bob.client.get(`/sessions/${id}`)).status, 200);
  assert.equal((await tc.mgmt.patch(`/identities/${bob.id}`, { roleAttributes: ['eu'] })).status, 200);
  assertError(await bob.client.get(`/sessions/${id}`), 404, 'NOT_FOUND');
  // A session for a service still granted (hr, through #all) survives the same change.
  const hrSession = await bob.client.post('/sessions', { serviceId: hr, type: 'Dial' });
  assert.equal(hrSession.status, 201, hrSession.text);
  assert.equal((await tc.mgmt.patch(`/identities/${bob.id}`, { roleAttributes: ['eu', 'other'] })).status, 200);
  assert.equal((await bob.client.get(`/sessions/${hrSession.body.data.id}`)).status, 200);
});

test('deleting an identity strips its @id from policies', async () => {
  const res = await tc.mgmt.delete(`/identities/${carol.id}`);
  assert.equal(res.status, 200, res.text);
  const policy = await tc.mgmt.get(`/service-policies/${bindBuild}`);
  assert.equal(policy.body.data.identityRoles, null);
  assert.deepEqual(policy.body.data.identityRolesDisplay, []);
  assert.deepEqual(await names(`/services/${build}/identities`), []);
});

test('deleting a service removes it from every view and ends its sessions', async () => {
  const before = await alice.client.get('/sessions');
  assert.ok((before.body.data as Array<{ serviceId: string }>).some((s) => s.serviceId === crm));
  const res = await tc.mgmt.delete(`/services/${crm}`);
  assert.equal(res.status, 200, res.text);
  assert.equal((await clientServices(alice))[crmName], undefined);
  const after = await alice.client.get('/sessions');
  assert.ok(!(after.body.data as Array<{ serviceId: string }>).some((s) => s.serviceId === crm));
  assert.deepEqual(await names(`/service-policies/${dialSales}/services`), []);
  assertError(await tc.mgmt.get(`/identities/${alice.id}/policy-advice/${crm}`), 404, 'NOT_FOUND');
});

test('deleting an edge router policy takes its routers away', async () => {
  const res = await tc.mgmt.delete(`/edge-router-policies/${erpEu}`);
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(await names(`/identities/${alice.id}/edge-routers`), [er2Name]);
  assertError(await alice.client.post('/sessions', { serviceId: wiki, type: 'Dial' }), 400, 'NO_EDGE_ROUTERS_AVAILABLE');
});

test('a new identity without attributes is picked up by #all policies', async () => {
  const erin = await user([]);
  assert.deepEqual(await clientServices(erin), { [hrName]: ['Dial'] });
  assert.deepEqual(await names(`/identities/${erin.id}/edge-routers`), [er2Name]);
});
