/**
 * The link record of the fabric API (`/fabric/v1/links`, upstream's linkDetail): a connection between two
 * routers as the router that dialed it reported it, stored in `links` by the process holding that router.
 * Unlike the other records it has no base fields (no `_links`, times or tags). Filters see upstream's link
 * symbols; latencies are not measured here yet, so both read as 0.
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
    destLatency: { kind: 'scalar', type: 'int', sql: '0', sortable: false },
    sourceLatency: { kind: 'scalar', type: 'int', sql: '0', sortable: false },
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
