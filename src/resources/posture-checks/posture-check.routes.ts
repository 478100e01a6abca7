/**
 * Posture check operations: the uniform CRUD (the list also takes roleFilter/roleSemantic), the posture
 * check role-attribute list, and the read-only posture check types.
 */
import type { RouteSpec } from '../../http/route.ts';
import { missingTypeId, unknownTypeId } from '../../errors.ts';
import { crudRoutes, type CrudService } from '../../http/crud-routes.ts';
import { roleAttributeListRoute } from '../role-attributes.routes.ts';
import type { Store } from '../../store/store.ts';
import { typeFields, type PostureCheckService } from './posture-check.service.ts';
import { postureCheckResource } from './posture-check.resource.ts';
import { postureCheckTypeResource } from '../posture-check-types/posture-check-type.resource.ts';

const allTypeFields = new Set(Object.values(typeFields).flatMap((t) => t.fields));

/**
 * A posture check body as clients really send it, before validation:
 * - the fields of the other check types are not read (the admin console sends every type's fields, empty), as
 *   upstream decodes only the type that `typeId` names;
 * - the `ziti` CLI (v2.0) writes each `operatingSystems` entry as `{"Type": ..., "Versions": [...]}`: exactly
 *   these two capitalised keys are read as `type` and `versions` (the lower-case key wins when both are there).
 * Every other key stays as sent, so the schema still refuses anything else.
 */
export function normalizePostureCheckBody(input: unknown): unknown {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return input;
  const body = { ...(input as Record<string, unknown>) };
  // The type is decoded first, as upstream's: missing, or a name it does not know, is refused before any other field.
  if (body.typeId === undefined || body.typeId === null || body.typeId === '') throw missingTypeId();
  if (typeof body.typeId === 'string' && !Object.hasOwn(typeFields, body.typeId)) throw unknownTypeId(body.typeId);
  const own = (typeFields as Record<string, { fields: string[] } | undefined>)[String(body.typeId)]?.fields;
  if (own) for (const field of allTypeFields) if (!own.includes(field)) delete body[field];
  const list = body.operatingSystems;
  if (!Array.isArray(list)) return body;
  const entries = list.map((entry) => {
    if (!entry || typeof entry !== 'object' || Array.isArray(entry)) return entry;
    const { Type, Versions, ...rest } = entry as Record<string, unknown>;
    return { ...(Type !== undefined ? { type: Type } : {}), ...(Versions !== undefined ? { versions: Versions } : {}), ...rest };
  });
  return { ...body, operatingSystems: entries };
}

export function postureCheckRoutes(store: Store, postureChecks: PostureCheckService, postureCheckTypes: CrudService): RouteSpec[] {
  return [
    ...crudRoutes(postureCheckResource, postureChecks, { tag: 'Posture Checks', roleFilter: true, normalizeBody: normalizePostureCheckBody }),
    roleAttributeListRoute({
      url: '/posture-check-role-attributes', operationId: 'listPostureCheckRoleAttributes', tag: 'Role Attributes',
      table: 'posture_check_role_attributes', permission: 'posture-check', store,
    }),
    // The types are a fixed catalogue any session may read, as upstream.
    ...crudRoutes(postureCheckTypeResource, postureCheckTypes, { tag: 'Posture Checks', operations: ['list', 'detail'], access: { read: 'session' } }),
  ];
}
