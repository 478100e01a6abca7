/**
 * Every operation of the management API (`/edge/management/v1`), in one readable list.
 */
import type { ApiDefinition } from '../http/route.ts';
import type { Services } from './services.ts';
import { systemRoutes } from '../system/system.routes.ts';
import { authenticationRoutes } from '../auth/authenticate.routes.ts';
import { identityRoutes } from '../resources/identities/identity.routes.ts';
import { identityLifecycleRoutes } from '../resources/identities/identity-lifecycle.routes.ts';
import { crudRoutes } from '../http/crud-routes.ts';
import { authenticatorResource } from '../resources/authenticators/authenticator.resource.ts';
import { identityTypeResource } from '../resources/identity-types/identity-type.resource.ts';
import { authPolicyRoutes } from '../resources/auth-policies/auth-policy.routes.ts';
import { identityMfaRoutes, mfaRoutes } from '../resources/mfa/mfa.routes.ts';
import { configTypeRoutes } from '../resources/config-types/config-type.routes.ts';
import { configRoutes } from '../resources/configs/config.routes.ts';
import { serviceRoutes } from '../resources/services/service.routes.ts';
import { identityServiceConfigRoutes } from '../resources/services/identity-service-configs.routes.ts';
import { apiSessionRoutes } from '../resources/api-sessions/api-session.routes.ts';
import { policyRoutes } from '../resources/service-policies/service-policy.routes.ts';
import { postureCheckRoutes } from '../resources/posture-checks/posture-check.routes.ts';
import { accessListRoutes } from '../resources/access-lists.routes.ts';
import { managementSessionRoutes } from '../resources/sessions/session.routes.ts';
import { edgeRouterRoutes } from '../resources/edge-routers/edge-router.routes.ts';
import { routerRoutes } from '../resources/routers/router.routes.ts';
import { terminatorRoutes } from '../resources/terminators/terminator.routes.ts';
import { caRoutes } from '../resources/cas/ca.routes.ts';
import { certificateExtensionRoutes } from '../resources/authenticators/certificate-extension.routes.ts';
import { externalJwtSignerRoutes } from '../resources/external-jwt-signers/external-jwt-signer.routes.ts';
import { enrollmentRoutes } from '../resources/enrollments/enrollment.routes.ts';
import { networkJwtRoute } from '../enrollment/enroll.routes.ts';

import { databaseRoutes } from '../resources/database/database.routes.ts';
import { controllerSettingRoutes } from '../resources/controller-settings/controller-setting.routes.ts';

import { managementPostureRoutes } from '../posture/posture.routes.ts';

export function managementApi(s: Services): ApiDefinition {
  return {
    name: 'management',
    prefix: '/edge/management/v1',
    title: 'Portcullis Edge Management API',
    routes: [
      ...systemRoutes(s.system, s.controllers, 'management'),
      ...authenticationRoutes(s),
      ...identityRoutes(s.store, s.identities, s.authenticators),
      ...managementPostureRoutes(s.posture, s.identities),
      ...identityLifecycleRoutes({ store: s.store, apiSessions: s.apiSessions, traces: s.identityTraces }),
      ...crudRoutes(identityTypeResource, s.identityTypes, { tag: 'Identity', operations: ['list', 'detail'], access: { read: 'session' } }),
      // No permission value covers authenticators: admins, and admin_readonly for reads.
      ...crudRoutes(authenticatorResource, s.authenticators, { tag: 'Authenticator', access: { read: 'admin-read', write: 'admin' } }),
      ...authPolicyRoutes(s.store, s.authPolicies),
      ...mfaRoutes(s.mfa, s.pki),
      ...identityMfaRoutes(s.store, s.mfa),
      ...configTypeRoutes(s.configTypes, s.configs),
      ...configRoutes(s.configs),
      ...serviceRoutes({ store: s.store, access: s.access, services: s.services, views: s.serviceViews, configs: s.configs }),
      ...identityServiceConfigRoutes(s.store, s.access),
      ...apiSessionRoutes(s.store, s.apiSessions, s.auth),
      ...policyRoutes({ service: s.servicePolicies, edgeRouter: s.edgeRouterPolicies, serviceEdgeRouter: s.serviceEdgeRouterPolicies }),
      ...postureCheckRoutes(s.store, s.postureChecks, s.postureCheckTypes),
      ...accessListRoutes(s),
      ...managementSessionRoutes(s.sessions),
      ...edgeRouterRoutes(s.store, s.access, s.edgeRouters),
      ...routerRoutes(s.routers),
      ...terminatorRoutes(s.terminators),
      ...caRoutes(s.cas),
      ...certificateExtensionRoutes(s.certificateExtension),
      ...externalJwtSignerRoutes(s.externalJwtSigners),
      ...enrollmentRoutes(s.store, s.enrollments),
      networkJwtRoute(s.enrollments),
      ...databaseRoutes(s.database),
      ...controllerSettingRoutes(s.controllerSettings),
    ],
  };
}
