/**
 * Database operations (model.md §8.1, §8.2): background data-integrity runs (check, or fix after a snapshot,
 * one run at a time) and online snapshots next to the database file (at most one per minute). Snapshots are of the
 * embedded SQLite store only: on PostgreSQL a snapshot is refused (409 SNAPSHOT_NOT_SUPPORTED) and a fix runs
 * without one.
 *
 * Several worker processes share one store, so the rules and the results live in it (`database_ops_state`,
 * migration 0017): a run is claimed with one conditional UPDATE, its results are written when it ends and
 * any worker answers the results; the snapshot time is claimed the same way. The state is reset when the
 * controller starts (results last for one controller lifetime, as upstream's in-memory ones), and a run
 * whose process died is ended with an error (`abandonIntegrityRun`).
 */
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { Store } from '../../store/store.ts';
import type { SqliteStore } from '../../store/sqlite-store.ts';
import type { AccessService } from '../../access/access.service.ts';
import { ApiError } from '../../errors.ts';
import { systemClock, type Clock } from '../entity-service.ts';
import { scanSteps, type ScanContext } from './data-integrity.ts';

/** Results beyond this many are dropped and `tooManyErrors` is set, as upstream. */
export const MAX_INTEGRITY_RESULTS = 1000;
const SNAPSHOT_INTERVAL_MS = 60_000;

export interface IntegrityResult {
  description: string;
  fixed: boolean;
}

export interface IntegrityState {
  inProgress: boolean;
  fixingErrors: boolean;
  tooManyErrors: boolean;
  startTime: string | null;
  endTime: string | null;
  error: string | null;
  results: IntegrityResult[] | null;
}

/**
 * Test seam: when set, a run awaits it after it has been marked in progress and before its first step, so a
 * test can observe a run in progress deterministically. Never set by the product.
 */
export const integrityRunHooks: { beforeScan?: () => Promise<void> } = {};

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** RFC 3339 in the controller's local offset (upstream keeps these times in local time), `Z` when it is UTC. */
export function localIsoTime(d: Date): string {
  const offset = -d.getTimezoneOffset();
  const zone = offset === 0 ? 'Z' : `${offset > 0 ? '+' : '-'}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}` +
    `.${pad(d.getMilliseconds(), 3)}${zone}`
  );
}

/** `<db file>-YYYYMMDD-HHMMSS` in local time; a numeric suffix keeps two snapshots of one second apart. */
export function snapshotPath(dbFile: string, d: Date): string {
  const base = `${dbFile}-${d.getFullYear()}${pad(d.getMonth() + 1)}${pad(d.getDate())}-${pad(d.getHours())}${pad(d.getMinutes())}${pad(d.getSeconds())}`;
  let path = base;
  for (let n = 1; existsSync(path); n++) path = `${base}-${n}`;
  return path;
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface DatabaseOpsOptions {
  store: Store;
  access: AccessService;
  clock?: Clock;
  /** This process's name as the owner of a run (unique per process). */
  owner?: string;
}

/** Forgets every run and the snapshot time (controller start, before any worker serves). */
export async function resetDatabaseOps(store: Store): Promise<void> {
  await store.write(async (tx) => {
    await tx.run(
      `UPDATE database_ops_state SET run_owner = NULL, in_progress = 0, fixing_errors = 0, too_many_errors = 0, start_time = NULL,
         end_time = NULL, error = NULL, results = NULL, last_snapshot_at = NULL WHERE id = 1`,
    );
  });
}

/** Ends the run of a process that died while running it. */
export async function abandonIntegrityRun(store: Store, owner: string, clock: Clock = systemClock): Promise<void> {
  const endTime = localIsoTime(clock.now());
  await store.write(async (tx) => {
    await tx.run('UPDATE database_ops_state SET in_progress = 0, end_time = ?, error = ? WHERE id = 1 AND in_progress = 1 AND run_owner = ?', [
      endTime,
      'the process running the integrity check stopped before it ended',
      owner,
    ]);
  });
}

interface StateRow {
  in_progress: number;
  fixing_errors: number;
  too_many_errors: number;
  start_time: string | null;
  end_time: string | null;
  error: string | null;
  results: string | null;
}

export function createDatabaseOps({ store, access, clock = systemClock, owner = `${process.pid}-${randomBytes(6).toString('hex')}` }: DatabaseOpsOptions) {
  let running: Promise<void> | undefined;

  /** A consistent copy of the whole database (SQLite online backup), written next to the database file. */
  async function writeSnapshot(): Promise<string> {
    // The embedded store's file only: a PostgreSQL store is backed up with PostgreSQL's own tools.
    if (store.kind !== 'sqlite') throw new ApiError('SNAPSHOT_NOT_SUPPORTED');
    const db = (store as SqliteStore).db;
    const path = snapshotPath(db.name, clock.now());
    await db.backup(path);
    return path;
  }

  async function scan(fix: boolean, run: IntegrityState): Promise<void> {
    const results = run.results!;
    const report = (description: string, fixable: boolean) => {
      if (results.length >= MAX_INTEGRITY_RESULTS) {
        run.tooManyErrors = true;
        return;
      }
      results.push({ description, fixed: fix && fixable });
    };
    if (integrityRunHooks.beforeScan) await integrityRunHooks.beforeScan();
    if (!fix) {
      for (const step of scanSteps) {
        // Each step reads one committed state, as it did when steps ran synchronously.
        await store.snapshot((q) => step.run({ store, q, access, clock, report }));
        await yieldToEventLoop();
      }
      return;
    }
    // The embedded store keeps the state before any repair in a snapshot next to its file. A PostgreSQL store has
    // no file to copy (its backups are PostgreSQL's own tools, SNAPSHOT_NOT_SUPPORTED): the fix runs without one.
    if (store.kind === 'sqlite') {
      await writeSnapshot();
      await yieldToEventLoop();
    }
    // Every repair in one write transaction: all of them land, or (on an error) none.
    await store.write(async (tx) => {
      const ctx: ScanContext = { store, q: tx, tx, access, clock, report };
      for (const step of scanSteps) await step.run(ctx);
    });
  }

  /**
   * Starts a background run; a second start while one runs (in any worker) is refused with 429 RATE_LIMITED.
   * Resolves once the run is claimed (the run itself goes on in the background; `idle` waits for it).
   */
  async function startIntegrityRun(fix: boolean): Promise<void> {
    const run: IntegrityState = {
      inProgress: true,
      fixingErrors: fix,
      tooManyErrors: false,
      startTime: localIsoTime(clock.now()),
      endTime: null,
      error: null,
      results: [],
    };
    const claimed = await store.write((tx) =>
      tx.run(
        `UPDATE database_ops_state SET run_owner = ?, in_progress = 1, fixing_errors = ?, too_many_errors = 0, start_time = ?,
           end_time = NULL, error = NULL, results = '[]' WHERE id = 1 AND in_progress = 0`,
        [owner, fix ? 1 : 0, run.startTime],
      ),
    );
    if (claimed.changes === 0) throw new ApiError('RATE_LIMITED');
    const finished = scan(fix, run)
      .catch((err: unknown) => {
        run.error = err instanceof Error ? err.message : String(err);
      })
      .then(async () => {
        run.endTime = localIsoTime(clock.now());
        run.inProgress = false;
        await store.write(async (tx) => {
          await tx.run(
            `UPDATE database_ops_state SET in_progress = 0, too_many_errors = ?, end_time = ?, error = ?, results = ?
               WHERE id = 1 AND run_owner = ? AND start_time = ?`,
            [run.tooManyErrors ? 1 : 0, run.endTime, run.error, JSON.stringify(run.results), owner, run.startTime],
          );
        });
      })
      .finally(() => {
        if (running === finished) running = undefined;
      });
    running = finished;
  }

  async function integrityResults(): Promise<IntegrityState> {
    const row = (await store.get<StateRow>('SELECT * FROM database_ops_state WHERE id = 1'))!;
    return {
      inProgress: row.in_progress === 1,
      fixingErrors: row.fixing_errors === 1,
      tooManyErrors: row.too_many_errors === 1,
      startTime: row.start_time,
      endTime: row.end_time,
      error: row.error,
      // No finding is null, before, during and after a run, as upstream renders its empty list.
      results: row.results === null || row.results === '[]' ? null : (JSON.parse(row.results) as IntegrityResult[]),
    };
  }

  async function snapshot(): Promise<string> {
    const now = clock.now();
    const at = now.toISOString();
    // The previous time is read and the new one claimed in one transaction, so a failed snapshot gives back the right one.
    const previous = await store.write(async (tx) => {
      const before = (await tx.get<{ last_snapshot_at: string | null }>('SELECT last_snapshot_at FROM database_ops_state WHERE id = 1'))!.last_snapshot_at;
      const claimed = await tx.run(
        'UPDATE database_ops_state SET last_snapshot_at = ? WHERE id = 1 AND (last_snapshot_at IS NULL OR last_snapshot_at <= ?)',
        [at, new Date(now.getTime() - SNAPSHOT_INTERVAL_MS).toISOString()],
      );
      if (claimed.changes === 0) throw new ApiError('RATE_LIMITED');
      return before;
    });
    try {
      return await writeSnapshot();
    } catch (err) {
      await store.write((tx) => tx.run('UPDATE database_ops_state SET last_snapshot_at = ? WHERE id = 1 AND last_snapshot_at = ?', [previous, at]));
      throw err;
    }
  }

  /** Resolves once the current run (if any) has ended; used when stopping the controller. */
  async function idle(): Promise<void> {
    await running;
  }

  return { startIntegrityRun, integrityResults, snapshot, idle };
}

export type DatabaseOps = ReturnType<typeof createDatabaseOps>;
