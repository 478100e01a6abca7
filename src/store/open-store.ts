/**
 * Chooses the store a controller runs on: PostgreSQL when a database URL is configured, else the embedded SQLite
 * file in the data dir. The PostgreSQL client is loaded only when it is used. `migrateStore` brings either schema
 * to the current version (on PostgreSQL under a lock, so processes starting together migrate once).
 */
import { join } from 'node:path';
import { migrate } from './migrate.ts';
import { openSqliteStore, type SqliteStore } from './sqlite-store.ts';
import type { Store } from './store.ts';

export interface StoreLocation {
  dataDir: string;
  databaseUrl?: string;
}

export async function openStore(where: StoreLocation): Promise<Store> {
  if (where.databaseUrl) {
    const { openPostgresStore } = await import('./postgres/postgres-store.ts');
    return openPostgresStore(where.databaseUrl);
  }
  return openSqliteStore(join(where.dataDir, 'portcullis.db'));
}

/** Applies pending migrations; returns the names applied. */
export async function migrateStore(store: Store): Promise<string[]> {
  if (store.kind === 'sqlite') return migrate((store as SqliteStore).db);
  const { migratePostgres } = await import('./postgres/migrate-postgres.ts');
  return migratePostgres(store);
}
