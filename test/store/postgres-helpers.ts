/**
 * Helpers of the store tests on PostgreSQL: more databases on the test cluster, an admin connection, a TCP proxy
 * that can cut or black-hole the way to the server (a server going away and coming back), a server that accepts
 * and never answers, and both stores opened on fresh, migrated schemas.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { migrate } from '../../src/store/migrate.ts';
import { migratePostgres } from '../../src/store/postgres/migrate-postgres.ts';
import { openPostgresStore, type PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres/postgres-store.ts';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite-store.ts';

/** The URL of database `name` on the server of `url`. */
export function databaseUrl(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function withAdmin<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl(url, 'postgres') });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A new, empty database (UTF-8, C.UTF-8) on the server of `url`; returns its URL. */
export async function createDatabase(url: string, name: string): Promise<string> {
  await withAdmin(url, (c) => c.query(`CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'`));
  return databaseUrl(url, name);
}

export async function openMigratedPostgres(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
  const store = await openPostgresStore(url, options);
  await migratePostgres(store);
  return store;
}

export function openMigratedSqlite(): { store: SqliteStore; file: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'store-contract-'));
  const file = join(dir, 'portcullis.db');
  const store = openSqliteStore(file);
  migrate(store.db);
  return { store, file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export type ProxyMode = 'open' | 'refuse' | 'blackhole';

/** A TCP proxy to 127.0.0.1:`targetPort`: `mode('refuse')` drops every connection, `mode('blackhole')` swallows. */
export async function tcpProxy(targetPort: number): Promise<{ port: number; mode(m: ProxyMode): void; close(): Promise<void> }> {
  let mode: ProxyMode = 'open';
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
  };
  const server: Server = createServer((client) => {
    track(client);
    if (mode === 'refuse') return void client.destroy();
    if (mode === 'blackhole') return; // accepted, never answered
    const upstream = connect(targetPort, '127.0.0.1');
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    mode(m) {
      mode = m;
      // Going away: every connection through the proxy ends now.
      if (m !== 'open') for (const s of sockets) s.destroy();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A server that accepts connections and never says a word. */
export async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
