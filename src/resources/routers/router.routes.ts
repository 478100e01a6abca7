/**
 * `/transit-routers` and `/routers`: one resource served under both paths with the same handlers, as
 * upstream does (operation ids `…TransitRouter…` and `…Router…` as the reference names them).
 */
import type { RouteSpec } from '../../http/route.ts';
import { crudRoutes } from '../../http/crud-routes.ts';
import { routerResource } from './router.resource.ts';
import type { RouterService } from './router.service.ts';

export function routerRoutes(routers: RouterService): RouteSpec[] {
  const transit = crudRoutes(routerResource, routers, { tag: 'Router' });
  const plain = transit.map((r) => ({
    ...r,
    url: r.url.replace(/^\/transit-routers/, '/routers'),
    operationId: r.operationId.replace('TransitRouter', 'Router'),
  }));
  return [...plain, ...transit];
}
