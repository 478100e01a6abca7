/**
 * The link record of the fabric API (`/fabric/v1/links`, upstream's linkDetail): a connection between two
 * routers as the router that dialed it reported it, stored in `links` by the process holding that router.
 * Unlike the other records it has no base fields (no `_links`, times or tags). Filters see upstream's link
 * symbols. Latencies are what each end's router last reported (nanoseconds; the initial latency until then).
 * Operators may patch a link's static cost and whether it is down, as upstream's `linkPatch`.
 */
import { Type } from '@sinclair/typebox';
import type { SymbolTable } from '../../query/symbols.ts';
import { FabricEntityRef } from '../fabric-ref.ts';

export const linkSymbols: SymbolTable = {
  idSql: 'e.id',
  symbols: {
    id: { kind: 'scalar', type: 'string', sql: 'e.id' },
    protocol: { kind: 'scalar', type: 'string', sql: 'e.protocol' },
    dialAddress: { kind: 'scalar', type: 'string', sql: 'e.dial_address' },
    sourceRouter: { kind: 'scalar', type: 'string', sql: 'e.src_router_id' },
    destRouter: { kind: 'scalar', type: 'string', sql: 'e.dst_router_id' },
    cost: { kind: 'scalar', type: 'int', sql: 'e.cost' },
    staticCost: { kind: 'scalar', type: 'int', sql: 'e.static_cost' },
    destLatency: { kind: 'scalar', type: 'int', sql: 'e.dst_latency' },
    sourceLatency: { kind: 'scalar', type: 'int', sql: 'e.src_latency' },
    state: { kind: 'scalar', type: 'string', sql: 'e.state' },
    iteration: { kind: 'scalar', type: 'int', sql: 'e.iteration' },
  },
};

const LinkConnection = Type.Object({
  dest: Type.Optional(Type.String()),
  source: Type.Optional(Type.String()),
  type: Type.Optional(Type.String()),
});

export const LinkDetail = Type.Object({
  connections: Type.Unsafe<Array<Record<string, string>> | null>({ type: ['array', 'null'], items: LinkConnection }),
  cost: Type.Integer(),
  destLatency: Type.Integer(),
  destRouter: FabricEntityRef,
  down: Type.Boolean(),
  id: Type.String(),
  iteration: Type.Integer(),
  protocol: Type.String(),
  sourceLatency: Type.Integer(),
  sourceRouter: FabricEntityRef,
  state: Type.String(),
  staticCost: Type.Integer(),
});

/** A link's static cost: what path selection adds to the measured latency (never negative). */
const StaticCost = Type.Integer({ minimum: 0, maximum: 2147483647 });

/** Upstream's linkPatch: the supplied fields change, an absent or null one stays. */
export const LinkPatch = Type.Unsafe<{ down?: boolean | null; staticCost?: number | null }>({
  type: 'object',
  title: 'LinkPatch',
  properties: {
    down: { type: ['boolean', 'null'] },
    staticCost: { ...StaticCost, type: ['integer', 'null'] },
  },
});
