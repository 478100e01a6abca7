/**
 * The fabric with `--workers 2` on the real entry point: two scripted routers whose control channels are held by
 * different worker processes (each TLS connection goes to the next worker), linked, with the host's terminator
 * on one and the dialer on the other. The worker routing the circuit reaches the other worker's router through
 * the primary (src/fabric/bus.ts): both routers get their route, the dialer's router gets the circuit, and a
 * fault reported at the host's router ends the circuit at the dialer's. Peer state changes reach routers
 * whichever worker holds their peer.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropTestDatabase, freePort, openSecondStore, removeTestDir, stopChildController, testDatabaseUrl, uniqueName, type TestController } from '../support/controller.ts';
import { createClient } from '../support/client.ts';
import { connectRouter, enrolledRouter, eventually, type RouterCredentials, type TestRouterConnection } from '../support/test-router.ts';
import { ChannelHeader, byteMapValue, message, readString, stringValue, uint32Value } from '../../src/fabric/channel/message.ts';
import { decode, encode } from '../../src/fabric/proto/index.ts';
import { CtrlContentType, PeerState } from '../../src/fabric/proto/ctrl.ts';
import { EdgeContentType } from '../../src/fabric/proto/edge-ctrl.ts';
import { CreateCircuitV2RequestHeader, CreateCircuitV2ResponseHeader, RouteResultHeader } from '../../src/fabric/proto/header-messages.ts';

const ADMIN_PASSWORD = 'workers-fabric-admin';
const dataDir = mkdtempSync(join(tmpdir(), 'portcullis-workers-fabric-'));
const port = await freePort();
const databaseUrl = await testDatabaseUrl(dataDir);
const child = spawn(
  process.execPath,
  ['--import', 'tsx', 'src/main.ts', '--workers', '2', '--data-dir', dataDir, ...(databaseUrl ? ['--database-url', databaseUrl] : []), '--address', '127.0.0.1',
    '--port', String(port), '--admin-password', ADMIN_PASSWORD, '--log-level', 'info'],
  { cwd: new URL('../../', import.meta.url).pathname, stdio: ['ignore', 'pipe', 'pipe'] },
);
let output = '';
child.stdout.on('data', (c) => (output += c));
child.stderr.on('data', (c) => (output += c));
const connections: TestRouterConnection[] = [];
after(async () => {
  for (const c of connections) c.close();
  await stopChildController(child);
  removeTestDir(dataDir);
});
await eventually(() => output.includes('Portcullis ready'), 'the controller is ready', 30_000);

const ca = readFileSync(join(dataDir, 'pki', 'root-ca.cert.pem'), 'utf8');
const http = createClient(`https://127.0.0.1:${port}`, ca);
const login = await http.post('/edge/management/v1/authenticate?method=password', { username: 'admin', password: ADMIN_PASSWORD });
assert.equal(login.status, 200, login.text);
const mgmt = createClient(`https://127.0.0.1:${port}/edge/management/v1`, ca, { token: login.body.data.token });
const tc = { port, ca, http, mgmt } as unknown as TestController;
// The controller's store opened a second time, as another process would.
const store = await openSecondStore({ dataDir, databaseUrl });
after(async () => {
  await store.close();
  await dropTestDatabase(dataDir);
});

async function ownerOf(routerId: string): Promise<string | undefined> {
  return (await store.get<{ owner: string }>('SELECT owner FROM router_connections WHERE router_id = ?', [routerId]))?.owner;
}

function liveRowOf(routerId: string): Promise<{ owner: string; connection_id: string } | undefined> {
  return store.get<{ owner: string; connection_id: string }>('SELECT owner, connection_id FROM router_connections WHERE router_id = ?', [routerId]);
}

/**
 * Connects the router, answering its server hello, until it is held by a worker other than `not`. With `replacing`
 * (the connection id of the router's connection now), waits until the store names the new connection instead.
 */
async function connectHeldBy(router: RouterCredentials, not?: string, replacing?: string): Promise<TestRouterConnection> {
  for (let i = 0; i < 8; i++) {
    const { conn } = await connectRouter(tc, router);
    const hello = await conn.nextOf(EdgeContentType.ServerHello);
    const reply = message(EdgeContentType.ClientHello, encode('edge.ClientHello', { hostname: 'router.test', protocols: ['tls'], protocolPorts: ['3022'] }));
    reply.headers.set(ChannelHeader.ReplyFor, Buffer.from(Int32Array.of(hello.sequence).buffer));
    conn.send(reply);
    await eventually(async () => ((await liveRowOf(router.id))?.connection_id ?? replacing) !== replacing, 'the router is recorded');
    if (not === undefined || (await ownerOf(router.id)) !== not) {
      connections.push(conn);
      return conn;
    }
    conn.close();
    await eventually(async () => (await ownerOf(router.id)) === undefined, 'the router is forgotten');
  }
  assert.fail('every connection landed on the same worker');
}

async function clientSession(name: string): Promise<{ id: string; token: string; http: ReturnType<typeof createClient> }> {
  const identity = await mgmt.post('/identities', { name: uniqueName(name), type: 'User', isAdmin: false });
  assert.equal(identity.status, 201, identity.text);
  const username = uniqueName(`${name}-login`);
  assert.equal((await mgmt.post('/authenticators', { method: 'updb', identityId: identity.body.data.id, username, password: 'Secret-pass-123' })).status, 201);
  const res = await http.post('/edge/client/v1/authenticate?method=password', { username, password: 'Secret-pass-123' });
  assert.equal(res.status, 200, res.text);
  return { id: identity.body.data.id, token: res.body.data.token, http: createClient(`https://127.0.0.1:${port}/edge/client/v1`, ca, { token: res.body.data.token }) };
}

describe('fabric across worker processes', () => {
  it('routes a circuit over routers held by different workers, and ends it from either side', async () => {
    const a = await enrolledRouter(tc);
    const b = await enrolledRouter(tc);
    const connA = await connectHeldBy(a);
    const connB = await connectHeldBy(b, await ownerOf(a.id));
    assert.notEqual(await ownerOf(a.id), await ownerOf(b.id), 'the two routers are held by different workers');

    // Each router hears of the other from its own worker.
    for (const [conn, peer] of [[connA, b], [connB, a]] as const) {
      const change = await conn.next((m) => m.contentType === CtrlContentType.PeerStateChangeRequest && decode('ctrl.PeerStateChanges', m.body).changes.some((c) => c.id === peer.id), 10_000);
      assert.equal(decode('ctrl.PeerStateChanges', change.body).changes.find((c) => c.id === peer.id)?.state, PeerState.Healthy);
    }
    connA.send(message(CtrlContentType.RouterLinks, encode('ctrl.RouterLinks', { fullRefresh: true, links: [{ id: 'link-ab', destRouterId: b.id, linkProtocol: 'tls', dialAddress: 'tls:127.0.0.1:1' }] })));

    const serviceId = (await mgmt.post('/services', { name: uniqueName('svc'), encryptionRequired: false })).body.data.id as string;
    const host = await clientSession('host');
    const dialer = await clientSession('dialer');
    for (const [path, body] of [
      ['/service-policies', { name: uniqueName('bind'), type: 'Bind', semantic: 'AnyOf', serviceRoles: [`@${serviceId}`], identityRoles: [`@${host.id}`] }],
      ['/service-policies', { name: uniqueName('dial'), type: 'Dial', semantic: 'AnyOf', serviceRoles: [`@${serviceId}`], identityRoles: [`@${dialer.id}`] }],
      ['/edge-router-policies', { name: uniqueName('erp-h'), semantic: 'AnyOf', edgeRouterRoles: [`@${b.id}`], identityRoles: [`@${host.id}`] }],
      ['/edge-router-policies', { name: uniqueName('erp-d'), semantic: 'AnyOf', edgeRouterRoles: [`@${a.id}`], identityRoles: [`@${dialer.id}`] }],
      ['/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AnyOf', edgeRouterRoles: ['#all'], serviceRoles: [`@${serviceId}`] }],
    ] as const) {
      const res = await mgmt.post(path, body);
      assert.equal(res.status, 201, res.text);
    }
    const bind = await host.http.post('/sessions', { serviceId, type: 'Bind' });
    const dial = await dialer.http.post('/sessions', { serviceId, type: 'Dial' });
    assert.equal(bind.status, 201, bind.text);
    assert.equal(dial.status, 201, dial.text);

    connB.send(message(EdgeContentType.CreateTerminatorV2Request, encode('edge.CreateTerminatorV2Request', { address: 'term-b', sessionToken: bind.body.data.token, apiSessionToken: host.token })));
    const created = await connB.nextOf(EdgeContentType.CreateTerminatorV2Response, 10_000);
    assert.equal(decode('edge.CreateTerminatorV2Response', created.body).result, 0);
    await eventually(async () => (await mgmt.get('/terminators/term-b')).status === 200, 'the terminator is stored');
    await eventually(async () => {
      const res = await http.get('/fabric/v1/links', { token: login.body.data.token });
      return res.status === 200 && (res.body.data as unknown[]).length === 1;
    }, 'the link is stored');

    const request = connA.send(
      message(EdgeContentType.CreateCircuitV2Request, Buffer.alloc(0), [
        [CreateCircuitV2RequestHeader.SessionToken, stringValue(dial.body.data.token)],
        [CreateCircuitV2RequestHeader.ApiSessionToken, stringValue(dialer.token)],
        [CreateCircuitV2RequestHeader.PeerData, byteMapValue(new Map())],
      ]),
    );
    // Both routers get their part of the route, whichever worker holds them, and answer it.
    const routes = await Promise.all([connA, connB].map((conn) => conn.nextOf(CtrlContentType.Route, 10_000)));
    for (const [i, conn] of [connA, connB].entries()) {
      const route = decode('ctrl.Route', routes[i]!.body);
      const result = message(CtrlContentType.RouteResult, route.circuitId, [
        [RouteResultHeader.Attempt, uint32Value(route.attempt)],
        [RouteResultHeader.Success, Buffer.from([1])],
      ]);
      result.headers.set(ChannelHeader.ReplyFor, Buffer.from(Int32Array.of(routes[i]!.sequence).buffer));
      conn.send(result);
    }
    const ingress = decode('ctrl.Route', routes[0]!.body);
    const egress = decode('ctrl.Route', routes[1]!.body);
    assert.equal(egress.egress?.destination, 'term-b');
    assert.equal(ingress.egress, undefined, 'the dialer side has no egress');
    assert.deepEqual(ingress.forwards.map((f) => f.dstAddress).includes('link-ab'), true);
    const response = await connA.replyTo(request, 10_000);
    assert.equal(response.contentType, EdgeContentType.CreateCircuitV2Response, response.body.toString());
    const circuitId = readString(response.headers.get(CreateCircuitV2ResponseHeader.CircuitId))!;
    const path = await mgmt.get(`/sessions/${dial.body.data.id}/route-path`);
    assert.deepEqual(path.body.data.routePath, [a.id, b.id]);

    // The host's side ends (its router, another worker): the dialer's router is told to drop the circuit.
    connB.send(message(CtrlContentType.Fault, encode('ctrl.Fault', { subject: 1, id: circuitId })));
    const unroute = await connA.nextOf(CtrlContentType.Unroute, 10_000);
    assert.equal(decode('ctrl.Unroute', unroute.body).circuitId, circuitId);
    await eventually(async () => (await mgmt.get(`/sessions/${dial.body.data.id}/route-path`)).body.data.routePath.length === 0, 'the circuit is gone');
  });

  it('a second connection of a router, held by another worker, ends the first (and leaves the second what it holds)', async () => {
    const router = await enrolledRouter(tc);
    const service = await mgmt.post('/services', { name: uniqueName('held'), encryptionRequired: false });
    assert.equal(service.status, 201, service.text);
    let first = await connectHeldBy(router);
    // Round robin decides the worker: a connection that lands on the same one replaces the first there; try again.
    for (let i = 0; i < 8; i++) {
      const before = (await liveRowOf(router.id))!;
      const second = await connectHeldBy(router, undefined, before.connection_id);
      const after = (await liveRowOf(router.id))!;
      if (after.owner === before.owner) {
        await first.waitClosed();
        first = second;
        continue;
      }
      // What the router holds through its second connection (a terminator it created) is not the first's to clean up.
      const disconnects = () => output.split('router disconnected').length;
      const disconnectsBefore = disconnects();
      const now = new Date().toISOString();
      await store.write((tx) =>
        tx.run(
          "INSERT INTO terminators (id, service_id, router_id, binding, address, created_at, updated_at, is_system) VALUES (?, ?, ?, 'edge', 'held', ?, ?, 1)",
          [`held-${router.id}`, service.body.data.id, router.id, now, now],
        ),
      );
      await first.waitClosed(5000);
      // The first worker forgot its connection, not the second's row.
      await eventually(() => output.includes('replaced by a newer connection of the same router (held by'), 'the first worker logs why');
      assert.deepEqual(await liveRowOf(router.id), after);
      await eventually(() => disconnects() > disconnectsBefore, 'the first worker handled the close');
      assert.ok(await store.get('SELECT 1 FROM terminators WHERE id = ?', [`held-${router.id}`]), 'the second connection keeps its terminator');
      const seq = second.send(message(1, Buffer.alloc(0)));
      assert.equal((await second.replyTo(seq)).contentType, 2, 'the second connection is served');
      return;
    }
    assert.fail('every connection landed on the same worker');
  });

  it('a worker that dies leaves no live rows behind: a living worker drops them', async () => {
    const router = await enrolledRouter(tc);
    await connectHeldBy(router);
    assert.ok(await ownerOf(router.id), 'the router is held');
    // Both workers die; the primary starts new ones, which never redo the start's work (clearing live rows):
    // the router's row goes only because the dead worker's rows are handed to a living one.
    const workers = execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(child.pid)], { encoding: 'utf8' })
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .filter(([, comm]) => comm === 'node')
      .map(([pid]) => Number(pid));
    assert.equal(workers.length, 2, `two workers: ${workers.join(', ')}`);
    for (const pid of workers) process.kill(pid, 'SIGKILL');
    await eventually(async () => (await ownerOf(router.id)) === undefined, 'the dead worker\'s router row is dropped', 30_000);
    let isOnline: unknown;
    await eventually(async () => {
      const res = await mgmt.get(`/edge-routers/${router.id}`).catch(() => undefined);
      isOnline = res?.body?.data?.isOnline;
      return res?.status === 200;
    }, 'a new worker answers', 30_000);
    assert.equal(isOnline, false);
  });
});
