/**
 * Deterministic identity dataset for the benchmarks: N identities named identity-000001..., loaded through
 * the identity domain service (not raw SQL) into <dataDir>/portcullis.db. A marker file records what was
 * loaded, so an existing data dir with the same count and seed is reused as is.
 *
 * Run alone: node --import tsx bench/datasets/identities.ts [--identities N] [--data-dir DIR]
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { openDatabase, closeDatabase } from '../../src/store/database.ts';
import { migrate } from '../../src/store/migrate.ts';
import { bootstrapRecords } from '../../src/system/bootstrap.ts';
import { createAccessService } from '../../src/access/access.service.ts';
import { systemClock } from '../../src/resources/entity-service.ts';
import { createIdentityService } from '../../src/resources/identities/identity.service.ts';
import { mulberry32 } from '../../test/support/prng.ts';

export const BENCH_ADMIN_PASSWORD = 'bench-admin-password';
export const SEED = 0x5eed_2025;
const BATCH = 5000;
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

function readMarker(dataDir: string): { count: number; seed: number; loadMs: number } | undefined {
  const file = join(dataDir, MARKER);
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

/** Makes sure dataDir holds exactly this dataset; (re)generates it otherwise. */
export async function ensureIdentityDataset(dataDir: string, count: number, log: (s: string) => void = console.log): Promise<DatasetInfo> {
  const marker = readMarker(dataDir);
  if (marker && marker.count === count && marker.seed === SEED && existsSync(join(dataDir, 'portcullis.db'))) {
    log(`dataset: reusing ${dataDir} (${count} identities, originally loaded in ${(marker.loadMs / 1000).toFixed(1)} s)`);
    return { dataDir, count, seed: SEED, loadMs: marker.loadMs, reused: true };
  }
  if (existsSync(dataDir)) rmSync(dataDir, { recursive: true, force: true });

  log(`dataset: generating ${count} identities into ${dataDir} ...`);
  const db = openDatabase(join(dataDir, 'portcullis.db'), { synchronous: 'OFF' });
  try {
    migrate(db);
    await bootstrapRecords(db, { username: 'admin', password: BENCH_ADMIN_PASSWORD });
    const access = createAccessService(db, systemClock);
    access.load();
    const identities = createIdentityService(db, access);
    const started = performance.now();
    let batch: Array<ReturnType<typeof generateIdentities> extends Generator<infer T> ? T : never> = [];
    const flush = () => {
      const rows = batch;
      batch = [];
      // One outer transaction per batch; each create() nests inside it as a savepoint.
      db.transaction(() => {
        for (const row of rows) identities.create(row);
      })();
    };
    let done = 0;
    for (const row of generateIdentities(count)) {
      batch.push(row);
      if (batch.length === BATCH) {
        flush();
        done += BATCH;
        if (done % 20000 === 0) log(`dataset:   ${done}/${count}`);
      }
    }
    if (batch.length) flush();
    const loadMs = performance.now() - started;
    const loaded = (db.prepare("SELECT count(*) AS n FROM identities WHERE name LIKE 'identity-%'").get() as { n: number }).n;
    if (loaded !== count) throw new Error(`dataset: expected ${count} identities, found ${loaded}`);
    writeFileSync(join(dataDir, MARKER), JSON.stringify({ count, seed: SEED, loadMs: Math.round(loadMs) }) + '\n');
    log(`dataset: loaded ${count} identities in ${(loadMs / 1000).toFixed(1)} s (${Math.round(count / (loadMs / 1000))}/s)`);
    return { dataDir, count, seed: SEED, loadMs, reused: false };
  } finally {
    closeDatabase(db);
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
  await ensureIdentityDataset(dataDir, count);
}
