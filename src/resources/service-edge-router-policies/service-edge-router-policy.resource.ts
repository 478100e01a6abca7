/**
 * The service edge router policy record: which services may be reached through which edge routers
 * (management seeds §2.8, upstream model §2.2 and §3.10).
 */
import { defineResource } from '../define-resource.ts';
import { displayProperties, nameField, roleListField, roleSetSymbol, semanticField } from '../policy-common.ts';

export const serviceEdgeRouterPolicyResource = defineResource({
  entityType: 'service-edge-router-policies',
  singular: 'serviceEdgeRouterPolicy',
  permission: 'service-edge-router-policy',
  table: 'service_edge_router_policies',
  names: {
    create: 'serviceEdgeRouterPolicyCreate',
    update: 'serviceEdgeRouterPolicyUpdate',
    patch: 'serviceEdgeRouterPolicyPatch',
    detail: 'serviceEdgeRouterPolicyDetail',
  },
  fields: {
    name: nameField(),
    semantic: semanticField(),
    serviceRoles: roleListField('service_roles'),
    edgeRouterRoles: roleListField('edge_router_roles'),
  },
  computed: displayProperties('serviceEdgeRouterPolicy'),
  nestedLinks: ['edge-routers', 'services'],
  extraSymbols: {
    serviceRoles: roleSetSymbol('serviceRoles'),
    edgeRouterRoles: roleSetSymbol('edgeRouterRoles'),
  },
});
