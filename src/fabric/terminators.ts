/**
 * Every write of a terminator goes through this module, whichever path asks for it: the REST APIs (the
 * management terminator service calls the rule checks from its hooks), an SDK's bind through an edge router
 * (edge-requests.ts) and a router's own tunneler (tunnel-terminators.ts). One set of rules:
 *
 * - Range. A cost is an integer 0..65535 (upstream's uint16), a precedence one of `default`, `required`,
 *   `failed` (on the wire: 0, 1, 2). Anything else is refused with `TerminatorRefused` (problem `cost` or
 *   `precedence`), never clamped and never defaulted; the REST side answers 400 COULD_NOT_VALIDATE naming the
 *   field, a router gets upstream's edge error (InvalidCost, InvalidPrecedence; not retriable).
 * - Ownership. A terminator a router created (binding `edge` for an SDK's bind, `tunnel` for its tunneler) is
 *   a system record (`is_system = 1`) and its `router_id` is the router that created it: REST can not change
 *   either. Only that router may update or remove it, and only under the binding it was created with; a
 *   router naming another router's terminator or a REST-created one (never a system record) is refused.
 * - REST on router-created terminators follows upstream's terminator store: an update (PUT or PATCH) is
 *   refused with 400 ENTITY_CAN_NOT_BE_UPDATED (the store's system-entity constraint, which the REST update
 *   runs into in a non-system context), a delete is allowed (the store deletes terminators in a system
 *   context); the router that created it learns of it when a dial to it fails.
 * - Cleanups (the router's connection ends, the process that held it died, controller start, a dial the
 *   router answers with "unknown terminator") remove router-created terminators only: `ROUTER_CREATED`.
 */
import type { Sql, Store } from '../store/store.ts';
import { ApiError, fieldError } from '../errors.ts';
import { ChannelHeader, message, uint32Value, type ChannelMessage } from './channel/message.ts';
import { EdgeContentType, EdgeErrorCode, RetryHint } from './proto/edge-ctrl.ts';
import { EdgeErrorHeader } from './proto/header-messages.ts';

export const TERMINATOR_COST_MAX = 65535;
/** Precedence names, in the order of the wire enum (edge_ctrl TerminatorPrecedence). */
export const TERMINATOR_PRECEDENCES = ['default', 'required', 'failed'] as const;
export type PrecedenceName = (typeof TERMINATOR_PRECEDENCES)[number];
export type RouterBinding = 'edge' | 'tunnel';

/** SQL condition (on the terminators table, unqualified) of the terminators routers created. */
export const ROUTER_CREATED = 'is_system = 1';

export type TerminatorProblem = 'cost' | 'precedence' | 'not-found' | 'not-owned' | 'binding' | 'id-conflict';

/** A write the rules refuse; `field` and `value` name the offending input of a range refusal. */
export class TerminatorRefused extends Error {
  override readonly name = 'TerminatorRefused';
  constructor(
    readonly problem: TerminatorProblem,
    message: string,
    readonly field?: 'cost' | 'precedence',
    readonly value?: unknown,
  ) {
    super(message);
  }
}

export function checkCost(cost: unknown): number {
  if (typeof cost === 'number' && Number.isInteger(cost) && cost >= 0 && cost <= TERMINATOR_COST_MAX) return cost;
  throw new TerminatorRefused('cost', `invalid cost ${String(cost)}. cost must be between 0 and ${TERMINATOR_COST_MAX} inclusive`, 'cost', cost);
}

export function checkPrecedence(name: unknown): PrecedenceName {
  if (typeof name === 'string' && (TERMINATOR_PRECEDENCES as readonly string[]).includes(name)) return name as PrecedenceName;
  throw new TerminatorRefused('precedence', `invalid precedence: ${String(name)}. precedence must be one of ${TERMINATOR_PRECEDENCES.join(', ')}`, 'precedence', name);
}

/** A precedence as routers send it (the wire enum). */
export function precedenceFromWire(value: number): PrecedenceName {
  const name = TERMINATOR_PRECEDENCES[value];
  if (name === undefined) throw new TerminatorRefused('precedence', `invalid precedence: ${value}`, 'precedence', value);
  return name;
}

/** The edge error code a router is answered with for a refusal (upstream's, all of them not retriable). */
export function edgeErrorCodeOf(err: TerminatorRefused): number {
  if (err.problem === 'cost') return EdgeErrorCode.InvalidCost;
  if (err.problem === 'precedence') return EdgeErrorCode.InvalidPrecedence;
  return EdgeErrorCode.InvalidTerminator;
}

/** Upstream's answer to an update or remove it refuses: an edge Error replying to the request. */
export function refusalReply(request: ChannelMessage, err: TerminatorRefused): ChannelMessage {
  const reply = message(EdgeContentType.Error, err.message, [
    [EdgeErrorHeader.ErrorCode, uint32Value(edgeErrorCodeOf(err))],
    [EdgeErrorHeader.RetryHint, uint32Value(RetryHint.NotRetriable)],
  ]);
  reply.headers.set(ChannelHeader.ReplyFor, Buffer.from(Int32Array.of(request.sequence).buffer));
  return reply;
}

// ---- REST ------------------------------------------------------------------------------------------------------

function restError(err: unknown): unknown {
  return err instanceof TerminatorRefused && err.field ? fieldError(err.field, err.message, err.value) : err;
}

/** The range rules on a REST create (values as the request means them, defaults applied). */
export function checkRestCreate(values: { cost?: unknown; precedence?: unknown }): void {
  try {
    if (values.cost !== undefined) checkCost(values.cost);
    if (values.precedence !== undefined) checkPrecedence(values.precedence);
  } catch (err) {
    throw restError(err);
  }
}

/** A REST update (PUT or PATCH) of a stored terminator: never of a router-created one, and in range. */
export function checkRestUpdate(existing: { id?: unknown; isSystem?: unknown }, changes: { cost?: unknown; precedence?: unknown }): void {
  if (existing.isSystem === true) {
    throw new ApiError('ENTITY_CAN_NOT_BE_UPDATED', {
      cause: { code: 'UNHANDLED', message: `cannot update system terminator in a non-system context (id=${String(existing.id)})` },
    });
  }
  checkRestCreate(changes);
}

// ---- routers ---------------------------------------------------------------------------------------------------

/** What a router asks to create: an SDK's bind (`edge`) or its tunneler's (`tunnel`), checked for access already. */
export interface RouterTerminatorRequest {
  id: string;
  routerId: string;
  binding: RouterBinding;
  serviceId: string;
  /** The identity hosting it: the SDK's, or the router's own for its tunneler. */
  hostId: string;
  instanceId: string;
  instanceSecret: Uint8Array;
  /** As sent: checked here. */
  cost: number;
  /** The wire enum, as sent: checked here. */
  precedence: number;
  peerData: ReadonlyMap<number, Uint8Array>;
}

/** A router's change of one of its terminators (only the fields it asks to change). */
export interface RouterTerminatorUpdate {
  cost?: number;
  /** The wire enum. */
  precedence?: number;
}

function peerDataJson(map: ReadonlyMap<number, Uint8Array>): string {
  const out: Record<string, string> = {};
  for (const [k, v] of map) out[String(k)] = Buffer.from(v).toString('base64');
  return JSON.stringify(out);
}

interface OwnedRow {
  router_id: string;
  service_id: string;
  host_id: string;
  binding: string;
  is_system: number;
  cost: number;
  precedence: string;
}

export function createTerminatorWrites(options: { store: Store; controllerId: string; now?: () => Date }) {
  const { store } = options;
  const now = options.now ?? (() => new Date());

  function read(q: Sql, id: string): Promise<OwnedRow | undefined> {
    return q.get<OwnedRow>('SELECT router_id, service_id, host_id, binding, is_system, cost, precedence FROM terminators WHERE id = ?', [id]);
  }

  /** The terminator `id`, if `routerId` created it under `binding`; refused otherwise. */
  async function owned(q: Sql, routerId: string, binding: RouterBinding, id: string): Promise<OwnedRow> {
    const row = await read(q, id);
    if (!row) throw new TerminatorRefused('not-found', `invalid terminator: ${id} not found`);
    if (row.is_system !== 1 || row.router_id !== routerId) {
      const whose = row.is_system === 1 ? `router ${row.router_id}` : 'the management API';
      throw new TerminatorRefused('not-owned', `terminator ${id} was created by ${whose}, not by router ${routerId}`);
    }
    if (row.binding !== binding) throw new TerminatorRefused('binding', `can't operate on terminator ${id} with binding ${row.binding}, expected ${binding}`);
    return row;
  }

  /**
   * A router's create. The same terminator sent again (a router re-sends its terminators after reconnecting)
   * is accepted and takes the cost and precedence of the request, as upstream's; an id held by anything else
   * (another router, binding, service or host, or a REST-created terminator) is refused.
   */
  async function createForRouter(request: RouterTerminatorRequest): Promise<'created' | 'existing'> {
    const cost = checkCost(request.cost);
    const precedence = precedenceFromWire(request.precedence);
    const at = now().toISOString();
    return store.write(async (tx) => {
      const existing = await read(tx, request.id);
      if (existing) {
        const same = existing.is_system === 1 && existing.router_id === request.routerId && existing.binding === request.binding
          && existing.service_id === request.serviceId && existing.host_id === request.hostId;
        if (!same) throw new TerminatorRefused('id-conflict', `terminator ${request.id} exists for another router, binding, service or host`);
        if (existing.cost !== cost || existing.precedence !== precedence) {
          await tx.run('UPDATE terminators SET cost = ?, precedence = ?, updated_at = ? WHERE id = ?', [cost, precedence, at, request.id]);
        }
        return 'existing';
      }
      await tx.run(
        `INSERT INTO terminators (id, service_id, router_id, binding, address, instance_id, instance_secret, cost, precedence, host_id,
           peer_data, source_ctrl, created_at, updated_at, is_system)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
        [
          request.id,
          request.serviceId,
          request.routerId,
          request.binding,
          request.id,
          request.instanceId,
          request.instanceSecret.length > 0 ? Buffer.from(request.instanceSecret).toString('base64') : null,
          cost,
          precedence,
          request.hostId,
          peerDataJson(request.peerData),
          options.controllerId,
          at,
          at,
        ],
      );
      return 'created';
    });
  }

  /** A router changes the cost or precedence of a terminator it created (under `binding`). */
  async function updateForRouter(routerId: string, binding: RouterBinding, id: string, update: RouterTerminatorUpdate): Promise<void> {
    const cost = update.cost === undefined ? undefined : checkCost(update.cost);
    const precedence = update.precedence === undefined ? undefined : precedenceFromWire(update.precedence);
    await store.write(async (tx) => {
      const row = await owned(tx, routerId, binding, id);
      const next = { cost: cost ?? row.cost, precedence: precedence ?? row.precedence };
      if (next.cost === row.cost && next.precedence === row.precedence) return;
      await tx.run('UPDATE terminators SET cost = ?, precedence = ?, updated_at = ? WHERE id = ?', [next.cost, next.precedence, now().toISOString(), id]);
    });
  }

  /** A router removes one terminator it created (under `binding`). */
  async function removeForRouter(routerId: string, binding: RouterBinding, id: string): Promise<void> {
    await store.write(async (tx) => {
      await owned(tx, routerId, binding, id);
      await tx.run('DELETE FROM terminators WHERE id = ?', [id]);
    });
  }

  /**
   * A router removes a batch (any binding): the ones it created go; ids of terminators it did not create are
   * refused and kept, and absent ids are nothing to do (as upstream's, which answers the batch with success
   * either way: the router re-queues a failed batch for ever).
   */
  async function removeBatchForRouter(routerId: string, ids: readonly string[]): Promise<{ removed: string[]; refused: string[] }> {
    const removed: string[] = [];
    const refused: string[] = [];
    await store.write(async (tx) => {
      for (const id of ids) {
        const row = await read(tx, id);
        if (!row) continue;
        if (row.is_system !== 1 || row.router_id !== routerId) {
          refused.push(id);
          continue;
        }
        await tx.run('DELETE FROM terminators WHERE id = ?', [id]);
        removed.push(id);
      }
    });
    return { removed, refused };
  }

  /** A router's connection ended: the terminators it created go (it re-creates them when it reconnects). */
  async function routerGone(routerId: string): Promise<number> {
    return (await store.write((tx) => tx.run(`DELETE FROM terminators WHERE router_id = ? AND ${ROUTER_CREATED}`, [routerId]))).changes;
  }

  /** A dial failed because the terminator's router no longer knows it: forgotten, if that router created it. */
  async function unknownAtRouter(routerId: string, id: string): Promise<boolean> {
    return (await store.write((tx) => tx.run(`DELETE FROM terminators WHERE id = ? AND router_id = ? AND ${ROUTER_CREATED}`, [id, routerId]))).changes > 0;
  }

  return { createForRouter, updateForRouter, removeForRouter, removeBatchForRouter, routerGone, unknownAtRouter };
}

export type TerminatorWrites = ReturnType<typeof createTerminatorWrites>;
