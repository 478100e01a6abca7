/**
 * Controller settings operations, as the 0.27.0 management spec lists them: list and create on
 * `/controller-settings`, detail on `/controller-settings/{id}`, and detail, delete, patch and put on
 * `/controller-settings/{id}/effective` (the spec files the record's delete/patch/put under that path; the
 * reads there answer the effective settings, the writes act on the record `{id}`). The same delete, patch and
 * put are also offered on `/controller-settings/{id}`, where the seed's record operations belong.
 * Admin only: reads also for `admin_readonly`.
 */
import type { FastifyRequest } from 'fastify';
import type { RouteSpec } from '../../http/route.ts';
import { crudRoutes } from '../../http/crud-routes.ts';
import { IdParams } from '../../http/list-params.ts';
import { detailEnvelope, empty, emptyEnvelope, ok } from '../../http/envelope.ts';
import { controllerSettingResource, ControllerSettingEffective } from './controller-setting.resource.ts';
import type { ControllerSettingService } from './controller-setting.service.ts';

const tag = 'Settings';
const idOf = (req: FastifyRequest) => (req.params as { id: string }).id;
const body = (req: FastifyRequest) => (req.body ?? {}) as Record<string, unknown>;

export function controllerSettingRoutes(settings: ControllerSettingService): RouteSpec[] {
  const r = controllerSettingResource;
  // No permission value covers controller settings: admins only, and admin_readonly for reads (the seed's "A").
  const crud = crudRoutes(r, settings, { tag, operations: ['list', 'create', 'detail'], access: { read: 'admin-read', write: 'admin' } });

  const writes = (base: string, suffix: string): RouteSpec[] => [
    {
      method: 'DELETE', url: base, operationId: `deleteControllerSetting${suffix}`, tag, summary: 'Delete a controller setting object',
      access: 'admin', params: IdParams, response: { 200: emptyEnvelope },
      handler: async (req) => {
        await settings.remove(idOf(req));
        return empty();
      },
    },
    {
      method: 'PATCH', url: base, operationId: `patchControllerSetting${suffix}`, tag, summary: 'Update the supplied fields on a controller setting object',
      access: 'admin', params: IdParams, body: r.schemas.patch, response: { 200: emptyEnvelope },
      handler: async (req) => {
        await settings.update(idOf(req), body(req), 'patch');
        return empty();
      },
    },
    {
      method: 'PUT', url: base, operationId: `updateControllerSetting${suffix}`, tag, summary: 'Update all fields on a controller setting object',
      access: 'admin', params: IdParams, body: r.schemas.update, response: { 200: emptyEnvelope },
      handler: async (req) => {
        await settings.update(idOf(req), body(req), 'put');
        return empty();
      },
    },
  ];

  return [
    ...crud,
    {
      method: 'GET', url: '/controller-settings/:id/effective', operationId: 'detailControllerSettingEffective', tag,
      summary: "A controller's effective settings: its own overlaid on the global ones", access: 'admin-read',
      params: IdParams, response: { 200: detailEnvelope(ControllerSettingEffective) },
      handler: async (req) => ok(await settings.effective(idOf(req))),
    },
    ...writes('/controller-settings/:id/effective', ''),
    ...writes('/controller-settings/:id', 'Record'),
  ];
}
