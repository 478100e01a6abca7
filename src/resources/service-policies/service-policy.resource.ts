/**
 * The service policy record: which identities may dial or bind which services, gated by posture checks
 * (management seeds §2.8, upstream model §2.1 and §3.10).
 */
import { Type } from '@sinclair/typebox';
import { defineResource } from '../define-resource.ts';
import { displayProperties, nameField, roleListField, roleSetSymbol, semanticField } from '../policy-common.ts';

/** The spec's `dialBind` enum: `Invalid` passes the schema and is refused by the service (field `policyType`). */
export const DialBind = Type.Unsafe<'Dial' | 'Bind' | 'Invalid'>({ type: 'string', enum: ['Dial', 'Bind', 'Invalid'] });

export const servicePolicyResource = defineResource({
  entityType: 'service-policies',
  singular: 'servicePolicy',
  permission: 'service-policy',
  table: 'service_policies',
  names: { create: 'servicePolicyCreate', update: 'servicePolicyUpdate', patch: 'servicePolicyPatch', detail: 'servicePolicyDetail' },
  fields: {
    name: nameField(),
    type: { schema: DialBind, column: 'policy_type', create: 'required', put: 'required', patch: true },
    semantic: semanticField(),
    identityRoles: roleListField('identity_roles'),
    serviceRoles: roleListField('service_roles'),
    postureCheckRoles: roleListField('posture_check_roles'),
  },
  computed: displayProperties('servicePolicy'),
  nestedLinks: ['services', 'identities', 'posture-checks'],
  extraSymbols: {
    // What the policy's role lists match now, from the access index (see registerMembershipTables).
    identities: { kind: 'set', elementType: 'string', table: 'pc_service_policy_identities', ownerColumn: 'policy_id', valueColumn: 'member' },
    services: { kind: 'set', elementType: 'string', table: 'pc_service_policy_services', ownerColumn: 'policy_id', valueColumn: 'member' },
    // Upstream filters the policy type as a number: 1 = Dial, 2 = Bind.
    type: { kind: 'scalar', type: 'int', sql: "(CASE e.policy_type WHEN 'Dial' THEN 1 WHEN 'Bind' THEN 2 END)" },
    identityRoles: roleSetSymbol('identityRoles'),
    serviceRoles: roleSetSymbol('serviceRoles'),
    postureCheckRoles: roleSetSymbol('postureCheckRoles'),
  },
});
