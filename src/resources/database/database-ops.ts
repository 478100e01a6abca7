/**
 * Database operations (model.md §8.1, §8.2): background data-integrity runs (check, or fix after a snapshot,
 * one run at a time per process, results kept in memory) and online snapshots next to the database file
 * (at most one per minute).
 */
import { existsSync } from 'node:fs';
import type { Db } from '../../store/database.ts';
import { withTransaction } from '../../store/transaction.ts';
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
  db: Db;
  access: AccessService;
  clock?: Clock;
}

export function createDatabaseOps({ db, access, clock = systemClock }: DatabaseOpsOptions) {
  let state: IntegrityState = {
    inProgress: false,
    fixingErrors: false,
    tooManyErrors: false,
    startTime: null,
    endTime: null,
    error: null,
    results: null,
  };
  let lastSnapshotAt: number | undefined;
  let running: Promise<void> | undefined;

  /** A consistent copy of the whole database (SQLite online backup), written next to the database file. */
  async function writeSnapshot(): Promise<string> {
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
        step.run({ db, access, clock, report });
        await yieldToEventLoop();
      }
      return;
    }
    await writeSnapshot();
    await yieldToEventLoop();
    // Every repair in one write transaction: all of them land, or (on an error) none.
    withTransaction(db, (tx) => {
      const ctx: ScanContext = { db, tx, access, clock, report };
      for (const step of scanSteps) step.run(ctx);
    });
  }

  /** Starts a background run; a second start while one runs is refused with 429 RATE_LIMITED. */
  function startIntegrityRun(fix: boolean): void {
    if (state.inProgress) throw new ApiError('RATE_LIMITED');
    const run: IntegrityState = {
      inProgress: true,
      fixingErrors: fix,
      tooManyErrors: false,
      startTime: localIsoTime(clock.now()),
      endTime: null,
      error: null,
      results: [],
    };
    state = run;
    running = scan(fix, run)
      .catch((err: unknown) => {
        run.error = err instanceof Error ? err.message : String(err);
      })
      .finally(() => {
        run.endTime = localIsoTime(clock.now());
        run.inProgress = false;
        running = undefined;
      });
  }

  function integrityResults(): IntegrityState {
    return { ...state, results: state.results ? [...state.results] : null };
  }

  async function snapshot(): Promise<string> {
    const now = clock.now().getTime();
    if (lastSnapshotAt !== undefined && now - lastSnapshotAt < SNAPSHOT_INTERVAL_MS) throw new ApiError('RATE_LIMITED');
    const previous = lastSnapshotAt;
    lastSnapshotAt = now;
    try {
      return await writeSnapshot();
    } catch (err) {
      lastSnapshotAt = previous;
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
