/**
 * `/current-api-session/certificates` (client API): the caller's API-session certificates. Any fully
 * authenticated caller may use them; each call only ever sees the caller's own API session.
 */
import type { RouteSpec } from '../../http/route.ts';
import { callerOf } from '../../http/caller.ts';
import { detailEnvelope, empty, emptyEnvelope, list, listEnvelope, okNullMeta } from '../../http/envelope.ts';
import { IdParams, ListQuery, listRequest } from '../../http/list-params.ts';
import type { ApiSessionCertificateService } from './api-session-certificate.service.ts';
import { apiSessionCertificateCreate, apiSessionCertificateCreated, apiSessionCertificateDetail } from './api-session-certificate.resource.ts';

export function apiSessionCertificateRoutes(certificates: ApiSessionCertificateService): RouteSpec[] {
  const tag = 'Current API Session';
  const id = (params: unknown) => (params as { id: string }).id;
  return [
    {
      method: 'GET', url: '/current-api-session/certificates', operationId: 'listCurrentApiSessionCertificates', tag,
      summary: 'List the certificates of the current API session', access: 'session', querystring: ListQuery,
      response: { 200: listEnvelope(apiSessionCertificateDetail) },
      handler: async (req) => {
        const r = await certificates.list(callerOf(req).apiSession.id, listRequest(req));
        return list(r.items, r.page, r.filterableFields);
      },
    },
    {
      method: 'POST', url: '/current-api-session/certificates', operationId: 'createCurrentApiSessionCertificate', tag,
      summary: 'Sign a CSR as a short-lived certificate of the current API session', access: 'session',
      body: apiSessionCertificateCreate, response: { 201: detailEnvelope(apiSessionCertificateCreated) },
      handler: async (req, reply) => {
        const { csr } = req.body as { csr: string };
        const caller = callerOf(req);
        const created = await certificates.create(caller.apiSession.id, caller.identity.id, csr);
        reply.code(201);
        return {
          data: {
            _links: { self: { href: `./current-api-session/certificates/${created.id}` } },
            id: created.id,
            cas: created.cas,
            certificate: created.certificate,
          },
          meta: {},
        };
      },
    },
    {
      method: 'GET', url: '/current-api-session/certificates/:id', operationId: 'detailCurrentApiSessionCertificate', tag,
      summary: 'Retrieve a certificate of the current API session', access: 'session', params: IdParams,
      // Upstream answers this one with a null meta.
      response: { 200: detailEnvelope(apiSessionCertificateDetail, 'null') },
      handler: async (req) => okNullMeta(await certificates.get(callerOf(req).apiSession.id, id(req.params))),
    },
    {
      method: 'DELETE', url: '/current-api-session/certificates/:id', operationId: 'deleteCurrentApiSessionCertificate', tag,
      summary: 'Delete a certificate of the current API session', access: 'session', params: IdParams,
      response: { 200: emptyEnvelope },
      handler: async (req) => {
        await certificates.remove(callerOf(req).apiSession.id, id(req.params));
        return empty();
      },
    },
  ];
}
