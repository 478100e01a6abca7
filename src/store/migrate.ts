/**
 * Numbered schema migrations: `migrations/NNNN-name.sql` files applied in order, each in its own
 * transaction, with the applied version recorded in `schema_migrations`. Migrations are append-only.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { Db } from './database.ts';

const migrationsDir = fileURLToPath(new URL('./migrations/', import.meta.url));

interface Migration {
  version: number;
  name: string;
  sql: string;
}

function loadMigrations(): Migration[] {
  return readdirSync(migrationsDir)
    .filter((f) => /^\d{4}-.+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: Number(f.slice(0, 4)), name: f, sql: readFileSync(join(migrationsDir, f), 'utf8') }));
}

/** Applies pending migrations; returns the names applied (empty on an up-to-date database). */
export function migrate(db: Db): string[] {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
  const applied = new Set(
    (db.prepare('SELECT version FROM schema_migrations').all() as Array<{ version: number }>).map((r) => r.version),
  );
  const done: string[] = [];
  for (const m of loadMigrations()) {
    if (applied.has(m.version)) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, new Date().toISOString());
    }).immediate();
    done.push(m.name);
  }
  return done;
}
