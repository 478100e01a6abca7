/**
 * Posture check operations: the uniform CRUD (the list also takes roleFilter/roleSemantic), the posture
 * check role-attribute list, and the read-only posture check types.
 */
import type { RouteSpec } from '../../http/route.ts';
import { crudRoutes, type CrudService } from '../../http/crud-routes.ts';
import { roleAttributeListRoute } from '../role-attributes.routes.ts';
import type { Db } from '../../store/database.ts';
import type { PostureCheckService } from './posture-check.service.ts';
import { postureCheckResource } from './posture-check.resource.ts';
import { postureCheckTypeResource } from '../posture-check-types/posture-check-type.resource.ts';

/**
 * The `ziti` CLI (v2.0) writes each `operatingSystems` entry as `{"Type": ..., "Versions": [...]}`. Exactly
 * these two capitalised keys are read as `type` and `versions` (the lower-case key wins when both are there);
 * every other key stays as sent, so the schema still refuses anything else.
 */
export function acceptCliOperatingSystems(body: unknown): unknown {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return body;
  const list = (body as Record<string, unknown>).operatingSystems;
  if (!Array.isArray(list)) return body;
  const entries = list.map((entry) => {
    if (!entry || typeof entry !== 'object' || Array.isArray(entry)) return entry;
    const { Type, Versions, ...rest } = entry as Record<string, unknown>;
    return { ...(Type !== undefined ? { type: Type } : {}), ...(Versions !== undefined ? { versions: Versions } : {}), ...rest };
  });
  return { ...(body as Record<string, unknown>), operatingSystems: entries };
}

export function postureCheckRoutes(db: Db, postureChecks: PostureCheckService, postureCheckTypes: CrudService): RouteSpec[] {
  return [
    ...crudRoutes(postureCheckResource, postureChecks, { tag: 'Posture Checks', roleFilter: true, normalizeBody: acceptCliOperatingSystems }),
    roleAttributeListRoute({
      url: '/posture-check-role-attributes', operationId: 'listPostureCheckRoleAttributes', tag: 'Role Attributes',
      table: 'posture_check_role_attributes', permission: 'posture-check', db,
    }),
    // The types are a fixed catalogue any session may read, as upstream.
    ...crudRoutes(postureCheckTypeResource, postureCheckTypes, { tag: 'Posture Checks', operations: ['list', 'detail'], access: { read: 'session' } }),
  ];
}
