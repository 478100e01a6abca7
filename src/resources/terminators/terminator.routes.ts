/**
 * Terminator operations: the uniform CRUD, a service's terminators on the management API, and the same
 * list on the client API, where it exists only for callers that may dial or bind the service (404
 * otherwise; admins see every service). The fabric API reads the same records (all of them, a router's, a
 * service's) in its own read model, for admins only as upstream's fabric routes declare.
 */
import type { FastifyRequest } from 'fastify';
import type { RouteSpec } from '../../http/route.ts';
import { crudRoutes } from '../../http/crud-routes.ts';
import { IdParams, ListQuery, listRequest } from '../../http/list-params.ts';
import { detailEnvelope, list, listEnvelope, ok } from '../../http/envelope.ts';
import { callerOf } from '../../http/caller.ts';
import { isAdmin } from '../../auth/permissions.ts';
import { notFound } from '../../errors.ts';
import type { Sql, Store } from '../../store/store.ts';
import type { Values } from '../../store/entity-table.ts';
import type { AccessService } from '../../access/access.service.ts';
import { clientTerminatorDetail, fabricTerminatorDetail, terminatorResource } from './terminator.resource.ts';
import type { TerminatorService } from './terminator.service.ts';

const idOf = (req: FastifyRequest) => (req.params as { id: string }).id;

async function assertService(q: Sql, id: string): Promise<void> {
  if (!(await q.get('SELECT 1 FROM services WHERE id = ?', [id]))) throw notFound('service', id);
}

/** Each record in the read model `present` makes, in order. */
async function presentAll(items: readonly Values[], present: (values: Values) => Promise<Record<string, unknown>>): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = [];
  for (const item of items) out.push(await present(item));
  return out;
}

export function terminatorRoutes(terminators: TerminatorService): RouteSpec[] {
  return [
    ...crudRoutes(terminatorResource, terminators, { tag: 'Terminator' }),
    {
      method: 'GET', url: '/services/:id/terminators', operationId: 'listServiceTerminators', tag: 'Service',
      summary: 'List the terminators of a service', access: 'terminator.read',
      params: IdParams, querystring: ListQuery, response: { 200: listEnvelope(terminatorResource.schemas.detail) },
      handler: async (req) => {
        const id = idOf(req);
        const r = await terminators.listForService(id, listRequest(req));
        return list(await presentAll(r.items, terminators.present), r.page, r.filterableFields);
      },
    },
  ];
}

export function clientTerminatorRoutes(store: Store, access: AccessService, terminators: TerminatorService): RouteSpec[] {
  return [
    {
      method: 'GET', url: '/services/:id/terminators', operationId: 'listServiceTerminators', tag: 'Service',
      summary: 'List the terminators of a service the caller may use', access: 'session',
      params: IdParams, querystring: ListQuery, response: { 200: listEnvelope(clientTerminatorDetail) },
      handler: async (req) => {
        const id = idOf(req);
        const caller = callerOf(req);
        if (!isAdmin(caller.identity)) {
          const p = access.index.permissions(caller.identity.id, id);
          if (!p.dial && !p.bind) throw notFound('service', id);
        }
        await assertService(store, id);
        const r = await terminators.listForService(id, listRequest(req));
        return list(await presentAll(r.items, terminators.presentForClient), r.page, r.filterableFields);
      },
    },
  ];
}

/** The fabric API's terminator reads (`/fabric/v1`): upstream requires an admin for each of them. */
export function fabricTerminatorRoutes(terminators: TerminatorService): RouteSpec[] {
  const listResponse = { 200: listEnvelope(fabricTerminatorDetail) };
  return [
    {
      method: 'GET', url: '/terminators', operationId: 'listTerminators', tag: 'Terminator', summary: 'List terminators',
      access: 'admin', querystring: ListQuery, response: listResponse,
      handler: async (req) => {
        const r = await terminators.list(listRequest(req));
        return list(await presentAll(r.items, terminators.presentForFabric), r.page, r.filterableFields);
      },
    },
    {
      method: 'GET', url: '/terminators/:id', operationId: 'detailTerminator', tag: 'Terminator', summary: 'Retrieve a terminator',
      access: 'admin', params: IdParams, response: { 200: detailEnvelope(fabricTerminatorDetail) },
      handler: async (req) => ok(await terminators.presentForFabric(await terminators.get(idOf(req)))),
    },
    {
      // A router that does not exist has no terminators: an empty page, as upstream answers.
      method: 'GET', url: '/routers/:id/terminators', operationId: 'listRouterTerminators', tag: 'Router',
      summary: 'List the terminators of a router', access: 'admin', params: IdParams, querystring: ListQuery, response: listResponse,
      handler: async (req) => {
        const r = await terminators.listForRouter(idOf(req), listRequest(req));
        return list(await presentAll(r.items, terminators.presentForFabric), r.page, r.filterableFields);
      },
    },
    {
      method: 'GET', url: '/services/:id/terminators', operationId: 'listServiceTerminators', tag: 'Service',
      summary: 'List the terminators of a service', access: 'admin', params: IdParams, querystring: ListQuery, response: listResponse,
      handler: async (req) => {
        const r = await terminators.listForService(idOf(req), listRequest(req));
        return list(await presentAll(r.items, terminators.presentForFabric), r.page, r.filterableFields);
      },
    },
  ];
}
