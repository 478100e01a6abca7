/**
 * Every operation of the fabric API (`/fabric/v1`) Portcullis serves, in one readable list: the read side of
 * upstream's fabric management API (routers, services, terminators, links, circuits) and the link patch
 * (static cost, down). Its other writes, inspections, database and cluster operations are not served; they
 * answer 404/405 like any unknown route.
 */
import type { ApiDefinition } from '../http/route.ts';
import type { Services } from './services.ts';
import { crudRoutes } from '../http/crud-routes.ts';
import { fabricRouterResource } from '../resources/routers/fabric-router.resource.ts';
import { fabricServiceResource } from '../resources/services/fabric-service.resource.ts';
import { fabricTerminatorRoutes } from '../resources/terminators/terminator.routes.ts';
import { linkRoutes } from '../resources/links/link.routes.ts';
import { circuitRoutes } from '../resources/circuits/circuit.routes.ts';
import { fabricPath } from '../system/system-info.ts';

export function fabricApi(s: Services): ApiDefinition {
  return {
    name: 'fabric',
    prefix: fabricPath,
    title: 'Portcullis Fabric Management API',
    routes: [
      // Upstream's fabric routers, services and terminators are for admins only (not admin_readonly, no permission value).
      ...crudRoutes(fabricRouterResource, s.fabricRouters, { tag: 'Router', operations: ['list', 'detail'], access: { read: 'admin' } }),
      ...crudRoutes(fabricServiceResource, s.fabricServices, { tag: 'Service', operations: ['list', 'detail'], access: { read: 'admin' } }),
      ...fabricTerminatorRoutes(s.terminators),
      ...linkRoutes(s.links),
      ...circuitRoutes(s.circuits),
    ],
  };
}
