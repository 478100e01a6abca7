/**
 * The list cache behind selectPage (src/store/list-cache.ts) against a real store file: a query asked again
 * at an unchanged table counter is answered from the remembered rowid list, any insert, update or delete
 * (through this store or another one on the same file) makes the next answer current, queries that read another table
 * or run inside a transaction are never cached, and over random filters, sorts, pages and writes every
 * answer equals the plain one-query form.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite-store.ts';
import { migrate } from '../../src/store/migrate.ts';
import type { PageRows, Row } from '../../src/store/store.ts';
import { deleteEntity, insertEntity, selectPage, updateEntity, type PageQuery } from '../../src/store/entity-table.ts';
import { listCacheStats as connectionStats, type ListCacheStats } from '../../src/store/list-cache.ts';
import { bootstrapRecords } from '../../src/system/bootstrap.ts';
import { compileListQuery } from '../../src/query/index.ts';
import { identityResource } from '../../src/resources/identities/identity.resource.ts';
import { mulberry32 } from '../support/prng.ts';

const decl = identityResource.decl;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');

interface Fixture {
  /** The store under test: pages are read through its read connection, whose list cache is counted. */
  store: SqliteStore;
  file: string;
  /** A second store on the same file (another process's view, with its own connections). */
  other(): SqliteStore;
}

async function openFixture(): Promise<Fixture> {
  const dir = mkdtempSync(join(tmpdir(), 'list-cache-'));
  const file = join(dir, 'store.db');
  const store = openSqliteStore(file);
  migrate(store.db);
  await bootstrapRecords(store, { username: 'admin', password: 'admin-password' });
  const stores = [store];
  cleanups.push(async () => {
    for (const d of stores) await d.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    store,
    file,
    other() {
      const d = openSqliteStore(file);
      stores.push(d);
      return d;
    },
  };
}

const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const fn of cleanups) await fn();
});

/** The list-cache counters of the connection the store reads pages on (outside a transaction). */
function listCacheStats(store: SqliteStore): ListCacheStats {
  return connectionStats(store.reader);
}

let serial = 0;
async function addIdentity(store: SqliteStore, fields: { name?: string; isAdmin?: boolean; cost?: number; env?: string; attrs?: string[] } = {}): Promise<string> {
  serial += 1;
  const id = `id${String(serial).padStart(5, '0')}`;
  const at = new Date(T0 + serial * 1000).toISOString();
  await store.write((tx) =>
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

async function update(store: SqliteStore, id: string, changes: Record<string, unknown>): Promise<void> {
  await store.write((tx) => updateEntity(tx, decl, id, changes, new Date(T0 + ++serial * 1000).toISOString()));
}

async function remove(store: SqliteStore, id: string): Promise<void> {
  await store.write((tx) => deleteEntity(tx, decl, id));
}

function query(filter: string, paging: { limit?: number; offset?: number } = {}): PageQuery {
  const q = compileListQuery(identityResource.symbols, { filter, limit: paging.limit ?? 25, offset: paging.offset ?? 0 });
  return { where: q.where, params: q.params, orderBy: q.orderBy, limit: q.limit, offset: q.offset };
}

/** The plain one-query answer, read without selectPage: what every cached answer must equal. */
async function reference(store: SqliteStore, q: PageQuery): Promise<PageRows> {
  const totalCount = (await store.get<{ n: number }>(`SELECT COUNT(*) AS n FROM identities e WHERE ${q.where}`, q.params))!.n;
  const rows = q.limit === 0 ? [] : await store.all<Row>(`SELECT e.* FROM identities e WHERE ${q.where} ORDER BY ${q.orderBy} LIMIT ? OFFSET ?`, [...q.params, q.limit, q.offset]);
  return { rows, totalCount };
}

function names(page: { rows: Array<Record<string, unknown>> }): string[] {
  return page.rows.map((r) => r.name as string);
}

test('a query asked again is answered from the remembered list, identical to the one-query form', async () => {
  const { store } = await openFixture();
  for (let i = 0; i < 60; i++) await addIdentity(store, { isAdmin: i % 5 === 0 });
  const before = listCacheStats(store);
  const pages: PageRows[] = [];
  for (const offset of [0, 25, 40, 48, 100]) {
    const q = query('isAdmin = false sort by name desc', { offset });
    const page = await store.page('identities', q);
    assert.deepEqual(page, await reference(store, q), `offset ${offset}`);
    pages.push(page);
  }
  const after = listCacheStats(store);
  assert.equal(after.builds - before.builds, 1, 'the second ask builds the list once');
  assert.equal(after.hits - before.hits, 3, 'later asks find it');
  assert.equal(pages[0]!.totalCount, 48);
  assert.equal(pages[0]!.rows.length, 25);
  assert.equal(pages[3]!.rows.length, 0, 'offset at the end: empty page');
  assert.equal(pages[4]!.rows.length, 0, 'offset past the end: empty page');
  // limit 0 and an unlimited page come from the same list.
  for (const limit of [0, -1, 1]) {
    const q = { ...query('isAdmin = false sort by name desc', { offset: 3 }), limit };
    assert.deepEqual(await store.page('identities', q), await reference(store, q), `limit ${limit}`);
  }
  assert.equal(listCacheStats(store).hits - after.hits, 3);
});

test('inserts, updates and deletes through this store change the next page', async () => {
  const { store } = await openFixture();
  const ids: string[] = [];
  for (let i = 0; i < 30; i++) ids.push(await addIdentity(store));
  const q = query('isAdmin = false sort by name asc', { limit: 5 });
  const before = listCacheStats(store);
  await store.page('identities', q);
  const cached = await store.page('identities', q);
  assert.deepEqual(await store.page('identities', q), cached);
  assert.equal(listCacheStats(store).hits, before.hits + 1);

  await addIdentity(store, { name: 'aaa-first' });
  const afterInsert = await store.page('identities', q);
  assert.deepEqual(afterInsert, await reference(store, q));
  assert.equal(afterInsert.totalCount, cached.totalCount + 1);
  assert.equal(names(afterInsert)[0], 'aaa-first');

  await update(store, ids[10]!, { name: 'aaa-0-renamed' });
  await store.page('identities', q);
  const afterUpdate = await store.page('identities', q); // rebuilt at the new counter
  assert.deepEqual(afterUpdate, await reference(store, q));
  assert.equal(names(afterUpdate)[0], 'aaa-0-renamed');

  await update(store, ids[10]!, { isAdmin: true });
  const afterFlag = await store.page('identities', q);
  assert.deepEqual(afterFlag, await reference(store, q));
  assert.ok(!names(afterFlag).includes('aaa-0-renamed'), 'an update that makes a row stop matching removes it');

  await remove(store, ids[11]!);
  const afterDelete = await store.page('identities', q);
  assert.deepEqual(afterDelete, await reference(store, q));
  assert.equal(afterDelete.totalCount, cached.totalCount - 1, 'one inserted, one no longer matching, one deleted');
  assert.equal(listCacheStats(store).builds, before.builds + 2, 'built before the writes and again after the rename');
});

test("another store's writes (another process) change the next page", async () => {
  const s = await openFixture();
  const { store } = s;
  const other = s.other();
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) ids.push(await addIdentity(store));
  const q = query('true sort by name desc', { limit: 3, offset: 2 });
  await store.page('identities', q);
  const cached = await store.page('identities', q);
  assert.deepEqual(await store.page('identities', q), cached);
  const hits = listCacheStats(store).hits;
  assert.ok(hits > 0);

  await addIdentity(other, { name: 'zzz-top' });
  const afterInsert = await store.page('identities', q);
  assert.deepEqual(afterInsert, await reference(store, q));
  assert.equal(afterInsert.totalCount, cached.totalCount + 1);
  assert.notDeepEqual(names(afterInsert), names(cached), 'the new top row shifts the page');

  await store.page('identities', q); // rebuild at the new counter
  await update(other, ids[19]!, { name: 'zzz-renamed' });
  assert.deepEqual(await store.page('identities', q), await reference(store, q));

  await store.page('identities', q);
  await remove(other, ids[18]!);
  const afterDelete = await store.page('identities', q);
  assert.deepEqual(afterDelete, await reference(store, q));
  assert.equal(afterDelete.totalCount, cached.totalCount);
});

test('a query that reads another table is never cached', async () => {
  const { store } = await openFixture();
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) ids.push(await addIdentity(store, { attrs: i % 2 === 0 ? ['even'] : ['odd'] }));
  const q = query('anyOf(roleAttributes) = "even" sort by name asc');
  const before = listCacheStats(store);
  for (let i = 0; i < 3; i++) assert.deepEqual(await store.page('identities', q), await reference(store, q));
  assert.equal((await store.page('identities', q)).totalCount, 6);
  // The side table changes, the identities counter does not: a cached answer would now be stale.
  await store.write((tx) => tx.run("INSERT INTO identity_role_attributes (identity_id, attribute) VALUES (?, 'even')", [ids[1]]));
  const page = await store.page('identities', q);
  assert.equal(page.totalCount, 7);
  assert.deepEqual(page, await reference(store, q));
  const after = listCacheStats(store);
  assert.equal(after.builds, before.builds, 'nothing built');
  assert.equal(after.hits, before.hits, 'nothing found');

  // The same table with a plain filter is cached, so the rule (not the table) made the difference.
  const plain = query('name contains "name" sort by name asc');
  for (let i = 0; i < 3; i++) await store.page('identities', plain);
  assert.equal(listCacheStats(store).builds, after.builds + 1);
});

test('a volatile function in the condition is never cached', async () => {
  const { store } = await openFixture();
  for (let i = 0; i < 5; i++) await addIdentity(store);
  const q: PageQuery = { where: "e.created_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now')", params: [], orderBy: 'e.id ASC', limit: 10, offset: 0 };
  const before = listCacheStats(store);
  for (let i = 0; i < 3; i++) assert.deepEqual(await store.page('identities', q), await reference(store, q));
  assert.equal(listCacheStats(store).builds, before.builds);
});

test('inside a transaction the cache is neither read nor filled', async () => {
  const { store } = await openFixture();
  for (let i = 0; i < 10; i++) await addIdentity(store);
  const q = query('true sort by name asc');
  await store.page('identities', q);
  await store.page('identities', q);
  // A transaction reads on the write connection, which has a list cache of its own: fill that one too (outside
  // a transaction), so that a cached answer would be there for the transaction to find.
  selectPage(store.db, 'identities', q);
  selectPage(store.db, 'identities', q);
  const before = listCacheStats(store);
  const beforeWriter = connectionStats(store.db);
  assert.ok(beforeWriter.builds > 0);
  // The row's name sorts first under the binary collation names sort by (before 'Default Admin').
  await assert.rejects(
    store.write(async (tx) => {
      await tx.run("INSERT INTO identities (id, name, type_id, created_at, updated_at) VALUES ('tx1', 'AAA-uncommitted', 'Default', 'x', 'x')");
      const inside = await tx.page('identities', q);
      assert.equal(names(inside)[0], 'AAA-uncommitted', 'its own uncommitted row is seen');
      await tx.page('identities', q);
      throw new Error('roll back');
    }),
    /roll back/,
  );
  assert.deepEqual(listCacheStats(store), before);
  assert.deepEqual(connectionStats(store.db), beforeWriter);
  const page = await store.page('identities', q);
  assert.deepEqual(page, await reference(store, q));
  assert.ok(!names(page).includes('AAA-uncommitted'));
});

test('random filters, sorts and pages with writes in between equal the one-query form', async () => {
  const s = await openFixture();
  const { store } = s;
  const other = s.other();
  const rand = mulberry32(20260301);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const envs = ['prod', 'dev', 'test'];
  const live: string[] = [];
  for (let i = 0; i < 120; i++) live.push(await addIdentity(store, { isAdmin: rand() < 0.2, env: rand() < 0.7 ? pick(envs) : undefined, attrs: rand() < 0.5 ? ['a'] : [] }));

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
  const before = listCacheStats(store);
  let compared = 0;
  for (let step = 0; step < 600; step++) {
    const r = rand();
    if (r < 0.08) {
      const writer = rand() < 0.5 ? store : other;
      const w = rand();
      if (w < 0.4 || live.length < 20) live.push(await addIdentity(writer, { isAdmin: rand() < 0.2, env: rand() < 0.5 ? pick(envs) : undefined }));
      else if (w < 0.8) await update(writer, pick(live), rand() < 0.5 ? { name: `renamed-${step}` } : { defaultHostingCost: Math.floor(rand() * 7), isAdmin: rand() < 0.3 });
      else {
        const i = Math.floor(rand() * live.length);
        await remove(writer, live[i]!);
        live.splice(i, 1);
      }
      continue;
    }
    const limit = pick([25, 10, 1, 0, -1, 7]);
    const offset = pick([0, 0, 5, 25, 60, 110, 500, Math.floor(rand() * 130)]);
    const q = query(pick(pool), { limit: limit < 0 ? undefined : limit, offset });
    if (limit < 0) q.limit = -1;
    assert.deepEqual(await store.page('identities', q), await reference(store, q), `step ${step}: ${q.where} / ${q.orderBy} / ${q.limit} @ ${q.offset}`);
    compared += 1;
  }
  const after = listCacheStats(store);
  assert.ok(compared > 400);
  assert.ok(after.builds - before.builds > 20, `lists built: ${after.builds - before.builds}`);
  assert.ok(after.hits - before.hits > 50, `answers from the cache: ${after.hits - before.hits}`);
});
