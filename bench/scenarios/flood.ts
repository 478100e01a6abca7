/**
 * S13: the latency of authenticated reads (`GET /current-api-session/service-updates`) during a password-login
 * flood at ten times the measured login capacity, with the controller's admission limiters at their defaults and
 * turned off (`--auth-limit 0 --write-limit 0`). Failed-login lockout is checked under each flood.
 */
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { closedLoop, fetchOnce, fmt, openLoop, procStats, spawnReady, stopChild, type LoadFigures, type RequestGen } from '../lib.ts';
import type { LoginFloodFigures, LoginFloodSpec } from '../login-flood.ts';
import { Bench, CLIENT, MANAGEMENT, WARMUP_S, get, postJson, type ScenarioResult } from './context.ts';

/** Connections of the flood: enough that the server, not the flooding client's pool, holds the queue. */
const FLOOD_SOCKETS = 512;
const FLOOD_FACTOR = 10;
/** A client gives up on a login this long after it meant to send it. */
const LOGIN_DEADLINE_MS = 10_000;
/** The flood starts this long before the measured reads and ends this long after them. */
const LEAD_MS = 1000;
const LOCKOUT_ATTEMPTS = 3;
const PASSWORD_RULES = { minPasswordLength: 5, requireSpecialChar: false, requireNumberChar: false, requireMixedCase: false };

interface ReadFigures {
  rate: number;
  rps: number;
  p50: number;
  p99: number;
  max: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  serverCpuPct: number;
}

interface LockoutFigures {
  /** Wrong-password attempts sent until the identity showed as disabled (or the flood ended). */
  attempts: number;
  refused: number;
  shed: number;
  other: number;
  locked: boolean;
  /** The status of a login with the right password after the lockout (401 expected). */
  rightPasswordAfter: number | undefined;
}

export interface FloodPhase {
  phase: 'alone' | 'flood';
  limits: 'default' | 'off';
  reads: ReadFigures;
  logins?: LoginFloodFigures;
  lockout?: LockoutFigures;
}

export interface FloodExtra {
  loginCapacity: { rps: number; p50: number; p99: number; connections: number };
  readCapacity: { rps: number; p99: number; connections: number };
  readRate: number;
  floodRate: number;
  floodSockets: number;
  workers: number;
  phases: FloodPhase[];
}

export async function s13(b: Bench): Promise<void> {
  const { duration, connections } = b.opts;
  const tokens = await b.manySessions(b.opts.sessions);
  const readGen: RequestGen = (i) => get(`${CLIENT}/current-api-session/service-updates`, tokens[i % tokens.length]!);
  const users = b.dataset.users.map((u) => ({ username: u.username, password: u.password }));
  const loginGen: RequestGen = (i) => postJson(`${CLIENT}/authenticate?method=password`, users[i % users.length]!);
  const lockUsers = await lockoutUsers(b);

  // Capacities, limits at their defaults: closed loop after a discarded warm-up.
  const loginCap = await capacity(b, loginGen, 'password logins');
  const readCap = await capacity(b, readGen, 'service-updates');
  const readRate = Math.max(1, Math.min(b.opts.maxRate, Math.round(readCap.rps * b.opts.openFraction)));
  const floodRate = Math.round(loginCap.rps * FLOOD_FACTOR);
  b.metric({ name: `password logins, closed-loop capacity (c=${connections})`, unit: 'req/s', portcullis: loginCap.rps });
  b.metric({ name: `service-updates, closed-loop capacity (c=${connections})`, unit: 'req/s', portcullis: readCap.rps });

  const phases: FloodPhase[] = [];
  for (const limits of ['default', 'off'] as const) {
    if (limits === 'off') {
      await b.stopController();
      await b.startController(['--auth-limit', '0', '--write-limit', '0']);
      // Warm the new processes up as the capacity runs warmed the first ones.
      for (const gen of [loginGen, readGen]) await closedLoop(b.port, gen, { connections, seconds: WARMUP_S, pid: b.pid });
    }
    // Logged in before the flood (a login during it may be shed), on this controller's port.
    const admin = b.api(2);
    admin.setToken(await b.adminToken());
    await settle(b.pid);
    const alone = await openLoop(b.port, readGen, { rate: readRate, seconds: duration, pid: b.pid });
    phases.push(logPhase({ phase: 'alone', limits, reads: readFigures(alone) }));
    await settle(b.pid);
    phases.push(logPhase(await floodPhase(b, limits, readGen, readRate, floodRate, users, lockUsers[limits], admin)));
    admin.close();
  }

  const workers = b.opts.workers;
  b.extra = { loginCapacity: { rps: loginCap.rps, p50: loginCap.p50, p99: loginCap.p99, connections }, readCapacity: { rps: readCap.rps, p99: readCap.p99, connections }, readRate, floodRate, floodSockets: FLOOD_SOCKETS, workers, phases } satisfies FloodExtra;
  b.notes.push(
    `Controller with the default worker count, one per core (${workers} here), as \`node .\` starts it; once with the default limits (--auth-limit 250, --write-limit 250), ` +
      'then restarted on the same data with --auth-limit 0 --write-limit 0. ' +
      `Capacities: closed loop, ${connections} connections, ${duration} s after a ${WARMUP_S} s warm-up (password logins of the dataset's password users, argon2id; ` +
      `service-updates over ${tokens.length} API sessions of distinct identities). ` +
      `Reads: open loop at ${readRate}/s (${b.opts.openFraction * 100}% of their capacity, at most ${b.opts.maxRate}/s), 64 keep-alive connections, latency from the scheduled send time, ${duration} s, ` +
      `alone and during the flood. Flood: password logins, open loop at ${FLOOD_FACTOR}× the login capacity (${floodRate}/s) over ${FLOOD_SOCKETS} keep-alive connections, ` +
      `sent by a separate process, starting ${LEAD_MS / 1000} s before the reads and ending ${LEAD_MS / 1000} s after them; a login unanswered ${LOGIN_DEADLINE_MS / 1000} s after its scheduled time is a timeout. ` +
      `Lockout: during each flood an identity under an auth policy with maxAttempts ${LOCKOUT_ATTEMPTS} sends wrong passwords (waves of ${LOCKOUT_ATTEMPTS} at once, 100 ms apart, a new connection each) until it shows as disabled or the flood ends; then its right password must be refused.`,
  );
}

async function capacity(b: Bench, gen: RequestGen, what: string): Promise<LoadFigures> {
  const opts = { connections: b.opts.connections, pid: b.pid };
  await closedLoop(b.port, gen, { ...opts, seconds: WARMUP_S });
  const c = await closedLoop(b.port, gen, { ...opts, seconds: b.opts.duration });
  if (c.non2xx || c.errors) throw new Error(`S13: ${what} capacity run had ${c.non2xx} non-2xx answers and ${c.errors} errors`);
  console.log(`  ${what}: ${c.rps.toFixed(0)} req/s closed loop (p50 ${c.p50} p99 ${c.p99} ms)`);
  return c;
}

function readFigures(r: LoadFigures): ReadFigures {
  return { rate: r.targetRate ?? 0, rps: r.rps, p50: r.p50, p99: r.p99, max: r.max ?? Number.NaN, non2xx: r.non2xx, errors: r.errors, timeouts: r.timeouts ?? 0, serverCpuPct: r.cpuPct };
}

function logPhase(p: FloodPhase): FloodPhase {
  const r = p.reads;
  const l = p.logins;
  console.log(
    `  ${p.phase} (limits ${p.limits}): reads @${r.rate}/s p50 ${r.p50.toFixed(2)} p99 ${r.p99.toFixed(2)} max ${r.max.toFixed(0)} ms, non-2xx ${r.non2xx}, errors ${r.errors}` +
      (l ? ` | logins @${l.rate}/s: 2xx ${l.ok}, 429 ${l.rateLimited}, other ${l.otherNon2xx}, errors ${l.errors}, timeouts ${l.timeouts}, 2xx p99 ${l.okP99.toFixed(0)} ms` : '') +
      (p.lockout ? ` | lockout ${p.lockout.locked ? 'yes' : 'NO'} after ${p.lockout.attempts} attempts, right password then ${p.lockout.rightPasswordAfter}` : ''),
  );
  return p;
}

/** The reads at `readRate` (and the lockout probe) inside a login flood at `floodRate` from a child process. */
async function floodPhase(b: Bench, limits: FloodPhase['limits'], readGen: RequestGen, readRate: number, floodRate: number, users: LoginFloodSpec['users'], lockUser: LockUser, admin: Admin): Promise<FloodPhase> {
  const seconds = b.opts.duration + (2 * LEAD_MS) / 1000;
  const spec: LoginFloodSpec = { port: b.port, pid: b.pid, rate: floodRate, seconds, sockets: FLOOD_SOCKETS, deadlineMs: LOGIN_DEADLINE_MS, users };
  const { child } = await spawnReady('bench/login-flood.ts', [JSON.stringify(spec)]);
  const result = floodResult(child);
  result.catch(() => undefined); // awaited below; a failure meanwhile must not go unhandled
  await sleep(LEAD_MS);
  let floodDone = false;
  void result.finally(() => (floodDone = true)).catch(() => undefined);
  const [reads, lockout] = await Promise.all([openLoop(b.port, readGen, { rate: readRate, seconds: b.opts.duration, pid: b.pid }), lockoutProbe(b, lockUser, admin, () => floodDone)]);
  const logins = await result;
  await stopChild(child);
  await settle(b.pid);
  return { phase: 'flood', limits, reads: readFigures(reads), logins, lockout };
}

/** Resolves with the `RESULT {...}` line of the flood child. */
async function floodResult(child: ChildProcess): Promise<LoginFloodFigures> {
  for await (const line of createInterface({ input: child.stdout! })) {
    if (line.startsWith('RESULT ')) return JSON.parse(line.slice('RESULT '.length)) as LoginFloodFigures;
  }
  throw new Error(`login flood ended (code ${child.exitCode}, signal ${child.signalCode}) without a result`);
}

// ---- lockout under the flood -----------------------------------------------------------------------------------

/** A management client of the running controller. */
type Admin = ReturnType<Bench['api']>;

interface LockUser {
  id: string;
  username: string;
  password: string;
}

/** One identity per limits setting under an auth policy that locks after LOCKOUT_ATTEMPTS wrong passwords. */
async function lockoutUsers(b: Bench): Promise<Record<FloodPhase['limits'], LockUser>> {
  const admin = b.api(2);
  admin.setToken(await b.adminToken());
  const run = Date.now().toString(36);
  const policy = await admin.must(
    'POST',
    `${MANAGEMENT}/auth-policies`,
    {
      name: `bench-s13-lockout-${run}`,
      secondary: { requireTotp: false },
      primary: {
        updb: { ...PASSWORD_RULES, allowed: true, maxAttempts: LOCKOUT_ATTEMPTS, lockoutDurationMinutes: 30 },
        extJwt: { allowed: true, allowedSigners: [] },
        cert: { allowed: true, allowExpiredCerts: true },
      },
    },
    201,
  );
  const users = {} as Record<FloodPhase['limits'], LockUser>;
  for (const limits of ['default', 'off'] as const) {
    const name = `bench-s13-lockout-${limits}-${run}`;
    const created = await admin.must('POST', `${MANAGEMENT}/identities`, { name, type: 'User', isAdmin: false, authPolicyId: policy.data.id }, 201);
    const password = `right-pw-${run}`;
    await admin.must('POST', `${MANAGEMENT}/authenticators`, { method: 'updb', identityId: created.data.id, username: name, password }, 201);
    users[limits] = { id: created.data.id as string, username: name, password };
  }
  admin.close();
  return users;
}

/**
 * Waves of LOCKOUT_ATTEMPTS concurrent wrong passwords (each on a new connection), 100 ms apart, until the identity
 * shows as disabled or `stop()` (the flood ended); then the right password.
 */
async function lockoutProbe(b: Bench, user: LockUser, admin: Admin, stop: () => boolean): Promise<LockoutFigures> {
  const login = async (password: string) => {
    try {
      return (await fetchOnce(b.port, b.ca, 'POST', `${CLIENT}/authenticate?method=password`, { 'content-type': 'application/json' }, JSON.stringify({ username: user.username, password }))).status;
    } catch {
      return 0;
    }
  };
  const f: LockoutFigures = { attempts: 0, refused: 0, shed: 0, other: 0, locked: false, rightPasswordAfter: undefined };
  while (!stop() && !f.locked) {
    const wave = await Promise.all(Array.from({ length: LOCKOUT_ATTEMPTS }, () => login('wrong-password')));
    for (const status of wave) {
      f.attempts++;
      if (status === 401) f.refused++;
      else if (status === 429) f.shed++;
      else f.other++;
    }
    if (wave.includes(401)) f.locked = (await admin.must('GET', `${MANAGEMENT}/identities/${user.id}`, undefined, 200)).data.disabled === true;
    await sleep(100);
  }
  if (f.locked) {
    // Shed answers say nothing about the lockout: ask again (bounded) until the login is admitted.
    for (let i = 0; i < 50 && (f.rightPasswordAfter === undefined || f.rightPasswordAfter === 429); i++) {
      f.rightPasswordAfter = await login(user.password);
      if (f.rightPasswordAfter === 429) await sleep(100);
    }
  }
  return f;
}

// ---- helpers ---------------------------------------------------------------------------------------------------

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Waits (at most 30 s) until the controller's CPU over half a second is below 15 % of a core: the previous load is over. */
export async function settle(pid: number): Promise<void> {
  const deadline = performance.now() + 30_000;
  let before = procStats(pid).cpuMs;
  while (performance.now() < deadline) {
    await sleep(500);
    const now = procStats(pid).cpuMs;
    if (now - before < 75) return;
    before = now;
  }
}

// ---- report ----------------------------------------------------------------------------------------------------

/** A figure, or – when there is none (NaN is stored as null in the JSON). */
function f(x: number | null | undefined, digits = 0): string {
  return typeof x !== 'number' || Number.isNaN(x) ? '–' : fmt(x, digits);
}

/** A latency: two decimals below 100 ms. */
function lat(x: number | null | undefined): string {
  return f(x, typeof x === 'number' && x < 100 ? 2 : 0);
}

/** Markdown for bench/results/report.md: one row per phase, then the lockout checks. */
export function floodTable(r: ScenarioResult): string[] {
  const x = r.extra as FloodExtra | undefined;
  if (!x) return [];
  const lines = [
    `S13, ${x.workers} worker processes: service-updates at ${f(x.readRate)}/s (open loop) alone and during a password-login flood at ${f(x.floodRate)}/s ` +
      `(${FLOOD_FACTOR}× the closed-loop login capacity of ${f(x.loginCapacity.rps)}/s, p99 ${f(x.loginCapacity.p99)} ms at c=${x.loginCapacity.connections}; ` +
      `service-updates capacity ${f(x.readCapacity.rps)}/s):`,
    '',
    '| Phase | Limiter | reads req/s | reads p50 / p99 / max ms | reads non-2xx | reads errors (timeouts) | logins offered/s | logins 2xx (per s) | 429 | other non-2xx | login errors | login timeouts | login 2xx p50 / p99 ms | 429 p99 ms | server CPU % |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const p of x.phases) {
    const rd = p.reads;
    const l = p.logins;
    lines.push(
      `| ${p.phase === 'alone' ? 'reads alone' : 'reads + login flood'} | ${p.limits === 'default' ? 'default limits' : 'off (0)'} | ${f(rd.rps)} | ${lat(rd.p50)} / ${lat(rd.p99)} / ${lat(rd.max)} | ${rd.non2xx} | ${rd.errors} (${rd.timeouts}) | ` +
        (l ? `${f(l.rate)} | ${f(l.ok)} (${f(l.okPerSecond)}) | ${f(l.rateLimited)} | ${f(l.otherNon2xx)} | ${f(l.errors)} | ${f(l.timeouts)} | ${lat(l.okP50)} / ${lat(l.okP99)} | ${lat(l.shedP99)} |` : '– | – | – | – | – | – | – | – |') +
        ` ${f(l ? l.serverCpuPct : rd.serverCpuPct)} |`,
    );
  }
  const locks = x.phases.filter((p) => p.lockout);
  if (locks.length) {
    lines.push('', `| Lockout under the flood (maxAttempts ${LOCKOUT_ATTEMPTS}) | wrong-password attempts | 401 | 429 | other | locked | right password afterwards |`, '|---|---:|---:|---:|---:|:---:|---:|');
    for (const p of locks) {
      const k = p.lockout!;
      lines.push(`| limiter ${p.limits === 'default' ? 'default' : 'off'} | ${k.attempts} | ${k.refused} | ${k.shed} | ${k.other} | ${k.locked ? 'yes' : 'not before the flood ended'} | ${k.rightPasswordAfter ?? '–'} |`);
    }
  }
  return lines;
}
