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

export function postureCheckRoutes(db: Db, postureChecks: PostureCheckService, postureCheckTypes: CrudService): RouteSpec[] {
  return [
    ...crudRoutes(postureCheckResource, postureChecks, { tag: 'Posture Checks', roleFilter: true }),
    roleAttributeListRoute({
      url: '/posture-check-role-attributes', operationId: 'listPostureCheckRoleAttributes', tag: 'Role Attributes',
      table: 'posture_check_role_attributes', permission: 'posture-check', db,
    }),
    // The types are a fixed catalogue any session may read, as upstream.
    ...crudRoutes(postureCheckTypeResource, postureCheckTypes, { tag: 'Posture Checks', operations: ['list', 'detail'], access: { read: 'session' } }),
  ];
}
