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
import { prepare } from '../../store/entity-table.ts';
import type { Db } from '../../store/database.ts';
import type { AccessService } from '../../access/access.service.ts';
import { clientTerminatorDetail, fabricTerminatorDetail, terminatorResource } from './terminator.resource.ts';
import type { TerminatorService } from './terminator.service.ts';

const idOf = (req: FastifyRequest) => (req.params as { id: string }).id;

function assertService(db: Db, id: string): void {
  if (!prepare(db, 'SELECT 1 FROM services WHERE id = ?').get(id)) throw notFound('service', id);
}

export function terminatorRoutes(terminators: TerminatorService): RouteSpec[] {
  return [
    ...crudRoutes(terminatorResource, terminators, { tag: 'Terminator' }),
    {
      method: 'GET', url: '/services/:id/terminators', operationId: 'listServiceTerminators', tag: 'Service',
      summary: 'List the terminators of a service', access: 'terminator.read',
      params: IdParams, querystring: ListQuery, response: { 200: listEnvelope(terminatorResource.schemas.detail) },
      handler: (req) => {
        const id = idOf(req);
        const r = terminators.listForService(id, listRequest(req));
        return list(r.items.map(terminators.present), r.page, r.filterableFields);
      },
    },
  ];
}

export function clientTerminatorRoutes(db: Db, access: AccessService, terminators: TerminatorService): RouteSpec[] {
  return [
    {
      method: 'GET', url: '/services/:id/terminators', operationId: 'listServiceTerminators', tag: 'Service',
      summary: 'List the terminators of a service the caller may use', access: 'session',
      params: IdParams, querystring: ListQuery, response: { 200: listEnvelope(clientTerminatorDetail) },
      handler: (req) => {
        const id = idOf(req);
        const caller = callerOf(req);
        if (!isAdmin(caller.identity)) {
          const p = access.index.permissions(caller.identity.id, id);
          if (!p.dial && !p.bind) throw notFound('service', id);
        }
        assertService(db, id);
        const r = terminators.listForService(id, listRequest(req));
        return list(r.items.map(terminators.presentForClient), r.page, r.filterableFields);
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
      handler: (req) => {
        const r = terminators.list(listRequest(req));
        return list(r.items.map(terminators.presentForFabric), r.page, r.filterableFields);
      },
    },
    {
      method: 'GET', url: '/terminators/:id', operationId: 'detailTerminator', tag: 'Terminator', summary: 'Retrieve a terminator',
      access: 'admin', params: IdParams, response: { 200: detailEnvelope(fabricTerminatorDetail) },
      handler: (req) => ok(terminators.presentForFabric(terminators.get(idOf(req)))),
    },
    {
      // A router that does not exist has no terminators: an empty page, as upstream answers.
      method: 'GET', url: '/routers/:id/terminators', operationId: 'listRouterTerminators', tag: 'Router',
      summary: 'List the terminators of a router', access: 'admin', params: IdParams, querystring: ListQuery, response: listResponse,
      handler: (req) => {
        const r = terminators.listForRouter(idOf(req), listRequest(req));
        return list(r.items.map(terminators.presentForFabric), r.page, r.filterableFields);
      },
    },
    {
      method: 'GET', url: '/services/:id/terminators', operationId: 'listServiceTerminators', tag: 'Service',
      summary: 'List the terminators of a service', access: 'admin', params: IdParams, querystring: ListQuery, response: listResponse,
      handler: (req) => {
        const r = terminators.listForService(idOf(req), listRequest(req));
        return list(r.items.map(terminators.presentForFabric), r.page, r.filterableFields);
      },
    },
  ];
}
