/**
 * Session read models and filter symbols. A session (upstream's "edge session") grants one API session
 * the right to dial or bind one service; it is created only by the client API's `POST /sessions`, so it
 * has no create/put/patch schemas and is not declared with defineResource().
 *
 * Also the edge-router views a client sees: the router entries of a session and of
 * `GET /services/{id}/edge-routers` (commonEdgeRouterProperties), and the detail entries of
 * `GET /current-identity/edge-routers` (base fields plus the same properties).
 */
import { Type } from '@sinclair/typebox';
import { ApiSessionRef, EntityRef, Nullable, TagsNullable, baseEntityProperties } from '../common.schema.ts';
import type { SymbolTable } from '../../query/symbols.ts';
import { baseSymbols } from '../define-resource.ts';

export const DialBind = Type.Unsafe<'Dial' | 'Bind' | 'Invalid'>({ type: 'string', enum: ['Dial', 'Bind', 'Invalid'] });

export const SessionCreate = Type.Unsafe<{ serviceId?: string; type?: string; tags?: Record<string, unknown> | null }>({
  type: ['object', 'null'],
  properties: {
    serviceId: { type: 'string' },
    tags: TagsNullable,
    type: DialBind,
  },
});

const ProtocolMap = Type.Record(Type.String(), Type.String());

const commonEdgeRouterProps = {
  cost: Nullable(Type.Integer({ minimum: 0, maximum: 65535 })),
  disabled: Type.Boolean(),
  hostname: Type.String(),
  isOnline: Type.Boolean(),
  name: Type.String(),
  noTraversal: Nullable(Type.Boolean()),
  supportedProtocols: ProtocolMap,
  syncStatus: Type.String(),
};

/** commonEdgeRouterProperties: what `GET /services/{id}/edge-routers` lists. */
export const commonEdgeRouter = Type.Object(commonEdgeRouterProps);

/** sessionEdgeRouter: the common properties plus the deprecated `urls` (same map as supportedProtocols). */
export const sessionEdgeRouter = Type.Object({ ...commonEdgeRouterProps, urls: ProtocolMap });

/** currentIdentityEdgeRouterDetail: base fields plus the common properties. */
export const currentIdentityEdgeRouter = Type.Object({ ...baseEntityProperties, ...commonEdgeRouterProps });

export const serviceEdgeRouters = Type.Object({ edgeRouters: Type.Array(commonEdgeRouter) });

const sessionProps = {
  ...baseEntityProperties,
  apiSession: ApiSessionRef,
  apiSessionId: Type.String(),
  edgeRouters: Type.Array(sessionEdgeRouter),
  identityId: Type.String(),
  service: EntityRef,
  serviceId: Type.String(),
  token: Type.String(),
  type: DialBind,
};

/** sessionDetail (client create response). */
export const sessionDetail = Type.Object(sessionProps);

/** sessionManagementDetail: lists and details on both APIs (adds the granting service policies). */
export const sessionManagementDetail = Type.Object({ ...sessionProps, servicePolicies: Type.Array(EntityRef) });

export const sessionRoutePath = Type.Object({ routePath: Type.Array(Type.String()) });

export const serviceUpdates = Type.Object({ lastChangeAt: Type.String({ format: 'date-time' }) });

export const sessionSymbols: SymbolTable = {
  idSql: 'e.id',
  symbols: {
    ...baseSymbols(),
    apiSession: { kind: 'scalar', type: 'string', sql: 'e.api_session_id' },
    identity: { kind: 'scalar', type: 'string', sql: 'e.identity_id', advertised: false },
    service: { kind: 'scalar', type: 'string', sql: 'e.service_id' },
    token: { kind: 'scalar', type: 'string', sql: 'e.token' },
    type: { kind: 'scalar', type: 'string', sql: 'e.session_type' },
  },
};
