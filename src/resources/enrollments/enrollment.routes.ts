/**
 * Management operations on enrollments (management seeds §2.10, §3, §4.3-4.4; enrollment.md §4.7, §6.2,
 * §6.4): list, create, detail and delete, refresh, an identity's enrollments, and the two authenticator
 * operations that belong to the enrollment life cycle: re-enroll (revert to an enrollment) and
 * request-extend (flag a certificate for early extension).
 */
import { Type } from '@sinclair/typebox';
import type { RouteSpec } from '../../http/route.ts';
import { crudRoutes } from '../../http/crud-routes.ts';
import { IdParams, ListQuery, listRequest } from '../../http/list-params.ts';
import { created, createEnvelope, empty, emptyEnvelope, list, listEnvelope } from '../../http/envelope.ts';
import { callerOf } from '../../http/caller.ts';
import type { EnrollmentService } from '../../enrollment/enrollment.service.ts';
import { enrollmentResource } from './enrollment.resource.ts';
import { enrollmentShownTo } from './enrollment-secrets.ts';
import { identityRights, onIdentity } from '../identities/identity-rights.ts';
import type { Store } from '../../store/store.ts';
import type { FastifyRequest } from 'fastify';

const ExpiresAtBody = Type.Object({ expiresAt: Type.String({ format: 'date-time' }) });
const RequestExtendBody = Type.Unsafe<{ rollKeys?: boolean } | null>({ type: ['object', 'null'], properties: { rollKeys: Type.Boolean() } });

export function enrollmentRoutes(store: Store, enrollments: EnrollmentService): RouteSpec[] {
  const id = (req: { params: unknown }) => (req.params as { id: string }).id;
  const body = (req: { body: unknown }) => (req.body ?? {}) as Record<string, unknown>;
  const shownTo = enrollmentShownTo(store);
  // Whoever enrolls gets the identity's credential: a non-admin may create, renew or remove only the
  // enrollments of identities whose rights it holds.
  // The identity of the enrollment named by the path is read from the store: the rights check awaits it.
  const ofEnrollment = (action: string): NonNullable<RouteSpec['actsOn']> => ({
    action,
    targets: async (req: FastifyRequest) => identityRights(store, (await enrollments.find(id(req)))?.identityId),
  });
  const actsOn: Partial<Record<string, RouteSpec['actsOn']>> = {
    POST: onIdentity(store, 'enroll', (req) => body(req).identityId),
    DELETE: ofEnrollment('delete the enrollments of'),
  };
  return [
    ...crudRoutes(enrollmentResource, enrollments, { tag: 'Enrollment', operations: ['list', 'create', 'detail', 'delete'], shownTo }).map(
      (route) => ({ ...route, actsOn: actsOn[route.method as string] }),
    ),
    {
      method: 'POST', url: '/enrollments/:id/refresh', operationId: 'refreshEnrollment', tag: 'Enrollment',
      summary: 'Give an enrollment a new token, JWT and expiry', access: 'enrollment.update', actsOn: ofEnrollment('refresh the enrollments of'),
      params: IdParams, body: ExpiresAtBody, response: { 200: emptyEnvelope },
      // The spec names a create envelope, but upstream answers an empty one; clients re-read the enrollment.
      handler: async (req) => {
        await enrollments.refresh(id(req), body(req));
        return empty();
      },
    },
    {
      method: 'GET', url: '/identities/:id/enrollments', operationId: 'getIdentityEnrollments', tag: 'Identity',
      summary: 'List the outstanding enrollments of an identity', access: 'enrollment.read',
      params: IdParams, querystring: ListQuery, response: { 200: listEnvelope(enrollmentResource.schemas.detail) },
      handler: async (req) => {
        const r = await enrollments.listForIdentity(id(req), listRequest(req));
        const items: Array<Record<string, unknown>> = [];
        for (const item of r.items) items.push(await shownTo(req, await enrollments.present(item)));
        return list(items, r.page, r.filterableFields);
      },
    },
    {
      method: 'POST', url: '/authenticators/:id/re-enroll', operationId: 'reEnrollAuthenticator', tag: 'Authenticator',
      summary: 'Replace an authenticator by an enrollment of the matching method', access: 'admin',
      params: IdParams, body: ExpiresAtBody, response: { 201: createEnvelope },
      handler: async (req, reply) => {
        const enrollmentId = await enrollments.reEnrollAuthenticator(id(req), body(req));
        return reply.code(201).send(created(enrollmentId, { self: { href: `./enrollments/${enrollmentId}` } }));
      },
    },
    {
      method: 'POST', url: '/authenticators/:id/request-extend', operationId: 'requestExtendAuthenticator', tag: 'Authenticator',
      summary: 'Ask the client of a certificate authenticator to extend its certificate early', access: 'admin', params: IdParams, body: RequestExtendBody, response: { 200: emptyEnvelope },
      handler: async (req) => {
        await enrollments.requestExtend(id(req), body(req), callerOf(req).identity);
        return empty();
      },
    },
  ];
}
