/**
 * Portcullis against the upstream controller, same dataset, same run: `npm run bench -- --suite upstream --size
 * medium` (see bench/README.md, "What the upstream comparison measures").
 *
 * Portcullis runs as the README's quick start does — the production build, `node dist/main.js` (built first when
 * dist/ is older than src/), default workers (one per core) — on a private copy of `bench/.data/<size>`. Upstream
 * runs as `ziti edge quickstart --no-router` on a private copy of its cached home (bench/upstream.ts), the same
 * generated records loaded through its REST API. Both run on 127.0.0.1 for the whole comparison; records are found
 * by name on each (ids differ). Each load runs closed loop (autocannon, the same connections) against Portcullis,
 * upstream and the bare-Node server replaying Portcullis' own response bytes (the practical limit of TLS + HTTP in
 * Node on this machine) in turn, P U bare P U bare for `--rounds 2`, each run after a discarded warm-up. Reported
 * per load: the median of the rounds, P ÷ U and P as a share of bare; at the end the RSS of every server process.
 * Results: bench/results/vs-upstream-<size>.json and .md.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { SIZED_USER_PASSWORD, SIZE_NAMES, WORST_NAMES, ensureSizedDataset, generateDataset, type GeneratedDataset, type SizeName } from './datasets/sized.ts';
import { idsByName } from './datasets/rest-loader.ts';
import { freePort, outputOf, settledRssMb, startExternal, stopExternal } from './fabric.ts';
import { HOST, apiClient, closedLoop, fetchOnce, fmt, machine, ms, pool, stopChild, type ClientTls, type LoadFigures, type RequestGen } from './lib.ts';
import { CLIENT, MANAGEMENT, WARMUP_S, get, postJson, startBareServer, type Canned } from './scenarios/context.ts';
import { ensureUpstreamHome, startUpstreamCopy, stopUpstream, zitiVersion } from './upstream.ts';

export interface VsUpstreamOptions {
  size: SizeName;
  /** Seconds per measured run. */
  duration: number;
  connections: number;
  /** Measured runs per server and load (P U P U for 2). */
  rounds: number;
  /** Distinct identities with their own API session (service-updates, tunneler tick). */
  sessions: number;
}

type Label = 'portcullis' | 'upstream';
type Role = 'typical' | 'worst';
type Api = ReturnType<typeof apiClient>;

/** One server under comparison, prepared: everything a load needs, found by name on that server. */
interface Side {
  label: Label;
  port: number;
  ca: string;
  /** Process whose CPU and RSS are read (with its children: Portcullis' workers). */
  pid: number;
  admin: Api;
  adminToken: string;
  /** API sessions of distinct identities. */
  sessions: string[];
  users: Record<Role, string>;
  cert: ClientTls;
  dialServiceId: string;
}

interface LoadDef {
  name: string;
  status: number;
  gen: (s: Side) => RequestGen;
  tls?: (s: Side) => ClientTls;
  maxRequests?: number;
  /** Distinct URLs among the first requests (captured for the bare server). */
  distinct?: number;
}

interface Run extends LoadFigures {
  server: Label | 'bare';
  round: number;
  /** Answers with the expected status per second: what the summaries use (a refused request is no throughput). */
  okRps: number;
}

interface Summary {
  rps: number;
  p50: number;
  p99: number;
}

interface LoadResult {
  name: string;
  /** Response body bytes of the first request, per server. */
  bytes: Record<Label, number>;
  runs: Run[];
  upstream: Summary;
  portcullis: Summary;
  bare: Summary;
}

export interface VsUpstreamResult {
  suite: 'vs-upstream';
  size: SizeName;
  date: string;
  machine: ReturnType<typeof machine>;
  settings: { duration: number; connections: number; rounds: number; warmupS: number; sessions: number };
  dataset: { seed: number; counts: Record<string, number>; portcullisLoadMs: number; upstreamLoadMs: number };
  portcullis: { command: string; workers: number; startMs: number; rssAfterStartMb: number; rssAfterRunMb: number };
  upstream: { command: string; version: string; startMs: number; rssAfterStartMb: number; rssAfterRunMb: number };
  loads: LoadResult[];
  notes: string[];
  wallS: number;
}

const LOGIN_CONCURRENCY = 4;
const READY_TIMEOUT_MS = 120_000;

// ---- Portcullis, production build ------------------------------------------------------------------------------

/** `node dist/main.js` on `dataDir`, 127.0.0.1, a free port, default workers; resolves when it logged ready. */
async function startPortcullis(dataDir: string) {
  const port = await freePort();
  const t0 = performance.now();
  // NODE_OPTIONS emptied: the benchmark itself may run under a TypeScript loader; the build needs none.
  const child = startExternal(process.execPath, ['dist/main.js', '--data-dir', dataDir, '--address', HOST, '--port', String(port)], { env: { NODE_OPTIONS: '' } });
  await outputOf(child).waitLine(/Portcullis ready/, READY_TIMEOUT_MS);
  return { child, pid: child.pid!, port, startMs: performance.now() - t0 };
}

function buildIfStale(): void {
  const r = spawnSync(process.execPath, ['scripts/build.mjs', '--if-stale'], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error('the production build (scripts/build.mjs) failed');
}

// ---- preparing a side: sessions, users, the dialed service ------------------------------------------------------

async function login(port: number, ca: string, api: 'client' | 'management', body: { username: string; password: string }): Promise<string> {
  const r = await fetchOnce(port, ca, 'POST', `${api === 'client' ? CLIENT : MANAGEMENT}/authenticate?method=password`, { 'content-type': 'application/json' }, JSON.stringify(body));
  if (r.status !== 200) throw new Error(`login of ${body.username} on port ${port}: ${r.status} ${r.body.toString('utf8').slice(0, 300)}`);
  return (JSON.parse(r.body.toString('utf8')) as { data: { token: string } }).data.token;
}

/** The identities given an API session of their own: the first `count` ordinary ones (not typical, not worst). */
function sessionIdentities(generated: GeneratedDataset, count: number): string[] {
  return generated.identities
    .map((r) => r.name)
    .filter((n) => n !== generated.typicalIdentityName && n !== WORST_NAMES.identity)
    .slice(0, count);
}

async function prepareSide(
  label: Label,
  server: { port: number; ca: string; pid: number },
  generated: GeneratedDataset,
  admin: { username: string; password: string },
  users: Array<{ role: Role; username: string; password: string }>,
  cert: ClientTls,
  sessions: number,
): Promise<Omit<Side, 'dialServiceId'>> {
  const t0 = performance.now();
  const { port, ca } = server;
  const api = apiClient(port, ca, LOGIN_CONCURRENCY);
  const adminToken = await login(port, ca, 'management', admin);
  api.setToken(adminToken);
  const names = sessionIdentities(generated, sessions);
  const ids = await idsByName(api, 'identities', names);
  const tokens: string[] = new Array(names.length);
  await pool(names, LOGIN_CONCURRENCY, async (name, i) => {
    const cred = { username: `vs-${name}`, password: `vs-password-${name}` };
    await api.must('POST', `${MANAGEMENT}/authenticators`, { method: 'updb', identityId: ids.get(name), ...cred }, 201);
    tokens[i] = await login(port, ca, 'client', cred);
  });
  const userTokens = {} as Record<Role, string>;
  for (const u of users) userTokens[u.role] = await login(port, ca, 'client', u);
  // The same records on both servers: each user sees the services the generator's model says.
  for (const [role, expected] of [
    ['typical', generated.typicalServiceCount],
    ['worst', generated.worstServiceCount],
  ] as const) {
    const r = await fetchOnce(port, ca, 'GET', `${CLIENT}/services?limit=1`, { 'zt-session': userTokens[role], accept: 'application/json' });
    const seen = (JSON.parse(r.body.toString('utf8')) as { meta: { pagination: { totalCount: number } } }).meta.pagination.totalCount;
    if (seen !== expected) throw new Error(`${label}: the ${role} identity sees ${seen} services, the dataset says ${expected}`);
  }
  console.log(`  ${label}: ${tokens.length} API sessions of distinct identities and the users ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return { label, ...server, admin: api, adminToken, sessions: tokens, users: userTokens, cert };
}

/** Name of the first service (by name) the typical identity — else the worst-case one — can dial on Portcullis. */
async function dialableService(p: Omit<Side, 'dialServiceId'>): Promise<{ role: Role; name: string }> {
  for (const role of ['typical', 'worst'] as const) {
    const r = await fetchOnce(p.port, p.ca, 'GET', `${CLIENT}/services?limit=500`, { 'zt-session': p.users[role], accept: 'application/json' });
    const list = (JSON.parse(r.body.toString('utf8')) as { data: Array<{ id: string; name: string; permissions: string[] }> }).data;
    for (const s of list.filter((x) => x.permissions.includes('Dial')).sort((a, b) => a.name.localeCompare(b.name))) {
      const req = postJson(`${CLIENT}/sessions`, { serviceId: s.id, type: 'Dial' }, p.users[role]);
      const created = await fetchOnce(p.port, p.ca, req.method, req.path, req.headers, req.body);
      if (created.status === 201) return { role, name: s.name };
    }
  }
  throw new Error('neither the typical nor the worst-case identity can dial a service with an edge router');
}

// ---- the loads ----------------------------------------------------------------------------------------------------

function loads(dial: { role: Role }, run: string): LoadDef[] {
  const updates = `${CLIENT}/current-api-session/service-updates`;
  const tick = [`${CLIENT}/current-identity`, `${CLIENT}/current-identity/edge-routers?limit=25&offset=0`, updates];
  const out: LoadDef[] = [
    { name: 'service-updates, distinct API sessions', status: 200, gen: (s) => (i) => get(updates, s.sessions[i % s.sessions.length]!) },
    { name: 'tunneler tick (3 requests), distinct identities', status: 200, distinct: 3, gen: (s) => (i) => get(tick[i % 3]!, s.sessions[Math.floor(i / 3) % s.sessions.length]!) },
  ];
  for (const role of ['typical', 'worst'] as const) {
    for (const limit of [25, 500]) {
      const path = `${CLIENT}/services?configTypes=all&limit=${limit}&offset=0`;
      out.push({ name: `services?configTypes=all, ${role} identity, page of ${limit}`, status: 200, gen: (s) => () => get(path, s.users[role]) });
    }
  }
  out.push(
    { name: `POST /sessions (Dial, ${dial.role} identity)`, status: 201, gen: (s) => () => postJson(`${CLIENT}/sessions`, { serviceId: s.dialServiceId, type: 'Dial' }, s.users[dial.role]) },
    {
      name: 'password login (typical identity)',
      status: 200,
      maxRequests: 20_000,
      gen: () => () => postJson(`${CLIENT}/authenticate?method=password`, { username: 'bench-typical', password: SIZED_USER_PASSWORD }),
    },
    { name: 'certificate login (mutual TLS)', status: 200, maxRequests: 50_000, tls: (s) => s.cert, gen: () => () => postJson(`${CLIENT}/authenticate?method=cert`, {}) },
    {
      name: 'bulk provisioning (POST /identities as admin)',
      status: 201,
      maxRequests: 20_000,
      gen: (s) => {
        let n = 0;
        return () => postJson(`${MANAGEMENT}/identities`, { name: `vs-bulk-${run}-${s.label}-${n++}`, type: 'Default', isAdmin: false, roleAttributes: ['bulk'] }, s.adminToken);
      },
    },
  );
  return out;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function summarize(runs: Run[]): Summary {
  return { rps: median(runs.map((r) => r.okRps)), p50: median(runs.map((r) => r.p50)), p99: median(runs.map((r) => r.p99)) };
}

async function measureLoad(def: LoadDef, p: Side, u: Side, opts: VsUpstreamOptions, tmp: string, dataDir: string): Promise<LoadResult> {
  console.log(`  ${def.name}`);
  const gens = { portcullis: def.gen(p), upstream: def.gen(u) };
  // One request each first: the expected status on both servers, the bytes they answer, Portcullis' for the bare server.
  const canned: Canned = {};
  const bytes = {} as Record<Label, number>;
  for (const side of [p, u]) {
    const gen = gens[side.label];
    for (let i = 0; i < (def.distinct ?? 1); i++) {
      const s = gen(i);
      const r = await fetchOnce(side.port, side.ca, s.method, s.path, s.headers, s.body, def.tls?.(side));
      if (r.status !== def.status) throw new Error(`${def.name}: ${side.label} answered ${s.method} ${s.path} with ${r.status}, expected ${def.status}: ${r.body.toString('utf8').slice(0, 300)}`);
      if (i === 0) bytes[side.label] = r.body.length;
      if (side.label === 'portcullis') canned[s.path] = { status: r.status, contentType: r.contentType, bodyBase64: r.body.toString('base64') };
    }
  }
  const runs: Run[] = [];
  const once = async (server: Label | 'bare', port: number, pid: number, gen: RequestGen, tls: ClientTls | undefined, round: number) => {
    const base = { connections: opts.connections, tls, pid };
    // The cap bounds what a run writes into a server; the bare server keeps nothing, and a cap reached within a
    // second would make its figure a matter of timer granularity.
    const cap = server === 'bare' ? undefined : def.maxRequests;
    await closedLoop(port, gen, { ...base, seconds: WARMUP_S, maxRequests: cap ? Math.ceil(cap / 4) : undefined });
    const f = await closedLoop(port, gen, { ...base, seconds: opts.duration, maxRequests: cap });
    const okRps = f.total > 0 ? (f.rps * (f.total - f.non2xx)) / f.total : 0;
    runs.push({ server, round, ...f, okRps });
    const flag = f.non2xx || f.errors ? `  !! non-2xx ${f.non2xx} (${statusList(f)}), errors ${f.errors}` : '';
    console.log(`    ${server.padEnd(10)} round ${round}: ${fmt(f.rps)} req/s, p50 ${ms(f.p50)} p99 ${ms(f.p99)} ms, cpu ${f.cpuPct.toFixed(0)}%${flag}`);
  };
  const bare = await startBareServer(tmp, dataDir, canned);
  try {
    for (let round = 1; round <= opts.rounds; round++) {
      for (const side of [p, u]) await once(side.label, side.port, side.pid, gens[side.label], def.tls?.(side), round);
      await once('bare', bare.port, bare.pid, gens.portcullis, def.tls?.(p), round);
    }
  } finally {
    await stopChild(bare.child);
  }
  const of = (server: Label | 'bare') => summarize(runs.filter((r) => r.server === server));
  return { name: def.name, bytes, runs, upstream: of('upstream'), portcullis: of('portcullis'), bare: of('bare') };
}

// ---- the suite ----------------------------------------------------------------------------------------------------

export async function runVsUpstream(opts: VsUpstreamOptions): Promise<VsUpstreamResult> {
  if (!SIZE_NAMES.includes(opts.size)) throw new Error(`--size must be one of ${SIZE_NAMES.join(', ')}`);
  const wall0 = performance.now();
  console.log(`[vs-upstream] Portcullis against the upstream controller, dataset ${opts.size}`);
  buildIfStale();
  const dataset = await ensureSizedDataset(opts.size);
  const generated = generateDataset(opts.size, dataset.seed);
  const cached = await ensureUpstreamHome(opts.size, dataset.seed);
  const version = zitiVersion();
  const tmp = mkdtempSync(join(tmpdir(), 'portcullis-vs-upstream-'));
  const dataDir = join(tmp, 'portcullis');
  cpSync(dataset.dataDir, dataDir, { recursive: true });
  let pc: Awaited<ReturnType<typeof startPortcullis>> | undefined;
  let up: Awaited<ReturnType<typeof startUpstreamCopy>> | undefined;
  const sides: Side[] = [];
  try {
    pc = await startPortcullis(dataDir);
    up = await startUpstreamCopy(cached, join(tmp, 'upstream'));
    console.log(`  started: Portcullis in ${fmt(pc.startMs)} ms, upstream in ${fmt(up.startMs)} ms`);
    const rssAfterStart = { portcullis: await settledRssMb(pc.pid), upstream: await settledRssMb(up.pid) };
    const pcCa = readFileSync(join(dataDir, 'pki', 'root-ca.cert.pem'), 'utf8');
    const certOf = (list: Array<{ role: Role; certPem: string; keyPem: string }>): ClientTls => {
      const c = list.find((x) => x.role === 'typical');
      if (!c) throw new Error('no certificate user');
      return { cert: c.certPem, key: c.keyPem };
    };
    const pPrep = await prepareSide(
      'portcullis',
      { port: pc.port, ca: pcCa, pid: pc.pid },
      generated,
      { username: dataset.adminUser, password: dataset.adminPassword },
      dataset.users,
      certOf(dataset.certUsers),
      opts.sessions,
    );
    const uPrep = await prepareSide(
      'upstream',
      { port: up.port, ca: up.ca, pid: up.pid },
      generated,
      { username: cached.marker.adminUser, password: cached.marker.adminPassword },
      cached.marker.users,
      certOf(cached.marker.certUsers),
      opts.sessions,
    );
    const dial = await dialableService(pPrep);
    const p: Side = { ...pPrep, dialServiceId: (await idsByName(pPrep.admin, 'services', [dial.name])).get(dial.name)! };
    const u: Side = { ...uPrep, dialServiceId: (await idsByName(uPrep.admin, 'services', [dial.name])).get(dial.name)! };
    sides.push(p, u);

    const run = Date.now().toString(36);
    const results: LoadResult[] = [];
    for (const def of loads(dial, run)) results.push(await measureLoad(def, p, u, opts, tmp, dataDir));
    const rssAfterRun = { portcullis: await settledRssMb(pc.pid), upstream: await settledRssMb(up.pid) };
    console.log(`  RSS after the run: Portcullis ${fmt(rssAfterRun.portcullis)} MB, upstream ${fmt(rssAfterRun.upstream)} MB`);

    const result: VsUpstreamResult = {
      suite: 'vs-upstream',
      size: opts.size,
      date: new Date().toISOString(),
      machine: machine(),
      settings: { duration: opts.duration, connections: opts.connections, rounds: opts.rounds, warmupS: WARMUP_S, sessions: p.sessions.length },
      dataset: { seed: dataset.seed, counts: { ...dataset.counts }, portcullisLoadMs: dataset.loadMs, upstreamLoadMs: cached.marker.loadMs },
      portcullis: { command: 'node dist/main.js', workers: availableParallelism(), startMs: pc.startMs, rssAfterStartMb: rssAfterStart.portcullis, rssAfterRunMb: rssAfterRun.portcullis },
      upstream: { command: 'ziti edge quickstart --no-router', version, startMs: up.startMs, rssAfterStartMb: rssAfterStart.upstream, rssAfterRunMb: rssAfterRun.upstream },
      loads: results,
      notes: [
        `Dial: the service ${dial.name}, the first by name that the ${dial.role} identity may dial (a repeated request by the same API session gets its existing session back on both servers).`,
        ...spreadNotes(results),
      ],
      wallS: (performance.now() - wall0) / 1000,
    };
    writeResult(result);
    return result;
  } finally {
    for (const s of sides) s.admin.close();
    if (pc) await stopExternal(pc.child, 40_000);
    if (up) await stopUpstream(up);
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Loads whose rounds on one server differ by more than a quarter: something else took the cores for a while. */
function spreadNotes(results: LoadResult[]): string[] {
  const out: string[] = [];
  for (const l of results) {
    for (const server of ['portcullis', 'upstream', 'bare'] as const) {
      const rps = l.runs.filter((r) => r.server === server).map((r) => r.okRps);
      if (rps.length > 1 && Math.max(...rps) > 1.25 * Math.min(...rps)) {
        out.push(`${l.name}, ${server}: the rounds differ (${rps.map((x) => fmt(x)).join(' / ')} req/s); the machine is shared, the median is between them.`);
      }
    }
  }
  return out;
}

// ---- report ---------------------------------------------------------------------------------------------------------

const pair = (s: Summary) => `${ms(s.p50)} / ${ms(s.p99)}`;

function statusList(f: LoadFigures): string {
  return Object.entries(f.statuses ?? {})
    .map(([status, count]) => `${status}: ${count}`)
    .join(', ');
}

export function markdown(r: VsUpstreamResult): string {
  const m = r.machine;
  const lines = [
    `# Portcullis and the upstream controller, ${r.size} dataset`,
    '',
    `${r.date.slice(0, 10)} · ${m.cpu}, ${m.cores} cores, ${m.memGb} GB, Node ${m.node}, ${m.os} · upstream ${r.upstream.version}. ` +
      `Dataset: ${Object.entries(r.dataset.counts)
        .map(([k, v]) => `${fmt(v)} ${k}`)
        .join(', ')} (seed ${r.dataset.seed}), loaded into upstream through its REST API in ${fmt(r.dataset.upstreamLoadMs / 1000, 1)} s (once; cached).`,
    '',
    `Portcullis: \`${r.portcullis.command}\` with the default ${r.portcullis.workers} workers; upstream: \`${r.upstream.command}\` (one process). ` +
      `Closed loop, ${r.settings.connections} keep-alive connections, ${r.settings.duration} s per run after a ${r.settings.warmupS} s warm-up; ` +
      `Portcullis, upstream and the bare-Node server replaying Portcullis' response bytes in turn (P U bare × ${r.settings.rounds}), the median of the ${r.settings.rounds} rounds. ` +
      `req/s counts the answers with the expected status (a refused request, such as a 429, is no throughput; every answer is in the last table). ` +
      `Both servers, the bare server and the load generator share the machine; the server not under load is idle.`,
    '',
    '| Load | upstream req/s | Portcullis req/s | P ÷ U | bare req/s | P % of bare | upstream p50 / p99 ms | Portcullis p50 / p99 ms | bare p50 / p99 ms | bytes U / P |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...r.loads.map(
      (l) =>
        `| ${l.name} | ${fmt(l.upstream.rps)} | ${fmt(l.portcullis.rps)} | ${(l.portcullis.rps / l.upstream.rps).toFixed(2)}× | ${fmt(l.bare.rps)} | ` +
        `${((l.portcullis.rps / l.bare.rps) * 100).toFixed(0)} % | ${pair(l.upstream)} | ${pair(l.portcullis)} | ${pair(l.bare)} | ${fmt(l.bytes.upstream)} / ${fmt(l.bytes.portcullis)} |`,
    ),
    '',
    '| Resident memory (all server processes) | upstream MB | Portcullis MB | P ÷ U |',
    '|---|---:|---:|---:|',
    `| after start (dataset loaded, idle) | ${fmt(r.upstream.rssAfterStartMb)} | ${fmt(r.portcullis.rssAfterStartMb)} | ${(r.portcullis.rssAfterStartMb / r.upstream.rssAfterStartMb).toFixed(2)}× |`,
    `| after the run | ${fmt(r.upstream.rssAfterRunMb)} | ${fmt(r.portcullis.rssAfterRunMb)} | ${(r.portcullis.rssAfterRunMb / r.upstream.rssAfterRunMb).toFixed(2)}× |`,
    '',
    'Every run (server CPU in % of one core; Portcullis: primary and workers):',
    '',
    '| Load | server | round | req/s (all answers) | p50 ms | p99 ms | CPU % | answers by status | errors |',
    '|---|---|---:|---:|---:|---:|---:|---|---:|',
    ...r.loads.flatMap((l) => l.runs.map((x) => `| ${l.name} | ${x.server} | ${x.round} | ${fmt(x.rps)} | ${ms(x.p50)} | ${ms(x.p99)} | ${fmt(x.cpuPct)} | ${statusList(x)} | ${x.errors} |`)),
    '',
    ...r.notes.map((n) => `- ${n}`),
    '',
  ];
  return lines.join('\n');
}

function writeResult(r: VsUpstreamResult): void {
  mkdirSync(join('bench', 'results'), { recursive: true });
  const base = join('bench', 'results', `vs-upstream-${r.size}`);
  writeFileSync(`${base}.json`, JSON.stringify(r, null, 2) + '\n');
  const text = markdown(r);
  writeFileSync(`${base}.md`, text);
  console.log('\n' + text);
  console.log(`  written ${base}.json and ${base}.md (${r.wallS.toFixed(0)} s)`);
}
