/**
 * The service record (seeds §2.4, upstream model §3.4): what identities dial and bind. The read model adds
 * per-caller parts computed by the service layer: `permissions`, the merged `config` map and
 * `postureQueries` (model.md §2.3/§2.4).
 */
import { Type } from '@sinclair/typebox';
import { defineResource, nameField } from '../define-resource.ts';
import { Attributes, Roles } from '../common.schema.ts';

export const terminatorStrategies = ['smartrouting', 'weighted', 'random', 'sticky'] as const;

const DialBind = { type: 'string', enum: ['Dial', 'Bind', 'Invalid'] };
const Permissions = Type.Unsafe<string[] | null>({ type: ['array', 'null'], items: DialBind });
const ConfigMap = Type.Unsafe<Record<string, Record<string, unknown>> | null>({
  type: ['object', 'null'],
  additionalProperties: { type: 'object', additionalProperties: true },
});
const ProcessRef = { type: 'object', properties: { osType: { type: 'string' }, path: { type: 'string' } } };
const PostureQuery = {
  type: 'object',
  additionalProperties: true,
  properties: {
    _links: { type: 'object', additionalProperties: true },
    createdAt: { type: 'string' },
    id: { type: 'string' },
    isPassing: { type: 'boolean' },
    process: ProcessRef,
    processes: { type: ['array', 'null'], items: ProcessRef },
    promptOnUnlock: { type: 'boolean' },
    promptOnWake: { type: 'boolean' },
    queryType: { type: 'string' },
    tags: { type: 'object', additionalProperties: true },
    timeout: { type: 'integer' },
    timeoutAt: { type: ['string', 'null'] },
    timeoutRemaining: { type: 'integer' },
    updatedAt: { type: 'string' },
  },
};
export const PolicyPostureQueries = Type.Unsafe<Array<Record<string, unknown>>>({
  type: 'array',
  items: {
    type: 'object',
    properties: {
      isPassing: { type: 'boolean' },
      policyId: { type: 'string' },
      policyType: DialBind,
      postureQueries: { type: 'array', items: PostureQuery },
    },
  },
});

/** Config ids on input; a stored, sorted set that reads back as null when empty (as upstream). */
const ConfigIds = Type.Unsafe<string[] | null>({ type: ['array', 'null'], items: { type: 'string' } });

export const serviceResource = defineResource({
  entityType: 'services',
  singular: 'service',
  permission: 'service',
  table: 'services',
  names: { create: 'serviceCreate', update: 'serviceUpdate', patch: 'servicePatch', detail: 'serviceDetail' },
  fields: {
    name: nameField(),
    terminatorStrategy: { schema: Type.String(), column: 'terminator_strategy', create: 'optional', put: 'optional', patch: true, default: '', filter: 'string' },
    // Settable only at create (seed contract): put and patch accept it and the service drops it.
    encryptionRequired: { schema: Type.Boolean(), column: 'encryption_required', kind: 'bool', create: 'required', put: 'optional', patch: true, filter: 'bool', advertised: false },
    maxIdleTimeMillis: { schema: Type.Integer(), column: 'max_idle_time_millis', kind: 'int', create: 'optional', put: 'optional', patch: true, default: 0, filter: 'int', advertised: false },
    roleAttributes: { schema: Attributes, read: Roles, column: 'role_attributes', kind: 'json', create: 'optional', put: 'optional', patch: true, default: [] },
    configs: { schema: ConfigIds, read: ConfigIds, column: 'configs', kind: 'json', create: 'optional', put: 'optional', patch: true, default: [] },
  },
  attributes: { field: 'roleAttributes', table: 'service_role_attributes', ownerColumn: 'service_id', valueColumn: 'attribute' },
  computed: {
    permissions: Permissions,
    config: ConfigMap,
    postureQueries: PolicyPostureQueries,
  },
  nestedLinks: ['service-edge-router-policies', 'service-policies', 'terminators', 'configs'],
  extraSymbols: {
    configs: { kind: 'set', elementType: 'string', table: 'service_configs', ownerColumn: 'service_id', valueColumn: 'config_id' },
  },
});
