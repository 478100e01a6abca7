/**
 * Soak: a bounded, steady mixed load against one controller for a fixed time (default 15 minutes), sampled every
 * interval: RSS of every controller process (primary + workers, from /proc), answers per second, errors, latency
 * p50/p99. Writes bench/results/soak.json and bench/results/soak.md.
 *
 * The mix (MIX below, in request order): reads (service-updates, the client service list, the management
 * identity list), writes (create, patch and delete identities and services) and password logins, each followed
 * later by a logout. It runs open-loop at a share (`--percent`, default 80) of the mix's closed-loop capacity,
 * measured first. Deletes remove what the mix created and logouts end the API sessions its logins made, so the
 * data and the sessions stay bounded; the request count is rate × time.
 * Usage: npm run bench -- --suite soak [--minutes M --interval S --percent P --size SIZE --duration D --connections C --workers W]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { closedLoop, fmt, machine, openLoop, percentileOf, procStats, type OpenLoopResult, type RequestGen, type Sample } from './lib.ts';
import { Bench, CLIENT, MANAGEMENT, WARMUP_S, get, postJson } from './scenarios/context.ts';

export interface SoakOptions {
  size: string;
  dataDir: string;
  minutes: number;
  /** Seconds between samples. */
  intervalS: number;
  /** Open-loop rate as a percentage of the mix's closed-loop capacity. */
  percent: number;
  /** Seconds of the capacity run. */
  duration: number;
  connections: number;
  sessions: number;
  workers: number;
}

type Kind =
  | 'service-updates'
  | 'client services'
  | 'management identities'
  | 'identity create'
  | 'identity patch'
  | 'identity delete'
  | 'service create'
  | 'service patch'
  | 'service delete'
  | 'login'
  | 'logout';

/** One cycle of the mix, in order: 17 reads, 6 writes, a login and a logout of 25 requests. The first must be a read. */
const MIX: readonly Kind[] = [
  'service-updates', 'client services', 'identity create', 'service-updates', 'management identities',
  'service create', 'service-updates', 'login', 'client services', 'identity patch',
  'service-updates', 'management identities', 'service patch', 'service-updates', 'client services',
  'identity delete', 'service-updates', 'management identities', 'service delete', 'service-updates',
  'client services', 'logout', 'service-updates', 'service-updates', 'service-updates',
];
/** Identities and services only patched (never deleted), created beforehand. */
const PATCH_POOL = 20;
/** Most entities of the mix alive at once; a create beyond it becomes a patch. */
const MAX_CREATED = 500;

interface Bucket {
  answers: number;
  limited: number;
  errors: number;
  timeouts: number;
  latencies: number[];
}

interface SoakSample {
  /** Seconds since the load started. */
  t: number;
  rssMb: number;
  processes: number;
  cpuPct: number;
  perSecond: number;
  limited: number;
  errors: number;
  timeouts: number;
  p50: number;
  p99: number;
}

/**
 * The mix as a request generator with state: creates and logins feed queues (from their answers) that deletes and
 * logouts take from; when a queue is empty the request becomes a service-updates read.
 */
class Mix {
  private readonly pending = new Map<number, Kind>();
  private readonly substituted = new Map<number, Kind>();
  private readonly created = { identity: [] as string[], service: [] as string[] };
  private readonly loggedIn: string[] = [];
  private serial = 0;

  constructor(
    private readonly tokens: string[],
    private readonly admin: string,
    private readonly users: Array<{ username: string; password: string }>,
    private readonly pool: { identity: string[]; service: string[] },
    private readonly run: string,
  ) {}

  kindOf(i: number): Kind {
    return this.substituted.get(i) ?? MIX[i % MIX.length]!;
  }

  /** Whether the answer to request i is needed (its body feeds a queue). */
  wantsBody(i: number): boolean {
    return this.pending.has(i);
  }

  readonly gen: RequestGen = (i) => {
    let kind = MIX[i % MIX.length]!;
    const entity = kind.startsWith('identity') ? 'identity' : 'service';
    if (kind.endsWith('create') && this.created[entity].length >= MAX_CREATED) kind = entity === 'identity' ? 'identity patch' : 'service patch';
    if ((kind.endsWith('delete') && this.created[entity].length === 0) || (kind === 'logout' && this.loggedIn.length === 0)) kind = 'service-updates';
    if (kind !== MIX[i % MIX.length]) this.substituted.set(i, kind);
    if (kind.endsWith('create') || kind === 'login') this.pending.set(i, kind);
    return this.request(kind, i);
  };

  private request(kind: Kind, i: number): Sample {
    const token = this.tokens[i % this.tokens.length]!;
    const attrs = { roleAttributes: [i % 2 ? 'soak-a' : 'soak-b'] };
    switch (kind) {
      case 'service-updates':
        return get(`${CLIENT}/current-api-session/service-updates`, token);
      case 'client services':
        return get(`${CLIENT}/services?limit=25&offset=0`, token);
      case 'management identities':
        return get(`${MANAGEMENT}/identities?limit=25&offset=${(i * 25) % 5000}`, this.admin);
      case 'identity create':
        return postJson(`${MANAGEMENT}/identities`, { name: `soak-${this.run}-i${this.serial++}`, type: 'User', isAdmin: false, ...attrs }, this.admin);
      case 'service create':
        return postJson(`${MANAGEMENT}/services`, { name: `soak-${this.run}-s${this.serial++}`, encryptionRequired: true, ...attrs }, this.admin);
      case 'identity patch':
        return { ...postJson(`${MANAGEMENT}/identities/${this.pool.identity[i % PATCH_POOL]}`, attrs, this.admin), method: 'PATCH' };
      case 'service patch':
        return { ...postJson(`${MANAGEMENT}/services/${this.pool.service[i % PATCH_POOL]}`, attrs, this.admin), method: 'PATCH' };
      case 'identity delete':
        return { ...get(`${MANAGEMENT}/identities/${this.created.identity.shift()}`, this.admin), method: 'DELETE' };
      case 'service delete':
        return { ...get(`${MANAGEMENT}/services/${this.created.service.shift()}`, this.admin), method: 'DELETE' };
      case 'login':
        return postJson(`${CLIENT}/authenticate?method=password`, this.users[i % this.users.length]);
      case 'logout':
        return { ...get(`${CLIENT}/current-api-session`, this.loggedIn.shift()!), method: 'DELETE' };
    }
  }

  /** Feeds the queues from an answer. */
  answer(i: number, status: number, body: string | undefined): void {
    const kind = this.pending.get(i);
    if (!kind) return;
    this.pending.delete(i);
    if (!body || status < 200 || status >= 300) return;
    const data = (JSON.parse(body) as { data: { id: string; token: string } }).data;
    if (kind === 'login') this.loggedIn.push(data.token);
    else this.created[kind === 'identity create' ? 'identity' : 'service'].push(data.id);
  }
}

export async function runSoakSuite(o: SoakOptions): Promise<void> {
  const b = await Bench.open('soak', `soak, ${o.minutes} min at ${o.percent}% of the mixed load's capacity`, {
    size: o.size,
    dataDir: o.dataDir,
    duration: o.duration,
    connections: o.connections,
    openFraction: o.percent / 100,
    maxRate: Number.MAX_SAFE_INTEGER,
    sessions: o.sessions,
    targetRate: 0,
    workers: o.workers,
  });
  try {
    await soak(b, o);
  } finally {
    await b.close();
  }
}

async function soak(b: Bench, o: SoakOptions): Promise<void> {
  const tokens = await b.manySessions(o.sessions);
  const admin = await b.adminToken();
  const run = Date.now().toString(36);
  const pool = await patchPool(b, admin, run);
  const mix = new Mix(tokens, admin, b.dataset.users, pool, run);

  // Capacity: closed loop of the mix after a discarded warm-up.
  const closed = { connections: o.connections, pid: b.pid, onResponse: (i: number, status: number, body: string) => mix.answer(i, status, body) };
  await closedLoop(b.port, mix.gen, { ...closed, seconds: WARMUP_S });
  const cap = await closedLoop(b.port, mix.gen, { ...closed, seconds: o.duration });
  const rate = Math.max(1, Math.round((cap.rps * o.percent) / 100));
  console.log(`  mixed load: ${cap.rps.toFixed(0)} req/s closed loop (c=${o.connections}, non-2xx ${cap.non2xx}, errors ${cap.errors}); soak at ${rate}/s for ${o.minutes} min`);

  // The soak: open loop, sampled every interval.
  const seconds = o.minutes * 60;
  let bucket = emptyBucket();
  const byKind = new Map<Kind, Bucket>();
  const samples: SoakSample[] = [];
  let t0 = 0;
  let lastCpu = 0;
  const sample = () => {
    const now = performance.now();
    const stats = procStats(b.pid);
    const elapsed = samples.length ? (now - t0) / 1000 - samples[samples.length - 1]!.t : 0;
    const sorted = bucket.latencies.sort((x, y) => x - y);
    const s: SoakSample = {
      t: Math.round((now - t0) / 1000),
      rssMb: stats.rssMb,
      processes: stats.processes,
      cpuPct: elapsed > 0 ? (stats.cpuMs - lastCpu) / (elapsed * 10) : 0,
      perSecond: elapsed > 0 ? bucket.answers / elapsed : 0,
      limited: bucket.limited,
      errors: bucket.errors,
      timeouts: bucket.timeouts,
      p50: percentileOf(sorted, 50),
      p99: percentileOf(sorted, 99),
    };
    lastCpu = stats.cpuMs;
    bucket = emptyBucket();
    samples.push(s);
    console.log(`  ${fmtTime(s.t)}  RSS ${s.rssMb.toFixed(0)} MB  ${s.perSecond.toFixed(0)} req/s  429 ${s.limited}  errors ${s.errors} (timeouts ${s.timeouts})  p50 ${fmtMs(s.p50)} p99 ${fmtMs(s.p99)} ms  CPU ${s.cpuPct.toFixed(0)}%`);
  };
  let timer: NodeJS.Timeout | undefined;
  const record = (r: OpenLoopResult) => {
    const kind = mix.kindOf(r.i);
    mix.answer(r.i, r.status, r.body?.toString('utf8'));
    for (const k of [bucket, kindBucket(byKind, kind)]) count(k, r);
  };
  const result = await openLoop(b.port, mix.gen, {
    rate,
    seconds,
    pid: b.pid,
    bodies: (i) => mix.wantsBody(i),
    onResult: record,
    onStart: () => {
      t0 = performance.now();
      lastCpu = procStats(b.pid).cpuMs;
      sample();
      timer = setInterval(sample, o.intervalS * 1000);
    },
  });
  clearInterval(timer);
  if (bucket.answers || bucket.errors) sample();

  const totals = { requests: result.total + result.errors, answered: result.total, limited: result.statuses?.['429'] ?? 0, errors: result.non2xx - (result.statuses?.['429'] ?? 0) + result.errors, timeouts: result.timeouts ?? 0 };
  const report = {
    date: new Date().toISOString(),
    machine: machine(),
    dataset: { size: b.dataset.size, counts: b.dataset.counts },
    settings: { ...o, mix: MIX, patchPool: PATCH_POOL, maxCreated: MAX_CREATED },
    capacity: { rps: cap.rps, p50: cap.p50, p99: cap.p99, non2xx: cap.non2xx, errors: cap.errors },
    rate,
    overall: { rps: result.rps, p50: result.p50, p99: result.p99, p999: result.p999, max: result.max, cpuPct: result.cpuPct, statuses: result.statuses },
    totals,
    kinds: [...byKind].map(([kind, k]) => ({ kind, ...summarize(k) })),
    samples,
  };
  mkdirSync(join('bench', 'results'), { recursive: true });
  writeFileSync(join('bench', 'results', 'soak.json'), JSON.stringify(report, null, 2) + '\n');
  writeFileSync(join('bench', 'results', 'soak.md'), soakMarkdown(report).join('\n') + '\n');
  console.log('  written bench/results/soak.json and bench/results/soak.md');
}

/** PATCH_POOL identities and services that the mix patches (created here, on the private copy). */
async function patchPool(b: Bench, admin: string, run: string): Promise<{ identity: string[]; service: string[] }> {
  const api = b.api(4);
  api.setToken(admin);
  const pool = { identity: [] as string[], service: [] as string[] };
  for (let i = 0; i < PATCH_POOL; i++) {
    pool.identity.push((await api.must('POST', `${MANAGEMENT}/identities`, { name: `soak-${run}-pool-i${i}`, type: 'User', isAdmin: false }, 201)).data.id);
    pool.service.push((await api.must('POST', `${MANAGEMENT}/services`, { name: `soak-${run}-pool-s${i}`, encryptionRequired: true }, 201)).data.id);
  }
  api.close();
  return pool;
}

function emptyBucket(): Bucket {
  return { answers: 0, limited: 0, errors: 0, timeouts: 0, latencies: [] };
}

function kindBucket(map: Map<Kind, Bucket>, kind: Kind): Bucket {
  let k = map.get(kind);
  if (!k) map.set(kind, (k = emptyBucket()));
  return k;
}

/** Counts one result: 2xx and 429 are answers (429 is an expected shed), anything else is an error. */
function count(k: Bucket, r: OpenLoopResult): void {
  if (r.status === 0) {
    k.errors++;
    if (r.failure === 'timeout') k.timeouts++;
    return;
  }
  k.answers++;
  k.latencies.push(r.ms);
  if (r.status === 429) k.limited++;
  else if (r.status < 200 || r.status >= 300) k.errors++;
}

function summarize(k: Bucket): { answers: number; limited: number; errors: number; timeouts: number; p50: number; p99: number } {
  const sorted = k.latencies.sort((x, y) => x - y);
  return { answers: k.answers, limited: k.limited, errors: k.errors, timeouts: k.timeouts, p50: percentileOf(sorted, 50), p99: percentileOf(sorted, 99) };
}

function fmtTime(s: number): string {
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

function fmtMs(x: number): string {
  return Number.isNaN(x) ? '–' : x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0);
}

type SoakReport = {
  date: string;
  machine: ReturnType<typeof machine>;
  dataset: { size: string; counts: Record<string, number> };
  settings: SoakOptions;
  capacity: { rps: number };
  rate: number;
  totals: { requests: number; answered: number; limited: number; errors: number; timeouts: number };
  kinds: Array<{ kind: Kind; answers: number; limited: number; errors: number; timeouts: number; p50: number; p99: number }>;
  samples: SoakSample[];
};

/** RSS growth, error totals and the spread of the interval p99s (for the README). */
export function soakSummary(r: SoakReport): { rssStart: number; rssFirst: number; rssEnd: number; rssMax: number; p99Min: number; p99Median: number; p99Max: number } {
  const measured = r.samples.slice(1);
  const p99s = measured.map((s) => s.p99).filter((x) => !Number.isNaN(x)).sort((x, y) => x - y);
  return {
    rssStart: r.samples[0]?.rssMb ?? Number.NaN,
    rssFirst: measured[0]?.rssMb ?? Number.NaN,
    rssEnd: r.samples[r.samples.length - 1]?.rssMb ?? Number.NaN,
    rssMax: Math.max(...r.samples.map((s) => s.rssMb)),
    p99Min: p99s[0] ?? Number.NaN,
    p99Median: percentileOf(p99s, 50),
    p99Max: p99s[p99s.length - 1] ?? Number.NaN,
  };
}

function soakMarkdown(r: SoakReport): string[] {
  const s = soakSummary(r);
  const m = r.machine;
  const counts = Object.entries(r.dataset.counts).map(([k, v]) => `${fmt(v)} ${k}`).join(', ');
  const lines = [
    '# Soak',
    '',
    `${r.date.slice(0, 16).replace('T', ' ')} UTC, ${m.cpu}, ${m.cores} cores, ${m.memGb} GB, Node ${m.node}; load generator and controller on the same machine, HTTPS over 127.0.0.1. ` +
      `Dataset \`${r.dataset.size}\` (${counts}); controller with ${r.settings.workers} worker process${r.settings.workers === 1 ? '' : 'es'} and default limits.`,
    '',
    `Mixed load (per cycle of ${MIX.length} requests: ${mixCounts()}), closed-loop capacity ${fmt(r.capacity.rps)} req/s at ${r.settings.connections} connections; ` +
      `soak open-loop at ${r.settings.percent}% of it, ${fmt(r.rate)} req/s, for ${r.settings.minutes} min (latency from the scheduled send time). ` +
      `Sampled every ${r.settings.intervalS} s: RSS of the primary and its workers, answers per second, 429s (expected sheds, not errors), errors (other non-2xx, failed connections, timeouts after 10 s), latency of the interval's answers.`,
    '',
    '| Figure | Value |',
    '|---|---:|',
    `| requests | ${fmt(r.totals.requests)} |`,
    `| errors (of which timeouts) | ${fmt(r.totals.errors)} (${fmt(r.totals.timeouts)}) |`,
    `| 429 (shed) | ${fmt(r.totals.limited)} |`,
    `| RSS at the start / after the first interval / at the end / highest | ${fmt(s.rssStart)} / ${fmt(s.rssFirst)} / ${fmt(s.rssEnd)} / ${fmt(s.rssMax)} MB |`,
    `| RSS growth, first interval → end | ${signed(s.rssEnd - s.rssFirst)} MB |`,
    `| p99 per interval: lowest / median / highest | ${fmtMs(s.p99Min)} / ${fmtMs(s.p99Median)} / ${fmtMs(s.p99Max)} ms |`,
    '',
    '| time | RSS MB | processes | CPU % | req/s | 429 | errors (timeouts) | p50 ms | p99 ms |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...r.samples.map((x) => `| ${fmtTime(x.t)} | ${fmt(x.rssMb)} | ${x.processes} | ${fmt(x.cpuPct)} | ${fmt(x.perSecond)} | ${x.limited} | ${x.errors} (${x.timeouts}) | ${fmtMs(x.p50)} | ${fmtMs(x.p99)} |`),
    '',
    'Per kind of request, whole soak:',
    '',
    '| request | answers | 429 | errors (timeouts) | p50 ms | p99 ms |',
    '|---|---:|---:|---:|---:|---:|',
    ...r.kinds.map((k) => `| ${k.kind} | ${fmt(k.answers)} | ${k.limited} | ${k.errors} (${k.timeouts}) | ${fmtMs(k.p50)} | ${fmtMs(k.p99)} |`),
  ];
  return lines;
}

function mixCounts(): string {
  const counts = new Map<Kind, number>();
  for (const k of MIX) counts.set(k, (counts.get(k) ?? 0) + 1);
  return [...counts].map(([k, n]) => `${n} ${k}`).join(', ');
}

function signed(x: number): string {
  return `${x >= 0 ? '+' : '−'}${fmt(Math.abs(x))}`;
}
