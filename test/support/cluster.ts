/**
 * Several controllers of one network in this test process: each with its own data dir and port, all on one
 * PostgreSQL database and one cluster secret. Only meaningful where the suite runs on PostgreSQL (`testStore()`).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after } from 'node:test';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { dropTestDatabase, startTestController, testDatabaseUrl, type TestController } from './controller.ts';
import type { StartOptions } from '../../src/controller.ts';

export interface TestCluster {
  members: TestController[];
  databaseUrl: string;
  /** The cluster secret file every member was given. */
  secretFile: string;
  /** Starts one more member (an empty data dir joins), with `extraArgs` after the cluster's own. */
  join(opts?: { dataDir?: string; extraArgs?: string[] }): Promise<TestController>;
  /** Runs SQL on the cluster's database from a connection of its own. */
  sql<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
}

export function writeSecretFile(secret = randomBytes(32).toString('base64')): string {
  const file = join(mkdtempSync(join(tmpdir(), 'portcullis-secret-')), 'cluster-secret');
  writeFileSync(file, secret + '\n', { mode: 0o600 });
  return file;
}

/** Starts `n` controllers of one network (the first founds it, the others join). */
export async function startCluster(n: number, opts: { extraArgs?: string[]; start?: StartOptions } = {}): Promise<TestCluster> {
  const secretFile = writeSecretFile();
  const args = ['--cluster-secret-file', secretFile, ...(opts.extraArgs ?? [])];
  // The founder's database outlives the founder (members may stop in any order): dropped once all have stopped.
  const first = await startTestController({ extraArgs: args, keepDataDir: true, start: opts.start });
  const databaseUrl = first.databaseUrl ?? (await testDatabaseUrl(first.dataDir));
  const dirs = new Set([first.dataDir]);
  if (databaseUrl === undefined) throw new Error('a cluster needs the PostgreSQL test server');
  const cluster: TestCluster = {
    members: [first],
    databaseUrl,
    secretFile,
    async join(more = {}) {
      // Data dirs outlive their controller (a stopped member may start again on its own): removed at the end.
      const member = await startTestController({ databaseUrl, dataDir: more.dataDir, keepDataDir: true, extraArgs: [...args, ...(more.extraArgs ?? [])], start: opts.start });
      cluster.members.push(member);
      dirs.add(member.dataDir);
      return member;
    },
    async sql(text, params = []) {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        return (await client.query(text, params)).rows;
      } finally {
        await client.end();
      }
    },
  };
  after(async () => {
    for (const member of [...cluster.members].reverse()) await member.stop().catch(() => undefined);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    rmSync(dirname(secretFile), { recursive: true, force: true });
    await dropTestDatabase(first.dataDir);
  });
  for (let i = 1; i < n; i++) await cluster.join();
  return cluster;
}

/** Polls `check` every 50 ms until it returns true, failing after `ms`. */
export async function eventually(check: () => Promise<boolean> | boolean, ms = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
