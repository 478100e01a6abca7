/**
 * Opens the embedded SQLite database: WAL journal, foreign keys enforced, synchronous=FULL so an
 * acknowledged write survives a crash. Registers the SQL functions the filter dialect relies on.
 * This folder is the only code that imports the SQLite driver.
 */
import BetterSqlite3 from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

export type Db = BetterSqlite3.Database;
export type Statement = BetterSqlite3.Statement;

export interface OpenOptions {
  /** Trade durability for speed (benchmark data loads only). */
  synchronous?: 'FULL' | 'NORMAL' | 'OFF';
}

export function openDatabase(file: string, options: OpenOptions = {}): Db {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const db = new BetterSqlite3(file);
  db.pragma('journal_mode = WAL');
  db.pragma('foreign_keys = ON');
  db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
  db.pragma('busy_timeout = 5000');
  db.pragma('cache_size = -65536');
  db.pragma('temp_store = MEMORY');
  // Unicode-aware upper-casing for `icontains` (SQLite's upper() only folds ASCII).
  db.function('pc_upper', { deterministic: true }, (value: unknown) =>
    value === null || value === undefined ? null : String(value).toUpperCase(),
  );
  return db;
}

export function closeDatabase(db: Db): void {
  if (db.open) {
    try {
      db.pragma('wal_checkpoint(TRUNCATE)');
    } finally {
      db.close();
    }
  }
}
