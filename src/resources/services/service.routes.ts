/**
 * Service operations on both APIs (model.md §2.3, §2.4): management CRUD with per-caller read parts,
 * the service role attributes, every derived list that returns services, and the client view (the
 * services the caller may dial or bind; admins see all).
 */
import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { RouteSpec } from '../../http/route.ts';
import { crudRoutes } from '../../http/crud-routes.ts';
import { IdParams, ListQuery, listRequest } from '../../http/list-params.ts';
import { detailEnvelope, list, listEnvelope, ok } from '../../http/envelope.ts';
import { callerOf } from '../../http/caller.ts';
import { idSetCondition } from '../../query/dialect.ts';
import { compileListQuery } from '../../query/index.ts';
import { filterableFields } from '../../query/symbols.ts';
import type { Store } from '../../store/store.ts';
import { notFound } from '../../errors.ts';
import type { AccessService } from '../../access/access.service.ts';
import type { IdentitySummary } from '../identities/identity.service.ts';
import type { ListRequest } from '../entity-service.ts';
import { roleAttributeListRoute } from '../role-attributes.routes.ts';
import { configResource } from '../configs/config.resource.ts';
import type { ConfigService } from '../configs/config.service.ts';
import { serviceResource } from './service.resource.ts';
import type { ServiceEntityService } from './service.service.ts';
import { resolveWantedTypes, sessionWantedTypes, type ServiceViews, type ServiceViewOptions, type WantedTypes } from './service-view.ts';

const StringList = Type.Array(Type.String());

const ServiceListQuery = Type.Object({
  ...ListQuery.properties,
  configTypes: Type.Optional(StringList),
  roleFilter: Type.Optional(StringList),
  roleSemantic: Type.Optional(Type.String()),
});

const IdentityServicesQuery = Type.Object({
  ...ListQuery.properties,
  policyType: Type.Optional(Type.Unsafe<'dial' | 'bind'>({ type: 'string', enum: ['dial', 'bind'] })),
});

export interface ServiceRouteDeps {
  store: Store;
  access: AccessService;
  services: ServiceEntityService;
  views: ServiceViews;
  configs: ConfigService;
}

const detail = serviceResource.schemas.detail;
const listResponse = { 200: listEnvelope(detail) };

function id(req: FastifyRequest): string {
  return (req.params as { id: string }).id;
}

/** Management reads only the first `configTypes` value and splits it on commas (model.md §2.4). */
async function managementWanted(store: Store, req: FastifyRequest): Promise<WantedTypes> {
  const values = (req.query as { configTypes?: string[] }).configTypes;
  if (values && values.length > 0) return resolveWantedTypes(store, values[0]!.split(',').map((s) => s.trim()).filter(Boolean));
  return sessionWantedTypes(callerOf(req).apiSession.configTypes);
}

/** The client API takes every repeated `configTypes` value (names, ids or `all`). */
async function clientWanted(store: Store, req: FastifyRequest): Promise<WantedTypes> {
  const values = (req.query as { configTypes?: string[] }).configTypes;
  if (values && values.length > 0) return resolveWantedTypes(store, values);
  return sessionWantedTypes(callerOf(req).apiSession.configTypes);
}

function hasRoleFilter(req: ListRequest): boolean {
  return (req.roleFilter?.length ?? 0) > 0;
}

/** A derived list of services: the id set of the parent (none when it does not exist), filtered, sorted and paged. */
interface ServiceSubList {
  url: string;
  operationId: string;
  tag: string;
  querystring?: TSchema;
  parentExists(id: string): Promise<boolean>;
  ids(id: string, req: FastifyRequest): Iterable<string> | { sql: string; params: unknown[] };
}

function isCondition(x: Iterable<string> | { sql: string; params: unknown[] }): x is { sql: string; params: unknown[] } {
  return typeof (x as { sql?: unknown }).sql === 'string';
}

export function serviceRoutes(deps: ServiceRouteDeps): RouteSpec[] {
  const { store, access, services, views, configs } = deps;
  const exists = (sql: string) => async (key: string) => (await store.get(sql, [key])) !== undefined;

  function subList(spec: ServiceSubList): RouteSpec {
    return {
      method: 'GET', url: spec.url, operationId: spec.operationId, tag: spec.tag,
      summary: 'List the services of this record', access: 'service.read',
      params: IdParams, querystring: spec.querystring ?? ListQuery, response: listResponse,
      handler: async (req) => {
        const parent = id(req);
        const set = (await spec.parentExists(parent)) ? spec.ids(parent, req) : [];
        const r = await services.list(listRequest(req), isCondition(set) ? set : idSetCondition('e.id', set, store.dialect));
        const items = await views.present(r.items, { identityId: callerOf(req).identity.id, apiSessionId: callerOf(req).apiSession.id, permissions: false, emptyConfig: 'null' });
        return list(items, r.page, r.filterableFields);
      },
    };
  }

  return [
    {
      method: 'GET', url: '/services', operationId: 'listServices', tag: 'Service', summary: 'List services',
      access: 'service.read', querystring: ServiceListQuery, response: listResponse,
      handler: async (req) => {
        const lr = listRequest(req);
        const r = await services.list(lr);
        const caller = callerOf(req);
        const opts: ServiceViewOptions = hasRoleFilter(lr)
          ? { identityId: caller.identity.id, apiSessionId: caller.apiSession.id, permissions: false, emptyConfig: 'null' }
          : { identityId: caller.identity.id, apiSessionId: caller.apiSession.id, permissions: true, configTypes: await managementWanted(store, req), emptyConfig: 'object' };
        return list(await views.present(r.items, opts), r.page, r.filterableFields);
      },
    },
    {
      method: 'GET', url: '/services/:id', operationId: 'detailService', tag: 'Service', summary: 'Retrieve a service',
      access: 'service.read', params: IdParams, response: { 200: detailEnvelope(detail) },
      handler: async (req) => {
        const values = await services.get(id(req));
        return ok((await views.present([values], { identityId: callerOf(req).identity.id, apiSessionId: callerOf(req).apiSession.id, permissions: true, emptyConfig: 'null' }))[0]);
      },
    },
    ...crudRoutes(serviceResource, { ...services, present: serviceResource.presentStored }, { tag: 'Service', operations: ['create', 'update', 'patch', 'delete'] }),
    {
      method: 'GET', url: '/services/:id/configs', operationId: 'listServiceConfig', tag: 'Service',
      summary: 'List the configs of a service', access: 'config.read',
      params: IdParams, querystring: ListQuery, response: { 200: listEnvelope(configResource.schemas.detail) },
      handler: async (req) => {
        const serviceId = id(req);
        const r = await configs.list(listRequest(req), { sql: 'e.id IN (SELECT config_id FROM service_configs WHERE service_id = ?)', params: [serviceId] });
        const items: Array<Record<string, unknown>> = [];
        for (const item of r.items) items.push(await configs.present(item));
        return list(items, r.page, r.filterableFields);
      },
    },
    roleAttributeListRoute({
      url: '/service-role-attributes', operationId: 'listServiceRoleAttributes', tag: 'Role Attributes',
      table: 'service_role_attributes', permission: 'service', store,
    }),
    subList({
      url: '/identities/:id/services', operationId: 'listIdentityServices', tag: 'Identity',
      querystring: IdentityServicesQuery, parentExists: exists('SELECT 1 FROM identities WHERE id = ?'),
      ids: (identityId, req) => {
        const type = (req.query as { policyType?: string }).policyType;
        return access.index.servicesOfIdentity(identityId, type === 'dial' ? 'Dial' : type === 'bind' ? 'Bind' : undefined);
      },
    }),
    subList({
      url: '/edge-routers/:id/services', operationId: 'listEdgeRouterServices', tag: 'Edge Router',
      parentExists: exists('SELECT 1 FROM routers WHERE id = ? AND is_edge = 1'),
      ids: (routerId) => access.index.servicesOfEdgeRouter(routerId),
    }),
    subList({
      url: '/service-policies/:id/services', operationId: 'listServicePolicyServices', tag: 'Service Policy',
      parentExists: exists('SELECT 1 FROM service_policies WHERE id = ?'),
      ids: (policyId) => access.index.membersOf(policyId, 'serviceRoles'),
    }),
    subList({
      url: '/service-edge-router-policies/:id/services', operationId: 'listServiceEdgeRouterPolicyServices', tag: 'Service Edge Router Policy',
      parentExists: exists('SELECT 1 FROM service_edge_router_policies WHERE id = ?'),
      ids: (policyId) => access.index.membersOf(policyId, 'serviceRoles'),
    }),
    subList({
      url: '/configs/:id/services', operationId: 'listConfigServices', tag: 'Config',
      parentExists: exists('SELECT 1 FROM configs WHERE id = ?'),
      ids: (configId) => ({ sql: 'e.id IN (SELECT service_id FROM service_configs WHERE config_id = ?)', params: [configId] }),
    }),
  ];
}

/** The client API's service operations. */
export function clientServiceRoutes(deps: ServiceRouteDeps): RouteSpec[] {
  const fields = filterableFields(serviceResource.symbols);
  const serviceFilterableJson = fields.length ? JSON.stringify(fields) : '';
  const { store, access, services, views } = deps;
  // Admins too see only the services a policy lets their identity dial or bind, as upstream.
  const visible = (identity: IdentitySummary, serviceId: string) => {
    const p = access.index.permissions(identity.id, serviceId);
    return p.dial || p.bind;
  };
  return [
    {
      method: 'GET', url: '/services', operationId: 'listServices', tag: 'Service', summary: 'List the services the caller may use',
      access: 'session', querystring: ServiceListQuery, response: listResponse,
      handler: async (req, reply) => {
        const caller = callerOf(req);
        const lr = listRequest(req);
        const who = caller.identity.id;
        const opts: ServiceViewOptions = { identityId: caller.identity.id, apiSessionId: caller.apiSession.id, permissions: true, configTypes: await clientWanted(store, req), emptyConfig: 'object' };
        if (!lr.filter && !lr.sort && !hasRoleFilter(lr)) {
          // The default order (what SDKs and tunnelers ask for) is paged and rendered from the service catalogue.
          const q = compileListQuery(serviceResource.symbols, lr, store.dialect);
          const page = await views.defaultPage(who, q.limit, q.offset);
          const json = await views.presentPageJson(page, opts, { limit: q.limit, offset: q.offset, totalCount: page.totalCount, unlimited: q.unlimited }, serviceFilterableJson);
          return reply.type('application/json').send(json);
        }
        const r = await services.list(lr, idSetCondition('e.id', access.index.servicesOfIdentity(who), store.dialect));
        return list(await views.present(r.items, opts), r.page, r.filterableFields);
      },
    },
    {
      method: 'GET', url: '/services/:id', operationId: 'detailService', tag: 'Service', summary: 'Retrieve a service the caller may use',
      access: 'session', params: IdParams, response: { 200: detailEnvelope(detail) },
      handler: async (req) => {
        const caller = callerOf(req);
        const serviceId = id(req);
        const values = await services.find(serviceId);
        if (!values || !visible(caller.identity, serviceId)) throw notFound('service', serviceId);
        const wanted = sessionWantedTypes(caller.apiSession.configTypes);
        return ok((await views.present([values], { identityId: caller.identity.id, apiSessionId: caller.apiSession.id, permissions: true, configTypes: wanted, emptyConfig: 'null' }))[0]);
      },
    },
    ...crudRoutes(serviceResource, { ...services, present: serviceResource.presentStored }, { tag: 'Service', operations: ['update', 'patch', 'delete'] }),
  ];
}
