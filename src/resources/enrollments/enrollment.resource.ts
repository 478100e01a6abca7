/**
 * The enrollment record (management seeds §2.10, enrollment.md §1.5): an outstanding one-time token with
 * its signed JWT, for an identity (ott, ottca, updb) or a router (erott, trott). Created explicitly with
 * `POST /enrollments`, inline with an identity, by router creation, or by reverting an authenticator;
 * consumed by a successful enroll. The subject references (identity, edge or transit router) are computed
 * by the enrollment service.
 */
import { Type } from '@sinclair/typebox';
import { defineResource } from '../define-resource.ts';
import { EntityRef } from '../common.schema.ts';

export const EnrollmentMethod = Type.Unsafe<'ott' | 'ottca' | 'updb'>({ type: 'string', enum: ['ott', 'ottca', 'updb'] });
const DateTime = Type.String({ format: 'date-time' });

const edgeRouterOf = { kind: 'scalar', type: 'string', sql: '(SELECT r.id FROM routers r WHERE r.id = e.router_id AND r.is_edge = 1)' } as const;
const transitRouterOf = { kind: 'scalar', type: 'string', sql: '(SELECT r.id FROM routers r WHERE r.id = e.router_id AND r.is_edge = 0)' } as const;

export const enrollmentResource = defineResource({
  entityType: 'enrollments',
  singular: 'enrollment',
  permission: 'enrollment',
  table: 'enrollments',
  names: { create: 'enrollmentCreate', detail: 'enrollmentDetail' },
  fields: {
    method: { schema: EnrollmentMethod, read: Type.String(), column: 'method', create: 'required', filter: 'string', advertised: false },
    identityId: { schema: Type.String(), column: 'identity_id', create: 'required', filter: 'string', advertised: false },
    routerId: { schema: Type.String(), read: false, column: 'router_id' },
    caId: { schema: Type.String(), column: 'ca_id', create: 'optional', nullable: true, filter: 'string' },
    // Kept for the enrollment; not part of the read model (upstream shows no user name on enrollments).
    username: { schema: Type.String(), read: false, column: 'username', create: 'optional', nullable: true, filter: 'string', advertised: false },
    token: { schema: Type.String(), column: 'token', filter: 'string' },
    jwt: { schema: Type.String(), column: 'jwt' },
    expiresAt: { schema: DateTime, column: 'expires_at', kind: 'datetime', create: 'required', filter: 'datetime', advertised: false },
    issuedAt: { schema: DateTime, read: false, column: 'issued_at', kind: 'datetime' },
  },
  computed: {
    identity: EntityRef,
    edgeRouterId: Type.String(),
    edgeRouter: EntityRef,
    transitRouterId: Type.String(),
    transitRouter: EntityRef,
  },
  extraSymbols: {
    identity: { kind: 'scalar', type: 'string', sql: 'e.identity_id' },
    edgeRouterId: { ...edgeRouterOf, advertised: false },
    transitRouterId: { ...transitRouterOf, advertised: false },
    // Upstream's names for the same two.
    edgeRouter: edgeRouterOf,
    transitRouter: transitRouterOf,
  },
});
