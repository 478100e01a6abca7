/**
 * The store contract (src/store/store.ts), run on both backends with the real schema: SQLite (sqlite-store.ts after
 * migrate.ts) and PostgreSQL (postgres/ after migrate-postgres.ts, on a private cluster). Statements and their
 * answers, write transactions with their hooks, pages, change counters and cached values, constraint errors as
 * the same API errors, serialized writers. Then what only PostgreSQL has: writers in several stores (processes),
 * migrating from several stores at once, start-up errors, and a server that goes away and comes back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiError } from '../../src/errors.ts';
import { deleteEntity, insertEntity, type EntityTableDecl } from '../../src/store/entity-table.ts';
import { migratePostgres } from '../../src/store/postgres/migrate-postgres.ts';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import type { Store, Tx } from '../../src/store/store.ts';
import { freePort } from '../support/controller.ts';
import { startTestPostgres, type TestPostgres } from '../support/postgres.ts';
import { createDatabase, databaseUrl, openMigratedPostgres, openMigratedSqlite, silentServer, sleep, tcpProxy, withAdmin } from './postgres-helpers.ts';

const T0 = '2024-01-01T00:00:00.000Z';

const configTypeDecl: EntityTableDecl = {
  table: 'config_types',
  singular: 'config type',
  entityType: 'configTypes',
  columns: { name: { column: 'name', kind: 'text' }, schema: { column: 'schema', kind: 'json' } },
};
const configDecl: EntityTableDecl = {
  table: 'configs',
  singular: 'config',
  entityType: 'configs',
  columns: { name: { column: 'name', kind: 'text' }, configTypeId: { column: 'config_type_id', kind: 'text' }, data: { column: 'data', kind: 'json' } },
};
const authenticatorDecl: EntityTableDecl = {
  table: 'authenticators',
  singular: 'authenticator',
  entityType: 'authenticators',
  columns: {
    identityId: { column: 'identity_id', kind: 'text' },
    method: { column: 'method', kind: 'text' },
    username: { column: 'username', kind: 'text' },
  },
};

/** The error a promise rejects with, as a client sees it. */
async function apiErrorOf(p: Promise<unknown>): Promise<{ code: string; status: number; cause: unknown }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiError) return { code: err.code, status: err.status, cause: err.cause };
    throw err;
  }
  assert.fail('expected an error');
}

async function insertFact(q: Tx, key: string, value = 'v'): Promise<void> {
  await q.run('INSERT INTO controller_facts (key, value) VALUES (?, ?)', [key, value]);
}

async function insertService(tx: Tx, id: string): Promise<void> {
  await tx.run('INSERT INTO services (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)', [id, `service-${id}`, T0, T0]);
}

let server: TestPostgres;
before(async () => {
  server = await startTestPostgres();
});
after(async () => {
  await server?.stop();
});

/** Answers of the contract run on each backend, compared afterwards. */
const answers: Record<string, Record<string, unknown>> = { sqlite: {}, postgres: {} };

function contract(name: 'sqlite' | 'postgres', open: () => Promise<{ store: Store; close(): Promise<void> }>) {
  describe(`store contract on ${name}`, () => {
    let store: Store;
    let close: () => Promise<void>;
    const seen = answers[name]!;
    before(async () => {
      ({ store, close } = await open());
      await store.write(async (tx) => {
        await tx.run("INSERT INTO identity_types (id, name, created_at, updated_at) VALUES ('default', 'Default', ?, ?)", [T0, T0]);
        await tx.run("INSERT INTO auth_policies (id, name, primary_settings, secondary_settings, created_at, updated_at) VALUES ('default', 'Default', '{}', '{}', ?, ?)", [T0, T0]);
        await tx.run("INSERT INTO identities (id, name, type_id, created_at, updated_at) VALUES ('i1', 'one', 'default', ?, ?)", [T0, T0]);
        await tx.run("INSERT INTO config_types (id, name, created_at, updated_at) VALUES ('ct1', 'type-one', ?, ?)", [T0, T0]);
      });
    });
    after(async () => {
      await close?.();
    });

    it('get, all, value, column and run answer as SQLite does', async () => {
      assert.equal(store.kind, name);
      assert.equal(store.dialect.name, name);
      const inserted = await store.write(async (tx) => {
        assert.equal(tx.inWrite, true);
        let n = 0;
        for (const [k, v] of [['a', 'x'], ['b', 'y'], ['c', 'z']]) n += (await tx.run('INSERT INTO controller_facts (key, value) VALUES (?, ?)', [k, v])).changes;
        return n;
      });
      assert.equal(inserted, 3);
      assert.equal(store.inWrite, false);
      assert.deepEqual(await store.get('SELECT key, value FROM controller_facts WHERE key = ?', ['b']), { key: 'b', value: 'y' });
      assert.equal(await store.get('SELECT key FROM controller_facts WHERE key = ?', ['nope']), undefined);
      assert.deepEqual(await store.all("SELECT key FROM controller_facts WHERE key IN (?, ?) ORDER BY key", ['a', 'c']), [{ key: 'a' }, { key: 'c' }]);
      assert.equal(await store.value('SELECT value FROM controller_facts WHERE key = ?', ['c']), 'z');
      assert.equal(await store.value('SELECT value FROM controller_facts WHERE key = ?', ['nope']), undefined);
      assert.deepEqual(await store.column("SELECT key FROM controller_facts WHERE key IN ('a', 'b', 'c') ORDER BY key DESC"), ['c', 'b', 'a']);
      const counted = await store.value<number>('SELECT COUNT(*) FROM controller_facts WHERE key IN (?, ?, ?)', ['a', 'b', 'c']);
      assert.equal(counted, 3);
      assert.equal(typeof counted, 'number');
      const changed = await store.write((tx) => tx.run("UPDATE controller_facts SET value = 'w' WHERE key IN ('a', 'b', 'missing')"));
      assert.deepEqual(changed, { changes: 2 });
      // Types as SQLite gives them: JSON as its text, integers (BIGINT too) as numbers, 0/1 flags, NULL as null.
      const row = await store.get<Record<string, unknown>>("SELECT tags, is_system, version FROM table_versions t, identity_types i WHERE t.name = 'services' AND i.id = 'default'");
      assert.deepEqual({ ...row, tags: JSON.parse(row!.tags as string) }, { tags: {}, is_system: 1, version: 0 });
      assert.equal(await store.value("SELECT seq FROM change_feed WHERE kind = 'none'"), undefined);
      assert.equal(await store.value('SELECT MAX(seq) FROM change_feed WHERE seq < 0'), null);
      assert.equal(await store.value('SELECT CAST(? AS BIGINT)', [2 ** 40]), 2 ** 40);
    });

    it('write commits, runs afterCommit hooks after the commit and never onRollback', async () => {
      const events: string[] = [];
      const result = await store.write(async (tx) => {
        await insertFact(tx, 'commit-1');
        tx.afterCommit(() => events.push('afterCommit'));
        tx.onRollback(() => events.push('onRollback'));
        // Reads outside the transaction see committed data only.
        events.push(`outside sees ${String(await store.value('SELECT value FROM controller_facts WHERE key = ?', ['commit-1']))}`);
        events.push(`inside sees ${String(await tx.value('SELECT value FROM controller_facts WHERE key = ?', ['commit-1']))}`);
        return 42;
      });
      assert.equal(result, 42);
      assert.deepEqual(events, ['outside sees undefined', 'inside sees v', 'afterCommit']);
      assert.equal(await store.value('SELECT value FROM controller_facts WHERE key = ?', ['commit-1']), 'v');
    });

    it('write rolls back on a thrown error: onRollback hooks run, afterCommit hooks do not, nothing stays', async () => {
      const events: string[] = [];
      const boom = new Error('boom');
      await assert.rejects(
        store.write(async (tx) => {
          await insertFact(tx, 'rollback-1');
          tx.afterCommit(() => events.push('afterCommit'));
          tx.onRollback(() => events.push('onRollback'));
          throw boom;
        }),
        (err) => err === boom,
      );
      assert.deepEqual(events, ['onRollback']);
      assert.equal(await store.value('SELECT value FROM controller_facts WHERE key = ?', ['rollback-1']), undefined);
    });

    it('a write whose statement fails leaves nothing', async () => {
      await assert.rejects(
        store.write(async (tx) => {
          await insertFact(tx, 'failed-1');
          await tx.run("INSERT INTO configs (id, name, config_type_id, created_at, updated_at) VALUES ('cx', 'cx', 'no-such-type', ?, ?)", [T0, T0]);
        }),
      );
      assert.equal(await store.value('SELECT value FROM controller_facts WHERE key = ?', ['failed-1']), undefined);
      assert.equal(await store.value("SELECT id FROM configs WHERE id = 'cx'"), undefined);
    });

    it('page: count and rows with limit, offset and -1', async () => {
      await store.write(async (tx) => {
        for (let i = 1; i <= 7; i++) await insertFact(tx, `page-${i}`, String(i));
      });
      const page = (limit: number, offset: number, orderBy = 'e.key') =>
        store.page('controller_facts', { where: 'e.key >= ? AND e.key < ?', params: ['page-', 'page.'], orderBy, limit, offset });
      const keys = async (p: ReturnType<typeof page>) => {
        const { rows, totalCount } = await p;
        return { keys: rows.map((r) => r.key), totalCount };
      };
      assert.deepEqual(await keys(page(3, 2)), { keys: ['page-3', 'page-4', 'page-5'], totalCount: 7 });
      assert.deepEqual(await keys(page(-1, 5)), { keys: ['page-6', 'page-7'], totalCount: 7 });
      assert.deepEqual(await keys(page(-1, 0, 'e.key DESC')), { keys: ['page-7', 'page-6', 'page-5', 'page-4', 'page-3', 'page-2', 'page-1'], totalCount: 7 });
      assert.deepEqual(await keys(page(3, 10)), { keys: [], totalCount: 7 });
      assert.deepEqual(await keys(page(0, 0)), { keys: [], totalCount: 7 });
      const sub = await store.page('(SELECT key, value FROM controller_facts WHERE key >= ? AND key < ?)', {
        where: 'e.value > ?',
        params: ['page-', 'page.', '5'],
        orderBy: 'e.value',
        limit: 10,
        offset: 0,
      });
      // The sub-select's parameters come first in the text, so they come first in `params`.
      assert.deepEqual(sub, { rows: [{ key: 'page-6', value: '6' }, { key: 'page-7', value: '7' }], totalCount: 2 });
      const inTx = await store.write((tx) => tx.page('controller_facts', { where: 'e.key = ?', params: ['page-1'], orderBy: 'e.key', limit: 10, offset: 0 }));
      assert.deepEqual(inTx, { rows: [{ key: 'page-1', value: '1' }], totalCount: 1 });
    });

    it('snapshot reads one committed state', async () => {
      const seenInside = await store.snapshot(async (q) => {
        assert.equal(q.inWrite, false);
        const before = await q.value<number>("SELECT COUNT(*) FROM controller_facts WHERE key >= 'snap' AND key < 'snaq'");
        await store.write((tx) => insertFact(tx, 'snap-1'));
        const after = await q.value<number>("SELECT COUNT(*) FROM controller_facts WHERE key >= 'snap' AND key < 'snaq'");
        return [before, after];
      });
      // SQLite's reader keeps its read transaction, PostgreSQL's snapshot is REPEATABLE READ: both still see 0.
      assert.deepEqual(seenInside, [0, 0]);
      assert.equal(await store.value("SELECT COUNT(*) FROM controller_facts WHERE key >= 'snap' AND key < 'snaq'"), 1);
    });

    it('versions move on a committed change and not on a rolled-back one', async () => {
      const version = store.versions(['services', 'configs']);
      const v0 = await version();
      assert.match(v0, /^\d+\.\d+$/);
      await assert.rejects(
        store.write(async (tx) => {
          await insertService(tx, 'rolled-back');
          throw new Error('no');
        }),
      );
      assert.equal(await version(), v0);
      await store.write((tx) => insertService(tx, 's-v1'));
      const v1 = await version();
      assert.notEqual(v1, v0);
      assert.equal(v1.split('.')[1], v0.split('.')[1], 'the configs counter stands');
      await store.write((tx) => tx.run("UPDATE services SET name = 'renamed' WHERE id = 's-v1'"));
      assert.notEqual(await version(), v1);
      await assert.rejects(async () => store.versions(['no_such_table' as 'services'])(), /unversioned/);
      seen.versionShape = v1.split('.').length;
    });

    it('versioned keeps its value while the counters stand, rebuilds after a change, never keeps one built in a write', async () => {
      let builds = 0;
      const countServices = store.versioned(['services'], async (q) => {
        builds++;
        return (await q.value<number>('SELECT COUNT(*) FROM services'))!;
      });
      const n0 = await countServices();
      assert.equal(await countServices(), n0);
      assert.equal(builds, 1);
      await store.write((tx) => insertService(tx, 's-cache-1'));
      assert.equal(await countServices(), n0 + 1);
      assert.equal(builds, 2);
      await assert.rejects(
        store.write(async (tx) => {
          await insertService(tx, 's-cache-2');
          assert.equal(await countServices(tx), n0 + 2);
          throw new Error('undo');
        }),
      );
      assert.equal(builds, 3);
      assert.equal(await countServices(), n0 + 1);
      assert.equal(builds, 3, 'the value built inside the write was not kept');
      // Concurrent callers after a change share what they can and all see it.
      await store.write((tx) => insertService(tx, 's-cache-3'));
      assert.deepEqual(await Promise.all([countServices(), countServices(), countServices()]), [n0 + 2, n0 + 2, n0 + 2]);
    });

    it('unique and foreign-key violations become the API errors of the SQLite store', async () => {
      const created = { createdAt: T0, updatedAt: T0 };
      const errors: Record<string, unknown> = {};
      errors.uniqueName = await apiErrorOf(store.write((tx) => insertEntity(tx, configTypeDecl, { id: 'ct-dup', name: 'type-one', ...created })));
      errors.primaryKey = await apiErrorOf(store.write((tx) => insertEntity(tx, configTypeDecl, { id: 'ct1', name: 'another', ...created })));
      errors.missingParent = await apiErrorOf(
        store.write((tx) => insertEntity(tx, configDecl, { id: 'c-orphan', name: 'orphan', configTypeId: 'no-such-type', data: {}, ...created })),
      );
      await store.write((tx) => insertEntity(tx, configDecl, { id: 'c1', name: 'config-one', configTypeId: 'ct1', data: { a: 1 }, ...created }));
      errors.referenced = await apiErrorOf(store.write((tx) => deleteEntity(tx, configTypeDecl, 'ct1')));
      await store.write((tx) => insertEntity(tx, authenticatorDecl, { id: 'au1', identityId: 'i1', method: 'updb', username: 'user-one', ...created }));
      errors.uniqueColumn = await apiErrorOf(
        store.write((tx) => insertEntity(tx, authenticatorDecl, { id: 'au2', identityId: 'i1', method: 'cert', username: 'user-one', ...created })),
      );
      errors.uniquePair = await apiErrorOf(
        store.write((tx) => insertEntity(tx, authenticatorDecl, { id: 'au3', identityId: 'i1', method: 'updb', username: 'user-three', ...created })),
      );
      assert.equal((errors.uniqueName as { code: string }).code, 'COULD_NOT_VALIDATE');
      assert.equal((errors.missingParent as { code: string }).code, 'REFERENCED_ENTITY_NOT_FOUND');
      assert.equal((errors.referenced as { code: string }).code, 'CAN_NOT_DELETE_REFERENCED_ENTITY');
      assert.equal(await store.value("SELECT COUNT(*) FROM config_types WHERE id = 'ct1'"), 1);
      seen.constraintErrors = errors;
    });

    it('writes from concurrent callers run one after the other, in call order', async () => {
      const events: string[] = [];
      const writer = (name: string, pause: number) =>
        store.write(async (tx) => {
          events.push(`${name} begins`);
          await insertFact(tx, `serial-${name}`);
          await sleep(pause);
          await tx.value('SELECT COUNT(*) FROM controller_facts');
          events.push(`${name} ends`);
          return name;
        });
      const results = await Promise.all([writer('a', 60), writer('b', 0), writer('c', 20)]);
      assert.deepEqual(results, ['a', 'b', 'c']);
      assert.deepEqual(events, ['a begins', 'a ends', 'b begins', 'b ends', 'c begins', 'c ends']);
    });

    it('durable() has nothing pending after the work is done', async () => {
      await store.write((tx) => insertFact(tx, 'durable-1'));
      await store.durable();
      assert.equal(await store.value('SELECT value FROM controller_facts WHERE key = ?', ['durable-1']), 'v');
    });
  });
}

contract('sqlite', async () => {
  const { store, remove } = openMigratedSqlite();
  return {
    store,
    async close() {
      await store.close();
      remove();
    },
  };
});

contract('postgres', async () => {
  const store = await openMigratedPostgres(await createDatabase(server.url, 'contract'));
  return { store, close: () => store.close() };
});

describe('both backends', () => {
  it('give the same constraint errors and counters', () => {
    assert.ok(answers.sqlite!.constraintErrors, 'the SQLite contract ran');
    assert.deepEqual(answers.postgres!.constraintErrors, answers.sqlite!.constraintErrors);
    assert.equal(answers.postgres!.versionShape, answers.sqlite!.versionShape);
  });
});

describe('PostgreSQL store', () => {
  let url: string;
  let store: PostgresStore;
  before(async () => {
    url = await createDatabase(server.url, 'pg_only');
    store = await openMigratedPostgres(url);
  });
  after(async () => {
    await store?.close();
  });

  it('serializes writers of several stores (processes) on the advisory lock, in commit order of the feed', async () => {
    const other = await openPostgresStore(url);
    try {
      const events: string[] = [];
      let entered!: () => void;
      const firstEntered = new Promise<void>((resolve) => (entered = resolve));
      const first = store.write(async (tx) => {
        events.push('first begins');
        await tx.run("INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('test', 'first', 'set', 'a', ?)", [T0]);
        entered();
        await sleep(300);
        events.push('first ends');
      });
      await firstEntered;
      const second = other.write(async (tx) => {
        events.push('second begins');
        await tx.run("INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('test', 'second', 'set', 'b', ?)", [T0]);
      });
      await Promise.all([first, second]);
      assert.deepEqual(events, ['first begins', 'first ends', 'second begins']);
      assert.deepEqual(await store.column("SELECT entity_id FROM change_feed WHERE kind = 'test' ORDER BY seq"), ['first', 'second']);
    } finally {
      await other.close();
    }
  });

  it('rolls back a write whose work swallowed a failed statement (PostgreSQL aborts the transaction)', async () => {
    const events: string[] = [];
    await assert.rejects(
      store.write(async (tx) => {
        tx.onRollback(() => events.push('onRollback'));
        tx.afterCommit(() => events.push('afterCommit'));
        await tx.run("INSERT INTO controller_facts (key, value) VALUES ('swallow', 'v')");
        await tx.run("INSERT INTO controller_facts (key, value) VALUES ('swallow', 'again')").catch(() => undefined);
      }),
      /rolled back: a statement in it failed \(duplicate key/,
    );
    assert.deepEqual(events, ['onRollback']);
    assert.equal(await store.value("SELECT value FROM controller_facts WHERE key = 'swallow'"), undefined);
  });

  it('refuses a transaction object used after its write ended', async () => {
    let leaked!: Tx;
    await store.write(async (tx) => {
      leaked = tx;
    });
    await assert.rejects(leaked.value('SELECT 1'), /used after it ended/);
  });

  it('fails a statement that runs past the statement timeout with STORAGE_UNAVAILABLE, and goes on', async () => {
    const quick = await openPostgresStore(url, { statementTimeoutMs: 300 });
    try {
      const started = Date.now();
      const err = await apiErrorOf(quick.value('SELECT pg_sleep(2)'));
      assert.equal(err.code, 'STORAGE_UNAVAILABLE');
      assert.equal(err.status, 503);
      assert.ok(Date.now() - started < 1500);
      assert.equal(await quick.value('SELECT 1'), 1);
    } finally {
      await quick.close();
    }
  });

  it('two stores migrating at once migrate once, to the version of SQLite', async () => {
    const fresh = await createDatabase(server.url, 'migrate_race');
    const a = await openPostgresStore(fresh);
    const b = await openPostgresStore(fresh);
    try {
      const [ra, rb] = await Promise.all([migratePostgres(a), migratePostgres(b)]);
      const applied = [ra, rb].sort((x, y) => y.length - x.length);
      assert.ok(applied[0]!.length >= 1 && applied[0]![0] === '0033-baseline.sql', `applied: ${JSON.stringify(applied)}`);
      assert.deepEqual(applied[1], []);
      const { store: sqlite, remove } = openMigratedSqlite();
      try {
        const sqliteVersion = await sqlite.value<number>('SELECT MAX(version) FROM schema_migrations');
        assert.equal(await a.value('SELECT MAX(version) FROM schema_migrations'), sqliteVersion);
        assert.deepEqual(
          await a.column('SELECT version FROM schema_migrations ORDER BY version'),
          (await sqlite.column<number>('SELECT version FROM schema_migrations ORDER BY version')).filter((v) => v >= 33),
        );
      } finally {
        await sqlite.close();
        remove();
      }
      assert.deepEqual(await migratePostgres(a), []);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('refuses a database without the C.UTF-8 locale', async () => {
    await withAdmin(server.url, (c) => c.query("CREATE DATABASE wrong_locale TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'"));
    const wrong = await openPostgresStore(databaseUrl(server.url, 'wrong_locale'));
    try {
      await assert.rejects(migratePostgres(wrong), /must be UTF8 with the C\.UTF-8 locale/);
    } finally {
      await wrong.close();
    }
  });
});

describe('PostgreSQL start-up errors', () => {
  const secret = 'Sup3r-Secret-Pw';

  /** The one-line message of a failed open, checked for the password. */
  async function openError(target: string, connectTimeoutMs?: number): Promise<string> {
    try {
      const s = await openPostgresStore(target, { connectTimeoutMs });
      await s.close();
    } catch (err) {
      const message = (err as Error).message;
      assert.ok(!message.includes('\n'), `one line: ${message}`);
      assert.ok(!message.includes(secret), `no password: ${message}`);
      assert.ok(!String((err as Error).stack).includes(secret), 'no password in the stack');
      return message;
    }
    assert.fail(`opening ${target.replace(secret, '***')} succeeded`);
  }

  it('a malformed URL', async () => {
    assert.match(await openError(`postgres://user:${secret}@db.example:99999/app`), /^invalid PostgreSQL URL/);
    assert.match(await openError(`mysql://user:${secret}@host/app`), /^invalid PostgreSQL URL \(not a postgres:\/\/ URL\)/);
    assert.match(await openError(`postgres://user:${secret}@host/app?frobnicate=1`), /unsupported parameter "frobnicate"/);
    assert.match(await openError(`postgres://user:${secret}@host/app?sslmode=prefer`), /sslmode=prefer is not supported/);
  });

  it('a closed port', async () => {
    const port = await freePort();
    assert.equal(await openError(`postgres://portcullis:${secret}@127.0.0.1:${port}/app`), `cannot connect to PostgreSQL at 127.0.0.1:${port}/app as portcullis: connection refused`);
  });

  it('a server that never answers', async () => {
    const silent = await silentServer();
    try {
      const started = Date.now();
      const message = await openError(`postgres://portcullis:${secret}@127.0.0.1:${silent.port}/app`, 500);
      assert.equal(message, `cannot connect to PostgreSQL at 127.0.0.1:${silent.port}/app as portcullis: no answer within 500 ms`);
      assert.ok(Date.now() - started < 2000);
    } finally {
      await silent.close();
    }
  });

  it('a wrong password, a missing database; nothing is left open', async () => {
    const port = new URL(server.url).port;
    await withAdmin(server.url, async (c) => {
      await c.query(`CREATE ROLE pc_password_user LOGIN PASSWORD '${secret}'`);
      const hba = (await c.query('SHOW hba_file')).rows[0].hba_file as string;
      const lines = [
        'local all all trust',
        'host all pc_password_user 127.0.0.1/32 scram-sha-256',
        'host all all 127.0.0.1/32 trust',
        'host all all ::1/128 trust',
      ];
      await c.query(`COPY (SELECT line FROM unnest(ARRAY[${lines.map((l) => `'${l}'`).join(', ')}]) WITH ORDINALITY AS t(line, n) ORDER BY n) TO '${hba}'`);
      await c.query('SELECT pg_reload_conf()');
    });
    const sockets = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
    const before = sockets();
    let message = '';
    for (let i = 0; i < 50; i++) {
      // The reload is asynchronous: wait until the server asks this role for its password.
      message = await openError(`postgres://pc_password_user:wrong-${secret}@127.0.0.1:${port}/postgres`);
      if (/password authentication failed/.test(message)) break;
      await sleep(100);
    }
    assert.equal(message, `cannot connect to PostgreSQL at 127.0.0.1:${port}/postgres as pc_password_user: password authentication failed for user "pc_password_user"`);
    const good = await openPostgresStore(`postgres://pc_password_user:${encodeURIComponent(secret)}@127.0.0.1:${port}/postgres`);
    assert.equal(await good.value('SELECT current_user'), 'pc_password_user');
    assert.ok(!JSON.stringify(good.pool.options).includes(secret), 'the pool keeps the password out of sight');
    assert.ok(!good.location.includes(secret));
    await good.close();
    assert.match(await openError(`postgres://portcullis:${secret}@127.0.0.1:${port}/no_such_db`), /as portcullis: database "no_such_db" does not exist$/);
    await sleep(50);
    assert.equal(sockets(), before);
  });
});

describe('PostgreSQL going away and coming back', () => {
  let url: string;
  let proxy: Awaited<ReturnType<typeof tcpProxy>>;
  let store: PostgresStore;
  const reported: string[] = [];
  before(async () => {
    url = await createDatabase(server.url, 'faults');
    proxy = await tcpProxy(Number(new URL(server.url).port));
    const via = new URL(url);
    via.port = String(proxy.port);
    const direct = await openMigratedPostgres(url);
    await direct.close();
    store = await openPostgresStore(via.toString(), { connectTimeoutMs: 500, statementTimeoutMs: 2000, onError: (m) => reported.push(m) });
  });
  after(async () => {
    await store?.close();
    await proxy?.close();
  });

  async function unavailable(p: Promise<unknown>, within: number): Promise<void> {
    const started = Date.now();
    const err = await apiErrorOf(p);
    assert.equal(err.code, 'STORAGE_UNAVAILABLE');
    assert.equal(err.status, 503);
    assert.ok(Date.now() - started < within, `failed after ${Date.now() - started} ms`);
  }

  async function eventually<T>(work: () => Promise<T>): Promise<T> {
    for (let i = 0; ; i++) {
      try {
        return await work();
      } catch (err) {
        if (i >= 20) throw err;
        await sleep(100);
      }
    }
  }

  it('fails at once while the server refuses, and works again by itself', async () => {
    await store.write((tx) => insertFact(tx, 'before-outage'));
    proxy.mode('refuse');
    await unavailable(store.value('SELECT 1'), 1000);
    await unavailable(store.write((tx) => insertFact(tx, 'during-outage')), 1000);
    await unavailable(store.snapshot((q) => q.value('SELECT 1')), 1000);
    await unavailable(store.versions(['services'])(), 1000);
    proxy.mode('open');
    assert.equal(await eventually(() => store.value('SELECT value FROM controller_facts WHERE key = ?', ['before-outage'])), 'v');
    await store.write((tx) => insertFact(tx, 'after-outage'));
    assert.equal(await store.value('SELECT value FROM controller_facts WHERE key = ?', ['during-outage']), undefined);
  });

  it('gives up on an unanswered connection within the connect timeout; queued writes fail with the first', async () => {
    proxy.mode('blackhole');
    const started = Date.now();
    const writes = [1, 2, 3].map((i) => unavailable(store.write((tx) => insertFact(tx, `queued-${i}`)), 1500));
    await Promise.all(writes);
    assert.ok(Date.now() - started < 1500);
    proxy.mode('open');
    await eventually(() => store.value('SELECT 1'));
    assert.deepEqual(await store.column("SELECT key FROM controller_facts WHERE key LIKE 'queued-%'"), []);
  });

  it('rolls back a write cut off in the middle, runs its onRollback hooks, and commits the next', async () => {
    const events: string[] = [];
    await unavailable(
      store.write(async (tx) => {
        tx.onRollback(() => events.push('onRollback'));
        await insertFact(tx, 'cut-1');
        proxy.mode('refuse');
        await insertFact(tx, 'cut-2');
      }),
      3000,
    );
    assert.deepEqual(events, ['onRollback']);
    proxy.mode('open');
    await eventually(() => store.write((tx) => insertFact(tx, 'after-cut')));
    assert.deepEqual(await store.column("SELECT key FROM controller_facts WHERE key IN ('cut-1', 'cut-2', 'after-cut') ORDER BY key"), ['after-cut']);
  });

  it('survives the server ending its connections (a restart): pool errors are reported, not fatal', async () => {
    // Fill the pool with idle connections, then end them on the server side.
    await Promise.all([1, 2, 3].map(() => store.snapshot(async (q) => (await sleep(50), q.value('SELECT 1')))));
    const ended = await withAdmin(server.url, async (c) =>
      (await c.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'faults' AND application_name = 'portcullis' AND pid <> pg_backend_pid()")).rowCount,
    );
    assert.ok((ended ?? 0) >= 1);
    await sleep(100);
    assert.equal(await eventually(() => store.value('SELECT 1')), 1);
    assert.ok(reported.some((m) => /connection at 127\.0\.0\.1:\d+\/faults as portcullis lost/.test(m)), JSON.stringify(reported));
    assert.ok(reported.every((m) => !m.includes('\n')));
  });
});
