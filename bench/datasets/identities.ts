/**
 * Deterministic identity dataset for the benchmarks: N identities named identity-000001..., loaded through
 * the identity domain service (not raw SQL) into the store of the data dir: <dataDir>/portcullis.db, or the
 * PostgreSQL database of `databaseUrl` (which must hold no dataset yet). Each create is its own transaction
 * (the service opens it; on SQLite without fsync). A marker file in the data dir records what was loaded and
 * where, so an existing data dir with the same count and seed on the same store is reused as is.
 *
 * Run alone: node --import tsx bench/datasets/identities.ts [--identities N] [--data-dir DIR] [--database-url URL]
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { migrateStore, openStore } from '../../src/store/open-store.ts';
import { openSqliteStore } from '../../src/store/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { bootstrapRecords } from '../../src/system/bootstrap.ts';
import { createAccessService } from '../../src/access/access.service.ts';
import { systemClock } from '../../src/resources/entity-service.ts';
import { createIdentityService } from '../../src/resources/identities/identity.service.ts';
import { mulberry32 } from '../../test/support/prng.ts';

export const BENCH_ADMIN_PASSWORD = 'bench-admin-password';
export const SEED = 0x5eed_2025;
const MARKER = 'dataset.json';

export interface DatasetInfo {
  dataDir: string;
  count: number;
  seed: number;
  /** Milliseconds the load took (when reused: as recorded when it was generated). */
  loadMs: number;
  reused: boolean;
}

/** Fixed spread of the primary role attribute (cumulative weights): eng 40%, sales 30%, ops 20%, dev 10%. */
const PRIMARY: Array<[string, number]> = [
  ['eng', 0.4],
  ['sales', 0.7],
  ['ops', 0.9],
  ['dev', 1.0],
];
const ALL_ATTRIBUTES = PRIMARY.map(([a]) => a);

export function identityName(i: number): string {
  return `identity-${String(i).padStart(6, '0')}`;
}

/** The i-th (1-based) identity of the dataset; pure function of the PRNG stream. */
export function* generateIdentities(count: number, seed = SEED) {
  const rand = mulberry32(seed);
  for (let i = 1; i <= count; i++) {
    const r = rand();
    const primary = PRIMARY.find(([, w]) => r < w)![0];
    const roleAttributes = [primary];
    // A quarter of the identities carry a second, different attribute.
    if (rand() < 0.25) {
      const others = ALL_ATTRIBUTES.filter((a) => a !== primary);
      roleAttributes.push(others[Math.floor(rand() * others.length)]);
    }
    const env = rand() < 0.7 ? 'prod' : 'dev';
    yield { name: identityName(i), type: 'User', isAdmin: false, roleAttributes, tags: { env } };
  }
}

/** Where a dataset lives besides its data dir: the PostgreSQL server and database (no credentials), or undefined for SQLite. */
export function databaseTarget(databaseUrl: string | undefined): string | undefined {
  if (!databaseUrl) return undefined;
  const url = new URL(databaseUrl);
  return `${url.host}${url.pathname}`;
}

/** Whether the store a marker names is there: the SQLite file in the data dir, or the same PostgreSQL database. */
export function markedStoreExists(dataDir: string, marked: string | undefined, databaseUrl: string | undefined): boolean {
  if (marked !== databaseTarget(databaseUrl)) return false;
  return databaseUrl ? true : existsSync(join(dataDir, 'portcullis.db'));
}

/** The store a loader writes into: SQLite without fsync (a bulk load), or PostgreSQL. */
function openLoaderStore(dataDir: string, databaseUrl: string | undefined): Promise<Store> | Store {
  return databaseUrl ? openStore({ dataDir, databaseUrl }) : openSqliteStore(join(dataDir, 'portcullis.db'), { synchronous: 'OFF', flush: false });
}

function readMarker(dataDir: string): { count: number; seed: number; loadMs: number; database?: string } | undefined {
  const file = join(dataDir, MARKER);
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

/** Makes sure dataDir (and its store) holds exactly this dataset; (re)generates it otherwise. */
export async function ensureIdentityDataset(
  dataDir: string,
  count: number,
  log: (s: string) => void = console.log,
  databaseUrl?: string,
): Promise<DatasetInfo> {
  const marker = readMarker(dataDir);
  if (marker && marker.count === count && marker.seed === SEED && markedStoreExists(dataDir, marker.database, databaseUrl)) {
    log(`dataset: reusing ${dataDir} (${count} identities, originally loaded in ${(marker.loadMs / 1000).toFixed(1)} s)`);
    return { dataDir, count, seed: SEED, loadMs: marker.loadMs, reused: true };
  }
  if (existsSync(dataDir)) rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });

  log(`dataset: generating ${count} identities into ${dataDir}${databaseUrl ? ` and ${databaseTarget(databaseUrl)}` : ''} ...`);
  const store = await openLoaderStore(dataDir, databaseUrl);
  try {
    await migrateStore(store);
    const present = Number(await store.value("SELECT count(*) AS n FROM identities WHERE name LIKE 'identity-%'"));
    if (present > 0) throw new Error(`dataset: the database already holds ${present} dataset identities (give an empty database)`);
    await bootstrapRecords(store, { username: 'admin', password: BENCH_ADMIN_PASSWORD });
    const access = createAccessService(store, systemClock);
    await access.load();
    const identities = createIdentityService(store, access);
    const started = performance.now();
    let done = 0;
    // One transaction per create (the service opens its own; a write cannot nest in another).
    for (const row of generateIdentities(count)) {
      await identities.create(row);
      done += 1;
      if (done % 20000 === 0) log(`dataset:   ${done}/${count}`);
    }
    const loadMs = performance.now() - started;
    const loaded = Number(await store.value("SELECT count(*) AS n FROM identities WHERE name LIKE 'identity-%'"));
    if (loaded !== count) throw new Error(`dataset: expected ${count} identities, found ${loaded}`);
    const database = databaseTarget(databaseUrl);
    writeFileSync(join(dataDir, MARKER), JSON.stringify({ count, seed: SEED, loadMs: Math.round(loadMs), ...(database ? { database } : {}) }) + '\n');
    log(`dataset: loaded ${count} identities in ${(loadMs / 1000).toFixed(1)} s (${Math.round(count / (loadMs / 1000))}/s)`);
    return { dataDir, count, seed: SEED, loadMs, reused: false };
  } finally {
    await store.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const opt = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const count = Number(opt('--identities') ?? 100_000);
  const dataDir = opt('--data-dir') ?? join('bench', '.data', `identities-${count % 1000 === 0 ? `${count / 1000}k` : count}`);
  await ensureIdentityDataset(dataDir, count, console.log, opt('--database-url'));
}
