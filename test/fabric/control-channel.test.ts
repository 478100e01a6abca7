/**
 * The router control channel over real TLS on the API port (ALPN `ziti-ctrl`), driven by a scripted router:
 * the hello result routers bind on, admission only with the enrolled certificate (unknown, unenrolled,
 * foreign, re-enrolled, disabled and deleted routers are refused or dropped), heartbeats and pings, the live
 * state REST shows (online, version, hostname, URLs, sync status), the edge sync (server hello, API sessions
 * pushed on login and removed on logout, the data model's signing key), and hostile input that closes one
 * connection while REST keeps answering.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { startTestController, uniqueName } from '../support/controller.ts';
import { createClientUser, createRecord, type ClientUser } from '../support/factories.ts';
import { newKey } from '../support/router-certs.ts';
import { clientHelloBody, connectRouter, dialControl, enrolledRouter, enrollRouterAgain, eventually, routerHello, type RouterCredentials, type TestRouterConnection } from '../support/test-router.ts';
import {
  ChannelContentType,
  ChannelHeader,
  MAGIC,
  byteMapValue,
  message,
  readBool,
  readByteMap,
  readString,
  readUint32,
  readUint64,
  replyFor,
  stringValue,
  uint32Value,
  uint64Value,
  type ChannelMessage,
} from '../../src/fabric/channel/message.ts';
import { CtrlContentType } from '../../src/fabric/proto/ctrl.ts';
import { CreateCircuitV2RequestHeader, CreateCircuitV2ResponseHeader, EdgeErrorHeader, RouteResultHeader } from '../../src/fabric/proto/header-messages.ts';
import { decode, encode } from '../../src/fabric/proto/index.ts';
import { EdgeContentType, EdgeHeader } from '../../src/fabric/proto/edge-ctrl.ts';
import { x509 } from '../../src/pki/x509-library.ts';

const tc = await startTestController();

async function edgeRouterDetail(id: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/edge-routers/${id}`);
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

/** The change-feed operations recorded for one fabric event subject, in feed order. */
function feedOps(kind: string, id: string): Promise<string[]> {
  return tc.controller.store.column<string>('SELECT op FROM change_feed WHERE kind = ? AND entity_id = ? ORDER BY seq', [kind, id]);
}

function isSuccess(result: { headers: Map<number, Buffer> }): boolean {
  return readBool(result.headers.get(ChannelHeader.ResultSuccess)) === true;
}

describe('control channel: admission', () => {
  it('binds an enrolled router with the result upstream routers check, and REST shows it online with its version', async () => {
    const router = await enrolledRouter(tc);
    assert.equal((await edgeRouterDetail(router.id)).isOnline, false);
    const { conn, result } = await connectRouter(tc, router);
    assert.equal(result.sequence, -1);
    assert.equal(replyFor(result), -1);
    assert.ok(isSuccess(result), result.body.toString());
    assert.equal(result.headers.get(ChannelHeader.GroupSecret)?.length, 16);
    const version = readString(result.headers.get(ChannelHeader.HelloVersion))!.split('|');
    assert.equal(version.length, 5);
    assert.equal(version[0], 'v2.0.0');
    const caps = result.headers.get(1002)!;
    assert.ok((caps[caps.length - 1]! & 0x40) !== 0, 'JWT legacy sessions capability (bit 6)');
    assert.equal(caps[caps.length - 1]! & 0x20, 0, 'no grouped control channel (bit 5)');
    assert.ok(readString(result.headers.get(ChannelHeader.Id)));

    await eventually(async () => (await edgeRouterDetail(router.id)).isOnline === true, 'the router shows online');
    const detail = await edgeRouterDetail(router.id);
    assert.deepEqual(detail.versionInfo, { version: 'v2.0.0-pre3', revision: 'a0c6f0dd', buildDate: '2026-03-06T16:10:46Z', os: 'linux', arch: 'amd64' });
    const base = await tc.mgmt.get(`/routers/${router.id}`);
    assert.equal(base.body.data.isOnline, true);
    for (const filter of [`online = true and id = "${router.id}"`, `connected = true and id = "${router.id}"`]) {
      const listed = await tc.mgmt.get(`/edge-routers?filter=${encodeURIComponent(filter)}`);
      assert.deepEqual(listed.body.data.map((r: { id: string }) => r.id), [router.id], filter);
    }

    conn.close();
    await eventually(async () => (await edgeRouterDetail(router.id)).isOnline === false, 'the router shows offline after it disconnects');
    assert.equal((await edgeRouterDetail(router.id)).syncStatus, 'SYNC_UNKNOWN');
    // Every process sees the same events, in one order, on the change feed.
    assert.deepEqual(await feedOps('routerConnection', router.id), ['set', 'remove']);
  });

  it('echoes the group secret of a re-dial unchanged', async () => {
    const router = await enrolledRouter(tc);
    const secret = Buffer.from('0123456789abcdef');
    const { conn, result } = await connectRouter(tc, router, routerHello(router.id, [[ChannelHeader.GroupSecret, secret], [ChannelHeader.ConnectionId, Buffer.from('abc-1')]]));
    assert.ok(isSuccess(result));
    assert.deepEqual(result.headers.get(ChannelHeader.GroupSecret), secret);
    conn.close();
  });

  it('lets a transit router connect; REST shows it online', async () => {
    const router = await enrolledRouter(tc, 'transit');
    const { conn, result } = await connectRouter(tc, router);
    assert.ok(isSuccess(result));
    await eventually(async () => (await tc.mgmt.get(`/transit-routers/${router.id}`)).body.data.isOnline === true, 'the transit router shows online');
    conn.close();
  });

  it('refuses a hello that names another router than the certificate', async () => {
    const a = await enrolledRouter(tc);
    const b = await enrolledRouter(tc);
    const { conn, result } = await connectRouter(tc, a, routerHello(b.id));
    assert.equal(isSuccess(result), false);
    assert.match(result.body.toString(), /does not name the certificate subject/);
    await conn.waitClosed();
    assert.equal((await edgeRouterDetail(b.id)).isOnline, false);
  });

  it('refuses a certificate it did not issue, and a connection without a certificate', async () => {
    const router = await enrolledRouter(tc);
    const key = await newKey();
    const foreign = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: '01',
      name: `CN=${router.id}`,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 3_600_000),
      keys: key.keys,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    });
    const conn = await dialControl(tc, { cert: foreign.toString('pem'), key: key.keyPem });
    conn.send(routerHello(router.id));
    const result = await conn.nextOf(ChannelContentType.Result);
    assert.equal(isSuccess(result), false);
    assert.match(result.body.toString(), /not issued by this network/);

    const bare = await dialControl(tc, {});
    bare.send(routerHello(router.id));
    const refused = await bare.nextOf(ChannelContentType.Result);
    assert.equal(isSuccess(refused), false);
    assert.match(refused.body.toString(), /no client certificate/);
  });

  it('refuses the old certificate of a re-enrolled router and admits the new one', async () => {
    const router = await enrolledRouter(tc);
    const res = await tc.mgmt.post(`/edge-routers/${router.id}/re-enroll`, {});
    assert.equal(res.status, 200, res.text);
    const stale = await connectRouter(tc, router);
    assert.equal(isSuccess(stale.result), false);
    assert.match(stale.result.body.toString(), /not enrolled/);
    const fresh = await enrollRouterAgain(tc, router.id, router.name);
    const again = await connectRouter(tc, router);
    assert.equal(isSuccess(again.result), false, 'the certificate before the second enrollment is refused too');
    assert.match(again.result.body.toString(), /presented a certificate it is not enrolled with/);
    const ok = await connectRouter(tc, fresh);
    assert.ok(isSuccess(ok.result), ok.result.body.toString());
    ok.conn.close();
  });

  it('refuses a disabled router and drops it when it is disabled or deleted while connected', async () => {
    const router = await enrolledRouter(tc);
    const { conn, result } = await connectRouter(tc, router);
    assert.ok(isSuccess(result));
    const patched = await tc.mgmt.patch(`/edge-routers/${router.id}`, { disabled: true });
    assert.equal(patched.status, 200, patched.text);
    await conn.waitClosed();
    const refused = await connectRouter(tc, router);
    assert.equal(isSuccess(refused.result), false);
    assert.match(refused.result.body.toString(), /disabled/);

    const other = await enrolledRouter(tc);
    const second = await connectRouter(tc, other);
    assert.ok(isSuccess(second.result));
    const deleted = await tc.mgmt.delete(`/edge-routers/${other.id}`);
    assert.equal(deleted.status, 200, deleted.text);
    await second.conn.waitClosed();
    const gone = await connectRouter(tc, other);
    assert.equal(isSuccess(gone.result), false);
    assert.match(gone.result.body.toString(), /unknown router/);
  });

  it('a second connection of the same router replaces the first', async () => {
    const router = await enrolledRouter(tc);
    const first = await connectRouter(tc, router);
    const second = await connectRouter(tc, router);
    assert.ok(isSuccess(second.result));
    // The server ends the replaced channel and records its end in one turn, before the socket closes: once the
    // router sees the close, the server has handled that connection's end.
    await first.conn.waitClosed();
    assert.equal((await edgeRouterDetail(router.id)).isOnline, true, 'the newer connection keeps the router online');
    // And the newer channel still works: a ping answered after the old connection's end.
    assert.ok(isSuccess(await second.conn.replyTo(second.conn.send(message(ChannelContentType.Ping)))));
    assert.equal((await edgeRouterDetail(router.id)).isOnline, true, 'still online once the server has answered on the newer channel');
    second.conn.close();
  });
});

describe('control channel: channel duties and hostile input', () => {
  it('answers heartbeats with the echo header and pings with a result', async () => {
    const router = await enrolledRouter(tc, 'transit');
    const { conn } = await connectRouter(tc, router);
    conn.send(message(ChannelContentType.Heartbeat, Buffer.alloc(0), [[ChannelHeader.Heartbeat, uint64Value(123456789n)]]));
    const echo = await conn.next((m) => m.headers.has(ChannelHeader.HeartbeatResponse));
    assert.equal(readUint64(echo.headers.get(ChannelHeader.HeartbeatResponse)), 123456789n);
    const seq = conn.send(message(ChannelContentType.Ping));
    const pong = await conn.replyTo(seq);
    assert.equal(pong.contentType, ChannelContentType.Result);
    assert.ok(isSuccess(pong));
    const interfaces = conn.send(message(1052, Buffer.alloc(0)));
    assert.ok(isSuccess(await conn.replyTo(interfaces)), 'interface reports are acknowledged');
    conn.close();
  });

  it('closes a connection that breaks the framing, and REST keeps answering', async () => {
    const router = await enrolledRouter(tc);
    const { conn } = await connectRouter(tc, router);
    await eventually(async () => (await edgeRouterDetail(router.id)).isOnline === true, 'online');
    conn.writeRaw(Buffer.from('GET / HTTP/1.1\r\n\r\n and more bytes than a prefix'));
    await conn.waitClosed();
    await eventually(async () => (await edgeRouterDetail(router.id)).isOnline === false, 'offline after the protocol error');
    assert.equal((await tc.http.get('/version')).status, 200);
  });

  it('closes a hello that exceeds the hello limits without answering it, and one that never comes', async () => {
    const router = await enrolledRouter(tc);
    const conn = await dialControl(tc, { cert: router.certPem, key: router.keyPem });
    const prefix = Buffer.alloc(20);
    MAGIC.copy(prefix, 0);
    prefix.writeInt32LE(0, 4);
    prefix.writeInt32LE(-1, 8);
    prefix.writeInt32LE(100_000, 12);
    prefix.writeInt32LE(0, 16);
    conn.writeRaw(prefix);
    await conn.waitClosed();
    assert.equal((await tc.http.get('/version')).status, 200);
  });

  it('ignores bodies it cannot decode without dropping the router', async () => {
    const router = await enrolledRouter(tc);
    const { conn } = await connectRouter(tc, router);
    conn.send(message(EdgeContentType.SubscribeToDataModelRequest, Buffer.from([0xff, 0xff, 0xff])));
    conn.send(message(99_999, Buffer.from('unknown content type')));
    const seq = conn.send(message(ChannelContentType.Ping));
    assert.ok(isSuccess(await conn.replyTo(seq)), 'still answering after bad input');
    conn.close();
  });

  it('serves HTTP as before to clients that ask for it by ALPN', async () => {
    const conn = await dialControl(tc, { alpn: ['http/1.1'] });
    assert.equal(conn.socket.alpnProtocol, 'http/1.1');
    conn.close();
  });
});

describe('control channel: edge sync', () => {
  it('asks an edge router to describe itself and shows its URLs, hostname and sync status', async () => {
    const router = await enrolledRouter(tc);
    const { conn } = await connectRouter(tc, router);
    const hello = await conn.nextOf(EdgeContentType.ServerHello);
    assert.equal(readBool(hello.headers.get(EdgeHeader.RouterDataModel)), true);
    const reply = message(EdgeContentType.ClientHello, clientHelloBody(3022), [[EdgeHeader.RouterDataModel, Buffer.from([1])]]);
    reply.headers.set(ChannelHeader.ReplyFor, Buffer.from(Int32Array.of(hello.sequence).buffer));
    conn.send(reply);
    await eventually(async () => (await edgeRouterDetail(router.id)).syncStatus === 'SYNC_DONE', 'the sync is done');
    const detail = await edgeRouterDetail(router.id);
    assert.equal(detail.hostname, 'router.test');
    assert.deepEqual(detail.supportedProtocols, { tls: 'tls://router.test:3022' });
    // The data model's signing keys arrive at once (a synthetic change set) and on subscription.
    const keys = await conn.nextOf(EdgeContentType.DataStateChangeSet);
    const changeSet = decode('edge.DataState.ChangeSet', keys.body);
    assert.equal(changeSet.isSynthetic, true);
    const kids = changeSet.changes.map((c) => c.publicKey?.kid);
    assert.ok(kids.includes(tc.controller.pki.serverCertFingerprint), 'the session JWT signing key is published under its kid');
    conn.send(message(EdgeContentType.SubscribeToDataModelRequest, encode('edge.SubscribeToDataModelRequest', { subscriptionId: 'sub-1', subscriptionDurationSeconds: 300 })));
    const state = await conn.nextOf(EdgeContentType.DataState);
    assert.equal(readString(state.headers.get(EdgeHeader.RouterDataModelSubscriptionId)), 'sub-1');
    const model = decode('edge.DataState', state.body);
    const signing = model.events.find((e) => e.publicKey?.kid === tc.controller.pki.serverCertFingerprint)!;
    assert.ok(signing, 'the full state carries the signing key');
    assert.equal(new X509Certificate(Buffer.from(signing.publicKey!.data)).fingerprint.replaceAll(':', '').toLowerCase(), tc.controller.pki.serverCertFingerprint);
    conn.close();
  });

  it('pushes an API session when an identity logs in and removes it at logout, with its token and certificate prints', async () => {
    const router = await enrolledRouter(tc);
    const { conn } = await connectRouter(tc, router);
    const hello = await conn.nextOf(EdgeContentType.ServerHello);
    const reply = message(EdgeContentType.ClientHello, clientHelloBody(3023));
    reply.headers.set(ChannelHeader.ReplyFor, Buffer.from(Int32Array.of(hello.sequence).buffer));
    conn.send(reply);
    // The full state (every live session, the admin's at least) comes first, in chunks that name their sync.
    const full = await conn.nextOf(EdgeContentType.ApiSessionAdded);
    assert.equal(decode('edge.ApiSessionAdded', full.body).isFullState, true);
    const syncState = JSON.parse(readString(full.headers.get(EdgeHeader.SyncStrategyState))!);
    assert.equal(readString(full.headers.get(EdgeHeader.SyncStrategyType)), 'instant');
    assert.ok(syncState.id && syncState.isLast === true && syncState.sequence === 0);

    const user = await createClientUser(tc);
    const added = await conn.next((m) => m.contentType === EdgeContentType.ApiSessionAdded && decode('edge.ApiSessionAdded', m.body).apiSessions.some((s) => s.id === user.apiSessionId));
    const session = decode('edge.ApiSessionAdded', added.body).apiSessions.find((s) => s.id === user.apiSessionId)!;
    const token = user.token;
    assert.equal(session.token, token, 'the router gets the token the client holds');
    assert.equal(session.identityId, user.id);

    const out = await user.client.delete('/current-api-session');
    assert.equal(out.status, 200, out.text);
    const removed = await conn.nextOf(EdgeContentType.ApiSessionRemoved);
    assert.deepEqual(decode('edge.ApiSessionRemoved', removed.body), { tokens: [token], ids: [user.apiSessionId] });
    conn.close();
  });

  it('keeps tokens sealed in the store', async () => {
    const user = await createClientUser(tc);
    const row = (await tc.controller.store.get<{ token_hash: string; sealed_token: string }>('SELECT token_hash, sealed_token FROM api_sessions WHERE id = ?', [user.apiSessionId]))!;
    const token = user.token;
    assert.ok(row.sealed_token && !row.sealed_token.includes(token));
    assert.ok(!JSON.stringify(await tc.controller.store.get('SELECT * FROM api_sessions WHERE id = ?', [user.apiSessionId])).includes(token));
  });
});

describe('control channel: terminators and circuits', async () => {
  const router = await enrolledRouter(tc);
  const other = await enrolledRouter(tc);
  const serviceId = await createRecord(tc.mgmt, '/services', { name: uniqueName('svc'), encryptionRequired: false });
  const host = await createClientUser(tc);
  const dialer = await createClientUser(tc);
  await createRecord(tc.mgmt, '/service-policies', { name: uniqueName('bind'), type: 'Bind', semantic: 'AnyOf', serviceRoles: [`@${serviceId}`], identityRoles: [`@${host.id}`] });
  const dialPolicy = await createRecord(tc.mgmt, '/service-policies', { name: uniqueName('dial'), type: 'Dial', semantic: 'AnyOf', serviceRoles: [`@${serviceId}`], identityRoles: [`@${dialer.id}`] });
  await createRecord(tc.mgmt, '/edge-router-policies', { name: uniqueName('erp'), semantic: 'AnyOf', edgeRouterRoles: [`@${router.id}`], identityRoles: [`@${host.id}`, `@${dialer.id}`] });
  await createRecord(tc.mgmt, '/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AnyOf', edgeRouterRoles: [`@${router.id}`, `@${other.id}`], serviceRoles: [`@${serviceId}`] });

  async function session(user: ClientUser, type: 'Dial' | 'Bind'): Promise<{ id: string; token: string }> {
    const res = await user.client.post('/sessions', { serviceId, type });
    assert.equal(res.status, 201, res.text);
    return { id: res.body.data.id, token: res.body.data.token };
  }

  async function synced(creds: RouterCredentials): Promise<TestRouterConnection> {
    const { conn, result } = await connectRouter(tc, creds);
    assert.ok(isSuccess(result));
    const hello = await conn.nextOf(EdgeContentType.ServerHello);
    const reply = message(EdgeContentType.ClientHello, clientHelloBody(3030));
    reply.headers.set(ChannelHeader.ReplyFor, Buffer.from(Int32Array.of(hello.sequence).buffer));
    conn.send(reply);
    return conn;
  }

  function createTerminator(conn: TestRouterConnection, address: string, apiSessionToken: string, sessionToken: string): Promise<ReturnType<typeof decode<'edge.CreateTerminatorV2Response'>>> {
    const body = encode('edge.CreateTerminatorV2Request', { address, sessionToken, apiSessionToken, cost: 5, peerData: new Map([[1003, Buffer.from('host-public-key')]]) });
    conn.send(message(EdgeContentType.CreateTerminatorV2Request, body));
    return conn
      .next((m) => m.contentType === EdgeContentType.CreateTerminatorV2Response && decode('edge.CreateTerminatorV2Response', m.body).terminatorId === address)
      .then((m) => decode('edge.CreateTerminatorV2Response', m.body));
  }

  function dial(conn: TestRouterConnection, apiSessionToken: string, sessionToken: string): number {
    return conn.send(
      message(EdgeContentType.CreateCircuitV2Request, Buffer.alloc(0), [
        [CreateCircuitV2RequestHeader.SessionToken, stringValue(sessionToken)],
        [CreateCircuitV2RequestHeader.ApiSessionToken, stringValue(apiSessionToken)],
        [CreateCircuitV2RequestHeader.PeerData, byteMapValue(new Map([[1003, Buffer.from('dialer-public-key')]]))],
      ]),
    );
  }

  /** Answers a Route with a successful RouteResult. */
  function routeSucceeded(conn: TestRouterConnection, routeMsg: ChannelMessage, route: ReturnType<typeof decode<'ctrl.Route'>>): void {
    const result = message(CtrlContentType.RouteResult, route.circuitId, [
      [RouteResultHeader.Attempt, uint32Value(route.attempt)],
      [RouteResultHeader.Success, Buffer.from([1])],
    ]);
    result.headers.set(ChannelHeader.ReplyFor, Buffer.from(Int32Array.of(routeMsg.sequence).buffer));
    conn.send(result);
  }

  it('creates a terminator for a bind the policies allow, routes a dial to it, and forgets both when they end', async () => {
    const conn = await synced(router);
    const bind = await session(host, 'Bind');
    const created = await createTerminator(conn, 'term-1', host.token, bind.token);
    assert.equal(created.result, 0, created.msg);
    const listed = await tc.mgmt.get('/terminators/term-1');
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body.data.routerId, router.id);
    assert.equal(listed.body.data.serviceId, serviceId);
    assert.equal(listed.body.data.binding, 'edge');
    assert.equal(listed.body.data.address, 'term-1');
    assert.equal(listed.body.data.cost, 5);
    assert.equal(listed.body.data.precedence, 'default');
    assert.equal((await createTerminator(conn, 'term-1', host.token, bind.token)).result, 0, 'a re-sent terminator is accepted again');

    const dialSession = await session(dialer, 'Dial');
    const request = dial(conn, dialer.token, dialSession.token);
    const routeMsg = await conn.nextOf(CtrlContentType.Route);
    const route = decode('ctrl.Route', routeMsg.body);
    assert.equal(route.egress?.destination, 'term-1');
    assert.equal(route.egress?.binding, 'edge');
    assert.deepEqual(route.forwards.map((f) => f.dstType), [1, 0]);
    assert.equal(route.forwards[0]!.dstAddress, route.egress?.address);
    assert.equal(Buffer.from(route.egress!.peerData.get(1003)!).toString(), 'dialer-public-key');
    routeSucceeded(conn, routeMsg, route);
    const response = await conn.replyTo(request);
    assert.equal(response.contentType, EdgeContentType.CreateCircuitV2Response, response.body.toString());
    assert.equal(readString(response.headers.get(CreateCircuitV2ResponseHeader.CircuitId)), route.circuitId);
    assert.equal(readString(response.headers.get(CreateCircuitV2ResponseHeader.Address)), route.forwards[0]!.srcAddress);
    assert.equal(readByteMap(response.headers.get(CreateCircuitV2ResponseHeader.PeerData))?.get(1003)?.toString(), 'host-public-key');
    const path = await tc.mgmt.get(`/sessions/${dialSession.id}/route-path`);
    assert.deepEqual(path.body.data.routePath, [router.id]);

    conn.send(message(CtrlContentType.Fault, encode('ctrl.Fault', { subject: 1, id: route.circuitId })));
    await eventually(async () => (await tc.mgmt.get(`/sessions/${dialSession.id}/route-path`)).body.data.routePath.length === 0, 'the circuit ends');
    assert.deepEqual(await feedOps('circuit', route.circuitId), ['set', 'remove']);

    const seq = conn.send(message(CtrlContentType.RemoveTerminatorsRequest, encode('ctrl.RemoveTerminatorsRequest', { terminatorIds: ['term-1'] })));
    assert.ok(isSuccess(await conn.replyTo(seq)));
    assert.equal((await tc.mgmt.get('/terminators/term-1')).status, 404);
    conn.close();
  });

  it('answers circuit requests from memory (no store read per circuit on PostgreSQL) and follows session and terminator changes at once', async () => {
    const conn = await synced(router);
    const bind = await session(host, 'Bind');
    assert.equal((await createTerminator(conn, 'term-hot', host.token, bind.token)).result, 0);
    const dialSession = await session(dialer, 'Dial');
    /** One circuit: request, Route answered, response; ended by the dialer's fault. */
    const circuit = async (): Promise<void> => {
      const request = dial(conn, dialer.token, dialSession.token);
      const routeMsg = await conn.nextOf(CtrlContentType.Route);
      const route = decode('ctrl.Route', routeMsg.body);
      routeSucceeded(conn, routeMsg, route);
      const response = await conn.replyTo(request);
      assert.equal(response.contentType, EdgeContentType.CreateCircuitV2Response, response.body.toString());
      conn.send(message(CtrlContentType.Fault, encode('ctrl.Fault', { subject: 1, id: route.circuitId })));
    };
    try {
      for (let i = 0; i < 3; i++) await circuit();
      if (tc.controller.store.kind === 'postgres') {
        // The reads a circuit request used to make, each a round trip on PostgreSQL: now served from lookups kept on
        // change counters. (The controller's timers read other things now and then, whatever happens.)
        const store = tc.controller.store as unknown as Record<'get' | 'all', (sql: string, params?: unknown[]) => Promise<unknown>>;
        const circuitReads = /FROM (api_sessions WHERE token_hash|sessions WHERE id|services WHERE id|terminators WHERE service_id)/;
        const real = { get: store.get, all: store.all };
        let reads = 0;
        for (const method of ['get', 'all'] as const) {
          store[method] = (sql, params) => {
            if (circuitReads.test(sql)) reads += 1;
            return real[method](sql, params);
          };
        }
        try {
          for (let i = 0; i < 30; i++) await circuit();
        } finally {
          store.get = real.get;
          store.all = real.all;
        }
        assert.ok(reads <= 4, `${reads} reads of API sessions, sessions, services or terminators for 30 circuits`);
      }

      // The terminator removed through the API: the very next dial finds none.
      assert.equal((await tc.mgmt.delete('/terminators/term-hot')).status, 200);
      const none = await conn.replyTo(dial(conn, dialer.token, dialSession.token));
      assert.equal(readUint32(none.headers.get(EdgeErrorHeader.ErrorCode)), 8, none.body.toString());
      // The dial session deleted through the API: the very next dial is refused as an unknown session.
      assert.equal((await createTerminator(conn, 'term-hot', host.token, bind.token)).result, 0);
      await circuit();
      assert.equal((await tc.mgmt.delete(`/sessions/${dialSession.id}`)).status, 200);
      const gone = await conn.replyTo(dial(conn, dialer.token, dialSession.token));
      assert.equal(readUint32(gone.headers.get(EdgeErrorHeader.ErrorCode)), 3, gone.body.toString());
      // Every ended circuit's row goes (written in batches, after the fault).
      await eventually(async () => (await tc.controller.store.value<number>('SELECT COUNT(*) FROM circuits WHERE session_id = ?', [dialSession.id])) === 0, 'the circuit rows are removed');
    } finally {
      // Whatever failed above, the next tests find no terminator of this one on the router.
      const seq = conn.send(message(CtrlContentType.RemoveTerminatorsRequest, encode('ctrl.RemoveTerminatorsRequest', { terminatorIds: ['term-hot'] })));
      await conn.replyTo(seq).catch(() => undefined);
      conn.close();
    }
  });

  it('refuses binds and dials the policies or session types do not allow, with the edge error codes', async () => {
    const conn = await synced(router);
    const dialSession = await session(dialer, 'Dial');
    const wrongType = await createTerminator(conn, 'term-wrong', dialer.token, dialSession.token);
    assert.equal(wrongType.result, 4);
    assert.equal(wrongType.errorCode, 4);
    const badApiSession = await createTerminator(conn, 'term-bad', 'not-a-token', dialSession.token);
    assert.equal(badApiSession.errorCode, 2);

    const noTerminators = dial(conn, dialer.token, dialSession.token);
    const refusal = await conn.replyTo(noTerminators);
    assert.equal(refusal.contentType, EdgeContentType.Error);
    assert.equal(readUint32(refusal.headers.get(EdgeErrorHeader.ErrorCode)), 8);

    // The other router is not in the identities' edge router policy.
    const elsewhere = await synced(other);
    const notHere = dial(elsewhere, dialer.token, dialSession.token);
    const refused = await elsewhere.replyTo(notHere);
    assert.equal(readUint32(refused.headers.get(EdgeErrorHeader.ErrorCode)), 5, refused.body.toString());

    // Losing the dial policy ends the session: the next dial is refused and routers are told.
    assert.equal((await tc.mgmt.delete(`/service-policies/${dialPolicy}`)).status, 200);
    const removed = await conn.nextOf(EdgeContentType.SessionRemoved);
    assert.ok(decode('edge.SessionRemoved', removed.body).ids.includes(dialSession.id));
    const afterLoss = dial(conn, dialer.token, dialSession.token);
    assert.equal(readUint32((await conn.replyTo(afterLoss)).headers.get(EdgeErrorHeader.ErrorCode)), 3);
    conn.close();
    elsewhere.close();
  });

  it('refuses circuits when a posture check fails, and tells routers when an identity is disabled or a token is unknown', async () => {
    const conn = await synced(router);
    const user = await createClientUser(tc);
    const policy = await createRecord(tc.mgmt, '/service-policies', { name: uniqueName('dial2'), type: 'Dial', semantic: 'AnyOf', serviceRoles: [`@${serviceId}`], identityRoles: [`@${user.id}`] });
    const erp = await createRecord(tc.mgmt, '/edge-router-policies', { name: uniqueName('erp2'), semantic: 'AnyOf', edgeRouterRoles: [`@${router.id}`], identityRoles: [`@${user.id}`] });
    const bind = await session(host, 'Bind');
    assert.equal((await createTerminator(conn, 'term-posture', host.token, bind.token)).result, 0);
    const dialSession = await session(user, 'Dial');
    // An MFA posture check the identity can not pass: the next circuit is refused, as REST would refuse the session.
    const check = await createRecord(tc.mgmt, '/posture-checks', { name: uniqueName('mfa'), typeId: 'MFA' });
    const patched = await tc.mgmt.patch(`/service-policies/${policy}`, { postureCheckRoles: [`@${check}`] });
    assert.equal(patched.status, 200, patched.text);
    const refused = dial(conn, user.token, dialSession.token);
    const answer = await conn.replyTo(refused);
    assert.equal(answer.contentType, EdgeContentType.Error, 'no circuit without the posture check passing');

    // Heartbeats: a token the controller no longer knows is removed at the router.
    conn.send(message(EdgeContentType.ApiSessionHeartbeat, encode('edge.ApiSessionHeartbeat', { tokens: [user.token, 'no-such-token'] })));
    const unknown = await conn.next((m) => m.contentType === EdgeContentType.ApiSessionRemoved && decode('edge.ApiSessionRemoved', m.body).tokens.includes('no-such-token'));
    assert.deepEqual(decode('edge.ApiSessionRemoved', unknown.body).tokens, ['no-such-token']);

    // Disabling the identity ends its API sessions: the router is told to drop them. It is told of a removal only
    // for a session it was told of (one made and ended within one poll reaches it in neither), so wait for that first.
    await conn.next((m) => m.contentType === EdgeContentType.ApiSessionAdded && decode('edge.ApiSessionAdded', m.body).apiSessions.some((s) => s.id === user.apiSessionId));
    const disabled = await tc.mgmt.post(`/identities/${user.id}/disable`, { durationMinutes: 0 });
    assert.equal(disabled.status, 200, disabled.text);
    const removed = await conn.next((m) => m.contentType === EdgeContentType.ApiSessionRemoved && decode('edge.ApiSessionRemoved', m.body).ids.includes(user.apiSessionId));
    // Both of its API sessions (management and client) go; the client one with the token the SDK holds.
    const gone = decode('edge.ApiSessionRemoved', removed.body);
    assert.equal(gone.tokens[gone.ids.indexOf(user.apiSessionId)], user.token);
    await tc.mgmt.delete(`/edge-router-policies/${erp}`);
    conn.close();
  });

  it('forgets the terminators of a router that disconnects, and shows identities connected through routers', async () => {
    const conn = await synced(router);
    const bind = await session(host, 'Bind');
    assert.equal((await createTerminator(conn, 'term-2', host.token, bind.token)).result, 0);
    conn.send(message(EdgeContentType.ConnectEvents, encode('edge.ConnectEvents', { fullState: true, events: [{ identityId: host.id, isConnected: true }] })));
    await eventually(async () => (await tc.mgmt.get(`/identities/${host.id}`)).body.data.hasEdgeRouterConnection === true, 'the host shows connected');
    assert.equal((await tc.mgmt.get(`/identities/${host.id}`)).body.data.edgeRouterConnectionStatus, 'online');
    conn.close();
    await eventually(async () => (await tc.mgmt.get('/terminators/term-2')).status === 404, 'the terminator goes with its router');
    await eventually(async () => (await tc.mgmt.get(`/identities/${host.id}`)).body.data.hasEdgeRouterConnection === false, 'the host shows disconnected');
  });
});

describe('control channel: reports and limits', () => {
  it('marks the API sessions a router heartbeats in the batched activity write, not with a write per heartbeat', async () => {
    const router = await enrolledRouter(tc);
    const { conn } = await connectRouter(tc, router);
    const user = await createClientUser(tc);
    const store = tc.controller.store;
    const activityWrites = async () => Number(await store.value("SELECT version FROM table_versions WHERE name = 'api_session_activity'"));
    const stored = async () => (await store.value<string>('SELECT last_activity_at FROM api_sessions WHERE id = ?', [user.apiSessionId]))!;
    const before = await stored();
    await new Promise((r) => setTimeout(r, 5));
    const writesBefore = await activityWrites();
    for (let i = 0; i < 50; i++) conn.send(message(EdgeContentType.ApiSessionHeartbeat, encode('edge.ApiSessionHeartbeat', { tokens: [user.token] })));
    const seq = conn.send(message(ChannelContentType.Ping));
    await conn.replyTo(seq);
    // A periodic flush may fall in between (one row per session active since the last); 50 heartbeats wrote nothing.
    const written = (await activityWrites()) - writesBefore;
    assert.ok(written < 10, `${written} activity rows written for 50 heartbeats`);
    await tc.controller.services.apiSessions.maintain();
    assert.ok((await stored()) > before, 'the next batch stores the activity');
    conn.close();
  });

  it('passes over connect events of identities that do not exist', async () => {
    const router = await enrolledRouter(tc);
    const { conn } = await connectRouter(tc, router);
    const user = await createClientUser(tc);
    conn.send(
      message(
        EdgeContentType.ConnectEvents,
        encode('edge.ConnectEvents', { fullState: false, events: [{ identityId: 'no-such-identity', isConnected: true }, { identityId: user.id, isConnected: true }] }),
      ),
    );
    const seq = conn.send(message(ChannelContentType.Ping));
    assert.equal((await conn.replyTo(seq)).contentType, ChannelContentType.Result, 'the router is still served');
    const rows = await tc.controller.store.column('SELECT identity_id FROM identity_router_connections WHERE router_id = ?', [router.id]);
    assert.deepEqual(rows, [user.id]);
    conn.close();
  });

  it('reads messages up to the 16 MiB body limit and closes a router that announces a larger one', async () => {
    const router = await enrolledRouter(tc);
    const { conn } = await connectRouter(tc, router);
    conn.send(message(99_998, Buffer.alloc(16 << 20, 1)));
    const seq = conn.send(message(ChannelContentType.Ping));
    assert.equal((await conn.replyTo(seq, 30_000)).contentType, ChannelContentType.Result, 'a 16 MiB message is read');
    const prefix = Buffer.alloc(20);
    MAGIC.copy(prefix, 0);
    prefix.writeInt32LE(99_998, 4);
    prefix.writeInt32LE(1000, 8);
    prefix.writeInt32LE(0, 12);
    prefix.writeInt32LE((16 << 20) + 1, 16);
    conn.writeRaw(prefix);
    await conn.waitClosed();
    assert.equal((await tc.http.get('/version')).status, 200);
  });
});
