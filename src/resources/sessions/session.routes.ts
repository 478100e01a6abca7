/**
 * Session operations. Client API: create, list (own sessions; admins all), detail and delete (own
 * identity only), the edge routers a client may use for a service and for itself, and the
 * service-updates mark SDKs poll. Management API: list, detail, delete and route path, for admins and
 * the `ops` permissions.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { RouteSpec } from '../../http/route.ts';
import { callerOf } from '../../http/caller.ts';
import { IdParams, ListQuery, listRequest } from '../../http/list-params.ts';
import { detailEnvelope, empty, emptyEnvelope, list, listEnvelope, ok } from '../../http/envelope.ts';
import type { SessionService } from './session.service.ts';
import {
  SessionCreate,
  currentIdentityEdgeRouter,
  serviceEdgeRouters,
  serviceUpdates,
  sessionDetail,
  sessionManagementDetail,
  sessionRoutePath,
} from './session.resource.ts';

const tag = 'Session';
const idOf = (req: FastifyRequest) => (req.params as { id: string }).id;

const SessionTokenHeader = Type.Object({ 'session-token': Type.Optional(Type.String()) });

export function clientSessionRoutes(sessions: SessionService): RouteSpec[] {
  return [
    {
      method: 'GET', url: '/sessions', operationId: 'listSessions', tag, summary: "List the caller's sessions",
      access: 'session', querystring: ListQuery, response: { 200: listEnvelope(sessionManagementDetail) },
      handler: async (req) => {
        const r = await sessions.listForCaller(callerOf(req), listRequest(req));
        const items: Array<Record<string, unknown>> = [];
        for (const s of r.items) items.push(await sessions.present(s));
        return list(items, r.page, r.filterableFields);
      },
    },
    {
      method: 'POST', url: '/sessions', operationId: 'createSession', tag, summary: 'Create a session to dial or bind a service',
      access: 'session', body: SessionCreate, response: { 201: detailEnvelope(sessionDetail) },
      handler: async (req, reply) => {
        const { record, jwt } = await sessions.create(callerOf(req), (req.body ?? {}) as Record<string, unknown>);
        return reply.code(201).send(ok(await sessions.present(record, jwt)));
      },
    },
    {
      method: 'GET', url: '/sessions/:id', operationId: 'detailSession', tag, summary: "Retrieve one of the caller's sessions",
      access: 'session', params: IdParams, response: { 200: detailEnvelope(sessionManagementDetail) },
      handler: async (req) => ok(await sessions.present(await sessions.getOwn(callerOf(req), idOf(req)))),
    },
    {
      method: 'DELETE', url: '/sessions/:id', operationId: 'deleteSession', tag, summary: "Delete one of the caller's sessions",
      access: 'session', params: IdParams, response: { 200: emptyEnvelope },
      handler: async (req) => {
        await sessions.removeOwn(callerOf(req), idOf(req));
        return empty();
      },
    },
    {
      method: 'GET', url: '/services/:id/edge-routers', operationId: 'listServiceEdgeRouters', tag: 'Service',
      summary: 'List the edge routers the caller may use for a service', access: 'session',
      params: IdParams, querystring: ListQuery, headers: SessionTokenHeader,
      response: { 200: detailEnvelope(serviceEdgeRouters) },
      handler: async (req) => {
        const header = req.headers['session-token'];
        const token = Array.isArray(header) ? header[0] : header;
        return ok({ edgeRouters: await sessions.serviceEdgeRouters(callerOf(req), idOf(req), token) });
      },
    },
    {
      method: 'GET', url: '/current-identity/edge-routers', operationId: 'getCurrentIdentityEdgeRouters', tag: 'Current Identity',
      summary: 'List the edge routers the caller may use', access: 'session', querystring: ListQuery,
      response: { 200: listEnvelope(currentIdentityEdgeRouter) },
      handler: async (req) => {
        const r = await sessions.currentIdentityEdgeRouters(callerOf(req), listRequest(req));
        return list(r.items, r.page, r.filterableFields);
      },
    },
    {
      method: 'GET', url: '/current-api-session/service-updates', operationId: 'listServiceUpdates', tag: 'Current API Session',
      summary: 'When the services of the caller last changed', access: 'session',
      response: { 200: detailEnvelope(serviceUpdates) },
      handler: async (req) => ok({ lastChangeAt: await sessions.lastServiceChange(callerOf(req)) }),
    },
  ];
}

export function managementSessionRoutes(sessions: SessionService): RouteSpec[] {
  return [
    {
      method: 'GET', url: '/sessions', operationId: 'listSessions', tag, summary: 'List sessions',
      access: 'ops.read', querystring: ListQuery,
      response: { 200: listEnvelope(sessionManagementDetail) },
      handler: async (req) => {
        const r = await sessions.list(listRequest(req));
        const items: Array<Record<string, unknown>> = [];
        for (const s of r.items) items.push(await sessions.present(s));
        return list(items, r.page, r.filterableFields);
      },
    },
    {
      method: 'GET', url: '/sessions/:id', operationId: 'detailSession', tag, summary: 'Retrieve a session',
      access: 'ops.read', params: IdParams,
      response: { 200: detailEnvelope(sessionManagementDetail) },
      handler: async (req) => ok(await sessions.present(await sessions.get(idOf(req)))),
    },
    {
      method: 'DELETE', url: '/sessions/:id', operationId: 'deleteSession', tag, summary: 'Delete a session',
      access: 'ops.delete', params: IdParams, response: { 200: emptyEnvelope },
      handler: async (req) => {
        await sessions.remove(idOf(req));
        return empty();
      },
    },
    {
      method: 'GET', url: '/sessions/:id/route-path', operationId: 'detailSessionRoutePath', tag,
      summary: "The router path of a session's circuit", access: 'ops.read', params: IdParams,
      response: { 200: detailEnvelope(sessionRoutePath) },
      handler: async (req) => ok({ routePath: await sessions.routePath(idOf(req)) }),
    },
  ];
}
