/**
 * The terminator record (management seeds §2.12, upstream model §3.7 and §5): where a service is hosted
 * (router + binding + address). Requests name the service and router by id; the read model shows both
 * ids and entity refs (the router ref points at `transit-routers`). Terminators have no name.
 */
import { Type } from '@sinclair/typebox';
import { defineResource } from '../define-resource.ts';
import { EntityRef, Links, TerminatorCost, TerminatorPrecedence, baseEntityProperties } from '../common.schema.ts';
import { FabricEntityRef } from '../fabric-ref.ts';

export const terminatorResource = defineResource({
  entityType: 'terminators',
  singular: 'terminator',
  permission: 'terminator',
  table: 'terminators',
  names: { create: 'terminatorCreate', update: 'terminatorUpdate', patch: 'terminatorPatch', detail: 'terminatorDetail' },
  fields: {
    service: { schema: Type.String(), read: false, column: 'service_id', create: 'required', put: 'required', patch: true },
    router: { schema: Type.String(), read: false, column: 'router_id', create: 'required', put: 'required', patch: true },
    binding: { schema: Type.String(), column: 'binding', create: 'required', put: 'required', patch: true, filter: 'string' },
    address: { schema: Type.String(), column: 'address', create: 'required', put: 'required', patch: true, filter: 'string' },
    identity: { schema: Type.String(), column: 'instance_id', create: 'optional', default: '' },
    identitySecret: { schema: Type.String({ format: 'byte' }), read: false, column: 'instance_secret', create: 'optional' },
    cost: { schema: TerminatorCost, column: 'cost', kind: 'int', create: 'optional', put: 'optional', patch: true, default: 0 },
    precedence: { schema: TerminatorPrecedence, read: TerminatorPrecedence, column: 'precedence', create: 'optional', put: 'optional', patch: true, default: 'default' },
    hostId: { schema: Type.String(), read: false, column: 'host_id' },
    // The controller the terminator was created through (filterable, as upstream; not in the read model).
    sourceCtrl: { schema: Type.String(), read: false, column: 'source_ctrl', filter: 'string' },
  },
  computed: {
    serviceId: Type.String(),
    service: EntityRef,
    routerId: Type.String(),
    router: EntityRef,
    dynamicCost: TerminatorCost,
  },
  extraSymbols: {
    instanceId: { kind: 'scalar', type: 'string', sql: 'e.instance_id' },
    hostId: { kind: 'scalar', type: 'string', sql: 'e.host_id' },
    service: { kind: 'scalar', type: 'string', sql: 'e.service_id' },
    router: { kind: 'scalar', type: 'string', sql: 'e.router_id' },
    'service.name': { kind: 'scalar', type: 'string', sql: '(SELECT s.name FROM services s WHERE s.id = e.service_id)', sortable: false },
    'router.name': { kind: 'scalar', type: 'string', sql: '(SELECT r.name FROM routers r WHERE r.id = e.router_id)', sortable: false },
  },
});

/** The client API's terminator (terminatorClientDetail): base fields, service ref and ids, instance id. */
export const clientTerminatorDetail = Type.Unsafe({
  type: 'object',
  properties: {
    _links: Links,
    createdAt: Type.String({ format: 'date-time' }),
    id: Type.String(),
    tags: Type.Unsafe({ type: 'object', additionalProperties: true }),
    updatedAt: Type.String({ format: 'date-time' }),
    identity: Type.String(),
    routerId: Type.String(),
    service: EntityRef,
    serviceId: Type.String(),
  },
  required: ['id', 'createdAt', 'updatedAt', '_links', 'tags'],
});

/**
 * The fabric API's terminator (fabric terminatorDetail): the same record under the fabric names (`instanceId`,
 * `hostId`), with references into the fabric API (`./services/<id>`, `./routers/<id>`).
 */
export const fabricTerminatorDetail = Type.Unsafe({
  type: 'object',
  properties: {
    ...baseEntityProperties,
    address: Type.String(),
    binding: Type.String(),
    cost: TerminatorCost,
    dynamicCost: TerminatorCost,
    hostId: Type.String(),
    instanceId: Type.String(),
    precedence: TerminatorPrecedence,
    router: FabricEntityRef,
    routerId: Type.String(),
    service: FabricEntityRef,
    serviceId: Type.String(),
  },
  required: ['id', 'createdAt', 'updatedAt', '_links', 'tags'],
});
