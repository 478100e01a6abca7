/**
 * Per-connection cache of list results (migration 0022's change counters make it exact): for one query over
 * one table (WHERE text, its parameters, ORDER BY) it keeps the number of matching rows and their rowids in
 * order, valid while that table's counter is unchanged, whichever process wrote. A page is then a slice of
 * the rowids and one read of those rows. The rowid list is built only when the same query is asked again at
 * the same counter, so a one-off query pays nothing but two counter reads.
 *
 * Only queries that read nothing but their own table are cached: a sub-select over a side table (e.g. role
 * attributes) could change without the table's counter moving. That is decided from the statement's own
 * program (EXPLAIN): every b-tree it opens must be the table or one of its indexes, and it may call no
 * function whose result depends on anything but its arguments.
 *
 * Rowids stay valid while the counter stands because the store never runs VACUUM (which may renumber the
 * rowids of a table without an INTEGER PRIMARY KEY without touching any counter).
 */
import type { Db } from './database.ts';
import { tableVersions, type VersionedTable } from './table-versions.ts';

/**
 * Tables whose counter moves on every committed insert, update and delete. `api_sessions` is versioned too,
 * but only for the columns a session lookup depends on (not its activity time, not inserts), so a list of
 * it could go stale under an unchanged counter: it is not cached here.
 */
const cachedTables: ReadonlySet<string> = new Set<VersionedTable>(['services', 'configs', 'config_types', 'identities']);

/** At most this many queries are remembered per connection (least recently used first out). */
const MAX_ENTRIES = 32;
/** A result with more rows keeps only its count. */
export const MAX_CACHED_ROWS = 500_000;
/** Rowids kept over all entries of one connection (4 or 8 bytes each). */
const MAX_TOTAL_ROWS = 1_000_000;
/** Statement verdicts ("reads only its table") kept per connection. */
const MAX_VERDICTS = 1024;
/** Queries whose key (WHERE text, ORDER BY and parameters) is longer are not cached. */
const MAX_KEY_CHARS = 8192;

/** Built-in SQL functions whose result is not a function of their arguments alone. */
const volatileFunctions = new Set([
  'random', 'randomblob', 'changes', 'total_changes', 'last_insert_rowid',
  'date', 'time', 'datetime', 'julianday', 'unixepoch', 'strftime', 'timediff',
  'current_date', 'current_time', 'current_timestamp',
]);

export interface ListQueryText {
  /** Predicate over alias `e` (parameterized). */
  where: string;
  params: readonly unknown[];
  orderBy: string;
}

/** What is known about one query at one counter value. */
export interface CachedList {
  /** Matching rows (absent until the query was asked a second time). */
  count?: number;
  /** Matching rowids in order (absent when not built yet, or when there are more than MAX_CACHED_ROWS). */
  rowids?: Int32Array | Float64Array;
}

interface Entry extends CachedList {
  version: string;
}

interface ConnectionCache {
  entries: Map<string, Entry>;
  versions: Map<string, () => string>;
  /** Per SELECT text: whether it reads nothing but its table. */
  ownTableOnly: Map<string, boolean>;
  stats: ListCacheStats;
}

/** Counts per connection: lookups that found a remembered list, and lists remembered. */
export interface ListCacheStats {
  hits: number;
  builds: number;
}

const caches = new WeakMap<Db, ConnectionCache>();

function cacheOf(db: Db): ConnectionCache {
  let c = caches.get(db);
  if (!c) caches.set(db, (c = { entries: new Map(), versions: new Map(), ownTableOnly: new Map(), stats: { hits: 0, builds: 0 } }));
  return c;
}

/** A query's place in the cache, taken at the table's current counter. */
export interface ListCacheSlot {
  /** What is remembered for this query at the counter the slot was taken at (undefined: first ask). */
  readonly known: CachedList | undefined;
  /** Whether the table's counter still has the value the slot was taken at. */
  current(): boolean;
  /** Remembers `list` for this query at the slot's counter (when it is still current). */
  remember(list: CachedList): void;
  /** Whether the statement reads nothing but the table (checked once per statement text). */
  readsOwnTableOnly(selectSql: string): boolean;
}

function readVersion(db: Db, cache: ConnectionCache, table: string): string | undefined {
  let read = cache.versions.get(table);
  if (!read) cache.versions.set(table, (read = tableVersions(db, [table as VersionedTable])));
  try {
    return read() ?? undefined;
  } catch {
    return undefined; // a store without the counters (not migrated): nothing is cached
  }
}

/** Parameters as text that tells every bound value apart (strings quoted, numbers and bigints tagged). */
function paramsKey(params: readonly unknown[]): string | undefined {
  const parts: string[] = [];
  for (const v of params) {
    if (typeof v === 'string') parts.push(JSON.stringify(v));
    else if (typeof v === 'number') parts.push(`n${v}`);
    else if (typeof v === 'bigint') parts.push(`b${v}`);
    else if (v === null) parts.push('null');
    else return undefined; // blobs and other values: not cached
  }
  return parts.join(',');
}

function keyOf(table: string, q: ListQueryText): string | undefined {
  const params = paramsKey(q.params);
  if (params === undefined) return undefined;
  const key = `${table}\u0000${q.where}\u0000${q.orderBy}\u0000${params}`;
  return key.length > MAX_KEY_CHARS ? undefined : key;
}

function evict(cache: ConnectionCache): void {
  let rows = 0;
  for (const e of cache.entries.values()) rows += e.rowids?.length ?? 0;
  for (const [key, e] of cache.entries) {
    if (cache.entries.size <= MAX_ENTRIES && rows <= MAX_TOTAL_ROWS) break;
    cache.entries.delete(key);
    rows -= e.rowids?.length ?? 0;
  }
}

/**
 * Checks a SELECT's program: every b-tree it opens is `table` or one of its indexes in the main schema,
 * table-valued functions are only the JSON ones the text names, and no volatile function is called.
 */
function readsOnly(db: Db, table: string, sql: string, params: readonly unknown[]): boolean {
  const roots = new Set(
    (db.prepare(`SELECT rootpage FROM sqlite_schema WHERE tbl_name = ? AND rootpage > 0`).pluck().all(table) as number[]),
  );
  const program = db.prepare(`EXPLAIN ${sql}`).all(...params) as Array<{ opcode: string; p2: number; p3: number; p4: unknown }>;
  let virtualTables = 0;
  for (const op of program) {
    switch (op.opcode) {
      case 'OpenRead':
      case 'ReopenIdx':
        if (op.p3 !== 0 || !roots.has(op.p2)) return false;
        break;
      case 'OpenWrite':
        return false;
      case 'VOpen':
        virtualTables += 1;
        break;
      case 'Function':
      case 'PureFunc':
      case 'Function0':
      case 'PureFunc0':
      case 'AggStep':
      case 'AggStep0':
      case 'AggFinal': {
        const name = /^([A-Za-z_0-9]+)\(/.exec(String(op.p4 ?? ''))?.[1]?.toLowerCase();
        if (name === undefined || volatileFunctions.has(name)) return false;
        break;
      }
    }
  }
  const jsonFunctions = sql.match(/\bjson_(each|tree)\s*\(/gi)?.length ?? 0;
  return virtualTables <= jsonFunctions;
}

/**
 * The cache slot of a query over `table`, or undefined when it is not cached: the table's counter does not
 * cover every change, the store has no counters, the key is too large, or a transaction is open (its own
 * uncommitted writes move the counter and may still be rolled back).
 */
export function listCacheSlot(db: Db, table: string, q: ListQueryText): ListCacheSlot | undefined {
  if (!cachedTables.has(table) || db.inTransaction) return undefined;
  const key = keyOf(table, q);
  if (key === undefined) return undefined;
  const cache = cacheOf(db);
  const version = readVersion(db, cache, table);
  if (version === undefined) return undefined;
  const entry = cache.entries.get(key);
  let known: CachedList | undefined;
  if (entry && entry.version === version) {
    known = entry;
    if (entry.count !== undefined) cache.stats.hits += 1;
    cache.entries.delete(key); // most recently used last
    cache.entries.set(key, entry);
  } else {
    // First ask at this counter: remember only that it was asked.
    cache.entries.delete(key);
    cache.entries.set(key, { version });
    evict(cache);
  }
  const current = () => readVersion(db, cache, table) === version;
  return {
    known,
    current,
    remember(list) {
      if (!current()) return;
      const rowids = list.rowids && list.rowids.length <= MAX_CACHED_ROWS ? list.rowids : undefined;
      cache.entries.delete(key);
      cache.entries.set(key, { version, count: list.count, rowids });
      cache.stats.builds += 1;
      evict(cache);
    },
    readsOwnTableOnly(selectSql) {
      let yes = cache.ownTableOnly.get(selectSql);
      if (yes === undefined) {
        try {
          yes = readsOnly(db, table, selectSql, q.params);
        } catch {
          yes = false;
        }
        // Statement texts follow the filters asked; keep a bounded number of verdicts.
        if (cache.ownTableOnly.size >= MAX_VERDICTS) cache.ownTableOnly.clear();
        cache.ownTableOnly.set(selectSql, yes);
      }
      return yes;
    },
  };
}

/** Compact storage for a rowid list (rowids beyond 32 bits are kept as doubles; both are exact). */
export function packRowids(list: readonly number[]): Int32Array | Float64Array {
  let small = true;
  for (let i = 0; i < list.length; i++) {
    const v = list[i]!;
    if (v > 0x7fffffff || v < -0x80000000) {
      small = false;
      break;
    }
  }
  return small ? Int32Array.from(list) : Float64Array.from(list);
}

/** This connection's counters (a copy). */
export function listCacheStats(db: Db): ListCacheStats {
  return { ...cacheOf(db).stats };
}

/** Forgets every cached list of this connection (tests). */
export function clearListCache(db: Db): void {
  caches.delete(db);
}
