/**
 * Config rules beyond generic CRUD (model.md §3.8, §4): the type is required at create and fixed
 * afterwards, `data` must be an object that validates against the type's schema, and every write tells
 * the identities whose service view includes the config (through a service or an override) that their
 * services changed. Delete removes the config from every service's `configs` and from every identity
 * override that used it.
 */
import type { Values } from '../../store/entity-table.ts';
import type { Sql, Store, Tx } from '../../store/store.ts';
import { fieldError } from '../../errors.ts';
import { createEntityService, systemClock, type Clock } from '../entity-service.ts';
import type { AccessService } from '../../access/access.service.ts';
import type { ConfigTypeService } from '../config-types/config-type.service.ts';
import { validateConfigData } from '../config-types/json-schema.ts';
import { configResource } from './config.resource.ts';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkData(data: unknown): Record<string, unknown> {
  if (data === undefined || data === null) throw fieldError('data', 'data in body is required', null);
  if (!isObject(data)) throw fieldError('data', 'invalid type, expected object', data);
  return data;
}

/** Services that list the config. */
function servicesUsing(q: Sql, configId: string): Promise<string[]> {
  return q.column<string>('SELECT service_id FROM service_configs WHERE config_id = ?', [configId]);
}

/** Tells every identity that sees the config (through a service or an override) that its services changed. */
async function touchConfigUsers(tx: Tx, access: AccessService, configId: string): Promise<void> {
  for (const serviceId of await servicesUsing(tx, configId)) await access.touchServiceUsers(tx, serviceId);
  const overrides = await tx.column<string>('SELECT DISTINCT identity_id FROM identity_service_configs WHERE config_id = ?', [configId]);
  await access.touch(tx, overrides);
}

export function createConfigService(store: Store, access: AccessService, configTypes: ConfigTypeService, clock: Clock = systemClock) {
  async function validateAgainstType(q: Sql, typeId: string, data: Record<string, unknown>): Promise<void> {
    validateConfigData((await configTypes.schemaOf(typeId, q))?.schema, data);
  }

  const entities = createEntityService(
    configResource,
    store,
    {
      async beforeCreate(tx, values, body) {
        const typeId = body.configTypeId;
        if (typeId === '') throw fieldError('type', 'config type must be specified', '');
        if (typeof typeId !== 'string' || !(await configTypes.schemaOf(typeId, tx))) throw fieldError('type', 'invalid config type', typeId);
        values.data = checkData(body.data);
        await validateAgainstType(tx, typeId, values.data as Record<string, unknown>);
      },
      async beforeUpdate(tx, existing, changes, mode, body) {
        // The type never changes after create (upstream silently keeps it).
        delete changes.configTypeId;
        if (mode === 'patch' && body.data === null) {
          // As upstream: a patch's null `data` is checked against the type's schema (an object schema refuses it on
          // `(root)`); where that passes, the stored data stays.
          validateConfigData((await configTypes.schemaOf(existing.configTypeId as string, tx))?.schema, null);
        } else if (mode === 'put' || body.data !== undefined) {
          changes.data = checkData(body.data);
        }
        await validateAgainstType(tx, existing.configTypeId as string, (changes.data ?? existing.data) as Record<string, unknown>);
      },
      async afterUpdate(tx, existing) {
        await touchConfigUsers(tx, access, existing.id as string);
      },
      async beforeDelete(tx, existing) {
        const id = existing.id as string;
        // As the issue asks: a deleted config leaves every identity override that used it (upstream refuses with a 500).
        const overriders = await tx.column<string>('SELECT DISTINCT identity_id FROM identity_service_configs WHERE config_id = ?', [id]);
        await access.touch(tx, overriders);
        await tx.run('DELETE FROM identity_service_configs WHERE config_id = ?', [id]);
        const services = await servicesUsing(tx, id);
        for (const serviceId of services) {
          await access.touchServiceUsers(tx, serviceId);
          const row = await tx.get<{ configs: string }>('SELECT configs FROM services WHERE id = ?', [serviceId]);
          if (!row) continue;
          const remaining = (JSON.parse(row.configs) as string[]).filter((c) => c !== id);
          await tx.run('UPDATE services SET configs = ? WHERE id = ?', [JSON.stringify(remaining), serviceId]);
        }
        await tx.run('DELETE FROM service_configs WHERE config_id = ?', [id]);
      },
    },
    clock,
  );

  /** The config read model (configDetail): base fields, name, type id and ref, data. */
  async function present(values: Values): Promise<Record<string, unknown>> {
    const out = configResource.presentStored(values);
    const typeId = values.configTypeId as string;
    const type = await configTypes.schemaOf(typeId);
    out.configType = { _links: { self: { href: `./config-types/${typeId}` } }, entity: 'config-types', id: typeId, name: type?.name ?? '' };
    out.data = values.data ?? {};
    return out;
  }

  return { ...entities, present };
}

export type ConfigService = ReturnType<typeof createConfigService>;
