/**
 * What the router suites share on top of the harness: their hooks (the controller's settings, an admin REST
 * client, the CLI logged in, the Go SDK peer built, logs printed after a failure, everything stopped at the end),
 * identities made and enrolled with the CLI, terminators polled over REST, routers waited for, and the loopback
 * TCP/HTTP probes the tunneler tests use.
 */
import { after, afterEach, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { get as httpGet, type Server } from 'node:http';
import { connect } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  adminRest, cleanupRouters, controller, loginCli, printRouterLogs, waitFor, workDir, zitiCli,
  type EdgeRest, type RouterHandle, type RouterProcess,
} from './harness.ts';

const goModuleDir = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'go');

export interface RouterSuite {
  /**
   * The admin REST client and the built sdkecho program (Go SDK peer; '' unless asked for), once the setup hook
   * is done. Await it in the suite's own hooks: Node 20 runs each top-level `before` as soon as it is declared,
   * so a second one would not wait for the first.
   */
  readonly ready: Promise<{ admin: EdgeRest; sdkecho: string }>;
  /** Whether a test (or the setup) failed: the logs are then kept. */
  readonly failed: boolean;
}

/**
 * Registers the hooks of a router suite. `setup` runs first (a suite that starts a controller of its own sets
 * the PORTCULLIS_* environment there); `sdkecho` builds the Go SDK peer (test/interop/go/cmd/sdkecho) from the
 * module cache, never the network; `onEnd` runs after every router and peer has been stopped.
 */
export function routerSuite(opts: { setup?: () => Promise<void>; sdkecho?: boolean; onEnd?: () => Promise<void> | void } = {}): RouterSuite {
  let failed = false;
  let settle!: { resolve(value: { admin: EdgeRest; sdkecho: string }): void; reject(err: unknown): void };
  const ready = new Promise<{ admin: EdgeRest; sdkecho: string }>((resolve, reject) => (settle = { resolve, reject }));
  ready.catch(() => undefined); // reported by the hook below
  before(async () => {
    try {
      await opts.setup?.();
      controller();
      const admin = await adminRest();
      loginCli();
      let sdkecho = '';
      if (opts.sdkecho) {
        sdkecho = join(workDir(), 'sdkecho');
        const built = spawnSync('go', ['build', '-o', sdkecho, './cmd/sdkecho'], {
          cwd: goModuleDir,
          encoding: 'utf8',
          timeout: 300_000,
          env: { ...process.env, GOPROXY: 'off' },
        });
        if (built.status !== 0) throw new Error(`go build ./cmd/sdkecho failed (${built.status ?? built.error?.message}):\n${built.stdout}${built.stderr}`);
      }
      settle.resolve({ admin, sdkecho });
    } catch (err) {
      failed = true;
      settle.reject(err);
      throw err;
    }
  });
  afterEach((t) => {
    // TestContext.passed (node >= 20.12) is not in @types/node 20 yet.
    if ((t as unknown as { passed?: boolean }).passed === false) {
      failed = true;
      printRouterLogs(`after failed test "${t.name}"`);
    }
  });
  after(async () => {
    await cleanupRouters({ keepLogs: failed });
    await opts.onEnd?.();
  });
  return {
    ready,
    get failed() {
      return failed;
    },
  };
}

/** The id the CLI printed for a new entity (`... created with id: X`), else looked up by name. */
export async function cliId(admin: EdgeRest, collection: string, name: string, output: string): Promise<string> {
  const m = /with id:?\s*([A-Za-z0-9._-]+)/i.exec(output);
  if (m) return m[1];
  return admin.idByName(collection, name);
}

export interface Identity {
  name: string;
  id: string;
  jwtFile: string;
  /** The enrolled identity file (after enrollIdentity). */
  file: string;
}

/** `ziti edge create identity <name> -o <name>.jwt [-a <attrs>]`. */
export async function createIdentity(admin: EdgeRest, name: string, attrs: string[]): Promise<Identity> {
  const dir = join(workDir(), 'identities');
  mkdirSync(dir, { recursive: true });
  const jwtFile = join(dir, `${name}.jwt`);
  const args = ['edge', 'create', 'identity', name, '-o', jwtFile];
  if (attrs.length) args.push('-a', attrs.join(','));
  const r = zitiCli(args);
  return { name, id: await cliId(admin, 'identities', name, r.stdout + r.stderr), jwtFile, file: join(dir, `${name}.json`) };
}

/** `ziti edge enroll <name>.jwt -o <name>.json`. */
export function enrollIdentity(identity: Identity): void {
  zitiCli(['edge', 'enroll', identity.jwtFile, '-o', identity.file]);
  assert.ok(existsSync(identity.file), `ziti edge enroll wrote ${identity.file}`);
}

/** createIdentity, then enrollIdentity. */
export async function enrolledIdentity(admin: EdgeRest, name: string, attrs: string[]): Promise<Identity> {
  const identity = await createIdentity(admin, name, attrs);
  enrollIdentity(identity);
  return identity;
}

/** The terminators matching a management filter (e.g. `router = "<id>"`). */
export async function terminators(admin: EdgeRest, filter: string): Promise<any[]> {
  return admin.data(`/terminators?limit=500&filter=${encodeURIComponent(filter)}`);
}

/** Waits until the terminators matching `filter` satisfy `ready`; returns them. */
export async function waitTerminators(admin: EdgeRest, filter: string, what: string, timeoutMs: number, ready: (list: any[]) => boolean): Promise<any[]> {
  let last: any[] = [];
  return waitFor(async () => {
    last = await terminators(admin, filter);
    return ready(last) ? last : undefined;
  }, timeoutMs, { what, lastSeen: () => brief(last) });
}

/** A short view of terminators for messages. */
export function brief(list: any[]): string {
  return JSON.stringify(list.map((t) => ({ id: t.id, service: t.service?.name, router: t.router?.name, binding: t.binding })));
}

/** Waits until a started router is online with its sync done; fails at once if its process exits. */
export async function waitOnlineSynced(admin: EdgeRest, router: RouterHandle, proc: RouterProcess, timeoutMs: number): Promise<void> {
  let last: any;
  await waitFor(async () => {
    last = await admin.edgeRouter(router.id);
    return last?.isOnline === true && last.syncStatus === 'SYNC_DONE';
  }, timeoutMs, {
    what: `${router.name} online and synced`,
    lastSeen: () => JSON.stringify({ isOnline: last?.isOnline, syncStatus: last?.syncStatus }),
    abort: () => (proc.exit ? `the router exited (${JSON.stringify(proc.exit)})` : undefined),
  });
}

/** Waits until 127.0.0.1:port accepts TCP connections. */
export async function waitListening(port: number, timeoutMs: number, abort?: () => string | undefined): Promise<void> {
  await waitFor(() => new Promise<boolean>((res) => {
    const s = connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      res(true);
    });
    s.on('error', () => res(false));
    s.setTimeout(2_000, () => {
      s.destroy();
      res(false);
    });
  }), timeoutMs, { what: `127.0.0.1:${port} to accept connections`, abort });
}

/** A plain HTTP GET of 127.0.0.1:port (a new connection each time). */
export function fetchPage(port: number): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const req = httpGet({ host: '127.0.0.1', port, path: '/', agent: false, headers: { connection: 'close' } }, (r) => {
      let body = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => (body += c));
      r.on('end', () => res({ status: r.statusCode ?? 0, body }));
      r.on('error', rej);
    });
    req.on('error', rej);
    req.setTimeout(20_000, () => req.destroy(new Error('no answer within 20 s')));
  });
}

/** Closes a local HTTP server a test started, with its open connections. */
export async function closeServer(server: Server | undefined): Promise<void> {
  if (!server) return;
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
}

/**
 * A database of its own for a suite that runs its own controller, when the suites run on PostgreSQL
 * (PORTCULLIS_TEST_DATABASE_URL names the server); undefined on SQLite. `drop` removes it.
 */
export async function ownDatabase(prefix: string): Promise<{ url: string; drop(): Promise<void> } | undefined> {
  const server = process.env.PORTCULLIS_TEST_DATABASE_URL;
  if (!server) return undefined;
  const { default: pg } = await import('pg');
  const name = `${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const run = async (sql: string) => {
    const client = new pg.Client({ connectionString: server });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await run(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
