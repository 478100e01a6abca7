/**
 * Config type operations: the uniform CRUD and the configs of one type.
 */
import type { RouteSpec } from '../../http/route.ts';
import { crudRoutes } from '../../http/crud-routes.ts';
import { IdParams, ListQuery, listRequest } from '../../http/list-params.ts';
import { list, listEnvelope } from '../../http/envelope.ts';
import { configTypeResource } from './config-type.resource.ts';
import type { ConfigTypeService } from './config-type.service.ts';
import { configResource } from '../configs/config.resource.ts';
import type { ConfigService } from '../configs/config.service.ts';

export function configTypeRoutes(configTypes: ConfigTypeService, configs: ConfigService): RouteSpec[] {
  return [
    ...crudRoutes(configTypeResource, configTypes, { tag: 'Config' }),
    {
      method: 'GET', url: '/config-types/:id/configs', operationId: 'listConfigsForConfigType', tag: 'Config',
      summary: 'List the configs of a config type', access: 'config.read',
      params: IdParams, querystring: ListQuery, response: { 200: listEnvelope(configResource.schemas.detail) },
      handler: async (req) => {
        const typeId = (req.params as { id: string }).id;
        const r = await configs.list(listRequest(req), { sql: 'e.config_type_id = ?', params: [typeId] });
        const items: Array<Record<string, unknown>> = [];
        for (const item of r.items) items.push(await configs.present(item));
        return list(items, r.page, r.filterableFields);
      },
    },
  ];
}
