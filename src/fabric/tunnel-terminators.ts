/**
 * Terminators of edge routers' own tunnelers (`ziti router` with a `tunnel` listener, router created with
 * `isTunnelerEnabled`): the tunneler learns from the router data model which services the router's identity (a
 * `Router` identity with the router's id) may bind, and asks for a terminator of each it hosts
 * (CreateTunnelTerminatorRequestV2, answered with CreateTunnelTerminatorResponseV2, which the router matches by
 * terminator id), then may change its cost or precedence (UpdateTunnelTerminatorRequest). Removal goes through
 * the shared RemoveTerminatorsRequest.
 *
 * Checks as upstream's controller makes them (handler_edge_ctrl/create_tunnel_terminator_v2.go): the router has a
 * tunneler identity of type Router, the service exists, service policies let that identity bind it (posture
 * checks do not apply to a router), edge router policies and service edge router policies put this router
 * between them, the cost is at most 65535, and an existing terminator of that id is the same one again (this
 * router, binding `tunnel`, this identity). The terminators are stored with binding `tunnel`; like SDK
 * terminators they live as long as the router's connection (the tunneler re-establishes them when it reconnects).
 */
import type { Db } from '../store/database.ts';
import { prepare } from '../store/entity-table.ts';
import { withTransaction } from '../store/transaction.ts';
import { ChannelHeader, message, type ChannelMessage } from './channel/message.ts';
import { decode, encode } from './proto/index.ts';
import { CreateTerminatorResult, EdgeContentType, RetryHint } from './proto/edge-ctrl.ts';
import type { ControlChannel } from './channel/connection.ts';

export interface TunnelTerminatorLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface TunnelAccess {
  catchUp(): void;
  /** Whether service policies let the identity dial or bind the service (no posture checks). */
  policyPermissions(identityId: string, serviceId: string): { dial: boolean; bind: boolean };
  /** Whether edge router policies and service edge router policies put this router between them. */
  routerAllowed(identityId: string, serviceId: string, routerId: string): boolean;
}

export interface TunnelTerminatorOptions {
  db: Db;
  access: TunnelAccess;
  controllerId: string;
  log: TunnelTerminatorLog;
  now?: () => Date;
}

/** Edge error codes of the refusals (sdk-golang edge_client_pb.Error). */
const ErrorCode = { InvalidEdgeRouterForSession: 5, InvalidService: 6, TunnelingNotEnabled: 7, InvalidTerminator: 8, InvalidCost: 10 } as const;

const PRECEDENCE = ['default', 'required', 'failed'] as const;
const MAX_COST = 65535;

class Refusal extends Error {
  constructor(
    readonly code: number,
    readonly hint: number,
    message: string,
  ) {
    super(message);
  }
}

function replyTo(request: ChannelMessage, reply: ChannelMessage): ChannelMessage {
  reply.headers.set(ChannelHeader.ReplyFor, Buffer.from(Int32Array.of(request.sequence).buffer));
  return reply;
}

export function createTunnelTerminators(options: TunnelTerminatorOptions) {
  const { db, access, log } = options;
  const now = options.now ?? (() => new Date());

  function peerDataJson(map: ReadonlyMap<number, Uint8Array>): string {
    const out: Record<string, string> = {};
    for (const [k, v] of map) out[String(k)] = Buffer.from(v).toString('base64');
    return JSON.stringify(out);
  }

  /** The checks of a create, for the router's identity (its id) and the service. */
  function verify(routerId: string, serviceId: string): void {
    access.catchUp();
    const identity = prepare(db, 'SELECT type_id FROM identities WHERE id = ?').get(routerId) as { type_id: string } | undefined;
    if (!identity || identity.type_id !== 'Router') throw new Refusal(ErrorCode.TunnelingNotEnabled, RetryHint.NotRetriable, 'tunneling not enabled');
    if (!prepare(db, 'SELECT 1 FROM services WHERE id = ?').get(serviceId)) throw new Refusal(ErrorCode.InvalidService, RetryHint.NotRetriable, 'invalid service');
    if (!access.policyPermissions(routerId, serviceId).bind) throw new Refusal(ErrorCode.InvalidService, RetryHint.NotRetriable, 'invalid service');
    if (!access.routerAllowed(routerId, serviceId, routerId)) {
      throw new Refusal(ErrorCode.InvalidEdgeRouterForSession, RetryHint.StartOver, 'invalid edge router for session');
    }
  }

  function create(routerId: string, channel: ControlChannel, msg: ChannelMessage): void {
    const request = decode('edge.CreateTunnelTerminatorRequestV2', msg.body);
    const terminatorId = request.address;
    const answer = (result: number, text = '', errorCode = 0, retryHint = 0): void => {
      const body = encode('edge.CreateTunnelTerminatorResponseV2', {
        terminatorId,
        startTime: request.startTime,
        result: result as CreateTerminatorResult,
        msg: text,
        errorCode,
        retryHint,
      });
      channel.send(replyTo(msg, message(EdgeContentType.CreateTunnelTerminatorResponseV2, body)));
    };
    try {
      if (!terminatorId) throw new Refusal(ErrorCode.InvalidTerminator, RetryHint.NotRetriable, 'terminator id is required');
      verify(routerId, request.serviceId);
      if (request.cost > MAX_COST) throw new Refusal(ErrorCode.InvalidCost, RetryHint.NotRetriable, `invalid cost ${request.cost}. cost must be between 0 and ${MAX_COST} inclusive`);
    } catch (err) {
      if (!(err instanceof Refusal)) throw err;
      log.info({ routerId, terminatorId, serviceId: request.serviceId, reason: err.message }, 'tunnel terminator refused');
      return answer(err.hint === RetryHint.TooBusy ? CreateTerminatorResult.FailedBusy : CreateTerminatorResult.FailedOther, err.message, err.code, err.hint);
    }
    const at = now().toISOString();
    const stored = withTransaction(db, (tx) => {
      const existing = prepare(tx.db, 'SELECT router_id, service_id, host_id, binding FROM terminators WHERE id = ?').get(terminatorId) as
        | { router_id: string; service_id: string; host_id: string; binding: string }
        | undefined;
      if (existing) return existing.router_id === routerId && existing.binding === 'tunnel' && existing.host_id === routerId && existing.service_id === request.serviceId;
      prepare(
        tx.db,
        `INSERT INTO terminators (id, service_id, router_id, binding, address, instance_id, instance_secret, cost, precedence, host_id,
           peer_data, source_ctrl, created_at, updated_at, is_system)
         VALUES (?, ?, ?, 'tunnel', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
      ).run(
        terminatorId,
        request.serviceId,
        routerId,
        terminatorId,
        request.instanceId,
        request.instanceSecret.length > 0 ? Buffer.from(request.instanceSecret).toString('base64') : null,
        request.cost,
        PRECEDENCE[request.precedence] ?? 'default',
        routerId,
        peerDataJson(request.peerData),
        options.controllerId,
        at,
        at,
      );
      return true;
    });
    if (!stored) {
      log.info({ routerId, terminatorId }, 'tunnel terminator refused: the id belongs to another terminator');
      return answer(CreateTerminatorResult.FailedIdConflict, `terminator ${terminatorId} exists for another router, service or host`, ErrorCode.InvalidTerminator, RetryHint.NotRetriable);
    }
    log.info({ routerId, terminatorId, serviceId: request.serviceId }, 'tunnel terminator created');
    answer(CreateTerminatorResult.Success);
  }

  function update(routerId: string, channel: ControlChannel, msg: ChannelMessage): void {
    const request = decode('edge.UpdateTunnelTerminatorRequest', msg.body);
    const sets: string[] = [];
    const params: unknown[] = [];
    if (request.updateCost && request.cost <= MAX_COST) {
      sets.push('cost = ?');
      params.push(request.cost);
    }
    if (request.updatePrecedence) {
      sets.push('precedence = ?');
      params.push(PRECEDENCE[request.precedence] ?? 'default');
    }
    const found = prepare(db, "SELECT 1 FROM terminators WHERE id = ? AND router_id = ? AND binding = 'tunnel'").get(request.terminatorId);
    if (!found) {
      channel.result(msg, false, `terminator ${request.terminatorId} not found`);
      return;
    }
    if (sets.length > 0) {
      prepare(db, `UPDATE terminators SET ${sets.join(', ')}, updated_at = ? WHERE id = ? AND router_id = ?`).run(...params, now().toISOString(), request.terminatorId, routerId);
    }
    channel.send(replyTo(msg, message(EdgeContentType.UpdateTunnelTerminatorResponse)));
  }

  /** Registers the handlers on an edge router's channel. */
  function attach(router: { routerId: string; channel: ControlChannel }): void {
    const { routerId, channel } = router;
    channel.handle(EdgeContentType.CreateTunnelTerminatorRequestV2, (msg) => create(routerId, channel, msg));
    channel.handle(EdgeContentType.UpdateTunnelTerminatorRequest, (msg) => update(routerId, channel, msg));
    // Health reports of hosted services: nothing to answer (precedence changes come as updates).
    channel.handle(EdgeContentType.TunnelHealthEvent, () => undefined);
  }

  /** The router's connection is gone: so are its tunnel terminators (it re-creates them when it reconnects). */
  function routerGone(routerId: string): void {
    prepare(db, "DELETE FROM terminators WHERE router_id = ? AND binding = 'tunnel' AND is_system = 1").run(routerId);
  }

  return { attach, routerGone };
}

export type TunnelTerminators = ReturnType<typeof createTunnelTerminators>;
