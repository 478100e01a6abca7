/**
 * The router data model over a real control channel, driven by a scripted router: a subscription gets the full
 * state with what REST created (configs, services, identities, posture checks, service policies and their
 * members, the signing key), REST writes arrive as change sets in index order with the events they cause, a
 * renewal changes nothing, a router that comes back with the index it had gets only what it missed, and a new router
 * after changes gets the full state kept from before them with the change sets since. Also the
 * terminators a router's own tunneler asks for (the services its Router identity may bind).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName } from '../support/controller.ts';
import { createRecord, createUserWithPassword } from '../support/factories.ts';
import { bearer, claimsOf, oidcLogin } from '../support/oidc.ts';
import { connectRouter, enrolledRouter, enrollRouterAgain, eventually, type RouterCredentials, type TestRouterConnection } from '../support/test-router.ts';
import { SimRouter, decodeReceived } from '../support/router-model.ts';
import { message, readString } from '../../src/fabric/channel/message.ts';
import { decode, encode } from '../../src/fabric/proto/index.ts';
import { EdgeContentType, EdgeHeader, PolicyType, type DataStateChangeSet, type DataStateEvent } from '../../src/fabric/proto/edge-ctrl.ts';

const tc = await startTestController();
const HOST_V1 = 'NH5p4FpGR';

interface Subscribed {
  router: RouterCredentials;
  conn: TestRouterConnection;
  model: SimRouter;
  subscriptionId: string;
  /** The index of the full state it got (the change sets after it are applied). */
  stateIndex: bigint;
}

function subscribe(conn: TestRouterConnection, request: { subscriptionId: string; currentIndex?: bigint; renew?: boolean; timelineId?: string }): void {
  conn.send(message(EdgeContentType.SubscribeToDataModelRequest, encode('edge.SubscribeToDataModelRequest', { subscriptionDurationSeconds: 300, ...request })));
}

async function subscribedRouter(credentials?: RouterCredentials): Promise<Subscribed> {
  const router = credentials ?? (await enrolledRouter(tc));
  const { conn } = await connectRouter(tc, router);
  const subscriptionId = uniqueName('sub');
  subscribe(conn, { subscriptionId });
  const state = decodeReceived(await conn.nextOf(EdgeContentType.DataState));
  assert.ok(state.type === 'state');
  assert.equal(state.subscriptionId, subscriptionId);
  const model = new SimRouter();
  model.receive(state);
  const s = { router, conn, model, subscriptionId, stateIndex: state.state.endIndex };
  await catchUp(s);
  return s;
}

/**
 * Applies the change sets that follow a full state at once (the controller keeps the full state it read and sends
 * the changes since with it): until none has come for a moment.
 */
async function catchUp(s: Subscribed): Promise<DataStateChangeSet[]> {
  const sets: DataStateChangeSet[] = [];
  for (;;) {
    let msg;
    try {
      msg = await s.conn.next((m) => m.contentType === EdgeContentType.DataStateChangeSet && !decode('edge.DataState.ChangeSet', m.body).isSynthetic, 300);
    } catch {
      return sets;
    }
    const got = decodeReceived(msg);
    assert.ok(got.type === 'changes' && got.subscriptionId === s.subscriptionId);
    s.model.receive(got);
    sets.push(got.set);
  }
}

/** Reads change sets (applying them) until `done` holds; returns them. */
async function changesUntil(s: Subscribed, done: (m: SimRouter) => boolean, what: string): Promise<DataStateChangeSet[]> {
  const sets: DataStateChangeSet[] = [];
  while (!done(s.model)) {
    let msg;
    try {
      msg = await s.conn.next((m) => m.contentType === EdgeContentType.DataStateChangeSet, 5000);
    } catch {
      assert.fail(`no change set brought ${what}`);
    }
    assert.equal(readString(msg.headers.get(EdgeHeader.RouterDataModelSubscriptionId)), s.subscriptionId, 'every change set names the subscription');
    const got = decodeReceived(msg);
    assert.ok(got.type === 'changes');
    s.model.receive(got);
    sets.push(got.set);
  }
  assert.equal(s.model.gaps, 0);
  return sets;
}

const events = (sets: DataStateChangeSet[]): DataStateEvent[] => sets.flatMap((s) => s.changes);

/** The model a router subscribing now gets. */
async function freshModel(): Promise<SimRouter> {
  const s = await subscribedRouter();
  s.conn.close();
  return s.model;
}

describe('router data model over the control channel', () => {
  it('sends the full state with what REST created, policy members and the signing key', async () => {
    const tag = uniqueName('rdm');
    const config = await createRecord(tc.mgmt, '/configs', { name: uniqueName('host'), configTypeId: HOST_V1, data: { protocol: 'tcp', address: '127.0.0.1', port: 9000 } });
    const service = await createRecord(tc.mgmt, '/services', { name: uniqueName('svc'), encryptionRequired: true, roleAttributes: [tag], configs: [config] });
    const identity = await createRecord(tc.mgmt, '/identities', { name: uniqueName('id'), type: 'User', isAdmin: false, roleAttributes: [tag], appData: { k: 'v' } });
    const check = await createRecord(tc.mgmt, '/posture-checks', { name: uniqueName('pc'), typeId: 'DOMAIN', domains: ['corp'], roleAttributes: [tag] });
    const policy = await createRecord(tc.mgmt, '/service-policies', {
      name: uniqueName('sp'),
      type: 'Bind',
      semantic: 'AnyOf',
      identityRoles: [`#${tag}`],
      serviceRoles: [`#${tag}`],
      postureCheckRoles: [`#${tag}`],
    });
    const { model, conn } = await subscribedRouter();
    assert.equal(model.timelineId, await tc.controller.store.value("SELECT value FROM controller_facts WHERE key = 'instance-id'"));
    assert.ok(model.configs.has(config));
    assert.ok(model.configTypes.has(HOST_V1));
    assert.deepEqual((model.services.get(service) as { configs: string[] }).configs, [config]);
    assert.deepEqual(JSON.parse(Buffer.from((model.identities.get(identity) as { appDataJson: Uint8Array }).appDataJson).toString()), { k: 'v' });
    assert.ok(model.postureChecks.has(check));
    const p = model.policies.get(policy)!;
    assert.equal(p.type, PolicyType.Bind);
    assert.deepEqual([...p.services], [service]);
    assert.deepEqual([...p.identities], [identity]);
    assert.deepEqual([...p.postureChecks], [check]);
    assert.ok(model.keys.has(tc.controller.pki.serverCertFingerprint), 'the session JWT signing key');
    conn.close();
  });

  it('sends creates, patches and deletes as change sets in index order', async () => {
    const s = await subscribedRouter();
    const tag = uniqueName('cs');
    const service = await createRecord(tc.mgmt, '/services', { name: uniqueName('svc'), encryptionRequired: false, roleAttributes: [tag] });
    const policy = await createRecord(tc.mgmt, '/service-policies', { name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`#${tag}`], serviceRoles: [`#${tag}`] });
    const created = await changesUntil(s, (m) => m.policies.has(policy) && m.services.has(service), 'the service and the policy');
    assert.ok(events(created).some((e) => e.service?.id === service && e.action === 0));
    assert.ok(events(created).some((e) => e.servicePolicyChange?.policyId === policy && e.servicePolicyChange.add && e.servicePolicyChange.relatedEntityIds.includes(service)));

    // An identity that matches the policy: created, then added to it.
    const identity = await createRecord(tc.mgmt, '/identities', { name: uniqueName('id'), type: 'User', isAdmin: false, roleAttributes: [tag] });
    const joined = await changesUntil(s, (m) => m.policies.get(policy)!.identities.has(identity), 'the identity in the policy');
    const evs = events(joined);
    const createdAt = evs.findIndex((e) => e.identity?.id === identity);
    const addedAt = evs.findIndex((e) => e.servicePolicyChange?.relatedEntityIds.includes(identity));
    assert.ok(createdAt >= 0 && createdAt < addedAt, 'the identity exists before it joins');

    // A config, then the service patched to use it.
    const config = await createRecord(tc.mgmt, '/configs', { name: uniqueName('host'), configTypeId: HOST_V1, data: { protocol: 'tcp', address: '127.0.0.1', port: 9001 } });
    const patched = await tc.mgmt.patch(`/services/${service}`, { configs: [config] });
    assert.equal(patched.status, 200, patched.text);
    await changesUntil(s, (m) => ((m.services.get(service) as { configs?: string[] }).configs ?? []).includes(config), 'the service with its config');
    assert.ok(s.model.configs.has(config));

    // The identity disabled over REST, then its roles changed: it leaves the policy.
    assert.equal((await tc.mgmt.post(`/identities/${identity}/disable`, { durationMinutes: 0 })).status, 200);
    await changesUntil(s, (m) => (m.identities.get(identity) as { disabled: boolean }).disabled, 'the identity disabled');
    assert.equal((await tc.mgmt.patch(`/identities/${identity}`, { roleAttributes: [] })).status, 200);
    const left = await changesUntil(s, (m) => !m.policies.get(policy)!.identities.has(identity), 'the identity out of the policy');
    assert.ok(events(left).some((e) => e.servicePolicyChange && !e.servicePolicyChange.add && e.servicePolicyChange.relatedEntityIds.includes(identity)));

    // Deletes: the policy, the identity.
    assert.equal((await tc.mgmt.delete(`/service-policies/${policy}`)).status, 200);
    const gone = await changesUntil(s, (m) => !m.policies.has(policy), 'the policy deleted');
    assert.ok(events(gone).some((e) => e.servicePolicy?.id === policy && e.action === 2));
    assert.equal((await tc.mgmt.delete(`/identities/${identity}`)).status, 200);
    await changesUntil(s, (m) => !m.identities.has(identity), 'the identity deleted');

    assert.deepEqual(s.model.snapshot(), (await freshModel()).snapshot(), 'the router model is the full state');
    s.conn.close();
  });

  it('changes nothing on a renewal, and gives a router that comes back with its index only what it missed', async () => {
    const s = await subscribedRouter();
    subscribe(s.conn, { subscriptionId: s.subscriptionId, renew: true, currentIndex: s.model.index, timelineId: s.model.timelineId });
    await assert.rejects(s.conn.next((m) => m.contentType === EdgeContentType.DataState || m.contentType === EdgeContentType.DataStateChangeSet, 500), 'nothing after a renewal');
    const index = s.model.index;
    s.conn.close();

    const tag = uniqueName('missed');
    const identity = await createRecord(tc.mgmt, '/identities', { name: uniqueName('id'), type: 'User', isAdmin: false, roleAttributes: [tag] });
    const policy = await createRecord(tc.mgmt, '/service-policies', { name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`#${tag}`], serviceRoles: [] });

    const { conn } = await connectRouter(tc, s.router);
    const back: Subscribed = { ...s, conn, subscriptionId: uniqueName('sub') };
    subscribe(conn, { subscriptionId: back.subscriptionId, currentIndex: index, timelineId: s.model.timelineId });
    const sets = await changesUntil(back, (m) => m.policies.get(policy)?.identities.has(identity) === true, 'what was missed');
    assert.equal(sets[0]!.previousIndex, index, 'the first set follows the index the router had');
    for (let i = 1; i < sets.length; i++) assert.ok(sets[i]!.index > sets[i - 1]!.index);
    await assert.rejects(conn.nextOf(EdgeContentType.DataState, 300), 'no full state');
    assert.deepEqual(back.model.snapshot(), (await freshModel()).snapshot());
    conn.close();
  });

  it('gives a router that subscribes after changes the kept full state and the change sets since, to the same model', async () => {
    const s = await subscribedRouter();
    const tag = uniqueName('kept');
    const identity = await createRecord(tc.mgmt, '/identities', { name: uniqueName('id'), type: 'User', isAdmin: false, roleAttributes: [tag] });
    const policy = await createRecord(tc.mgmt, '/service-policies', { name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`#${tag}`], serviceRoles: [] });
    await changesUntil(s, (m) => m.policies.get(policy)?.identities.has(identity) === true, 'the identity in the new policy');
    const renamed = uniqueName('sp-renamed');
    assert.equal((await tc.mgmt.patch(`/service-policies/${policy}`, { name: renamed })).status, 200);
    await changesUntil(s, (m) => m.policies.get(policy)!.name === renamed, 'the rename');

    const late = await subscribedRouter();
    assert.ok(late.stateIndex < late.model.index, 'the full state read before the changes, then the change sets since');
    assert.equal(late.model.index, s.model.index);
    assert.equal(late.model.gaps, 0);
    assert.deepEqual(late.model.snapshot(), s.model.snapshot());
    s.conn.close();
    late.conn.close();
  });

  it('tells routers of an ended JWT session as an API_SESSION revocation, in change sets and in later full states', async () => {
    const s = await subscribedRouter();
    const u = await createUserWithPassword(tc);
    const tokens = await oidcLogin(tc.http, { username: u.username, password: u.password });
    const asid = claimsOf(tokens.accessToken).z_asid as string;
    assert.equal((await tc.http.delete('/edge/client/v1/current-api-session', bearer(tokens.accessToken))).status, 200);
    await changesUntil(s, (m) => m.revocations.has(asid), 'the revocation of the ended session');
    const revocation = s.model.revocations.get(asid) as { type: string; expiresAt: { seconds: bigint } };
    assert.equal(revocation.type, 'API_SESSION');
    // Kept until the session's tokens (its refresh token) would have expired.
    assert.equal(Number(revocation.expiresAt.seconds), claimsOf(tokens.refreshToken).exp);
    // A zt-session's end is told the legacy way (ApiSessionRemoved), not as a revocation.
    const legacy = await tc.http.post('/edge/client/v1/authenticate?method=password', { username: u.username, password: u.password });
    assert.equal((await tc.http.delete('/edge/client/v1/current-api-session', { token: legacy.body.data.token })).status, 200);
    const late = await subscribedRouter();
    assert.ok(late.model.revocations.has(asid), 'a router that subscribes later gets it in its full state');
    assert.ok(!late.model.revocations.has(legacy.body.data.id));
    s.conn.close();
    late.conn.close();
  });

  it('sends the full state to a router whose model comes from another timeline', async () => {
    const router = await enrolledRouter(tc);
    const { conn } = await connectRouter(tc, router);
    subscribe(conn, { subscriptionId: 'other-timeline', currentIndex: 5n, timelineId: 'some-other-controller' });
    const state = decodeReceived(await conn.nextOf(EdgeContentType.DataState));
    assert.ok(state.type === 'state' && state.state.timelineId !== 'some-other-controller');
    conn.close();
  });
});

describe('terminators of a router\'s own tunneler', () => {
  async function tunnelerRouter(tunneler: boolean): Promise<RouterCredentials> {
    const name = uniqueName('ert');
    const id = await createRecord(tc.mgmt, '/edge-routers', { name, isTunnelerEnabled: tunneler });
    return enrollRouterAgain(tc, id, name);
  }

  async function requestTerminator(conn: TestRouterConnection, serviceId: string, address: string) {
    conn.send(message(EdgeContentType.CreateTunnelTerminatorRequestV2, encode('edge.CreateTunnelTerminatorRequestV2', { serviceId, address, cost: 2, startTime: 42n })));
    const reply = await conn.next((m) => m.contentType === EdgeContentType.CreateTunnelTerminatorResponseV2 && decode('edge.CreateTunnelTerminatorResponseV2', m.body).terminatorId === address);
    return decode('edge.CreateTunnelTerminatorResponseV2', reply.body);
  }

  it('creates them for services the router\'s identity may bind through this router, and forgets them with its connection', async () => {
    const router = await tunnelerRouter(true);
    const service = await createRecord(tc.mgmt, '/services', { name: uniqueName('svc'), encryptionRequired: true });
    const { conn } = await connectRouter(tc, router);

    const refused = await requestTerminator(conn, service, 'tt-refused');
    assert.deepEqual([refused.result, refused.errorCode, refused.startTime], [2, 6, 42n], 'no Bind policy: invalid service');

    const policy = await createRecord(tc.mgmt, '/service-policies', { name: uniqueName('sp'), type: 'Bind', semantic: 'AnyOf', identityRoles: [`@${router.id}`], serviceRoles: [`@${service}`] });
    const noRouter = await requestTerminator(conn, service, 'tt-no-router');
    assert.deepEqual([noRouter.result, noRouter.errorCode], [2, 5], 'no service edge router policy: invalid edge router');

    await createRecord(tc.mgmt, '/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AnyOf', serviceRoles: [`@${service}`], edgeRouterRoles: [`@${router.id}`] });
    const address = uniqueName('tt');
    const created = await requestTerminator(conn, service, address);
    assert.equal(created.result, 0, created.msg);
    const listed = await tc.mgmt.get(`/terminators?filter=${encodeURIComponent(`service = "${service}"`)}`);
    assert.equal(listed.body.data.length, 1);
    const t = listed.body.data[0];
    assert.deepEqual([t.id, t.address, t.binding, t.routerId, t.cost], [address, address, 'tunnel', router.id, 2]);
    assert.equal((await requestTerminator(conn, service, address)).result, 0, 'the same one again is accepted');

    conn.close();
    await eventually(async () => (await tc.mgmt.get(`/terminators?filter=${encodeURIComponent(`service = "${service}"`)}`)).body.data.length === 0, 'the terminator goes with the router');
    await tc.mgmt.delete(`/service-policies/${policy}`);
  });

  it('refuses a router without a tunneler', async () => {
    const router = await tunnelerRouter(false);
    const service = await createRecord(tc.mgmt, '/services', { name: uniqueName('svc'), encryptionRequired: true });
    const { conn } = await connectRouter(tc, router);
    const refused = await requestTerminator(conn, service, 'tt-none');
    assert.deepEqual([refused.result, refused.errorCode], [2, 7], 'tunneling not enabled');
    conn.close();
  });
});
