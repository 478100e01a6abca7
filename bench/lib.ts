/**
 * Shared machinery of the benchmark suites: child processes for the controller and the bare server,
 * one-off verified HTTPS requests, a keep-alive API client for loading datasets, and autocannon runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:https';
import { readFileSync } from 'node:fs';
import { cpus, platform, release, totalmem } from 'node:os';
import autocannon from 'autocannon';

export const HOST = '127.0.0.1';

// ---- child processes ---------------------------------------------------------------------------------------
const children = new Set<ChildProcess>();


export function killChildren(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  children.clear();
}

/** Spawns `node --import tsx <script> ...args` and resolves with the JSON of its `READY {...}` stdout line. */
export function spawnReady<T>(script: string, scriptArgs: string[], timeoutMs = 120_000): Promise<{ child: ChildProcess; info: T }> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...scriptArgs], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => fail(new Error(`${script}: not ready after ${timeoutMs} ms`)), timeoutMs);
    function fail(err: Error) {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(err);
    }
    child.once('exit', (code, signal) => fail(new Error(`${script} exited early (code ${code}, signal ${signal})`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const line = buffered.split('\n').find((l) => l.startsWith('READY '));
      if (!line) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      child.stdout!.removeAllListeners('data');
      child.stdout!.resume();
      resolve({ child, info: JSON.parse(line.slice('READY '.length)) as T });
    });
  });
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return void children.delete(child);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
  children.delete(child);
}

// ---- one-off HTTPS requests (certificate verified against the controller CA) -----------------------------
export interface Captured {
  status: number;
  contentType: string;
  body: Buffer;
}

export function fetchOnce(port: number, ca: string, method: string, path: string, headers: Record<string, string>, body?: string, tls?: { cert: string; key: string }): Promise<Captured> {
  return new Promise((resolve, reject) => {
    const req = request(
      // The server certificate is issued for the advertised name (localhost); connect to 127.0.0.1 regardless.
      { host: HOST, port, method, path, headers, ca, servername: 'localhost', timeout: 30_000, agent: false, ...(tls ?? {}) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

// ---- measurement -------------------------------------------------------------------------------------------
export interface Row {
  scenario: string;
  server: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  total: number;
}

export interface MeasureOptions {
  connections: number;
  seconds: number;
  method?: 'GET' | 'POST';
  body?: string;
}

export async function measure(port: number, path: string, headers: Record<string, string>, opts: MeasureOptions) {
  return autocannon({
    url: `https://${HOST}:${port}${path}`,
    connections: opts.connections,
    method: opts.method ?? 'GET',
    body: opts.body,
    duration: opts.seconds,
    headers,
    timeout: 10,
    // autocannon forces rejectUnauthorized:false itself; loopback-only benchmark.
    tlsOptions: { servername: 'localhost' },
  });
}

export function fmt(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** autocannon records latency in whole milliseconds. */
export function ms(n: number): string {
  return n < 1 ? '<1' : fmt(n);
}

/** A keep-alive JSON client for loading datasets through the public API (verifies the controller CA). */
export function apiClient(port: number, ca: string, sockets = 8) {
  const agent = new Agent({ keepAlive: true, maxSockets: sockets, ca, servername: 'localhost' });
  let token = '';
  async function call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { accept: 'application/json' };
      if (payload !== undefined) headers['content-type'] = 'application/json';
      if (token) headers['zt-session'] = token;
      const req = request({ host: HOST, port, method, path, headers, agent, timeout: 60_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined });
        });
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.on('error', reject);
      req.end(payload);
    });
  }
  return {
    call,
    /** Calls and insists on the expected status; returns the parsed body. */
    async must(method: string, path: string, body: unknown, status: number): Promise<any> {
      const r = await call(method, path, body);
      if (r.status !== status) throw new Error(`${method} ${path}: expected ${status}, got ${r.status}: ${JSON.stringify(r.json).slice(0, 400)}`);
      return r.json;
    },
    setToken(t: string) {
      token = t;
    },
    close() {
      agent.destroy();
    },
  };
}

/** Runs async work over items with a bounded number in flight. */
export async function pool<T>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const runners = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      await work(items[i]!, i);
    }
  });
  await Promise.all(runners);
}

/** Installs the handlers that kill child servers when the benchmark process ends. */
export function killChildrenOnExit(): void {
  process.once('exit', killChildren);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      killChildren();
      process.exit(130);
    });
  }
}

/** Markdown rows comparing each scenario's Portcullis row with the bare server's. */
export function comparisonTable(rows: readonly Row[]): string[] {
  return [
    '| Scenario | Server | req/s | p50 ms | p99 ms | non-2xx | errors | % of bare |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) => {
      const bareRow = rows.find((b) => b.scenario === r.scenario && b.server !== 'Portcullis')!;
      const pct = r.server === 'Portcullis' ? `${((r.rps / bareRow.rps) * 100).toFixed(1)}%` : '100%';
      return `| ${r.scenario} | ${r.server} | ${fmt(r.rps)} | ${ms(r.p50)} | ${ms(r.p99)} | ${r.non2xx} | ${r.errors} | ${pct} |`;
    }),
  ];
}

// ---- scenario machinery (open and closed loop, server CPU and RSS) ------------------------------------------

/** One request of a load: what a generator returns for request number i. */
export interface Sample {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}
export type RequestGen = (i: number) => Sample;

/** TLS client credentials for mutual TLS loads. */
export interface ClientTls {
  cert: string;
  key: string;
}

export interface LoadFigures {
  /** Completed requests per second over the measured window. */
  rps: number;
  /** Latency percentiles in milliseconds. */
  p50: number;
  p99: number;
  p999: number;
  non2xx: number;
  errors: number;
  total: number;
  /** Server process CPU over the window, in percent of one core (can exceed 100: GC and libuv threads). */
  cpuPct: number;
  /** The database server's CPU over the window (PostgreSQL, all its processes), in percent of one core; absent on SQLite. */
  dbCpuPct?: number;
  /** Server process resident set at the end of the window, MB. */
  rssMb: number;
  /** Open loop only: the requested arrival rate (req/s). */
  targetRate?: number;
  /** Open loop only: the slowest answer (ms), the failures among `errors` that were timeouts, answers by status. */
  max?: number;
  timeouts?: number;
  statuses?: Record<string, number>;
}

/** One answer (status, latency from the scheduled time, body when asked for) or failure (status 0) of an open loop. */
export interface OpenLoopResult {
  i: number;
  status: number;
  ms: number;
  body?: Buffer;
  failure?: 'timeout' | 'error';
}

export interface OpenLoopOptions {
  rate: number;
  seconds: number;
  sockets?: number;
  tls?: ClientTls;
  pid: number;
  /** Called when the schedule starts (the pool's connections are open). */
  onStart?: () => void;
  /** Called with every answer and failure; answers to the requests `bodies` picks carry their body. */
  onResult?: (r: OpenLoopResult) => void;
  bodies?: (i: number) => boolean;
  /** A request not answered this long after its *scheduled* time (queueing included) counts as a timeout. */
  deadlineMs?: number;
}

const CLOCK_TICKS_PER_S = 100; // USER_HZ on Linux

/** CPU time (user + system, ms) and RSS (MB) of one process, read from /proc. */
function oneProcStats(pid: number): { cpuMs: number; rssMb: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15 (1-based).
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cpuMs = ((Number(rest[11]) + Number(rest[12])) * 1000) / CLOCK_TICKS_PER_S;
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    return { cpuMs, rssMb: rssKb / 1024 };
  } catch {
    return { cpuMs: 0, rssMb: 0 };
  }
}

/**
 * CPU time (user + system, ms) a database server has used so far: its main process, the children it has reaped
 * (PostgreSQL's backends of closed connections) and those alive (one backend per open connection).
 */
export function serverCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // utime, stime, cutime, cstime are fields 14 to 17 (1-based).
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const own = [11, 12, 13, 14].reduce((sum, i) => sum + Number(rest[i]), 0);
    let ms = (own * 1000) / CLOCK_TICKS_PER_S;
    for (const child of childrenOf(pid)) ms += oneProcStats(child).cpuMs;
    return ms;
  } catch {
    return 0;
  }
}

/** Direct children of a process (its worker processes when it serves with several). */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * CPU time (user + system, ms) and RSS (MB) of a process and its children (a controller serving with several
 * worker processes is the primary plus its workers), read from /proc.
 */
export function procStats(pid: number): { cpuMs: number; rssMb: number; processes: number } {
  const total = { ...oneProcStats(pid), processes: 1 };
  for (const child of childrenOf(pid)) {
    const c = oneProcStats(child);
    total.cpuMs += c.cpuMs;
    total.rssMb += c.rssMb;
    total.processes++;
  }
  return total;
}

/** Controller pid → the pid of the database server it uses (PostgreSQL's postmaster), whose CPU counts with it. */
const databaseServers = new Map<number, () => number | undefined>();

/** From now on, runs measured against `controllerPid` also report the CPU of the database server `serverPid()`. */
export function setDatabaseServer(controllerPid: number, serverPid: () => number | undefined): void {
  databaseServers.set(controllerPid, serverPid);
}

/**
 * Runs `work` while sampling the server's CPU time; returns the CPU share over the wall time and the final RSS, and
 * the database server's CPU share when the server has one registered (`setDatabaseServer`).
 */
export async function withServerStats<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; cpuPct: number; rssMb: number; dbCpuPct?: number }> {
  const dbPid = databaseServers.get(pid)?.();
  const before = procStats(pid);
  const db0 = dbPid ? serverCpuMs(dbPid) : 0;
  const t0 = performance.now();
  const result = await work();
  const wall = performance.now() - t0;
  const after = procStats(pid);
  const dbCpuPct = dbPid && wall > 0 ? ((serverCpuMs(dbPid) - db0) / wall) * 100 : undefined;
  return { result, cpuPct: wall > 0 ? ((after.cpuMs - before.cpuMs) / wall) * 100 : 0, rssMb: after.rssMb, ...(dbCpuPct !== undefined ? { dbCpuPct } : {}) };
}

/**
 * Closed loop, maximum throughput: autocannon with `connections` keep-alive connections, each sending its next
 * request as soon as the previous answer arrived. Every request is built by `gen` (so tokens and bodies can
 * rotate). Latency resolution is autocannon's: 1 ms.
 */
export async function closedLoop(
  port: number,
  gen: RequestGen,
  opts: { connections: number; seconds: number; maxRequests?: number; tls?: ClientTls; pid: number; onResponse?: (i: number, status: number, body: string) => void },
): Promise<LoadFigures> {
  let counter = 0;
  const first = gen(0);
  const run = () =>
    autocannon({
      url: `https://${HOST}:${port}${first.path}`,
      connections: opts.connections,
      duration: opts.seconds,
      ...(opts.maxRequests ? { maxOverallRequests: Math.max(opts.maxRequests, opts.connections) } : {}),
      timeout: 10,
      // autocannon forces rejectUnauthorized:false itself; loopback-only benchmark.
      tlsOptions: { servername: 'localhost', ...(opts.tls ?? {}) },
      requests: [
        {
          setupRequest: (req: Record<string, unknown>, context: Record<string, unknown>) => {
            context.index = counter;
            const s = gen(counter++);
            return { ...req, method: s.method, path: s.path, headers: s.headers, body: s.body };
          },
          ...(opts.onResponse ? { onResponse: (status: number, body: unknown, context: Record<string, unknown>) => opts.onResponse!(context.index as number, status, String(body ?? '')) } : {}),
        },
      ],
    });
  const { result: r, cpuPct, rssMb, dbCpuPct } = await withServerStats(opts.pid, async () => run());
  return {
    ...(dbCpuPct !== undefined ? { dbCpuPct } : {}),
    rps: r.duration > 0 ? r.requests.total / r.duration : r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    p999: r.latency.p99_9,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    total: r.requests.total,
    cpuPct,
    rssMb,
    statuses: Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([status, s]) => [status, s.count])),
  };
}

/**
 * Open loop at a constant arrival rate with our own scheduler: request i is due at start + i/rate, whatever
 * happened to earlier requests; a 1 ms timer sends every request that is due (over a keep-alive pool of up to
 * `sockets` connections; when all are busy, requests wait in the pool's queue). Latency is measured with the
 * monotonic clock from the *scheduled* send time to the end of the response, so queueing caused by a slow
 * server is counted (no coordinated omission). Resolution: microseconds.
 */
export async function openLoop(port: number, gen: RequestGen, opts: OpenLoopOptions): Promise<LoadFigures> {
  const agent = new Agent({ keepAlive: true, maxSockets: opts.sockets ?? 64, rejectUnauthorized: false, servername: 'localhost', ...(opts.tls ?? {}) });
  const n = Math.max(1, Math.round(opts.rate * opts.seconds));
  const interval = 1000 / opts.rate;
  const latencies = new Float64Array(n).fill(Number.NaN);
  let non2xx = 0;
  let errors = 0;
  let timeouts = 0;
  const statuses: Record<string, number> = {};
  let finished = 0;
  let lastEnd = 0;
  const work = () =>
    new Promise<void>((resolve) => {
      const start = performance.now();
      let sent = 0;
      const drainDeadline = start + opts.seconds * 1000 + 15_000;
      const fire = (i: number, scheduled: number) => {
        const s = gen(i);
        const headers = s.body === undefined ? s.headers : { ...s.headers, 'content-length': String(Buffer.byteLength(s.body)) };
        let timedOut = false;
        const expire = () => {
          timedOut = true;
          req.destroy(new Error('timeout'));
        };
        const deadline = opts.deadlineMs === undefined ? undefined : setTimeout(expire, Math.max(0, scheduled + opts.deadlineMs - performance.now()));
        const req = request({ host: HOST, port, method: s.method, path: s.path, headers, agent, timeout: 10_000 }, (res) => {
          const chunks: Buffer[] | undefined = opts.bodies?.(i) ? [] : undefined;
          res.on('data', (c: Buffer) => chunks?.push(c));
          res.on('end', () => {
            clearTimeout(deadline);
            const end = performance.now();
            const status = res.statusCode ?? 0;
            latencies[i] = end - scheduled;
            lastEnd = end;
            if (status < 200 || status >= 300) non2xx++;
            statuses[status] = (statuses[status] ?? 0) + 1;
            opts.onResult?.({ i, status, ms: end - scheduled, body: chunks && Buffer.concat(chunks) });
            done();
          });
        });
        req.on('timeout', expire);
        req.on('error', () => {
          clearTimeout(deadline);
          errors++;
          if (timedOut) timeouts++;
          opts.onResult?.({ i, status: 0, ms: performance.now() - scheduled, failure: timedOut ? 'timeout' : 'error' });
          done();
        });
        req.end(s.body);
      };
      const done = () => {
        finished++;
        if (finished === n) resolve();
      };
      const tick = () => {
        const now = performance.now();
        const due = Math.min(n, Math.floor((now - start) / interval) + 1);
        while (sent < due) {
          const i = sent++;
          fire(i, start + i * interval);
        }
        if (sent < n) setTimeout(tick, 1);
        else if (finished < n) {
          const check = setInterval(() => {
            if (finished >= n) clearInterval(check);
            else if (performance.now() > drainDeadline) {
              clearInterval(check);
              errors += n - finished;
              timeouts += n - finished;
              resolve();
            }
          }, 50);
        }
      };
      tick();
    });
  // Open the pool's connections first (TLS handshakes), so the schedule does not start with a handshake storm.
  await Promise.all(
    Array.from({ length: opts.sockets ?? 64 }, () =>
      new Promise<void>((resolve) => {
        const s = gen(0);
        const req = request({ host: HOST, port, method: 'GET', path: s.path, headers: s.headers, agent, timeout: 10_000 }, (res) => {
          res.on('data', () => {});
          res.on('end', () => resolve());
        });
        req.on('error', () => resolve());
        req.end();
      }),
    ),
  );
  const t0 = performance.now();
  opts.onStart?.();
  const { cpuPct, rssMb, dbCpuPct } = await withServerStats(opts.pid, work);
  agent.destroy();
  const ok = Array.from(latencies).filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  const window = Math.max(1, (lastEnd || performance.now()) - t0) / 1000;
  return {
    rps: ok.length / window,
    p50: percentileOf(ok, 50),
    p99: percentileOf(ok, 99),
    p999: percentileOf(ok, 99.9),
    non2xx,
    errors,
    total: ok.length,
    cpuPct,
    ...(dbCpuPct !== undefined ? { dbCpuPct } : {}),
    rssMb,
    targetRate: opts.rate,
    max: ok.length ? ok[ok.length - 1]! : Number.NaN,
    timeouts,
    statuses,
  };
}

/** Nearest-rank percentile of an ascending array (NaN when empty). */
export function percentileOf(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

/** Machine description recorded with every result. */
export function machine(): { node: string; cpu: string; cores: number; memGb: number; os: string } {
  const cpu = cpus();
  return { node: process.version, cpu: cpu[0]?.model ?? 'unknown CPU', cores: cpu.length, memGb: Math.round(totalmem() / 2 ** 30), os: `${platform()} ${release()}` };
}
