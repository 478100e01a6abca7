/**
 * Management view of API sessions: list (filterable), detail and delete. Reading needs admin,
 * `admin_readonly` or `ops.read`; deleting needs admin or `ops.delete`.
 */
import type { RouteSpec } from '../../http/route.ts';
import { IdParams, ListQuery, listRequest } from '../../http/list-params.ts';
import { detailEnvelope, empty, emptyEnvelope, list, listEnvelope, ok } from '../../http/envelope.ts';
import type { Db } from '../../store/database.ts';
import { selectPage } from '../../store/entity-table.ts';
import { withTransaction } from '../../store/transaction.ts';
import { compileListQuery } from '../../query/index.ts';
import { filterableFields } from '../../query/symbols.ts';
import { assertFound } from '../../errors.ts';
import { decodeApiSessionRow, type ApiSessionService } from '../../auth/api-session.service.ts';
import type { AuthenticationService } from '../../auth/authentication.service.ts';
import { apiSessionDetail, apiSessionSymbols } from './api-session.resource.ts';

export function apiSessionRoutes(db: Db, apiSessions: ApiSessionService, auth: AuthenticationService): RouteSpec[] {
  const tag = 'API Session';
  return [
    {
      method: 'GET', url: '/api-sessions', operationId: 'listAPISessions', tag, summary: 'List API sessions',
      access: 'ops.read', querystring: ListQuery,
      response: { 200: listEnvelope(apiSessionDetail) },
      handler: (req) => {
        const q = compileListQuery(apiSessionSymbols, listRequest(req));
        const { rows, totalCount } = selectPage(db, 'api_sessions', q);
        return list(
          rows.map((r) => auth.presentApiSession(decodeApiSessionRow(r))),
          { limit: q.limit, offset: q.offset, totalCount, unlimited: q.unlimited },
          filterableFields(apiSessionSymbols),
        );
      },
    },
    {
      method: 'GET', url: '/api-sessions/:id', operationId: 'detailAPISessions', tag, summary: 'Retrieve an API session',
      access: 'ops.read', params: IdParams,
      response: { 200: detailEnvelope(apiSessionDetail) },
      handler: (req) => {
        const id = (req.params as { id: string }).id;
        return ok(auth.presentApiSession(assertFound(apiSessions.get(id), 'apiSession', id)));
      },
    },
    {
      method: 'DELETE', url: '/api-sessions/:id', operationId: 'deleteAPISessions', tag, summary: 'End an API session',
      access: 'ops.delete', params: IdParams, response: { 200: emptyEnvelope },
      handler: (req) => {
        const id = (req.params as { id: string }).id;
        withTransaction(db, (tx) => {
          if (!apiSessions.remove(tx, id)) assertFound(undefined, 'apiSession', id);
        });
        return empty();
      },
    },
  ];
}
