/**
 * `onFeedChange`: a store tells its listeners of commits that appended model rows to the change feed, and of no
 * other commit (circuits' and router connections' feed rows, writes without feed rows, rollbacks). On SQLite, the
 * process's own commits; on PostgreSQL, any process's by the feed notice (two stores on one database stand for two
 * controllers), including a set appended to the shared change-set log.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestPostgres, type TestPostgres } from '../support/postgres.ts';
import { createDatabase, openMigratedPostgres, openMigratedSqlite } from './postgres-helpers.ts';
import type { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import type { Store } from '../../src/store/store.ts';

const T0 = '2026-01-01T00:00:00.000Z';
let n = 0;
const feedRow = (store: Store, kind: string) =>
  store.write((tx) => tx.run("INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES (?, ?, 'set', '', ?)", [kind, `e${++n}`, T0]));
const service = (store: Store) => feedRow(store, 'service');

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

describe('feed listeners on SQLite', () => {
  const { store, remove } = openMigratedSqlite();
  after(async () => {
    await store.close();
    remove();
  });

  it('are told of each commit that appended model rows, at the commit, and of no other', async () => {
    let calls = 0;
    const stop = store.onFeedChange(() => (calls += 1));
    await feedRow(store, 'circuit');
    await feedRow(store, 'routerConnection');
    assert.equal(calls, 0, 'runtime rows wake nobody');
    await store.write((tx) => tx.run("UPDATE controller_facts SET value = value WHERE key = 'none'"));
    assert.equal(calls, 0, 'a write without feed rows');
    await assert.rejects(
      store.write(async (tx) => {
        await tx.run("INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('service', 'rolled-back', 'set', '', ?)", [T0]);
        throw new Error('abandoned');
      }),
    );
    assert.equal(calls, 0, 'a rollback');
    await service(store);
    assert.equal(calls, 1, 'a service row, at its commit');
    await feedRow(store, 'identity');
    assert.equal(calls, 2, 'an identity row');
    stop();
    await feedRow(store, 'identity');
    assert.equal(calls, 2, 'unsubscribed');
  });
});

describe('feed listeners on PostgreSQL', () => {
  let server: TestPostgres;
  let a: PostgresStore;
  let b: PostgresStore;
  before(async () => {
    server = await startTestPostgres();
    const url = await createDatabase(server.url, 'feed_notices');
    a = await openMigratedPostgres(url);
    b = await openMigratedPostgres(url);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await server?.stop();
  });

  it("are told of another process's commits that appended model rows or a shared change set, and of no other", async () => {
    await new Promise((r) => setTimeout(r, 300)); // both listening, earlier notices arrived
    let calls = 0;
    const stop = b.onFeedChange(() => (calls += 1));
    // Notices arrive in commit order: once the last commit's mark has moved b, every earlier one has been heard.
    const heard = async (work: () => Promise<unknown>) => {
      const mark = b.commitMark!();
      await work();
      await until(() => b.commitMark!() !== mark, 2000, 'the commit notice');
    };
    await heard(() => feedRow(a, 'circuit'));
    await heard(() => feedRow(a, 'routerConnection'));
    await heard(() => a.write((tx) => tx.run("UPDATE controller_facts SET value = value WHERE key = 'none'")));
    await assert.rejects(
      a.write(async (tx) => {
        await tx.run("INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('service', 'rolled-back', 'set', '', ?)", [T0]);
        throw new Error('abandoned');
      }),
    );
    await heard(() => a.write((tx) => tx.run("UPDATE controller_facts SET value = value WHERE key = 'none'")));
    assert.equal(calls, 0, 'runtime rows, writes without feed rows and rollbacks wake nobody');

    await service(a);
    await until(() => calls === 1, 2000, 'a service made by another process');
    await a.write((tx) => tx.run("INSERT INTO rdm_change_sets (idx, prev_idx, first_seq, body, created_at) VALUES (2, 1, 1, '', ?)", [T0]));
    await until(() => calls === 2, 2000, 'a set appended to the shared change-set log');
    await service(b);
    await until(() => calls === 3, 2000, 'its own commit, by the same notice');
    await heard(() => a.write((tx) => tx.run("UPDATE controller_facts SET value = value WHERE key = 'none'")));
    assert.equal(calls, 3, 'one call per commit');
    stop();
  });
});
