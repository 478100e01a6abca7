/**
 * The router as the fabric API shows it (`/fabric/v1/routers`, upstream's fabric routerDetail): every row of
 * `routers`, edge and transit alike, read-only here. Filters see what upstream's base router store makes
 * public: the base fields, name, fingerprint, cost, noTraversal, disabled, and `connected` (live state:
 * whether some process holds the router's control channel now).
 */
import { Type } from '@sinclair/typebox';
import { defineResource } from '../define-resource.ts';
import { Nullable, TerminatorCost } from '../common.schema.ts';

/** The five version fields a connected router reported; upstream leaves out the empty ones. */
const FabricVersionInfo = Type.Object({
  arch: Type.Optional(Type.String()),
  buildDate: Type.Optional(Type.String()),
  os: Type.Optional(Type.String()),
  revision: Type.Optional(Type.String()),
  version: Type.Optional(Type.String()),
});

const RouterListener = Type.Object({ address: Type.String(), protocol: Type.String() });

export const fabricRouterResource = defineResource({
  entityType: 'routers',
  singular: 'router',
  permission: 'router',
  table: 'routers',
  names: { detail: 'routerDetail' },
  fields: {
    name: { schema: Type.String(), column: 'name', filter: 'string', unique: true },
    fingerprint: { schema: Nullable(Type.String()), column: 'fingerprint', filter: 'string' },
    cost: { schema: TerminatorCost, column: 'cost', kind: 'int', filter: 'int' },
    noTraversal: { schema: Type.Boolean(), column: 'no_traversal', kind: 'bool', filter: 'bool' },
    disabled: { schema: Type.Boolean(), column: 'disabled', kind: 'bool', filter: 'bool' },
  },
  computed: {
    connected: Type.Boolean(),
    // Present only while connected; null (listeners) and absent (version) otherwise, as upstream.
    listenerAddresses: Type.Unsafe<Array<{ address: string; protocol: string }> | null>({ type: ['array', 'null'], items: RouterListener }),
    versionInfo: FabricVersionInfo,
    // Upstream fills this from routers' interface reports, which no router sends to this controller yet.
    interfaces: Type.Unsafe<unknown[] | null>({ type: ['array', 'null'], items: { type: 'object', additionalProperties: true } }),
  },
  nestedLinks: ['terminators'],
  extraSymbols: {
    connected: { kind: 'scalar', type: 'bool', sql: '(CASE WHEN EXISTS (SELECT 1 FROM router_connections c WHERE c.router_id = e.id) THEN 1 ELSE 0 END)', sortable: false },
  },
});
