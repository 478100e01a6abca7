/**
 * The change feed between processes sharing one store, simulated with two stores (each with its own
 * connections) on one database file, each with its own feed and access service (as two workers have): writes
 * through one are applied by the other in order (including removals and re-creations), a reader skips its own
 * rows, catches up inside write transactions, rebuilds after falling behind a trim, waits for out-of-order seqs
 * (as on PostgreSQL), and does nothing while the store's commit mark says nobody committed.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore, type SqliteStore } from '../../../src/store/sqlite-store.ts';
import { migrate } from '../../../src/store/migrate.ts';
import type { Store } from '../../../src/store/store.ts';
import { createAccessService, type AccessService } from '../../../src/access/access.service.ts';
import { createChangeFeed, type ChangeFeed, type FeedEntry } from '../../../src/cluster/change-feed.ts';
import { bootstrapRecords } from '../../../src/system/bootstrap.ts';
import type { PolicyInput } from '../../../src/access/access-index.ts';

const T0 = '2026-01-01T00:00:00.000Z';
const clock = { now: () => new Date() };
const dir = mkdtempSync(join(tmpdir(), 'portcullis-feed-'));
const opened: Store[] = [];
after(async () => {
  for (const store of opened) await store.close();
  rmSync(dir, { recursive: true, force: true });
});

let fileNo = 0;
async function newFile(): Promise<string> {
  const file = join(dir, `feed-${++fileNo}.db`);
  const store = open(file);
  migrate(store.db);
  await bootstrapRecords(store, { username: 'admin', password: 'admin-password' });
  // The seeded config types left rows for the router data model (migration 0029): start from an empty feed.
  await store.write(async (tx) => {
    await tx.run('DELETE FROM change_feed');
    await tx.run("DELETE FROM sqlite_sequence WHERE name = 'change_feed'");
  });
  return file;
}

/** Another store on the file (another process's view: its own connections). */
function open(file: string): SqliteStore {
  const store = openSqliteStore(file, { synchronous: 'OFF', flush: false });
  opened.push(store);
  return store;
}

interface Worker {
  store: Store;
  feed: ChangeFeed;
  access: AccessService;
}

async function worker(file: string, options: Parameters<typeof createChangeFeed>[1] & { withProbe?: boolean } = {}): Promise<Worker> {
  const store = open(file);
  const feed = createChangeFeed(store, { ...options, probe: options.withProbe ? store.commitMark : options.probe });
  const access = createAccessService(store, clock, feed);
  await access.load();
  return { store, feed, access };
}

// ---- writes as the domain services do them: store rows and the access call in one transaction ----------

async function putIdentity(w: Worker, id: string, attrs: string[]): Promise<void> {
  await w.store.write(async (tx) => {
    await tx.run("INSERT INTO identities (id, name, type_id, created_at, updated_at) VALUES (?, ?, 'Default', ?, ?) ON CONFLICT(id) DO NOTHING", [id, id, T0, T0]);
    await tx.run('DELETE FROM identity_role_attributes WHERE identity_id = ?', [id]);
    for (const a of attrs) await tx.run('INSERT INTO identity_role_attributes (identity_id, attribute) VALUES (?, ?)', [id, a]);
    await w.access.entityChanged(tx, 'identity', id, attrs);
  });
}

async function deleteIdentity(w: Worker, id: string): Promise<void> {
  await w.store.write(async (tx) => {
    await w.access.entityRemoved(tx, 'identity', id);
    await tx.run('DELETE FROM identities WHERE id = ?', [id]);
  });
}

async function putService(w: Worker, id: string, attrs: string[]): Promise<void> {
  await w.store.write(async (tx) => {
    await tx.run('INSERT INTO services (id, name, role_attributes, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [id, id, JSON.stringify(attrs), T0, T0]);
    for (const a of attrs) await tx.run('INSERT INTO service_role_attributes (service_id, attribute) VALUES (?, ?)', [id, a]);
    await w.access.entityChanged(tx, 'service', id, attrs);
  });
}

async function putDialPolicy(w: Worker, id: string, identityRoles: string[], serviceRoles: string[]): Promise<void> {
  await w.store.write(async (tx) => {
    await tx.run(
      `INSERT INTO service_policies (id, name, policy_type, semantic, identity_roles, service_roles, created_at, updated_at)
         VALUES (?, ?, 'Dial', 'AnyOf', ?, ?, ?, ?)
         ON CONFLICT(id) DO UPDATE SET identity_roles = excluded.identity_roles, service_roles = excluded.service_roles`,
      [id, id, JSON.stringify(identityRoles), JSON.stringify(serviceRoles), T0, T0],
    );
    const input: PolicyInput = { id, kind: 'servicePolicy', semantic: 'AnyOf', type: 'Dial', roles: { identityRoles, serviceRoles } };
    await w.access.policyChanged(tx, input);
  });
}

async function deletePolicy(w: Worker, id: string): Promise<void> {
  await w.store.write(async (tx) => {
    await w.access.policyRemoved(tx, id);
    await tx.run('DELETE FROM service_policies WHERE id = ?', [id]);
  });
}

function services(w: Worker, identityId: string): string[] {
  return [...w.access.index.servicesOfIdentity(identityId)].sort();
}

/** The answers of a worker's index equal those of an index freshly loaded from the store. */
async function assertMatchesStore(w: Worker, file: string, identities: string[]): Promise<void> {
  const fresh = createAccessService(open(file), clock);
  await fresh.load();
  for (const id of identities) {
    assert.deepEqual(services(w, id), [...fresh.index.servicesOfIdentity(id)].sort(), `services of ${id}`);
    assert.equal(w.access.index.hasEntity('identity', id), fresh.index.hasEntity('identity', id), `identity ${id} known`);
  }
}

describe('change feed between two workers', () => {
  it('applies the other worker’s writes in order, re-reading each record', async () => {
    const file = await newFile();
    const a = await worker(file);
    const b = await worker(file);
    await putIdentity(a, 'i1', ['sales']);
    await putService(a, 's1', ['crm']);
    await putDialPolicy(a, 'p1', ['#sales'], ['#crm']);
    assert.deepEqual(services(a, 'i1'), ['s1']);
    assert.deepEqual(services(b, 'i1'), [], 'not applied before catching up');
    assert.equal(await b.feed.catchUp(), true);
    assert.deepEqual(services(b, 'i1'), ['s1']);

    // An attribute change, a policy narrowed to an @id, then the identity deleted and re-created with the same id.
    await putIdentity(a, 'i2', ['ops']);
    await putIdentity(a, 'i1', ['ops']);
    await putDialPolicy(a, 'p1', ['@i1'], ['#crm']);
    await deleteIdentity(a, 'i1');
    await putIdentity(a, 'i1', ['sales']);
    await b.feed.catchUp();
    assert.deepEqual(services(b, 'i1'), [], 'the @i1 role went with the deleted identity');
    assert.deepEqual(services(b, 'i2'), []);
    await assertMatchesStore(b, file, ['i1', 'i2']);

    await deletePolicy(a, 'p1');
    await putDialPolicy(a, 'p2', ['#sales', '#ops'], ['@s1']);
    await b.feed.catchUp();
    assert.deepEqual(services(b, 'i1'), ['s1']);
    assert.deepEqual(services(b, 'i2'), ['s1']);
    await assertMatchesStore(b, file, ['i1', 'i2']);
    assert.deepEqual(b.feed.state(), { position: await a.feed.head(), gaps: [] });
  });

  it('skips its own rows and catches up inside its write transactions', async () => {
    const file = await newFile();
    const applied: FeedEntry[][] = [];
    const a = await worker(file, { withProbe: true });
    const b = await worker(file, { withProbe: true });
    await b.feed.catchUp();
    await putIdentity(a, 'i1', ['x']);
    await putService(a, 's1', ['y']);
    // b writes next: its first access write catches up under the write lock, so the change marks it
    // computes (identities whose services changed) already see a's identity.
    await putDialPolicy(b, 'p1', ['#x'], ['#y']);
    assert.deepEqual(services(b, 'i1'), ['s1']);
    const mark = await b.store.get('SELECT changed_at FROM identity_service_marks WHERE identity_id = ?', ['i1']);
    assert.ok(mark, 'the identity written by the other worker was marked');

    // a sees b's policy; b's catch-up reads nothing foreign (its own row is skipped).
    await a.feed.catchUp();
    assert.deepEqual(services(a, 'i1'), ['s1']);
    const spy = createChangeFeed(b.store, { origin: b.feed.origin });
    spy.subscribe({
      apply: (e) => {
        applied.push([...e]);
      },
      reload: async (q) => spy.loaded(await spy.head(q), q),
    });
    await spy.loaded(0);
    await spy.catchUp();
    assert.deepEqual(
      applied.flat().map((e) => [e.kind, e.entityId, e.op]),
      [
        ['identity', 'i1', 'set'],
        ['service', 's1', 'set'],
      ],
      'only the other origin’s rows, in seq order',
    );
  });

  it('does not read while the commit probe is unchanged', async () => {
    const file = await newFile();
    const a = await worker(file);
    const b = await worker(file, { probe: undefined });
    const store = open(file);
    let reads = 0;
    const probe = store.commitMark;
    const c = createChangeFeed(store, { probe });
    c.subscribe({
      apply: () => {
        reads++;
      },
      reload: async (q) => c.loaded(await c.head(q), q),
    });
    await c.loaded(await c.head());
    assert.equal(await c.catchUp(), false);
    // Not awaited on purpose: with the mark unchanged the answer is a plain `false`, no promise, no read.
    assert.equal(c.catchUp(), false, 'nothing committed elsewhere: nothing read');
    await putIdentity(a, 'i1', ['x']);
    assert.equal(await c.catchUp(), true);
    assert.equal(reads, 1);
    assert.equal(c.catchUp(), false);
    await b.feed.catchUp();
    assert.ok(b.access.index.hasEntity('identity', 'i1'));
  });
});

describe('trimming', () => {
  it('deletes old rows, records the mark, and a reader behind it rebuilds from the store', async () => {
    const file = await newFile();
    let now = Date.parse(T0);
    const a = await worker(file, { now: () => now, retentionMs: 60_000 });
    const b = await worker(file, { now: () => now });
    await putIdentity(a, 'i1', ['x']);
    await putService(a, 's1', ['y']);
    await b.feed.catchUp();
    await putDialPolicy(a, 'p1', ['#x'], ['#y']);
    const head = await a.feed.head();

    now += 30_000;
    assert.equal(await a.feed.trim(), 0, 'nothing older than the retention yet');
    await putIdentity(a, 'i2', ['x']);
    now += 45_000;
    assert.equal(await a.feed.trim(), 3, 'the three rows older than a minute');
    assert.equal(await a.store.value('SELECT trimmed_through FROM change_feed_trim'), head);
    assert.deepEqual(await a.store.column('SELECT entity_id FROM change_feed'), ['i2']);

    // b had read up to the service only: it missed the trimmed policy row and rebuilds.
    let reloads = 0;
    const c = await worker(file, { now: () => now });
    // The reload reads in the view the feed hands it (the feed's snapshot is open meanwhile).
    c.feed.subscribe({ apply: () => assert.fail('behind a trim: no row by row apply'), reload: (q) => (reloads++, c.access.load(q)) });
    await c.feed.loaded(1);
    await c.feed.catchUp();
    assert.equal(reloads, 1);
    assert.deepEqual(services(c, 'i1'), ['s1']);
    await b.feed.catchUp();
    assert.deepEqual(services(b, 'i1'), ['s1']);
    assert.deepEqual(services(b, 'i2'), ['s1']);
    assert.equal(b.feed.state().position, await a.feed.head());

    // Everything trimmed: the head stays at the mark and new rows continue above it (seqs never reused).
    now += 120_000;
    await a.feed.trim();
    assert.equal(await a.store.value('SELECT COUNT(*) FROM change_feed'), 0);
    assert.equal(await a.feed.head(), head + 1);
    await putIdentity(a, 'i3', ['x']);
    assert.equal(await a.feed.head(), head + 2);
    await b.feed.catchUp();
    assert.deepEqual(services(b, 'i3'), ['s1']);
  });
});

describe('out-of-order commits (as a shared PostgreSQL store may show them)', () => {
  it('remembers a missing seq, applies it when it appears, and stops waiting after gapWaitMs', async () => {
    const file = await newFile();
    let now = Date.parse(T0);
    const store = open(file);
    const seen: number[] = [];
    const feed = createChangeFeed(store, { now: () => now, gapWaitMs: 60_000 });
    feed.subscribe({
      apply: (entries) => {
        seen.push(...entries.map((e) => e.seq));
      },
      reload: async (q) => feed.loaded(await feed.head(q), q),
    });
    await feed.loaded(await feed.head());
    const insert = (seq: number, at: string) =>
      store.write((tx) => tx.run("INSERT INTO change_feed (seq, kind, entity_id, op, origin, created_at) VALUES (?, 'identity', 'x', 'set', 'other', ?)", [seq, at]));
    const base = await feed.head();
    await insert(base + 1, T0);
    await insert(base + 3, T0);
    await feed.catchUp();
    assert.deepEqual(seen, [base + 1, base + 3]);
    assert.deepEqual(feed.state(), { position: base + 3, gaps: [base + 2] });

    // The slower transaction commits: its row is applied though it is below the position.
    await insert(base + 2, T0);
    await insert(base + 5, T0);
    await feed.catchUp();
    assert.deepEqual(seen, [base + 1, base + 3, base + 2, base + 5]);
    assert.deepEqual(feed.state(), { position: base + 5, gaps: [base + 4] });

    // A seq that never commits (rolled back) is forgotten after the wait.
    now += 61_000;
    await feed.catchUp();
    assert.deepEqual(feed.state(), { position: base + 5, gaps: [] });
  });

  it('treats seqs missing just below the head at a full load as gaps', async () => {
    const file = await newFile();
    const store = open(file);
    const feed = createChangeFeed(store);
    const insert = (seq: number, at: string) =>
      store.write((tx) => tx.run("INSERT INTO change_feed (seq, kind, entity_id, op, origin, created_at) VALUES (?, 'identity', 'x', 'set', 'other', ?)", [seq, at]));
    await insert(10, T0);
    await insert(12, T0);
    await feed.loaded(await feed.head());
    assert.deepEqual(feed.state().position, 12);
    assert.ok(feed.state().gaps.includes(11));
    assert.ok(!feed.state().gaps.includes(10) && !feed.state().gaps.includes(12));
  });
});

describe('full reload rows', () => {
  it('a reload row makes the other worker rebuild its index', async () => {
    const file = await newFile();
    const a = await worker(file);
    const b = await worker(file);
    await putIdentity(a, 'i1', ['x']);
    await putService(a, 's1', ['y']);
    await b.feed.catchUp();
    // A repair rewrites the store behind the index's back (as the integrity fix does) and reloads.
    await a.store.write(async (tx) => {
      await tx.run(
        "INSERT INTO service_policies (id, name, policy_type, semantic, identity_roles, service_roles, created_at, updated_at) VALUES ('p1', 'p1', 'Dial', 'AnyOf', '[\"#x\"]', '[\"#y\"]', ?, ?)",
        [T0, T0],
      );
      await a.access.reload(tx);
    });
    assert.deepEqual(services(a, 'i1'), ['s1']);
    await b.feed.catchUp();
    assert.deepEqual(services(b, 'i1'), ['s1']);
  });
});
