/**
 * Association lists derived from the access index (upstream model §2.4): the policies that currently
 * match an identity, service or edge router, the identities a policy, service or edge router reaches, the
 * posture checks of a service policy, and the policy advisor. Each list is the ordinary list of the
 * returned record type restricted to an id set, so filter, sort and paging work as on the full list.
 * An unknown parent (or a record of another type) has no members: its list is empty, as upstream answers.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { RouteSpec } from '../http/route.ts';
import { ListQuery, listRequest } from '../http/list-params.ts';
import { detailEnvelope, list, listEnvelope, okNullMeta } from '../http/envelope.ts';
import { idSetCondition, type Dialect } from '../query/dialect.ts';
import type { PermissionResource } from '../auth/permissions.ts';
import type { ListRequest, ListResult } from './entity-service.ts';
import type { Values } from '../store/entity-table.ts';
import type { Store } from '../store/store.ts';
import type { AccessService } from '../access/access.service.ts';
import type { EntityKind, PolicyKind, PolicyType, RoleField } from '../access/access-index.ts';
import { policyAdvice } from '../access/policy-advisor.ts';
import { EntityRef } from './common.schema.ts';
import { identityResource } from './identities/identity.resource.ts';
import { servicePolicyResource } from './service-policies/service-policy.resource.ts';
import { edgeRouterPolicyResource } from './edge-router-policies/edge-router-policy.resource.ts';
import { serviceEdgeRouterPolicyResource } from './service-edge-router-policies/service-edge-router-policy.resource.ts';
import { postureCheckResource } from './posture-checks/posture-check.resource.ts';

export interface ListSource {
  list(req: ListRequest, extraWhere?: { sql: string; params: unknown[] }): Promise<ListResult>;
  present(values: Values): Record<string, unknown> | Promise<Record<string, unknown>>;
}

export interface AccessListDeps {
  store: Store;
  access: AccessService;
  identities: ListSource & { get(id: string): Promise<Values> };
  servicePolicies: ListSource & { get(id: string): Promise<Values> };
  edgeRouterPolicies: ListSource & { get(id: string): Promise<Values> };
  serviceEdgeRouterPolicies: ListSource & { get(id: string): Promise<Values> };
  postureChecks: ListSource;
}

interface DerivedList {
  url: string;
  operationId: string;
  tag: string;
  summary: string;
  /** The type of the listed records: reading the list needs read access to them, as upstream. */
  listed: PermissionResource;
  item: TSchema;
  source: ListSource;
  querystring?: TSchema;
  /** Whether the parent exists (as the type the path names). */
  parent(id: string): Promise<boolean>;
  ids(id: string, req: FastifyRequest): Iterable<string>;
}

function derivedListRoute(spec: DerivedList, dialect: Dialect): RouteSpec {
  return {
    method: 'GET', url: spec.url, operationId: spec.operationId, tag: spec.tag, summary: spec.summary,
    access: `${spec.listed}.read`,
    params: Type.Object({ id: Type.String({ minLength: 1 }) }), querystring: spec.querystring ?? ListQuery,
    response: { 200: listEnvelope(spec.item) },
    handler: async (req) => {
      const id = (req.params as { id: string }).id;
      const r = await spec.source.list(listRequest(req), idSetCondition('e.id', (await spec.parent(id)) ? spec.ids(id, req) : [], dialect));
      const items: Array<Record<string, unknown>> = [];
      for (const item of r.items) items.push(await spec.source.present(item));
      return list(items, r.page, r.filterableFields);
    },
  };
}

const PolicyTypeQuery = Type.Object({
  ...ListQuery.properties,
  policyType: Type.Optional(Type.Unsafe<'dial' | 'bind'>({ type: 'string', enum: ['dial', 'bind'] })),
});

function policyTypeOf(req: FastifyRequest): PolicyType | undefined {
  const t = (req.query as { policyType?: string }).policyType;
  return t === 'dial' ? 'Dial' : t === 'bind' ? 'Bind' : undefined;
}

export function accessListRoutes(deps: AccessListDeps): RouteSpec[] {
  const { store, access } = deps;
  const index = () => access.index;
  const derived = (spec: DerivedList) => derivedListRoute(spec, store.dialect);
  const exists = (sql: string) => async (id: string) => (await store.get(sql, [id])) !== undefined;
  const identity = exists('SELECT 1 FROM identities WHERE id = ?');
  const service = exists('SELECT 1 FROM services WHERE id = ?');
  const edgeRouter = exists('SELECT 1 FROM routers WHERE id = ? AND is_edge = 1');
  const policiesOf = (kind: EntityKind, policyKind: PolicyKind) => (id: string) => index().policiesOf(kind, id, policyKind);
  const membersOf = (field: RoleField) => (id: string) => index().membersOf(id, field);

  const sp = { source: deps.servicePolicies, item: servicePolicyResource.schemas.detail };
  const erp = { source: deps.edgeRouterPolicies, item: edgeRouterPolicyResource.schemas.detail };
  const serp = { source: deps.serviceEdgeRouterPolicies, item: serviceEdgeRouterPolicyResource.schemas.detail };
  const identities = { source: deps.identities, item: identityResource.schemas.detail };

  return [
    // Policies matching an entity.
    derived({
      url: '/identities/:id/service-policies', operationId: 'listIdentityServicePolicies', tag: 'Identity',
      summary: 'List the service policies that affect an identity', listed: 'service-policy', ...sp,
      parent: identity, ids: policiesOf('identity', 'servicePolicy'),
    }),
    derived({
      url: '/identities/:id/edge-router-policies', operationId: 'listIdentitysEdgeRouterPolicies', tag: 'Identity',
      summary: 'List the edge router policies that affect an identity', listed: 'edge-router-policy', ...erp,
      parent: identity, ids: policiesOf('identity', 'edgeRouterPolicy'),
    }),
    derived({
      url: '/services/:id/service-policies', operationId: 'listServiceServicePolicies', tag: 'Service',
      summary: 'List the service policies that affect a service', listed: 'service-policy', ...sp,
      parent: service, ids: policiesOf('service', 'servicePolicy'),
    }),
    derived({
      url: '/services/:id/service-edge-router-policies', operationId: 'listServiceServiceEdgeRouterPolicies', tag: 'Service',
      summary: 'List the service edge router policies that affect a service', listed: 'service-edge-router-policy', ...serp,
      parent: service, ids: policiesOf('service', 'serviceEdgeRouterPolicy'),
    }),
    derived({
      url: '/edge-routers/:id/edge-router-policies', operationId: 'listEdgeRouterEdgeRouterPolicies', tag: 'Edge Router',
      summary: 'List the edge router policies that affect an edge router', listed: 'edge-router-policy', ...erp,
      parent: edgeRouter, ids: policiesOf('edgeRouter', 'edgeRouterPolicy'),
    }),
    derived({
      url: '/edge-routers/:id/service-edge-router-policies', operationId: 'listEdgeRouterServiceEdgeRouterPolicies', tag: 'Edge Router',
      summary: 'List the service edge router policies that affect an edge router', listed: 'service-edge-router-policy', ...serp,
      parent: edgeRouter, ids: policiesOf('edgeRouter', 'serviceEdgeRouterPolicy'),
    }),
    derived({
      url: '/service-policies/:id/posture-checks', operationId: 'listServicePolicyPostureChecks', tag: 'Service Policy',
      summary: 'List the posture checks a service policy includes', listed: 'posture-check',
      source: deps.postureChecks, item: postureCheckResource.schemas.detail,
      parent: exists('SELECT 1 FROM service_policies WHERE id = ?'), ids: membersOf('postureCheckRoles'),
    }),
    // Identities reached by a policy or an entity.
    derived({
      url: '/service-policies/:id/identities', operationId: 'listServicePolicyIdentities', tag: 'Service Policy',
      summary: 'List the identities a service policy affects', listed: 'identity', ...identities,
      parent: exists('SELECT 1 FROM service_policies WHERE id = ?'), ids: membersOf('identityRoles'),
    }),
    derived({
      url: '/edge-router-policies/:id/identities', operationId: 'listEdgeRouterPolicyIdentities', tag: 'Edge Router Policy',
      summary: 'List the identities an edge router policy affects', listed: 'identity', ...identities,
      parent: exists('SELECT 1 FROM edge_router_policies WHERE id = ?'), ids: membersOf('identityRoles'),
    }),
    derived({
      url: '/services/:id/identities', operationId: 'listServiceIdentities', tag: 'Service',
      summary: 'List the identities that may dial or bind a service', listed: 'identity', ...identities,
      querystring: PolicyTypeQuery, parent: service, ids: (id, req) => index().identitiesOfService(id, policyTypeOf(req)),
    }),
    derived({
      url: '/edge-routers/:id/identities', operationId: 'listEdgeRouterIdentities', tag: 'Edge Router',
      summary: 'List the identities that may use an edge router', listed: 'identity', ...identities,
      parent: edgeRouter, ids: (id) => index().identitiesOfEdgeRouter(id),
    }),
    {
      method: 'GET', url: '/identities/:id/policy-advice/:serviceId', operationId: 'getIdentityPolicyAdvice', tag: 'Identity',
      summary: 'Analyze the policies between an identity and a service', access: 'service.read',
      params: Type.Object({ id: Type.String({ minLength: 1 }), serviceId: Type.String({ minLength: 1 }) }),
      response: { 200: detailEnvelope(PolicyAdvice, 'null') },
      handler: async (req) => {
        const { id, serviceId } = req.params as { id: string; serviceId: string };
        return okNullMeta(await policyAdvice(store, access.index, id, serviceId));
      },
    },
  ];
}

const PolicyAdvice = Type.Object({
  identityId: Type.String(),
  identity: EntityRef,
  serviceId: Type.String(),
  service: EntityRef,
  isBindAllowed: Type.Optional(Type.Boolean()),
  isDialAllowed: Type.Optional(Type.Boolean()),
  identityRouterCount: Type.Optional(Type.Integer()),
  serviceRouterCount: Type.Optional(Type.Integer()),
  commonRouters: Type.Unsafe<unknown[] | null>({
    type: ['array', 'null'],
    items: { type: 'object', properties: { ...EntityRef.properties, isOnline: { type: 'boolean' } }, required: ['_links', 'entity', 'id', 'name', 'isOnline'] },
  }),
});
