/**
 * Shared machinery of the benchmark suites: child processes for the controller and the bare server,
 * one-off verified HTTPS requests, a keep-alive API client for loading datasets, and autocannon runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:https';
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

export function fetchOnce(port: number, ca: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Captured> {
  return new Promise((resolve, reject) => {
    const req = request(
      // The server certificate is issued for the advertised name (localhost); connect to 127.0.0.1 regardless.
      { host: HOST, port, method, path, headers, ca, servername: 'localhost', timeout: 30_000, agent: false },
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
