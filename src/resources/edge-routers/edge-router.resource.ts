/**
 * The edge router record (management seeds §2.9, upstream model §3.5): a row of `routers` with
 * `is_edge = 1`. Live state (online, sync status, hostname, protocols, version) comes from the router's
 * control channel (table `router_connections`, src/fabric). Enrollment fields are filled in by the service
 * while the router is unverified.
 */
import { Type } from '@sinclair/typebox';
import { defineResource, roleAttributesField, nameField } from '../define-resource.ts';
import { Attributes, FreeObject, Nullable, TerminatorCost } from '../common.schema.ts';

/** appData holds scalar values only (upstream refuses nested maps and lists for edge routers). */
export const ScalarMap = Type.Unsafe<Record<string, string | number | boolean | null>>({
  type: 'object',
  additionalProperties: { type: ['string', 'number', 'boolean', 'null'] },
});

/** Control-channel listeners: address → the groups it serves. */
export const CtrlChanListeners = Type.Unsafe<Record<string, string[]>>({
  type: 'object',
  additionalProperties: { type: 'array', items: { type: 'string' } },
});

export const VersionInfo = Type.Object({
  arch: Type.String(),
  buildDate: Type.String(),
  os: Type.String(),
  revision: Type.String(),
  version: Type.String(),
});

const NullableString = Nullable(Type.String());
const NullableDateTime = Type.Unsafe<string | null>({ type: ['string', 'null'], format: 'date-time' });
export const NullInterfaces = Type.Unsafe<unknown[] | null>({ type: ['array', 'null'], items: { type: 'object', additionalProperties: true } });

/** Filter symbols upstream computes from live router state: whether the router's control channel is up. */
const CONNECTED_SQL = '(CASE WHEN EXISTS (SELECT 1 FROM router_connections c WHERE c.router_id = e.id) THEN 1 ELSE 0 END)';
const liveStateSymbols = {
  connected: { kind: 'scalar' as const, type: 'bool' as const, sql: CONNECTED_SQL, sortable: false },
  online: { kind: 'scalar' as const, type: 'bool' as const, sql: CONNECTED_SQL, sortable: false },
};

export const edgeRouterResource = defineResource({
  entityType: 'edge-routers',
  singular: 'edgeRouter',
  permission: 'router',
  table: 'routers',
  names: { create: 'edgeRouterCreate', update: 'edgeRouterUpdate', patch: 'edgeRouterPatch', detail: 'edgeRouterDetail' },
  fields: {
    name: nameField(),
    isEdge: { schema: Type.Boolean(), read: false, column: 'is_edge', kind: 'bool' },
    isTunnelerEnabled: {
      schema: Type.Boolean(), column: 'is_tunneler_enabled', kind: 'bool', create: 'optional', put: 'optional', patch: true, default: false, filter: 'bool',
    },
    cost: { schema: TerminatorCost, column: 'cost', kind: 'int', create: 'optional', put: 'optional', patch: true, nullable: true, default: 0, filter: 'int' },
    noTraversal: { schema: Type.Boolean(), column: 'no_traversal', kind: 'bool', create: 'optional', put: 'optional', patch: true, nullable: true, default: false, filter: 'bool' },
    disabled: { schema: Type.Boolean(), column: 'disabled', kind: 'bool', create: 'optional', put: 'optional', patch: true, nullable: true, default: false, filter: 'bool' },
    appData: { schema: ScalarMap, read: FreeObject, column: 'app_data', kind: 'json', create: 'optional', put: 'optional', patch: true, nullable: true, default: {} },
    ctrlChanListeners: { schema: CtrlChanListeners, column: 'ctrl_chan_listeners', kind: 'json', create: 'optional', put: 'optional', patch: true, nullable: true },
    roleAttributes: { ...roleAttributesField(), read: Attributes },
    isVerified: { schema: Type.Boolean(), column: 'is_verified', kind: 'bool', filter: 'bool' },
    fingerprint: { schema: Type.String(), column: 'fingerprint', filter: 'string' },
    certPem: { schema: NullableString, column: 'cert_pem' },
    unverifiedFingerprint: { schema: NullableString, column: 'unverified_fingerprint' },
    unverifiedCertPem: { schema: NullableString, column: 'unverified_cert_pem' },
    hostname: { schema: Type.String(), column: 'hostname' },
    supportedProtocols: { schema: Type.Record(Type.String(), Type.String()), column: 'supported_protocols', kind: 'json' },
    versionInfo: { schema: VersionInfo, column: 'version_info', kind: 'json' },
  },
  attributes: { field: 'roleAttributes', table: 'router_role_attributes', ownerColumn: 'router_id', valueColumn: 'attribute' },
  computed: {
    isOnline: Type.Boolean(),
    syncStatus: Type.String(),
    enrollmentJwt: NullableString,
    enrollmentToken: NullableString,
    enrollmentCreatedAt: NullableDateTime,
    enrollmentExpiresAt: NullableDateTime,
    interfaces: NullInterfaces,
  },
  nestedLinks: ['edge-router-policies'],
  extraSymbols: liveStateSymbols,
});
