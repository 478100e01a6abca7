/**
 * `/auth-policies` on the management API: list, detail and delete from the declaration; create, put and
 * patch written out because their bodies are the spec's nested create and patch definitions. A non-admin may
 * change or delete only a policy under which no identity logs in that holds rights the caller does not hold.
 */
import type { FastifyRequest } from 'fastify';
import type { RouteSpec } from '../../http/route.ts';
import { crudRoutes } from '../../http/crud-routes.ts';
import { created, createEnvelope, empty, emptyEnvelope } from '../../http/envelope.ts';
import { IdParams } from '../../http/list-params.ts';
import { authPolicyPatchSchema, authPolicyResource, authPolicyWriteSchema } from './auth-policy.resource.ts';
import type { AuthPolicyService } from './auth-policy.service.ts';
import type { Store } from '../../store/store.ts';
import { rightsUnderPolicy } from '../identities/identity-rights.ts';

export function authPolicyRoutes(store: Store, service: AuthPolicyService): RouteSpec[] {
  const tag = 'Auth Policy';
  // Changing a policy changes how everyone under it logs in: a non-admin needs the rights of each of them.
  const underPolicy = (action: string): RouteSpec['actsOn'] => ({ action, targets: (req) => rightsUnderPolicy(store, id(req)) });
  const body = (req: FastifyRequest) => (req.body ?? {}) as Record<string, unknown>;
  const id = (req: FastifyRequest) => (req.params as { id: string }).id;
  return [
    ...crudRoutes(authPolicyResource, service, { tag, operations: ['list', 'detail', 'delete'] }).map((route) =>
      route.method === 'DELETE' ? { ...route, actsOn: underPolicy('delete the auth policy of') } : route,
    ),
    {
      method: 'POST', url: '/auth-policies', operationId: 'createAuthPolicy', tag, summary: 'Create an auth policy',
      access: 'auth-policy.create', body: authPolicyWriteSchema,
      response: { 201: createEnvelope },
      handler: async (req, reply) => {
        const newId = await service.create(body(req));
        return reply.code(201).send(created(newId, authPolicyResource.links(newId)));
      },
    },
    {
      method: 'PUT', url: '/auth-policies/:id', operationId: 'updateAuthPolicy', tag, summary: 'Update all fields of an auth policy',
      access: 'auth-policy.update', actsOn: underPolicy('change the auth policy of'), params: IdParams, body: authPolicyWriteSchema,
      response: { 200: emptyEnvelope },
      handler: async (req) => {
        await service.update(id(req), body(req), 'put');
        return empty();
      },
    },
    {
      method: 'PATCH', url: '/auth-policies/:id', operationId: 'patchAuthPolicy', tag, summary: 'Update the supplied fields of an auth policy',
      access: 'auth-policy.update', actsOn: underPolicy('change the auth policy of'), params: IdParams, body: authPolicyPatchSchema,
      response: { 200: emptyEnvelope },
      handler: async (req) => {
        await service.update(id(req), body(req), 'patch');
        return empty();
      },
    },
  ];
}
