/**
 * Every operation of the client API (`/edge/client/v1`), in one readable list.
 */
import type { ApiDefinition } from '../http/route.ts';
import type { Services } from './services.ts';
import { systemRoutes } from '../system/system.routes.ts';
import { authenticationRoutes } from '../auth/authenticate.routes.ts';
import { clientSessionRoutes } from '../resources/sessions/session.routes.ts';
import { clientTerminatorRoutes } from '../resources/terminators/terminator.routes.ts';
import { clientServiceRoutes } from '../resources/services/service.routes.ts';
import { certificateExtensionRoutes } from '../resources/authenticators/certificate-extension.routes.ts';
import { clientExternalJwtSignerRoutes } from '../resources/external-jwt-signers/external-jwt-signer.routes.ts';
import { enrollRoutes, networkJwtRoute } from '../enrollment/enroll.routes.ts';
import { mfaRoutes } from '../resources/mfa/mfa.routes.ts';
import { apiSessionCertificateRoutes } from '../resources/api-session-certificates/api-session-certificate.routes.ts';

import { clientPostureRoutes } from '../posture/posture.routes.ts';

export function clientApi(s: Services): ApiDefinition {
  return {
    name: 'client',
    prefix: '/edge/client/v1',
    title: 'Portcullis Edge Client API',
    routes: [...clientPostureRoutes(s.posture), ...systemRoutes(s.system, s.controllers, 'client'), ...authenticationRoutes(s), ...mfaRoutes(s.mfa, s.pki), ...certificateExtensionRoutes(s.certificateExtension), ...clientSessionRoutes(s.sessions), ...clientTerminatorRoutes(s.store, s.access, s.terminators), ...clientServiceRoutes({ store: s.store, access: s.access, services: s.services, views: s.serviceViews, configs: s.configs }), ...clientExternalJwtSignerRoutes(s.externalJwtSigners), ...enrollRoutes({ store: s.store, methods: s.enrollMethods, pki: s.pki, membership: s.membership }), networkJwtRoute(s.enrollments), ...apiSessionCertificateRoutes(s.apiSessionCertificates)],
  };
}
