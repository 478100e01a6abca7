/**
 * The circuit record of the fabric API (`/fabric/v1/circuits`, upstream's circuitDetail): a route through the
 * network from a dialing SDK to a terminator, stored in `circuits` by the process that routed it. Filters see
 * upstream's circuit symbols: id, clientId (the dialer's session), service, terminator, createdAt and
 * updatedAt (a circuit is never updated, so both are its creation time).
 */
import { Type } from '@sinclair/typebox';
import type { SymbolTable } from '../../query/symbols.ts';
import { baseEntityProperties } from '../common.schema.ts';
import { FabricEntityRef } from '../fabric-ref.ts';

export const circuitSymbols: SymbolTable = {
  idSql: 'e.id',
  symbols: {
    id: { kind: 'scalar', type: 'string', sql: 'e.id' },
    clientId: { kind: 'scalar', type: 'string', sql: 'e.session_id' },
    service: { kind: 'scalar', type: 'string', sql: 'e.service_id' },
    terminator: { kind: 'scalar', type: 'string', sql: 'e.terminator_id' },
    createdAt: { kind: 'scalar', type: 'datetime', sql: 'e.created_at' },
    updatedAt: { kind: 'scalar', type: 'datetime', sql: 'e.created_at' },
  },
};

const RefList = Type.Unsafe<unknown[] | null>({ type: ['array', 'null'], items: FabricEntityRef });

export const CircuitDetail = Type.Unsafe({
  type: 'object',
  properties: {
    ...baseEntityProperties,
    clientId: Type.String(),
    // Routers from the dialer's to the host's, and the links between them (null when there are none).
    path: Type.Object({ links: RefList, nodes: RefList }),
    service: FabricEntityRef,
    terminator: FabricEntityRef,
  },
  required: ['id', 'createdAt', 'updatedAt', '_links', 'tags', 'service', 'terminator', 'path'],
});
