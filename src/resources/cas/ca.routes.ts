/**
 * CA operations (management API, admin): the uniform CRUD plus verification (text/plain PEM body) and
 * the static auto-enrollment JWT, answered raw as `application/jwt`.
 */
import type { RouteSpec } from '../../http/route.ts';
import { crudRoutes } from '../../http/crud-routes.ts';
import { IdParams } from '../../http/list-params.ts';
import { empty, emptyEnvelope } from '../../http/envelope.ts';
import { caResource } from './ca.resource.ts';
import type { CaService } from './ca.service.ts';

export function caRoutes(cas: CaService): RouteSpec[] {
  const tag = 'Certificate Authority';
  return [
    ...crudRoutes(caResource, cas, { tag }),
    {
      method: 'POST', url: '/cas/:id/verify', operationId: 'verifyCa', tag, summary: 'Verify a CA with a certificate it signed',
      access: 'ca.update', params: IdParams, consumes: ['text/plain'],
      response: { 200: emptyEnvelope },
      handler: (req) => {
        cas.verify((req.params as { id: string }).id, req.body);
        return empty();
      },
    },
    {
      method: 'GET', url: '/cas/:id/jwt', operationId: 'getCaJwt', tag, summary: 'The enrollment JWT for CA auto enrollment',
      access: 'ca.read', params: IdParams, produces: ['application/jwt'],
      response: { 200: { raw: 'the JWT text' } },
      handler: async (req, reply) => {
        const jwt = await cas.enrollmentJwt((req.params as { id: string }).id);
        return reply.header('content-type', 'application/jwt').send(jwt);
      },
    },
  ];
}
