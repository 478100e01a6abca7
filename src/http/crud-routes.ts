/**
 * The six uniform operations of a declared resource (list, create, detail, put, patch, delete) as
 * RouteSpecs. Schemas and permission checks come from the declaration; the service does the work.
 * Operations a resource handles differently are written out explicitly in its own routes file.
 */
import type { FastifyRequest } from 'fastify';
import type { TSchema } from '@sinclair/typebox';
import type { Resource } from '../resources/define-resource.ts';
import type { ListResult } from '../resources/entity-service.ts';
import type { Values } from '../store/entity-table.ts';
import { can, type PermissionResource, type Action } from '../auth/permissions.ts';
import type { RouteSpec } from './route.ts';
import { created, createEnvelope, detailEnvelope, empty, emptyEnvelope, list, listEnvelope, ok } from './envelope.ts';
import { IdParams, ListQuery, RoleListQuery, listRequest } from './list-params.ts';
import type { Caller } from './caller.ts';

export interface CrudService {
  list(req: ReturnType<typeof listRequest>): ListResult;
  get(id: string): Values;
  create?(body: Record<string, unknown>): string | Promise<string>;
  update?(id: string, body: Record<string, unknown>, mode: 'put' | 'patch'): void | Promise<void>;
  remove?(id: string): void;
  present(values: Values): Record<string, unknown>;
}

export type Operation = 'list' | 'create' | 'detail' | 'update' | 'patch' | 'delete';

export function allowedTo(resource: PermissionResource, action: Action) {
  return (caller: Caller) => can(caller.identity, resource, action);
}

function pascal(s: string): string {
  return s.replace(/(^|-)([a-z])/g, (_m, _d, c: string) => c.toUpperCase());
}

export interface CrudOptions {
  operations?: Operation[];
  roleFilter?: boolean;
  tag: string;
  /** Overrides the permission resource (default: the resource's permission stem). */
  permission?: PermissionResource;
}

export function crudRoutes(resource: Resource, service: CrudService, opts: CrudOptions): RouteSpec[] {
  const ops = new Set(opts.operations ?? ['list', 'create', 'detail', 'update', 'patch', 'delete']);
  const perm = (opts.permission ?? resource.permission) as PermissionResource;
  const base = `/${resource.entityType}`;
  const name = pascal(resource.entityType);
  const singular = pascal(resource.singular.replace(/ /g, '-'));
  const detail = resource.schemas.detail;
  const routes: RouteSpec[] = [];
  const body = (req: FastifyRequest) => (req.body ?? {}) as Record<string, unknown>;
  const id = (req: FastifyRequest) => (req.params as { id: string }).id;

  if (ops.has('list')) {
    routes.push({
      method: 'GET', url: base, operationId: `list${name}`, tag: opts.tag, summary: `List ${resource.entityType}`,
      auth: 'session', allow: allowedTo(perm, 'read'),
      querystring: opts.roleFilter ? RoleListQuery : ListQuery,
      response: { 200: listEnvelope(detail) },
      handler: (req) => {
        const r = service.list(listRequest(req));
        return list(r.items.map(service.present), r.page, r.filterableFields);
      },
    });
  }
  if (ops.has('create') && service.create && resource.schemas.create) {
    routes.push({
      method: 'POST', url: base, operationId: `create${singular}`, tag: opts.tag, summary: `Create a ${resource.singular}`,
      auth: 'session', allow: allowedTo(perm, 'create'),
      body: resource.schemas.create as TSchema,
      response: { 201: createEnvelope },
      handler: async (req, reply) => {
        const newId = await service.create!(body(req));
        return reply.code(201).send(created(newId, resource.links(newId)));
      },
    });
  }
  if (ops.has('detail')) {
    routes.push({
      method: 'GET', url: `${base}/:id`, operationId: `detail${singular}`, tag: opts.tag, summary: `Retrieve a ${resource.singular}`,
      auth: 'session', allow: allowedTo(perm, 'read'), params: IdParams,
      response: { 200: detailEnvelope(detail) },
      handler: (req) => ok(service.present(service.get(id(req)))),
    });
  }
  for (const mode of ['update', 'patch'] as const) {
    const schema = mode === 'update' ? resource.schemas.update : resource.schemas.patch;
    if (!ops.has(mode) || !service.update || !schema) continue;
    routes.push({
      method: mode === 'update' ? 'PUT' : 'PATCH', url: `${base}/:id`, operationId: `${mode}${singular}`, tag: opts.tag,
      summary: `${mode === 'update' ? 'Update all fields of' : 'Update the supplied fields of'} a ${resource.singular}`,
      auth: 'session', allow: allowedTo(perm, 'update'), params: IdParams, body: schema,
      response: { 200: emptyEnvelope },
      handler: async (req) => {
        await service.update!(id(req), body(req), mode === 'update' ? 'put' : 'patch');
        return empty();
      },
    });
  }
  if (ops.has('delete') && service.remove) {
    routes.push({
      method: 'DELETE', url: `${base}/:id`, operationId: `delete${singular}`, tag: opts.tag, summary: `Delete a ${resource.singular}`,
      auth: 'session', allow: allowedTo(perm, 'delete'), params: IdParams,
      response: { 200: emptyEnvelope },
      handler: (req) => {
        service.remove!(id(req));
        return empty();
      },
    });
  }
  return routes;
}
