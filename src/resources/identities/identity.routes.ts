/**
 * Identity operations: the uniform CRUD plus the identity's own sub-lists that exist at this stage
 * (authenticators) and the role-attribute list.
 */
import type { RouteSpec } from '../../http/route.ts';
import { crudRoutes } from '../../http/crud-routes.ts';
import { IdParams, ListQuery, listRequest } from '../../http/list-params.ts';
import { list, listEnvelope } from '../../http/envelope.ts';
import type { IdentityService } from './identity.service.ts';
import type { AuthenticatorService } from '../authenticators/authenticator.service.ts';
import { identityResource } from './identity.resource.ts';
import { authenticatorResource } from '../authenticators/authenticator.resource.ts';
import { roleAttributeListRoute } from '../role-attributes.routes.ts';
import type { Db } from '../../store/database.ts';

export function identityRoutes(db: Db, identities: IdentityService, authenticators: AuthenticatorService): RouteSpec[] {
  return [
    // Create honours the inline `enrollment` (ott, ottca, updb) of the request.
    ...crudRoutes(identityResource, { ...identities, create: identities.createWithEnrollment }, { tag: 'Identity', roleFilter: true }),
    {
      method: 'GET', url: '/identities/:id/authenticators', operationId: 'getIdentityAuthenticators', tag: 'Identity',
      // Any authenticated caller (management seed §4 rule 2).
      summary: 'List the authenticators of an identity', auth: 'session',
      params: IdParams, querystring: ListQuery, response: { 200: listEnvelope(authenticatorResource.schemas.detail) },
      handler: (req) => {
        const id = (req.params as { id: string }).id;
        identities.get(id);
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
