/**
 * What every scenario shares: the sized dataset (read from `bench/.data/<size>/dataset.json`), a private copy
 * of its data directory (scenarios write — API sessions, identities, policies — and must not alter the
 * dataset), the controller child process, logins, the bare-Node limit server, and the result file.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import {
  apiClient,
  closedLoop,
  fetchOnce,
  machine,
  openLoop,
  pool,
  spawnReady,
  stopChild,
  setDatabaseServer,
  type ClientTls,
  type LoadFigures,
  type RequestGen,
} from '../lib.ts';

export interface DatasetUser {
  role: 'typical' | 'worst';
  identityId: string;
  username: string;
  password: string;
}

export interface Dataset {
  size: string;
  seed: number;
  counts: Record<string, number>;
  loadMs: number;
  adminUser: string;
  adminPassword: string;
  users: DatasetUser[];
  certUsers: Array<{ identityId: string; certPem: string; keyPem: string }>;
  probes: { allDialPolicyId: string; worstIdentityId: string; typicalIdentityId: string; typicalServiceCount: number; worstServiceCount: number };
}

export interface ScenarioOptions {
  size: string;
  /** Data directory of the dataset (default bench/.data/<size>). */
  dataDir: string;
  /** Seconds per measured run (closed and open loop each). */
  duration: number;
  /** Connections of the closed loop. */
  connections: number;
  /** Open-loop arrival rate as a fraction of Portcullis' closed-loop throughput for the same load. */
  openFraction: number;
  /** Upper bound of the open-loop rate (req/s), so the load generator itself keeps up. */
  maxRate: number;
  /** Distinct API sessions / identities for S1 and S2. */
  sessions: number;
  /** The arrival rate of the issue's latency target (req/s): hot loads are also measured open-loop at this rate. */
  targetRate: number;
  /** Worker processes of the controller under test (`--workers`). */
  workers: number;
  /**
   * Run on PostgreSQL: `database()` gives a fresh database holding the dataset's records (one per scenario, kept across
   * the scenario's restarts), `serverPid()` the server whose CPU is counted with the controller's. Results go to
   * `<scenario>-<size>-pg.json`. Absent: the SQLite store in the private data directory.
   */
  postgres?: { database: () => Promise<string>; serverPid: () => number | undefined };
}

/** One measured run. */
export interface ResultRow extends LoadFigures {
  load: string;
  server: 'portcullis' | 'bare';
  /**
   * closed: max throughput; open: constant arrival rate (a fraction of the closed-loop rate); target: constant
   * arrival rate at the target rate; burst: a fixed set of requests fired together.
   */
  mode: 'closed' | 'open' | 'target' | 'burst';
  connections: number;
}

/** A figure that is not a load run (times, sizes), with the bare-Node counterpart where one exists. */
export interface Metric {
  name: string;
  unit: string;
  portcullis: number;
  bare?: number;
  note?: string;
}

export interface ScenarioResult {
  scenario: string;
  title: string;
  size: string;
  date: string;
  machine: ReturnType<typeof machine>;
  dataset: { counts: Record<string, number>; loadMs: number; seed: number };
  settings: { duration: number; connections: number; openFraction: number; maxRate: number; warmupS: number; targetRate?: number; workers?: number; store?: 'sqlite' | 'postgres' };
  notes: string[];
  rows: ResultRow[];
  metrics: Metric[];
  /** Figures of a scenario's own shape (S13: its phases), rendered by the scenario's module. */
  extra?: unknown;
}

export const WARMUP_S = 1;
const CLIENT = '/edge/client/v1';
const MANAGEMENT = '/edge/management/v1';

interface ServeInfo {
  port: number;
  caBundlePem: string;
  startMs: number;
  rssMb: number;
}

/** Responses of the bare-Node server by request URL (bench/bare.ts). */
export type Canned = Record<string, { status: number; contentType: string; bodyBase64: string }>;

export class Bench {
  readonly rows: ResultRow[] = [];
  readonly metrics: Metric[] = [];
  readonly notes: string[] = [];
  /** Written to the result as `extra` when set. */
  extra?: unknown;
  private controller!: { child: ChildProcess; info: ServeInfo };
  private readonly tmp: string;
  /** The private copy of the dataset's data directory the controller runs on. */
  readonly dataDir: string;
  /** The scenario's own PostgreSQL database (`opts.postgres`). */
  private databaseUrl?: string;

  private constructor(
    readonly scenario: string,
    readonly title: string,
    readonly opts: ScenarioOptions,
    readonly dataset: Dataset,
  ) {
    this.tmp = mkdtempSync(join(tmpdir(), `portcullis-${scenario.toLowerCase()}-`));
    this.dataDir = join(this.tmp, 'data');
  }

  /** Copies the dataset's data directory and starts a controller on the copy. */
  static async open(scenario: string, title: string, opts: ScenarioOptions): Promise<Bench> {
    const marker = join(opts.dataDir, 'dataset.json');
    if (!existsSync(marker)) throw new Error(`no dataset at ${opts.dataDir}; run \`npm run bench:data -- --size ${opts.size}\` first`);
    const dataset = JSON.parse(readFileSync(marker, 'utf8')) as Dataset;
    const bench = new Bench(scenario, title, opts, dataset);
    cpSync(opts.dataDir, bench.dataDir, { recursive: true });
    if (opts.postgres) {
      // The records are in the scenario's database; the data directory keeps the PKI and the settings.
      bench.databaseUrl = await opts.postgres.database();
      rmSync(join(bench.dataDir, 'portcullis.db'), { force: true });
    }
    console.log(`[${scenario}] ${title} — dataset ${dataset.size} (${Object.entries(dataset.counts).map(([k, v]) => `${v} ${k}`).join(', ')})`);
    await bench.startController();
    return bench;
  }

  get port(): number {
    return this.controller.info.port;
  }
  get ca(): string {
    return this.controller.info.caBundlePem;
  }
  get pid(): number {
    return this.controller.child.pid!;
  }
  get serveInfo(): ServeInfo {
    return this.controller.info;
  }

  /** `flags` are passed to the controller (e.g. `--auth-limit 0`). */
  async startController(flags: string[] = []): Promise<{ spawnToReadyMs: number }> {
    const t0 = performance.now();
    const database = this.databaseUrl ? ['--database-url', this.databaseUrl] : [];
    this.controller = await spawnReady<ServeInfo>('bench/serve.ts', [this.dataDir, '0', String(this.opts.workers), ...flags, ...database]);
    if (this.opts.postgres) setDatabaseServer(this.controller.child.pid!, this.opts.postgres.serverPid);
    return { spawnToReadyMs: performance.now() - t0 };
  }

  async stopController(): Promise<void> {
    await stopChild(this.controller.child);
  }

  api(sockets = 8) {
    return apiClient(this.port, this.ca, sockets);
  }

  async adminToken(): Promise<string> {
    return this.login('management', this.dataset.adminUser, this.dataset.adminPassword);
  }

  async login(api: 'client' | 'management', username: string, password: string): Promise<string> {
    const r = await fetchOnce(this.port, this.ca, 'POST', `${api === 'client' ? CLIENT : MANAGEMENT}/authenticate?method=password`, { 'content-type': 'application/json' }, JSON.stringify({ username, password }));
    if (r.status !== 200) throw new Error(`login of ${username} failed: ${r.status} ${r.body.toString('utf8').slice(0, 300)}`);
    return (JSON.parse(r.body.toString('utf8')) as { data: { token: string } }).data.token;
  }

  user(role: 'typical' | 'worst'): DatasetUser {
    const u = this.dataset.users.find((x) => x.role === role);
    if (!u) throw new Error(`the dataset has no ${role} password user`);
    return u;
  }

  /**
   * API sessions of `count` distinct identities: the dataset's password users, plus non-admin identities given
   * a password authenticator through the management API here (on the private copy). Bounded by `count`.
   */
  async manySessions(count: number): Promise<string[]> {
    const admin = this.api(4);
    admin.setToken(await this.adminToken());
    const known = new Set(this.dataset.users.map((u) => u.identityId));
    const creds: Array<{ username: string; password: string }> = this.dataset.users.map((u) => ({ username: u.username, password: u.password }));
    const t0 = performance.now();
    for (let offset = 0; creds.length < count; offset += 500) {
      const page = await admin.must('GET', `${MANAGEMENT}/identities?limit=500&offset=${offset}&filter=${encodeURIComponent('isAdmin = false')}`, undefined, 200);
      const items = page.data as Array<{ id: string; name: string }>;
      if (items.length === 0) break;
      const fresh = items.filter((i) => !known.has(i.id)).slice(0, count - creds.length);
      await pool(fresh, 4, async (identity) => {
        const username = `bench-${identity.id}`;
        const password = `bench-pw-${identity.id}`;
        await admin.must('POST', `${MANAGEMENT}/authenticators`, { method: 'updb', identityId: identity.id, username, password }, 201);
        creds.push({ username, password });
      });
    }
    admin.close();
    const tokens: string[] = new Array(creds.length);
    await pool(creds, 4, async (c, i) => {
      tokens[i] = await this.login('client', c.username, c.password);
    });
    console.log(`  ${tokens.length} API sessions of distinct identities ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    return tokens;
  }

  /**
   * Measures one load against Portcullis and against the bare-Node server replaying Portcullis' own response
   * bytes: closed loop (max throughput), then open loop at a constant rate (a fraction of Portcullis' closed-loop
   * throughput, the same rate for both servers). Each run is preceded by a discarded warm-up.
   */
  async loadPair(
    load: string,
    gen: RequestGen,
    o: { status: number; connections?: number; tls?: ClientTls; maxRequests?: number; open?: boolean; target?: boolean; captureDistinct?: number },
  ): Promise<void> {
    const connections = o.connections ?? this.opts.connections;
    const { duration } = this.opts;
    // Capture one representative response per distinct URL among the first requests (also a sanity check).
    const canned: Canned = {};
    for (let i = 0; i < (o.captureDistinct ?? 1); i++) {
      const s = gen(i);
      if (canned[s.path]) continue;
      const r = await fetchOnce(this.port, this.ca, s.method, s.path, s.headers, s.body, o.tls);
      if (r.status !== o.status) throw new Error(`${load}: ${s.method} ${s.path} answered ${r.status}, expected ${o.status}: ${r.body.toString('utf8').slice(0, 300)}`);
      canned[s.path] = { status: r.status, contentType: r.contentType, bodyBase64: r.body.toString('base64') };
    }
    const bare = await this.startBare(canned);
    try {
      const targets = [
        ['portcullis', this.port, this.pid],
        ['bare', bare.port, bare.pid],
      ] as const;
      let rate = 0;
      const maxRps: Record<string, number> = {};
      for (const [server, port, pid] of targets) {
        const closedOpts = { connections, tls: o.tls, pid, maxRequests: o.maxRequests };
        await closedLoop(port, gen, { ...closedOpts, seconds: WARMUP_S, maxRequests: o.maxRequests ? Math.ceil(o.maxRequests / 4) : undefined });
        const c = await closedLoop(port, gen, { ...closedOpts, seconds: duration });
        this.push({ load, server, mode: 'closed', connections, ...c });
        maxRps[server] = c.rps;
        if (server === 'portcullis') rate = Math.max(1, Math.min(this.opts.maxRate, Math.round(c.rps * this.opts.openFraction)));
      }
      if (o.open !== false) {
        for (const [server, port, pid] of targets) {
          const r = await openLoop(port, gen, { rate, seconds: duration, tls: o.tls, pid, sockets: Math.max(64, connections) });
          this.push({ load, server, mode: 'open', connections: Math.max(64, connections), ...r });
        }
      }
      if (o.target) {
        // The issue's latency target is stated at a fixed rate: measure both servers at exactly that rate. A server
        // whose closed-loop maximum is below it cannot meet it; driving it there would only build a queue that
        // outlasts the run and spoils the next measurement, so that run is skipped and reported as such.
        for (const [server, port, pid] of targets) {
          if (maxRps[server]! < this.opts.targetRate) {
            this.notes.push(`${load}: ${server} not driven at ${this.opts.targetRate}/s (closed-loop maximum ${Math.round(maxRps[server]!)} req/s).`);
            continue;
          }
          const r = await openLoop(port, gen, { rate: this.opts.targetRate, seconds: duration, tls: o.tls, pid, sockets: Math.max(64, connections) });
          this.push({ load, server, mode: 'target', connections: Math.max(64, connections), ...r });
        }
      }
    } finally {
      await stopChild(bare.child);
    }
  }

  push(row: ResultRow): void {
    this.rows.push(row);
    const flag = row.non2xx || row.errors ? `  !! non-2xx ${row.non2xx}, errors ${row.errors}` : '';
    const rate = row.mode === 'open' || row.mode === 'target' ? ` @${row.targetRate}/s` : ` c=${row.connections}`;
    console.log(
      `  ${row.load} | ${row.server.padEnd(10)} | ${row.mode}${rate} | ${row.rps.toFixed(0)} req/s | p50 ${row.p50.toFixed(2)} p99 ${row.p99.toFixed(2)} p99.9 ${row.p999.toFixed(2)} ms | cpu ${row.cpuPct.toFixed(0)}%${row.dbCpuPct !== undefined ? ` + PostgreSQL ${row.dbCpuPct.toFixed(0)}%` : ''} rss ${row.rssMb.toFixed(0)} MB${flag}`,
    );
  }

  metric(m: Metric): void {
    this.metrics.push(m);
    console.log(`  ${m.name}: ${fmtNum(m.portcullis)} ${m.unit}${m.bare !== undefined ? ` (bare ${fmtNum(m.bare)} ${m.unit})` : ''}${m.note ? ` — ${m.note}` : ''}`);
  }

  /** Starts the bare-Node server with the given canned responses; returns its port and pid. */
  async startBare(canned: Canned): Promise<{ child: ChildProcess; port: number; pid: number; spawnToReadyMs: number }> {
    return startBareServer(this.tmp, this.dataDir, canned);
  }

  /** Writes bench/results/<scenario>-<size>.json, stops the controller and removes the private copy. */
  async finish(): Promise<ScenarioResult> {
    const result: ScenarioResult = {
      scenario: this.scenario,
      title: this.title,
      size: this.opts.size,
      date: new Date().toISOString(),
      machine: machine(),
      dataset: { counts: this.dataset.counts, loadMs: this.dataset.loadMs, seed: this.dataset.seed },
      settings: { duration: this.opts.duration, connections: this.opts.connections, openFraction: this.opts.openFraction, maxRate: this.opts.maxRate, warmupS: WARMUP_S, targetRate: this.opts.targetRate, workers: this.opts.workers, store: this.opts.postgres ? 'postgres' : 'sqlite' },
      notes: this.notes,
      rows: this.rows,
      metrics: this.metrics,
      ...(this.extra === undefined ? {} : { extra: this.extra }),
    };
    mkdirSync(join('bench', 'results'), { recursive: true });
    const file = join('bench', 'results', `${this.scenario}-${this.opts.size}${this.opts.workers > 1 ? `-w${this.opts.workers}` : ''}${this.opts.postgres ? '-pg' : ''}.json`);
    writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
    console.log(`  written ${file}`);
    await this.close();
    return result;
  }

  async close(): Promise<void> {
    if (this.controller) await stopChild(this.controller.child);
    rmSync(this.tmp, { recursive: true, force: true });
  }
}

/**
 * Starts the bare-Node server (bench/bare.ts) answering the canned responses with the TLS key and chain of the
 * controller data directory `dataDir`; the responses file goes to `tmp`.
 */
export async function startBareServer(tmp: string, dataDir: string, canned: Canned): Promise<{ child: ChildProcess; port: number; pid: number; spawnToReadyMs: number }> {
  const file = join(tmp, `bare-${Date.now()}-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(canned));
  const t0 = performance.now();
  const b = await spawnReady<{ port: number }>('bench/bare.ts', [dataDir, '0', file]);
  return { child: b.child, port: b.info.port, pid: b.child.pid!, spawnToReadyMs: performance.now() - t0 };
}

export function fmtNum(n: number): string {
  return Math.abs(n) >= 100 ? n.toFixed(0) : n.toFixed(2);
}

/** GET with a session token, JSON accepted. */
export function get(path: string, token: string): { method: string; path: string; headers: Record<string, string> } {
  return { method: 'GET', path, headers: { 'zt-session': token, accept: 'application/json' } };
}

/** POST of a JSON body, optionally with a session token. */
export function postJson(path: string, body: unknown, token?: string): { method: string; path: string; headers: Record<string, string>; body: string } {
  const headers: Record<string, string> = { accept: 'application/json', 'content-type': 'application/json' };
  if (token) headers['zt-session'] = token;
  return { method: 'POST', path, headers, body: JSON.stringify(body) };
}

export { CLIENT, MANAGEMENT };
