/**
 * Fabric suite (no dataset): the router control channel of a fresh controller (child process, temporary data
 * directory, 127.0.0.1, `--workers W`), in three parts, each against a controller of its own:
 *  1. memory per connected router: N edge routers enrolled over REST, then connected as scripted routers (hello and
 *     client hello, so each is synced) until REST shows them all online; the controller's RSS (primary + workers)
 *     before and after, and the time until all are online;
 *  2. the controller's part of a circuit: one synced scripted router hosts a terminator; CreateCircuitV2 requests
 *     with C in flight for D seconds, every Route answered at once with a successful RouteResult and every circuit
 *     ended by a Fault right after its response; channel pings on the same connection at the same concurrency are
 *     the baseline (circuits/s ÷ pings/s);
 *  3. end to end through a real router: upstream `ziti router` and Go SDK peers (`sdkecho host`, `sdkecho bench`):
 *     dial to first byte (p50/p99) and circuits per second through one router at concurrency 1 and 8.
 * Everything runs on 127.0.0.1, bounded in time and count; every process started here is stopped at the end (and
 * killed if the benchmark process exits otherwise), with each ziti process's /tmp/gops-agent.<pid>.sock removed.
 * Run through `npm run bench -- --suite fabric` (see bench/README.md).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ChannelContentType, ChannelHeader, byteMapValue, int32Value, message, readBool, readString, stringValue, uint32Value, type ChannelMessage } from '../src/fabric/channel/message.ts';
import { CtrlContentType, FaultSubject } from '../src/fabric/proto/ctrl.ts';
import { EdgeContentType } from '../src/fabric/proto/edge-ctrl.ts';
import { CreateCircuitV2RequestHeader, CreateCircuitV2ResponseHeader, RouteResultHeader } from '../src/fabric/proto/header-messages.ts';
import { decode, encode } from '../src/fabric/proto/index.ts';
import { zitiBinary } from '../test/interop/ziti-bin.mjs';
import { BENCH_ADMIN_PASSWORD } from './datasets/identities.ts';
import { BenchRouter, enrollEdgeRouter, type BenchRouterCredentials } from './fabric-router.ts';
import { apiClient, fmt, machine, percentileOf, pool, procStats, serverCpuMs, spawnReady, stopChild } from './lib.ts';

export interface FabricSuiteOptions {
  /** Routers connected for the memory figure (N). */
  routers: number;
  /** Circuit requests (and pings) in flight on the scripted router's connection (C). */
  inFlight: number;
  /** Seconds per measured run (D). */
  duration: number;
  /** Worker processes of the controller under test; one full run per entry. */
  workers: number[];
  /**
   * `postgres`: every controller of the suite runs on a fresh database of one private PostgreSQL cluster
   * (test/support/postgres.ts `startTestPostgres`), started for the suite and removed at its end; results go to
   * `fabric-pg*`. Default `sqlite` (the data directory's embedded store).
   */
  store?: 'sqlite' | 'postgres';
}

/** A fresh database per controller on the suite's private cluster (`--store postgres`); undefined on SQLite. */
let freshDatabase: ((label: string) => Promise<string>) | undefined;
/** That cluster's postmaster pid, for its CPU time; undefined on SQLite. */
let databasePid: (() => number | undefined) | undefined;

const MANAGEMENT = '/edge/management/v1';
const CLIENT = '/edge/client/v1';
const WARMUP_S = 1;
/** Concurrency of the REST preparation (router enrollments). */
const PREPARE_CONCURRENCY = 8;
/** Routers dialing the control channel at once in part 1. */
const CONNECT_CONCURRENCY = 64;
/** Part 1: how long all N may take to show online. */
const ONLINE_TIMEOUT_MS = 120_000;
/** Part 3: concurrency of the SDK dial loops. */
const E2E_CONCURRENCY = [1, 8];
/** Part 3: a router online, an SDK bound, a terminator present. */
const READY_TIMEOUT_MS = 60_000;
/** A run aborts after this many failed requests (something is broken; the figures would mean nothing). */
const MAX_ERRORS = 50;

const here = dirname(fileURLToPath(import.meta.url));
const goModuleDir = resolve(here, '..', 'test', 'interop', 'go');

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---- processes other than the controller: ziti and sdkecho ------------------------------------------------------

const external = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Each ziti process leaves its diagnostics agent socket behind. */
function removeAgentSocket(pid: number | undefined): void {
  if (pid) rmSync(`/tmp/gops-agent.${pid}.sock`, { force: true });
}

function killExternalSync(): void {
  for (const child of external) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    removeAgentSocket(child.pid);
  }
  external.clear();
}

/** Starts a tracked process: stopped by `stopExternal`, killed when the benchmark process exits. */
export function startExternal(command: string, args: string[], opts: { env?: Record<string, string>; logFile?: string; cwd?: string } = {}): ChildProcess {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', killExternalSync);
  }
  let fd: number | undefined;
  if (opts.logFile) fd = openSync(opts.logFile, 'a');
  try {
    const child = spawn(command, args, {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', fd ?? 'pipe', fd ?? 'pipe'],
    });
    child.on('error', () => undefined);
    child.once('exit', () => removeAgentSocket(child.pid));
    external.add(child);
    return child;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

export async function stopExternal(child: ChildProcess, timeoutMs = 10_000): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(timer);
  }
  removeAgentSocket(child.pid);
  external.delete(child);
}

/** Collects a piped process's stdout lines (the last 200) and its stderr tail. */
export function outputOf(child: ChildProcess): { lines: string[]; stderr: () => string; waitLine: (re: RegExp, timeoutMs: number) => Promise<string> } {
  const lines: string[] = [];
  let pending = '';
  let err = '';
  const waiters: Array<() => void> = [];
  child.stdout?.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    lines.push(...parts);
    if (lines.length > 200) lines.splice(0, lines.length - 200);
    for (const w of waiters.splice(0)) w();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err = (err + chunk.toString('utf8')).slice(-4000);
  });
  child.once('exit', () => {
    for (const w of waiters.splice(0)) w();
  });
  return {
    lines,
    stderr: () => err,
    async waitLine(re, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const hit = lines.find((l) => re.test(l));
        if (hit !== undefined) return hit;
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`exited (${child.exitCode ?? child.signalCode}) before printing ${re}: ${lines.slice(-5).join(' | ')} ${err.slice(-1500)}`);
        if (Date.now() > deadline) throw new Error(`no line ${re} within ${timeoutMs} ms: ${lines.slice(-5).join(' | ')} ${err.slice(-1500)}`);
        await new Promise<void>((r) => {
          const t = setTimeout(r, 200);
          waiters.push(() => {
            clearTimeout(t);
            r();
          });
        });
      }
    },
  };
}

/** Runs a command to its end (bounded); the ziti agent socket of its pid is removed. */
export function runSync(command: string, args: string[], env: Record<string, string>, timeoutMs = 120_000, cwd?: string): string {
  const r = spawnSync(command, args, { encoding: 'utf8', timeout: timeoutMs, env: { ...process.env, ...env }, cwd });
  removeAgentSocket(r.pid);
  if (r.error) throw new Error(`${command} ${args.join(' ')}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout + r.stderr;
}

export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.on('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => res(port));
    });
  });
}

// ---- the controller -----------------------------------------------------------------------------------------------

export interface Controller {
  child: ChildProcess;
  pid: number;
  port: number;
  ca: string;
  dataDir: string;
  admin: ReturnType<typeof apiClient>;
  anonymous: ReturnType<typeof apiClient>;
}

/** A controller on a fresh data directory, advertised as 127.0.0.1 (routers and SDKs dial that), admin logged in. */
async function startController(tmp: string, label: string, workers: number): Promise<Controller> {
  const dataDir = join(tmp, `data-${label}`);
  mkdirSync(dataDir, { recursive: true });
  // A port chosen here rather than 0: the controller names its configured port in enrollment JWTs (issuer URL), and
  // with 0 that would be port 0 (routers and SDKs enrolling with them could not reach it).
  const port = await freePort();
  const databaseUrl = freshDatabase ? await freshDatabase(label) : undefined;
  const { child, info } = await spawnReady<{ port: number; caBundlePem: string }>('bench/serve.ts', [
    dataDir,
    String(port),
    String(workers),
    '127.0.0.1',
    ...(databaseUrl ? ['--database-url', databaseUrl] : []),
  ]);
  const admin = apiClient(info.port, info.caBundlePem, PREPARE_CONCURRENCY);
  const login = await admin.must('POST', `${MANAGEMENT}/authenticate?method=password`, { username: 'admin', password: BENCH_ADMIN_PASSWORD }, 200);
  admin.setToken(login.data.token as string);
  return { child, pid: child.pid!, port: info.port, ca: info.caBundlePem, dataDir, admin, anonymous: apiClient(info.port, info.caBundlePem, PREPARE_CONCURRENCY) };
}

async function stopController(c: Controller): Promise<void> {
  c.admin.close();
  c.anonymous.close();
  await stopChild(c.child);
  rmSync(c.dataDir, { recursive: true, force: true });
}

/** RSS of the controller (primary and workers), MB: after `settleMs`, the median of five samples 200 ms apart. */
export async function settledRssMb(pid: number, settleMs = 1000): Promise<number> {
  await sleep(settleMs);
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(procStats(pid).rssMb);
    if (i < 4) await sleep(200);
  }
  return percentileOf(samples.sort((a, b) => a - b), 50);
}

/** Edge routers REST shows online and synced (every page). */
export async function onlineRouters(c: Controller): Promise<Set<string>> {
  const online = new Set<string>();
  for (let offset = 0; ; offset += 500) {
    const page = await c.admin.must('GET', `${MANAGEMENT}/edge-routers?limit=500&offset=${offset}`, undefined, 200);
    const items = page.data as Array<{ id: string; isOnline: boolean; syncStatus: string }>;
    for (const r of items) if (r.isOnline && r.syncStatus === 'SYNC_DONE') online.add(r.id);
    if (items.length < 500) return online;
  }
}

export async function waitUntil(what: string | (() => string), timeoutMs: number, probe: () => Promise<boolean>, intervalMs = 100, abort?: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const text = () => (typeof what === 'string' ? what : what());
  for (;;) {
    const aborted = abort?.();
    if (aborted) throw new Error(`gave up waiting until ${text()}: ${aborted}`);
    if (await probe()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${text()}`);
    await sleep(intervalMs);
  }
}

/** A non-admin identity with a password, logged in over the client API. */
async function clientUser(c: Controller, name: string): Promise<{ id: string; token: string; api: ReturnType<typeof apiClient> }> {
  const created = await c.admin.must('POST', `${MANAGEMENT}/identities`, { name, type: 'Default', isAdmin: false }, 201);
  const id = created.data.id as string;
  const password = `bench-pw-${name}`;
  await c.admin.must('POST', `${MANAGEMENT}/authenticators`, { method: 'updb', identityId: id, username: name, password }, 201);
  const api = apiClient(c.port, c.ca, 2);
  const login = await api.must('POST', `${CLIENT}/authenticate?method=password`, { username: name, password }, 200);
  api.setToken(login.data.token as string);
  return { id, token: login.data.token as string, api };
}

/**
 * Bind and Dial policies, the edge router policy (router ↔ both identities), the service edge router policy; `tag`
 * suffixes their names (several sets on one controller: bench/fabric-scale.ts).
 */
async function policies(c: Controller, serviceId: string, routerId: string, hostId: string, dialerId: string, tag = ''): Promise<void> {
  const p = (path: string, body: unknown) => c.admin.must('POST', `${MANAGEMENT}${path}`, body, 201);
  await p('/service-policies', { name: `bench-bind${tag}`, type: 'Bind', semantic: 'AnyOf', serviceRoles: [`@${serviceId}`], identityRoles: [`@${hostId}`] });
  await p('/service-policies', { name: `bench-dial${tag}`, type: 'Dial', semantic: 'AnyOf', serviceRoles: [`@${serviceId}`], identityRoles: [`@${dialerId}`] });
  await p('/edge-router-policies', { name: `bench-erp${tag}`, semantic: 'AnyOf', edgeRouterRoles: [`@${routerId}`], identityRoles: [`@${hostId}`, `@${dialerId}`] });
  await p('/service-edge-router-policies', { name: `bench-serp${tag}`, semantic: 'AnyOf', edgeRouterRoles: [`@${routerId}`], serviceRoles: [`@${serviceId}`] });
}

// ---- closed loops on one connection ---------------------------------------------------------------------------------

export interface LoopFigures {
  inFlight: number;
  seconds: number;
  total: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  firstError?: string;
  /** Controller CPU (primary + workers) over the run, % of one core. */
  cpuPct: number;
  /** The PostgreSQL server's CPU over the run (all its processes), % of one core; absent on SQLite (in the controller). */
  dbCpuPct?: number;
}

/**
 * `inFlight` loops, each starting its next operation when the previous one finished, for `seconds`; `op` resolves
 * with its own latency in ms. Rate = completed operations ÷ the wall time to the last one's end.
 */
async function closedLoop(pid: number, inFlight: number, seconds: number, op: () => Promise<number>): Promise<LoopFigures & { latencies: number[] }> {
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const cpu0 = procStats(pid).cpuMs;
  const dbPid = databasePid?.();
  const db0 = dbPid ? serverCpuMs(dbPid) : 0;
  const start = performance.now();
  const deadline = start + seconds * 1000;
  let lastEnd = start;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < deadline) {
        try {
          latencies.push(await op());
        } catch (err) {
          errors++;
          firstError ??= (err as Error).message;
          if (errors > MAX_ERRORS) throw new Error(`more than ${MAX_ERRORS} failures, first: ${firstError}`);
        }
        lastEnd = performance.now();
      }
    }),
  );
  const wallMs = Math.max(1, lastEnd - start);
  const cpuPct = ((procStats(pid).cpuMs - cpu0) / wallMs) * 100;
  const dbCpuPct = dbPid ? ((serverCpuMs(dbPid) - db0) / wallMs) * 100 : undefined;
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    inFlight,
    seconds,
    total: latencies.length,
    perSecond: latencies.length / (wallMs / 1000),
    p50Ms: percentileOf(sorted, 50),
    p99Ms: percentileOf(sorted, 99),
    errors,
    ...(firstError ? { firstError } : {}),
    cpuPct,
    ...(dbCpuPct !== undefined ? { dbCpuPct } : {}),
    latencies,
  };
}

// ---- part 1: memory per connected router ------------------------------------------------------------------------------

interface MemoryFigures {
  routers: number;
  enrollMs: number;
  rssEnrolledMb: number;
  rssFirstRouterMb: number;
  rssAllMb: number;
  /** (RSS with all − RSS with the first) ÷ N. */
  perRouterKiB: number;
  /** (RSS with all − RSS before any) ÷ (N + 1): the first router's one-time costs spread over all. */
  perRouterInclFirstKiB: number;
  /** The first router: its own RSS step (code paths warming up, TLS, first sync). */
  firstRouterKiB: number;
  /** From the first dial of the N until the last hello was answered (client side). */
  connectedMs: number;
  /** From the first dial of the N until REST showed all N + 1 online and synced (polled every 100 ms). */
  onlineMs: number;
}

async function memoryPart(c: Controller, n: number): Promise<MemoryFigures> {
  console.log(`  enrolling ${n + 1} edge routers over REST (${n} measured + 1 warm-up) ...`);
  const t0 = performance.now();
  const creds: BenchRouterCredentials[] = new Array(n + 1);
  await pool(Array.from({ length: n + 1 }, (_, i) => i), PREPARE_CONCURRENCY, async (i) => {
    creds[i] = await enrollEdgeRouter(c.admin, c.anonymous, `bench-er-${String(i).padStart(5, '0')}`);
  });
  const enrollMs = performance.now() - t0;
  const routers: BenchRouter[] = [];
  try {
    const rssEnrolledMb = await settledRssMb(c.pid);
    // One router first, not counted: the code paths of admission, TLS with client certificates and the sync warm up.
    routers.push(await BenchRouter.connect(c.port, c.ca, creds[0]!, { sync: true }));
    await waitUntil('the warm-up router is online', 30_000, async () => (await onlineRouters(c)).has(creds[0]!.id));
    const rssFirstRouterMb = await settledRssMb(c.pid);
    console.log(`  connecting ${n} scripted routers (hello + client hello), ${CONNECT_CONCURRENCY} at a time ...`);
    const t1 = performance.now();
    await pool(creds.slice(1), CONNECT_CONCURRENCY, async (cr) => {
      routers.push(await BenchRouter.connect(c.port, c.ca, cr, { sync: true }));
    });
    const connectedMs = performance.now() - t1;
    let seen = 0;
    await waitUntil(() => `REST shows ${n + 1} routers online and synced (last seen ${seen})`, ONLINE_TIMEOUT_MS, async () => {
      seen = (await onlineRouters(c)).size;
      return seen >= n + 1;
    });
    const onlineMs = performance.now() - t1;
    const rssAllMb = await settledRssMb(c.pid);
    const closedEarly = routers.filter((r) => r.closed).length;
    if (closedEarly > 0) throw new Error(`${closedEarly} router connections closed during the measurement`);
    return {
      routers: n,
      enrollMs,
      rssEnrolledMb,
      rssFirstRouterMb,
      rssAllMb,
      perRouterKiB: ((rssAllMb - rssFirstRouterMb) * 1024) / n,
      perRouterInclFirstKiB: ((rssAllMb - rssEnrolledMb) * 1024) / (n + 1),
      firstRouterKiB: (rssFirstRouterMb - rssEnrolledMb) * 1024,
      connectedMs,
      onlineMs,
    };
  } finally {
    for (const r of routers) r.close();
  }
}

// ---- part 2: the controller's part of a circuit -----------------------------------------------------------------------

export interface CircuitRow {
  inFlight: number;
  pings: LoopFigures;
  circuits: LoopFigures;
  /** circuits/s ÷ pings/s. */
  ratio: number;
  /** Request sent → Route received (session and policy checks, terminator choice), p50/p99 ms. */
  toRouteP50Ms: number;
  toRouteP99Ms: number;
  /** RouteResult sent → CreateCircuitV2Response received (circuit recorded, response built), p50/p99 ms. */
  afterResultP50Ms: number;
  afterResultP99Ms: number;
}

export interface CircuitFigures {
  rows: CircuitRow[];
  /** Circuits the controller still listed for the dial session 10 s after the last run (should be 0). */
  leftoverCircuits: number;
  rssAfterMb: number;
}

function stripLatencies(f: LoopFigures & { latencies?: number[] }): LoopFigures {
  const { latencies: _unused, ...rest } = f;
  return rest;
}

/**
 * Part 2 on controller `c`; `tag` suffixes the names of what it creates (router, service, identities, policies), so
 * it can run more than once on one controller (bench/fabric-scale.ts runs it before and after routers connect).
 */
export async function circuitPart(c: Controller, inFlights: number[], seconds: number, tag = ''): Promise<CircuitFigures> {
  const creds = await enrollEdgeRouter(c.admin, c.anonymous, `bench-circuit-router${tag}`);
  const router = await BenchRouter.connect(c.port, c.ca, creds, { sync: true });
  try {
    await waitUntil('the scripted router is online and synced', 30_000, async () => (await onlineRouters(c)).has(creds.id));
    const service = await c.admin.must('POST', `${MANAGEMENT}/services`, { name: `bench-circuits${tag}`, encryptionRequired: false }, 201);
    const serviceId = service.data.id as string;
    const host = await clientUser(c, `bench-host${tag}`);
    const dialer = await clientUser(c, `bench-dialer${tag}`);
    await policies(c, serviceId, creds.id, host.id, dialer.id, tag);
    const bind = await host.api.must('POST', `${CLIENT}/sessions`, { serviceId, type: 'Bind' }, 201);
    const dial = await dialer.api.must('POST', `${CLIENT}/sessions`, { serviceId, type: 'Dial' }, 201);
    host.api.close();
    dialer.api.close();

    // The terminator, as an edge router creates it for a hosting SDK.
    const address = 'bench-terminator';
    router.send(
      message(
        EdgeContentType.CreateTerminatorV2Request,
        encode('edge.CreateTerminatorV2Request', { address, sessionToken: bind.data.token, apiSessionToken: host.token, cost: 0, peerData: new Map() }),
      ),
    );
    const created = decode('edge.CreateTerminatorV2Response', (await router.next((m) => m.contentType === EdgeContentType.CreateTerminatorV2Response, 10_000)).body);
    if (created.result !== 0) throw new Error(`terminator refused: ${created.result} ${created.msg}`);

    // Every Route is answered at once with a successful RouteResult; the request's peer data names the request.
    const routeTimes = new Map<string, { routeAt: number; resultAt: number }>();
    let badRoutes = 0;
    router.onRoute = (m: ChannelMessage) => {
      const routeAt = performance.now();
      const route = decode('ctrl.Route', m.body);
      if (route.egress?.destination !== address) badRoutes++;
      const key = Buffer.from(route.egress?.peerData.get(1003) ?? new Uint8Array()).toString('utf8');
      const result = message(CtrlContentType.RouteResult, route.circuitId, [
        [RouteResultHeader.Attempt, uint32Value(route.attempt)],
        [RouteResultHeader.Success, Buffer.from([1])],
      ]);
      result.headers.set(ChannelHeader.ReplyFor, int32Value(m.sequence));
      router.send(result);
      routeTimes.set(key, { routeAt, resultAt: performance.now() });
    };
    let counter = 0;
    let toRoute: number[] = [];
    let afterResult: number[] = [];
    /** One circuit: request → (Route → RouteResult) → response; then its Fault (the dialer went away). */
    const circuit = async (): Promise<number> => {
      const key = `c${counter++}`;
      const request = message(EdgeContentType.CreateCircuitV2Request, Buffer.alloc(0), [
        [CreateCircuitV2RequestHeader.SessionToken, stringValue(dial.data.token as string)],
        [CreateCircuitV2RequestHeader.ApiSessionToken, stringValue(dialer.token)],
        [CreateCircuitV2RequestHeader.PeerData, byteMapValue(new Map([[1003, Buffer.from(key)]]))],
      ]);
      const t0 = performance.now();
      const response = await router.request(request);
      const t1 = performance.now();
      const times = routeTimes.get(key);
      routeTimes.delete(key);
      if (response.contentType !== EdgeContentType.CreateCircuitV2Response) {
        throw new Error(`circuit refused (content type ${response.contentType}): ${response.body.toString('utf8').slice(0, 200)}`);
      }
      const circuitId = readString(response.headers.get(CreateCircuitV2ResponseHeader.CircuitId));
      if (!circuitId) throw new Error('circuit response without a circuit id');
      router.send(message(CtrlContentType.Fault, encode('ctrl.Fault', { subject: FaultSubject.IngressFault, id: circuitId })));
      if (times) {
        toRoute.push(times.routeAt - t0);
        afterResult.push(t1 - times.resultAt);
      }
      return t1 - t0;
    };
    const ping = async (): Promise<number> => {
      const t0 = performance.now();
      const result = await router.request(message(ChannelContentType.Ping));
      const t1 = performance.now();
      if (result.contentType !== ChannelContentType.Result || readBool(result.headers.get(ChannelHeader.ResultSuccess)) !== true) throw new Error('ping not answered with a successful result');
      return t1 - t0;
    };

    await circuit(); // one first, also a check of the whole exchange
    if (badRoutes > 0) throw new Error('the Route did not name the terminator');

    const rows: CircuitRow[] = [];
    for (const inFlight of inFlights) {
      await closedLoop(c.pid, inFlight, WARMUP_S, ping);
      const pings = await closedLoop(c.pid, inFlight, seconds, ping);
      console.log(`  pings     in flight ${String(inFlight).padStart(2)}: ${fmt(pings.perSecond)}/s, p50 ${pings.p50Ms.toFixed(2)} ms, p99 ${pings.p99Ms.toFixed(2)} ms, cpu ${pings.cpuPct.toFixed(0)}%`);
      await closedLoop(c.pid, inFlight, WARMUP_S, circuit);
      toRoute = [];
      afterResult = [];
      const circuits = await closedLoop(c.pid, inFlight, seconds, circuit);
      const tr = [...toRoute].sort((a, b) => a - b);
      const ar = [...afterResult].sort((a, b) => a - b);
      const row: CircuitRow = {
        inFlight,
        pings: stripLatencies(pings),
        circuits: stripLatencies(circuits),
        ratio: circuits.perSecond / pings.perSecond,
        toRouteP50Ms: percentileOf(tr, 50),
        toRouteP99Ms: percentileOf(tr, 99),
        afterResultP50Ms: percentileOf(ar, 50),
        afterResultP99Ms: percentileOf(ar, 99),
      };
      console.log(
        `  circuits  in flight ${String(inFlight).padStart(2)}: ${fmt(circuits.perSecond)}/s, p50 ${circuits.p50Ms.toFixed(2)} ms, p99 ${circuits.p99Ms.toFixed(2)} ms, cpu ${circuits.cpuPct.toFixed(0)}%${circuits.dbCpuPct !== undefined ? ` (+ PostgreSQL ${circuits.dbCpuPct.toFixed(0)}%)` : ''}, ` +
          `${(row.ratio * 100).toFixed(1)}% of pings/s${circuits.errors ? `  !! ${circuits.errors} errors: ${circuits.firstError}` : ''}`,
      );
      rows.push(row);
    }
    if (badRoutes > 0) throw new Error(`${badRoutes} Routes did not name the terminator`);

    // Every circuit got its Fault: the controller must have ended them all.
    let leftoverCircuits = -1;
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const path = await c.admin.must('GET', `${MANAGEMENT}/sessions/${dial.data.id}/route-path`, undefined, 200);
      leftoverCircuits = (path.data.routePath as unknown[]).length;
      if (leftoverCircuits === 0) break;
      await sleep(250);
    }
    const rssAfterMb = procStats(c.pid).rssMb;
    return { rows, leftoverCircuits, rssAfterMb };
  } finally {
    router.close();
  }
}

// ---- part 3: end to end through a real router ---------------------------------------------------------------------------

interface E2eRun {
  concurrency: number;
  seconds: number;
  dials: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  firstError?: string;
  /** Controller CPU (primary + workers) over the run, % of one core. */
  controllerCpuPct: number;
  /** Router CPU over the run, % of one core. */
  routerCpuPct: number;
}

interface E2eFigures {
  skipped?: string;
  routerVersion?: string;
  setupMs?: number;
  runs: E2eRun[];
}

/** Whether the tools part 3 needs are there; the reason when not. */
function e2eTools(): { ziti: string } | { missing: string } {
  let ziti: string;
  try {
    ziti = zitiBinary();
  } catch (err) {
    return { missing: (err as Error).message };
  }
  const go = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (go.status !== 0) return { missing: 'the Go toolchain (`go`) is needed to build test/interop/go/cmd/sdkecho' };
  return { ziti };
}

async function e2ePart(c: Controller, tmp: string, ziti: string, seconds: number): Promise<E2eFigures> {
  const t0 = performance.now();
  const sdkecho = join(tmp, 'sdkecho');
  console.log('  building sdkecho (Go SDK peer) ...');
  runSync('go', ['build', '-o', sdkecho, './cmd/sdkecho'], { GOPROXY: 'off', GOFLAGS: '-buildvcs=false' }, 300_000, goModuleDir);
  const cliEnv = { ZITI_CONFIG_DIR: join(tmp, 'ziti-cli') };
  mkdirSync(cliEnv.ZITI_CONFIG_DIR, { recursive: true });
  const version = runSync(ziti, ['version'], cliEnv).trim().split('\n').pop() ?? '';

  // The router: created over REST, configured and enrolled with the CLI (as the interop harness does), run.
  const routerDir = join(tmp, 'router');
  mkdirSync(routerDir, { recursive: true });
  const routerName = 'bench-r1';
  const created = await c.admin.must('POST', `${MANAGEMENT}/edge-routers`, { name: routerName, isTunnelerEnabled: false }, 201);
  const routerId = created.data.id as string;
  const detail = await c.admin.must('GET', `${MANAGEMENT}/edge-routers/${routerId}`, undefined, 200);
  const jwtFile = join(routerDir, `${routerName}.jwt`);
  writeFileSync(jwtFile, detail.data.enrollmentJwt as string);
  const edgePort = await freePort();
  let linkPort = await freePort();
  while (linkPort === edgePort) linkPort = await freePort();
  const configFile = join(routerDir, `${routerName}.yaml`);
  runSync(ziti, ['create', 'config', 'router', 'edge', '--routerName', routerName, '-o', configFile], {
    ...cliEnv,
    ZITI_HOME: routerDir,
    ZITI_CTRL_ADVERTISED_ADDRESS: '127.0.0.1',
    ZITI_CTRL_ADVERTISED_PORT: String(c.port),
    ZITI_ROUTER_ADVERTISED_ADDRESS: '127.0.0.1',
    ZITI_ROUTER_PORT: String(edgePort),
    ZITI_ROUTER_LISTENER_BIND_PORT: String(linkPort),
    ZITI_ROUTER_CSR_SANS_DNS: 'localhost',
  });
  writeFileSync(configFile, readFileSync(configFile, 'utf8').replaceAll('0.0.0.0', '127.0.0.1'));
  runSync(ziti, ['router', 'enroll', configFile, '--jwt', jwtFile], cliEnv);
  const routerLog = join(routerDir, `${routerName}.log`);
  const routerProc = startExternal(ziti, ['router', 'run', configFile, '--log-formatter', 'pfxlog'], { env: cliEnv, logFile: routerLog });
  const routerTail = () => (existsSync(routerLog) ? readFileSync(routerLog, 'utf8').split('\n').slice(-30).join('\n') : '');
  const routerExited = () => (routerProc.exitCode !== null || routerProc.signalCode !== null ? `the router exited (${routerProc.exitCode ?? routerProc.signalCode}):\n${routerTail()}` : undefined);

  // Service, identities (ott, enrolled with `ziti edge enroll`), policies.
  const service = await c.admin.must('POST', `${MANAGEMENT}/services`, { name: 'bench-echo', encryptionRequired: true }, 201);
  const serviceId = service.data.id as string;
  const identity = async (name: string): Promise<{ id: string; file: string }> => {
    const made = await c.admin.must('POST', `${MANAGEMENT}/identities`, { name, type: 'Default', isAdmin: false, enrollment: { ott: true } }, 201);
    const id = made.data.id as string;
    const d = await c.admin.must('GET', `${MANAGEMENT}/identities/${id}`, undefined, 200);
    const jwt = d.data.enrollment?.ott?.jwt as string | undefined;
    if (!jwt) throw new Error(`identity ${name} has no ott enrollment JWT: ${JSON.stringify(d.data.enrollment)}`);
    const jwtPath = join(tmp, `${name}.jwt`);
    const file = join(tmp, `${name}.json`);
    writeFileSync(jwtPath, jwt);
    runSync(ziti, ['edge', 'enroll', jwtPath, '-o', file], cliEnv);
    return { id, file };
  };
  const host = await identity('bench-e2e-host');
  const client = await identity('bench-e2e-client');
  await policies(c, serviceId, routerId, host.id, client.id);
  await waitUntil('the router is online and synced', READY_TIMEOUT_MS, async () => (await onlineRouters(c)).has(routerId), 250, routerExited);

  // The echo host (Go SDK) and its terminator.
  const hostProc = startExternal(sdkecho, ['host', host.file, 'bench-echo']);
  const hostOut = outputOf(hostProc);
  try {
    await hostOut.waitLine(/^bound$/, READY_TIMEOUT_MS);
    await waitUntil('the host\'s terminator shows', READY_TIMEOUT_MS, async () => {
      const list = await c.admin.must('GET', `${MANAGEMENT}/services/${serviceId}/terminators`, undefined, 200);
      return (list.data as unknown[]).length > 0;
    }, 250, routerExited);
    const setupMs = performance.now() - t0;
    const runs: E2eRun[] = [];
    for (const concurrency of E2E_CONCURRENCY) {
      const cpu0 = procStats(c.pid).cpuMs;
      const r0 = procStats(routerProc.pid!).cpuMs;
      const w0 = performance.now();
      const benchProc = startExternal(sdkecho, ['bench', client.file, 'bench-echo', String(seconds), String(concurrency)]);
      const out = outputOf(benchProc);
      const exit = await new Promise<number | null>((res) => {
        const timer = setTimeout(() => benchProc.kill('SIGKILL'), (seconds + 60) * 1000);
        benchProc.once('exit', (code) => {
          clearTimeout(timer);
          res(code);
        });
      });
      const wallMs = performance.now() - w0;
      const controllerCpuPct = ((procStats(c.pid).cpuMs - cpu0) / wallMs) * 100;
      const routerCpuPct = ((procStats(routerProc.pid!).cpuMs - r0) / wallMs) * 100;
      external.delete(benchProc);
      const line = out.lines.filter((l) => l.startsWith('{')).pop();
      if (exit !== 0 || !line) throw new Error(`sdkecho bench (concurrency ${concurrency}) exited ${exit}: ${out.lines.slice(-5).join(' | ')}\n${out.stderr()}\nrouter log:\n${routerTail()}`);
      const r = JSON.parse(line) as { dials: number; perSecond: number; p50Ms: number; p99Ms: number; errors: number; firstError?: string };
      const run: E2eRun = { concurrency, seconds, ...r, controllerCpuPct, routerCpuPct };
      console.log(
        `  e2e concurrency ${concurrency}: ${r.dials} dials, ${fmt(r.perSecond, 1)}/s, dial to first byte p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms, ` +
          `controller cpu ${controllerCpuPct.toFixed(0)}%, router cpu ${routerCpuPct.toFixed(0)}%${r.errors ? `  !! ${r.errors} errors: ${r.firstError}` : ''}`,
      );
      runs.push(run);
    }
    return { routerVersion: version, setupMs, runs };
  } finally {
    await stopExternal(hostProc);
    await stopExternal(routerProc);
  }
}

// ---- the suite ---------------------------------------------------------------------------------------------------------

export interface FabricResult {
  suite: 'fabric';
  date: string;
  machine: ReturnType<typeof machine>;
  settings: { routers: number; inFlight: number; duration: number; workers: number; warmupS: number; e2eConcurrency: number[]; store?: 'sqlite' | 'postgres' };
  memory: MemoryFigures;
  circuits: CircuitFigures;
  e2e: E2eFigures;
  wallS: number;
}

export async function runFabricSuite(opts: FabricSuiteOptions): Promise<FabricResult[]> {
  const results: FabricResult[] = [];
  if (opts.store !== 'postgres') {
    for (const workers of opts.workers) results.push(await runOnce(opts, workers));
    return results;
  }
  const { startTestPostgres } = await import('../test/support/postgres.ts');
  // Durable as an operator runs it (fsync, synchronous commit): the SQLite store answers writes once they are on disk too.
  const server = await startTestPostgres({ durable: true });
  databasePid = () => server.serverPid();
  let created = 0;
  freshDatabase = async (label) => {
    const name = `bench_${label.replace(/[^a-z0-9]/gi, '_')}_${++created}`;
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${name}`);
    } finally {
      await admin.end();
    }
    const url = new URL(server.url);
    url.pathname = `/${name}`;
    return url.toString();
  };
  try {
    for (const workers of opts.workers) results.push(await runOnce(opts, workers));
    return results;
  } finally {
    freshDatabase = undefined;
    databasePid = undefined;
    await server.stop();
  }
}

async function runOnce(opts: FabricSuiteOptions, workers: number): Promise<FabricResult> {
  const started = performance.now();
  const tmp = mkdtempSync(join(tmpdir(), 'portcullis-bench-fabric-'));
  const inFlights = [...new Set([1, opts.inFlight])];
  console.log(`fabric suite (${opts.store ?? 'sqlite'}): ${workers} worker process${workers > 1 ? 'es' : ''}, ${opts.routers} routers, ${opts.inFlight} in flight, ${opts.duration} s per run`);
  try {
    console.log('[1/3] memory per connected router (fresh controller) ...');
    let c = await startController(tmp, 'memory', workers);
    const memory = await memoryPart(c, opts.routers).finally(() => stopController(c));
    console.log(
      `  ${opts.routers} routers: RSS ${memory.rssFirstRouterMb.toFixed(1)} → ${memory.rssAllMb.toFixed(1)} MB, ${memory.perRouterKiB.toFixed(1)} KiB per router; ` +
        `all online ${fmt(memory.onlineMs)} ms after the first dial`,
    );

    console.log('[2/3] circuits with a scripted router (fresh controller) ...');
    c = await startController(tmp, 'circuits', workers);
    const circuits = await circuitPart(c, inFlights, opts.duration).finally(() => stopController(c));

    console.log('[3/3] end to end through an upstream ziti router with Go SDK peers (fresh controller) ...');
    let e2e: E2eFigures;
    const tools = e2eTools();
    if ('missing' in tools) {
      e2e = { skipped: tools.missing, runs: [] };
      console.log(`  skipped: ${tools.missing}`);
    } else {
      c = await startController(tmp, 'e2e', workers);
      e2e = await e2ePart(c, tmp, tools.ziti, opts.duration).finally(() => stopController(c));
    }

    const result: FabricResult = {
      suite: 'fabric',
      date: new Date().toISOString(),
      machine: machine(),
      settings: { routers: opts.routers, inFlight: opts.inFlight, duration: opts.duration, workers, warmupS: WARMUP_S, e2eConcurrency: E2E_CONCURRENCY, store: opts.store ?? 'sqlite' },
      memory,
      circuits,
      e2e,
      wallS: (performance.now() - started) / 1000,
    };
    const suffix = (opts.store === 'postgres' ? '-pg' : '') + (workers > 1 ? `-w${workers}` : '');
    mkdirSync(join('bench', 'results'), { recursive: true });
    writeFileSync(join('bench', 'results', `fabric${suffix}.json`), JSON.stringify(result, null, 2) + '\n');
    const report = markdown(result);
    writeFileSync(join('bench', 'results', `fabric${suffix}.md`), report);
    console.log('\n' + report);
    console.log(`written to bench/results/fabric${suffix}.md and fabric${suffix}.json (${result.wallS.toFixed(0)} s)`);
    return result;
  } finally {
    killExternalSync();
    rmSync(tmp, { recursive: true, force: true });
  }
}

// ---- report ------------------------------------------------------------------------------------------------------------

function f2(n: number | undefined): string {
  return n === undefined || Number.isNaN(n) ? '–' : n.toFixed(2);
}

function markdown(r: FabricResult): string {
  const { memory: m, circuits, e2e, settings: s } = r;
  const top = circuits.rows.find((x) => x.inFlight === s.inFlight) ?? circuits.rows[circuits.rows.length - 1]!;
  const lone = circuits.rows.find((x) => x.inFlight === 1);
  const e1 = e2e.runs.find((x) => x.concurrency === 1);
  const e8 = e2e.runs.find((x) => x.concurrency === 8);
  const lines = [
    `# Fabric benchmark${s.workers > 1 ? ` (${s.workers} worker processes)` : ''}`,
    '',
    `- Date: ${r.date.slice(0, 10)}; whole run ${r.wallS.toFixed(0)} s`,
    `- Node ${r.machine.node}, ${r.machine.cpu}, ${r.machine.cores} cores (controller, routers, SDK peers and load generator share them)`,
    `- Controller: a fresh child process per part (temporary data directory, 127.0.0.1, \`--workers ${s.workers}\`, advertised as 127.0.0.1)`,
    `- N = ${s.routers} routers, C = ${s.inFlight} in flight, D = ${s.duration} s per measured run after a ${s.warmupS} s discarded warm-up`,
    '',
    '## Summary',
    '',
    '| Figure | Value | Baseline (same run) | Ratio |',
    '|---|---:|---|---:|',
    `| Memory per connected router: RSS (all controller processes), (with all − with the first) ÷ N | ${m.perRouterKiB.toFixed(1)} KiB | – | – |`,
    `| Memory per connected router incl. one-time costs: (with all − before any) ÷ (N + 1) | ${m.perRouterInclFirstKiB.toFixed(1)} KiB | – | – |`,
    `| Time until ${m.routers} routers show online and synced | ${fmt(m.onlineMs)} ms | – | – |`,
    `| Circuits/s, controller side, ${s.inFlight} in flight | ${fmt(top.circuits.perSecond)} | pings/s ${fmt(top.pings.perSecond)} | ${(top.ratio * 100).toFixed(1)}% |`,
    `| Circuit latency p50 / p99, controller side, ${s.inFlight} in flight | ${f2(top.circuits.p50Ms)} / ${f2(top.circuits.p99Ms)} ms | ping ${f2(top.pings.p50Ms)} / ${f2(top.pings.p99Ms)} ms | ${(top.circuits.p50Ms / top.pings.p50Ms).toFixed(1)}× (p50) |`,
    ...(lone
      ? [
          `| Circuits/s, controller side, 1 in flight | ${fmt(lone.circuits.perSecond)} | pings/s ${fmt(lone.pings.perSecond)} | ${(lone.ratio * 100).toFixed(1)}% |`,
          `| Circuit latency p50 / p99, controller side, 1 in flight | ${f2(lone.circuits.p50Ms)} / ${f2(lone.circuits.p99Ms)} ms | ping ${f2(lone.pings.p50Ms)} / ${f2(lone.pings.p99Ms)} ms | ${(lone.circuits.p50Ms / lone.pings.p50Ms).toFixed(1)}× (p50) |`,
        ]
      : []),
    ...(e1
      ? [
          `| End to end: dial to first byte p50 / p99, concurrency 1 | ${f2(e1.p50Ms)} / ${f2(e1.p99Ms)} ms | controller side p50 (1 in flight) ${f2(lone?.circuits.p50Ms)} ms | ${lone ? `${((lone.circuits.p50Ms / e1.p50Ms) * 100).toFixed(1)}% controller` : '–'} |`,
          `| End to end: circuits/s, concurrency 1 | ${fmt(e1.perSecond, 1)} | – | – |`,
        ]
      : []),
    ...(e8
      ? [
          `| End to end: dial to first byte p50 / p99, concurrency 8 | ${f2(e8.p50Ms)} / ${f2(e8.p99Ms)} ms | – | – |`,
          `| End to end: circuits/s, concurrency 8 | ${fmt(e8.perSecond, 1)} | controller-side circuits/s (${s.inFlight} in flight) ${fmt(top.circuits.perSecond)} | ${((e8.perSecond / top.circuits.perSecond) * 100).toFixed(1)}% |`,
        ]
      : []),
    ...(e2e.skipped ? [`| End to end | skipped: ${e2e.skipped} | | |`] : []),
    '',
    '## 1. Memory per connected router',
    '',
    `${m.routers + 1} edge routers created and enrolled over REST (\`POST /edge-routers\`, \`POST /enroll?method=erott\` with real ` +
      `EC P-256 CSRs) in ${fmt(m.enrollMs)} ms. One of them connects first and is not counted (admission, TLS with client ` +
      `certificates and the edge sync warm up); then the other ${m.routers} dial the control channel (TLS, ALPN \`ziti-ctrl\`, ` +
      `their own certificates; hello, then the client hello answering the server hello, so each gets its API sessions and is ` +
      `synced), ${CONNECT_CONCURRENCY} at a time, and stay connected (answering heartbeats). RSS is the sum over the controller's ` +
      `processes (primary and workers), the median of five samples 200 ms apart after 1 s of rest.`,
    '',
    '| RSS after enrollment MB | with the first router MB | with all MB | per router KiB | per router incl. the first KiB | first router KiB | all hellos answered ms | all online (REST) ms |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
    `| ${m.rssEnrolledMb.toFixed(1)} | ${m.rssFirstRouterMb.toFixed(1)} | ${m.rssAllMb.toFixed(1)} | ${m.perRouterKiB.toFixed(1)} | ${m.perRouterInclFirstKiB.toFixed(1)} | ${m.firstRouterKiB.toFixed(0)} | ${fmt(m.connectedMs)} | ${fmt(m.onlineMs)} |`,
    '',
    '"per router" = (with all − with the first) ÷ N; "incl. the first" = (with all − after enrollment) ÷ (N + 1). "All online" runs from the first ' +
      'dial of the N until `GET /edge-routers` (polled every 100 ms) shows all N + 1 with `isOnline` and `syncStatus` SYNC_DONE.',
    '',
    '## 2. Circuits, controller side (scripted router)',
    '',
    'One synced scripted edge router hosts a terminator (`CreateTerminatorV2Request` with a Bind session of a host identity; ' +
      'Bind, Dial, edge router and service edge router policies in place). A dialer identity\'s Dial session then asks for ' +
      'circuits (`CreateCircuitV2Request`, session and API session tokens, peer data) with the given number in flight on the ' +
      'one control connection, each next request sent when one finished, for D seconds. The script answers every Route ' +
      'at once with a successful RouteResult, and sends the circuit\'s Fault (ingress fault, as when the dialing SDK closes) ' +
      'right after its response, before its next request: faults are interleaved, so circuits do not pile up and the ' +
      'controller\'s work per circuit includes ending it. Latency = request sent → CreateCircuitV2Response received, ' +
      'measured by the script (includes the script\'s own RouteResult turnaround, microseconds). Baseline: channel pings ' +
      '(content type 1, answered with a Result) on the same connection, same concurrency, same duration.',
    '',
    '| In flight | pings/s | ping p50 ms | ping p99 ms | circuits/s | circuit p50 ms | circuit p99 ms | circuits ÷ pings | → Route p50 / p99 ms | RouteResult → response p50 / p99 ms | controller CPU (circuits) | PostgreSQL CPU (circuits) | errors |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...circuits.rows.map(
      (x) =>
        `| ${x.inFlight} | ${fmt(x.pings.perSecond)} | ${f2(x.pings.p50Ms)} | ${f2(x.pings.p99Ms)} | ${fmt(x.circuits.perSecond)} | ${f2(x.circuits.p50Ms)} | ${f2(x.circuits.p99Ms)} | ` +
        `${(x.ratio * 100).toFixed(1)}% | ${f2(x.toRouteP50Ms)} / ${f2(x.toRouteP99Ms)} | ${f2(x.afterResultP50Ms)} / ${f2(x.afterResultP99Ms)} | ${x.circuits.cpuPct.toFixed(0)}% | ${x.circuits.dbCpuPct !== undefined ? `${x.circuits.dbCpuPct.toFixed(0)}%` : '–'} | ${x.circuits.errors + x.pings.errors} |`,
    ),
    '',
    `"→ Route" is request sent → Route received (API session and session JWT checks, policies, terminator choice, Route ` +
      `encoded); "RouteResult → response" is the script's RouteResult sent → response received (circuit recorded, response ` +
      `built). Circuits still recorded for the dial session 10 s after the last run: ${circuits.leftoverCircuits} (should be 0). ` +
      `Controller RSS after the runs: ${circuits.rssAfterMb.toFixed(1)} MB.`,
    '',
    '## 3. End to end through an upstream router',
    '',
  ];
  if (e2e.skipped) {
    lines.push(`Skipped: ${e2e.skipped}`, '');
  } else {
    lines.push(
      `One upstream edge router (\`ziti router\`, ${e2e.routerVersion}), created over REST, configured with \`ziti create config ` +
        'router edge` (loopback only), enrolled with `ziti router enroll` and run; two identities enrolled with `ziti edge enroll`; ' +
        'a service with Bind, Dial, edge router and service edge router policies. `sdkecho host` (Go SDK) binds it and echoes; ' +
        '`sdkecho bench <identity> <service> D <concurrency>` authenticates, makes one warm-up dial (not counted), then runs ' +
        '<concurrency> loops for D seconds, each: Dial, write a line, read the first byte of the echo, close. Latency = Dial ' +
        'start → first byte (the SDK asks the router, the router asks the controller for the circuit, the controller routes ' +
        'it, the router dials the hosting SDK, the dialer gets its answer, the line travels and the echo comes back). ' +
        `Setup (build, router, identities, bind) took ${fmt((e2e.setupMs ?? 0) / 1000, 1)} s.`,
      '',
      '| Concurrency | dials | circuits/s | dial to first byte p50 ms | p99 ms | errors | controller CPU | router CPU |',
      '|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...e2e.runs.map((x) => `| ${x.concurrency} | ${fmt(x.dials)} | ${fmt(x.perSecond, 1)} | ${f2(x.p50Ms)} | ${f2(x.p99Ms)} | ${x.errors}${x.firstError ? ` (${x.firstError})` : ''} | ${x.controllerCpuPct.toFixed(0)}% | ${x.routerCpuPct.toFixed(0)}% |`),
      '',
    );
  }
  lines.push(
    'Everything runs on one machine over loopback, so the figures are relative: compare runs from the same machine, and read ' +
      'the ratios (circuits ÷ pings on the same connection, the controller\'s share of an end-to-end dial) rather than the ' +
      'absolute rates. CPU: user + system time of the process(es) over the run, 100% = one core.',
    '',
  );
  return lines.join('\n');
}
