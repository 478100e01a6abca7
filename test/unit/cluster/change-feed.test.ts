/**
 * The change feed between processes sharing one store, simulated with two connections to one database
 * file, each with its own feed and access service (as two workers have): writes through one are applied
 * by the other in order (including removals and re-creations), a reader skips its own rows, catches up
 * inside write transactions, rebuilds after falling behind a trim, waits for out-of-order seqs (as on
 * PostgreSQL), and does nothing while the commit probe says nobody else committed.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, closeDatabase, type Db } from '../../../src/store/database.ts';
import { migrate } from '../../../src/store/migrate.ts';
import { withTransaction } from '../../../src/store/transaction.ts';
import { createAccessService, type AccessService } from '../../../src/access/access.service.ts';
import { createChangeFeed, type ChangeFeed, type FeedEntry } from '../../../src/cluster/change-feed.ts';
import { sqliteCommitProbe } from '../../../src/cluster/commit-probe.ts';
import { bootstrapRecords } from '../../../src/system/bootstrap.ts';
import type { PolicyInput } from '../../../src/access/access-index.ts';

const T0 = '2026-01-01T00:00:00.000Z';
const clock = { now: () => new Date() };
const dir = mkdtempSync(join(tmpdir(), 'portcullis-feed-'));
const opened: Db[] = [];
after(() => {
  for (const db of opened) closeDatabase(db);
  rmSync(dir, { recursive: true, force: true });
});

let fileNo = 0;
async function newFile(): Promise<string> {
  const file = join(dir, `feed-${++fileNo}.db`);
  const db = open(file);
  migrate(db);
  await bootstrapRecords(db, { username: 'admin', password: 'admin-password' });
  // The seeded config types left rows for the router data model (migration 0029): start from an empty feed.
  db.exec("DELETE FROM change_feed; DELETE FROM sqlite_sequence WHERE name = 'change_feed'");
  return file;
}

function open(file: string): Db {
  const db = openDatabase(file, { synchronous: 'OFF' });
  opened.push(db);
  return db;
}

interface Worker {
  db: Db;
  feed: ChangeFeed;
  access: AccessService;
}

function worker(file: string, options: Parameters<typeof createChangeFeed>[1] & { withProbe?: boolean } = {}): Worker {
  const db = open(file);
  const feed = createChangeFeed(db, { ...options, probe: options.withProbe ? sqliteCommitProbe(db) : options.probe });
  const access = createAccessService(db, clock, feed);
  access.load();
  return { db, feed, access };
}

// ---- writes as the domain services do them: store rows and the access call in one transaction ----------

function putIdentity(w: Worker, id: string, attrs: string[]): void {
  withTransaction(w.db, (tx) => {
    tx.db.prepare("INSERT INTO identities (id, name, type_id, created_at, updated_at) VALUES (?, ?, 'Default', ?, ?) ON CONFLICT(id) DO NOTHING").run(id, id, T0, T0);
    tx.db.prepare('DELETE FROM identity_role_attributes WHERE identity_id = ?').run(id);
    for (const a of attrs) tx.db.prepare('INSERT INTO identity_role_attributes (identity_id, attribute) VALUES (?, ?)').run(id, a);
    w.access.entityChanged(tx, 'identity', id, attrs);
  });
}

function deleteIdentity(w: Worker, id: string): void {
  withTransaction(w.db, (tx) => {
    w.access.entityRemoved(tx, 'identity', id);
    tx.db.prepare('DELETE FROM identities WHERE id = ?').run(id);
  });
}

function putService(w: Worker, id: string, attrs: string[]): void {
  withTransaction(w.db, (tx) => {
    tx.db.prepare('INSERT INTO services (id, name, role_attributes, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(id, id, JSON.stringify(attrs), T0, T0);
    for (const a of attrs) tx.db.prepare('INSERT INTO service_role_attributes (service_id, attribute) VALUES (?, ?)').run(id, a);
    w.access.entityChanged(tx, 'service', id, attrs);
  });
}

function putDialPolicy(w: Worker, id: string, identityRoles: string[], serviceRoles: string[]): void {
  withTransaction(w.db, (tx) => {
    tx.db
      .prepare(
        `INSERT INTO service_policies (id, name, policy_type, semantic, identity_roles, service_roles, created_at, updated_at)
         VALUES (?, ?, 'Dial', 'AnyOf', ?, ?, ?, ?)
         ON CONFLICT(id) DO UPDATE SET identity_roles = excluded.identity_roles, service_roles = excluded.service_roles`,
      )
      .run(id, id, JSON.stringify(identityRoles), JSON.stringify(serviceRoles), T0, T0);
    const input: PolicyInput = { id, kind: 'servicePolicy', semantic: 'AnyOf', type: 'Dial', roles: { identityRoles, serviceRoles } };
    w.access.policyChanged(tx, input);
  });
}

function deletePolicy(w: Worker, id: string): void {
  withTransaction(w.db, (tx) => {
    w.access.policyRemoved(tx, id);
    tx.db.prepare('DELETE FROM service_policies WHERE id = ?').run(id);
  });
}

function services(w: Worker, identityId: string): string[] {
  return [...w.access.index.servicesOfIdentity(identityId)].sort();
}

/** The answers of a worker's index equal those of an index freshly loaded from the store. */
function assertMatchesStore(w: Worker, file: string, identities: string[]): void {
  const fresh = createAccessService(open(file), clock);
  fresh.load();
  for (const id of identities) {
    assert.deepEqual(services(w, id), [...fresh.index.servicesOfIdentity(id)].sort(), `services of ${id}`);
    assert.equal(w.access.index.hasEntity('identity', id), fresh.index.hasEntity('identity', id), `identity ${id} known`);
  }
}

describe('change feed between two workers', () => {
  it('applies the other worker’s writes in order, re-reading each record', async () => {
    const file = await newFile();
    const a = worker(file);
    const b = worker(file);
    putIdentity(a, 'i1', ['sales']);
    putService(a, 's1', ['crm']);
    putDialPolicy(a, 'p1', ['#sales'], ['#crm']);
    assert.deepEqual(services(a, 'i1'), ['s1']);
    assert.deepEqual(services(b, 'i1'), [], 'not applied before catching up');
    assert.equal(b.feed.catchUp(), true);
    assert.deepEqual(services(b, 'i1'), ['s1']);

    // An attribute change, a policy narrowed to an @id, then the identity deleted and re-created with the same id.
    putIdentity(a, 'i2', ['ops']);
    putIdentity(a, 'i1', ['ops']);
    putDialPolicy(a, 'p1', ['@i1'], ['#crm']);
    deleteIdentity(a, 'i1');
    putIdentity(a, 'i1', ['sales']);
    b.feed.catchUp();
    assert.deepEqual(services(b, 'i1'), [], 'the @i1 role went with the deleted identity');
    assert.deepEqual(services(b, 'i2'), []);
    assertMatchesStore(b, file, ['i1', 'i2']);

    deletePolicy(a, 'p1');
    putDialPolicy(a, 'p2', ['#sales', '#ops'], ['@s1']);
    b.feed.catchUp();
    assert.deepEqual(services(b, 'i1'), ['s1']);
    assert.deepEqual(services(b, 'i2'), ['s1']);
    assertMatchesStore(b, file, ['i1', 'i2']);
    assert.deepEqual(b.feed.state(), { position: a.feed.head(), gaps: [] });
  });

  it('skips its own rows and catches up inside its write transactions', async () => {
    const file = await newFile();
    const applied: FeedEntry[][] = [];
    const a = worker(file, { withProbe: true });
    const b = worker(file, { withProbe: true });
    b.feed.catchUp();
    putIdentity(a, 'i1', ['x']);
    putService(a, 's1', ['y']);
    // b writes next: its first access write catches up under the write lock, so the change marks it
    // computes (identities whose services changed) already see a's identity.
    putDialPolicy(b, 'p1', ['#x'], ['#y']);
    assert.deepEqual(services(b, 'i1'), ['s1']);
    const mark = b.db.prepare('SELECT changed_at FROM identity_service_marks WHERE identity_id = ?').get('i1');
    assert.ok(mark, 'the identity written by the other worker was marked');

    // a sees b's policy; b's catch-up reads nothing foreign (its own row is skipped).
    a.feed.catchUp();
    assert.deepEqual(services(a, 'i1'), ['s1']);
    const spy = createChangeFeed(b.db, { origin: b.feed.origin });
    spy.subscribe({ apply: (e) => applied.push([...e]), reload: () => spy.loaded(spy.head()) });
    spy.loaded(0);
    spy.catchUp();
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
    const a = worker(file);
    const b = worker(file, { probe: undefined });
    const db = open(file);
    let reads = 0;
    const probe = sqliteCommitProbe(db);
    const c = createChangeFeed(db, { probe });
    c.subscribe({ apply: () => reads++, reload: () => c.loaded(c.head()) });
    c.loaded(c.head());
    assert.equal(c.catchUp(), false);
    assert.equal(c.catchUp(), false, 'nothing committed elsewhere: nothing read');
    putIdentity(a, 'i1', ['x']);
    assert.equal(c.catchUp(), true);
    assert.equal(reads, 1);
    assert.equal(c.catchUp(), false);
    b.feed.catchUp();
    assert.ok(b.access.index.hasEntity('identity', 'i1'));
  });
});

describe('trimming', () => {
  it('deletes old rows, records the mark, and a reader behind it rebuilds from the store', async () => {
    const file = await newFile();
    let now = Date.parse(T0);
    const a = worker(file, { now: () => now, retentionMs: 60_000 });
    const b = worker(file, { now: () => now });
    putIdentity(a, 'i1', ['x']);
    putService(a, 's1', ['y']);
    b.feed.catchUp();
    putDialPolicy(a, 'p1', ['#x'], ['#y']);
    const head = a.feed.head();

    now += 30_000;
    assert.equal(a.feed.trim(), 0, 'nothing older than the retention yet');
    putIdentity(a, 'i2', ['x']);
    now += 45_000;
    assert.equal(a.feed.trim(), 3, 'the three rows older than a minute');
    assert.equal(a.db.prepare('SELECT trimmed_through FROM change_feed_trim').pluck().get(), head);
    assert.deepEqual(a.db.prepare('SELECT entity_id FROM change_feed').pluck().all(), ['i2']);

    // b had read up to the service only: it missed the trimmed policy row and rebuilds.
    let reloads = 0;
    const c = worker(file, { now: () => now });
    c.feed.subscribe({ apply: () => assert.fail('behind a trim: no row by row apply'), reload: () => (reloads++, c.access.load()) });
    c.feed.loaded(1);
    c.feed.catchUp();
    assert.equal(reloads, 1);
    assert.deepEqual(services(c, 'i1'), ['s1']);
    b.feed.catchUp();
    assert.deepEqual(services(b, 'i1'), ['s1']);
    assert.deepEqual(services(b, 'i2'), ['s1']);
    assert.equal(b.feed.state().position, a.feed.head());

    // Everything trimmed: the head stays at the mark and new rows continue above it (seqs never reused).
    now += 120_000;
    a.feed.trim();
    assert.equal(a.db.prepare('SELECT COUNT(*) FROM change_feed').pluck().get(), 0);
    assert.equal(a.feed.head(), head + 1);
    putIdentity(a, 'i3', ['x']);
    assert.equal(a.feed.head(), head + 2);
    b.feed.catchUp();
    assert.deepEqual(services(b, 'i3'), ['s1']);
  });
});

describe('out-of-order commits (as a shared PostgreSQL store may show them)', () => {
  it('remembers a missing seq, applies it when it appears, and stops waiting after gapWaitMs', async () => {
    const file = await newFile();
    let now = Date.parse(T0);
    const db = open(file);
    const seen: number[] = [];
    const feed = createChangeFeed(db, { now: () => now, gapWaitMs: 60_000 });
    feed.subscribe({ apply: (entries) => seen.push(...entries.map((e) => e.seq)), reload: () => feed.loaded(feed.head()) });
    feed.loaded(feed.head());
    const insert = db.prepare("INSERT INTO change_feed (seq, kind, entity_id, op, origin, created_at) VALUES (?, 'identity', 'x', 'set', 'other', ?)");
    const base = feed.head();
    insert.run(base + 1, T0);
    insert.run(base + 3, T0);
    feed.catchUp();
    assert.deepEqual(seen, [base + 1, base + 3]);
    assert.deepEqual(feed.state(), { position: base + 3, gaps: [base + 2] });

    // The slower transaction commits: its row is applied though it is below the position.
    insert.run(base + 2, T0);
    insert.run(base + 5, T0);
    feed.catchUp();
    assert.deepEqual(seen, [base + 1, base + 3, base + 2, base + 5]);
    assert.deepEqual(feed.state(), { position: base + 5, gaps: [base + 4] });

    // A seq that never commits (rolled back) is forgotten after the wait.
    now += 61_000;
    feed.catchUp();
    assert.deepEqual(feed.state(), { position: base + 5, gaps: [] });
  });

  it('treats seqs missing just below the head at a full load as gaps', async () => {
    const file = await newFile();
    const db = open(file);
    const feed = createChangeFeed(db);
    const insert = db.prepare("INSERT INTO change_feed (seq, kind, entity_id, op, origin, created_at) VALUES (?, 'identity', 'x', 'set', 'other', ?)");
    insert.run(10, T0);
    insert.run(12, T0);
    feed.loaded(feed.head());
    assert.deepEqual(feed.state().position, 12);
    assert.ok(feed.state().gaps.includes(11));
    assert.ok(!feed.state().gaps.includes(10) && !feed.state().gaps.includes(12));
  });
});

describe('full reload rows', () => {
  it('a reload row makes the other worker rebuild its index', async () => {
    const file = await newFile();
    const a = worker(file);
    const b = worker(file);
    putIdentity(a, 'i1', ['x']);
    putService(a, 's1', ['y']);
    b.feed.catchUp();
    // A repair rewrites the store behind the index's back (as the integrity fix does) and reloads.
    withTransaction(a.db, (tx) => {
      tx.db
        .prepare("INSERT INTO service_policies (id, name, policy_type, semantic, identity_roles, service_roles, created_at, updated_at) VALUES ('p1', 'p1', 'Dial', 'AnyOf', '[\"#x\"]', '[\"#y\"]', ?, ?)")
        .run(T0, T0);
      a.access.reload(tx);
    });
    assert.deepEqual(services(a, 'i1'), ['s1']);
    b.feed.catchUp();
    assert.deepEqual(services(b, 'i1'), ['s1']);
  });
});
