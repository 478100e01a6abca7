/**
 * Opens the embedded SQLite database: WAL journal, foreign keys enforced, synchronous=NORMAL (a commit is in
 * the WAL file when it returns, which survives a crash of the process; answers to writes wait for the WAL to be
 * flushed to disk, see wal-flush.ts). Registers the SQL functions the filter dialect relies on.
 * This folder is the only code that imports the SQLite driver.
 */
import BetterSqlite3 from 'better-sqlite3';
import { X509Certificate, createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

export type Db = BetterSqlite3.Database;
export type Statement = BetterSqlite3.Statement;

export interface OpenOptions {
  /** FULL: every commit waits for the disk itself; OFF: no flush at all (benchmark data loads only). */
  synchronous?: 'FULL' | 'NORMAL' | 'OFF';
}

export function openDatabase(file: string, options: OpenOptions = {}): Db {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const db = new BetterSqlite3(file);
  db.pragma('journal_mode = WAL');
  db.pragma('foreign_keys = ON');
  db.pragma(`synchronous = ${options.synchronous ?? 'NORMAL'}`);
  db.pragma('busy_timeout = 5000');
  db.pragma('cache_size = -65536');
  db.pragma('temp_store = MEMORY');
  // Unicode-aware upper-casing for `icontains` (SQLite's upper() only folds ASCII).
  db.function('pc_upper', { deterministic: true }, (value: unknown) =>
    value === null || value === undefined ? null : String(value).toUpperCase(),
  );
  // Facts of a stored PEM certificate, for filters on fields upstream derives from it (null when unreadable).
  const certFact = (name: string, fact: (cert: X509Certificate) => string) =>
    db.function(name, { deterministic: true }, (pem: unknown) => {
      if (typeof pem !== 'string' || pem === '') return null;
      try {
        return fact(new X509Certificate(pem));
      } catch {
        return null;
      }
    });
  certFact('pc_cert_cn', (c) => /^CN=(.*)$/m.exec(c.subject)?.[1] ?? '');
  certFact('pc_cert_not_before', (c) => new Date(c.validFrom).toISOString());
  certFact('pc_cert_not_after', (c) => new Date(c.validTo).toISOString());
  certFact('pc_public_key_print', (c) => createHash('sha256').update(c.publicKey.export({ type: 'spki', format: 'der' })).digest('hex'));
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
