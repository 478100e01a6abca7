/**
 * Stores suite: the same loads on the embedded SQLite store and on PostgreSQL, in one run on this machine.
 *
 *  - Scenarios S1, S2, S3 (client reads), S6 (POST /sessions) and S8 (bulk provisioning) on the sized dataset
 *    (`--size`, default medium; generated first when missing): each on SQLite as usual, then on a PostgreSQL
 *    database copied from that dataset (`copy-to-postgres` into a template, one fresh database per scenario);
 *  - the fabric suite's circuit benchmark (and its other parts) on both stores;
 *  - the kill -9 durability test on both stores.
 *
 * PostgreSQL is a private cluster started here from Debian's server programs (test/support/postgres.ts), durable
 * as an operator runs it (fsync and synchronous commit on), on 127.0.0.1, removed at the end. Its CPU time (every
 * process of the cluster) is counted with the controller's: server CPU per request = (controller + PostgreSQL) CPU
 * time ÷ requests. Results: bench/results/stores.md and stores.json, besides each part's own files.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { defaultDataDir, ensureSizedDataset, type SizeName } from './datasets/sized.ts';
import { runFabricSuite, type FabricResult } from './fabric.ts';
import { fmt, killChildren, machine } from './lib.ts';
import { runScenario } from './scenarios/index.ts';
import type { ResultRow, ScenarioOptions, ScenarioResult } from './scenarios/context.ts';

export interface StoresSuiteOptions {
  size: SizeName;
  /** Scenarios to run on both stores. */
  scenarios: string[];
  duration: number;
  connections: number;
  /** Routers of the fabric suite's memory part, and circuit requests in flight. */
  routers: number;
  inFlight: number;
  /** Run the kill -9 durability test on both stores (`--no-durability`: not). */
  durability: boolean;
  /** Run the fabric suite on both stores (`--no-fabric`: not). */
  fabric: boolean;
}

export const STORE_SCENARIOS = ['S1', 'S2', 'S3', 'S6', 'S8'];
/** Scenarios whose loads are reads: their server CPU per request should stay within 10 % of SQLite's. */
const READ_SCENARIOS = new Set(['S1', 'S2', 'S3']);

interface DurabilityFigures {
  store: 'sqlite' | 'postgres';
  passed: boolean;
  /** The test's own summary line (kills, writes acknowledged and checked). */
  summary: string;
  seconds: number;
}

interface StoresResult {
  suite: 'stores';
  date: string;
  machine: ReturnType<typeof machine>;
  settings: Omit<StoresSuiteOptions, 'scenarios'> & { scenarios: string[] };
  scenarios: Array<{ id: string; sqlite: ScenarioResult; postgres: ScenarioResult }>;
  fabric: { sqlite: FabricResult; postgres: FabricResult } | undefined;
  durability: DurabilityFigures[];
  wallS: number;
}

/** Server CPU time per request, µs: controller plus database server, over the run's requests. */
function cpuPerRequestUs(r: ResultRow): number {
  const pct = r.cpuPct + (r.dbCpuPct ?? 0);
  return r.rps > 0 ? (pct / 100 / r.rps) * 1e6 : Number.NaN;
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Runs the kill -9 durability test on one store; its summary line says what it checked. */
function durabilityRun(store: 'sqlite' | 'postgres', adminUrl?: string): DurabilityFigures {
  const t0 = performance.now();
  const env = { ...process.env };
  if (adminUrl) env.PORTCULLIS_TEST_DATABASE_URL = adminUrl;
  else delete env.PORTCULLIS_TEST_DATABASE_URL;
  const r = spawnSync(process.execPath, ['scripts/run-tests.mjs', 'test/durability/kill9.test.ts'], { encoding: 'utf8', env, timeout: 15 * 60_000 });
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  const summary = /kill9: (.*)/.exec(out)?.[1]?.trim() ?? 'no summary printed';
  const passed = r.status === 0 && /^# fail 0$/m.test(out);
  if (!passed) console.log(out.split('\n').filter((l) => /not ok|error|Error/.test(l)).slice(0, 20).join('\n'));
  return { store, passed, summary, seconds: (performance.now() - t0) / 1000 };
}

export async function runStoresSuite(opts: StoresSuiteOptions): Promise<void> {
  const started = performance.now();
  const dataDir = defaultDataDir(opts.size);
  if (!existsSync(join(dataDir, 'dataset.json'))) {
    console.log(`generating the ${opts.size} dataset ...`);
    await ensureSizedDataset(opts.size, { dataDir });
  }
  const { startTestPostgres } = await import('../test/support/postgres.ts');
  // Durable as an operator runs it: fsync and synchronous commit, like the SQLite store, whose answers to writes wait
  // for the disk.
  const server = await startTestPostgres({ durable: true });
  const result: StoresResult = {
    suite: 'stores',
    date: new Date().toISOString(),
    machine: machine(),
    settings: { ...opts },
    scenarios: [],
    fabric: undefined,
    durability: [],
    wallS: 0,
  };
  try {
    // The dataset's records in a template database, copied the way an operator moves a controller.
    const template = `dataset_${opts.size.replace(/[^a-z0-9]/gi, '_')}`;
    await adminQuery(server.url, `CREATE DATABASE ${template}`);
    const copied = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', 'copy-to-postgres', '--data-dir', dataDir, '--database-url', withDatabase(server.url, template)], {
      encoding: 'utf8',
      timeout: 30 * 60_000,
    });
    if (copied.status !== 0) throw new Error(`copy-to-postgres failed: ${copied.stderr || copied.stdout}`);
    let databases = 0;
    const postgres: ScenarioOptions['postgres'] = {
      serverPid: () => server.serverPid(),
      async database() {
        const name = `scenario_${++databases}`;
        await adminQuery(server.url, `CREATE DATABASE ${name} TEMPLATE ${template}`);
        return withDatabase(server.url, name);
      },
    };
    const base: ScenarioOptions = {
      size: opts.size,
      dataDir,
      duration: opts.duration,
      connections: opts.connections,
      openFraction: 0.5,
      maxRate: 3000,
      sessions: 200,
      targetRate: 5000,
      workers: 1,
    };
    for (const id of opts.scenarios) {
      console.log(`\n=== ${id} on SQLite`);
      const sqlite = await runScenario(id, base);
      console.log(`\n=== ${id} on PostgreSQL`);
      const onPostgres = await runScenario(id, { ...base, postgres });
      result.scenarios.push({ id, sqlite, postgres: onPostgres });
    }

    if (opts.fabric) {
      console.log('\n=== fabric suite on SQLite');
      const fabricSqlite = (await runFabricSuite({ routers: opts.routers, inFlight: opts.inFlight, duration: opts.duration, workers: [1], store: 'sqlite' }))[0]!;
      console.log('\n=== fabric suite on PostgreSQL');
      const fabricPostgres = (await runFabricSuite({ routers: opts.routers, inFlight: opts.inFlight, duration: opts.duration, workers: [1], store: 'postgres' }))[0]!;
      result.fabric = { sqlite: fabricSqlite, postgres: fabricPostgres };
    }

    if (opts.durability) {
      console.log('\n=== kill -9 durability on SQLite');
      result.durability.push(durabilityRun('sqlite'));
      console.log('\n=== kill -9 durability on PostgreSQL');
      result.durability.push(durabilityRun('postgres', server.url));
    }
  } catch (err) {
    killChildren();
    throw err;
  } finally {
    await server.stop();
  }
  result.wallS = (performance.now() - started) / 1000;
  mkdirSync(join('bench', 'results'), { recursive: true });
  writeFileSync(join('bench', 'results', 'stores.json'), JSON.stringify(result, null, 2) + '\n');
  const report = markdown(result);
  writeFileSync(join('bench', 'results', 'stores.md'), report);
  console.log('\n' + report);
  console.log(`written to bench/results/stores.md and stores.json (${result.wallS.toFixed(0)} s)`);
}

// ---- report ------------------------------------------------------------------------------------------------------------

const f1 = (n: number | undefined) => (n === undefined || Number.isNaN(n) ? '–' : n.toFixed(1));
const f2 = (n: number | undefined) => (n === undefined || Number.isNaN(n) ? '–' : n.toFixed(2));
const pct = (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${((a / b) * 100).toFixed(0)}%` : '–');

function markdown(r: StoresResult): string {
  const lines = [
    `# Stores: SQLite and PostgreSQL (${r.settings.size} dataset)`,
    '',
    `${r.date.slice(0, 10)}, ${r.machine.cpu}, ${r.machine.cores} cores, Node ${r.machine.node}. One run of \`npm run bench -- --suite stores\`; ` +
      `${r.settings.duration} s per measured load, ${r.settings.connections} connections in closed loop. PostgreSQL: a private cluster on this ` +
      'machine, durable (fsync, synchronous commit), sharing its cores with the controller and the load generator; its CPU time ' +
      '(all its processes) is counted with the controller\'s. "CPU/request" = (controller + PostgreSQL) CPU time ÷ requests served.',
    '',
    '## Scenarios (closed loop, maximum throughput)',
    '',
    '| Scenario | Load | SQLite req/s | PostgreSQL req/s | PG ÷ SQLite | SQLite p50 / p99 ms | PostgreSQL p50 / p99 ms | SQLite CPU/request µs | PostgreSQL CPU/request µs (of which PostgreSQL) | PG ÷ SQLite CPU/request |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const s of r.scenarios) {
    const closed = (x: ScenarioResult) => x.rows.filter((row) => row.server === 'portcullis' && row.mode === 'closed');
    const pgRows = new Map(closed(s.postgres).map((row) => [`${row.load}|${row.connections}`, row]));
    for (const a of closed(s.sqlite)) {
      const b = pgRows.get(`${a.load}|${a.connections}`);
      if (!b) continue;
      const ca = cpuPerRequestUs(a);
      const cb = cpuPerRequestUs(b);
      const dbShare = b.dbCpuPct !== undefined && b.rps > 0 ? (b.dbCpuPct / 100 / b.rps) * 1e6 : Number.NaN;
      lines.push(
        `| ${s.id}${READ_SCENARIOS.has(s.id) ? ' (read)' : ''} | ${a.load} | ${fmt(a.rps)} | ${fmt(b.rps)} | ${pct(b.rps, a.rps)} | ${f2(a.p50)} / ${f2(a.p99)} | ${f2(b.p50)} / ${f2(b.p99)} | ` +
          `${f1(ca)} | ${f1(cb)} (${f1(dbShare)}) | ${pct(cb, ca)} |`,
      );
    }
  }
  lines.push('', 'Write scenarios (S6, S8) report throughput and latency; their rows with a concurrency in the load name are per concurrency.', '');
  if (r.fabric) {
    const row = (f: FabricResult) => f.circuits.rows.find((x) => x.inFlight === f.settings.inFlight) ?? f.circuits.rows[f.circuits.rows.length - 1]!;
    const lone = (f: FabricResult) => f.circuits.rows.find((x) => x.inFlight === 1);
    const a = row(r.fabric.sqlite);
    const b = row(r.fabric.postgres);
    const a1 = lone(r.fabric.sqlite);
    const b1 = lone(r.fabric.postgres);
    lines.push(
      '## Circuit setup through a router (fabric suite, scripted router)',
      '',
      '| In flight | SQLite circuits/s | PostgreSQL circuits/s | PG ÷ SQLite | SQLite p50 / p99 ms | PostgreSQL p50 / p99 ms | SQLite controller CPU | PostgreSQL: controller + server CPU |',
      '|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const [x, y] of [
      [a1, b1],
      [a, b],
    ] as const) {
      if (!x || !y) continue;
      lines.push(
        `| ${x.inFlight} | ${fmt(x.circuits.perSecond)} | ${fmt(y.circuits.perSecond)} | ${pct(y.circuits.perSecond, x.circuits.perSecond)} | ${f2(x.circuits.p50Ms)} / ${f2(x.circuits.p99Ms)} | ` +
          `${f2(y.circuits.p50Ms)} / ${f2(y.circuits.p99Ms)} | ${x.circuits.cpuPct.toFixed(0)}% | ${y.circuits.cpuPct.toFixed(0)}% + ${(y.circuits.dbCpuPct ?? 0).toFixed(0)}% |`,
      );
    }
    const e = (f: FabricResult, c: number) => f.e2e.runs.find((x) => x.concurrency === c);
    const e8a = e(r.fabric.sqlite, 8);
    const e8b = e(r.fabric.postgres, 8);
    if (e8a && e8b) {
      lines.push(
        '',
        `End to end through an upstream router with Go SDK peers, concurrency 8: SQLite ${fmt(e8a.perSecond)} circuits/s (dial to first byte p50 ${f2(e8a.p50Ms)} / p99 ${f2(e8a.p99Ms)} ms), ` +
          `PostgreSQL ${fmt(e8b.perSecond)} circuits/s (p50 ${f2(e8b.p50Ms)} / p99 ${f2(e8b.p99Ms)} ms).`,
      );
    }
    lines.push('');
  }
  if (r.durability.length > 0) {
    lines.push('## kill -9 durability (test/durability/kill9.test.ts)', '', '| Store | Result | What it checked | Time s |', '|---|---|---|---:|');
    for (const d of r.durability) lines.push(`| ${d.store === 'sqlite' ? 'SQLite' : 'PostgreSQL'} | ${d.passed ? 'passed' : 'FAILED'} | ${d.summary} | ${d.seconds.toFixed(0)} |`);
    lines.push('');
  }
  return lines.join('\n');
}
