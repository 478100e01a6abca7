/**
 * State several workers must share lives in the store: one integrity run at a time across processes (any
 * worker answers its results), one snapshot per minute across processes, a run of a dead process is ended,
 * and a controller start forgets both. Simulated with two stores (each with its own connections) on one database file.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore, type SqliteStore } from '../../../src/store/sqlite-store.ts';
import { migrate } from '../../../src/store/migrate.ts';
import type { Store } from '../../../src/store/store.ts';
import { createAccessService } from '../../../src/access/access.service.ts';
import { abandonIntegrityRun, createDatabaseOps, integrityRunHooks, resetDatabaseOps } from '../../../src/resources/database/database-ops.ts';
import { bootstrapRecords } from '../../../src/system/bootstrap.ts';
import { ApiError } from '../../../src/errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'portcullis-shared-'));
const file = join(dir, 'portcullis.db');
const opened: Store[] = [];
after(async () => {
  for (const store of opened) await store.close();
  rmSync(dir, { recursive: true, force: true });
});

let now = Date.parse('2026-01-01T00:00:00.000Z');
const clock = { now: () => new Date(now) };

function open(): SqliteStore {
  const store = openSqliteStore(file);
  opened.push(store);
  return store;
}

const first = open();
migrate(first.db);
await bootstrapRecords(first, { username: 'admin', password: 'admin-password' });

async function ops(owner: string) {
  const store = open();
  const access = createAccessService(store, clock);
  await access.load();
  return createDatabaseOps({ store, access, clock, owner });
}

async function rateLimited(attempt: Promise<unknown>): Promise<void> {
  await assert.rejects(attempt, (err: unknown) => err instanceof ApiError && err.code === 'RATE_LIMITED');
}

describe('integrity runs across workers', () => {
  it('one run at a time, results visible from every worker', async () => {
    const a = await ops('worker-a');
    const b = await ops('worker-b');
    assert.equal((await b.integrityResults()).results, null);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    integrityRunHooks.beforeScan = () => gate;
    try {
      await a.startIntegrityRun(false);
      await rateLimited(b.startIntegrityRun(true));
      await rateLimited(a.startIntegrityRun(false));
      const during = await b.integrityResults();
      assert.equal(during.inProgress, true);
      assert.equal(during.fixingErrors, false);
      assert.equal(during.results, null);
    } finally {
      release();
      integrityRunHooks.beforeScan = undefined;
    }
    await a.idle();
    const done = await b.integrityResults();
    assert.equal(done.inProgress, false);
    assert.equal(done.results, null);
    assert.ok(done.endTime);
    await b.startIntegrityRun(false);
    await b.idle();
    assert.equal((await a.integrityResults()).inProgress, false);
  });

  it('a run whose process died is ended with an error, and a start forgets runs', async () => {
    const a = await ops('worker-dead');
    const b = await ops('worker-alive');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    integrityRunHooks.beforeScan = () => gate;
    await a.startIntegrityRun(false);
    integrityRunHooks.beforeScan = undefined;
    await abandonIntegrityRun(first, 'someone-else', clock);
    assert.equal((await b.integrityResults()).inProgress, true, 'only the owner’s run is ended');
    await abandonIntegrityRun(first, 'worker-dead', clock);
    const ended = await b.integrityResults();
    assert.equal(ended.inProgress, false);
    assert.match(String(ended.error), /stopped before it ended/);
    await b.startIntegrityRun(false);
    await b.idle();
    release();
    await a.idle();
    assert.equal((await b.integrityResults()).error, null, 'the late end of the dead run does not overwrite the new one');

    await resetDatabaseOps(first);
    assert.deepEqual(await b.integrityResults(), {
      inProgress: false,
      fixingErrors: false,
      tooManyErrors: false,
      startTime: null,
      endTime: null,
      error: null,
      results: null,
    });
  });
});

describe('snapshots across workers', () => {
  it('at most one per minute whichever worker is asked', async () => {
    await resetDatabaseOps(first);
    const a = await ops('worker-a');
    const b = await ops('worker-b');
    const snapshots = () => readdirSync(dir).filter((f) => /^portcullis\.db-\d{8}-\d{6}/.test(f));
    await a.snapshot();
    await assert.rejects(b.snapshot(), (err: unknown) => err instanceof ApiError && err.code === 'RATE_LIMITED');
    now += 59_999;
    await assert.rejects(a.snapshot(), (err: unknown) => err instanceof ApiError && err.code === 'RATE_LIMITED');
    now += 1;
    await b.snapshot();
    assert.equal(snapshots().length, 2);
  });
});
