/**
 * Config rules beyond generic CRUD (model.md §3.8, §4): the type is required at create and fixed
 * afterwards, `data` must be an object that validates against the type's schema, and every write tells
 * the identities whose service view includes the config (through a service or an override) that their
 * services changed. Delete removes the config from every service's `configs` and from every identity
 * override that used it.
 */
import type { Db } from '../../store/database.ts';
import { prepare, type Values } from '../../store/entity-table.ts';
import type { Tx } from '../../store/transaction.ts';
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
function servicesUsing(tx: Tx, configId: string): string[] {
  return (prepare(tx.db, 'SELECT service_id FROM service_configs WHERE config_id = ?').all(configId) as Array<{ service_id: string }>).map((r) => r.service_id);
}

/** Tells every identity that sees the config (through a service or an override) that its services changed. */
function touchConfigUsers(tx: Tx, access: AccessService, configId: string): void {
  for (const serviceId of servicesUsing(tx, configId)) access.touchServiceUsers(tx, serviceId);
  const overrides = prepare(tx.db, 'SELECT DISTINCT identity_id FROM identity_service_configs WHERE config_id = ?').all(configId) as Array<{ identity_id: string }>;
  access.touch(
    tx,
    overrides.map((r) => r.identity_id),
  );
}

export function createConfigService(db: Db, access: AccessService, configTypes: ConfigTypeService, clock: Clock = systemClock) {
  function validateAgainstType(typeId: string, data: Record<string, unknown>): void {
    validateConfigData(configTypes.schemaOf(typeId)?.schema, data);
  }

  const entities = createEntityService(
    configResource,
    db,
    {
      beforeCreate(_tx, values, body) {
        const typeId = body.configTypeId;
        if (typeId === '') throw fieldError('type', 'config type must be specified', '');
        if (typeof typeId !== 'string' || !configTypes.schemaOf(typeId)) throw fieldError('type', 'invalid config type', typeId);
        values.data = checkData(body.data);
        validateAgainstType(typeId, values.data as Record<string, unknown>);
      },
      beforeUpdate(_tx, existing, changes, mode, body) {
        // The type never changes after create (upstream silently keeps it).
        delete changes.configTypeId;
        if (mode === 'patch' && body.data === null) {
          // As upstream: a patch's null `data` is checked against the type's schema (an object schema refuses it on
          // `(root)`); where that passes, the stored data stays.
          validateConfigData(configTypes.schemaOf(existing.configTypeId as string)?.schema, null);
        } else if (mode === 'put' || body.data !== undefined) {
          changes.data = checkData(body.data);
        }
        validateAgainstType(existing.configTypeId as string, (changes.data ?? existing.data) as Record<string, unknown>);
      },
      afterUpdate(tx, existing) {
        touchConfigUsers(tx, access, existing.id as string);
      },
      beforeDelete(tx, existing) {
        const id = existing.id as string;
        // As the issue asks: a deleted config leaves every identity override that used it (upstream refuses with a 500).
        const overriders = prepare(tx.db, 'SELECT DISTINCT identity_id FROM identity_service_configs WHERE config_id = ?').all(id) as Array<{ identity_id: string }>;
        access.touch(tx, overriders.map((r) => r.identity_id));
        prepare(tx.db, 'DELETE FROM identity_service_configs WHERE config_id = ?').run(id);
        const services = servicesUsing(tx, id);
        for (const serviceId of services) {
          access.touchServiceUsers(tx, serviceId);
          const row = prepare(tx.db, 'SELECT configs FROM services WHERE id = ?').get(serviceId) as { configs: string } | undefined;
          if (!row) continue;
          const remaining = (JSON.parse(row.configs) as string[]).filter((c) => c !== id);
          prepare(tx.db, 'UPDATE services SET configs = ? WHERE id = ?').run(JSON.stringify(remaining), serviceId);
        }
        prepare(tx.db, 'DELETE FROM service_configs WHERE config_id = ?').run(id);
      },
    },
    clock,
  );

  /** The config read model (configDetail): base fields, name, type id and ref, data. */
  function present(values: Values): Record<string, unknown> {
    const out = configResource.presentStored(values);
    const typeId = values.configTypeId as string;
    const type = configTypes.schemaOf(typeId);
    out.configType = { _links: { self: { href: `./config-types/${typeId}` } }, entity: 'config-types', id: typeId, name: type?.name ?? '' };
    out.data = values.data ?? {};
    return out;
  }

  return { ...entities, present };
}

export type ConfigService = ReturnType<typeof createConfigService>;
