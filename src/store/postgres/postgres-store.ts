/**
 * The store on PostgreSQL (14 or later), through a pool of node-postgres connections.
 *
 * SQL arrives with `?` placeholders (numbered `$1`, `$2`… once per text) and results look like SQLite's: the
 * pool's connections (only they: nothing global is changed) parse BIGINT and NUMERIC as JS numbers, JSON and JSONB
 * as their text (the code parses JSON columns itself), booleans as 0/1; column names are as PostgreSQL gives them
 * (lower-case unless quoted).
 *
 * Writes: one transaction at a time in this process (a FIFO queue), and across processes, since every write takes
 * one transaction-scoped advisory lock right after BEGIN; so change-feed rows (identity `seq`) are numbered in
 * commit order. Runtime writes (`writeRuntime`: circuits, router connections, API session activity) take neither:
 * at most RUNTIME_WRITES of them at a time run beside the model writes, in plain transactions, so their feed rows may
 * commit out of seq order (the feed's gap handling waits for them). afterCommit hooks run after COMMIT, onRollback hooks after ROLLBACK, as on SQLite. A committed
 * transaction is durable (the server's own synchronous commit), so `durable()` has nothing to wait for.
 * Snapshots: one connection in a REPEATABLE READ READ ONLY transaction. Autocommit reads take any pooled
 * connection.
 *
 * Faults: connecting gives up after `connectTimeoutMs` (2.5 s), a statement after `statementTimeoutMs` (10 s,
 * on the server, and a little later on the client for a server that does not answer at all); an unreachable,
 * restarting or overloaded server makes the call fail at once with 503 STORAGE_UNAVAILABLE. A broken connection is
 * dropped (the pool's 'error' events are handled, never fatal) and new ones are opened on demand, so the store
 * works again by itself when the server is back. Writes queued behind a write that could not connect fail at once
 * instead of each waiting for its own connection timeout. Messages never contain the password.
 *
 * Differences from SQLite the code must know (see also src/query/README.md): a statement that fails inside a
 * write aborts the whole transaction (PostgreSQL has no statement-level rollback): catching the error and going
 * on makes `write` fail at commit (nothing is committed, onRollback hooks run); unquoted aliases come back
 * lower-case.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { positionalParameters, postgresDialect } from '../../query/dialect.ts';
import type { ForeignKey, PageQuery, PageRows, Params, Row, RunResult, Sql, Store, Tx, VersionedTable } from '../store.ts';
import { parsePostgresUrl, scrub } from './connection-url.ts';
import { isConnectionBroken, isUnavailable, storageUnavailable, storeError } from './faults.ts';
import { createFeedListeners } from '../feed-listeners.ts';

export interface PostgresStoreOptions {
  /** Pool size (default 10). */
  max?: number;
  /** Giving up on connecting (default 2500 ms, or the URL's connect_timeout). */
  connectTimeoutMs?: number;
  /** Server-side statement timeout (default 10000 ms); the client gives up 2 s later. */
  statementTimeoutMs?: number;
  /** The server ends a session idle inside a transaction this long (default 30000 ms), releasing its locks. */
  idleInTransactionTimeoutMs?: number;
  /** application_name of the connections (default `portcullis`, or the URL's). */
  applicationName?: string;
  /** Connection problems seen outside any call (a pooled connection lost); rate-limited warnings on stderr by default. */
  onError?: (message: string) => void;
  /**
   * While the listening connection is down, values read through the commit mark (`versions`, `versioned`, the
   * change feed's probe) are checked again this often (default 1000 ms); while it is up, it is asked every ten
   * periods whether it still answers.
   */
  markPollMs?: number;
}

export interface PostgresStore extends Store {
  readonly kind: 'postgres';
  /** The connection pool (migrations and tests). */
  readonly pool: pg.Pool;
  /** `host:port/database as user`, for logs (never the password). */
  readonly location: string;
  /**
   * A connection of its own, outside the pool, for session-scoped state (advisory locks that live as long as it):
   * TCP keepalives on, no statement timeout. Its 'error' and 'end' events are the caller's to handle; the caller
   * ends it. Closing the store does not.
   */
  session(name: string): Promise<pg.Client>;
}

/** Runtime tables no value read through the commit mark depends on (`runRuntime`). */
const QUIET_TABLES = new Set(['circuits']);
/** The table an INSERT, UPDATE or DELETE statement writes. */
const STATEMENT_TABLE = /^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+([A-Za-z_][A-Za-z0-9_]*)/i;

/** The channel every write notifies at its commit (`pg_notify` is delivered on commit, never on rollback). */
const COMMIT_CHANNEL = 'portcullis_commits';
/** The channel of commits that appended to the change feed or the shared change-set log (migration 0041's triggers). */
const FEED_CHANNEL = 'portcullis_feed';

/** Key of the transaction-scoped advisory lock every write takes (ASCII "pcwrite!"). */
export const WRITE_LOCK_KEY = '8098447888221496609';
const BEGIN_WRITE = `BEGIN; SELECT pg_advisory_xact_lock(${WRITE_LOCK_KEY})`;
const BEGIN_SNAPSHOT = 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY';
const BEGIN_RUNTIME = 'BEGIN';
/**
 * Runtime writes open at once in this process (each holds a pooled connection): enough to overlap their round
 * trips, few enough to leave the pool to reads and the model writer.
 */
const RUNTIME_WRITES = 4;

// ---- result types -------------------------------------------------------------------------------------------------

const OID = { bool: 16, int8: 20, json: 114, jsonArray: 199, boolArray: 1000, textArray: 1009, int8Array: 1016, numericArray: 1231, numeric: 1700, jsonb: 3802, jsonbArray: 3807 };

const textArray = pg.types.getTypeParser(OID.textArray, 'text') as (value: string) => Array<string | null>;
const arrayOf =
  (parse: (value: string) => unknown) =>
  (value: string): unknown[] =>
    textArray(value).map((v) => (v === null ? null : parse(v)));
const asNumber = (value: string): number => Number(value);
const asText = (value: string): string => value;
const asBit = (value: string): number => (value === 't' ? 1 : 0);

const textParsers = new Map<number, (value: string) => unknown>([
  [OID.int8, asNumber],
  [OID.numeric, asNumber],
  [OID.json, asText],
  [OID.jsonb, asText],
  [OID.bool, asBit],
  [OID.int8Array, arrayOf(asNumber)],
  [OID.numericArray, arrayOf(asNumber)],
  [OID.jsonArray, arrayOf(asText)],
  [OID.jsonbArray, arrayOf(asText)],
  [OID.boolArray, arrayOf(asBit)],
]);

/** The pool's type parsers: SQLite-like values, set on these connections only. */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) =>
    (format === undefined || format === 'text' ? textParsers.get(oid) : undefined) ??
    (pg.types.getTypeParser as (oid: number, format?: string) => unknown)(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

// ---- statements ---------------------------------------------------------------------------------------------------

const MAX_CACHED_TEXTS = 4000;
const texts = new Map<string, string>();

/** `?` placeholders as `$n`, converted once per text (a bounded cache: compiled filters vary). */
function pgText(sql: string): string {
  let text = texts.get(sql);
  if (text === undefined) {
    text = positionalParameters(sql);
    if (texts.size >= MAX_CACHED_TEXTS) texts.delete(texts.keys().next().value!);
    texts.set(sql, text);
  }
  return text;
}

// ---- catalog ------------------------------------------------------------------------------------------------------

/** `pg_constraint.confdeltype` as SQL spells the action. */
const ON_DELETE: Record<string, string> = { a: 'NO ACTION', r: 'RESTRICT', c: 'CASCADE', n: 'SET NULL', d: 'SET DEFAULT' };

interface ForeignKeyRow {
  child: string;
  name: string;
  parent: string;
  on_delete: string;
  from: string;
  to: string;
  not_null: number;
}

/** Every foreign key of the schema's tables, from `pg_constraint`: one row per column pair of each key. */
async function foreignKeysOn(q: Sql): Promise<ForeignKey[]> {
  const rows = await q.all<ForeignKeyRow>(
    `SELECT child.relname AS child, c.conname AS name, parent.relname AS parent, c.confdeltype AS on_delete,
            ca.attname AS "from", pa.attname AS "to", ca.attnotnull AS not_null
       FROM pg_constraint c
       JOIN pg_class child ON child.oid = c.conrelid
       JOIN pg_namespace ns ON ns.oid = child.relnamespace
       JOIN pg_class parent ON parent.oid = c.confrelid
       CROSS JOIN LATERAL unnest(c.conkey, c.confkey) WITH ORDINALITY AS k(child_column, parent_column, position)
       JOIN pg_attribute ca ON ca.attrelid = c.conrelid AND ca.attnum = k.child_column
       JOIN pg_attribute pa ON pa.attrelid = c.confrelid AND pa.attnum = k.parent_column
      WHERE c.contype = 'f' AND ns.nspname = current_schema()
      ORDER BY child.relname, c.conname, k.position`,
  );
  const keys = new Map<string, ForeignKey>();
  for (const row of rows) {
    const id = `${row.child}\u0000${row.name}`;
    let key = keys.get(id);
    if (!key) {
      const onDelete = ON_DELETE[row.on_delete] ?? 'NO ACTION';
      keys.set(id, (key = { table: row.child, from: [], parent: row.parent, to: [], onDelete, nullable: true }));
    }
    key.from.push(row.from);
    key.to.push(row.to);
    // Primary key columns are NOT NULL in PostgreSQL.
    if (row.not_null !== 0) key.nullable = false;
  }
  return [...keys.values()];
}

function columnsOn(q: Sql, table: string): Promise<string[]> {
  return q.column<string>(
    'SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position',
    [table],
  );
}

/** `name`: run as a prepared statement of that name (parsed and planned once per connection). */
type Query = (sql: string, params: Params, array?: boolean, name?: string) => Promise<pg.QueryResult>;

function queryOn(client: pg.ClientBase): Query {
  return (sql, params, array, name) =>
    array
      ? client.query({ text: pgText(sql), values: params as unknown[], rowMode: 'array', ...(name ? { name } : {}) })
      : client.query({ text: pgText(sql), values: params as unknown[], ...(name ? { name } : {}) });
}

/** A prepared statement's name for a text: one per text, whatever connection runs it. */
function statementName(sql: string): string {
  return `pc_${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`;
}

async function pageOn(query: Query, source: string, q: PageQuery): Promise<PageRows> {
  const from = `FROM ${source} e WHERE ${q.where}`;
  const counted = await query(`SELECT COUNT(*) AS n ${from}`, q.params, true);
  const totalCount = Number((counted.rows[0] as unknown[])[0]);
  if (q.limit === 0 || q.offset >= totalCount) return { rows: [], totalCount };
  const page = await query(`SELECT e.* ${from} ORDER BY ${q.orderBy} LIMIT ? OFFSET ?`, [...q.params, q.limit < 0 ? null : q.limit, q.offset]);
  return { rows: page.rows as Row[], totalCount };
}

/** Runs `work` with a query function: on a pooled connection per call, or on the connection of a transaction. */
type Exec = <R>(work: (query: Query) => Promise<R>, retryable: boolean) => Promise<R>;

const READ_ONLY_STATEMENT = /^\s*SELECT\b/i;

function sqlOn(exec: Exec, inWrite: boolean): Sql {
  const retry = (sql: string) => READ_ONLY_STATEMENT.test(sql);
  return {
    dialect: postgresDialect,
    inWrite,
    get: async <T>(sql: string, params: Params = []) => (await exec((q) => q(sql, params), retry(sql))).rows[0] as T | undefined,
    all: async <T>(sql: string, params: Params = []) => (await exec((q) => q(sql, params), retry(sql))).rows as T[],
    value: async <T>(sql: string, params: Params = []) => ((await exec((q) => q(sql, params, true), retry(sql))).rows[0] as unknown[] | undefined)?.[0] as T | undefined,
    column: async <T>(sql: string, params: Params = []) => ((await exec((q) => q(sql, params, true), retry(sql))).rows as unknown[][]).map((r) => r[0] as T),
    run: async (sql: string, params: Params = []): Promise<RunResult> => ({ changes: (await exec((q) => q(sql, params), false)).rowCount ?? 0 }),
    page: (source: string, q: PageQuery) => exec((query) => pageOn(query, source, q), true),
  };
}

// ---- the store ----------------------------------------------------------------------------------------------------

/** A FIFO lock held across awaits. */
function createQueue() {
  let tail: Promise<void> = Promise.resolve();
  return {
    async acquire(): Promise<() => void> {
      const previous = tail;
      let release!: () => void;
      tail = new Promise<void>((resolve) => (release = resolve));
      await previous;
      return release;
    },
  };
}

/** At most `limit` holders at once, the others waiting in FIFO order. */
function createSemaphore(limit: number) {
  let held = 0;
  const waiting: Array<() => void> = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else held -= 1;
  };
  return {
    async acquire(): Promise<() => void> {
      if (held < limit) held += 1;
      else await new Promise<void>((resolve) => waiting.push(resolve));
      let released = false;
      return () => {
        if (released) return;
        released = true;
        release();
      };
    },
  };
}

function rateLimitedWarning(): (message: string) => void {
  let last = 0;
  let suppressed = 0;
  return (message) => {
    const now = Date.now();
    if (now - last < 10_000) {
      suppressed++;
      return;
    }
    console.warn(`portcullis: ${message}${suppressed > 0 ? ` (${suppressed} similar suppressed)` : ''}`);
    last = now;
    suppressed = 0;
  };
}

/**
 * Opens the store: checks the URL, connects once (credentials, database, server version 14+), and resolves with
 * the store; rejects with a one-line Error naming host, port, database and user (never the password), leaving no
 * connection open. Migrations are separate (migrate-postgres.ts).
 */
export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
  const location = parsePostgresUrl(url);
  const connectTimeoutMs = options.connectTimeoutMs ?? location.connectTimeoutMs ?? 2500;
  const statementTimeoutMs = options.statementTimeoutMs ?? 10_000;
  const report = options.onError ?? rateLimitedWarning();
  const clean = (message: string) => scrub(message, location.password);

  // Connecting gives up after connectTimeoutMs; waiting for a free pooled connection, after a statement's time.
  class TimedClient extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      // The pool keeps the password as a hidden property, which a spread would drop.
      const own: pg.ClientConfig = { ...config, connectionTimeoutMillis: connectTimeoutMs };
      Object.defineProperty(own, 'password', { value: config?.password, enumerable: false });
      super(own);
    }
  }
  const poolConfig: pg.PoolConfig = {
    ...location.config,
    Client: TimedClient,
    application_name: options.applicationName ?? location.config.application_name ?? 'portcullis',
    max: options.max ?? 10,
    connectionTimeoutMillis: statementTimeoutMs,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    statement_timeout: statementTimeoutMs,
    idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs ?? 30_000,
    query_timeout: statementTimeoutMs + 2000,
    types,
  };
  const pool = new pg.Pool(poolConfig);
  // A pooled connection that fails while idle (server restart, network) is removed by the pool, which then emits
  // 'error': without a listener that would end the process. One taken out of the pool reports on itself.
  pool.on('error', (err) => report(`PostgreSQL connection at ${location.where} lost: ${clean(err.message)}`));
  pool.on('connect', (client) => client.on('error', () => undefined));

  try {
    const client = await pool.connect();
    try {
      const version = Number((await client.query('SHOW server_version_num')).rows[0].server_version_num);
      if (version < 140000) throw new Error(`PostgreSQL 14 or later is required (the server is ${Math.floor(version / 10000)})`);
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end().catch(() => undefined);
    const e = err instanceof AggregateError && err.errors.length > 0 ? (err.errors[0] as Error) : (err as Error);
    const code = (e as NodeJS.ErrnoException).code;
    const reason =
      code === 'ECONNREFUSED'
        ? 'connection refused'
        : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
          ? 'host not found'
          : /timeout/i.test(e.message ?? '')
            ? `no answer within ${connectTimeoutMs} ms`
            : e.message || String(code ?? 'failed');
    throw new Error(`cannot connect to PostgreSQL at ${location.where}: ${clean(reason)}`);
  }

  let closed = false;
  /** Connections that served a call before: one may have died unseen while idle in the pool. */
  const used = new WeakSet<pg.PoolClient>();
  /** Bumped each time a connection could not be opened (the server is unreachable). */
  let outages = 0;

  /**
   * The connections of quiet runtime statements (`runRuntime`), opened at the first: their commits do not wait for
   * the server's WAL flush (`synchronous_commit = off`). Such rows are runtime state that no answer to a client
   * promises: after a server crash the last moments of them may be missing, and the process that owns them
   * rewrites nothing it needs. Every other write still waits for the flush.
   */
  let quietPool: pg.Pool | undefined;
  function quietConnections(): pg.Pool {
    if (quietPool === undefined) {
      const options = [location.config.options, '-c synchronous_commit=off'].filter(Boolean).join(' ');
      quietPool = new pg.Pool({ ...poolConfig, max: RUNTIME_WRITES, options });
      quietPool.on('error', (err) => report(`PostgreSQL connection at ${location.where} lost: ${clean(err.message)}`));
      quietPool.on('connect', (client) => client.on('error', () => undefined));
    }
    return quietPool;
  }

  async function acquire(from: pg.Pool = pool): Promise<pg.PoolClient> {
    if (closed) throw storageUnavailable('the store is closed');
    try {
      return await from.connect();
    } catch (err) {
      const message = (err as Error).message || 'cannot connect';
      // Every connection busy for a statement's time is load, not an outage.
      if (/timeout exceeded when trying to connect/.test(message)) throw storageUnavailable('no free connection in the pool');
      outages++;
      throw storageUnavailable(clean(message));
    }
  }

  /** Back to the pool, or closed when broken or left inside a transaction. */
  function giveBack(client: pg.PoolClient, broken: boolean): void {
    if (!broken && client.getTransactionStatus() !== 'I') broken = true;
    client.release(broken ? true : undefined);
  }

  /** One call on a pooled connection; a read that fails on a connection gone stale while idle is tried once more. */
  const autocommit: Exec = (work, retryable) => autocommitOn(pool, work, retryable);
  async function autocommitOn<R>(from: pg.Pool, work: (query: Query) => Promise<R>, retryable: boolean): Promise<R> {
    for (let attempt = 0; ; attempt++) {
      const client = await acquire(from);
      const reused = used.has(client);
      used.add(client);
      try {
        const result = await work(queryOn(client));
        giveBack(client, false);
        return result;
      } catch (err) {
        const broken = isConnectionBroken(err);
        giveBack(client, broken);
        if (broken && reused && retryable && attempt === 0 && !closed) continue;
        throw storeError(err);
      }
    }
  }

  /** A connection inside a transaction: calls run one after another, the first failure is kept. */
  async function openTransaction(begin: string, readOnly: boolean) {
    let client!: pg.PoolClient;
    for (let attempt = 0; ; attempt++) {
      client = await acquire();
      const reused = used.has(client);
      used.add(client);
      try {
        await client.query(begin);
        break;
      } catch (err) {
        const broken = isConnectionBroken(err);
        if (!broken) await client.query('ROLLBACK').catch(() => undefined);
        giveBack(client, broken);
        if (broken && reused && attempt === 0 && !closed) continue;
        throw storeError(err, readOnly);
      }
    }
    const query = queryOn(client);
    let tail: Promise<unknown> = Promise.resolve();
    let ended = false;
    let broken = false;
    let failure: unknown;

    function serial<R>(step: () => Promise<R>): Promise<R> {
      const run = tail.then(step);
      tail = run.catch(() => undefined);
      return run;
    }

    const exec: Exec = (work) => {
      if (ended) return Promise.reject(new Error('store transaction used after it ended'));
      return serial(async () => {
        try {
          return await work(query);
        } catch (err) {
          failure ??= err;
          if (isConnectionBroken(err)) broken = true;
          throw storeError(err, readOnly);
        }
      });
    };

    return {
      sql: sqlOn(exec, !readOnly),
      /** Commits; throws (after rolling back) when a statement failed inside, even if the work went on. */
      async commit(): Promise<void> {
        ended = true;
        await serial(async () => {
          if (failure !== undefined || client.getTransactionStatus() === 'E') {
            // The server went away or gave up under the transaction (a statement whose failure the caller set aside,
            // such as the commit notice): nothing is committed, the request may be retried: 503, not a bug's 500.
            if (failure !== undefined && isUnavailable(failure, readOnly)) throw storeError(failure, readOnly);
            const reason = failure instanceof Error ? failure.message : 'a statement failed';
            throw new Error(`the transaction was rolled back: a statement in it failed (${reason})`, { cause: failure });
          }
          let done: pg.QueryResult;
          try {
            done = await client.query('COMMIT');
          } catch (err) {
            if (isConnectionBroken(err)) broken = true;
            throw storeError(err, readOnly);
          }
          if (done.command === 'ROLLBACK') throw new Error('the transaction was rolled back by the server');
        });
      },
      /** Ends the transaction (ROLLBACK unless committed) and gives the connection back. */
      async end(): Promise<void> {
        ended = true;
        await serial(async () => {
          if (!broken && client.getTransactionStatus() !== 'I') {
            try {
              await client.query('ROLLBACK');
            } catch {
              broken = true;
            }
          }
        });
        giveBack(client, broken);
      },
    };
  }

  const readSql = sqlOn(autocommit, false);
  const writes = createQueue();

  /**
   * The commit mark: moves at every commit of any process on this database, as this process learns of it (its own
   * at once, others' by LISTEN/NOTIFY, which PostgreSQL delivers on commit, in commit order, to every listening
   * session). While the listening connection is down (and once when it is back) the mark moves every `markPollMs`:
   * values are then checked against the store that often, the polling fallback.
   */
  let mark = 0;
  const feed = createFeedListeners();
  let listener: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  const markPollMs = options.markPollMs ?? 1000;
  let listening = false;
  let probing = false;
  let ticks = 0;
  const poll = setInterval(() => {
    if (!listening) {
      mark += 1;
      return;
    }
    // While listening, notices are exact; the connection is asked now and then whether it still lives (a half-open
    // TCP connection delivers nothing and reports nothing).
    ticks += 1;
    if (ticks % 10 !== 0 || probing || !listener) return;
    const client = listener;
    probing = true;
    void client
      .query('SELECT 1')
      .catch(() => client.emit('error', new Error('the listening connection stopped answering')))
      .finally(() => (probing = false));
  }, markPollMs);
  poll.unref();

  function listen(): void {
    if (closed) return;
    const client = new TimedClient({ ...location.config, application_name: `${options.applicationName ?? 'portcullis'}-listen`, keepAlive: true, types } as pg.ClientConfig);
    const lost = () => {
      if (listener !== client) return;
      listener = undefined;
      listening = false;
      mark += 1;
      client.end().catch(() => undefined);
      if (!closed) {
        retry = setTimeout(listen, markPollMs);
        retry.unref();
      }
    };
    listener = client;
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (notice) => {
      mark += 1;
      if (notice.channel === FEED_CHANNEL) feed.notify();
    });
    client
      .connect()
      .then(() => client.query(`LISTEN ${COMMIT_CHANNEL}; LISTEN ${FEED_CHANNEL}`))
      .then(() => {
        // Commits made while nobody listened are caught by the values checking again now.
        if (listener === client) listening = true;
        mark += 1;
        feed.notify();
      })
      .catch(lost);
  }
  listen();

  const runtimeWrites = createSemaphore(RUNTIME_WRITES);

  /** A model write: in the queue, under the advisory lock. */
  function write<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return transaction(writes, BEGIN_WRITE, work);
  }

  /** A runtime write (store.ts): beside the model writes, without the advisory lock. */
  function writeRuntime<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return transaction(runtimeWrites, BEGIN_RUNTIME, work);
  }

  /**
   * One runtime statement. On `circuits` (QUIET_TABLES): in autocommit on a quiet connection, one round trip, no
   * commit notice and no move of the mark, since nothing read through the mark depends on that table. Else as
   * `writeRuntime`.
   */
  async function runRuntime(sql: string, params: Params = []): Promise<RunResult> {
    const table = STATEMENT_TABLE.exec(sql)?.[1]?.toLowerCase();
    if (table === undefined || !QUIET_TABLES.has(table)) return writeRuntime((tx) => tx.run(sql, params));
    const release = await runtimeWrites.acquire();
    try {
      // Few texts (one per batch size), run again and again: prepared once per connection.
      return { changes: (await autocommitOn(quietConnections(), (q) => q(sql, params, false, statementName(sql)), false)).rowCount ?? 0 };
    } finally {
      release();
    }
  }

  async function transaction<T>(queue: { acquire(): Promise<() => void> }, begin: string, work: (tx: Tx) => Promise<T>): Promise<T> {
    const seen = outages;
    const release = await queue.acquire();
    const hooks: Array<() => void> = [];
    const rollbacks: Array<() => void> = [];
    let result: T;
    try {
      // A write ahead of this one found the server unreachable while this one waited: fail now, not one
      // connection timeout later per queued write.
      if (outages !== seen) throw storageUnavailable(`${location.where} is unreachable`);
      const t = await openTransaction(begin, false);
      const tx: Tx = { ...t.sql, afterCommit: (fn) => hooks.push(fn), onRollback: (fn) => rollbacks.push(fn) };
      try {
        result = await work(tx);
        // Every listening process (this one included) learns of the commit when it happens.
        // (A transaction a failed statement aborted refuses it too; the commit then reports that first failure.)
        await t.sql.run(`SELECT pg_notify('${COMMIT_CHANNEL}', '')`).catch(() => undefined);
        await t.commit();
        mark += 1;
      } catch (err) {
        await t.end();
        for (const fn of rollbacks) fn();
        throw err;
      }
      await t.end();
    } finally {
      release();
    }
    for (const hook of hooks) hook();
    return result;
  }

  async function snapshot<T>(work: (q: Sql) => Promise<T>): Promise<T> {
    const t = await openTransaction(BEGIN_SNAPSHOT, true);
    try {
      return await work(t.sql);
    } finally {
      await t.end();
    }
  }

  const VERSIONS_SQL = 'SELECT name, version FROM table_versions WHERE name = ANY(?)';

  async function versionsOn(q: Sql, tables: readonly VersionedTable[]): Promise<string> {
    const rows = await q.all<{ name: string; version: number }>(VERSIONS_SQL, [[...tables]]);
    const byName = new Map(rows.map((r) => [r.name, r.version]));
    return tables
      .map((t) => {
        const v = byName.get(t);
        if (v === undefined) throw new Error(`unversioned table among ${tables.join(', ')}`);
        return String(v);
      })
      .join('.');
  }

  /**
   * The counters, read again only when the commit mark moved since the last reading: while no process has
   * committed, asking costs no round trip.
   */
  function versions(tables: readonly VersionedTable[]): () => Promise<string> {
    let last: { mark: number; value: string } | undefined;
    return async () => {
      const at = mark;
      if (last !== undefined && last.mark === at) return last.value;
      const value = await versionsOn(readSql, tables);
      last = { mark: at, value };
      return value;
    };
  }

  function versioned<T>(tables: readonly VersionedTable[], build: (q: Sql) => Promise<T>): (q?: Sql) => Promise<T> {
    interface Built {
      at: string;
      value: T;
      ticket: number;
    }
    let ticket = 0;
    let kept: Built | undefined;
    const version = versions(tables);
    let flight: { ticket: number; promise: Promise<Built> } | undefined;
    return async (q?: Sql) => {
      if (q?.inWrite) {
        // Built from the open transaction's view; its counters may still roll back, so it is not kept.
        return build(q);
      }
      const asked = ++ticket;
      const at = await version();
      if (kept !== undefined && kept.at === at) return kept.value;
      // Join a build only if it started after this call did: it then sees every commit this caller has seen.
      if (flight === undefined || flight.ticket < asked) {
        const mine = ++ticket;
        const promise = snapshot(async (s) => ({ at: await versionsOn(s, tables), value: await build(s), ticket: mine }));
        const current = { ticket: mine, promise };
        flight = current;
        const clear = () => {
          if (flight === current) flight = undefined;
        };
        void promise.then(clear, clear);
      }
      const fresh = await flight.promise;
      if (kept === undefined || fresh.ticket > kept.ticket) kept = fresh;
      return fresh.value;
    };
  }

  return {
    kind: 'postgres',
    pool,
    location: location.where,
    ...readSql,
    write,
    writeRuntime,
    runRuntime,
    snapshot,
    versions,
    versioned,
    foreignKeys: () => foreignKeysOn(readSql),
    columns: (table) => columnsOn(readSql, table),
    // PostgreSQL has no equivalent of SQLite's integrity_check a client can run: its storage is the server's (WAL
    // replay after a crash, page checksums where the cluster enables them, amcheck as an extension an operator
    // installs), so nothing is reported here.
    integrityCheck: () => Promise.resolve([]),
    commitMark: () => mark,
    onFeedChange: feed.add,
    markStale: () => {
      mark += 1;
    },
    durable: () => undefined,
    async session(name) {
      const client = new TimedClient({
        ...location.config,
        application_name: `${options.applicationName ?? 'portcullis'}-${name}`,
        keepAlive: true,
        keepAliveInitialDelayMillis: 5000,
        types,
      } as pg.ClientConfig);
      client.on('error', () => undefined);
      try {
        await client.connect();
      } catch (err) {
        await client.end().catch(() => undefined);
        throw new Error(`cannot connect to PostgreSQL at ${location.where}: ${clean((err as Error).message)}`);
      }
      return client;
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(poll);
      if (retry) clearTimeout(retry);
      await listener?.end().catch(() => undefined);
      await quietPool?.end().catch(() => undefined);
      await pool.end();
    },
  };
}

export { isUnavailable };
