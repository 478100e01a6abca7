/**
 * Start time and memory of the ways to start the controller: `npm start` (npm → node dist/main.js), `node .` /
 * `node dist/main.js` (no wrapper), and the TypeScript-at-run-time start that `npm start` used before the
 * production build (`npm run start:dev`, `node --import tsx src/main.ts`), each with the default workers (one per
 * core) and with `--workers 1`, on an empty data dir.
 *
 * For each: the cold start (spawn → the "Portcullis ready" line; median of --runs) at a first start (empty data
 * dir: database, PKI and admin created) and at a later start (all there); then, on one more later start, the RSS
 * of every process of the tree (npm and its shell, the primary, the workers) 1 s after ready and after a closed-loop
 * load of logged-in `GET /edge/management/v1/identities` (autocannon, --connections, --seconds), with PSS (RSS with
 * shared pages divided among the processes sharing them) and the peak RSS (VmHWM) for the total. The variants take
 * turns run by run. A process left running after SIGTERM to the started one is reported and killed.
 *
 *   node --import tsx bench/footprint.ts [--runs 5] [--seconds 10] [--connections 16] [--only npm-dist,node-dist,...]
 *                                        [--before DIR]
 *
 * The "before" starts run in this tree (`npm run start:dev`), or with --before DIR in a copy of the version before
 * the build (`git archive <commit> | tar -x -C DIR`, node_modules linked in), whose `npm start` ran tsx through sh.
 *
 * Needs the build (npm run build) and Linux /proc. Prints Markdown tables; writes nothing. `npm start` rebuilds when
 * src/ changed, so measure in a tree nobody edits meanwhile (a copy: src/, dist/, scripts/, bench/, package.json,
 * the tsconfigs, node_modules linked).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fetchOnce, fmt, HOST, machine, measure } from './lib.ts';

const repo = fileURLToPath(new URL('../', import.meta.url));
const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const runs = Number(flag('runs', '5'));
const seconds = Number(flag('seconds', '10'));
const connections = Number(flag('connections', '16'));
const PASSWORD = 'footprint-admin-password';

interface Variant {
  key: string;
  label: string;
  command: string[];
  cwd?: string;
}
const beforeDir = flag('before', '');
const variants: Variant[] = [
  { key: 'npm-dist', label: '`npm start` (npm → `node dist/main.js`)', command: ['npm', 'start', '--'] },
  { key: 'node-dist', label: '`node .` (= `node dist/main.js`)', command: [process.execPath, '.'] },
  beforeDir
    ? { key: 'npm-tsx', label: 'before: `npm start` (npm → sh → `node --import tsx src/main.ts`)', command: ['npm', 'start', '--'], cwd: beforeDir }
    : { key: 'npm-tsx', label: '`npm run start:dev` (npm → `node --import tsx src/main.ts`)', command: ['npm', 'run', 'start:dev', '--'] },
  { key: 'node-tsx', label: '`node --import tsx src/main.ts`', command: [process.execPath, '--import', 'tsx', 'src/main.ts'], ...(beforeDir ? { cwd: beforeDir } : {}) },
];
const only = flag('only', '').split(',').filter(Boolean);
const chosen = only.length ? variants.filter((v) => only.includes(v.key)) : variants;
const workerSettings: Array<{ label: string; args: string[] }> = [
  { label: 'default (one per core)', args: [] },
  { label: '1', args: ['--workers', '1'] },
];

// ---- /proc ---------------------------------------------------------------------------------------------------
function ppidOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/** The process and all its descendants. */
function tree(root: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const ppid = ppidOf(Number(entry));
    if (ppid === undefined) continue;
    parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
  }
  const out: number[] = [];
  const walk = (pid: number) => {
    out.push(pid);
    for (const c of parents.get(pid) ?? []) walk(c);
  };
  walk(root);
  return out;
}

function kb(pid: number, file: string, field: string): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/${file}`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

function cmdline(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

type Role = 'npm' | 'sh' | 'primary' | 'workers' | 'other';

/** RSS (MB) of each role in the tree of `root`, and the tree's total RSS and PSS. */
function footprint(root: number): { rss: Record<Role, number>; counts: Record<Role, number>; totalRss: number; totalPss: number; totalPeak: number } {
  const rss: Record<Role, number> = { npm: 0, sh: 0, primary: 0, workers: 0, other: 0 };
  const counts: Record<Role, number> = { npm: 0, sh: 0, primary: 0, workers: 0, other: 0 };
  let primary: number | undefined;
  let totalRss = 0;
  let totalPss = 0;
  let totalPeak = 0;
  for (const pid of tree(root)) {
    const argv = cmdline(pid);
    const text = argv.join(' ');
    let role: Role;
    if (/npm-cli\.js|(^|\/)npm( |$)/.test(text)) role = 'npm';
    else if (/(^|\/)(sh|dash|bash)$/.test(argv[0] ?? '')) role = 'sh';
    else if (/node$/.test(argv[0] ?? '') && primary === undefined) role = 'primary';
    else if (/node$/.test(argv[0] ?? '') && ppidOf(pid) === primary) role = 'workers';
    else role = 'other';
    if (role === 'primary') primary = pid;
    const r = kb(pid, 'status', 'VmRSS') / 1024;
    rss[role] += r;
    counts[role] += 1;
    totalRss += r;
    totalPss += kb(pid, 'smaps_rollup', 'Pss') / 1024;
    totalPeak += kb(pid, 'status', 'VmHWM') / 1024;
  }
  return { rss, counts, totalRss, totalPss, totalPeak };
}

// ---- one start -----------------------------------------------------------------------------------------------
interface Running {
  child: ChildProcess;
  readyMs: number;
  port: number;
}

async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, HOST, () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

async function start(variant: Variant, dataDir: string, workerArgs: string[]): Promise<Running> {
  const port = await freePort();
  const { NODE_OPTIONS: _dropped, ...env } = process.env;
  const [program, ...rest] = variant.command;
  const t0 = performance.now();
  const child = spawn(program!, [...rest, '--data-dir', dataDir, '--address', HOST, '--port', String(port), '--admin-password', PASSWORD, '--log-level', 'info', ...workerArgs], {
    cwd: variant.cwd ?? repo,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stderr!.on('data', (c) => (out += c));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${variant.key}: not ready after 60 s:\n${out}`)), 60_000);
    child.once('exit', (code) => reject(new Error(`${variant.key}: exited early (${code}):\n${out}`)));
    child.stdout!.on('data', (c) => {
      out += c;
      if (!out.includes('Portcullis ready')) return;
      const readyMs = performance.now() - t0;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      child.stdout!.removeAllListeners('data');
      child.stdout!.resume();
      resolve({ child, readyMs, port });
    });
  });
}

/** Processes a stop left running (a wrapper that did not pass the signal on), per variant. */
const leftovers = new Map<string, number>();

async function stop(running: Running, variant: Variant): Promise<void> {
  const pids = tree(running.child.pid!);
  const exited = new Promise<void>((r) => (running.child.exitCode !== null ? r() : running.child.once('exit', () => r())));
  running.child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
  // Whatever a wrapper left behind (it should leave nothing) is reported and killed.
  await new Promise((r) => setTimeout(r, 200));
  for (const pid of pids) {
    if (ppidOf(pid) === undefined) continue;
    console.error(`footprint: process ${pid} (${cmdline(pid).join(' ')}) outlived the stop; killed`);
    leftovers.set(variant.key, (leftovers.get(variant.key) ?? 0) + 1);
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Memory {
  idle: ReturnType<typeof footprint>;
  loaded: ReturnType<typeof footprint>;
  reqPerSec: number;
  errors: number;
}

/** One more later start: the tree's memory 1 s after ready, then after the load. */
async function memory(variant: Variant, dataDir: string, workerArgs: string[]): Promise<Memory> {
  const r = await start(variant, dataDir, workerArgs);
  try {
    await sleep(1000);
    const idle = footprint(r.child.pid!);
    const ca = readFileSync(join(dataDir, 'pki', 'root-ca.cert.pem'), 'utf8');
    const login = await fetchOnce(r.port, ca, 'POST', '/edge/management/v1/authenticate?method=password', { 'content-type': 'application/json' }, JSON.stringify({ username: 'admin', password: PASSWORD }));
    if (login.status !== 200) throw new Error(`login: ${login.status} ${login.body.toString()}`);
    const token = JSON.parse(login.body.toString()).data.token as string;
    const load = await measure(r.port, '/edge/management/v1/identities', { 'zt-session': token }, { connections, seconds });
    const loaded = footprint(r.child.pid!);
    return { idle, loaded, reqPerSec: load.requests.average, errors: load.errors + load.non2xx };
  } finally {
    await stop(r, variant);
  }
}

interface Result {
  variant: Variant;
  workers: string;
  firstMs: number[];
  laterMs: number[];
  mem: Memory;
}

/**
 * The variants take turns (run i of each, then run i + 1 of each), so that whatever else the machine does
 * weighs on all of them alike.
 */
async function measureAll(workers: { label: string; args: string[] }): Promise<Result[]> {
  const tmp = mkdtempSync(join(tmpdir(), 'portcullis-footprint-'));
  try {
    const firstMs = chosen.map(() => [] as number[]);
    const laterMs = chosen.map(() => [] as number[]);
    const dirOf = (v: number, i: number) => join(tmp, `${chosen[v]!.key}-${i}`);
    for (let i = 0; i < runs; i += 1) {
      for (const [v, variant] of chosen.entries()) {
        const r = await start(variant, dirOf(v, i), workers.args);
        firstMs[v]!.push(r.readyMs);
        await stop(r, variant);
      }
    }
    for (let i = 0; i < runs; i += 1) {
      for (const [v, variant] of chosen.entries()) {
        const r = await start(variant, dirOf(v, 0), workers.args);
        laterMs[v]!.push(r.readyMs);
        await stop(r, variant);
      }
    }
    const results: Result[] = [];
    for (const [v, variant] of chosen.entries()) {
      results.push({ variant, workers: workers.label, firstMs: firstMs[v]!, laterMs: laterMs[v]!, mem: await memory(variant, dirOf(v, 0), workers.args) });
    }
    return results;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (!existsSync(join(repo, 'dist', 'main.js'))) {
  console.error('footprint: dist/main.js is missing: npm run build first');
  process.exit(1);
}
const results: Result[] = [];
for (const workers of workerSettings) {
  console.error(`footprint: workers ${workers.label}: ${chosen.map((v) => v.key).join(', ')}`);
  results.push(...(await measureAll(workers)));
}

const m = machine();
const mb = (n: number) => (n === 0 ? '–' : fmt(n));
console.log(`${m.cpu}, ${m.cores} cores, ${m.memGb} GB, Node ${m.node}; median of ${runs} starts, variants taking turns; load: ${connections} connections × ${seconds} s of logged-in GET /edge/management/v1/identities (autocannon, same machine).\n`);
console.log('| start command | workers | first start ms | later start ms |');
console.log('|---|---|---:|---:|');
for (const r of results) console.log(`| ${r.variant.label} | ${r.workers} | ${fmt(median(r.firstMs))} | ${fmt(median(r.laterMs))} |`);
console.log('');
console.log('| start command | workers | after start, RSS MB: wrapper / primary / workers = total | PSS total MB | after load, RSS MB: wrapper / primary / workers = total | PSS total MB | peak RSS total MB | load req/s |');
console.log('|---|---|---|---:|---|---:|---:|---:|');
for (const r of results) {
  const cell = (f: ReturnType<typeof footprint>) =>
    `${mb(f.rss.npm + f.rss.sh)} / ${mb(f.rss.primary)} / ${mb(f.rss.workers)} = **${fmt(f.totalRss)}**`;
  const { idle, loaded } = r.mem;
  console.log(`| ${r.variant.label} | ${r.workers} | ${cell(idle)} | ${fmt(idle.totalPss)} | ${cell(loaded)} | ${fmt(loaded.totalPss)} | ${fmt(loaded.totalPeak)} | ${fmt(r.mem.reqPerSec)}${r.mem.errors ? ` (${r.mem.errors} errors)` : ''} |`);
}
console.log('\nDetails:');
for (const r of results) {
  const c = r.mem.loaded.counts;
  const left = leftovers.get(r.variant.key);
  console.log(`- ${r.variant.key}, workers ${r.workers}: processes npm ${c.npm}, sh ${c.sh}, primary ${c.primary}, workers ${c.workers}, other ${c.other}; starts first ${r.firstMs.map((x) => fmt(x)).join(', ')}; later ${r.laterMs.map((x) => fmt(x)).join(', ')}${left ? `; ${left} processes outlived SIGTERM to the started process (all variants' stops)` : ''}`);
}
