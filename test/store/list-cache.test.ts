/**
 * The list cache behind selectPage (src/store/list-cache.ts) against a real store file: a query asked again
 * at an unchanged table counter is answered from the remembered rowid list, any insert, update or delete
 * (through this connection or another one) makes the next answer current, queries that read another table
 * or run inside a transaction are never cached, and over random filters, sorts, pages and writes every
 * answer equals the plain one-query form.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, closeDatabase, type Db } from '../../src/store/database.ts';
import { migrate } from '../../src/store/migrate.ts';
import { withTransaction } from '../../src/store/transaction.ts';
import { deleteEntity, insertEntity, selectPage, updateEntity, type PageQuery } from '../../src/store/entity-table.ts';
import { listCacheStats } from '../../src/store/list-cache.ts';
import { bootstrapRecords } from '../../src/system/bootstrap.ts';
import { compileListQuery } from '../../src/query/index.ts';
import { identityResource } from '../../src/resources/identities/identity.resource.ts';
import { mulberry32 } from '../support/prng.ts';

const decl = identityResource.decl;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');

interface Store {
  db: Db;
  file: string;
  /** A second connection to the same file (another process's view). */
  other(): Db;
}

async function store(): Promise<Store> {
  const dir = mkdtempSync(join(tmpdir(), 'list-cache-'));
  const file = join(dir, 'store.db');
  const db = openDatabase(file);
  migrate(db);
  await bootstrapRecords(db, { username: 'admin', password: 'admin-password' });
  const connections = [db];
  cleanups.push(() => {
    for (const d of connections) closeDatabase(d);
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    db,
    file,
    other() {
      const d = openDatabase(file);
      connections.push(d);
      return d;
    },
  };
}

const cleanups: Array<() => void> = [];
after(() => {
  for (const fn of cleanups) fn();
});

let serial = 0;
function addIdentity(db: Db, fields: { name?: string; isAdmin?: boolean; cost?: number; env?: string; attrs?: string[] } = {}): string {
  serial += 1;
  const id = `id${String(serial).padStart(5, '0')}`;
  const at = new Date(T0 + serial * 1000).toISOString();
  withTransaction(db, (tx) =>
    insertEntity(tx, decl, {
      id,
      name: fields.name ?? `name-${serial}`,
      type: 'Default',
      isAdmin: fields.isAdmin ?? false,
      isDefaultAdmin: false,
      defaultHostingCost: fields.cost ?? serial % 7,
      roleAttributes: fields.attrs ?? [],
      tags: fields.env === undefined ? {} : { env: fields.env },
      createdAt: at,
      updatedAt: at,
    }),
  );
  return id;
}

function update(db: Db, id: string, changes: Record<string, unknown>): void {
  withTransaction(db, (tx) => updateEntity(tx, decl, id, changes, new Date(T0 + ++serial * 1000).toISOString()));
}

function remove(db: Db, id: string): void {
  withTransaction(db, (tx) => deleteEntity(tx, decl, id));
}

function query(filter: string, paging: { limit?: number; offset?: number } = {}): PageQuery {
  const q = compileListQuery(identityResource.symbols, { filter, limit: paging.limit ?? 25, offset: paging.offset ?? 0 });
  return { where: q.where, params: q.params, orderBy: q.orderBy, limit: q.limit, offset: q.offset };
}

/** The plain one-query answer, read without selectPage: what every cached answer must equal. */
function reference(db: Db, q: PageQuery): { rows: Array<Record<string, unknown>>; totalCount: number } {
  const totalCount = (db.prepare(`SELECT COUNT(*) AS n FROM identities e WHERE ${q.where}`).get(...q.params) as { n: number }).n;
  const rows =
    q.limit === 0
      ? []
      : (db.prepare(`SELECT e.* FROM identities e WHERE ${q.where} ORDER BY ${q.orderBy} LIMIT ? OFFSET ?`).all(...q.params, q.limit, q.offset) as Array<
          Record<string, unknown>
        >);
  return { rows, totalCount };
}

function names(page: { rows: Array<Record<string, unknown>> }): string[] {
  return page.rows.map((r) => r.name as string);
}

test('a query asked again is answered from the remembered list, identical to the one-query form', async () => {
  const { db } = await store();
  for (let i = 0; i < 60; i++) addIdentity(db, { isAdmin: i % 5 === 0 });
  const before = listCacheStats(db);
  const pages: Array<ReturnType<typeof selectPage>> = [];
  for (const offset of [0, 25, 40, 48, 100]) {
    const q = query('isAdmin = false sort by name desc', { offset });
    const page = selectPage(db, 'identities', q);
    assert.deepEqual(page, reference(db, q), `offset ${offset}`);
    pages.push(page);
  }
  const after = listCacheStats(db);
  assert.equal(after.builds - before.builds, 1, 'the second ask builds the list once');
  assert.equal(after.hits - before.hits, 3, 'later asks find it');
  assert.equal(pages[0]!.totalCount, 48);
  assert.equal(pages[0]!.rows.length, 25);
  assert.equal(pages[3]!.rows.length, 0, 'offset at the end: empty page');
  assert.equal(pages[4]!.rows.length, 0, 'offset past the end: empty page');
  // limit 0 and an unlimited page come from the same list.
  for (const limit of [0, -1, 1]) {
    const q = { ...query('isAdmin = false sort by name desc', { offset: 3 }), limit };
    assert.deepEqual(selectPage(db, 'identities', q), reference(db, q), `limit ${limit}`);
  }
  assert.equal(listCacheStats(db).hits - after.hits, 3);
});

test('inserts, updates and deletes through this connection change the next page', async () => {
  const { db } = await store();
  const ids: string[] = [];
  for (let i = 0; i < 30; i++) ids.push(addIdentity(db));
  const q = query('isAdmin = false sort by name asc', { limit: 5 });
  const before = listCacheStats(db);
  selectPage(db, 'identities', q);
  const cached = selectPage(db, 'identities', q);
  assert.deepEqual(selectPage(db, 'identities', q), cached);
  assert.equal(listCacheStats(db).hits, before.hits + 1);

  addIdentity(db, { name: 'aaa-first' });
  const afterInsert = selectPage(db, 'identities', q);
  assert.deepEqual(afterInsert, reference(db, q));
  assert.equal(afterInsert.totalCount, cached.totalCount + 1);
  assert.equal(names(afterInsert)[0], 'aaa-first');

  update(db, ids[10]!, { name: 'aaa-0-renamed' });
  selectPage(db, 'identities', q);
  const afterUpdate = selectPage(db, 'identities', q); // rebuilt at the new counter
  assert.deepEqual(afterUpdate, reference(db, q));
  assert.equal(names(afterUpdate)[0], 'aaa-0-renamed');

  update(db, ids[10]!, { isAdmin: true });
  const afterFlag = selectPage(db, 'identities', q);
  assert.deepEqual(afterFlag, reference(db, q));
  assert.ok(!names(afterFlag).includes('aaa-0-renamed'), 'an update that makes a row stop matching removes it');

  remove(db, ids[11]!);
  const afterDelete = selectPage(db, 'identities', q);
  assert.deepEqual(afterDelete, reference(db, q));
  assert.equal(afterDelete.totalCount, cached.totalCount - 1, 'one inserted, one no longer matching, one deleted');
  assert.equal(listCacheStats(db).builds, before.builds + 2, 'built before the writes and again after the rename');
});

test("another connection's writes change the next page", async () => {
  const s = await store();
  const { db } = s;
  const other = s.other();
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) ids.push(addIdentity(db));
  const q = query('true sort by name desc', { limit: 3, offset: 2 });
  selectPage(db, 'identities', q);
  const cached = selectPage(db, 'identities', q);
  assert.deepEqual(selectPage(db, 'identities', q), cached);
  const hits = listCacheStats(db).hits;
  assert.ok(hits > 0);

  addIdentity(other, { name: 'zzz-top' });
  const afterInsert = selectPage(db, 'identities', q);
  assert.deepEqual(afterInsert, reference(db, q));
  assert.equal(afterInsert.totalCount, cached.totalCount + 1);
  assert.notDeepEqual(names(afterInsert), names(cached), 'the new top row shifts the page');

  selectPage(db, 'identities', q); // rebuild at the new counter
  update(other, ids[19]!, { name: 'zzz-renamed' });
  assert.deepEqual(selectPage(db, 'identities', q), reference(db, q));

  selectPage(db, 'identities', q);
  remove(other, ids[18]!);
  const afterDelete = selectPage(db, 'identities', q);
  assert.deepEqual(afterDelete, reference(db, q));
  assert.equal(afterDelete.totalCount, cached.totalCount);
});

test('a query that reads another table is never cached', async () => {
  const { db } = await store();
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) ids.push(addIdentity(db, { attrs: i % 2 === 0 ? ['even'] : ['odd'] }));
  const q = query('anyOf(roleAttributes) = "even" sort by name asc');
  const before = listCacheStats(db);
  for (let i = 0; i < 3; i++) assert.deepEqual(selectPage(db, 'identities', q), reference(db, q));
  assert.equal(selectPage(db, 'identities', q).totalCount, 6);
  // The side table changes, the identities counter does not: a cached answer would now be stale.
  db.prepare("INSERT INTO identity_role_attributes (identity_id, attribute) VALUES (?, 'even')").run(ids[1]);
  const page = selectPage(db, 'identities', q);
  assert.equal(page.totalCount, 7);
  assert.deepEqual(page, reference(db, q));
  const after = listCacheStats(db);
  assert.equal(after.builds, before.builds, 'nothing built');
  assert.equal(after.hits, before.hits, 'nothing found');

  // The same table with a plain filter is cached, so the rule (not the table) made the difference.
  const plain = query('name contains "name" sort by name asc');
  for (let i = 0; i < 3; i++) selectPage(db, 'identities', plain);
  assert.equal(listCacheStats(db).builds, after.builds + 1);
});

test('a volatile function in the condition is never cached', async () => {
  const { db } = await store();
  for (let i = 0; i < 5; i++) addIdentity(db);
  const q: PageQuery = { where: "e.created_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now')", params: [], orderBy: 'e.id ASC', limit: 10, offset: 0 };
  const before = listCacheStats(db);
  for (let i = 0; i < 3; i++) assert.deepEqual(selectPage(db, 'identities', q), reference(db, q));
  assert.equal(listCacheStats(db).builds, before.builds);
});

test('inside a transaction the cache is neither read nor filled', async () => {
  const { db } = await store();
  for (let i = 0; i < 10; i++) addIdentity(db);
  const q = query('true sort by name asc');
  selectPage(db, 'identities', q);
  selectPage(db, 'identities', q);
  const before = listCacheStats(db);
  assert.throws(() =>
    db.transaction(() => {
      db.prepare("INSERT INTO identities (id, name, type_id, created_at, updated_at) VALUES ('tx1', 'aaa-uncommitted', 'Default', 'x', 'x')").run();
      const inside = selectPage(db, 'identities', q);
      assert.equal(names(inside)[0], 'aaa-uncommitted', 'its own uncommitted row is seen');
      selectPage(db, 'identities', q);
      throw new Error('roll back');
    })(),
  );
  assert.deepEqual(listCacheStats(db), before);
  const page = selectPage(db, 'identities', q);
  assert.deepEqual(page, reference(db, q));
  assert.ok(!names(page).includes('aaa-uncommitted'));
});

test('random filters, sorts and pages with writes in between equal the one-query form', async () => {
  const s = await store();
  const { db } = s;
  const other = s.other();
  const rand = mulberry32(20260301);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const envs = ['prod', 'dev', 'test'];
  const live: string[] = [];
  for (let i = 0; i < 120; i++) live.push(addIdentity(db, { isAdmin: rand() < 0.2, env: rand() < 0.7 ? pick(envs) : undefined, attrs: rand() < 0.5 ? ['a'] : [] }));

  const filters = [
    'true',
    'isAdmin = false',
    'isAdmin = true',
    'defaultHostingCost >= 3',
    'tags.env = "prod"',
    'tags.env = null',
    'name contains "1"',
    'isAdmin = false and defaultHostingCost < 4',
    'anyOf(roleAttributes) = "a"',
    `createdAt > datetime(${new Date(T0 + 60_000).toISOString()})`,
  ];
  const sorts = ['', ' sort by name desc', ' sort by name asc', ' sort by defaultHostingCost desc', ' sort by isAdmin asc, createdAt desc', ' sort by externalId asc'];
  // A small pool of queries so that the same one is asked again at the same counter.
  const pool = Array.from({ length: 14 }, () => pick(filters) + pick(sorts));
  const before = listCacheStats(db);
  let compared = 0;
  for (let step = 0; step < 600; step++) {
    const r = rand();
    if (r < 0.08) {
      const writer = rand() < 0.5 ? db : other;
      const w = rand();
      if (w < 0.4 || live.length < 20) live.push(addIdentity(writer, { isAdmin: rand() < 0.2, env: rand() < 0.5 ? pick(envs) : undefined }));
      else if (w < 0.8) update(writer, pick(live), rand() < 0.5 ? { name: `renamed-${step}` } : { defaultHostingCost: Math.floor(rand() * 7), isAdmin: rand() < 0.3 });
      else {
        const i = Math.floor(rand() * live.length);
        remove(writer, live[i]!);
        live.splice(i, 1);
      }
      continue;
    }
    const limit = pick([25, 10, 1, 0, -1, 7]);
    const offset = pick([0, 0, 5, 25, 60, 110, 500, Math.floor(rand() * 130)]);
    const q = query(pick(pool), { limit: limit < 0 ? undefined : limit, offset });
    if (limit < 0) q.limit = -1;
    assert.deepEqual(selectPage(db, 'identities', q), reference(db, q), `step ${step}: ${q.where} / ${q.orderBy} / ${q.limit} @ ${q.offset}`);
    compared += 1;
  }
  const after = listCacheStats(db);
  assert.ok(compared > 400);
  assert.ok(after.builds - before.builds > 20, `lists built: ${after.builds - before.builds}`);
  assert.ok(after.hits - before.hits > 50, `answers from the cache: ${after.hits - before.hits}`);
});
