/**
 * `/<entity>-role-attributes`: the distinct role attributes in use by one entity type, as a filterable list
 * of strings. The filter language applies to the attribute itself (symbol `id`). As upstream, the `limit`,
 * `offset` and `sort` parameters are ignored (consoles send `sort=name asc`): the list holds every value in
 * ascending order unless the filter itself sorts or pages (`true sort by id desc limit 5`).
 */
import { Type } from '@sinclair/typebox';
import type { RouteSpec } from '../http/route.ts';
import { ListQuery, listRequest } from '../http/list-params.ts';
import { list } from '../http/envelope.ts';
import { ListMeta } from './common.schema.ts';
import type { PermissionResource } from '../auth/permissions.ts';
import type { Sql, Store } from '../store/store.ts';
import { compileListQuery } from '../query/index.ts';

export interface RoleAttributeListSpec {
  url: string;
  operationId: string;
  tag: string;
  table: string;
  permission: PermissionResource;
  store: Store;
}

export async function listRoleAttributes(q: Sql, table: string, req: ReturnType<typeof listRequest>) {
  const symbols = { idSql: 'e.attribute', symbols: { id: { kind: 'scalar' as const, type: 'string' as const, sql: 'e.attribute' } } };
  const c = compileListQuery(symbols, { filter: req.filter, limit: -1 }, q.dialect);
  const { rows, totalCount } = await q.page(`(SELECT DISTINCT attribute FROM ${table})`, c);
  return { items: rows.map((r) => r.attribute as string), page: { limit: c.limit, offset: c.offset, totalCount, unlimited: c.unlimited } };
}

export function roleAttributeListRoute(spec: RoleAttributeListSpec): RouteSpec {
  return {
    method: 'GET', url: spec.url, operationId: spec.operationId, tag: spec.tag,
    summary: 'List the role attributes in use', access: `${spec.permission}.read`,
    querystring: ListQuery,
    response: { 200: Type.Object({ data: Type.Array(Type.String()), meta: ListMeta }) },
    handler: async (req) => {
      const r = await listRoleAttributes(spec.store, spec.table, listRequest(req));
      return list(r.items, r.page, ['id']);
    },
  };
}
