/**
 * Edge router operations: the uniform CRUD (with roleFilter), re-enroll, the role-attribute list, and the
 * association lists that return edge routers (of an identity, a service, an edge router policy and a
 * service edge router policy). Association lists keep the caller's filter, sort and paging.
 */
import type { FastifyRequest } from 'fastify';
import type { RouteSpec } from '../../http/route.ts';
import { crudRoutes } from '../../http/crud-routes.ts';
import { IdParams, ListQuery, listRequest } from '../../http/list-params.ts';
import { empty, emptyEnvelope, list, listEnvelope } from '../../http/envelope.ts';
import { roleAttributeListRoute } from '../role-attributes.routes.ts';
import type { Store } from '../../store/store.ts';
import type { AccessService } from '../../access/access.service.ts';
import { edgeRouterResource } from './edge-router.resource.ts';
import type { EdgeRouterService } from './edge-router.service.ts';

interface ParentList {
  url: string;
  operationId: string;
  tag: string;
  summary: string;
  /** The parent's table. */
  parentTable: string;
  ids: (parentId: string) => Iterable<string>;
}

export function edgeRouterRoutes(store: Store, access: AccessService, edgeRouters: EdgeRouterService): RouteSpec[] {
  const idOf = (req: FastifyRequest) => (req.params as { id: string }).id;

  function parentList(spec: ParentList): RouteSpec {
    return {
      method: 'GET', url: spec.url, operationId: spec.operationId, tag: spec.tag, summary: spec.summary,
      access: 'router.read', params: IdParams, querystring: ListQuery,
      response: { 200: listEnvelope(edgeRouterResource.schemas.detail) },
      handler: async (req) => {
        const id = idOf(req);
        // An unknown parent has no edge routers: an empty list, as upstream answers.
        const known = (await store.get(`SELECT 1 FROM ${spec.parentTable} WHERE id = ?`, [id])) !== undefined;
        const r = await edgeRouters.listAmong(listRequest(req), known ? spec.ids(id) : []);
        const items: Array<Record<string, unknown>> = [];
        for (const item of r.items) items.push(await edgeRouters.present(item));
        return list(items, r.page, r.filterableFields);
      },
    };
  }

  return [
    ...crudRoutes(edgeRouterResource, edgeRouters, { tag: 'Edge Router', roleFilter: true }),
    {
      method: 'POST', url: '/edge-routers/:id/re-enroll', operationId: 'reEnrollEdgeRouter', tag: 'Edge Router',
      summary: 'Re-enroll an edge router', access: 'router.update', params: IdParams,
      response: { 200: emptyEnvelope },
      handler: async (req) => {
        await edgeRouters.reEnroll(idOf(req));
        return empty();
      },
    },
    roleAttributeListRoute({
      url: '/edge-router-role-attributes', operationId: 'listEdgeRouterRoleAttributes', tag: 'Role Attributes',
      table: 'router_role_attributes', permission: 'router', store,
    }),
    parentList({
      url: '/identities/:id/edge-routers', operationId: 'listIdentityEdgeRouters', tag: 'Identity',
      summary: 'List the edge routers an identity may use',
      parentTable: 'identities',
      ids: (id) => access.index.edgeRoutersOfIdentity(id),
    }),
    parentList({
      url: '/services/:id/edge-routers', operationId: 'listServiceEdgeRouters', tag: 'Service',
      summary: 'List the edge routers a service may be reached through',
      parentTable: 'services',
      ids: (id) => access.index.edgeRoutersOfService(id),
    }),
    parentList({
      url: '/edge-router-policies/:id/edge-routers', operationId: 'listEdgeRouterPolicyEdgeRouters', tag: 'Edge Router Policy',
      summary: 'List the edge routers an edge router policy selects',
      parentTable: 'edge_router_policies',
      ids: (id) => access.index.membersOf(id, 'edgeRouterRoles'),
    }),
    parentList({
      url: '/service-edge-router-policies/:id/edge-routers', operationId: 'listServiceEdgeRouterPolicyEdgeRouters', tag: 'Service Edge Router Policy',
      summary: 'List the edge routers a service edge router policy selects',
      parentTable: 'service_edge_router_policies',
      ids: (id) => access.index.membersOf(id, 'edgeRouterRoles'),
    }),
  ];
}
