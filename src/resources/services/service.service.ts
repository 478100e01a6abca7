/**
 * Service rules beyond generic CRUD (model.md §3.4): terminator strategy must be a known one (404 as
 * upstream), `configs` must name existing configs with at most one per config type, role attributes feed
 * the access index, `encryptionRequired` is fixed at create (seed contract), and any change tells the
 * identities with access that their services changed. Delete leaves the access index and the policies'
 * `@id` references; terminators, sessions and overrides go with the row (FK cascade).
 */
import type { Values } from '../../store/entity-table.ts';
import type { Store, Tx } from '../../store/store.ts';
import { ApiError, fieldError, notFound } from '../../errors.ts';
import { createEntityService, systemClock, type Clock } from '../entity-service.ts';
import { normalizeRoleAttributes, type AccessService } from '../../access/access.service.ts';
import { serviceResource, terminatorStrategies } from './service.resource.ts';

function sortedUnique(values: readonly string[]): string[] {
  return [...new Set(values)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

function checkStrategy(value: unknown): string {
  const name = typeof value === 'string' ? value : '';
  if (name === '') return 'smartrouting';
  if (!(terminatorStrategies as readonly string[]).includes(name)) {
    throw new ApiError('NOT_FOUND', { cause: { code: 'UNHANDLED', message: `terminatorStrategy with name ${name} not found` } });
  }
  return name;
}

/** Every id must be a config (404 otherwise) and no two may share a config type. */
async function checkConfigs(tx: Tx, ids: readonly string[]): Promise<string[]> {
  const list = sortedUnique(ids);
  const byType = new Map<string, string[]>();
  for (const id of list) {
    const row = await tx.get<{ name: string; config_type_id: string; type_name: string }>(
      'SELECT c.name, c.config_type_id, t.name AS type_name FROM configs c JOIN config_types t ON t.id = c.config_type_id WHERE c.id = ?',
      [id],
    );
    if (!row) throw notFound('config', id);
    const names = byType.get(row.type_name) ?? [];
    names.push(row.name);
    byType.set(row.type_name, names);
  }
  for (const [typeName, names] of byType) {
    if (names.length > 1) {
      throw fieldError('configs', `duplicate configs named ${names.join(', ')} found for config type ${typeName}. Only one config of a given typed is allowed per service`, list);
    }
  }
  return list;
}

async function writeServiceConfigs(tx: Tx, serviceId: string, ids: readonly string[]): Promise<void> {
  await tx.run('DELETE FROM service_configs WHERE service_id = ?', [serviceId]);
  const insert = 'INSERT INTO service_configs (service_id, config_id) VALUES (?, ?)';
  for (const id of ids) await tx.run(insert, [serviceId, id]);
}

export function createServiceService(store: Store, access: AccessService, clock: Clock = systemClock) {
  async function normalize(tx: Tx, values: Values): Promise<void> {
    if ('roleAttributes' in values) values.roleAttributes = normalizeRoleAttributes(values.roleAttributes as string[] | null, { checkPrefix: true });
    if ('terminatorStrategy' in values) values.terminatorStrategy = checkStrategy(values.terminatorStrategy);
    if ('configs' in values) values.configs = await checkConfigs(tx, (values.configs as string[] | null) ?? []);
  }

  const entities = createEntityService(
    serviceResource,
    store,
    {
      async beforeCreate(tx, values) {
        if (!('terminatorStrategy' in values)) values.terminatorStrategy = '';
        await normalize(tx, values);
      },
      async afterCreate(tx, values) {
        const id = values.id as string;
        await writeServiceConfigs(tx, id, (values.configs as string[]) ?? []);
        await access.entityChanged(tx, 'service', id, (values.roleAttributes as string[]) ?? []);
      },
      async beforeUpdate(tx, _existing, changes) {
        // Settable only at create (seed contract); upstream also drops it on patch.
        delete changes.encryptionRequired;
        await normalize(tx, changes);
      },
      async afterUpdate(tx, existing, changes) {
        const id = existing.id as string;
        if (changes.configs !== undefined) await writeServiceConfigs(tx, id, changes.configs as string[]);
        if (changes.roleAttributes !== undefined) await access.entityChanged(tx, 'service', id, changes.roleAttributes as string[]);
        await access.touchServiceUsers(tx, id);
      },
      async beforeDelete(tx, existing) {
        const id = existing.id as string;
        await access.touchServiceUsers(tx, id);
        await access.entityRemoved(tx, 'service', id);
      },
    },
    clock,
  );

  return entities;
}

export type ServiceEntityService = ReturnType<typeof createServiceService>;
