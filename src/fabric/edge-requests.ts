/**
 * What edge routers ask of the controller for their SDKs: terminators (an SDK hosts a service) and circuits
 * (an SDK dials one), and the faults that end circuits.
 *
 * Terminators are written through terminators.ts, whose rules say what a router may ask (range, ownership):
 * they belong to the router that created them and go when it removes them, when it disconnects, and at
 * controller start (routers re-create theirs when they reconnect). Circuits are process state: routed by this
 * process over the routers it holds, along the cheapest path of the mesh to the chosen terminator.
 */
import { randomBytes } from 'node:crypto';
import type { Store } from '../store/store.ts';
import { versionedLookup } from '../store/versioned-lookup.ts';
import { createCircuitRows } from './circuit-rows.ts';
import type { ControlChannel } from './channel/connection.ts';
import {
  ChannelHeader,
  byteMapValue,
  message,
  readByteMap,
  readString,
  readStringList,
  stringMapValue,
  stringValue,
  uint32Value,
  type ChannelMessage,
} from './channel/message.ts';
import { decode, encode } from './proto/index.ts';
import { CtrlContentType, DestType, FaultSubject } from './proto/ctrl.ts';
import { CreateTerminatorResult, EdgeContentType, EdgeErrorCode, RetryHint } from './proto/edge-ctrl.ts';
import { CreateCircuitV2RequestHeader, CreateCircuitV2ResponseHeader, EdgeErrorHeader, PeerDataKey, RouteResultHeader } from './proto/header-messages.ts';
import { AccessRefused, type ServiceAccessCheck } from './service-access.ts';
import type { Mesh } from './mesh.ts';
import { cheapestPaths, type Path } from './paths.ts';
import { TerminatorStats, chooseTerminator } from './strategies.ts';
import { TerminatorRefused, edgeErrorCodeOf, refusalReply, type TerminatorWrites } from './terminators.ts';

export interface EdgeRequestLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

/** What the handlers need of the router a request came from. */
export interface RequestingRouter {
  routerId: string;
  channel: ControlChannel;
}

export interface Circuit {
  id: string;
  serviceId: string;
  identityId: string;
  apiSessionId: string;
  sessionId: string;
  terminatorId: string;
  /** Routers of the path, ingress first. */
  path: string[];
  /** Links between them, in path order. */
  links: string[];
  ingressId: string;
  egressId: string;
  createdAt: Date;
}

const ROUTE_TIMEOUT_MS = 10_000;
const CIRCUIT_ATTEMPTS = 3;
/** Peer-data keys that describe one side's addresses: never handed to the other side. */
const LOCAL_PEER_DATA = new Set([1110, 1111, 1112, 1113]);
/** RouteResult headers that are not peer data. */
const ROUTE_RESULT_OWN = new Set<number>([
  ChannelHeader.ReplyFor,
  ChannelHeader.Heartbeat,
  ChannelHeader.HeartbeatResponse,
  RouteResultHeader.Attempt,
  RouteResultHeader.Success,
  RouteResultHeader.Error,
  RouteResultHeader.ErrorCode,
]);

interface TerminatorRow {
  id: string;
  router_id: string;
  address: string;
  cost: number;
  precedence: string;
  host_id: string;
  peer_data: string;
  /** `edge` (an SDK hosts it) or `tunnel` (a router's own tunneler). */
  binding: string;
}

function newId(): string {
  return randomBytes(12).toString('base64url');
}

function peerDataOf(json: string): Map<number, Buffer> {
  const out = new Map<number, Buffer>();
  for (const [k, v] of Object.entries(JSON.parse(json) as Record<string, string>)) out.set(Number(k), Buffer.from(v, 'base64'));
  return out;
}

function unrouteMessage(circuitId: string): ChannelMessage {
  return message(CtrlContentType.Unroute, encode('ctrl.Unroute', { circuitId, now: true }));
}

/**
 * The route each router of a path gets: the dialer's router forwards between its ingress and the first link,
 * each transit router between its two links, the host's router between the last link and its egress (which
 * dials the terminator); on one router, ingress and egress meet directly.
 */
export function routeMessages(
  circuitId: string,
  attempt: number,
  path: Path,
  ingressId: string,
  egressId: string,
  destination: string,
  peerData: ReadonlyMap<number, Uint8Array>,
  tags: Record<string, string>,
  binding = 'edge',
): Array<{ routerId: string; route: ChannelMessage }> {
  const last = path.routers.length - 1;
  return path.routers.map((routerId, i) => {
    const into = i === 0 ? ingressId : path.links[i - 1]!;
    const out = i === last ? egressId : path.links[i]!;
    const forwards = [
      { srcAddress: into, dstAddress: out, dstType: i === last ? DestType.End : DestType.Link },
      { srcAddress: out, dstAddress: into, dstType: i === 0 ? DestType.Start : DestType.Link },
    ];
    if (i === last && last > 0) {
      // The host's router: from its egress back over the link, and from the link to its egress.
      forwards[0] = { srcAddress: egressId, dstAddress: into, dstType: DestType.Link };
      forwards[1] = { srcAddress: into, dstAddress: egressId, dstType: DestType.End };
    }
    const body = encode('ctrl.Route', {
      circuitId,
      attempt,
      timeout: BigInt(ROUTE_TIMEOUT_MS) * 1_000_000n,
      forwards,
      ...(i === last ? { egress: { binding, address: egressId, destination, peerData: new Map(peerData) } } : {}),
      tags,
    });
    return { routerId, route: message(CtrlContentType.Route, body) };
  });
}

export interface EdgeRequestOptions {
  store: Store;
  access: ServiceAccessCheck;
  /** Every terminator write (src/fabric/terminators.ts). */
  terminators: TerminatorWrites;
  /** This process's name: the owner of the circuit rows it writes. */
  owner: string;
  /** Routers wherever they are held, and the graph to route over. */
  mesh: Pick<Mesh, 'requestOn' | 'sendOn' | 'graph'>;
  /** A router reports a link failed. */
  onLinkFault(routerId: string, linkId: string, iteration: number): void | Promise<void>;
  /** Hands a fault to the process owning the circuit; false when it can not be reached. */
  forwardFault(owner: string, circuitId: string, reporter: string): boolean;
  log: EdgeRequestLog;
  now?: () => Date;
}

export function createEdgeRequests(options: EdgeRequestOptions) {
  const { store, log, terminators } = options;
  const now = options.now ?? (() => new Date());
  const circuits = new Map<string, Circuit>();
  const circuitRows = createCircuitRows(store);
  const stats = new TerminatorStats();
  /** A service's terminators (those of one instance, when the dialer names one), kept while no terminator changed. */
  const terminatorLookup = versionedLookup(store, ['terminators'], (key: string) => {
    const [serviceId, instanceId] = JSON.parse(key) as [string, string];
    return store.all<TerminatorRow>(
      `SELECT id, router_id, address, cost, precedence, host_id, peer_data, binding FROM terminators WHERE service_id = ? AND (CAST(? AS TEXT) = '' OR instance_id = ?)`,
      [serviceId, instanceId, instanceId],
    );
  });
  function terminatorsOf(serviceId: string, instanceId: string): Promise<readonly TerminatorRow[]> {
    return terminatorLookup(JSON.stringify([serviceId, instanceId])).then((rows) => rows ?? []);
  }

  // ---- terminators --------------------------------------------------------------------------------------------

  function terminatorResponse(request: ChannelMessage, terminatorId: string, result: number, msg = '', errorCode = 0, retryHint = 0): ChannelMessage {
    const body = encode('edge.CreateTerminatorV2Response', { terminatorId, result: result as CreateTerminatorResult, msg, errorCode, retryHint });
    const reply = message(EdgeContentType.CreateTerminatorV2Response, body);
    reply.headers.set(ChannelHeader.ReplyFor, Buffer.from(Int32Array.of(request.sequence).buffer));
    return reply;
  }

  async function createTerminator(router: RequestingRouter, msg: ChannelMessage): Promise<void> {
    const request = decode('edge.CreateTerminatorV2Request', msg.body);
    const terminatorId = request.address;
    const answer = (result: number, text = '', code = 0, hint = 0): void => {
      router.channel.send(terminatorResponse(msg, terminatorId, result, text, code, hint));
    };
    if (!terminatorId) return answer(CreateTerminatorResult.FailedOther, 'terminator id is required', EdgeErrorCode.InvalidTerminator, RetryHint.NotRetriable);
    let granted;
    try {
      granted = await options.access.check(router.routerId, request.apiSessionToken, request.sessionToken, 'Bind');
    } catch (err) {
      if (!(err instanceof AccessRefused)) throw err;
      log.info({ routerId: router.routerId, terminatorId, reason: err.message }, 'terminator refused');
      return answer(CreateTerminatorResult.FailedInvalidSession, err.message, err.code, RetryHint.NotRetriable);
    }
    try {
      await terminators.createForRouter({
        id: terminatorId,
        routerId: router.routerId,
        binding: 'edge',
        serviceId: granted.serviceId,
        hostId: granted.identityId,
        instanceId: request.instanceId,
        instanceSecret: request.instanceSecret,
        cost: request.cost,
        precedence: request.precedence,
        peerData: request.peerData,
      });
    } catch (err) {
      if (!(err instanceof TerminatorRefused)) throw err;
      log.info({ routerId: router.routerId, terminatorId, reason: err.message }, 'terminator refused');
      if (err.problem === 'id-conflict') return answer(CreateTerminatorResult.FailedIdConflict, err.message, EdgeErrorCode.InvalidTerminator, RetryHint.StartOver);
      return answer(CreateTerminatorResult.FailedOther, err.message, edgeErrorCodeOf(err), RetryHint.NotRetriable);
    }
    log.info({ routerId: router.routerId, terminatorId, serviceId: granted.serviceId }, 'terminator created');
    answer(CreateTerminatorResult.Success);
  }

  /** The shared batch removal (SDK unbinds, tunnelers' services gone): only terminators the router created go. */
  async function removeTerminators(router: RequestingRouter, msg: ChannelMessage): Promise<void> {
    const { terminatorIds } = decode('ctrl.RemoveTerminatorsRequest', msg.body);
    const { removed, refused } = await terminators.removeBatchForRouter(router.routerId, terminatorIds);
    if (refused.length > 0) log.warn({ routerId: router.routerId, terminatorIds: refused }, 'router asked to remove terminators it did not create: refused');
    if (removed.length > 0) log.info({ routerId: router.routerId, terminatorIds: removed }, 'terminators removed');
    router.channel.result(msg, true);
  }

  /** Runs a router's update or remove of one terminator; a refusal is answered with an edge error. */
  async function ownTerminatorWrite(router: RequestingRouter, msg: ChannelMessage, terminatorId: string, write: () => Promise<void>): Promise<boolean> {
    try {
      await write();
      return true;
    } catch (err) {
      if (!(err instanceof TerminatorRefused)) throw err;
      log.warn({ routerId: router.routerId, terminatorId, reason: err.message }, 'terminator change refused');
      router.channel.send(refusalReply(msg, err));
      return false;
    }
  }

  async function removeEdgeTerminator(router: RequestingRouter, msg: ChannelMessage): Promise<void> {
    const { terminatorId } = decode('edge.RemoveTerminatorRequest', msg.body);
    if (await ownTerminatorWrite(router, msg, terminatorId, () => terminators.removeForRouter(router.routerId, 'edge', terminatorId))) router.channel.result(msg, true);
  }

  async function updateTerminator(router: RequestingRouter, msg: ChannelMessage): Promise<void> {
    const request = decode('edge.UpdateTerminatorRequest', msg.body);
    const update = {
      ...(request.updateCost ? { cost: request.cost } : {}),
      ...(request.updatePrecedence ? { precedence: request.precedence } : {}),
    };
    if (await ownTerminatorWrite(router, msg, request.terminatorId, () => terminators.updateForRouter(router.routerId, 'edge', request.terminatorId, update))) {
      router.channel.result(msg, true);
    }
  }

  /** A router went away: the terminators it created (SDKs', its tunneler's) and the circuits through it go with it. */
  async function routerGone(routerId: string): Promise<void> {
    await terminators.routerGone(routerId);
    await store.writeRuntime((tx) => tx.run('DELETE FROM identity_router_connections WHERE router_id = ?', [routerId]));
    await endCircuitsWhere((circuit) => circuit.path.includes(routerId), `router ${routerId} disconnected`);
  }

  // ---- circuits -----------------------------------------------------------------------------------------------

  function circuitError(request: ChannelMessage, code: number, text: string, circuitId?: string): ChannelMessage {
    const reply = message(EdgeContentType.Error, text, [[EdgeErrorHeader.ErrorCode, uint32Value(code)]]);
    if (circuitId) reply.headers.set(EdgeErrorHeader.CircuitId, stringValue(circuitId));
    reply.headers.set(ChannelHeader.ReplyFor, Buffer.from(Int32Array.of(request.sequence).buffer));
    return reply;
  }

  async function createCircuit(router: RequestingRouter, msg: ChannelMessage): Promise<void> {
    const started = Date.now();
    const sessionToken = readString(msg.headers.get(CreateCircuitV2RequestHeader.SessionToken));
    const apiSessionToken = readString(msg.headers.get(CreateCircuitV2RequestHeader.ApiSessionToken)) ?? '';
    const instanceId = readString(msg.headers.get(CreateCircuitV2RequestHeader.TerminatorInstanceId)) ?? '';
    const peerData = readByteMap(msg.headers.get(CreateCircuitV2RequestHeader.PeerData)) ?? new Map<number, Buffer>();
    readStringList(msg.headers.get(CreateCircuitV2RequestHeader.Fingerprints));
    const fail = (code: number, text: string, circuitId?: string): void => {
      log.info({ routerId: router.routerId, reason: text }, 'circuit refused');
      router.channel.send(circuitError(msg, code, text, circuitId));
    };
    if (!sessionToken) return fail(EdgeErrorCode.InvalidSession, 'no session token');
    let granted;
    try {
      granted = await options.access.check(router.routerId, apiSessionToken, sessionToken, 'Dial');
    } catch (err) {
      if (err instanceof AccessRefused) return fail(err.code, err.message);
      throw err;
    }
    if (granted.encryptionRequired && !peerData.has(PeerDataKey.PublicKey)) {
      return fail(EdgeErrorCode.EncryptionDataMissing, 'encryption required on service, initiator did not send public key');
    }

    const tried = new Set<string>();
    const circuitId = newId();
    for (let attempt = 0; attempt < CIRCUIT_ATTEMPTS; attempt++) {
      const { routers, links } = await options.mesh.graph();
      const paths = cheapestPaths(router.routerId, routers, links);
      const candidates = (await terminatorsOf(granted.serviceId, instanceId))
        .filter((t) => !tried.has(t.id) && paths.has(t.router_id))
        .map((t) => ({ ...t, pathCost: paths.get(t.router_id)!.cost }));
      const stickyToken = peerData.get(PeerDataKey.XtStickinessToken)?.toString('utf8');
      const choice = chooseTerminator(granted.terminatorStrategy, candidates, { stats, ...(stickyToken ? { stickyToken } : {}) });
      const terminator = choice?.terminator;
      if (!terminator) {
        return fail(EdgeErrorCode.InvalidTerminator, tried.size > 0 ? `no terminator of service ${granted.serviceId} answered` : `service ${granted.serviceId} has no terminators reachable from this router`, circuitId);
      }
      tried.add(terminator.id);
      const path = paths.get(terminator.router_id)!;
      const ingressId = newId();
      const egressId = newId();
      const tags = { serviceId: granted.serviceId, clientId: granted.identityId, hostId: terminator.host_id };
      const routes = routeMessages(circuitId, attempt, path, ingressId, egressId, terminator.address, peerData, tags, terminator.binding);
      const results = await Promise.allSettled(routes.map(({ routerId, route }) => options.mesh.requestOn(routerId, route, ROUTE_TIMEOUT_MS)));
      const failure = results.findIndex((r) => r.status === 'rejected' || !r.value.headers.has(RouteResultHeader.Success));
      if (failure >= 0) {
        const r = results[failure]!;
        const reason = r.status === 'rejected' ? (r.reason as Error).message : (readString(r.value.headers.get(RouteResultHeader.Error)) ?? 'route refused');
        const code = r.status === 'fulfilled' ? (r.value.headers.get(RouteResultHeader.ErrorCode)?.[0] ?? 0) : 0;
        log.info({ circuitId, routerId: routes[failure]!.routerId, terminatorId: terminator.id, reason, code }, 'route failed');
        // Code 1 at the egress: the router does not know the terminator (its host went away): forget it.
        if (code === 1 && failure === routes.length - 1) await terminators.unknownAtRouter(terminator.router_id, terminator.id);
        stats.failed(terminator.id);
        for (const { routerId } of routes) await options.mesh.sendOn(routerId, unrouteMessage(circuitId));
        continue;
      }
      const result = (results[results.length - 1] as PromiseFulfilledResult<ChannelMessage>).value;
      const circuit: Circuit = {
        id: circuitId,
        serviceId: granted.serviceId,
        identityId: granted.identityId,
        apiSessionId: granted.apiSessionId,
        sessionId: granted.sessionId,
        terminatorId: terminator.id,
        path: path.routers,
        links: path.links,
        ingressId,
        egressId,
        createdAt: now(),
      };
      circuits.set(circuitId, circuit);
      stats.succeeded(terminator.id);
      stats.circuitOpened(terminator.id);
      // A runtime row (store.ts), written in a batch with those of other circuits (circuit-rows.ts).
      await circuitRows.insert({ ...circuit, owner: options.owner });
      const answerPeerData = peerDataOf(terminator.peer_data);
      for (const [key, value] of result.headers) if (!ROUTE_RESULT_OWN.has(key) && key > ChannelHeader.IsFirstGroupConnection) answerPeerData.set(key, value);
      for (const key of LOCAL_PEER_DATA) answerPeerData.delete(key);
      if (choice.stickyToken) answerPeerData.set(PeerDataKey.XtStickinessToken, Buffer.from(choice.stickyToken, 'utf8'));
      const reply = message(EdgeContentType.CreateCircuitV2Response, Buffer.alloc(0), [
        [CreateCircuitV2ResponseHeader.CircuitId, stringValue(circuitId)],
        [CreateCircuitV2ResponseHeader.Address, stringValue(ingressId)],
        [CreateCircuitV2ResponseHeader.PeerData, byteMapValue(answerPeerData)],
        [CreateCircuitV2ResponseHeader.Tags, stringMapValue(tags)],
      ]);
      reply.headers.set(ChannelHeader.ReplyFor, Buffer.from(Int32Array.of(msg.sequence).buffer));
      router.channel.send(reply);
      log.info({ circuitId, serviceId: granted.serviceId, path: path.routers, ms: Date.now() - started }, 'circuit created');
      return;
    }
    fail(EdgeErrorCode.InvalidTerminator, `no terminator of service ${granted.serviceId} answered`, circuitId);
  }

  /** Ends a circuit this process holds (once: a circuit already ended is left alone). */
  async function endCircuit(circuit: Circuit, reason: string, except?: string): Promise<void> {
    if (circuits.get(circuit.id) !== circuit) return;
    circuits.delete(circuit.id);
    stats.circuitClosed(circuit.terminatorId);
    // Not waited for: a fault is handled in its channel's order, and the row's removal (batched with others) would hold
    // up that router's next messages by a store round trip each.
    void circuitRows.remove(circuit.id).catch((err: Error) => log.warn({ circuitId: circuit.id, err: err.message }, 'could not remove the row of an ended circuit'));
    for (const routerId of circuit.path) if (routerId !== except) await options.mesh.sendOn(routerId, unrouteMessage(circuit.id));
    log.info({ circuitId: circuit.id, reason }, 'circuit ended');
  }

  /** A circuit this process does not own ended at one of its routers: its owner ends it. */
  async function forwardFault(circuitId: string, reporter: string): Promise<boolean> {
    const owner = await store.value<string>('SELECT owner FROM circuits WHERE id = ?', [circuitId]);
    return owner !== undefined && options.forwardFault(owner, circuitId, reporter);
  }

  /** Another process reports that a circuit of this one ended at one of its routers. */
  async function remoteFault(circuitId: string, reporter: string): Promise<void> {
    const circuit = circuits.get(circuitId);
    if (circuit) await endCircuit(circuit, 'ended at a router of its path', reporter);
  }

  async function fault(router: RequestingRouter, msg: ChannelMessage): Promise<void> {
    const f = decode('ctrl.Fault', msg.body);
    if (f.subject === FaultSubject.LinkFault || f.subject === FaultSubject.LinkDuplicate) {
      await options.onLinkFault(router.routerId, f.id, f.iteration);
    } else if (f.subject === FaultSubject.IngressFault || f.subject === FaultSubject.EgressFault) {
      const circuit = circuits.get(f.id);
      if (circuit) await endCircuit(circuit, f.subject === FaultSubject.IngressFault ? 'ingress closed' : 'egress closed', router.routerId);
      else await forwardFault(f.id, router.routerId);
    } else if (f.subject === FaultSubject.ForwardFault || f.subject === FaultSubject.UnknownOwnerForwardFault) {
      for (const id of f.id.split(' ').filter(Boolean)) {
        const circuit = circuits.get(id);
        if (circuit) await endCircuit(circuit, 'forwarding entry lost');
        else if (!(await forwardFault(id, router.routerId))) router.channel.send(unrouteMessage(id));
      }
    }
  }

  /** Routers list circuits idle for a while: any this controller does not know is removed from them. */
  async function confirmCircuits(router: RequestingRouter, msg: ChannelMessage): Promise<void> {
    const { circuitIds } = decode('ctrl.CircuitConfirmation', msg.body);
    for (const id of circuitIds) {
      if (!circuits.has(id) && !(await store.get('SELECT 1 FROM circuits WHERE id = ?', [id]))) router.channel.send(unrouteMessage(id));
    }
  }

  /** A route result nobody waits for (a late one): the circuit it names is unknown, so the router drops it. */
  async function strayRouteResult(router: RequestingRouter, msg: ChannelMessage): Promise<void> {
    const circuitId = msg.body.toString('utf8');
    if (circuitId && !circuits.has(circuitId) && !(await store.get('SELECT 1 FROM circuits WHERE id = ?', [circuitId]))) router.channel.send(unrouteMessage(circuitId));
  }

  /** Registers what every router may send about circuits and links. */
  function attach(router: RequestingRouter): void {
    const { channel } = router;
    channel.handle(CtrlContentType.Fault, (msg) => fault(router, msg));
    channel.handle(CtrlContentType.CircuitConfirmation, (msg) => confirmCircuits(router, msg));
    channel.handle(CtrlContentType.RouteResult, (msg) => strayRouteResult(router, msg));
  }

  /** Registers what an edge router asks for its SDKs. */
  function attachEdge(router: RequestingRouter): void {
    const { channel } = router;
    channel.handle(EdgeContentType.CreateTerminatorV2Request, (msg) => createTerminator(router, msg));
    channel.handle(CtrlContentType.RemoveTerminatorsRequest, (msg) => removeTerminators(router, msg));
    channel.handle(EdgeContentType.RemoveTerminatorRequest, (msg) => removeEdgeTerminator(router, msg));
    channel.handle(EdgeContentType.UpdateTerminatorRequest, (msg) => updateTerminator(router, msg));
    // Waits for routes (from this router and others): the router's later messages do not wait for it.
    channel.handle(EdgeContentType.CreateCircuitV2Request, (msg) => createCircuit(router, msg), 'concurrent');
  }

  /** Ends circuits and terminators that an identity or API session may no longer have. */
  async function endCircuitsWhere(predicate: (c: Circuit) => boolean, reason: string): Promise<void> {
    for (const circuit of [...circuits.values()].filter(predicate)) await endCircuit(circuit, reason);
  }

  return { attach, attachEdge, routerGone, remoteFault, circuits: (): ReadonlyMap<string, Circuit> => circuits, endCircuitsWhere };
}

export type EdgeRequests = ReturnType<typeof createEdgeRequests>;
