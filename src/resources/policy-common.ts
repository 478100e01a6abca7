/**
 * What the three policy kinds (service policies, edge router policies, service edge router policies) share:
 * the declaration of a role-list field and of its filter symbol over `policy_roles`, and one service that
 * validates and normalizes the role lists, feeds every write to the access index, refuses writes to system
 * policies and renders the read model (raw role lists `null` when empty, `*RolesDisplay` always an array).
 */
import { Type, type TSchema } from '@sinclair/typebox';
import type { Values } from '../store/entity-table.ts';
import type { Store, Tx } from '../store/store.ts';
import type { SetSymbol } from '../query/symbols.ts';
import { ApiError, fieldError } from '../errors.ts';
import { createEntityService, systemClock, type Clock } from './entity-service.ts';
import type { FieldSpec, Resource } from './define-resource.ts';
import { Roles, Semantic } from './common.schema.ts';
import type { AccessService } from '../access/access.service.ts';
import { policyRoleFields, type PolicyInput, type PolicyKind, type RoleField } from '../access/access-index.ts';
import type { Semantic as SemanticValue } from '../policy/role-ref.ts';

/** `{role, name}` entries of a `*RolesDisplay` array. */
export const NamedRoles = Type.Array(Type.Object({ role: Type.String(), name: Type.String() }));

/** A policy role list: optional everywhere, `[]` when a create or put omits it, `null` in the read model when empty. */
export function roleListField(column: string): FieldSpec {
  return { schema: Roles, read: Roles, column, kind: 'json', create: 'optional', put: 'optional', patch: true, default: [], empty: 'null' };
}

/** `semantic`: required on create and put, one of AllOf/AnyOf exactly (the spec's enum). */
export function semanticField(): FieldSpec {
  return { schema: Semantic, column: 'semantic', create: 'required', put: 'required', patch: true, filter: 'string' };
}

export function nameField(): FieldSpec {
  return { schema: Type.String(), column: 'name', create: 'required', put: 'required', patch: true, filter: 'string' };
}

/** The filter symbol of one role list: a set over the policy's rows in `policy_roles`. */
export function roleSetSymbol(field: RoleField): SetSymbol {
  return { kind: 'set', elementType: 'string', table: 'policy_roles', ownerColumn: 'policy_id', valueColumn: 'role', where: `field = '${field}'` };
}

/** The `*RolesDisplay` read-model properties of a policy kind. */
export function displayProperties(kind: PolicyKind): Record<string, TSchema> {
  const out: Record<string, TSchema> = {};
  for (const field of policyRoleFields[kind]) out[`${field}Display`] = NamedRoles;
  return out;
}

export function createPolicyService(kind: PolicyKind, resource: Resource, store: Store, access: AccessService, clock: Clock = systemClock) {
  const fields = policyRoleFields[kind];

  async function normalizeRoles(tx: Tx, values: Values): Promise<void> {
    if (kind === 'servicePolicy' && values.type !== undefined && values.type !== 'Dial' && values.type !== 'Bind') {
      throw fieldError('policyType', `invalid policy type ${String(values.type)}`, values.type);
    }
    for (const field of fields) if (values[field] !== undefined) values[field] = await access.validateRoles(tx, field, values[field] as string[]);
  }

  async function feedIndex(tx: Tx, record: Values): Promise<void> {
    const roles: PolicyInput['roles'] = {};
    for (const field of fields) roles[field] = (record[field] as string[] | null) ?? [];
    await access.policyChanged(tx, {
      id: record.id as string,
      kind,
      semantic: record.semantic as SemanticValue,
      type: kind === 'servicePolicy' ? (record.type as PolicyInput['type']) : undefined,
      roles,
    });
  }

  function refuseSystem(existing: Values, code: 'ENTITY_CAN_NOT_BE_UPDATED' | 'ENTITY_CAN_NOT_BE_DELETED'): void {
    if (!existing.isSystem) return;
    const verb = code === 'ENTITY_CAN_NOT_BE_UPDATED' ? 'update' : 'delete';
    throw new ApiError(code, { cause: { code: 'UNHANDLED', message: `cannot ${verb} system ${resource.singular} ${String(existing.id)}` } });
  }

  const entities = createEntityService(
    resource,
    store,
    {
      async beforeCreate(tx, values) {
        await normalizeRoles(tx, values);
      },
      async afterCreate(tx, values) {
        await feedIndex(tx, values);
      },
      async beforeUpdate(tx, existing, changes) {
        refuseSystem(existing, 'ENTITY_CAN_NOT_BE_UPDATED');
        await normalizeRoles(tx, changes);
      },
      async afterUpdate(tx, existing, changes) {
        await feedIndex(tx, { ...existing, ...changes });
      },
      async beforeDelete(tx, existing) {
        refuseSystem(existing, 'ENTITY_CAN_NOT_BE_DELETED');
        await access.policyRemoved(tx, existing.id as string);
      },
    },
    clock,
  );

  /** The policy read model. */
  async function present(values: Values): Promise<Record<string, unknown>> {
    const detail = resource.presentStored(values);
    for (const field of fields) {
      detail[`${field}Display`] = await access.rolesDisplay(field, (values[field] as string[] | null) ?? []);
    }
    if (kind === 'edgeRouterPolicy') detail.isSystem = values.isSystem === true;
    return detail;
  }

  return { ...entities, present };
}

export type PolicyService = ReturnType<typeof createPolicyService>;
