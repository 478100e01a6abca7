/**
 * A controller among several on one store, as its routers see it (controllers-ha.md §1, §2.1, §2.2, §3.4):
 *
 * - Clustered, it tells each router the live controllers right after the hello (UpdateCtrlAddresses: every control
 *   address, the membership version, whether it leads), again when the router asks (RequestClusterMembers), when the
 *   controllers change and when leadership moves; taking the lead it also sends UpdateClusterLeader. Alone on SQLite
 *   it sends none of this, as upstream's standalone controller.
 * - Every full data model carries the signing key of every controller of the network (a router subscribed here must
 *   accept JWTs another controller signed); the synthetic change set on connect carries this controller's own key.
 * - A router keeps one connection to each controller: rows per controller. It is listed once and online while
 *   connected to any; a newer connection to this controller replaces the older, one to another does not; leaving
 *   this controller removes what it holds only when it is connected to no other; paths go only through routers
 *   connected to this controller.
 *
 * The other controllers are a membership handed to the fabric (StartOptions.fabric.membership) and rows written into
 * the store as another controller would write them.
 */
import { after, describe, it } from 'node:test';
import { createHash } from 'node:crypto';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropTestDatabase, startTestController, testStore, uniqueName, type TestController } from '../support/controller.ts';
import { createClientUser, createRecord } from '../support/factories.ts';
import { createClient } from '../support/client.ts';
import { createTestCa } from '../support/third-party-ca.ts';
import { sha1Of } from '../support/router-certs.ts';
import { answerServerHello, connectRouter, enrolledRouter, eventually, type RouterCredentials, type TestRouterConnection } from '../support/test-router.ts';
import { ChannelHeader, byteMapValue, message, readBool, stringValue } from '../../src/fabric/channel/message.ts';
import { CtrlContentType } from '../../src/fabric/proto/ctrl.ts';
import { CreateCircuitV2RequestHeader } from '../../src/fabric/proto/header-messages.ts';
import { decode, encode } from '../../src/fabric/proto/index.ts';
import { EdgeContentType } from '../../src/fabric/proto/edge-ctrl.ts';
import type { ControllerMember, Membership, MembershipEvent } from '../../src/cluster/membership.ts';

/** A network around the controller under test, moved by the test. */
function testNetwork(self: ControllerMember, others: ControllerMember[]) {
  const listeners = new Set<(event: MembershipEvent) => void>();
  const state = { members: [self, ...others], version: 5, leader: false, epoch: 3 };
  const membership = {
    controllerId: self.id,
    networkId: `network-${self.id}`,
    clustered: true,
    live: () => state.members,
    known: () => state.members,
    version: () => state.version,
    isLeader: () => state.leader,
    leaderEpoch: () => state.epoch,
    onChange(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
  } as Membership;
  const emit = (event: MembershipEvent): void => {
    for (const l of listeners) l(event);
  };
  return { membership, state, emit };
}

// The controller's own id and certificate come from a first start on the same data dir.
const dataDir = mkdtempSync(join(tmpdir(), 'portcullis-controllers-'));
const first = await startTestController({ dataDir });
const self: ControllerMember = {
  id: (await first.controller.store.value<string>('SELECT id FROM controllers WHERE is_online = 1 ORDER BY id LIMIT 1'))!,
  ctrlAddress: `tls:localhost:${first.port}`,
  certPem: first.controller.pki.serverCertPem,
  fingerprint: first.controller.pki.serverCertFingerprint,
};
await first.stop();
const otherCa = await createTestCa({ cn: 'ctrl-b' });
const other: ControllerMember = { id: 'ctrl-b', ctrlAddress: 'tls:ctrl-b.test:1280', certPem: otherCa.certPem, fingerprint: sha1Of(otherCa.certPem) };
const network = testNetwork(self, [other]);
// The rows of "another controller" below name this process as their owner: on PostgreSQL the leader drops the rows
// of processes that hold no lock, and this one holds its own.
const origin = uniqueName('controllers-test');
const tc = await startTestController({ dataDir, start: { origin, fabric: { membership: network.membership } } });
// After the harness's own stop (hooks run in the order they were added).
after(async () => {
  rmSync(dataDir, { recursive: true, force: true });
  await dropTestDatabase(dataDir);
});
const fabricApi = createClient(`https://127.0.0.1:${tc.port}/fabric/v1`, tc.ca, { token: tc.adminToken });

function addresses(msg: { body: Buffer }) {
  return decode('ctrl.UpdateCtrlAddresses', msg.body);
}

async function connected(tcx: TestController, router: RouterCredentials): Promise<TestRouterConnection> {
  const { conn, result } = await connectRouter(tcx, router);
  assert.equal(readBool(result.headers.get(ChannelHeader.ResultSuccess)), true);
  return conn;
}

describe('clustered: what routers hear of the controllers', () => {
  it('tells a router every live controller right after the hello, and again when it asks', async () => {
    const conn = await connected(tc, await enrolledRouter(tc));
    const update = addresses(await conn.nextOf(CtrlContentType.UpdateCtrlAddresses));
    assert.deepEqual(update.addresses, [self.ctrlAddress, other.ctrlAddress]);
    assert.equal(update.index, 5n);
    assert.equal(update.isLeader, false);
    assert.deepEqual(update.controllers, [
      { id: self.id, endpoints: [{ address: self.ctrlAddress, groups: [] }] },
      { id: 'ctrl-b', endpoints: [{ address: other.ctrlAddress, groups: [] }] },
    ]);
    conn.send(message(CtrlContentType.RequestClusterMembers, Buffer.alloc(0)));
    assert.deepEqual(addresses(await conn.nextOf(CtrlContentType.UpdateCtrlAddresses)).addresses, [self.ctrlAddress, other.ctrlAddress]);
    await assert.rejects(conn.nextOf(CtrlContentType.Settings, 300), 'never Settings/NewCtrlAddress');
    conn.close();
  });

  it('tells its routers when the controllers change, and when it takes the lead also UpdateClusterLeader', async () => {
    const conn = await connected(tc, await enrolledRouter(tc));
    await conn.nextOf(CtrlContentType.UpdateCtrlAddresses);
    network.state.members = [self];
    network.state.version = 6;
    network.emit('members');
    const shrunk = addresses(await conn.nextOf(CtrlContentType.UpdateCtrlAddresses));
    assert.deepEqual([shrunk.addresses, shrunk.index, shrunk.isLeader], [[self.ctrlAddress], 6n, false]);
    await assert.rejects(conn.nextOf(CtrlContentType.UpdateClusterLeaderRequest, 200), 'no leader message for a member change');

    network.state.leader = true;
    network.state.epoch = 4;
    network.emit('leader');
    const leading = addresses(await conn.nextOf(CtrlContentType.UpdateCtrlAddresses));
    assert.deepEqual([leading.index, leading.isLeader], [6n, true]);
    assert.deepEqual(decode('ctrl.UpdateClusterLeader', (await conn.nextOf(CtrlContentType.UpdateClusterLeaderRequest)).body), { index: 4n });

    network.state.leader = false;
    network.emit('leader');
    assert.equal(addresses(await conn.nextOf(CtrlContentType.UpdateCtrlAddresses)).isLeader, false);
    await assert.rejects(conn.nextOf(CtrlContentType.UpdateClusterLeaderRequest, 200), 'no leader message when stepping down');
    network.state.members = [self, other];
    network.state.version = 7;
    network.emit('members');
    conn.close();
  });

  it("carries every controller's signing key in the full data model, its own in the synthetic change set", async () => {
    const conn = await connected(tc, await enrolledRouter(tc));
    await answerServerHello(conn, { dataModel: true });
    const synthetic = decode('edge.DataState.ChangeSet', (await conn.nextOf(EdgeContentType.DataStateChangeSet)).body);
    const syntheticKids = synthetic.changes.map((c) => c.publicKey?.kid);
    assert.ok(syntheticKids.includes(self.fingerprint));
    assert.ok(!syntheticKids.includes(other.fingerprint), 'the synthetic change set is this controller\'s own');
    conn.send(message(EdgeContentType.SubscribeToDataModelRequest, encode('edge.SubscribeToDataModelRequest', { subscriptionId: uniqueName('sub'), subscriptionDurationSeconds: 300 })));
    const state = decode('edge.DataState', (await conn.nextOf(EdgeContentType.DataState)).body);
    const keys = new Map(state.events.filter((e) => e.publicKey).map((e) => [e.publicKey!.kid, e.publicKey!]));
    assert.ok(keys.has(self.fingerprint), 'its own key');
    const otherKey = keys.get(other.fingerprint);
    assert.ok(otherKey, "the other controller's key, under its fingerprint");
    assert.deepEqual(otherKey.usages, [0, 1], 'JWT validation and client certificates, as its own');
    assert.equal(createHash('sha1').update(otherKey.data).digest('hex'), other.fingerprint, 'its certificate');
    assert.equal(state.timelineId, network.membership.networkId, 'the network is the timeline');

    // A controller that joins later is in the full states sent after it joined.
    const thirdCa = await createTestCa({ cn: 'ctrl-c' });
    const third: ControllerMember = { id: 'ctrl-c', ctrlAddress: 'tls:ctrl-c.test:1280', certPem: thirdCa.certPem, fingerprint: sha1Of(thirdCa.certPem) };
    network.state.members = [self, other, third];
    network.state.version = 8;
    network.emit('members');
    conn.send(message(EdgeContentType.SubscribeToDataModelRequest, encode('edge.SubscribeToDataModelRequest', { subscriptionId: uniqueName('sub'), subscriptionDurationSeconds: 300 })));
    const again = decode('edge.DataState', (await conn.nextOf(EdgeContentType.DataState)).body);
    assert.ok(again.events.some((e) => e.publicKey?.kid === third.fingerprint), 'the new controller\'s key');
    network.state.members = [self, other];
    network.emit('members');
    conn.close();
  });
});

// ---- connections per controller ---------------------------------------------------------------------------------

const serviceId = await createRecord(tc.mgmt, '/services', { name: uniqueName('svc'), encryptionRequired: false });
const host = await createClientUser(tc);
const dialer = await createClientUser(tc);
await createRecord(tc.mgmt, '/service-policies', { name: uniqueName('bind'), type: 'Bind', semantic: 'AnyOf', serviceRoles: [`@${serviceId}`], identityRoles: [`@${host.id}`] });
await createRecord(tc.mgmt, '/service-policies', { name: uniqueName('dial'), type: 'Dial', semantic: 'AnyOf', serviceRoles: [`@${serviceId}`], identityRoles: [`@${dialer.id}`] });
await createRecord(tc.mgmt, '/edge-router-policies', { name: uniqueName('erp'), semantic: 'AnyOf', edgeRouterRoles: ['#all'], identityRoles: [`@${host.id}`, `@${dialer.id}`] });
await createRecord(tc.mgmt, '/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AnyOf', edgeRouterRoles: ['#all'], serviceRoles: [`@${serviceId}`] });

async function sessionToken(user: { client: TestController['client'] }, type: 'Dial' | 'Bind'): Promise<string> {
  const res = await user.client.post('/sessions', { serviceId, type });
  assert.equal(res.status, 201, res.text);
  return res.body.data.token as string;
}

/** The rows of a router, by controller. */
async function rowsOf(routerId: string): Promise<Map<string, string>> {
  const rows = await tc.controller.store.all<{ controller_id: string; connection_id: string }>(
    'SELECT controller_id, connection_id FROM router_connections WHERE router_id = ?',
    [routerId],
  );
  return new Map(rows.map((r) => [r.controller_id, r.connection_id]));
}

/** A connection of the router to another controller, as that controller's process records it. */
async function connectElsewhere(routerId: string, controllerId = other.id): Promise<void> {
  await tc.controller.store.writeRuntime((tx) =>
    tx.run(
      `INSERT INTO router_connections (router_id, controller_id, owner, connection_id, connected_at, hostname, supported_protocols, version_info, sync_status, listeners)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [routerId, controllerId, origin, uniqueName('conn'), new Date().toISOString(), 'elsewhere.test', '{"tls":"tls://elsewhere.test:3022"}',
        JSON.stringify({ version: 'v2.0.0-pre3', revision: '', buildDate: '', os: 'linux', arch: 'amd64' }), 'SYNC_DONE', '[]'],
    ),
  );
}

async function leaveElsewhere(routerId: string, controllerId = other.id): Promise<void> {
  await tc.controller.store.writeRuntime((tx) => tx.run('DELETE FROM router_connections WHERE router_id = ? AND controller_id = ?', [routerId, controllerId]));
}

async function hostedTerminator(conn: TestRouterConnection): Promise<string> {
  const address = uniqueName('hosted');
  const body = encode('edge.CreateTerminatorV2Request', { address, sessionToken: await sessionToken(host, 'Bind'), apiSessionToken: host.token, peerData: new Map() });
  conn.send(message(EdgeContentType.CreateTerminatorV2Request, body));
  await conn.next((m) => m.contentType === EdgeContentType.CreateTerminatorV2Response && decode('edge.CreateTerminatorV2Response', m.body).terminatorId === address);
  return address;
}

async function terminatorExists(id: string): Promise<boolean> {
  return (await tc.mgmt.get(`/terminators/${id}`)).status === 200;
}

describe('connections per controller', () => {
  it('lists a router connected to two controllers once, online, with this controller\'s connection', async () => {
    const router = await enrolledRouter(tc);
    await connectElsewhere(router.id);
    let detail = (await tc.mgmt.get(`/edge-routers/${router.id}`)).body.data;
    assert.equal(detail.isOnline, true, 'online through the other controller');
    assert.equal(detail.hostname, 'elsewhere.test');
    const conn = await connected(tc, router);
    await answerServerHello(conn, { port: 3044 });
    await eventually(async () => (await tc.mgmt.get(`/edge-routers/${router.id}`)).body.data.hostname === 'router.test', 'this controller\'s connection is shown');
    detail = (await tc.mgmt.get(`/edge-routers/${router.id}`)).body.data;
    assert.deepEqual(detail.supportedProtocols, { tls: 'tls://router.test:3044' });
    const list = await tc.mgmt.get(`/edge-routers?filter=${encodeURIComponent(`id = "${router.id}"`)}`);
    assert.equal(list.body.meta.pagination.totalCount, 1);
    assert.equal(list.body.data.length, 1);
    assert.equal((await tc.mgmt.get(`/routers/${router.id}`)).body.data.isOnline, true);
    assert.equal((await fabricApi.get(`/routers/${router.id}`)).body.data.connected, true);
    const routers = await host.client.get('/current-identity/edge-routers?limit=500');
    assert.equal(routers.body.data.filter((r: { id: string }) => r.id === router.id).length, 1, 'the client API lists it once');
    conn.close();
    await eventually(async () => !(await rowsOf(router.id)).has(self.id), 'its connection here is gone');
    assert.equal((await tc.mgmt.get(`/edge-routers/${router.id}`)).body.data.isOnline, true, 'still online through the other controller');
    await leaveElsewhere(router.id);
    assert.equal((await tc.mgmt.get(`/edge-routers/${router.id}`)).body.data.isOnline, false);
  });

  it('a newer connection to this controller replaces the older; the connection to another controller stays', async () => {
    const router = await enrolledRouter(tc);
    await connectElsewhere(router.id);
    const older = await connected(tc, router);
    await eventually(async () => (await rowsOf(router.id)).has(self.id), 'recorded here');
    const elsewhere = (await rowsOf(router.id)).get(other.id);
    const newer = await connected(tc, router);
    await older.waitClosed();
    await new Promise((r) => setTimeout(r, 1500)); // a check of the stored rows against the channels (every second)
    assert.equal(newer.closed, false, 'a connection to another controller replaces nothing here');
    assert.equal((await rowsOf(router.id)).get(other.id), elsewhere);
    newer.close();
    await leaveElsewhere(router.id);
  });

  it('closes a router connection whose record was removed (the leader took this process for gone); the router connects again', async () => {
    const router = await enrolledRouter(tc);
    const first = await connected(tc, router);
    await eventually(async () => (await rowsOf(router.id)).has(self.id), 'recorded here');
    await tc.controller.store.write((tx) => tx.run('DELETE FROM router_connections WHERE router_id = ?', [router.id]));
    await first.waitClosed();
    const again = await connected(tc, router);
    await eventually(async () => (await rowsOf(router.id)).has(self.id), 'recorded again');
    await new Promise((r) => setTimeout(r, 1500)); // a check of the stored rows against the channels (every second)
    assert.equal(again.closed, false);
    again.close();
  });

  it('keeps what a router holds when it leaves this controller while connected to another, and drops it once it is connected to none', async () => {
    const router = await enrolledRouter(tc);
    await connectElsewhere(router.id);
    let conn = await connected(tc, router);
    await answerServerHello(conn);
    const kept = await hostedTerminator(conn);
    conn.close();
    await eventually(async () => !(await rowsOf(router.id)).has(self.id), 'its connection here is gone');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await terminatorExists(kept), true, 'its terminator stays: the other controller still reaches it');

    await leaveElsewhere(router.id);
    conn = await connected(tc, router);
    await answerServerHello(conn);
    const dropped = await hostedTerminator(conn);
    conn.close();
    await eventually(async () => !(await terminatorExists(dropped)), 'its terminators go once it is connected to no controller');
  });

  it('routes only through routers connected to this controller', async () => {
    const dialing = await enrolledRouter(tc);
    const hosting = await enrolledRouter(tc);
    const dialConn = await connected(tc, dialing);
    await answerServerHello(dialConn);
    const hostConn = await connected(tc, hosting);
    await answerServerHello(hostConn);
    const terminatorId = await hostedTerminator(hostConn);
    dialConn.send(message(CtrlContentType.RouterLinks, encode('ctrl.RouterLinks', { fullRefresh: true, links: [{ id: uniqueName('link'), destRouterId: hosting.id, linkProtocol: 'tls', dialAddress: 'tls:127.0.0.1:1' }] })));
    // The hosting router leaves this controller but stays connected to another: its terminator and link stay, and
    // this controller can no longer route to it.
    await connectElsewhere(hosting.id);
    hostConn.close();
    await eventually(async () => !(await rowsOf(hosting.id)).has(self.id), 'the hosting router left this controller');
    assert.equal(await terminatorExists(terminatorId), true);
    const dial = message(EdgeContentType.CreateCircuitV2Request, Buffer.alloc(0), [
      [CreateCircuitV2RequestHeader.SessionToken, stringValue(await sessionToken(dialer, 'Dial'))],
      [CreateCircuitV2RequestHeader.ApiSessionToken, stringValue(dialer.token)],
      [CreateCircuitV2RequestHeader.PeerData, byteMapValue(new Map())],
    ]);
    const reply = await dialConn.replyTo(dialConn.send(dial));
    assert.equal(reply.contentType, EdgeContentType.Error, 'no path to a router this controller does not hold');
    assert.match(reply.body.toString('utf8'), /no terminators reachable/);
    dialConn.close();
    await leaveElsewhere(hosting.id);
  });
});

const alone = testStore() === 'sqlite' ? await startTestController() : undefined;

describe('standalone', { skip: alone ? false : 'on PostgreSQL every controller is clustered' }, () => {
  it('a controller alone on its store tells routers nothing of controllers', async () => {
    assert.ok(alone);
    const conn = await connected(alone, await enrolledRouter(alone));
    await answerServerHello(conn);
    await conn.nextOf(EdgeContentType.ApiSessionAdded);
    conn.send(message(CtrlContentType.RequestClusterMembers, Buffer.alloc(0)));
    await assert.rejects(conn.next((m) => m.contentType === CtrlContentType.UpdateCtrlAddresses || m.contentType === CtrlContentType.Settings, 500));
    conn.close();
  });
});
