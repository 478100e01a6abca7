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
 * checks do not apply to a router), and edge router policies and service edge router policies put this router
 * between them. The write itself (range of cost and precedence, an existing id being the same terminator again,
 * updates of the router's own `tunnel` terminators only) follows terminators.ts, as every terminator write does.
 * Like SDK terminators they live as long as the router's connection (the tunneler re-establishes them).
 */
import type { Store } from '../store/store.ts';
import { ChannelHeader, message, type ChannelMessage } from './channel/message.ts';
import { decode, encode } from './proto/index.ts';
import { CreateTerminatorResult, EdgeContentType, EdgeErrorCode, RetryHint } from './proto/edge-ctrl.ts';
import type { ControlChannel } from './channel/connection.ts';
import { TerminatorRefused, edgeErrorCodeOf, refusalReply, type TerminatorWrites } from './terminators.ts';

export interface TunnelTerminatorLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface TunnelAccess {
  catchUp(): void | Promise<unknown>;
  /** Whether service policies let the identity dial or bind the service (no posture checks). */
  policyPermissions(identityId: string, serviceId: string): { dial: boolean; bind: boolean } | Promise<{ dial: boolean; bind: boolean }>;
  /** Whether edge router policies and service edge router policies put this router between them. */
  routerAllowed(identityId: string, serviceId: string, routerId: string): boolean | Promise<boolean>;
}

export interface TunnelTerminatorOptions {
  store: Store;
  access: TunnelAccess;
  /** Every terminator write (src/fabric/terminators.ts). */
  terminators: TerminatorWrites;
  log: TunnelTerminatorLog;
}

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
  const { store, access, log, terminators } = options;

  /** The checks of a create, for the router's identity (its id) and the service. */
  async function verify(routerId: string, serviceId: string): Promise<void> {
    await access.catchUp();
    const identity = await store.get<{ type_id: string }>('SELECT type_id FROM identities WHERE id = ?', [routerId]);
    if (!identity || identity.type_id !== 'Router') throw new Refusal(EdgeErrorCode.TunnelingNotEnabled, RetryHint.NotRetriable, 'tunneling not enabled');
    if (!(await store.get('SELECT 1 FROM services WHERE id = ?', [serviceId]))) throw new Refusal(EdgeErrorCode.InvalidService, RetryHint.NotRetriable, 'invalid service');
    if (!(await access.policyPermissions(routerId, serviceId)).bind) throw new Refusal(EdgeErrorCode.InvalidService, RetryHint.NotRetriable, 'invalid service');
    if (!(await access.routerAllowed(routerId, serviceId, routerId))) {
      throw new Refusal(EdgeErrorCode.InvalidEdgeRouterForSession, RetryHint.StartOver, 'invalid edge router for session');
    }
  }

  async function create(routerId: string, channel: ControlChannel, msg: ChannelMessage): Promise<void> {
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
      if (!terminatorId) throw new Refusal(EdgeErrorCode.InvalidTerminator, RetryHint.NotRetriable, 'terminator id is required');
      await verify(routerId, request.serviceId);
      await terminators.createForRouter({
        id: terminatorId,
        routerId,
        binding: 'tunnel',
        serviceId: request.serviceId,
        hostId: routerId,
        instanceId: request.instanceId,
        instanceSecret: request.instanceSecret,
        cost: request.cost,
        precedence: request.precedence,
        peerData: request.peerData,
      });
    } catch (err) {
      if (err instanceof TerminatorRefused) {
        log.info({ routerId, terminatorId, serviceId: request.serviceId, reason: err.message }, 'tunnel terminator refused');
        const result = err.problem === 'id-conflict' ? CreateTerminatorResult.FailedIdConflict : CreateTerminatorResult.FailedOther;
        return answer(result, err.message, edgeErrorCodeOf(err), RetryHint.NotRetriable);
      }
      if (!(err instanceof Refusal)) throw err;
      log.info({ routerId, terminatorId, serviceId: request.serviceId, reason: err.message }, 'tunnel terminator refused');
      return answer(err.hint === RetryHint.TooBusy ? CreateTerminatorResult.FailedBusy : CreateTerminatorResult.FailedOther, err.message, err.code, err.hint);
    }
    log.info({ routerId, terminatorId, serviceId: request.serviceId }, 'tunnel terminator created');
    answer(CreateTerminatorResult.Success);
  }

  /** The tunneler changes the cost or precedence of one of its own terminators; anything else is refused. */
  async function update(routerId: string, channel: ControlChannel, msg: ChannelMessage): Promise<void> {
    const request = decode('edge.UpdateTunnelTerminatorRequest', msg.body);
    const changes = {
      ...(request.updateCost ? { cost: request.cost } : {}),
      ...(request.updatePrecedence ? { precedence: request.precedence } : {}),
    };
    try {
      await terminators.updateForRouter(routerId, 'tunnel', request.terminatorId, changes);
    } catch (err) {
      if (!(err instanceof TerminatorRefused)) throw err;
      log.warn({ routerId, terminatorId: request.terminatorId, reason: err.message }, 'tunnel terminator change refused');
      channel.send(refusalReply(msg, err));
      return;
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

  return { attach };
}

export type TunnelTerminators = ReturnType<typeof createTunnelTerminators>;
