/**
 * Test harness: starts a real controller on a free loopback port with a temporary data dir, logs in as
 * the default admin, and stops and removes everything when the test file ends. Call it with top-level
 * `await` in the test module (not inside a `before` hook): its `after` cleanup must attach to the file's
 * root test, not to a hook.
 *
 * The store: SQLite in the data dir, or, when PORTCULLIS_TEST_DATABASE_URL names a PostgreSQL server whose user
 * may CREATE DATABASE (scripts/with-postgres.ts sets it), a fresh database on that server for each controller
 * (the data dir still holds the PKI). A data dir keeps its database for as long as the dir lives: a `restart()`,
 * or a second start on an explicit `dataDir`, finds it again; it is dropped when the harness removes the dir (in
 * `stop()`), by `dropTestDatabase(dataDir)`, or else when the test process ends.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createServer } from 'node:net';
import { after } from 'node:test';
import { startController, type RunningController, type StartOptions } from '../../src/controller.ts';
import { loadConfig } from '../../src/config.ts';
import { openStore } from '../../src/store/open-store.ts';
import type { Store } from '../../src/store/store.ts';
import { createClient, type HttpClient } from './client.ts';

export const ADMIN_USER = 'admin';
export const ADMIN_PASSWORD = 'admin-password-for-tests';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** The PostgreSQL server the suite runs on, if any. */
const postgresServer = process.env.PORTCULLIS_TEST_DATABASE_URL || undefined;

/** The store the controllers of this run use: skip what is about SQLite itself when it is 'postgres'. */
export function testStore(): 'sqlite' | 'postgres' {
  return postgresServer ? 'postgres' : 'sqlite';
}

/** The PostgreSQL database of each data dir given one in this process (resolved path -> database name). */
const databases = new Map<string, Promise<string>>();
let databaseCounter = 0;

/** Runs one statement on the server (CREATE/DROP DATABASE cannot run in a transaction). Loads pg when used. */
async function onServer(sql: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: postgresServer });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function databaseUrl(name: string): string {
  const url = new URL(postgresServer!);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * The `--database-url` of the controller store on `dataDir`: a database created for it on first use, the same
 * one afterwards (a restart of the same controller). Undefined when the suite runs on SQLite.
 */
export async function testDatabaseUrl(dataDir: string): Promise<string | undefined> {
  if (!postgresServer) return undefined;
  const key = resolve(dataDir);
  let name = databases.get(key);
  if (name === undefined) {
    databaseCounter += 1;
    const fresh = `portcullis_t${process.pid}_${databaseCounter}_${Math.random().toString(36).slice(2, 8)}`;
    name = onServer(`CREATE DATABASE "${fresh}"`).then(() => fresh);
    databases.set(key, name);
    dropLeftoversAtExit();
    try {
      await name;
    } catch (err) {
      databases.delete(key);
      throw err;
    }
  }
  return databaseUrl(await name);
}

/** The controller command-line arguments for the store of `dataDir` (none on SQLite). */
export async function testDatabaseArgs(dataDir: string): Promise<string[]> {
  const url = await testDatabaseUrl(dataDir);
  return url ? ['--database-url', url] : [];
}

/** Drops the database of `dataDir` (nothing on SQLite, or when it has none). Stop its controllers first. */
export async function dropTestDatabase(dataDir: string): Promise<void> {
  const key = resolve(dataDir);
  const name = databases.get(key);
  if (name === undefined) return;
  databases.delete(key);
  await onServer(`DROP DATABASE IF EXISTS "${await name}" WITH (FORCE)`);
}

let exitHook = false;
/** Drops the databases nobody dropped when the test process is about to end. */
function dropLeftoversAtExit(): void {
  if (exitHook) return;
  exitHook = true;
  let drained = 0;
  process.on('beforeExit', () => {
    if (databases.size === 0) return;
    // The first time the loop drains, the test runner may still run `after` hooks that use these databases from
    // its own `beforeExit` listener: drop them once the loop has drained again.
    if (drained++ === 0) {
      setImmediate(() => {});
      return;
    }
    void (async () => {
      for (const dataDir of [...databases.keys()]) await dropTestDatabase(dataDir);
    })().catch((err) => console.error('test databases left on the server:', err));
  });
}

/**
 * A second store on the location of a test controller (its data dir and database), as another process would
 * open it: for tests that write or read beside the controller. Close it when done.
 */
export function openSecondStore(tc: { dataDir: string; databaseUrl?: string }): Promise<Store> {
  return openStore({ dataDir: tc.dataDir, databaseUrl: tc.databaseUrl });
}

export interface TestController {
  controller: RunningController;
  dataDir: string;
  /** The PostgreSQL database of the controller's store; undefined on SQLite. */
  databaseUrl?: string;
  port: number;
  /** Unauthenticated client on the server root. */
  http: HttpClient;
  /** Client on the management API base, logged in as the default admin. */
  mgmt: HttpClient;
  /** Client on the client API base, logged in as the default admin. */
  client: HttpClient;
  adminToken: string;
  ca: string;
  login(username: string, password: string, api?: 'client' | 'management'): Promise<string>;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export async function startTestController(
  opts: {
    dataDir?: string;
    extraArgs?: string[];
    env?: Record<string, string>;
    keepDataDir?: boolean;
    start?: StartOptions;
    /** A database another test controller uses (several controllers of one network); by default one of its own. */
    databaseUrl?: string;
  } = {},
): Promise<TestController> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'portcullis-test-'));
  const port = await freePort();
  const databaseUrl = opts.databaseUrl ?? (await testDatabaseUrl(dataDir));
  const args = ['--data-dir', dataDir, ...(databaseUrl ? ['--database-url', databaseUrl] : []), '--address', '127.0.0.1', '--port',
    String(port), '--admin-user', ADMIN_USER, '--admin-password', ADMIN_PASSWORD, '--log-level', 'silent', ...(opts.extraArgs ?? [])];
  let controller: RunningController;
  try {
    controller = await startController(loadConfig(args, opts.env ?? {}), opts.start);
  } catch (err) {
    if (!opts.dataDir) await dropTestDatabase(dataDir);
    throw err;
  }
  const ca = controller.pki.caBundlePem;
  const root = `https://127.0.0.1:${port}`;
  const http = createClient(root, ca);

  const tc: TestController = {
    controller,
    dataDir,
    databaseUrl,
    port,
    http,
    mgmt: http,
    client: http,
    adminToken: '',
    ca,
    async login(username, password, api = 'management') {
      const res = await http.post(`/edge/${api}/v1/authenticate?method=password`, { username, password });
      if (res.status !== 200) throw new Error(`login of ${username} failed: ${res.status} ${res.text}`);
      return res.body.data.token as string;
    },
    async restart() {
      await controller.stop();
      controller = await startController(loadConfig(args, opts.env ?? {}), opts.start);
      tc.controller = controller;
    },
    async stop() {
      await controller.stop();
      if (!opts.keepDataDir && !opts.dataDir) {
        rmSync(dataDir, { recursive: true, force: true });
        await dropTestDatabase(dataDir);
      }
    },
  };
  tc.adminToken = await tc.login(ADMIN_USER, ADMIN_PASSWORD);
  tc.mgmt = createClient(`${root}/edge/management/v1`, ca, { token: tc.adminToken });
  tc.client = createClient(`${root}/edge/client/v1`, ca, { token: tc.adminToken });
  after(() => tc.stop());
  return tc;
}

let counter = 0;
/** A name unique within this test process. */
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}-${Math.random().toString(36).slice(2, 7)}`;
}

/**
 * Stops a controller started as a child process (`src/main.ts`) and waits until it is gone: SIGTERM first, so a
 * `--workers` primary stops its workers before it exits (a SIGKILL would orphan them, still writing to the data
 * dir the test is about to remove), then SIGKILL after `graceMs`.
 */
export async function stopChildController(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await gone;
  clearTimeout(timer);
}

/** Removes a test's temporary directory, retrying while a process that just ended still closes files in it. */
export function removeTestDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
}
