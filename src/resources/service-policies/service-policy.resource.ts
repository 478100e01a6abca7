/**
 * The service policy record: which identities may dial or bind which services, gated by posture checks
 * (management seeds §2.8, upstream model §2.1 and §3.10).
 */
import { Type } from '@sinclair/typebox';
import { defineResource } from '../define-resource.ts';
import { displayProperties, nameField, roleListField, roleSetSymbol, semanticField } from '../policy-common.ts';

/** The spec's `dialBind` enum: `Invalid` passes the schema and is refused by the service (field `policyType`). */
export const DialBind = Type.Unsafe<'Dial' | 'Bind' | 'Invalid'>({ type: 'string', enum: ['Dial', 'Bind', 'Invalid'] });

/**
 * The members a service policy's roles match, as rows (policy_id, member), in SQL: on SQLite the access index
 * serves them (tables `pc_service_policy_*`, registered by the access service); PostgreSQL computes them with
 * upstream's rule (src/access/access-index.ts `matches`): `#all` and `@id` always match, then AllOf / AnyOf over the
 * `#attribute` roles.
 */
function membersSql(field: string, entities: string, attributes: string, owner: string): string {
  const roles = `FROM policy_roles r WHERE r.policy_id = p.id AND r.field = '${field}'`;
  const attributeRole = `r.role LIKE '#%' AND r.role <> '#all'`;
  const held = `EXISTS (SELECT 1 FROM ${attributes} a WHERE a.${owner} = m.id AND '#' || a.attribute = r.role)`;
  return `(SELECT p.id AS policy_id, m.id AS member FROM service_policies p CROSS JOIN ${entities} m WHERE
    EXISTS (SELECT 1 ${roles} AND (r.role = '#all' OR r.role = '@' || m.id))
    OR (p.semantic = 'AllOf' AND EXISTS (SELECT 1 ${roles} AND ${attributeRole}) AND NOT EXISTS (SELECT 1 ${roles} AND ${attributeRole} AND NOT ${held}))
    OR (p.semantic <> 'AllOf' AND EXISTS (SELECT 1 ${roles} AND ${attributeRole} AND ${held})))`;
}

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
    identities: { kind: 'set', elementType: 'string', table: 'pc_service_policy_identities', postgresTable: membersSql('identityRoles', 'identities', 'identity_role_attributes', 'identity_id'), ownerColumn: 'policy_id', valueColumn: 'member' },
    services: { kind: 'set', elementType: 'string', table: 'pc_service_policy_services', postgresTable: membersSql('serviceRoles', 'services', 'service_role_attributes', 'service_id'), ownerColumn: 'policy_id', valueColumn: 'member' },
    // Upstream filters the policy type as a number: 1 = Dial, 2 = Bind.
    type: { kind: 'scalar', type: 'int', sql: "(CASE e.policy_type WHEN 'Dial' THEN 1 WHEN 'Bind' THEN 2 END)" },
    identityRoles: roleSetSymbol('identityRoles'),
    serviceRoles: roleSetSymbol('serviceRoles'),
    postureCheckRoles: roleSetSymbol('postureCheckRoles'),
  },
});
