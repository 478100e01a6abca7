/**
 * The change feed (table `change_feed`, migration 0017): how several processes sharing one store keep their
 * in-memory state (the access index) consistent with it and with each other.
 *
 * Writing: every write that changes such state appends rows in its own transaction: `(kind, entityId, op)`,
 * "what to reload", never the data. The row commits or rolls back with the write.
 *
 * Reading: each process keeps a position (the highest seq it has applied). `catchUp()` (run before every
 * request and at the start of every write transaction) reads the rows above the position, hands the rows
 * written by other processes to the subscriber in seq order, and advances. A read made after another
 * process's write was acknowledged therefore sees that write (read-your-writes across processes).
 *
 * Model rows and runtime rows: the rows read here are those of model writes, which every store serializes
 * (SQLite's one writer; on PostgreSQL a transaction-scoped advisory lock taken before the first row), so they
 * commit in seq order. Runtime writes (`Store.writeRuntime`: circuits, router connections) add rows of the kinds in
 * RUNTIME_FEED_KINDS beside them, without that lock; on PostgreSQL such a row may commit before a model row with a
 * lower seq, so a reader that took the newest seq of all rows as its position could pass over a model row still
 * to commit. Every reader therefore reads model rows only (MODEL_ROWS, index `change_feed_model`) and takes its
 * position from them (`modelHead`). Runtime rows stay in the table for whoever lists the network's events.
 *
 * Gaps: a model seq missing below the newest one read (a sequence value a rolled-back write used) is remembered
 * and looked for again until `gapWaitMs` passes; the controller waits for none, since model rows commit in order.
 * The optional `probe` is a dialect's cheap "has anyone else committed?" counter (SQLite: data_version);
 * without one every catch-up asks for the newest seq.
 *
 * Trimming: rows older than `retentionMs` are deleted and the highest deleted seq is recorded in
 * `change_feed_trim`; a reader whose position is below it has missed rows and rebuilds from the store.
 */
import { randomBytes } from 'node:crypto';
import type { Sql, Store, Tx } from '../store/store.ts';

export type FeedOp = 'set' | 'remove' | 'reload';

/** Kind of the `reload everything` row. */
export const RELOAD_ALL = 'all';

/** Kinds of the rows runtime writes add (store triggers on `circuits` and `router_connections`). */
export const RUNTIME_FEED_KINDS = ['circuit', 'routerConnection'] as const;

/** SQL condition selecting model rows; the partial index `change_feed_model` (migration 0035) covers it. */
export const MODEL_ROWS = `kind NOT IN (${RUNTIME_FEED_KINDS.map((k) => `'${k}'`).join(', ')})`;

/** The newest model row's seq (0 when there is none). */
export async function modelHead(q: Sql): Promise<number> {
  return (await q.value<number | null>(`SELECT MAX(seq) AS seq FROM change_feed WHERE ${MODEL_ROWS}`)) ?? 0;
}

export interface FeedEntry {
  seq: number;
  kind: string;
  entityId: string;
  op: FeedOp;
  origin: string;
}

export interface FeedSubscriber {
  /** Rows written by other processes, in seq order, to apply to in-memory state (`q` reads the same view). */
  apply(entries: readonly FeedEntry[], q: Sql): Promise<void> | void;
  /** Rebuild everything from the store (the reader fell behind a trim). Must call `feed.loaded(head)`. */
  reload(q: Sql): Promise<void> | void;
}

export interface ChangeFeedOptions {
  /** This process's name in `origin`; random by default. */
  origin?: string;
  now?: () => number;
  /** Rows older than this are trimmed (default 10 minutes). */
  retentionMs?: number;
  /** How long a missing seq is looked for (default 60 s). */
  gapWaitMs?: number;
  /** How often `start()` trims (default 60 s). */
  trimIntervalMs?: number;
  /** Whether this process trims (the network's leader); default: always. */
  leads?: () => boolean;
  /** Cheap counter that changes when another connection commits; unchanged means nothing to read. */
  probe?: () => unknown;
}

interface Row {
  seq: number;
  kind: string;
  entity_id: string;
  op: FeedOp;
  origin: string;
}

/** How far below the head a full load looks for seqs not yet committed (PostgreSQL). */
const LOAD_GAP_SCAN = 256;

export function newOrigin(): string {
  return `${process.pid}-${randomBytes(6).toString('hex')}`;
}

export function createChangeFeed(store: Store, options: ChangeFeedOptions = {}) {
  const origin = options.origin ?? newOrigin();
  const now = options.now ?? Date.now;
  const retentionMs = options.retentionMs ?? 10 * 60_000;
  const gapWaitMs = options.gapWaitMs ?? 60_000;
  let subscriber: FeedSubscriber | undefined;
  /** Highest seq applied (or skipped as our own); -1 before the first load. */
  let position = -1;
  /** Missing seqs below `position` → when first missed. */
  const gaps = new Map<number, number>();
  let lastProbe: unknown = Symbol('never');
  let timer: NodeJS.Timeout | undefined;

  async function append(tx: Tx, kind: string, entityId: string, op: FeedOp): Promise<void> {
    await tx.run('INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES (?, ?, ?, ?, ?)', [
      kind,
      entityId,
      op,
      origin,
      new Date(now()).toISOString(),
    ]);
  }

  async function trimmedThrough(q: Sql): Promise<number> {
    return (await q.value<number>('SELECT trimmed_through FROM change_feed_trim WHERE id = 1')) ?? 0;
  }

  /** The newest model seq (the trim mark when it is higher: every such row has been trimmed). */
  async function head(q: Sql = store): Promise<number> {
    return Math.max(await modelHead(q), await trimmedThrough(q));
  }

  function expireGaps(): void {
    const cutoff = now() - gapWaitMs;
    for (const [seq, since] of gaps) if (since <= cutoff) gaps.delete(seq);
  }

  /**
   * The subscriber rebuilt its state from the store after reading `at = head()`: continue from there. Seqs
   * just below it that are not (yet) in the table are remembered as gaps.
   */
  async function loaded(at: number, q: Sql = store): Promise<void> {
    gaps.clear();
    const from = Math.max(at - LOAD_GAP_SCAN, await trimmedThrough(q));
    const seen = new Set(await q.column<number>(`SELECT seq FROM change_feed WHERE seq > ? AND seq <= ? AND ${MODEL_ROWS}`, [from, at]));
    const t = now();
    for (let seq = from + 1; seq <= at; seq++) if (!seen.has(seq)) gaps.set(seq, t);
    position = at;
  }

  function read(q: Sql): Promise<Row[]> {
    const missing = [...gaps.keys()];
    if (missing.length === 0) {
      return q.all<Row>(`SELECT seq, kind, entity_id, op, origin FROM change_feed WHERE seq > ? AND ${MODEL_ROWS} ORDER BY seq`, [position]);
    }
    const marks = missing.map(() => '?').join(', ');
    return q.all<Row>(`SELECT seq, kind, entity_id, op, origin FROM change_feed WHERE (seq > ? OR seq IN (${marks})) AND ${MODEL_ROWS} ORDER BY seq`, [
      position,
      ...missing,
    ]);
  }

  /** Catch-ups run one at a time, in call order. */
  let lock: Promise<unknown> = Promise.resolve();
  /** A catch-up queued and not started yet: it covers every commit made before it starts. */
  let pending: Promise<boolean> | undefined;

  /** Catch-ups queued or running. */
  let busy = 0;

  function exclusive<T>(fn: () => Promise<T>): Promise<T> {
    busy += 1;
    const next = lock.then(fn, fn).finally(() => (busy -= 1));
    lock = next.catch(() => undefined);
    return next;
  }

  /**
   * Applies what other processes wrote since the last call. Returns whether anything was read. One catch-up runs
   * at a time; a call joins one that is queued and not started yet, else queues a new one, so it always sees every
   * commit made before the call. Inside a write transaction (`q` a Tx) it reads through that transaction.
   */
  function catchUp(q?: Sql): Promise<boolean> | false {
    if (!subscriber) return false;
    if (q?.inWrite) return exclusive(() => catchUpOnce(q));
    // Nothing committed anywhere since the last look, and no catch-up under way: answered without a promise (the
    // per-request path on the embedded store).
    if (pending === undefined && !busy && options.probe && gaps.size === 0 && options.probe() === lastProbe) return false;
    pending ??= exclusive(() => {
      pending = undefined;
      return catchUpOnce();
    });
    return pending;
  }

  async function catchUpOnce(tx?: Sql): Promise<boolean> {
    if (options.probe && gaps.size === 0 && !tx) {
      const mark = options.probe();
      if (mark === lastProbe) return false;
      lastProbe = mark;
    }
    return run(tx, async (q) => {
      if (position < (await trimmedThrough(q))) {
        await subscriber!.reload(q);
        return true;
      }
      const rows = await read(q);
      if (rows.length === 0) {
        expireGaps();
        return false;
      }
      const foreign: FeedEntry[] = [];
      for (const r of rows) if (r.origin !== origin) foreign.push({ seq: r.seq, kind: r.kind, entityId: r.entity_id, op: r.op, origin: r.origin });
      if (foreign.length > 0) await subscriber!.apply(foreign, q);
      const t = now();
      let expected = position + 1;
      for (const r of rows) {
        gaps.delete(r.seq);
        if (r.seq < expected) continue;
        for (let seq = expected; seq < r.seq; seq++) gaps.set(seq, t);
        expected = r.seq + 1;
      }
      position = Math.max(position, expected - 1);
      expireGaps();
      return true;
    });
  }

  /** Runs `fn` in one consistent view: the caller's transaction, or a read snapshot. */
  function run<T>(tx: Sql | undefined, fn: (q: Sql) => Promise<T>): Promise<T> {
    return tx ? fn(tx) : store.snapshot(fn);
  }

  /** Deletes rows older than the retention. Returns how many. */
  function trim(): Promise<number> {
    const cutoff = new Date(now() - retentionMs).toISOString();
    return store.write(async (tx) => {
      const bound = await tx.value<number | null>('SELECT MAX(seq) AS seq FROM change_feed WHERE created_at < ?', [cutoff]);
      if (bound === null || bound === undefined) return 0;
      await tx.run('UPDATE change_feed_trim SET trimmed_through = ? WHERE id = 1 AND trimmed_through < ?', [bound, bound]);
      return (await tx.run('DELETE FROM change_feed WHERE seq <= ?', [bound])).changes;
    });
  }

  let trimming = false;
  function start(): void {
    timer ??= setInterval(() => {
      if (trimming || options.leads?.() === false) return;
      trimming = true;
      // A busy or closed store: the next tick trims.
      void trim()
        .catch(() => 0)
        .finally(() => (trimming = false));
    }, options.trimIntervalMs ?? 60_000);
    timer.unref();
  }

  function stop(): void {
    if (timer) clearInterval(timer);
    timer = undefined;
  }

  return {
    origin,
    append,
    head,
    loaded,
    catchUp,
    trim,
    start,
    stop,
    subscribe(s: FeedSubscriber): void {
      subscriber = s;
    },
    /** For tests and diagnostics. */
    state(): { position: number; gaps: number[] } {
      return { position, gaps: [...gaps.keys()].sort((a, b) => a - b) };
    },
  };
}

export type ChangeFeed = ReturnType<typeof createChangeFeed>;
