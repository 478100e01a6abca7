/**
 * PostgreSQL schema migrations: `../migrations-pg/NNNN-name.sql`, applied in order, each in its own transaction,
 * recorded in `schema_migrations` as SQLite's are (src/store/migrate.ts). The first file is a baseline, the whole
 * schema of SQLite's migration 0033; every later migration comes in a pair, one file per dialect under the same
 * number, so a PostgreSQL store at version N has exactly SQLite's schema N (checked before anything is applied).
 *
 * Several processes starting at once migrate once: the work runs under a session advisory lock, and the applied
 * versions are read after it is taken. The database must be UTF-8 with the C.UTF-8 locale (src/query/README.md).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Store } from '../store.ts';
import type { PostgresStore } from './postgres-store.ts';

const postgresDir = fileURLToPath(new URL('../migrations-pg/', import.meta.url));
const sqliteDir = fileURLToPath(new URL('../migrations/', import.meta.url));

/** The SQLite version the PostgreSQL baseline equals. */
export const POSTGRES_BASELINE_VERSION = 33;
/** Key of the session advisory lock migrations run under (ASCII "pcmigrat"). */
export const MIGRATION_LOCK_KEY = '8098436854416826740';

export interface PostgresMigration {
  version: number;
  name: string;
  sql: string;
}

function migrationFiles(dir: string): Array<{ version: number; name: string }> {
  const files = readdirSync(dir)
    .filter((f) => /^\d{4}-.+\.sql$/.test(f))
    .sort()
    .map((name) => ({ version: Number(name.slice(0, 4)), name }));
  for (let i = 1; i < files.length; i++) {
    if (files[i]!.version === files[i - 1]!.version) throw new Error(`two migrations numbered ${files[i]!.version} in ${dir}`);
  }
  return files;
}

/** The PostgreSQL migrations, checked against SQLite's: the baseline, then the same numbers as SQLite after it. */
export function loadPostgresMigrations(): PostgresMigration[] {
  const files = migrationFiles(postgresDir);
  if (files[0]?.version !== POSTGRES_BASELINE_VERSION) {
    throw new Error(`the first PostgreSQL migration must be the baseline ${String(POSTGRES_BASELINE_VERSION).padStart(4, '0')}`);
  }
  const expected = migrationFiles(sqliteDir)
    .map((f) => f.version)
    .filter((v) => v > POSTGRES_BASELINE_VERSION);
  const actual = files.slice(1).map((f) => f.version);
  const missing = expected.filter((v) => !actual.includes(v));
  const extra = actual.filter((v) => !expected.includes(v));
  if (missing.length > 0 || extra.length > 0) {
    const list = (vs: number[]) => vs.map((v) => String(v).padStart(4, '0')).join(', ');
    throw new Error(
      `SQLite and PostgreSQL migrations do not pair up${missing.length ? `; no PostgreSQL file for ${list(missing)}` : ''}` +
        `${extra.length ? `; no SQLite file for ${list(extra)}` : ''}: every migration after the baseline needs both`,
    );
  }
  return files.map((f) => ({ ...f, sql: readFileSync(join(postgresDir, f.name), 'utf8') }));
}

/** The database sorts text in code point order and upper-cases Unicode letters, as the query dialect expects. */
async function checkLocale(client: pg.ClientBase): Promise<void> {
  const { rows } = await client.query<{ encoding: string; database: string; fit: boolean }>(
    `SELECT current_setting('server_encoding') AS encoding, current_database() AS database,
            ('Z' < 'a' AND 'é' > 'z' AND upper('é') = 'É') AS fit`,
  );
  const row = rows[0]!;
  if (row.encoding !== 'UTF8' || !row.fit) {
    throw new Error(
      `PostgreSQL database "${row.database}" must be UTF8 with the C.UTF-8 locale (code point order, Unicode upper-casing); ` +
        `create it with: CREATE DATABASE ... TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'`,
    );
  }
}

type Target = PostgresStore | Store | pg.Pool | pg.ClientBase;

/** Applies pending migrations on the store's (or pool's, or client's) database; returns the names applied. */
export async function migratePostgres(target: Target): Promise<string[]> {
  const migrations = loadPostgresMigrations();
  let client: pg.ClientBase;
  let release: ((broken: boolean) => void) | undefined;
  if (target instanceof pg.Pool || 'pool' in target) {
    if (!(target instanceof pg.Pool) && (target as Store).kind !== 'postgres') throw new Error('migratePostgres needs a PostgreSQL store');
    const pool = target instanceof pg.Pool ? target : (target as PostgresStore).pool;
    const pooled = await pool.connect();
    client = pooled;
    release = (broken) => pooled.release(broken ? true : undefined);
  } else if (typeof (target as pg.ClientBase).query === 'function') {
    client = target as pg.ClientBase;
  } else {
    throw new Error('migratePostgres needs a PostgreSQL store, pool or client');
  }

  let broken = false;
  try {
    // Waiting for another process's migrations, and long DDL, are not bound by the store's statement timeout.
    await client.query('SET statement_timeout = 0');
    await client.query(`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`);
    try {
      await checkLocale(client);
      await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
      const applied = new Set((await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version));
      const done: string[] = [];
      for (const m of migrations) {
        if (applied.has(m.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(m.sql);
          await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, new Date().toISOString()]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => (broken = true));
          throw new Error(`PostgreSQL migration ${m.name} failed: ${(err as Error).message}`, { cause: err });
        }
        done.push(m.name);
      }
      return done;
    } finally {
      await client.query(`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`).catch(() => (broken = true));
    }
  } finally {
    await client.query('RESET statement_timeout').catch(() => (broken = true));
    release?.(broken);
  }
}
