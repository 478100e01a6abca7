/**
 * PostgreSQL's commit mark: two stores on one database stand for two controller processes. A value read through the
 * mark (`versioned`, `versions`) costs no round trip while nobody commits, follows another process's commit by its
 * notification, and follows a commit that sent none (a lost notice) within the polling period. The delay from a
 * commit in one process to the other's mark is measured (printed as p50/p99).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestPostgres, type TestPostgres } from '../support/postgres.ts';
import { createDatabase, openMigratedPostgres } from './postgres-helpers.ts';
import type { PostgresStore } from '../../src/store/postgres/postgres-store.ts';

const T0 = '2026-01-01T00:00:00.000Z';
let server: TestPostgres;
let a: PostgresStore;
let b: PostgresStore;

before(async () => {
  server = await startTestPostgres();
  const url = await createDatabase(server.url, 'commit_mark');
  a = await openMigratedPostgres(url, { markPollMs: 400 });
  b = await openMigratedPostgres(url, { markPollMs: 400 });
});
after(async () => {
  await a?.close();
  await b?.close();
  await server?.stop();
});

async function until(check: () => boolean | Promise<boolean>, ms: number): Promise<number> {
  const start = performance.now();
  while (!(await check())) {
    if (performance.now() - start > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 1));
  }
  return performance.now() - start;
}

let n = 0;
const addService = (store: PostgresStore) =>
  store.write(async (tx) => {
    n += 1;
    await tx.run('INSERT INTO services (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)', [`s${n}`, `s${n}`, T0, T0]);
  });

describe('the commit mark on PostgreSQL', () => {
  it('keeps a versioned value without asking the store while nobody commits', async () => {
    let builds = 0;
    const count = b.versioned(['services'], async (q) => {
      builds += 1;
      return Number(await q.value('SELECT COUNT(*) FROM services'));
    });
    const first = await count();
    // Wait out a poll tick so the value is read at a settled mark, then ask many times.
    await new Promise((r) => setTimeout(r, 450));
    await count();
    const settled = builds;
    let queries = 0;
    const pool = b.pool as unknown as { connect: (...args: unknown[]) => unknown };
    const real = pool.connect.bind(b.pool);
    pool.connect = (...args: unknown[]) => {
      queries += 1;
      return real(...args);
    };
    let afterStale: number;
    try {
      for (let i = 0; i < 100; i++) assert.equal(await count(), first);
      const quiet = queries;
      // Control: once told to, the value is checked against the store again (the counter does count).
      b.markStale!();
      assert.equal(await count(), first);
      afterStale = queries - quiet;
    } finally {
      pool.connect = real;
    }
    assert.ok(afterStale >= 1, 'a stale mark makes the next read ask the store');
    assert.equal(builds, settled, 'no rebuild while nothing changed');
    assert.ok(queries - afterStale <= 1, `at most one poll tick's check in 100 reads, saw ${queries - afterStale} queries`);
  });

  it('is not moved by a circuit row (runRuntime), and is by any other runtime write', async () => {
    const row = ['ci1', 'p1', 'se1', 'as1', 'i1', 's1', 't1', '[]', T0];
    const circuitSql = 'INSERT INTO circuits (id, owner, session_id, api_session_id, identity_id, service_id, terminator_id, path, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)';
    await new Promise((r) => setTimeout(r, 450)); // any notice still on its way has arrived
    const markA = a.commitMark!();
    const markB = b.commitMark!();
    assert.equal((await a.runRuntime(circuitSql, row)).changes, 1);
    assert.equal((await a.runRuntime('DELETE FROM circuits WHERE id = ?', ['ci1'])).changes, 1);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(a.commitMark!(), markA, 'the writing process: no move');
    assert.equal(b.commitMark!(), markB, 'another process: no notice');
    // The row and its feed rows are there all the same.
    assert.deepEqual(await b.column("SELECT op FROM change_feed WHERE kind = 'circuit' AND entity_id = 'ci1' ORDER BY seq"), ['set', 'remove']);
    // Any other runtime write sends its notice.
    await new Promise((r) => setTimeout(r, 450));
    const before = b.commitMark!();
    await a.writeRuntime((tx) => tx.run("UPDATE api_sessions SET last_activity_at = ? WHERE id = 'none'", [T0]));
    await until(() => b.commitMark!() !== before, 2000);
  });

  it("follows another process's commit by its notification", async () => {
    const count = b.versioned(['services'], async (q) => Number(await q.value('SELECT COUNT(*) FROM services')));
    const before = await count();
    await addService(a);
    await until(async () => (await count()) === before + 1, 2000);
  });

  it('while its listening connection is gone, sees commits within the polling period, and listens again', async () => {
    const count = b.versioned(['services'], async (q) => Number(await q.value('SELECT COUNT(*) FROM services')));
    const before = await count();
    // The server ends every listening session (as a restart or a network cut would).
    await a.pool.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'portcullis-listen' AND datname = current_database()");
    await new Promise((r) => setTimeout(r, 50));
    // Written around the store's write (no notice); the triggers still move the counter.
    await a.pool.query("INSERT INTO services (id, name, created_at, updated_at) VALUES ('quiet', 'quiet', $1, $1)", [T0]);
    const took = await until(async () => (await count()) === before + 1, 3000);
    assert.ok(took <= 1500, `seen after ${Math.round(took)} ms`);
    // Listening again: a notified commit is seen well before a poll period.
    await until(async () => Number((await a.pool.query("SELECT COUNT(*) AS n FROM pg_stat_activity WHERE application_name = 'portcullis-listen' AND datname = current_database()")).rows[0].n) === 2, 5000);
    await new Promise((r) => setTimeout(r, 450));
    const seen = b.commitMark!();
    await addService(a);
    const delay = await until(() => b.commitMark!() !== seen, 2000);
    assert.ok(delay < 200, `notified after ${Math.round(delay)} ms`);
  });

  it('without a notice and with the listener up, a commit waits for the next notice (notices are exact)', async () => {
    const count = b.versioned(['services'], async (q) => Number(await q.value('SELECT COUNT(*) FROM services')));
    const before = await count();
    await a.pool.query("INSERT INTO services (id, name, created_at, updated_at) VALUES ('silent', 'silent', $1, $1)", [T0]);
    await new Promise((r) => setTimeout(r, 900));
    assert.equal(await count(), before, 'no round trip was made to notice it');
    await addService(a);
    await until(async () => (await count()) === before + 2, 2000);
  });

  it('measures the delay from a commit in one process to the mark of another (p50/p99)', async () => {
    const delays: number[] = [];
    for (let i = 0; i < 200; i++) {
      const seen = b.commitMark!();
      await addService(a);
      const committed = performance.now();
      await until(() => b.commitMark!() !== seen, 2000);
      delays.push(performance.now() - committed);
    }
    delays.sort((x, y) => x - y);
    const p = (q: number) => delays[Math.min(delays.length - 1, Math.floor(q * delays.length))]!;
    console.log(`commit -> other process's mark: p50 ${p(0.5).toFixed(2)} ms, p99 ${p(0.99).toFixed(2)} ms (200 commits)`);
    assert.ok(p(0.5) < 400, 'most commits arrive by notification, before the poll tick');
  });
});
