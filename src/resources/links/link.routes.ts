/**
 * The fabric API's links (`/fabric/v1/links`): reads for admins, `admin_readonly` and holders of `ops` or
 * `ops.read`; the patch for admins and holders of `ops` or `ops.update`, as upstream's link routes declare
 * (the ops permission covers links and circuits).
 */
import type { FastifyRequest } from 'fastify';
import type { RouteSpec } from '../../http/route.ts';
import { IdParams, ListQuery, listRequest } from '../../http/list-params.ts';
import { detailEnvelope, empty, emptyEnvelope, list, listEnvelope, ok } from '../../http/envelope.ts';
import { LinkDetail, LinkPatch } from './link.resource.ts';
import type { LinkService } from './link.service.ts';

const idOf = (req: FastifyRequest) => (req.params as { id: string }).id;

export function linkRoutes(links: LinkService): RouteSpec[] {
  return [
    {
      method: 'GET', url: '/links', operationId: 'listLinks', tag: 'Link', summary: 'List links between routers',
      access: 'ops.read', querystring: ListQuery, response: { 200: listEnvelope(LinkDetail) },
      handler: async (req) => {
        const r = await links.list(listRequest(req));
        return list(r.items.map(links.present), r.page, r.filterableFields);
      },
    },
    {
      method: 'GET', url: '/links/:id', operationId: 'detailLink', tag: 'Link', summary: 'Retrieve a link',
      access: 'ops.read', params: IdParams, response: { 200: detailEnvelope(LinkDetail) },
      handler: async (req) => ok(links.present(await links.get(idOf(req)))),
    },
    {
      method: 'PATCH', url: '/links/:id', operationId: 'patchLink', tag: 'Link', summary: 'Change a link\'s static cost or take it down',
      access: 'ops.update', params: IdParams, body: LinkPatch, response: { 200: emptyEnvelope },
      handler: async (req) => {
        await links.patch(idOf(req), req.body as { down?: boolean | null; staticCost?: number | null });
        return empty();
      },
    },
  ];
}
