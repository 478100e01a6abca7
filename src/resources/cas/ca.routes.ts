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
import { trustStamp } from '../../http/trust-stamp.ts';
import { rightsOf } from '../../auth/rights.ts';
import { callerOf } from '../../http/caller.ts';

/** The fields that decide whom the CA's certificates log in or enroll, and with which roles. */
const TRUST_FIELDS = ['isAuthEnabled', 'isOttCaEnrollmentEnabled', 'isAutoCaEnrollmentEnabled', 'externalIdClaim', 'identityRoles'];

export function caRoutes(cas: CaService): RouteSpec[] {
  const tag = 'Certificate Authority';
  return [
    ...crudRoutes(caResource, cas, { tag, stamp: trustStamp(TRUST_FIELDS) }),
    {
      method: 'POST', url: '/cas/:id/verify', operationId: 'verifyCa', tag, summary: 'Verify a CA with a certificate it signed',
      access: 'ca.update', params: IdParams, consumes: ['text/plain'],
      response: { 200: emptyEnvelope },
      handler: async (req) => {
        // Verifying proves the key: the CA's rights are narrowed to what the verifier holds too.
        await cas.verify((req.params as { id: string }).id, req.body, rightsOf(callerOf(req).identity));
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
