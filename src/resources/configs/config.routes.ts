/**
 * Config operations: the uniform CRUD. (`/configs/{id}/services` is served with the other service lists.)
 */
import type { RouteSpec } from '../../http/route.ts';
import { crudRoutes } from '../../http/crud-routes.ts';
import { configResource } from './config.resource.ts';
import type { ConfigService } from './config.service.ts';

export function configRoutes(configs: ConfigService): RouteSpec[] {
  return crudRoutes(configResource, configs, { tag: 'Config' });
}
