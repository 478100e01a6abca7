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

export function clientApi(s: Services): ApiDefinition {
  return {
    name: 'client',
    prefix: '/edge/client/v1',
    title: 'Portcullis Edge Client API',
    routes: [...systemRoutes(s.system, s.controllers, 'client'), ...authenticationRoutes(s), ...clientSessionRoutes(s.sessions), ...clientTerminatorRoutes(s.db, s.access, s.terminators), ...clientServiceRoutes({ db: s.db, access: s.access, services: s.services, views: s.serviceViews, configs: s.configs })],
  };
}
