/**
 * Every operation of the management API (`/edge/management/v1`), in one readable list.
 */
import type { ApiDefinition } from '../http/route.ts';
import type { Services } from './services.ts';
import { systemRoutes } from '../system/system.routes.ts';
import { authenticationRoutes } from '../auth/authenticate.routes.ts';
import { identityRoutes } from '../resources/identities/identity.routes.ts';
import { crudRoutes } from '../http/crud-routes.ts';
import { authenticatorResource } from '../resources/authenticators/authenticator.resource.ts';
import { identityTypeResource } from '../resources/identity-types/identity-type.resource.ts';
import { authPolicyResource } from '../resources/auth-policies/auth-policy.resource.ts';
import { configTypeResource } from '../resources/config-types/config-type.resource.ts';
import { apiSessionRoutes } from '../resources/api-sessions/api-session.routes.ts';

export function managementApi(s: Services): ApiDefinition {
  return {
    name: 'management',
    prefix: '/edge/management/v1',
    title: 'Portcullis Edge Management API',
    routes: [
      ...systemRoutes(s.system, s.controllers, 'management'),
      ...authenticationRoutes(s),
      ...identityRoutes(s.db, s.identities, s.authenticators),
      ...crudRoutes(identityTypeResource, s.identityTypes, { tag: 'Identity', operations: ['list', 'detail'] }),
      ...crudRoutes(authenticatorResource, s.authenticators, { tag: 'Authenticator' }),
      ...crudRoutes(authPolicyResource, s.authPolicies, { tag: 'Auth Policy', operations: ['list', 'detail'] }),
      ...crudRoutes(configTypeResource, s.configTypes, { tag: 'Config', operations: ['list', 'detail'] }),
      ...apiSessionRoutes(s.db, s.apiSessions, s.auth),
    ],
  };
}
