/**
 * Management view of API sessions: list (filterable), detail and delete. Reading needs admin,
 * `admin_readonly` or `ops.read`; deleting needs admin or `ops.delete`.
 */
import type { RouteSpec } from '../../http/route.ts';
import { IdParams, ListQuery, listRequest } from '../../http/list-params.ts';
import { detailEnvelope, empty, emptyEnvelope, list, listEnvelope, ok } from '../../http/envelope.ts';
import type { Store } from '../../store/store.ts';
import { compileListQuery } from '../../query/index.ts';
import { filterableFields } from '../../query/symbols.ts';
import { assertFound } from '../../errors.ts';
import { decodeApiSessionRow, type ApiSessionService } from '../../auth/api-session.service.ts';
import type { AuthenticationService } from '../../auth/authentication.service.ts';
import { apiSessionDetail, apiSessionSymbols } from './api-session.resource.ts';

export function apiSessionRoutes(store: Store, apiSessions: ApiSessionService, auth: AuthenticationService): RouteSpec[] {
  const tag = 'API Session';
  return [
    {
      method: 'GET', url: '/api-sessions', operationId: 'listAPISessions', tag, summary: 'List API sessions',
      access: 'ops.read', querystring: ListQuery,
      response: { 200: listEnvelope(apiSessionDetail) },
      handler: async (req) => {
        const q = compileListQuery(apiSessionSymbols, listRequest(req), store.dialect);
        const { rows, totalCount } = await store.page('api_sessions', q);
        const items: Array<Record<string, unknown>> = [];
        for (const r of rows) items.push(await auth.presentApiSession(decodeApiSessionRow(r)));
        return list(
          items,
          { limit: q.limit, offset: q.offset, totalCount, unlimited: q.unlimited },
          filterableFields(apiSessionSymbols),
        );
      },
    },
    {
      method: 'GET', url: '/api-sessions/:id', operationId: 'detailAPISessions', tag, summary: 'Retrieve an API session',
      access: 'ops.read', params: IdParams,
      response: { 200: detailEnvelope(apiSessionDetail) },
      handler: async (req) => {
        const id = (req.params as { id: string }).id;
        return ok(await auth.presentApiSession(assertFound(await apiSessions.get(id), 'apiSession', id)));
      },
    },
    {
      method: 'DELETE', url: '/api-sessions/:id', operationId: 'deleteAPISessions', tag, summary: 'End an API session',
      access: 'ops.delete', params: IdParams, response: { 200: emptyEnvelope },
      handler: async (req) => {
        const id = (req.params as { id: string }).id;
        await store.write(async (tx) => {
          if (!(await apiSessions.remove(tx, id))) assertFound(undefined, 'apiSession', id);
        });
        return empty();
      },
    },
  ];
}
