/** Service policy operations: the uniform CRUD (its sub-lists are in access-lists.routes.ts). */
import type { RouteSpec } from '../../http/route.ts';
import { crudRoutes } from '../../http/crud-routes.ts';
import type { PolicyService } from '../policy-common.ts';
import { servicePolicyResource } from './service-policy.resource.ts';
import { edgeRouterPolicyResource } from '../edge-router-policies/edge-router-policy.resource.ts';
import { serviceEdgeRouterPolicyResource } from '../service-edge-router-policies/service-edge-router-policy.resource.ts';

/** The uniform operations of all three policy kinds. */
export function policyRoutes(policies: { service: PolicyService; edgeRouter: PolicyService; serviceEdgeRouter: PolicyService }): RouteSpec[] {
  return [
    ...crudRoutes(servicePolicyResource, policies.service, { tag: 'Service Policy' }),
    ...crudRoutes(edgeRouterPolicyResource, policies.edgeRouter, { tag: 'Edge Router Policy' }),
    ...crudRoutes(serviceEdgeRouterPolicyResource, policies.serviceEdgeRouter, { tag: 'Service Edge Router Policy' }),
  ];
}
