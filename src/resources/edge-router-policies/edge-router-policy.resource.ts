/**
 * The edge router policy record: which identities may use which edge routers (management seeds §2.8,
 * upstream model §2.2 and §3.10). System policies (one per tunneler-enabled edge router) are read-only.
 */
import { Type } from '@sinclair/typebox';
import { defineResource } from '../define-resource.ts';
import { displayProperties, nameField, roleListField, roleSetSymbol, semanticField } from '../policy-common.ts';

export const edgeRouterPolicyResource = defineResource({
  entityType: 'edge-router-policies',
  singular: 'edgeRouterPolicy',
  permission: 'edge-router-policy',
  table: 'edge_router_policies',
  names: { create: 'edgeRouterPolicyCreate', update: 'edgeRouterPolicyUpdate', patch: 'edgeRouterPolicyPatch', detail: 'edgeRouterPolicyDetail' },
  fields: {
    name: nameField(),
    semantic: semanticField(),
    identityRoles: roleListField('identity_roles'),
    edgeRouterRoles: roleListField('edge_router_roles'),
  },
  computed: { ...displayProperties('edgeRouterPolicy'), isSystem: Type.Boolean() },
  nestedLinks: ['edge-routers', 'identities'],
  extraSymbols: {
    identityRoles: roleSetSymbol('identityRoles'),
    edgeRouterRoles: roleSetSymbol('edgeRouterRoles'),
  },
});
