/**
 * Config type rules beyond generic CRUD: the schema must compile and be rooted in an object type, the
 * name `all` is reserved (it means "every type" wherever config types are requested), and a type can not
 * be deleted while configs of it exist (409, the project contract; upstream answers 500). A schema
 * change applies to later config writes only, as upstream.
 */
import type { Values } from '../../store/entity-table.ts';
import type { Sql, Store } from '../../store/store.ts';
import { ApiError, fieldError } from '../../errors.ts';
import { createEntityService, systemClock, type Clock } from '../entity-service.ts';
import { configTypeResource } from './config-type.resource.ts';
import { checkConfigTypeSchema } from './json-schema.ts';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function normalize(values: Values, mode: 'create' | 'put' | 'patch'): void {
  if (values.name === 'all') throw fieldError('name', "name 'all' is reserved and may not be used", 'all');
  if ('schema' in values || mode !== 'patch') {
    // The request schema admits only an object or null; an empty object means "no schema" and is not checked.
    const schema = isObject(values.schema) ? values.schema : null;
    if (schema && Object.keys(schema).length > 0) {
      const problem = checkConfigTypeSchema(schema);
      if (problem) throw problem;
    }
    values.schema = schema;
  }
}

export function createConfigTypeService(store: Store, clock: Clock = systemClock) {
  const entities = createEntityService(
    configTypeResource,
    store,
    {
      beforeCreate(_tx, values) {
        normalize(values, 'create');
      },
      beforeUpdate(_tx, _existing, changes, mode) {
        normalize(changes, mode);
      },
      async beforeDelete(tx, existing) {
        const id = existing.id as string;
        if (await tx.get('SELECT 1 FROM configs WHERE config_type_id = ? LIMIT 1', [id])) {
          throw new ApiError('CAN_NOT_DELETE_REFERENCED_ENTITY', {
            cause: { code: 'UNHANDLED', message: `cannot delete config type ${id}, as configs of that type exist` },
          });
        }
      },
    },
    clock,
  );

  /** The config type read model: base fields, name and schema (null when none). */
  function present(values: Values): Record<string, unknown> {
    const out = configTypeResource.presentStored(values);
    out.schema = values.schema ?? null;
    return out;
  }

  /** Stored schema of a type, or undefined when the type does not exist; `q` is the transaction when inside one. */
  async function schemaOf(id: string, q: Sql = store): Promise<{ schema: Record<string, unknown> | null; name: string } | undefined> {
    const row = await q.get<{ name: string; schema: string | null }>('SELECT name, schema FROM config_types WHERE id = ?', [id]);
    if (!row) return undefined;
    return { name: row.name, schema: row.schema ? (JSON.parse(row.schema) as Record<string, unknown>) : null };
  }

  return { ...entities, present, schemaOf };
}

export type ConfigTypeService = ReturnType<typeof createConfigTypeService>;
