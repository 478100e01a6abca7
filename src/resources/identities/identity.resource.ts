/**
 * The identity record: who may authenticate and what policies can select (management seeds §2.1,
 * upstream model §3.2). Computed parts of the read model (type ref, auth policy ref, authenticators,
 * session and MFA flags) are declared here and filled in by the identity service.
 */
import { Type } from '@sinclair/typebox';
import { defineResource, roleAttributesField } from '../define-resource.ts';
import {
  EntityRef,
  FreeObject,
  IdentityType,
  Nullable,
  TerminatorCost,
  TerminatorCostMap,
  TerminatorPrecedence,
  TerminatorPrecedenceMap,
} from '../common.schema.ts';
import { permissionValues } from '../../auth/permissions.ts';

export const Permissions = Type.Unsafe<string[] | null>({ type: ['array', 'null'], items: { type: 'string', enum: [...permissionValues] } });

const EnvInfo = Type.Unsafe<Record<string, string>>({ type: 'object', additionalProperties: true });
const SdkInfo = Type.Unsafe<Record<string, string>>({ type: 'object', additionalProperties: true });
const DateTimeNullable = Type.Unsafe<string | null>({ type: ['string', 'null'], format: 'date-time' });

const IdentityEnrollmentRequest = Type.Object({
  ott: Type.Optional(Type.Boolean()),
  ottca: Type.Optional(Type.String()),
  updb: Type.Optional(Type.String()),
});

export const identityResource = defineResource({
  entityType: 'identities',
  singular: 'identity',
  permission: 'identity',
  table: 'identities',
  names: { create: 'identityCreate', update: 'identityUpdate', patch: 'identityPatch', detail: 'identityDetail' },
  fields: {
    name: { schema: Type.String(), column: 'name', create: 'required', put: 'required', patch: true, filter: 'string', unique: true },
    type: { schema: IdentityType, read: false, column: 'type_id', create: 'required', put: 'required', patch: true },
    isAdmin: { schema: Type.Boolean(), column: 'is_admin', kind: 'bool', create: 'required', put: 'required', patch: true, filter: 'bool' },
    isDefaultAdmin: { schema: Type.Boolean(), column: 'is_default_admin', kind: 'bool', filter: 'bool' },
    appData: { schema: FreeObject, column: 'app_data', kind: 'json', create: 'optional', put: 'optional', patch: true, nullable: true, default: {} },
    authPolicyId: { schema: Type.String(), column: 'auth_policy_id', create: 'optional', put: 'optional', patch: true, nullable: true, default: 'default' },
    defaultHostingCost: { schema: TerminatorCost, column: 'default_hosting_cost', kind: 'int', create: 'optional', put: 'optional', patch: true, default: 0, filter: 'int', advertised: false },
    defaultHostingPrecedence: { schema: TerminatorPrecedence, column: 'default_hosting_precedence', create: 'optional', put: 'optional', patch: true, default: 'default', filter: 'string', advertised: false },
    externalId: { schema: Type.String(), read: Nullable(Type.String()), column: 'external_id', create: 'optional', put: 'optional', patch: true, nullable: true, default: null, filter: 'string' },
    permissions: { schema: Permissions, column: 'permissions', kind: 'json', create: 'optional', put: 'optional', patch: true, nullable: true, default: null },
    roleAttributes: roleAttributesField(),
    serviceHostingCosts: { schema: TerminatorCostMap, column: 'service_hosting_costs', kind: 'json', create: 'optional', put: 'optional', patch: true, nullable: true, default: {} },
    serviceHostingPrecedences: { schema: TerminatorPrecedenceMap, column: 'service_hosting_precedences', kind: 'json', create: 'optional', put: 'optional', patch: true, nullable: true, default: {} },
    enrollment: { schema: IdentityEnrollmentRequest, read: false, create: 'optional' },
    envInfo: { schema: EnvInfo, column: 'env_info', kind: 'json' },
    sdkInfo: { schema: SdkInfo, column: 'sdk_info', kind: 'json' },
    disabledAt: { schema: DateTimeNullable, column: 'disabled_at', kind: 'datetime', filter: 'datetime', advertised: false },
    disabledUntil: { schema: DateTimeNullable, column: 'disabled_until', kind: 'datetime', filter: 'datetime', advertised: false },
  },
  attributes: { field: 'roleAttributes', table: 'identity_role_attributes', ownerColumn: 'identity_id', valueColumn: 'attribute' },
  computed: {
    type: EntityRef,
    typeId: Type.String(),
    authPolicy: Type.Unsafe({ ...EntityRef, type: ['object', 'null'] }),
    authenticators: Type.Object({
      updb: Type.Optional(Type.Object({ id: Type.String(), username: Type.String() })),
      cert: Type.Optional(Type.Object({ id: Type.String(), fingerprint: Type.String() })),
    }),
    enrollment: Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true }),
    disabled: Type.Boolean(),
    hasApiSession: Type.Boolean(),
    hasEdgeRouterConnection: Type.Boolean(),
    edgeRouterConnectionStatus: Type.Unsafe<string>({ type: 'string', enum: ['online', 'offline', 'unknown'] }),
    isMfaEnabled: Type.Boolean(),
    interfaces: Type.Unsafe<unknown[] | null>({ type: ['array', 'null'], items: { type: 'object', additionalProperties: true } }),
  },
  nestedLinks: [
    'edge-router-policies',
    'edge-routers',
    'service-policies',
    'services',
    'posture-data',
    'failed-service-requests',
    'authenticators',
    'enrollments',
    'service-configs',
  ],
  extraSymbols: {
    type: { kind: 'scalar', type: 'string', sql: 'e.type_id' },
    authPolicy: { kind: 'scalar', type: 'string', sql: 'e.auth_policy_id', advertised: false },
    authPolicyId: { kind: 'scalar', type: 'string', sql: 'e.auth_policy_id' },
  },
});
