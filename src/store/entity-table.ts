/**
 * Generic persistence for one entity table, driven by a declaration the resource hands in (the store
 * never imports resources). Values move in and out as records keyed by wire field names; the declaration
 * maps each to a column and a storage kind. Role attributes are written both to a JSON column (cheap
 * reads) and to a side table (indexed filters and policy matching), always in the same transaction.
 */
import type { Db, Statement } from './database.ts';
import type { Sql, Tx } from './store.ts';
import { mapConstraintError } from './sqlite-errors.ts';
import { listCacheSlot, packRowids, MAX_CACHED_ROWS, type ListCacheSlot } from './list-cache.ts';

export type ColumnKind = 'text' | 'int' | 'real' | 'bool' | 'json' | 'datetime';

export interface ColumnDecl {
  column: string;
  kind: ColumnKind;
}

export interface AttributeTableDecl {
  /** Wire field holding the attribute list, e.g. `roleAttributes`. */
  field: string;
  table: string;
  ownerColumn: string;
  valueColumn: string;
}

export interface EntityTableDecl {
  table: string;
  /** Singular name used in not-found causes, e.g. `identity`. */
  singular: string;
  /** Plural entity type used in unique-index causes, e.g. `identities`. */
  entityType: string;
  /** Wire field → column. Must not include the base fields (id, createdAt, updatedAt, tags, isSystem). */
  columns: Record<string, ColumnDecl>;
  attributes?: AttributeTableDecl;
}

export type Values = Record<string, unknown>;

const baseColumns: Record<string, ColumnDecl> = {
  id: { column: 'id', kind: 'text' },
  createdAt: { column: 'created_at', kind: 'datetime' },
  updatedAt: { column: 'updated_at', kind: 'datetime' },
  tags: { column: 'tags', kind: 'json' },
  isSystem: { column: 'is_system', kind: 'bool' },
};

const statementCache = new WeakMap<Db, Map<string, Statement>>();

/** Prepares a statement once per connection. */
export function prepare(db: Db, sql: string): Statement {
  let cache = statementCache.get(db);
  if (!cache) statementCache.set(db, (cache = new Map()));
  let stmt = cache.get(sql);
  if (!stmt) cache.set(sql, (stmt = db.prepare(sql)));
  return stmt;
}

export function allColumns(decl: EntityTableDecl): Record<string, ColumnDecl> {
  return { ...baseColumns, ...decl.columns };
}

function encode(kind: ColumnKind, value: unknown): unknown {
  if (value === undefined || value === null) return null;
  switch (kind) {
    case 'bool':
      return value ? 1 : 0;
    case 'json':
      return JSON.stringify(value);
    default:
      return value;
  }
}

function decode(kind: ColumnKind, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (kind) {
    case 'bool':
      return value === 1 || value === true;
    case 'json':
      return JSON.parse(value as string);
    default:
      return value;
  }
}

/** Column entries of a declaration, computed once per declaration (decoding is on every list's hot path). */
const columnEntries = new WeakMap<EntityTableDecl, Array<[string, ColumnDecl]>>();

/** Turns a raw SQL row into wire-keyed values. */
export function decodeRow(decl: EntityTableDecl, row: Record<string, unknown>): Values {
  let entries = columnEntries.get(decl);
  if (!entries) columnEntries.set(decl, (entries = Object.entries(allColumns(decl))));
  const out: Values = {};
  for (let i = 0; i < entries.length; i++) {
    const [field, c] = entries[i]!;
    out[field] = decode(c.kind, row[c.column]);
  }
  return out;
}

function normalizeAttributes(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return [...new Set(list.map(String))].sort();
}

async function writeAttributes(tx: Tx, decl: EntityTableDecl, id: string, list: string[]): Promise<void> {
  const a = decl.attributes!;
  await tx.run(`DELETE FROM ${a.table} WHERE ${a.ownerColumn} = ?`, [id]);
  const insert = `INSERT INTO ${a.table} (${a.ownerColumn}, ${a.valueColumn}) VALUES (?, ?)`;
  for (const value of list) await tx.run(insert, [id, value]);
}

/** Inserts a record. `values` must carry id, createdAt and updatedAt. */
export async function insertEntity(tx: Tx, decl: EntityTableDecl, values: Values): Promise<void> {
  const cols = allColumns(decl);
  const attrField = decl.attributes?.field;
  const row = { ...values };
  if (attrField) row[attrField] = normalizeAttributes(row[attrField]);
  if (row.tags === undefined || row.tags === null) row.tags = {};
  const fields = Object.keys(row).filter((f) => cols[f] && row[f] !== undefined);
  const sql = `INSERT INTO ${decl.table} (${fields.map((f) => cols[f].column).join(', ')}) VALUES (${fields.map(() => '?').join(', ')})`;
  try {
    await tx.run(sql, fields.map((f) => encode(cols[f].kind, row[f])));
  } catch (err) {
    throw mapConstraintError(err, decl, row);
  }
  if (attrField) await writeAttributes(tx, decl, values.id as string, row[attrField] as string[]);
}

/** Updates the given fields of a record and refreshes updatedAt; returns false when it does not exist. */
export async function updateEntity(tx: Tx, decl: EntityTableDecl, id: string, changes: Values, now: string): Promise<boolean> {
  const cols = allColumns(decl);
  const attrField = decl.attributes?.field;
  const row: Values = { ...changes, updatedAt: now };
  if (attrField && attrField in row) row[attrField] = normalizeAttributes(row[attrField]);
  if ('tags' in row && (row.tags === null || row.tags === undefined)) row.tags = {};
  const fields = Object.keys(row).filter((f) => cols[f] && f !== 'id' && f !== 'createdAt' && row[f] !== undefined);
  const sql = `UPDATE ${decl.table} SET ${fields.map((f) => `${cols[f].column} = ?`).join(', ')} WHERE id = ?`;
  let changed: number;
  try {
    changed = (await tx.run(sql, [...fields.map((f) => encode(cols[f].kind, row[f])), id])).changes;
  } catch (err) {
    throw mapConstraintError(err, decl, row);
  }
  if (changed > 0 && attrField && attrField in row) await writeAttributes(tx, decl, id, row[attrField] as string[]);
  return changed > 0;
}

export async function getEntity(q: Sql, decl: EntityTableDecl, id: string): Promise<Values | undefined> {
  const row = await q.get(`SELECT * FROM ${decl.table} WHERE id = ?`, [id]);
  return row ? decodeRow(decl, row) : undefined;
}

export async function deleteEntity(tx: Tx, decl: EntityTableDecl, id: string): Promise<boolean> {
  try {
    return (await tx.run(`DELETE FROM ${decl.table} WHERE id = ?`, [id])).changes > 0;
  } catch (err) {
    throw mapConstraintError(err, decl, { id });
  }
}

export type { PageQuery } from './store.ts';
import type { PageQuery } from './store.ts';

const rowidTables = new WeakMap<Db, Map<string, boolean>>();

/** Whether `source` is a plain table with a rowid (not a sub-select, not WITHOUT ROWID); cached per connection. */
function hasRowid(db: Db, source: string): boolean {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(source)) return false;
  let known = rowidTables.get(db);
  if (!known) rowidTables.set(db, (known = new Map()));
  let yes = known.get(source);
  if (yes === undefined) {
    try {
      db.prepare(`SELECT rowid FROM ${source} LIMIT 0`);
      yes = true;
    } catch {
      yes = false;
    }
    known.set(source, yes);
  }
  return yes;
}

/**
 * One page of rows from `source` (a table, or a sub-select) under alias `e`, plus the total count.
 * Past the first page of a plain table, the rows skipped by OFFSET are walked as rowids only (an index holding
 * the WHERE and ORDER BY columns serves that without reading a single row), and just the page's rows are read;
 * the same WHERE and ORDER BY apply, so the page is identical to the one-query form.
 * A query over a versioned table asked again while the table is unchanged is served from the list cache
 * (list-cache.ts) when it reads nothing but that table: the same count, and the same rows in the same order.
 */
export function selectPage(db: Db, source: string, q: PageQuery): { rows: Array<Record<string, unknown>>; totalCount: number } {
  const slot = hasRowid(db, source) ? listCacheSlot(db, source, q) : undefined;
  return (slot && slot.known && cachedPage(db, source, q, slot)) || uncachedPage(db, source, q);
}

function uncachedPage(db: Db, source: string, q: PageQuery, known?: { count: number }): { rows: Array<Record<string, unknown>>; totalCount: number } {
  const from = `FROM ${source} e WHERE ${q.where}`;
  const totalCount = known ? known.count : (prepare(db, `SELECT COUNT(*) AS n ${from}`).get(...q.params) as { n: number }).n;
  if (q.limit === 0 || q.offset >= totalCount) return { rows: [], totalCount };
  const limit = q.limit < 0 ? -1 : q.limit;
  const sql =
    q.offset > 0 && limit > 0 && hasRowid(db, source)
      ? `SELECT e.* FROM ${source} e WHERE e.rowid IN (SELECT e.rowid ${from} ORDER BY ${q.orderBy} LIMIT ? OFFSET ?) ORDER BY ${q.orderBy}`
      : `SELECT e.* ${from} ORDER BY ${q.orderBy} LIMIT ? OFFSET ?`;
  const rows = prepare(db, sql).all(...q.params, limit, q.offset) as Array<Record<string, unknown>>;
  return { rows, totalCount };
}

/**
 * The page from the cache, for a query asked before at the table's current counter: on the second ask the
 * ordered rowid list is built (only its length is kept for a huge result), then the page is a slice of
 * rowids read in order. Undefined when the query reads other tables or the table changed meanwhile (the
 * caller then takes the uncached path); the counter is read again after the last read, so every part of the
 * answer comes from the state the counter names.
 */
function cachedPage(db: Db, source: string, q: PageQuery, slot: ListCacheSlot): { rows: Array<Record<string, unknown>>; totalCount: number } | undefined {
  const known = slot.known!;
  let { count, rowids } = known;
  if (count === undefined) {
    const idsSql = `SELECT e.rowid FROM ${source} e WHERE ${q.where} ORDER BY ${q.orderBy}`;
    if (!slot.readsOwnTableOnly(idsSql)) return undefined;
    const list = prepare(db, idsSql).pluck(true).all(...q.params) as number[];
    count = list.length;
    if (count <= MAX_CACHED_ROWS) rowids = packRowids(list);
    if (!slot.current()) return undefined;
    slot.remember({ count, rowids });
  }
  let page: { rows: Array<Record<string, unknown>>; totalCount: number };
  if (!rowids) {
    page = uncachedPage(db, source, q, { count });
  } else {
    const end = q.limit < 0 ? rowids.length : Math.min(rowids.length, q.offset + q.limit);
    const slice = q.offset < end ? Array.from(rowids.subarray(q.offset, end)) : [];
    const rows =
      slice.length === 0
        ? []
        : (prepare(db, `SELECT e.* FROM json_each(?) j CROSS JOIN ${source} e ON e.rowid = j.value ORDER BY j.key`).all(JSON.stringify(slice)) as Array<
            Record<string, unknown>
          >);
    if (rows.length !== slice.length) return undefined;
    page = { rows, totalCount: count };
  }
  return slot.current() ? page : undefined;
}

/** One page of decoded records plus the total number of matching rows. */
export async function listEntities(q: Sql, decl: EntityTableDecl, page: PageQuery): Promise<{ items: Values[]; totalCount: number }> {
  const { rows, totalCount } = await q.page(decl.table, page);
  return { items: rows.map((r) => decodeRow(decl, r)), totalCount };
}
