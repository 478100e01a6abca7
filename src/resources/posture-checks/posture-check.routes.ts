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

function openToAnySession(routes: RouteSpec[]): RouteSpec[] {
  return routes.map((r) => ({ ...r, allow: undefined }));
}

export function postureCheckRoutes(db: Db, postureChecks: PostureCheckService, postureCheckTypes: CrudService): RouteSpec[] {
  return [
    // Posture checks and their types are open to any authenticated caller (management seed §4 rule 2).
    ...openToAnySession(crudRoutes(postureCheckResource, postureChecks, { tag: 'Posture Checks', roleFilter: true })),
    roleAttributeListRoute({
      url: '/posture-check-role-attributes', operationId: 'listPostureCheckRoleAttributes', tag: 'Role Attributes',
      table: 'posture_check_role_attributes', permission: 'posture-check', db,
    }),
    ...openToAnySession(crudRoutes(postureCheckTypeResource, postureCheckTypes, { tag: 'Posture Checks', operations: ['list', 'detail'] })),
  ];
}
