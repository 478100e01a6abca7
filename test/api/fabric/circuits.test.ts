/**
 * Fabric API circuits (`/fabric/v1/circuits`, `/circuits/{id}`): circuits routed through scripted routers (an
 * SDK dial on one edge router to a terminator on the same router, and over a link to a terminator on another)
 * in the fabric circuitDetail (path of router and link references, service and terminator references, the
 * dialer's session as clientId, the route tags), upstream's circuit filter fields, paging, bad filters,
 * unknown ids, and circuits gone when they end.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpClient } from '../../support/client.ts';
import { createClientUser, createRecord, type ClientUser } from '../../support/factories.ts';
import { assertError, TIMESTAMP } from '../../support/assertions.ts';
import { assertFabricDetail, assertFabricList } from '../../support/fabric-spec.ts';
import { connectRouter, enrolledRouter, eventually, type RouterCredentials, type TestRouterConnection } from '../../support/test-router.ts';
import { ChannelHeader, byteMapValue, message, readBool, readString, stringValue, uint32Value, type ChannelMessage } from '../../../src/fabric/channel/message.ts';
import { CtrlContentType } from '../../../src/fabric/proto/ctrl.ts';
import { CreateCircuitV2RequestHeader, CreateCircuitV2ResponseHeader, RouteResultHeader } from '../../../src/fabric/proto/header-messages.ts';
import { decode, encode } from '../../../src/fabric/proto/index.ts';
import { EdgeContentType } from '../../../src/fabric/proto/edge-ctrl.ts';

const tc: TestController = await startTestController();
const fabric: HttpClient = createClient(`https://127.0.0.1:${tc.port}/fabric/v1`, tc.ca, { token: tc.adminToken });

/** A circuit on one router crosses no link: upstream renders `path.links` null. */
const NULLS = { allowNullAt: ['/path/links'] };

const q = (filter: string) => encodeURIComponent(filter);

async function circuitList(query = ''): Promise<Record<string, any>> {
  const res = await fabric.get(`/circuits${query ? `?${query}` : ''}`);
  assert.equal(res.status, 200, res.text);
  assertFabricList('circuitDetail', res.body, NULLS);
  return res.body;
}

async function ids(filter: string): Promise<string[]> {
  return (await circuitList(`filter=${q(`${filter} sort by id`)}&limit=500`)).data.map((c: { id: string }) => c.id);
}

// ---- a small network: two edge routers, a hosting and a dialing identity, one service ---------------------------

const serviceName = uniqueName('svc');
const service = await createRecord(tc.mgmt, '/services', { name: serviceName, encryptionRequired: false });
const host = await createClientUser(tc);
const dialer = await createClientUser(tc);
const near = await enrolledRouter(tc);
const far = await enrolledRouter(tc);
await createRecord(tc.mgmt, '/service-policies', { name: uniqueName('bind'), type: 'Bind', semantic: 'AnyOf', serviceRoles: [`@${service}`], identityRoles: [`@${host.id}`] });
await createRecord(tc.mgmt, '/service-policies', { name: uniqueName('dial'), type: 'Dial', semantic: 'AnyOf', serviceRoles: [`@${service}`], identityRoles: [`@${dialer.id}`] });
await createRecord(tc.mgmt, '/edge-router-policies', { name: uniqueName('erp'), semantic: 'AnyOf', edgeRouterRoles: [`@${near.id}`, `@${far.id}`], identityRoles: [`@${host.id}`, `@${dialer.id}`] });
await createRecord(tc.mgmt, '/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AnyOf', edgeRouterRoles: [`@${near.id}`, `@${far.id}`], serviceRoles: [`@${service}`] });

/** Connects an edge router and answers the edge sync's server hello as upstream routers do. */
async function synced(creds: RouterCredentials, port: number): Promise<TestRouterConnection> {
  const { conn, result } = await connectRouter(tc, creds);
  assert.equal(readBool(result.headers.get(ChannelHeader.ResultSuccess)), true);
  const hello = await conn.nextOf(EdgeContentType.ServerHello);
  const reply = message(
    EdgeContentType.ClientHello,
    encode('edge.ClientHello', {
      version: 'v2.0.0-pre3', hostname: 'router.test', protocols: ['tls'], protocolPorts: [String(port)],
      listeners: [{ address: { value: `tls:0.0.0.0:${port}`, protocol: 'tls', hostname: '0.0.0.0', port }, advertise: { value: `tls:router.test:${port}`, protocol: 'tls', hostname: 'router.test', port } }],
    }),
  );
  reply.headers.set(ChannelHeader.ReplyFor, Buffer.from(Int32Array.of(hello.sequence).buffer));
  conn.send(reply);
  return conn;
}

async function session(user: ClientUser, type: 'Dial' | 'Bind'): Promise<{ id: string; token: string }> {
  const res = await user.client.post('/sessions', { serviceId: service, type });
  assert.equal(res.status, 201, res.text);
  return { id: res.body.data.id, token: res.body.data.token };
}

async function hostTerminator(conn: TestRouterConnection, address: string): Promise<void> {
  const bind = await session(host, 'Bind');
  conn.send(message(EdgeContentType.CreateTerminatorV2Request, encode('edge.CreateTerminatorV2Request', { address, sessionToken: bind.token, apiSessionToken: host.token, cost: 0 })));
  const created = await conn.next((m) => m.contentType === EdgeContentType.CreateTerminatorV2Response && decode('edge.CreateTerminatorV2Response', m.body).terminatorId === address);
  assert.equal(decode('edge.CreateTerminatorV2Response', created.body).result, 0);
}

/** Answers a route with success, as a router that set it up does. */
function routeOk(conn: TestRouterConnection, routeMsg: ChannelMessage): void {
  const route = decode('ctrl.Route', routeMsg.body);
  const result = message(CtrlContentType.RouteResult, route.circuitId, [
    [RouteResultHeader.Attempt, uint32Value(route.attempt)],
    [RouteResultHeader.Success, Buffer.from([1])],
  ]);
  result.headers.set(ChannelHeader.ReplyFor, Buffer.from(Int32Array.of(routeMsg.sequence).buffer));
  conn.send(result);
}

/** Dials the service through `ingress`; every router of the path confirms its route. Answers the circuit id and the dial session. */
async function dial(ingress: TestRouterConnection, pathRouters: TestRouterConnection[]): Promise<{ circuitId: string; sessionId: string }> {
  const dialSession = await session(dialer, 'Dial');
  const request = ingress.send(
    message(EdgeContentType.CreateCircuitV2Request, Buffer.alloc(0), [
      [CreateCircuitV2RequestHeader.SessionToken, stringValue(dialSession.token)],
      [CreateCircuitV2RequestHeader.ApiSessionToken, stringValue(dialer.token)],
      [CreateCircuitV2RequestHeader.PeerData, byteMapValue(new Map())],
    ]),
  );
  for (const conn of pathRouters) routeOk(conn, await conn.nextOf(CtrlContentType.Route));
  const response = await ingress.replyTo(request);
  assert.equal(response.contentType, EdgeContentType.CreateCircuitV2Response, response.body.toString());
  return { circuitId: readString(response.headers.get(CreateCircuitV2ResponseHeader.CircuitId))!, sessionId: dialSession.id };
}

function routerRef(creds: RouterCredentials) {
  const id = creds.id;
  return { _links: { self: { href: `./routers/${id}` }, terminators: { href: `./routers/${id}/terminators` } }, entity: 'routers', id, name: creds.name };
}

// ---------------------------------------------------------------------------------------------------------------

describe('GET /fabric/v1/circuits with no circuits', () => {
  it('answers an empty page with the circuit filter fields', async () => {
    const body = await circuitList();
    assert.deepEqual(body.data, []);
    assert.deepEqual(body.meta.pagination, { limit: 10, offset: 0, totalCount: 0 });
    assert.deepEqual([...body.meta.filterableFields].sort(), ['clientId', 'createdAt', 'id', 'service', 'terminator', 'updatedAt']);
  });
});

describe('circuits routed through the routers', async () => {
  const nearConn = await synced(near, 3030);
  const farConn = await synced(far, 3031);
  const localTerminator = uniqueName('term-local');
  await hostTerminator(nearConn, localTerminator);
  const local = await dial(nearConn, [nearConn]);

  it('shows a circuit on one router with its path, service, terminator, client and tags', async () => {
    const body = await circuitList(`filter=${q(`id = "${local.circuitId}"`)}`);
    assert.equal(body.data.length, 1);
    const c = body.data[0];
    assert.deepEqual(c._links, {
      self: { href: `./circuits/${local.circuitId}` },
      terminators: { href: `./circuits/${local.circuitId}/terminators` },
      services: { href: `./circuits/${local.circuitId}/services` },
    });
    assert.match(c.createdAt, TIMESTAMP);
    assert.equal(c.updatedAt, c.createdAt);
    assert.equal(c.clientId, local.sessionId, 'the dialing session');
    assert.deepEqual(c.tags, { serviceId: service, clientId: dialer.id, hostId: host.id });
    assert.deepEqual(c.service, {
      _links: { self: { href: `./services/${service}` }, terminators: { href: `./services/${service}/terminators` } },
      entity: 'services', id: service, name: serviceName,
    });
    assert.deepEqual(c.terminator, { _links: { self: { href: `./terminators/${localTerminator}` } }, entity: 'terminators', id: localTerminator, name: localTerminator });
    assert.deepEqual(c.path, { links: null, nodes: [routerRef(near)] });
  });

  it('shows a circuit over a link with both routers and the link in its path', async () => {
    await hostTerminator(farConn, uniqueName('term-far'));
    // Only the far router hosts now: the local terminator goes.
    nearConn.send(message(CtrlContentType.RemoveTerminatorsRequest, encode('ctrl.RemoveTerminatorsRequest', { terminatorIds: [localTerminator] })));
    await eventually(async () => (await fabric.get(`/terminators/${localTerminator}`)).status === 404, 'the local terminator is gone');
    const linkId = uniqueName('link');
    nearConn.send(
      message(CtrlContentType.RouterLinks, encode('ctrl.RouterLinks', {
        links: [{ id: linkId, destRouterId: far.id, linkProtocol: 'tls', linkCostTags: [], dialAddress: 'tls:far.test:4022', iteration: 1 }],
        fullRefresh: true,
      })),
    );
    await eventually(async () => (await fabric.get(`/links/${linkId}`)).status === 200, 'the link is recorded');
    const remote = await dial(nearConn, [nearConn, farConn]);
    const res = await fabric.get(`/circuits/${remote.circuitId}`);
    assert.equal(res.status, 200, res.text);
    assertFabricDetail('circuitDetail', res.body);
    assert.deepEqual(res.body.data.path, {
      links: [{ _links: { self: { href: `./links/${linkId}` } }, entity: 'links', id: linkId, name: linkId }],
      nodes: [routerRef(near), routerRef(far)],
    });
    assert.deepEqual(await ids(`service = "${service}"`), [local.circuitId, remote.circuitId].sort());
  });

  it('filters on each of upstream\'s circuit fields, sorts and pages', async () => {
    const all = await ids('true');
    assert.equal(all.length, 2);
    // Both dials reused the dialer's one session for the service: both circuits have it as their client.
    assert.deepEqual(await ids(`clientId = "${local.sessionId}"`), [...all]);
    assert.deepEqual(await ids('clientId = "someone-else"'), []);
    assert.deepEqual(await ids(`terminator = "${localTerminator}"`), [local.circuitId]);
    assert.deepEqual(await ids(`id = "${local.circuitId}" and createdAt > datetime(2020-01-01T00:00:00Z) and updatedAt < datetime(2999-01-01T00:00:00Z)`), [local.circuitId]);
    const page = await circuitList(`filter=${q('true sort by createdAt desc, id')}&limit=1&offset=1`);
    assert.deepEqual(page.meta.pagination, { limit: 1, offset: 1, totalCount: 2 });
    assert.deepEqual(page.data.map((c: { id: string }) => c.id), [local.circuitId]);
    for (const filter of ['tags.serviceId = "x"', 'path = "x"', 'identity = "x"', 'service =']) {
      assertError(await fabric.get(`/circuits?filter=${q(filter)}`), 400, 'INVALID_FILTER');
    }
  });

  it('reads one circuit as the list shows it, and answers 404 for an unknown id', async () => {
    const res = await fabric.get(`/circuits/${local.circuitId}`);
    assert.equal(res.status, 200, res.text);
    assertFabricDetail('circuitDetail', res.body, NULLS);
    assert.deepEqual(res.body.data, (await circuitList(`filter=${q(`id = "${local.circuitId}"`)}`)).data[0]);
    const missing = await fabric.get('/circuits/no-such-circuit');
    assertError(missing, 404, 'NOT_FOUND');
    assert.deepEqual(missing.body.error.cause, { code: 'UNHANDLED', message: 'circuit with id no-such-circuit not found' });
  });

  it('forgets a circuit once it ends', async () => {
    nearConn.send(message(CtrlContentType.Fault, encode('ctrl.Fault', { subject: 1, id: local.circuitId })));
    await eventually(async () => (await fabric.get(`/circuits/${local.circuitId}`)).status === 404, 'the circuit is gone');
    assert.equal((await circuitList()).meta.pagination.totalCount, 1);
    nearConn.close();
    farConn.close();
    await eventually(async () => (await circuitList()).meta.pagination.totalCount === 0, 'circuits end with their routers');
  });
});

