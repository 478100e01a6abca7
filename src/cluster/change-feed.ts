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
 * Portability (several controller instances on PostgreSQL later): only plain parameterized SQL here. A
 * sequence there may commit out of order, so a seq missing below the newest one read is remembered as a
 * gap and looked for again until `gapWaitMs` passes (on SQLite writers are serialized and gaps never occur).
 * The optional `probe` is a dialect's cheap "has anyone else committed?" counter (SQLite: data_version);
 * without one every catch-up asks for the newest seq.
 *
 * Trimming: rows older than `retentionMs` are deleted and the highest deleted seq is recorded in
 * `change_feed_trim`; a reader whose position is below it has missed rows and rebuilds from the store.
 */
import { randomBytes } from 'node:crypto';
import type { Db } from '../store/database.ts';
import { prepare } from '../store/entity-table.ts';
import { withTransaction, type Tx } from '../store/transaction.ts';

export type FeedOp = 'set' | 'remove' | 'reload';

/** Kind of the `reload everything` row. */
export const RELOAD_ALL = 'all';

export interface FeedEntry {
  seq: number;
  kind: string;
  entityId: string;
  op: FeedOp;
  origin: string;
}

export interface FeedSubscriber {
  /** Rows written by other processes, in seq order, to apply to in-memory state. */
  apply(entries: readonly FeedEntry[]): void;
  /** Rebuild everything from the store (the reader fell behind a trim). Must call `feed.loaded(head)`. */
  reload(): void;
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

export function createChangeFeed(db: Db, options: ChangeFeedOptions = {}) {
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

  function append(tx: Tx, kind: string, entityId: string, op: FeedOp): void {
    prepare(tx.db, 'INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES (?, ?, ?, ?, ?)').run(
      kind,
      entityId,
      op,
      origin,
      new Date(now()).toISOString(),
    );
  }

  function trimmedThrough(): number {
    return (prepare(db, 'SELECT trimmed_through FROM change_feed_trim WHERE id = 1').get() as { trimmed_through: number } | undefined)?.trimmed_through ?? 0;
  }

  /** The newest seq ever written (the trim mark when every row has been trimmed). */
  function head(): number {
    const row = prepare(db, 'SELECT MAX(seq) AS seq FROM change_feed').get() as { seq: number | null };
    return Math.max(row.seq ?? 0, trimmedThrough());
  }

  function expireGaps(): void {
    const cutoff = now() - gapWaitMs;
    for (const [seq, since] of gaps) if (since <= cutoff) gaps.delete(seq);
  }

  /**
   * The subscriber rebuilt its state from the store after reading `at = head()`: continue from there. Seqs
   * just below it that are not (yet) in the table are remembered as gaps.
   */
  function loaded(at: number): void {
    gaps.clear();
    const from = Math.max(at - LOAD_GAP_SCAN, trimmedThrough());
    const seen = new Set(
      (prepare(db, 'SELECT seq FROM change_feed WHERE seq > ? AND seq <= ?').all(from, at) as Array<{ seq: number }>).map((r) => r.seq),
    );
    const t = now();
    for (let seq = from + 1; seq <= at; seq++) if (!seen.has(seq)) gaps.set(seq, t);
    position = at;
  }

  function read(): Row[] {
    const missing = [...gaps.keys()];
    if (missing.length === 0) {
      return prepare(db, 'SELECT seq, kind, entity_id, op, origin FROM change_feed WHERE seq > ? ORDER BY seq').all(position) as Row[];
    }
    const marks = missing.map(() => '?').join(', ');
    return db.prepare(`SELECT seq, kind, entity_id, op, origin FROM change_feed WHERE seq > ? OR seq IN (${marks}) ORDER BY seq`).all(position, ...missing) as Row[];
  }

  /** Applies what other processes wrote since the last call. Returns whether anything was read. */
  function catchUp(): boolean {
    if (!subscriber) return false;
    if (options.probe && gaps.size === 0) {
      const mark = options.probe();
      if (mark === lastProbe) return false;
      lastProbe = mark;
    }
    return run(() => {
      if (position < trimmedThrough()) {
        subscriber!.reload();
        return true;
      }
      const rows = read();
      if (rows.length === 0) {
        expireGaps();
        return false;
      }
      const foreign: FeedEntry[] = [];
      for (const r of rows) if (r.origin !== origin) foreign.push({ seq: r.seq, kind: r.kind, entityId: r.entity_id, op: r.op, origin: r.origin });
      if (foreign.length > 0) subscriber!.apply(foreign);
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

  /** Runs `fn` in one read transaction (a consistent view), or inside the caller's transaction. */
  function run<T>(fn: () => T): T {
    if (db.inTransaction) return fn();
    return db.transaction(fn).deferred();
  }

  /** Deletes rows older than the retention. Returns how many. */
  function trim(): number {
    const cutoff = new Date(now() - retentionMs).toISOString();
    return withTransaction(db, (tx) => {
      const bound = (prepare(tx.db, 'SELECT MAX(seq) AS seq FROM change_feed WHERE created_at < ?').get(cutoff) as { seq: number | null }).seq;
      if (bound === null) return 0;
      prepare(tx.db, 'UPDATE change_feed_trim SET trimmed_through = ? WHERE id = 1 AND trimmed_through < ?').run(bound, bound);
      return prepare(tx.db, 'DELETE FROM change_feed WHERE seq <= ?').run(bound).changes;
    });
  }

  function start(): void {
    timer ??= setInterval(() => {
      try {
        if (db.open) trim();
      } catch {
        // A busy store: the next tick trims.
      }
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
