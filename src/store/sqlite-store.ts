/**
 * The embedded store: SQLite through better-sqlite3, synchronous underneath. Every call runs at once and
 * returns a settled promise, so the interface costs a microtask, not a thread hop.
 *
 * Two connections to the one file: writes (and reads inside them) go to the writer, everything else to the
 * reader. In WAL mode the reader sees exactly what has committed, so a read never sees an open transaction's
 * rows, whatever another request is doing. Write transactions are queued in the process (one at a time on the
 * writer) and, across processes, serialized by SQLite's own write lock (BEGIN IMMEDIATE).
 */
import type BetterSqlite3 from 'better-sqlite3';
import { sqliteDialect } from '../query/dialect.ts';
import { closeDatabase, openDatabase, type Db, type OpenOptions } from './database.ts';
import { prepare, selectPage } from './entity-table.ts';
import { tableVersions } from './table-versions.ts';
import { createWalFlusher, type WalFlusher } from './wal-flush.ts';
import type { ForeignKey, PageQuery, PageRows, Params, Row, RunResult, Sql, Store, Tx, VersionedTable } from './store.ts';
import { createFeedListeners } from './feed-listeners.ts';
import { MODEL_ROWS } from '../cluster/change-feed.ts';

export interface SqliteStore extends Store {
  readonly kind: 'sqlite';
  /** The write connection (the SQLite backend's own code, migrations and tests only). */
  readonly db: Db;
  /** The read connection (the same as `db` for an in-memory database). */
  readonly reader: Db;
  readonly flusher: WalFlusher | undefined;
}

export interface SqliteStoreOptions extends OpenOptions {
  /** Flush the WAL before answers (default true for a file). */
  flush?: boolean;
}

/** SQL run on one connection. */
function runner(db: Db, inWrite: boolean): Sql {
  const stmt = (sql: string): BetterSqlite3.Statement => prepare(db, sql);
  return {
    dialect: sqliteDialect,
    inWrite,
    get: <T>(sql: string, params: Params = []) => Promise.resolve(stmt(sql).get(...params) as T | undefined),
    all: <T>(sql: string, params: Params = []) => Promise.resolve(stmt(sql).all(...params) as T[]),
    value: <T>(sql: string, params: Params = []) => {
      const s = stmt(sql);
      const row = s.raw(true).get(...params) as unknown[] | undefined;
      s.raw(false);
      return Promise.resolve(row?.[0] as T | undefined);
    },
    column: <T>(sql: string, params: Params = []) => {
      const s = stmt(sql);
      const rows = s.raw(true).all(...params) as unknown[][];
      s.raw(false);
      return Promise.resolve(rows.map((r) => r[0] as T));
    },
    run: (sql: string, params: Params = []): Promise<RunResult> => Promise.resolve({ changes: stmt(sql).run(...params).changes }),
    page: (source: string, q: PageQuery): Promise<PageRows> => Promise.resolve(selectPage(db, source, { ...q, params: [...q.params] })),
  };
}

interface ForeignKeyRow {
  child: string;
  id: number;
  parent: string;
  from: string;
  to: string | null;
  on_delete: string;
  notnull: number;
  pk: number;
}

/**
 * Every foreign key of the schema, from SQLite's catalog (`pragma_foreign_key_list`, one row per column of each
 * key; `to` is NULL where the declaration names the parent's primary key implicitly).
 */
async function foreignKeysOn(q: Sql): Promise<ForeignKey[]> {
  const rows = await q.all<ForeignKeyRow>(
    `SELECT m.name AS child, f.id AS id, f."table" AS parent, f."from" AS "from", f."to" AS "to", f.on_delete AS on_delete,
            COALESCE(c."notnull", 0) AS "notnull", COALESCE(c.pk, 0) AS pk
       FROM sqlite_master m
       JOIN pragma_foreign_key_list(m.name) f
       LEFT JOIN pragma_table_info(m.name) c ON c.name = f."from"
      WHERE m.type = 'table'
      ORDER BY m.name, f.id, f.seq`,
  );
  const keys = new Map<string, ForeignKey & { implicit: boolean }>();
  for (const row of rows) {
    const id = `${row.child}\u0000${row.id}`;
    let key = keys.get(id);
    if (!key) keys.set(id, (key = { table: row.child, from: [], parent: row.parent, to: [], onDelete: row.on_delete, nullable: true, implicit: false }));
    key.from.push(row.from);
    if (row.to === null) key.implicit = true;
    else key.to.push(row.to);
    if (row.notnull !== 0 || row.pk !== 0) key.nullable = false;
  }
  const out: ForeignKey[] = [];
  for (const { implicit, ...key } of keys.values()) {
    if (implicit) key.to = await q.column<string>('SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk', [key.parent]);
    out.push(key);
  }
  return out;
}

/** A FIFO lock held across awaits. */
function createQueue() {
  let tail: Promise<void> = Promise.resolve();
  let held = false;
  return {
    get held() {
      return held;
    },
    async acquire(): Promise<() => void> {
      const previous = tail;
      let release!: () => void;
      tail = new Promise<void>((resolve) => (release = resolve));
      await previous;
      held = true;
      return () => {
        held = false;
        release();
      };
    },
  };
}

export function openSqliteStore(file: string, options: SqliteStoreOptions = {}): SqliteStore {
  const db = openDatabase(file, options);
  const reader = file === ':memory:' ? db : openDatabase(file, options);
  const flusher = file !== ':memory:' && options.flush !== false ? createWalFlusher(db) : undefined;
  const readSql = runner(reader, false);
  const writeSql = runner(db, true);
  const writes = createQueue();
  // Changes whenever another connection commits, ours or another process's; no table is read.
  const dataVersion = reader.prepare('PRAGMA data_version').pluck();
  /** Commits of this store: the mark of an in-memory store, whose one connection sees no data_version change of its own. */
  let commits = 0;
  const feed = createFeedListeners();
  /** The change feed's newest model row after this process's last commit, while someone listens (see `feedMoved`). */
  let feedHead: unknown;
  let feedHeadQuery: { get(): unknown } | undefined;
  /**
   * Whether the commit just made appended model rows to the change feed (one read of the partial index change_feed_model
   * on the writer, made only for listeners); circuits and router connections wake nobody, as on PostgreSQL.
   */
  function feedMoved(): boolean {
    try {
      feedHeadQuery ??= db.prepare(`SELECT MAX(seq) FROM change_feed WHERE ${MODEL_ROWS}`).pluck();
      const head = feedHeadQuery.get();
      if (head === feedHead) return false;
      feedHead = head;
      return true;
    } catch {
      return false; // a store without the feed yet (before its migrations)
    }
  }
  /** Changes whenever anyone may have committed. */
  const commitMark: () => unknown = reader === db ? () => commits : () => dataVersion.get();

  async function write<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    const release = await writes.acquire();
    const hooks: Array<() => void> = [];
    const rollbacks: Array<() => void> = [];
    const tx: Tx = { ...writeSql, afterCommit: (fn) => hooks.push(fn), onRollback: (fn) => rollbacks.push(fn) };
    let result: T;
    try {
      db.exec('BEGIN IMMEDIATE');
      try {
        result = await work(tx);
        db.exec('COMMIT');
        commits += 1;
        if (feed.size > 0 && feedMoved()) feed.notify();
      } catch (err) {
        if (db.inTransaction) db.exec('ROLLBACK');
        for (const fn of rollbacks) fn();
        throw err;
      }
    } finally {
      release();
    }
    for (const hook of hooks) hook();
    return result;
  }

  /** Snapshots open on the reader; one read transaction serves them all. */
  let snapshotDepth = 0;

  /**
   * One read transaction on the reader. A snapshot asked for while one is open joins it (a nested call from the
   * same work, or work of another request resumed in the same turn of the event loop): it sees the same committed
   * state, and no later one can be hidden from it, since it ends before anything that waits on I/O can run.
   */
  async function snapshot<T>(work: (q: Sql) => Promise<T>): Promise<T> {
    if (reader === db) return work(db.inTransaction ? writeSql : readSql);
    if (snapshotDepth === 0) reader.exec('BEGIN');
    snapshotDepth += 1;
    try {
      return await work(readSql);
    } finally {
      snapshotDepth -= 1;
      if (snapshotDepth === 0 && reader.inTransaction) reader.exec('COMMIT');
    }
  }

  /**
   * The counters, read again only when the commit mark moved since the last reading (PRAGMA data_version reads no
   * table; the counters are a statement per table). Not kept while the one connection of an in-memory store is
   * inside a write, whose counters may still roll back.
   */
  function versions(tables: readonly VersionedTable[]): () => Promise<string> {
    const onReader = tableVersions(reader, tables);
    let last: { mark: unknown; value: string } | undefined;
    return () => {
      const at = commitMark();
      if (last !== undefined && last.mark === at) return Promise.resolve(last.value);
      const value = onReader();
      last = reader === db && db.inTransaction ? undefined : { mark: at, value };
      return Promise.resolve(value);
    };
  }

  function versioned<T>(tables: readonly VersionedTable[], build: (q: Sql) => Promise<T>): (q?: Sql) => Promise<T> {
    const version = versions(tables);
    const onWriter = tableVersions(db, tables);
    const onReader = tableVersions(reader, tables);
    let kept: { value: T; at: string } | undefined;
    return async (q?: Sql) => {
      if (q?.inWrite) {
        // Built from the open transaction's view; its counters may still roll back, so it is not kept.
        return build(q);
      }
      if (kept !== undefined && kept.at === (await version())) return kept.value;
      const fresh = await snapshot(async (s) => {
        // Read in the snapshot itself: the counters of exactly what `build` sees.
        const at = reader === db ? onWriter() : onReader();
        return { at, value: await build(s) };
      });
      kept = fresh;
      return fresh.value;
    };
  }

  return {
    kind: 'sqlite',
    db,
    reader,
    flusher,
    ...readSql,
    write,
    // One writer anyway (BEGIN IMMEDIATE), and a write takes microseconds: runtime rows take the same path.
    writeRuntime: write,
    runRuntime: (sql, params = []) => write((tx) => tx.run(sql, params)),
    snapshot,
    versions,
    versioned,
    foreignKeys: () => foreignKeysOn(readSql),
    columns: (table) => readSql.column<string>('SELECT name FROM pragma_table_info(?) ORDER BY cid', [table]),
    // File pages, b-trees and indexes against each other ('ok' alone when sound).
    integrityCheck: async () => (await readSql.column<string>('PRAGMA integrity_check')).filter((line) => line !== 'ok'),
    commitMark,
    onFeedChange(listener) {
      if (feed.size === 0) feedMoved(); // where the feed stands now: only later commits are news
      return feed.add(listener);
    },
    durable: () => flusher?.durable(),
    async close() {
      await flusher?.close();
      if (reader !== db) closeDatabase(reader);
      closeDatabase(db);
    },
  };
}

export type { Row };
