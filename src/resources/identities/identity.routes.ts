/**
 * Identity operations: the uniform CRUD plus the identity's authenticators and the role-attribute list.
 *
 * A caller who manages identities through permission values, not as an admin, can not raise anyone's
 * rights (as upstream): it may not create an admin or an identity with permissions, use PUT (which would
 * rewrite `isAdmin` and `permissions`), patch `isAdmin` or `permissions`, or change or delete an admin.
 */
import type { FastifyRequest } from 'fastify';
import type { RouteSpec } from '../../http/route.ts';
import { callerOf } from '../../http/caller.ts';
import { isAdmin } from '../../auth/permissions.ts';
import { ApiError, errorCatalogue } from '../../errors.ts';
import { crudRoutes } from '../../http/crud-routes.ts';
import { IdParams, ListQuery, listRequest } from '../../http/list-params.ts';
import { list, listEnvelope } from '../../http/envelope.ts';
import type { IdentityService } from './identity.service.ts';
import type { AuthenticatorService } from '../authenticators/authenticator.service.ts';
import { identityResource } from './identity.resource.ts';
import { authenticatorResource } from '../authenticators/authenticator.resource.ts';
import { roleAttributeListRoute } from '../role-attributes.routes.ts';
import type { Db } from '../../store/database.ts';

function nonAdminRefused(reason: string): ApiError {
  return new ApiError('UNAUTHORIZED', { message: `${errorCatalogue.UNAUTHORIZED[1]}: ${reason}`, cause: { code: 'UNHANDLED', message: reason } });
}

export function identityRoutes(db: Db, identities: IdentityService, authenticators: AuthenticatorService): RouteSpec[] {
  const targetIsAdmin = (req: FastifyRequest) => identities.find((req.params as { id: string }).id)?.isAdmin === true;
  const body = (req: FastifyRequest) => (req.body ?? {}) as Record<string, unknown>;
  /** The rights check a non-admin caller passes before each write; undefined when the write is allowed. */
  const refusal: Partial<Record<string, (req: FastifyRequest) => string | undefined>> = {
    POST: (req) => {
      const b = body(req);
      if (Array.isArray(b.permissions) && b.permissions.length > 0) return 'non-admins may not create users with permissions';
      if (b.isAdmin === true) return 'non-admins may not create admin users';
      return undefined;
    },
    PUT: () => 'non-admins may not use the PUT method, use PATCH instead',
    PATCH: (req) => {
      if (targetIsAdmin(req)) return 'non-admins may not modify admin identities';
      const b = body(req);
      const field = ['permissions', 'isAdmin', 'isDefaultAdmin'].find((f) => b[f] !== undefined);
      return field ? `non-admins may not modify the identity field '${field}'` : undefined;
    },
    DELETE: (req) => (targetIsAdmin(req) ? 'non-admin may not delete admin identities' : undefined),
  };
  const guarded = (route: RouteSpec): RouteSpec => {
    const check = refusal[route.method as string];
    if (!check) return route;
    return {
      ...route,
      handler: (req, reply) => {
        if (!isAdmin(callerOf(req).identity)) {
          const reason = check(req);
          if (reason) throw nonAdminRefused(reason);
        }
        return route.handler(req, reply);
      },
    };
  };
  return [
    // Create honours the inline `enrollment` (ott, ottca, updb) of the request.
    ...crudRoutes(identityResource, { ...identities, create: identities.createWithEnrollment }, { tag: 'Identity', roleFilter: true }).map(guarded),
    {
      method: 'GET', url: '/identities/:id/authenticators', operationId: 'getIdentityAuthenticators', tag: 'Identity',
      summary: 'List the authenticators of an identity', access: 'admin-read',
      params: IdParams, querystring: ListQuery, response: { 200: listEnvelope(authenticatorResource.schemas.detail) },
      handler: (req) => {
        const id = (req.params as { id: string }).id;
        const r = authenticators.listForIdentity(id, listRequest(req));
        return list(r.items.map(authenticators.present), r.page, r.filterableFields);
      },
    },
    roleAttributeListRoute({
      url: '/identity-role-attributes', operationId: 'listIdentityRoleAttributes', tag: 'Role Attributes',
      table: 'identity_role_attributes', permission: 'identity', db,
    }),
  ];
}
