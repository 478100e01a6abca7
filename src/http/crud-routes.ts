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
import type { Access, Action, PermissionResource } from '../auth/permissions.ts';
import type { RouteSpec } from './route.ts';
import { created, createEnvelope, detailEnvelope, empty, emptyEnvelope, list, listEnvelope, ok } from './envelope.ts';
import { IdParams, ListQuery, RoleListQuery, listRequest } from './list-params.ts';

export interface CrudService {
  list(req: ReturnType<typeof listRequest>): Promise<ListResult>;
  get(id: string): Promise<Values>;
  create?(body: Record<string, unknown>, extra?: Values): Promise<string>;
  update?(id: string, body: Record<string, unknown>, mode: 'put' | 'patch', extra?: Values): Promise<void>;
  remove?(id: string): Promise<void>;
  present(values: Values): Record<string, unknown> | Promise<Record<string, unknown>>;
}

export type Operation = 'list' | 'create' | 'detail' | 'update' | 'patch' | 'delete';

function pascal(s: string): string {
  return s.replace(/(^|-)([a-z])/g, (_m, _d, c: string) => c.toUpperCase());
}

export interface CrudOptions {
  operations?: Operation[];
  roleFilter?: boolean;
  tag: string;
  /**
   * Access rules that replace the default `<permission stem>.<action>` ones, for records no permission value
   * covers: `read` for list and detail, `write` for the rest.
   */
  access?: { read: Access; write?: Access };
  /** Rewrites create, put and patch bodies before validation (see RouteSpec.normalizeBody). */
  normalizeBody?: (body: unknown) => unknown;
  /** What the caller is shown of each presented record, in lists and details (e.g. secrets withheld). */
  shownTo?: (req: FastifyRequest, item: Record<string, unknown>) => Record<string, unknown> | Promise<Record<string, unknown>>;
  /**
   * Stored values a write derives from its caller (e.g. the rights of who last changed a record), merged into
   * the record by create, put and patch; undefined adds nothing.
   */
  stamp?: (req: FastifyRequest, mode: 'create' | 'put' | 'patch') => Values | undefined;
}

export function crudRoutes(resource: Resource, service: CrudService, opts: CrudOptions): RouteSpec[] {
  const ops = new Set(opts.operations ?? ['list', 'create', 'detail', 'update', 'patch', 'delete']);
  const perm = resource.permission as PermissionResource;
  const rule = (action: Action): Access => (action === 'read' ? opts.access?.read : opts.access?.write) ?? `${perm}.${action}`;
  const base = `/${resource.entityType}`;
  const name = pascal(resource.entityType);
  const singular = pascal(resource.singular.replace(/ /g, '-'));
  const detail = resource.schemas.detail;
  const routes: RouteSpec[] = [];
  const body = (req: FastifyRequest) => (req.body ?? {}) as Record<string, unknown>;
  const id = (req: FastifyRequest) => (req.params as { id: string }).id;
  const shown = async (req: FastifyRequest, values: Values): Promise<Record<string, unknown>> => {
    const presented = await service.present(values);
    return opts.shownTo ? opts.shownTo(req, presented) : presented;
  };

  if (ops.has('list')) {
    routes.push({
      method: 'GET', url: base, operationId: `list${name}`, tag: opts.tag, summary: `List ${resource.entityType}`,
      access: rule('read'),
      querystring: opts.roleFilter ? RoleListQuery : ListQuery,
      response: { 200: listEnvelope(detail) },
      handler: async (req) => {
        const r = await service.list(listRequest(req));
        const items: Array<Record<string, unknown>> = [];
        for (const item of r.items) items.push(await shown(req, item));
        return list(items, r.page, r.filterableFields);
      },
    });
  }
  if (ops.has('create') && service.create && resource.schemas.create) {
    routes.push({
      method: 'POST', url: base, operationId: `create${singular}`, tag: opts.tag, summary: `Create a ${resource.singular}`,
      access: rule('create'),
      body: resource.schemas.create as TSchema, normalizeBody: opts.normalizeBody,
      response: { 201: createEnvelope },
      handler: async (req, reply) => {
        const extra = opts.stamp?.(req, 'create');
        const newId = await (extra ? service.create!(body(req), extra) : service.create!(body(req)));
        return reply.code(201).send(created(newId, resource.links(newId)));
      },
    });
  }
  if (ops.has('detail')) {
    routes.push({
      method: 'GET', url: `${base}/:id`, operationId: `detail${singular}`, tag: opts.tag, summary: `Retrieve a ${resource.singular}`,
      access: rule('read'), params: IdParams,
      response: { 200: detailEnvelope(detail) },
      handler: async (req) => ok(await shown(req, await service.get(id(req)))),
    });
  }
  for (const mode of ['update', 'patch'] as const) {
    const schema = mode === 'update' ? resource.schemas.update : resource.schemas.patch;
    if (!ops.has(mode) || !service.update || !schema) continue;
    routes.push({
      method: mode === 'update' ? 'PUT' : 'PATCH', url: `${base}/:id`, operationId: `${mode}${singular}`, tag: opts.tag,
      summary: `${mode === 'update' ? 'Update all fields of' : 'Update the supplied fields of'} a ${resource.singular}`,
      access: rule('update'), params: IdParams, body: schema, normalizeBody: opts.normalizeBody,
      response: { 200: emptyEnvelope },
      handler: async (req) => {
        const writeMode = mode === 'update' ? 'put' : 'patch';
        const extra = opts.stamp?.(req, writeMode);
        await (extra ? service.update!(id(req), body(req), writeMode, extra) : service.update!(id(req), body(req), writeMode));
        return empty();
      },
    });
  }
  if (ops.has('delete') && service.remove) {
    routes.push({
      method: 'DELETE', url: `${base}/:id`, operationId: `delete${singular}`, tag: opts.tag, summary: `Delete a ${resource.singular}`,
      access: rule('delete'), params: IdParams,
      response: { 200: emptyEnvelope },
      handler: async (req) => {
        await service.remove!(id(req));
        return empty();
      },
    });
  }
  return routes;
}
