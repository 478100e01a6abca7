/**
 * The fabric API's circuit reads (`/fabric/v1/circuits`): admins, `admin_readonly` and holders of `ops` or
 * `ops.read`, as upstream's circuit routes declare (the ops permission covers links and circuits).
 */
import type { FastifyRequest } from 'fastify';
import type { RouteSpec } from '../../http/route.ts';
import { IdParams, ListQuery, listRequest } from '../../http/list-params.ts';
import { detailEnvelope, list, listEnvelope, ok } from '../../http/envelope.ts';
import { CircuitDetail } from './circuit.resource.ts';
import type { CircuitService } from './circuit.service.ts';

const idOf = (req: FastifyRequest) => (req.params as { id: string }).id;

export function circuitRoutes(circuits: CircuitService): RouteSpec[] {
  return [
    {
      method: 'GET', url: '/circuits', operationId: 'listCircuits', tag: 'Circuit', summary: 'List circuits',
      access: 'ops.read', querystring: ListQuery, response: { 200: listEnvelope(CircuitDetail) },
      handler: async (req) => {
        const r = await circuits.list(listRequest(req));
        const items: Array<Record<string, unknown>> = [];
        for (const item of r.items) items.push(await circuits.present(item));
        return list(items, r.page, r.filterableFields);
      },
    },
    {
      method: 'GET', url: '/circuits/:id', operationId: 'detailCircuit', tag: 'Circuit', summary: 'Retrieve a circuit',
      access: 'ops.read', params: IdParams, response: { 200: detailEnvelope(CircuitDetail) },
      handler: async (req) => ok(await circuits.present(await circuits.get(idOf(req)))),
    },
  ];
}
