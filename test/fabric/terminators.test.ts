/**
 * One set of rules for every terminator write, whichever path it takes: the management API, an SDK's bind
 * through an edge router (CreateTerminatorV2, UpdateTerminator, RemoveTerminator, RemoveTerminators) and a
 * router's own tunneler (CreateTunnelTerminatorV2, UpdateTunnelTerminator). A cost outside 0..65535 or a
 * precedence outside default/required/failed is refused on each path; a router may change or remove only the
 * terminators it created; REST may delete a router's terminator but not update it (upstream's terminator
 * store); a dial failing at a terminator its router does not know forgets it only if a router created it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName } from '../support/controller.ts';
import { createClientUser, createRecord, type ClientUser } from '../support/factories.ts';
import { assertError, assertFieldError } from '../support/assertions.ts';
import { clientHelloBody, connectRouter, enrolledRouter, enrollRouterAgain, type RouterCredentials, type TestRouterConnection } from '../support/test-router.ts';
import { ChannelHeader, byteMapValue, message, readBool, readUint32, stringValue, uint32Value, type ChannelMessage } from '../../src/fabric/channel/message.ts';
import { CtrlContentType } from '../../src/fabric/proto/ctrl.ts';
import { CreateCircuitV2RequestHeader, EdgeErrorHeader, RouteResultHeader } from '../../src/fabric/proto/header-messages.ts';
import { decode, encode } from '../../src/fabric/proto/index.ts';
import { EdgeContentType } from '../../src/fabric/proto/edge-ctrl.ts';

const tc = await startTestController();

const INVALID_TERMINATOR = 8;
const INVALID_PRECEDENCE = 9;
const INVALID_COST = 10;
const NOT_RETRIABLE = 3;

const routerA = await enrolledRouter(tc);
const routerB = await enrolledRouter(tc);
const serviceId = await createRecord(tc.mgmt, '/services', { name: uniqueName('svc'), encryptionRequired: false });
const host = await createClientUser(tc);
const dialer = await createClientUser(tc);
await createRecord(tc.mgmt, '/service-policies', { name: uniqueName('bind'), type: 'Bind', semantic: 'AnyOf', serviceRoles: [`@${serviceId}`], identityRoles: [`@${host.id}`] });
await createRecord(tc.mgmt, '/service-policies', { name: uniqueName('dial'), type: 'Dial', semantic: 'AnyOf', serviceRoles: [`@${serviceId}`], identityRoles: [`@${dialer.id}`] });
await createRecord(tc.mgmt, '/edge-router-policies', { name: uniqueName('erp'), semantic: 'AnyOf', edgeRouterRoles: [`@${routerA.id}`, `@${routerB.id}`], identityRoles: [`@${host.id}`, `@${dialer.id}`] });
await createRecord(tc.mgmt, '/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AnyOf', edgeRouterRoles: [`@${routerA.id}`, `@${routerB.id}`], serviceRoles: [`@${serviceId}`] });

async function synced(creds: RouterCredentials): Promise<TestRouterConnection> {
  const { conn, result } = await connectRouter(tc, creds);
  assert.equal(readBool(result.headers.get(ChannelHeader.ResultSuccess)), true);
  const hello = await conn.nextOf(EdgeContentType.ServerHello);
  const reply = message(EdgeContentType.ClientHello, clientHelloBody(3030));
  reply.headers.set(ChannelHeader.ReplyFor, Buffer.from(Int32Array.of(hello.sequence).buffer));
  conn.send(reply);
  return conn;
}

const connA = await synced(routerA);
const connB = await synced(routerB);

async function session(user: ClientUser, type: 'Dial' | 'Bind'): Promise<string> {
  const res = await user.client.post('/sessions', { serviceId, type });
  assert.equal(res.status, 201, res.text);
  return res.body.data.token as string;
}

const bindToken = await session(host, 'Bind');

async function bind(conn: TestRouterConnection, address: string, cost = 5, precedence = 0) {
  const body = encode('edge.CreateTerminatorV2Request', { address, sessionToken: bindToken, apiSessionToken: host.token, cost, precedence: precedence as never, peerData: new Map() });
  conn.send(message(EdgeContentType.CreateTerminatorV2Request, body));
  const reply = await conn.next((m) => m.contentType === EdgeContentType.CreateTerminatorV2Response && decode('edge.CreateTerminatorV2Response', m.body).terminatorId === address);
  return decode('edge.CreateTerminatorV2Response', reply.body);
}

function update(conn: TestRouterConnection, terminatorId: string, change: { cost?: number; precedence?: number }): Promise<ChannelMessage> {
  const body = encode('edge.UpdateTerminatorRequest', {
    terminatorId,
    sessionToken: bindToken,
    apiSessionToken: host.token,
    cost: change.cost ?? 0,
    updateCost: change.cost !== undefined,
    precedence: (change.precedence ?? 0) as never,
    updatePrecedence: change.precedence !== undefined,
  });
  return conn.replyTo(conn.send(message(EdgeContentType.UpdateTerminatorRequest, body)));
}

function removeOne(conn: TestRouterConnection, terminatorId: string): Promise<ChannelMessage> {
  const body = encode('edge.RemoveTerminatorRequest', { terminatorId, sessionToken: bindToken, apiSessionToken: host.token });
  return conn.replyTo(conn.send(message(EdgeContentType.RemoveTerminatorRequest, body)));
}

function removeBatch(conn: TestRouterConnection, terminatorIds: string[]): Promise<ChannelMessage> {
  return conn.replyTo(conn.send(message(CtrlContentType.RemoveTerminatorsRequest, encode('ctrl.RemoveTerminatorsRequest', { terminatorIds }))));
}

/** An edge Error reply: its edge error code and retry hint. */
function refusal(reply: ChannelMessage): [number, number | undefined, number | undefined] {
  return [reply.contentType, readUint32(reply.headers.get(EdgeErrorHeader.ErrorCode)), readUint32(reply.headers.get(EdgeErrorHeader.RetryHint))];
}

function isSuccess(reply: ChannelMessage): boolean {
  return reply.contentType === 2 && readBool(reply.headers.get(ChannelHeader.ResultSuccess)) === true;
}

async function terminator(id: string): Promise<Record<string, any> | undefined> {
  const res = await tc.mgmt.get(`/terminators/${id}`);
  if (res.status === 404) return undefined;
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

async function restTerminator(body: Record<string, unknown> = {}): Promise<string> {
  return createRecord(tc.mgmt, '/terminators', { service: serviceId, router: routerA.id, binding: 'edge', address: uniqueName('rest'), ...body });
}

/** A tunneler-enabled edge router allowed to host the service with its own identity. */
async function tunnelerRouter(): Promise<{ creds: RouterCredentials; conn: TestRouterConnection }> {
  const name = uniqueName('ert');
  const id = await createRecord(tc.mgmt, '/edge-routers', { name, isTunnelerEnabled: true });
  const creds = await enrollRouterAgain(tc, id, name);
  await createRecord(tc.mgmt, '/service-policies', { name: uniqueName('tbind'), type: 'Bind', semantic: 'AnyOf', identityRoles: [`@${id}`], serviceRoles: [`@${serviceId}`] });
  await createRecord(tc.mgmt, '/service-edge-router-policies', { name: uniqueName('tserp'), semantic: 'AnyOf', serviceRoles: [`@${serviceId}`], edgeRouterRoles: [`@${id}`] });
  const { conn } = await connectRouter(tc, creds);
  return { creds, conn };
}

async function tunnelBind(conn: TestRouterConnection, address: string, cost = 2, precedence = 0) {
  conn.send(message(EdgeContentType.CreateTunnelTerminatorRequestV2, encode('edge.CreateTunnelTerminatorRequestV2', { serviceId, address, cost, precedence: precedence as never, startTime: 7n })));
  const reply = await conn.next((m) => m.contentType === EdgeContentType.CreateTunnelTerminatorResponseV2 && decode('edge.CreateTunnelTerminatorResponseV2', m.body).terminatorId === address);
  return decode('edge.CreateTunnelTerminatorResponseV2', reply.body);
}

function tunnelUpdate(conn: TestRouterConnection, terminatorId: string, change: { cost?: number; precedence?: number }): Promise<ChannelMessage> {
  const body = encode('edge.UpdateTunnelTerminatorRequest', {
    terminatorId,
    cost: change.cost ?? 0,
    updateCost: change.cost !== undefined,
    precedence: (change.precedence ?? 0) as never,
    updatePrecedence: change.precedence !== undefined,
  });
  return conn.replyTo(conn.send(message(EdgeContentType.UpdateTunnelTerminatorRequest, body)));
}

const tunneler = await tunnelerRouter();

describe('a cost or precedence out of range', () => {
  it('is refused by the management API on create, put and patch, naming the field', async () => {
    const base = { service: serviceId, router: routerA.id, binding: 'edge', address: 'range:1' };
    assertFieldError(await tc.mgmt.post('/terminators', { ...base, cost: 65536 }), 'cost');
    assertFieldError(await tc.mgmt.post('/terminators', { ...base, cost: -1 }), 'cost');
    assertFieldError(await tc.mgmt.post('/terminators', { ...base, precedence: 'urgent' }), 'precedence');
    const id = await restTerminator({ cost: 65535, precedence: 'required' });
    const res = await tc.mgmt.patch(`/terminators/${id}`, { cost: 70000 });
    assertFieldError(res, 'cost');
    assert.equal(res.body.error.cause.value, '70000');
    assertFieldError(await tc.mgmt.put(`/terminators/${id}`, { ...base, precedence: 'later' }), 'precedence');
    const stored = await terminator(id);
    assert.deepEqual([stored?.cost, stored?.precedence], [65535, 'required'], 'nothing changed');
  });

  it('is refused for an SDK bind through a router, on create and on update, and nothing is stored or clamped', async () => {
    const tooCostly = await bind(connA, 'range-cost', 65536);
    assert.deepEqual([tooCostly.result, tooCostly.errorCode, tooCostly.retryHint], [2, INVALID_COST, NOT_RETRIABLE], tooCostly.msg);
    assert.match(tooCostly.msg, /cost 65536/);
    assert.equal(await terminator('range-cost'), undefined);
    const unknownPrecedence = await bind(connA, 'range-precedence', 5, 3);
    assert.deepEqual([unknownPrecedence.result, unknownPrecedence.errorCode], [2, INVALID_PRECEDENCE], unknownPrecedence.msg);
    assert.equal(await terminator('range-precedence'), undefined, 'not stored as default');

    assert.equal((await bind(connA, 'range-ok', 65535, 1)).result, 0);
    assert.deepEqual(refusal(await update(connA, 'range-ok', { cost: 70000 })), [EdgeContentType.Error, INVALID_COST, NOT_RETRIABLE]);
    assert.deepEqual(refusal(await update(connA, 'range-ok', { precedence: 7 })), [EdgeContentType.Error, INVALID_PRECEDENCE, NOT_RETRIABLE]);
    assert.deepEqual(refusal(await update(connA, 'range-ok', { cost: 1, precedence: 9 })), [EdgeContentType.Error, INVALID_PRECEDENCE, NOT_RETRIABLE]);
    let stored = await terminator('range-ok');
    assert.deepEqual([stored?.cost, stored?.precedence], [65535, 'required'], 'a refused update changes nothing');

    assert.ok(isSuccess(await update(connA, 'range-ok', { cost: 0, precedence: 2 })));
    stored = await terminator('range-ok');
    assert.deepEqual([stored?.cost, stored?.precedence], [0, 'failed']);
    // The same terminator sent again takes the cost and precedence of the request.
    assert.equal((await bind(connA, 'range-ok', 9, 0)).result, 0);
    stored = await terminator('range-ok');
    assert.deepEqual([stored?.cost, stored?.precedence], [9, 'default']);
  });

  it('is refused for a router\'s own tunneler, on create and on update', async () => {
    const tooCostly = await tunnelBind(tunneler.conn, 'tt-range-cost', 70000);
    assert.deepEqual([tooCostly.result, tooCostly.errorCode, tooCostly.retryHint, tooCostly.startTime], [2, INVALID_COST, NOT_RETRIABLE, 7n], tooCostly.msg);
    const unknownPrecedence = await tunnelBind(tunneler.conn, 'tt-range-precedence', 2, 4);
    assert.deepEqual([unknownPrecedence.result, unknownPrecedence.errorCode], [2, INVALID_PRECEDENCE]);
    assert.equal(await terminator('tt-range-cost'), undefined);
    assert.equal(await terminator('tt-range-precedence'), undefined);

    assert.equal((await tunnelBind(tunneler.conn, 'tt-range-ok', 2)).result, 0);
    assert.deepEqual(refusal(await tunnelUpdate(tunneler.conn, 'tt-range-ok', { cost: 65536 })), [EdgeContentType.Error, INVALID_COST, NOT_RETRIABLE]);
    assert.deepEqual(refusal(await tunnelUpdate(tunneler.conn, 'tt-range-ok', { precedence: 3 })), [EdgeContentType.Error, INVALID_PRECEDENCE, NOT_RETRIABLE]);
    assert.equal((await terminator('tt-range-ok'))?.cost, 2);
    const ok = await tunnelUpdate(tunneler.conn, 'tt-range-ok', { cost: 40, precedence: 1 });
    assert.equal(ok.contentType, EdgeContentType.UpdateTunnelTerminatorResponse);
    const stored = await terminator('tt-range-ok');
    assert.deepEqual([stored?.cost, stored?.precedence], [40, 'required']);
  });
});

describe('a router changes or removes only the terminators it created', () => {
  it('refuses updates and removals of another router\'s or a REST-created terminator, which stay as they are', async () => {
    const rest = await restTerminator({ cost: 3 });
    assert.equal((await bind(connB, 'owned-by-b', 4)).result, 0);
    assert.equal((await bind(connA, 'owned-by-a', 6)).result, 0);

    for (const id of [rest, 'owned-by-b', 'tt-range-ok']) {
      assert.deepEqual(refusal(await update(connA, id, { cost: 100 })), [EdgeContentType.Error, INVALID_TERMINATOR, NOT_RETRIABLE], id);
      assert.deepEqual(refusal(await removeOne(connA, id)), [EdgeContentType.Error, INVALID_TERMINATOR, NOT_RETRIABLE], id);
    }
    // The tunneler may not touch an SDK's terminator, even through its own update.
    assert.deepEqual(refusal(await tunnelUpdate(tunneler.conn, 'owned-by-a', { cost: 100 })), [EdgeContentType.Error, INVALID_TERMINATOR, NOT_RETRIABLE]);
    assert.deepEqual(refusal(await tunnelUpdate(tunneler.conn, rest, { cost: 100 })), [EdgeContentType.Error, INVALID_TERMINATOR, NOT_RETRIABLE]);
    // An SDK bind may not take over the id of a REST-created terminator or another router's.
    assert.equal((await bind(connA, rest)).result, 1);
    assert.equal((await bind(connA, 'owned-by-b')).result, 1);

    // The batch removal answers success (the router would re-send a failed batch for ever) and removes only its own.
    assert.ok(isSuccess(await removeBatch(connA, [rest, 'owned-by-b', 'tt-range-ok', 'owned-by-a', 'never-existed'])));
    assert.equal(await terminator('owned-by-a'), undefined);
    assert.equal((await terminator(rest))?.cost, 3);
    assert.equal((await terminator('owned-by-b'))?.cost, 4);
    assert.equal((await terminator('tt-range-ok'))?.cost, 40);

    // Its owner may.
    assert.ok(isSuccess(await update(connB, 'owned-by-b', { cost: 8 })));
    assert.equal((await terminator('owned-by-b'))?.cost, 8);
    assert.ok(isSuccess(await removeOne(connB, 'owned-by-b')));
    assert.equal(await terminator('owned-by-b'), undefined);
    assert.deepEqual(refusal(await removeOne(connB, 'owned-by-b')), [EdgeContentType.Error, INVALID_TERMINATOR, NOT_RETRIABLE], 'gone');
  });
});

describe('REST writes on a terminator a router created', () => {
  it('refuses put and patch with ENTITY_CAN_NOT_BE_UPDATED, and deletes it', async () => {
    assert.equal((await bind(connA, 'rest-on-router', 6, 1)).result, 0);
    const before = await terminator('rest-on-router');
    const patched = await tc.mgmt.patch('/terminators/rest-on-router', { cost: 1 });
    assertError(patched, 400, 'ENTITY_CAN_NOT_BE_UPDATED');
    assert.deepEqual(patched.body.error.cause, { code: 'UNHANDLED', message: 'cannot update system terminator in a non-system context (id=rest-on-router)' });
    const put = await tc.mgmt.put('/terminators/rest-on-router', { service: serviceId, router: routerB.id, binding: 'transport', address: 'tcp:x:1' });
    assertError(put, 400, 'ENTITY_CAN_NOT_BE_UPDATED');
    assert.deepEqual(await terminator('rest-on-router'), before);

    assert.equal((await tc.mgmt.delete('/terminators/rest-on-router')).status, 200);
    assert.equal(await terminator('rest-on-router'), undefined);
    // Its router learns of it at its next change: the terminator is gone.
    assert.deepEqual(refusal(await update(connA, 'rest-on-router', { cost: 2 })), [EdgeContentType.Error, INVALID_TERMINATOR, NOT_RETRIABLE]);
  });

  it('updates a REST-created terminator on the same router as before', async () => {
    const id = await restTerminator({ cost: 3 });
    assert.equal((await tc.mgmt.patch(`/terminators/${id}`, { cost: 65535, precedence: 'failed' })).status, 200);
    const stored = await terminator(id);
    assert.deepEqual([stored?.cost, stored?.precedence], [65535, 'failed']);
    assert.equal((await tc.mgmt.delete(`/terminators/${id}`)).status, 200);
  });
});

describe('a dial failing at a terminator its router does not know', () => {
  it('forgets a terminator the router created, and keeps a REST-created one', async () => {
    // Only these two terminators of the service remain.
    for (const t of (await tc.mgmt.get(`/services/${serviceId}/terminators?limit=500`)).body.data) await tc.mgmt.delete(`/terminators/${t.id}`);
    const rest = await restTerminator();
    assert.equal((await bind(connA, 'dial-fails')).result, 0);

    const dialToken = await session(dialer, 'Dial');
    const request = connA.send(
      message(EdgeContentType.CreateCircuitV2Request, Buffer.alloc(0), [
        [CreateCircuitV2RequestHeader.SessionToken, stringValue(dialToken)],
        [CreateCircuitV2RequestHeader.ApiSessionToken, stringValue(dialer.token)],
        [CreateCircuitV2RequestHeader.PeerData, byteMapValue(new Map())],
      ]),
    );
    // The router answers every route: "unknown terminator" (code 1) at the egress.
    for (let i = 0; i < 2; i++) {
      const routeMsg = await connA.nextOf(CtrlContentType.Route);
      const route = decode('ctrl.Route', routeMsg.body);
      const result = message(CtrlContentType.RouteResult, route.circuitId, [
        [RouteResultHeader.Attempt, uint32Value(route.attempt)],
        [RouteResultHeader.Error, stringValue('unknown terminator')],
        [RouteResultHeader.ErrorCode, Buffer.from([1])],
      ]);
      result.headers.set(ChannelHeader.ReplyFor, Buffer.from(Int32Array.of(routeMsg.sequence).buffer));
      connA.send(result);
    }
    const answer = await connA.replyTo(request);
    assert.equal(answer.contentType, EdgeContentType.Error, answer.body.toString());
    assert.equal(await terminator('dial-fails'), undefined, 'the router-created terminator is forgotten');
    assert.ok(await terminator(rest), 'the REST-created one stays');
  });
});
