/**
 * The one store interface every service, the fabric engine and the access index use; they never learn which
 * engine runs. Two backends implement it: the embedded SQLite one (sqlite-store.ts, synchronous underneath,
 * each call a resolved promise) and PostgreSQL (postgres/).
 *
 * SQL text is written once, with `?` placeholders and the portable subset both engines read alike (see
 * src/query/README.md); a backend rewrites placeholders as it needs. What is not portable lives in a backend
 * behind a method here: paging (`page`), per-table change counters (`versions`, `versioned`), durability.
 *
 * Writes: `write(work)` runs `work` in one transaction, one at a time per store (SQLite's write lock, a
 * PostgreSQL advisory lock), and resolves once the commit is durable. `work` must not wait on anything but the
 * store (hash passwords, fetch keys and sign certificates before or after it): on SQLite nothing else runs on the
 * connection while it is open only because of that. Reads outside `write` see committed data only.
 *
 * Runtime writes: `writeRuntime(work)` is the same transaction for the rows that change at network speed, not at
 * admin speed, so they never queue behind model writes (see its doc below for what may use it).
 */
import type { Dialect } from '../query/dialect.ts';

export type Row = Record<string, unknown>;
export type Params = readonly unknown[];

export interface RunResult {
  /** Rows inserted, updated or deleted by the statement. */
  changes: number;
}

/** Something SQL runs on: the store itself (autocommit reads), a write transaction, or a read snapshot. */
export interface Sql {
  readonly dialect: Dialect;
  get<T = Row>(sql: string, params?: Params): Promise<T | undefined>;
  all<T = Row>(sql: string, params?: Params): Promise<T[]>;
  /** The first column of the first row; undefined when there is no row. */
  value<T = unknown>(sql: string, params?: Params): Promise<T | undefined>;
  /** The first column of every row. */
  column<T = unknown>(sql: string, params?: Params): Promise<T[]>;
  run(sql: string, params?: Params): Promise<RunResult>;
  /** One page of rows of `source` (a table or a parenthesized sub-select) under alias `e`, with the total count. */
  page(source: string, query: PageQuery): Promise<PageRows>;
  /** True inside a write transaction. */
  readonly inWrite: boolean;
}

export interface Tx extends Sql {
  /** Runs once the transaction has committed (never on rollback), before `write` resolves. */
  afterCommit(fn: () => void): void;
  /** Runs when the transaction rolls back, so in-memory state changed inside it can restore itself. */
  onRollback(fn: () => void): void;
}

export interface PageQuery {
  /** SQL predicate over alias `e` (already parameterized). */
  where: string;
  params: Params;
  orderBy: string;
  /** -1 = unlimited. */
  limit: number;
  offset: number;
}

export interface PageRows {
  rows: Row[];
  totalCount: number;
}

/** Tables with a change counter (bumped by the store in the transaction of every committed change). */
export type VersionedTable =
  | 'services'
  | 'configs'
  | 'config_types'
  | 'identities'
  | 'api_sessions'
  | 'auth_policies'
  | 'api_session_activity'
  | 'routers'
  | 'router_connections'
  | 'identity_router_connections'
  | 'links'
  | 'sessions'
  | 'terminators'
  | 'identity_service_configs'
  | 'authenticators'
  | 'enrollments'
  | 'cas'
  | 'mfas';

export type StoreKind = 'sqlite' | 'postgres';

/** A foreign key as the engine's catalog declares it (the data-integrity scan checks every one). */
export interface ForeignKey {
  /** The referencing (child) table. */
  table: string;
  /** Its referencing columns, in key order. */
  from: string[];
  /** The referenced (parent) table. */
  parent: string;
  /** The referenced columns, in key order (the parent's primary key where the declaration names none). */
  to: string[];
  /** The ON DELETE action, as SQL spells it: 'CASCADE', 'SET NULL', 'SET DEFAULT', 'RESTRICT' or 'NO ACTION'. */
  onDelete: string;
  /** Every referencing column may hold NULL (none is NOT NULL or part of the primary key). */
  nullable: boolean;
}

export interface Store extends Sql {
  readonly kind: StoreKind;
  /** One write transaction; resolves with `work`'s result once the commit is durable. */
  write<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * One write transaction for runtime rows: rows one process owns and no model invariant spans, written at network
   * speed (a circuit routed or ended, a router's connection row, the identities connected to a router, an API
   * session's activity time). On SQLite it is `write` (one writer anyway, microseconds). On PostgreSQL it does not
   * wait in the model-write queue nor take the advisory write lock: it runs beside model writes (a few at a time,
   * its own small queue) and still sends the commit notice. Its change-feed rows (triggers on `circuits` and
   * `router_connections`) may therefore commit out of seq order: they are runtime rows, which the feed's readers
   * pass over (src/cluster/change-feed.ts); work that adds any other feed row must use `write`.
   *
   * May use it: work that writes only such rows, each statement complete by itself (an insert, update or delete of
   * rows keyed by this process's own circuit, router connection or session), whose readers reload from the table
   * rather than replay the feed in order, and that touches at most one table with a change counter (two runtime
   * writes locking counters in different orders could deadlock).
   * Must not: anything a model write reads or decides on inside its transaction (terminators, links — whose `down`
   * follows the operator's `link_holds` in the same transaction —, policies, sessions, identities, routers),
   * anything that must be ordered with model writes, read-then-write decisions whose reads a concurrent model write
   * could change, and clean-ups of several tables at once (controller start, a dead process's rows: `write`).
   */
  writeRuntime<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * One statement as a runtime write of its own (`writeRuntime`'s rules). On PostgreSQL a statement on `circuits`
   * runs in autocommit (one round trip), moves no commit mark (no cache, counter or feed reader depends on that
   * table: its feed rows are runtime rows, and the fabric API reads it from the store) and does not wait for the
   * server's WAL flush (a circuit row is runtime state no answer to a client promises). Other tables go through
   * `writeRuntime`.
   */
  runRuntime(sql: string, params?: Params): Promise<RunResult>;
  /** Several reads that see one committed state. */
  snapshot<T>(work: (q: Sql) => Promise<T>): Promise<T>;
  /** The current counters of `tables` as one string (compare with `===`). */
  versions(tables: readonly VersionedTable[]): () => Promise<string>;
  /**
   * A value built from the store, kept while the counters of `tables` stand and rebuilt at the first read after
   * they moved; counters and rows are read in one snapshot. Inside a write transaction the value is built and
   * not kept.
   */
  versioned<T>(tables: readonly VersionedTable[], build: (q: Sql) => Promise<T>): (q?: Sql) => Promise<T>;
  /**
   * A cheap mark that changes whenever anyone may have committed (read without a round trip); absent when the
   * store has none, and readers of the change feed then ask the table itself.
   */
  readonly commitMark?: () => unknown;
  /**
   * Everything read through the commit mark is checked against the store again at its next read (a request that must
   * see every commit acknowledged anywhere before it, even one whose notice has not arrived); absent where the mark is
   * exact (SQLite).
   */
  readonly markStale?: () => void;
  /**
   * Calls `listener` after commits that appended model rows to the change feed (not circuits' or router connections'),
   * or on PostgreSQL a set to the shared change-set log, as this process learns of them: on SQLite its own commits; on
   * PostgreSQL every process's, by their feed notice. Several commits may give one call, and a call may come without
   * one (the notice connection back after an outage). Returns the unsubscribe. For work that should follow the feed
   * sooner than its next poll; it never replaces the poll.
   */
  onFeedChange(listener: () => void): () => void;
  /**
   * The schema's foreign keys, read from the engine's catalog (SQLite: `pragma_foreign_key_list`; PostgreSQL:
   * `pg_constraint`), by child table, then in the engine's key order.
   */
  foreignKeys(): Promise<ForeignKey[]>;
  /** The column names of a table, in table order, from the engine's catalog; none for an unknown table. */
  columns(table: string): Promise<string[]>;
  /**
   * The engine's own check of its storage (pages, indexes): one line per problem, none when sound. SQLite's
   * `PRAGMA integrity_check`; PostgreSQL has no equivalent, so it reports none.
   */
  integrityCheck(): Promise<string[]>;
  /** Undefined when nothing written since the last flush began; else settles once what was written is durable. */
  durable(): Promise<void> | undefined;
  close(): Promise<void>;
}
