/**
 * Identity read benchmark: Portcullis vs. a bare node:https server answering the same bytes.
 * Usage: npm run bench [-- --identities N --duration S --connections C]
 * See bench/README.md.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:https';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { BENCH_ADMIN_PASSWORD, ensureIdentityDataset } from './datasets/identities.ts';

// ---- options ---------------------------------------------------------------------------------------------
const args = process.argv.slice(2);
function opt(name: string, fallback: number): number {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const n = Number(args[i + 1]);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} needs a positive integer`);
  return n;
}
const identities = opt('--identities', 100_000);
const duration = opt('--duration', 10);
const connections = opt('--connections', 16);
const WARMUP_S = 2;
const HOST = '127.0.0.1';
const dataDir = join('bench', '.data', `identities-${identities % 1000 === 0 ? `${identities / 1000}k` : identities}`);

const SCENARIOS = [
  {
    id: 'A',
    label: 'list identities: filter roleAttributes + name contains, sort by name desc, limit 25',
    path: '/edge/management/v1/identities?filter=anyOf(roleAttributes)%3D%22eng%22%20and%20name%20contains%20%22identity-09%22%20sort%20by%20name%20desc&limit=25',
  },
  { id: 'B', label: 'current identity (client API)', path: '/edge/client/v1/current-identity' },
] as const;

// ---- child processes ---------------------------------------------------------------------------------------
const children = new Set<ChildProcess>();

function killChildren(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  children.clear();
}
process.once('exit', killChildren);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    killChildren();
    process.exit(130);
  });
}

/** Spawns `node --import tsx <script> ...args` and resolves with the JSON of its `READY {...}` stdout line. */
function spawnReady<T>(script: string, scriptArgs: string[], timeoutMs = 120_000): Promise<{ child: ChildProcess; info: T }> {
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

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return void children.delete(child);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
  children.delete(child);
}

// ---- one-off HTTPS requests (certificate verified against the controller CA) -----------------------------
interface Captured {
  status: number;
  contentType: string;
  body: Buffer;
}

function fetchOnce(port: number, ca: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Captured> {
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
interface Row {
  scenario: string;
  server: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  total: number;
}

async function measure(port: number, path: string, headers: Record<string, string>, seconds: number) {
  return autocannon({
    url: `https://${HOST}:${port}${path}`,
    connections,
    duration: seconds,
    headers,
    timeout: 10,
    // autocannon forces rejectUnauthorized:false itself; loopback-only benchmark.
    tlsOptions: { servername: 'localhost' },
  });
}

function fmt(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** autocannon records latency in whole milliseconds. */
function ms(n: number): string {
  return n < 1 ? '<1' : fmt(n);
}

// ---- main --------------------------------------------------------------------------------------------------
async function main(): Promise<void> {
  const dataset = await ensureIdentityDataset(dataDir, identities);
  const tmp = mkdtempSync(join(tmpdir(), 'portcullis-bench-'));
  try {
    console.log('controller: starting (child process) ...');
    const controller = await spawnReady<{ port: number; caBundlePem: string }>('bench/serve.ts', [dataDir, '0']);
    const { port, caBundlePem: ca } = controller.info;
    console.log(`controller: listening on https://${HOST}:${port}`);

    const login = await fetchOnce(port, ca, 'POST', '/edge/management/v1/authenticate?method=password', { 'content-type': 'application/json' }, JSON.stringify({ username: 'admin', password: BENCH_ADMIN_PASSWORD }));
    if (login.status !== 200) throw new Error(`login failed: HTTP ${login.status} ${login.body.toString('utf8').slice(0, 500)}`);
    const token = (JSON.parse(login.body.toString('utf8')) as { data: { token: string } }).data.token;
    const headers = { 'zt-session': token, accept: 'application/json' };

    // Capture each response once: sanity checks, and the bytes the bare server will replay.
    const canned: Record<string, { status: number; contentType: string; bodyBase64: string }> = {};
    for (const s of SCENARIOS) {
      const t0 = performance.now();
      const r = await fetchOnce(port, ca, 'GET', s.path, headers);
      const ms = performance.now() - t0;
      if (r.status !== 200) throw new Error(`${s.id}: expected 200, got ${r.status}: ${r.body.toString('utf8').slice(0, 500)}`);
      const doc = JSON.parse(r.body.toString('utf8')) as { data: unknown; meta?: { pagination?: { totalCount?: number } } };
      if (s.id === 'A') {
        const total = doc.meta?.pagination?.totalCount ?? 0;
        const count = Array.isArray(doc.data) ? doc.data.length : 0;
        if (total <= 0) throw new Error(`A: totalCount is ${total}; the filter matches identity-09xxxx, which needs --identities >= 90000`);
        console.log(`check A: 200, totalCount=${total}, page=${count} items, ${r.body.length} bytes, first request ${ms.toFixed(0)} ms`);
      } else {
        console.log(`check ${s.id}: 200, ${r.body.length} bytes, first request ${ms.toFixed(0)} ms`);
      }
      canned[s.path] = { status: r.status, contentType: r.contentType, bodyBase64: r.body.toString('base64') };
    }
    const responsesFile = join(tmp, 'responses.json');
    writeFileSync(responsesFile, JSON.stringify(canned));

    console.log('bare server: starting (child process) ...');
    const bare = await spawnReady<{ port: number }>('bench/bare.ts', [dataDir, '0', responsesFile]);
    const barePort = bare.info.port;
    for (const s of SCENARIOS) {
      const r = await fetchOnce(barePort, ca, 'GET', s.path, headers);
      if (r.status !== 200 || r.body.toString('base64') !== canned[s.path]!.bodyBase64) throw new Error(`bare server does not replay ${s.id} identically`);
    }

    const rows: Row[] = [];
    for (const s of SCENARIOS) {
      for (const [server, p] of [
        ['Portcullis', port],
        ['bare node:https', barePort],
      ] as const) {
        await measure(p, s.path, headers, WARMUP_S); // warm-up (JIT, TLS session setup), discarded
        console.log(`measuring ${s.id} against ${server} for ${duration} s ...`);
        const r = await measure(p, s.path, headers, duration);
        const row: Row = {
          scenario: s.id,
          server,
          rps: r.requests.average,
          p50: r.latency.p50,
          p99: r.latency.p99,
          non2xx: r.non2xx,
          errors: r.errors + r.timeouts,
          total: r.requests.total,
        };
        if (row.non2xx || row.errors) console.log(`  !! ${server} ${s.id}: non2xx=${row.non2xx} errors=${r.errors} timeouts=${r.timeouts} status=${JSON.stringify(r.statusCodeStats)}`);
        rows.push(row);
      }
    }
    await stopChild(bare.child);
    await stopChild(controller.child);

    // ---- report ----
    const cpu = cpus();
    const lines = [
      '# Identity read benchmark',
      '',
      `- Date: ${new Date().toISOString().slice(0, 10)}`,
      `- Node ${process.version}, ${cpu[0]?.model ?? 'unknown CPU'}, ${cpu.length} cores (load generator and server share them)`,
      `- Dataset: ${fmt(dataset.count)} identities (seed 0x${dataset.seed.toString(16)}), loaded through the identity service in ${(dataset.loadMs / 1000).toFixed(1)} s`,
      `- autocannon: ${connections} connections, ${duration} s per row (after a ${WARMUP_S} s discarded warm-up), HTTPS over 127.0.0.1, keep-alive, no pipelining; latency resolution 1 ms`,
      '',
      ...SCENARIOS.map((s) => `- ${s.id}: \`GET ${s.path}\` (${s.label})`),
      '',
      '| Scenario | Server | req/s | p50 ms | p99 ms | non-2xx | errors | % of bare |',
      '|---|---|---:|---:|---:|---:|---:|---:|',
      ...rows.map((r) => {
        const bareRow = rows.find((b) => b.scenario === r.scenario && b.server !== 'Portcullis')!;
        const pct = r.server === 'Portcullis' ? `${((r.rps / bareRow.rps) * 100).toFixed(1)}%` : '100%';
        return `| ${r.scenario} | ${r.server} | ${fmt(r.rps)} | ${ms(r.p50)} | ${ms(r.p99)} | ${r.non2xx} | ${r.errors} | ${pct} |`;
      }),
      '',
    ];
    const report = lines.join('\n');
    console.log('\n' + report);
    mkdirSync(join('bench', 'results'), { recursive: true });
    writeFileSync(join('bench', 'results', 'identities.md'), report);
    console.log('written to bench/results/identities.md');
  } finally {
    killChildren();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : err);
  killChildren();
  process.exitCode = 1;
});
