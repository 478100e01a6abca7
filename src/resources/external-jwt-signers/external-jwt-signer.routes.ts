/**
 * External JWT signer operations: the six management CRUD operations, and the client API's public list
 * of enabled signers (what an SDK shows as login providers).
 */
import type { RouteSpec } from '../../http/route.ts';
import { crudRoutes } from '../../http/crud-routes.ts';
import { list, listEnvelope } from '../../http/envelope.ts';
import { ListQuery, listRequest } from '../../http/list-params.ts';
import { clientExternalJwtSignerDetail, externalJwtSignerResource } from './external-jwt-signer.resource.ts';
import type { ExternalJwtSignerService } from './external-jwt-signer.service.ts';
import { trustStamp } from '../../http/trust-stamp.ts';

/** The fields that decide whose tokens the signer accepts and which identity a token names. */
const TRUST_FIELDS = ['issuer', 'audience', 'certPem', 'jwksEndpoint', 'kid', 'claimsProperty', 'useExternalId'];

export function externalJwtSignerRoutes(service: ExternalJwtSignerService): RouteSpec[] {
  return crudRoutes(externalJwtSignerResource, service, { tag: 'External JWT Signer', stamp: trustStamp(TRUST_FIELDS) });
}

export function clientExternalJwtSignerRoutes(service: ExternalJwtSignerService): RouteSpec[] {
  return [
    {
      method: 'GET', url: '/external-jwt-signers', operationId: 'listExternalJwtSigners', tag: 'External JWT Signer',
      summary: 'List the enabled external JWT signers usable for authentication', access: 'public', querystring: ListQuery,
      response: { 200: listEnvelope(clientExternalJwtSignerDetail) },
      handler: async (req) => {
        const r = await service.listEnabled(listRequest(req));
        return list(r.items.map(service.presentClient), r.page, r.filterableFields);
      },
    },
  ];
}
