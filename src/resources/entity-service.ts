/**
 * Generic list/get/create/update/patch/delete for a declared resource. It applies upstream's request
 * semantics (create and put fill defaults for omitted fields, patch changes only supplied non-null
 * fields), runs each write in one transaction, and lets a resource add its own rules through hooks
 * instead of growing flags here.
 */
import type { Store, Tx } from '../store/store.ts';
import { deleteEntity, getEntity, insertEntity, listEntities, updateEntity, type Values } from '../store/entity-table.ts';
import { compileListQuery, type ListParams } from '../query/index.ts';
import { filterableFields } from '../query/symbols.ts';
import { assertFound, fieldError } from '../errors.ts';
import { newEntityId } from '../ids.ts';
import type { Resource } from './define-resource.ts';
import { roleFilterSql } from './role-filter.ts';

export interface ListRequest extends ListParams {
  roleFilter?: string[];
  roleSemantic?: string;
}

export interface Page {
  limit: number;
  offset: number;
  totalCount: number;
  unlimited: boolean;
}

export interface ListResult {
  items: Values[];
  page: Page;
  filterableFields: string[];
}

export type WriteMode = 'create' | 'put' | 'patch';

export interface CreateOptions {
  id?: string;
  within?: (tx: Tx, values: Values) => Promise<void>;
}

export interface EntityHooks {
  /** Validate and normalize a create; may throw ApiError. */
  beforeCreate?(tx: Tx, values: Values, body: Record<string, unknown>): Promise<void> | void;
  /** Validate and normalize an update; `existing` is the stored record. */
  beforeUpdate?(tx: Tx, existing: Values, changes: Values, mode: 'put' | 'patch', body: Record<string, unknown>): Promise<void> | void;
  /** After the row was written; `changes` holds only the fields that were set. */
  afterUpdate?(tx: Tx, existing: Values, changes: Values, mode: 'put' | 'patch'): Promise<void> | void;
  beforeDelete?(tx: Tx, existing: Values): Promise<void> | void;
  afterCreate?(tx: Tx, values: Values, body: Record<string, unknown>): Promise<void> | void;
  afterDelete?(tx: Tx, existing: Values): Promise<void> | void;
  newId?(): string;
}

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export function isoNow(clock: Clock): string {
  return clock.now().toISOString();
}

/** Builds the stored values a create or put request means. */
export function valuesFromBody(resource: Resource, body: Record<string, unknown>, mode: WriteMode): Values {
  const values: Values = {};
  for (const [name, f] of Object.entries(resource.fields)) {
    const allowed = mode === 'patch' ? f.patch : f[mode];
    if (!allowed || !f.column) continue;
    const v = body[name];
    if (v !== undefined && v !== null) values[name] = v;
    else if (mode !== 'patch' && f.default !== undefined) values[name] = structuredClone(f.default);
    else if (mode !== 'patch' && f.nullable) values[name] = null;
  }
  if (body.tags !== undefined && body.tags !== null) values.tags = body.tags;
  else if (mode !== 'patch') values.tags = {};
  return values;
}

function requireName(values: Values, mode: WriteMode): void {
  if (!('name' in values) && mode === 'patch') return;
  const name = values.name;
  if (typeof name !== 'string' || name.trim() === '') throw fieldError('name', 'name is required', name ?? '');
}

export function createEntityService(resource: Resource, store: Store, hooks: EntityHooks = {}, clock: Clock = systemClock) {
  const hasName = 'name' in resource.fields;

  async function list(req: ListRequest, extraWhere?: { sql: string; params: unknown[] }): Promise<ListResult> {
    const q = compileListQuery(resource.symbols, req, store.dialect);
    const where: string[] = [q.where];
    const params: unknown[] = [...q.params];
    if (req.roleFilter && req.roleFilter.length > 0 && resource.attributes) {
      const rf = roleFilterSql(resource.attributes, req.roleFilter, req.roleSemantic);
      where.unshift(rf.sql);
      params.unshift(...rf.params);
    }
    if (extraWhere) {
      where.unshift(extraWhere.sql);
      params.unshift(...extraWhere.params);
    }
    const { items, totalCount } = await listEntities(store, resource.decl, {
      where: where.map((w) => `(${w})`).join(' AND '),
      params,
      orderBy: q.orderBy,
      limit: q.limit,
      offset: q.offset,
    });
    return {
      items,
      page: { limit: q.limit, offset: q.offset, totalCount, unlimited: q.unlimited },
      filterableFields: filterableFields(resource.symbols),
    };
  }

  function find(id: string): Promise<Values | undefined> {
    return getEntity(store, resource.decl, id);
  }

  async function get(id: string): Promise<Values> {
    return assertFound(await find(id), resource.singular, id);
  }

  /**
   * `extra` carries stored values the service derived itself (e.g. a password hash). `options.id` is an id chosen
   * beforehand (e.g. named in a signed enrollment); `options.within` writes more rows of this create in its
   * transaction, after the hooks.
   */
  async function create(body: Record<string, unknown>, extra: Values = {}, options: CreateOptions = {}): Promise<string> {
    const now = isoNow(clock);
    const values = { ...valuesFromBody(resource, body, 'create'), ...extra };
    if (hasName) requireName(values, 'create');
    values.id = options.id ?? (hooks.newId ? hooks.newId() : newEntityId());
    values.createdAt = now;
    values.updatedAt = now;
    await store.write(async (tx) => {
      await hooks.beforeCreate?.(tx, values, body);
      await insertEntity(tx, resource.decl, values);
      await hooks.afterCreate?.(tx, values, body);
      await options.within?.(tx, values);
    });
    return values.id as string;
  }

  async function update(id: string, body: Record<string, unknown>, mode: 'put' | 'patch', extra: Values = {}): Promise<void> {
    const changes = { ...valuesFromBody(resource, body, mode), ...extra };
    if (hasName) requireName(changes, mode);
    await store.write(async (tx) => {
      const existing = assertFound(await getEntity(tx, resource.decl, id), resource.singular, id);
      await hooks.beforeUpdate?.(tx, existing, changes, mode, body);
      await updateEntity(tx, resource.decl, id, changes, isoNow(clock));
      await hooks.afterUpdate?.(tx, existing, changes, mode);
    });
  }

  async function remove(id: string): Promise<void> {
    await store.write(async (tx) => {
      const existing = assertFound(await getEntity(tx, resource.decl, id), resource.singular, id);
      await hooks.beforeDelete?.(tx, existing);
      await deleteEntity(tx, resource.decl, id);
      await hooks.afterDelete?.(tx, existing);
    });
  }

  return { resource, list, find, get, create, update, remove };
}

export type EntityService = ReturnType<typeof createEntityService>;
