/**
 * An identity's per-service config overrides (model.md §2.5): at most one config per (identity, service,
 * config type), a later pair replacing an earlier one; removal goes by the type of the named config; an
 * empty or absent removal body removes nothing. Every change marks the identity's services as changed.
 */
import { entityRef } from '../entity-ref.ts';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { RouteSpec } from '../../http/route.ts';
import { IdParams } from '../../http/list-params.ts';
import { empty, emptyEnvelope, list } from '../../http/envelope.ts';
import { EntityRef, ListMeta } from '../common.schema.ts';
import type { Sql, Store, Tx } from '../../store/store.ts';
import { notFound } from '../../errors.ts';
import type { AccessService } from '../../access/access.service.ts';
import { onIdentity } from '../identities/identity-rights.ts';

const Pair = Type.Object({ serviceId: Type.String(), configId: Type.String() });
const Pairs = Type.Array(Pair);
const OptionalPairs = Type.Unsafe<Array<{ serviceId: string; configId: string }> | null>({ type: ['array', 'null'], items: Pair });

const ServiceConfigDetail = Type.Object({
  config: EntityRef,
  configId: Type.String(),
  service: EntityRef,
  serviceId: Type.String(),
});

function identityId(req: FastifyRequest): string {
  return (req.params as { id: string }).id;
}

export function identityServiceConfigRoutes(store: Store, access: AccessService): RouteSpec[] {
  async function assertIdentity(handle: Sql, id: string): Promise<void> {
    if (!(await handle.get('SELECT 1 FROM identities WHERE id = ?', [id]))) throw notFound('identity', id);
  }

  async function configType(tx: Tx, configId: string): Promise<string> {
    const row = await tx.get<{ config_type_id: string }>('SELECT config_type_id FROM configs WHERE id = ?', [configId]);
    if (!row) throw notFound('config', configId);
    return row.config_type_id;
  }

  return [
    {
      method: 'GET', url: '/identities/:id/service-configs', operationId: 'listIdentitysServiceConfigs', tag: 'Identity',
      summary: 'List the service config overrides of an identity', access: 'identity.read',
      params: IdParams, response: { 200: Type.Object({ data: Type.Array(ServiceConfigDetail), meta: ListMeta }) },
      handler: async (req) => {
        const id = identityId(req);
        await assertIdentity(store, id);
        const rows = await store.all<{ service_id: string; service_name: string; config_id: string; config_name: string }>(
          `SELECT o.service_id, s.name AS service_name, o.config_id, c.name AS config_name
             FROM identity_service_configs o
             JOIN services s ON s.id = o.service_id
             JOIN configs c ON c.id = o.config_id
            WHERE o.identity_id = ?
            ORDER BY o.service_id, o.config_type_id`,
          [id],
        );
        const items = rows.map((r) => ({
          config: entityRef('configs', r.config_id, r.config_name),
          configId: r.config_id,
          service: entityRef('services', r.service_id, r.service_name),
          serviceId: r.service_id,
        }));
        return list(items, { limit: items.length, offset: 0, totalCount: items.length });
      },
    },
    {
      method: 'POST', url: '/identities/:id/service-configs', operationId: 'associateIdentitysServiceConfigs', tag: 'Identity',
      summary: 'Set service config overrides of an identity', access: 'identity.update', actsOn: onIdentity(store, 'modify'),
      params: IdParams, body: Pairs, response: { 200: emptyEnvelope },
      handler: async (req) => {
        const id = identityId(req);
        const pairs = req.body as Array<{ serviceId: string; configId: string }>;
        await store.write(async (tx) => {
          await assertIdentity(tx, id);
          const upsert = `INSERT INTO identity_service_configs (identity_id, service_id, config_type_id, config_id) VALUES (?, ?, ?, ?)
             ON CONFLICT(identity_id, service_id, config_type_id) DO UPDATE SET config_id = excluded.config_id`;
          for (const pair of pairs) {
            const typeId = await configType(tx, pair.configId);
            if (!(await tx.get('SELECT 1 FROM services WHERE id = ?', [pair.serviceId]))) throw notFound('service', pair.serviceId);
            await tx.run(upsert, [id, pair.serviceId, typeId, pair.configId]);
          }
          await access.touch(tx, [id]);
        });
        return empty();
      },
    },
    {
      method: 'DELETE', url: '/identities/:id/service-configs', operationId: 'disassociateIdentitysServiceConfigs', tag: 'Identity',
      summary: 'Remove service config overrides of an identity', access: 'identity.update', actsOn: onIdentity(store, 'modify'),
      params: IdParams, body: OptionalPairs, response: { 200: emptyEnvelope },
      handler: async (req) => {
        const id = identityId(req);
        const pairs = (req.body as Array<{ serviceId: string; configId: string }> | null | undefined) ?? [];
        await store.write(async (tx) => {
          await assertIdentity(tx, id);
          const remove = 'DELETE FROM identity_service_configs WHERE identity_id = ? AND service_id = ? AND config_type_id = ?';
          let removed = 0;
          for (const pair of pairs) removed += (await tx.run(remove, [id, pair.serviceId, await configType(tx, pair.configId)])).changes;
          if (removed > 0) await access.touch(tx, [id]);
        });
        return empty();
      },
    },
  ];
}
