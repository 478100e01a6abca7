/**
 * Identity operations: the uniform CRUD plus the identity's authenticators and the role-attribute list.
 *
 * A caller who manages identities through permission values, not as an admin, can not raise anyone's
 * rights: it may not create an admin or an identity with permissions, use PUT (which would rewrite `isAdmin`
 * and `permissions`), or patch `isAdmin` or `permissions` (as upstream); and it may change or delete only
 * identities whose rights it holds itself (upstream protects admins only).
 */
import type { FastifyRequest } from 'fastify';
import type { RouteSpec } from '../../http/route.ts';
import { callerOf } from '../../http/caller.ts';
import { isAdmin } from '../../auth/permissions.ts';
import { refused } from '../../auth/rights.ts';
import { onIdentity } from './identity-rights.ts';
import { identityShownTo } from '../enrollments/enrollment-secrets.ts';
import { crudRoutes } from '../../http/crud-routes.ts';
import { IdParams, ListQuery, listRequest } from '../../http/list-params.ts';
import { list, listEnvelope } from '../../http/envelope.ts';
import type { IdentityService } from './identity.service.ts';
import type { AuthenticatorService } from '../authenticators/authenticator.service.ts';
import { identityResource } from './identity.resource.ts';
import { authenticatorResource } from '../authenticators/authenticator.resource.ts';
import { roleAttributeListRoute } from '../role-attributes.routes.ts';
import type { Store } from '../../store/store.ts';

export function identityRoutes(store: Store, identities: IdentityService, authenticators: AuthenticatorService): RouteSpec[] {
  const body = (req: FastifyRequest) => (req.body ?? {}) as Record<string, unknown>;
  /** Field rules a non-admin caller passes before each write; undefined when the write is allowed. */
  const refusal: Partial<Record<string, (req: FastifyRequest) => string | undefined>> = {
    POST: (req) => {
      const b = body(req);
      if (Array.isArray(b.permissions) && b.permissions.length > 0) return 'non-admins may not create users with permissions';
      if (b.isAdmin === true) return 'non-admins may not create admin users';
      return undefined;
    },
    PUT: () => 'non-admins may not use the PUT method, use PATCH instead',
    PATCH: (req) => {
      const b = body(req);
      const field = ['permissions', 'isAdmin', 'isDefaultAdmin'].find((f) => b[f] !== undefined);
      return field ? `non-admins may not modify the identity field '${field}'` : undefined;
    },
  };
  // Patch and delete act on the identity: a non-admin may touch only identities whose rights it holds.
  const actsOn: Partial<Record<string, RouteSpec['actsOn']>> = { PATCH: onIdentity(store, 'modify'), DELETE: onIdentity(store, 'delete') };
  const guarded = (route: RouteSpec): RouteSpec => {
    const check = refusal[route.method as string];
    const withTarget = { ...route, actsOn: actsOn[route.method as string] };
    if (!check) return withTarget;
    return {
      ...withTarget,
      handler: (req, reply) => {
        if (!isAdmin(callerOf(req).identity)) {
          const reason = check(req);
          if (reason) throw refused(reason);
        }
        return route.handler(req, reply);
      },
    };
  };
  return [
    // Create honours the inline `enrollment` (ott, ottca, updb) of the request.
    ...crudRoutes(identityResource, { ...identities, create: identities.createWithEnrollment }, { tag: 'Identity', roleFilter: true, shownTo: identityShownTo }).map(guarded),
    {
      method: 'GET', url: '/identities/:id/authenticators', operationId: 'getIdentityAuthenticators', tag: 'Identity',
      summary: 'List the authenticators of an identity', access: 'admin-read',
      params: IdParams, querystring: ListQuery, response: { 200: listEnvelope(authenticatorResource.schemas.detail) },
      handler: async (req) => {
        const id = (req.params as { id: string }).id;
        const r = await authenticators.listForIdentity(id, listRequest(req));
        const items: Array<Record<string, unknown>> = [];
        for (const item of r.items) items.push(await authenticators.present(item));
        return list(items, r.page, r.filterableFields);
      },
    },
    roleAttributeListRoute({
      url: '/identity-role-attributes', operationId: 'listIdentityRoleAttributes', tag: 'Role Attributes',
      table: 'identity_role_attributes', permission: 'identity', store,
    }),
  ];
}
