/**
 * Several controllers: Portcullis with 1, 2 and 3 controllers on one PostgreSQL beside upstream's 3-member raft
 * cluster, in one run: `npm run bench -- --suite ha [--duration D --rate R --tries T --repeats N]`.
 *
 * - **Portcullis**: `node dist/main.js --workers 1` per controller, each with its own data dir and port, one
 *   database of a private PostgreSQL server (test/support/postgres.ts, durable settings) per controller count, one
 *   cluster secret; the first founds the network, the others join with empty data dirs. Leader: controller_facts
 *   'leader-controller'.
 * - **Upstream**: `ziti edge quickstart ha --no-router` for m1, `ziti edge quickstart join --no-router -m tls:…` for m2
 *   and m3 (retried every second while the first member has no leader), one home, one trust domain. Leader:
 *   `ziti agent cluster list --pid <member>`.
 *
 * Measured, everything on 127.0.0.1, every wait bounded:
 * 1. Per controller: CPU time and settled RSS (median of five samples after 1 s), idle for D s, then under an open
 *    loop of R req/s `GET /edge/management/v1/services?limit=10` spread round-robin over the members for D s
 *    (latency from the scheduled send time). CPU ms per request = a member's CPU over the load ÷ the requests it
 *    answered. Portcullis' PostgreSQL server CPU is given on its own.
 * 2. Change propagation: T times, PATCH a service's tags on member A; poll member B's client API
 *    (`GET /edge/client/v1/services/{id}`, a non-admin identity with a Dial policy for it) every 10 ms until the new
 *    tag shows. Time from the write's response (and from its send) to the first answer that has it.
 * 3. Failover (3 controllers), N times each for the leader and a non-leader: kill -9, then, from the kill, (a) the
 *    first 201 of `POST /services` on a survivor (each survivor in turn every 50 ms, 1 s timeout; the refusals and
 *    their codes are kept), (b) a new leader (controller_facts / agent cluster list) and every survivor's
 *    `GET /controllers` no longer listing the dead one (Portcullis) or listing it offline (upstream), (c) the killed
 *    member restarted: spawn → first 200 of `GET /version`, whether its first read (`GET /services?filter=name=…`)
 *    has the write made while it was down, and when it has; then until it is back in the membership.
 *
 * New SDK dials through routers after a kill are not measured here (test/interop/router/ha.suite.ts does for
 * Portcullis). Results: bench/results/ha.json and ha.md.
 */
import { execFile, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { zitiBinary } from '../test/interop/ziti-bin.mjs';
import { freePort, outputOf, settledRssMb, startExternal, stopExternal } from './fabric.ts';
import { HOST, fmt, machine, percentileOf, procStats, serverCpuMs } from './lib.ts';
import { zitiVersion } from './upstream.ts';

const CLIENT = '/edge/client/v1';
const MANAGEMENT = '/edge/management/v1';
const PASSWORD = `Ha-bench-${randomBytes(4).toString('hex')}-1`;
const VIEWER_PASSWORD = 'Ha-viewer-pw-1';
const START_TIMEOUT_MS = 120_000;
const FAILOVER_BOUND_MS = 60_000;
const VISIBLE_BOUND_MS = 10_000;
const WRITE_PROBE_INTERVAL_MS = 50;
const WRITE_PROBE_TIMEOUT_MS = 1000;
const POLL_INTERVAL_MS = 10;
const SEED_SERVICES = 20;

export interface HaBenchOptions {
  duration: number;
  rate: number;
  tries: number;
  repeats: number;
  /** Which to run (default both; a part is for trying the suite out). */
  sides: Array<'portcullis' | 'upstream'>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const now = () => performance.now();

function median(values: number[]): number {
  return percentileOf([...values].sort((a, b) => a - b), 50);
}
function max(values: number[]): number {
  return values.length ? Math.max(...values) : Number.NaN;
}

// ---- HTTPS to one member ----------------------------------------------------------------------------------------

interface Answer {
  status: number;
  json: any;
}

interface Member {
  name: string;
  port: number;
  /** The controller's id (Portcullis: ziti-instance-id; upstream: the instance id). */
  id: string;
  child?: ChildProcess;
  pid: number;
  agent: Agent;
  /** An admin zt-session valid on this member. */
  token: string;
  start: () => ChildProcess;
}

function call(m: Member, ca: string, method: string, path: string, opts: { token?: string; body?: unknown; timeoutMs?: number; fresh?: boolean } = {}): Promise<Answer> {
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (payload !== undefined) headers['content-type'] = 'application/json';
  const token = opts.token ?? m.token;
  if (token) headers['zt-session'] = token;
  return new Promise((resolve, reject) => {
    // The server certificates name 127.0.0.1 (the advertised address); verified against the network's root CA.
    const req = request({ host: HOST, port: m.port, method, path, headers, ca, agent: opts.fresh ? false : m.agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = text;
        }
        resolve({ status: res.statusCode ?? 0, json });
      });
      res.on('error', reject);
    });
    req.setTimeout(opts.timeoutMs ?? 30_000, () => req.destroy(new Error(`${method} ${path}: no answer within ${opts.timeoutMs ?? 30_000} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}

async function must(m: Member, ca: string, method: string, path: string, body: unknown, status: number, token?: string): Promise<any> {
  const r = await call(m, ca, method, path, { body, token });
  if (r.status !== status) throw new Error(`${m.name} ${method} ${path}: expected ${status}, got ${r.status}: ${JSON.stringify(r.json).slice(0, 300)}`);
  return r.json;
}

const alive = (m: Member) => !!m.child && m.child.exitCode === null && m.child.signalCode === null;

/** Polls `GET /version` on fresh connections until 200; ms since `t0`. */
async function waitVersion(m: Member, ca: string, t0: number, boundMs = START_TIMEOUT_MS): Promise<number> {
  for (;;) {
    if (!alive(m)) throw new Error(`${m.name} exited (${m.child?.exitCode ?? m.child?.signalCode})`);
    const r = await call(m, ca, 'GET', '/version', { fresh: true, timeoutMs: 1000 }).catch(() => undefined);
    if (r?.status === 200) return now() - t0;
    if (now() - t0 > boundMs) throw new Error(`${m.name}: /version did not answer within ${boundMs} ms`);
    await sleep(50);
  }
}

async function adminLogin(m: Member, ca: string): Promise<string> {
  const r = await call(m, ca, 'POST', `${MANAGEMENT}/authenticate?method=password`, { body: { username: 'admin', password: PASSWORD }, token: '' });
  if (r.status !== 200) throw new Error(`${m.name}: admin login ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`);
  return r.json.data.token as string;
}

// ---- the two kinds of cluster -----------------------------------------------------------------------------------

interface Cluster {
  kind: 'portcullis' | 'upstream';
  label: string;
  ca: string;
  members: Member[];
  /** The leader's member name, when one is known. */
  leader(via?: Member): Promise<string | undefined>;
  /** Whether the member answered `GET /version` and is back in the membership, as every live member sees it. */
  inMembership(): Promise<boolean>;
  /** Whether `viewer` lists `dead` as a live controller (Portcullis: listed at all; upstream: isOnline). */
  listsLive(viewer: Member, dead: Member): Promise<boolean>;
  /** After a restart: a token the member accepts (upstream's zt-sessions are per member). */
  tokenFor(m: Member): Promise<string>;
  dbCpuMs?: () => number;
  stop(): Promise<void>;
}

function logTail(file: string): string {
  try {
    return readFileSync(file, 'utf8').slice(-1500);
  } catch {
    return '';
  }
}

async function startPortcullisCluster(count: number, tmp: string, pgUrl: string, pgPid: () => number | undefined): Promise<Cluster> {
  const dir = join(tmp, `portcullis-${count}`);
  mkdirSync(dir, { recursive: true });
  const secretFile = join(dir, 'cluster-secret');
  writeFileSync(secretFile, randomBytes(32).toString('base64') + '\n', { mode: 0o600 });
  const members: Member[] = [];
  for (let i = 0; i < count; i++) {
    const name = `p${i + 1}`;
    const dataDir = join(dir, name);
    const port = await freePort();
    const m: Member = {
      name, port, id: '', pid: 0, token: '',
      agent: new Agent({ keepAlive: true, maxSockets: 64 }),
      start: () =>
        startExternal(process.execPath, ['dist/main.js', '--data-dir', dataDir, '--database-url', pgUrl, '--port', String(port), '--advertise', HOST, '--address', HOST,
          '--cluster-secret-file', secretFile, '--workers', '1', '--admin-user', 'admin', '--admin-password', PASSWORD, '--log-level', 'warn'], { env: { NODE_OPTIONS: '' } }),
    };
    members.push(m);
  }
  let ca = '';
  /** Each process's output, drained (its tail names the cause when a start fails). */
  const outputs = new Map<string, ReturnType<typeof outputOf>>();
  const c: Cluster = {
    kind: 'portcullis',
    label: `Portcullis ×${count}`,
    get ca() {
      return ca;
    },
    members,
    async leader() {
      const rows = await sql(pgUrl, "SELECT value FROM controller_facts WHERE key = 'leader-controller'");
      const id = rows[0]?.value as string | undefined;
      return members.find((m) => m.id === id)?.name;
    },
    async inMembership() {
      const ids = members.map((m) => m.id).sort().join(',');
      for (const m of members) {
        const r = await call(m, ca, 'GET', `${MANAGEMENT}/controllers`, { timeoutMs: 2000 }).catch(() => undefined);
        if (r?.status !== 200) return false;
        if ((r.json.data as Array<{ id: string }>).map((d) => d.id).sort().join(',') !== ids) return false;
      }
      return true;
    },
    async listsLive(viewer, dead) {
      const r = await call(viewer, ca, 'GET', `${MANAGEMENT}/controllers`, { timeoutMs: 2000 });
      if (r.status !== 200) return true;
      return (r.json.data as Array<{ id: string }>).some((d) => d.id === dead.id);
    },
    async tokenFor() {
      return members[0]!.token;
    },
    dbCpuMs: () => {
      const pid = pgPid();
      return pid ? serverCpuMs(pid) : 0;
    },
    async stop() {
      for (const m of members) {
        m.agent.destroy();
        if (m.child) await stopExternal(m.child, 20_000);
      }
    },
  };
  try {
    for (const m of members) {
      // One at a time: the first founds the network, the others join it.
      const t0 = now();
      m.child = m.start();
      m.pid = m.child.pid!;
      outputs.set(m.name, outputOf(m.child));
      const caFile = join(dir, members[0]!.name, 'pki', 'root-ca.cert.pem');
      if (!ca) await waitFor(`${m.name} wrote the network's root CA`, START_TIMEOUT_MS, async () => existsSync(caFile), 100);
      ca ||= readFileSync(caFile, 'utf8');
      await waitVersion(m, ca, t0);
      const v = await new Promise<string>((resolve, reject) => {
        const req = request({ host: HOST, port: m.port, path: '/version', ca, agent: false }, (res) => {
          res.resume();
          resolve(String(res.headers['ziti-instance-id'] ?? ''));
        });
        req.on('error', reject);
        req.end();
      });
      m.id = v;
    }
    const token = await adminLogin(members[0]!, ca);
    for (const m of members) m.token = token;
    await waitFor('every controller lists all of them', 30_000, () => c.inMembership());
    return c;
  } catch (err) {
    await c.stop();
    throw err;
  }
}

async function sql(url: string, text: string): Promise<any[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

async function waitFor(what: string, boundMs: number, probe: () => Promise<boolean>, intervalMs = 100): Promise<number> {
  const t0 = now();
  for (;;) {
    if (await probe().catch(() => false)) return now() - t0;
    if (now() - t0 > boundMs) throw new Error(`timed out after ${boundMs} ms waiting until ${what}`);
    await sleep(intervalMs);
  }
}

/** `ziti agent cluster list --pid P`, parsed: one row per member. */
function agentClusterList(ziti: string, env: Record<string, string>, pid: number): Promise<Array<{ id: string; leader: boolean; connected: boolean }>> {
  return new Promise((resolve) => {
    const child = execFile(ziti, ['agent', 'cluster', 'list', '--pid', String(pid), '--timeout', '2s'], { env: { ...process.env, ...env }, timeout: 4000, encoding: 'utf8' }, (err, stdout) => {
      if (child.pid) rmSync(`/tmp/gops-agent.${child.pid}.sock`, { force: true });
      if (err) return resolve([]);
      const rows: Array<{ id: string; leader: boolean; connected: boolean }> = [];
      for (const line of stdout.split('\n')) {
        const cells = line.split('│').map((s) => s.trim());
        // │ ID │ ADDRESS │ VOTER │ LEADER │ VERSION │ CONNECTED │ PREFERRED │
        if (cells.length >= 8 && cells[1] && cells[1] !== 'ID') rows.push({ id: cells[1], leader: cells[4] === 'true', connected: cells[6] === 'true' });
      }
      resolve(rows);
    });
  });
}

async function startUpstreamCluster(tmp: string): Promise<Cluster> {
  const ziti = zitiBinary();
  const dir = join(tmp, 'upstream');
  const home = join(dir, 'home');
  const cliDir = join(dir, 'ziti-cli');
  mkdirSync(cliDir, { recursive: true });
  const env = { ZITI_CTRL_BIND_ADDRESS: HOST, ZITI_CTRL_EDGE_BIND_ADDRESS: HOST, ZITI_CONFIG_DIR: cliDir };
  const members: Member[] = [];
  for (let i = 0; i < 3; i++) {
    const name = `m${i + 1}`;
    const port = await freePort();
    members.push({
      name, port, id: name, pid: 0, token: '', agent: new Agent({ keepAlive: true, maxSockets: 64 }),
      start: () => {
        // A member that has been configured runs its controller from its configuration (quickstart join would ask the
        // cluster to add it again, and exits when that is refused).
        const ctrlYaml = join(home, name, 'ctrl.yaml');
        const common = ['--no-router', '--home', home, '--ctrl-address', HOST, '--ctrl-port', String(port), '--instance-id', name, '--trust-domain', 'bench.ha', '-u', 'admin', '-p', PASSWORD];
        const args = existsSync(ctrlYaml)
          ? ['controller', 'run', ctrlYaml]
          : i === 0 ? ['edge', 'quickstart', 'ha', ...common] : ['edge', 'quickstart', 'join', ...common, '-m', `tls:${HOST}:${members[0]!.port}`];
        return startExternal(ziti, args, { env, logFile: join(dir, `${name}.log`), cwd: dir });
      },
    });
  }
  const caFile = join(home, 'pki', 'root-ca', 'certs', 'root-ca.cert');
  let ca = '';
  const live = () => members.filter(alive);
  const c: Cluster = {
    kind: 'upstream',
    label: 'upstream ×3 (raft)',
    get ca() {
      return ca;
    },
    members,
    async leader(via) {
      for (const m of via ? [via] : live()) {
        const rows = await agentClusterList(ziti, env, m.pid);
        const l = rows.find((r) => r.leader && r.connected);
        if (l) return l.id;
      }
      return undefined;
    },
    async inMembership() {
      // Followers connect to the leader only: the leader must show every member connected, and every member must
      // know the leader.
      let leader: string | undefined;
      for (const m of members) {
        if (!alive(m)) return false;
        const l = (await agentClusterList(ziti, env, m.pid)).find((r) => r.leader);
        if (!l || (leader && l.id !== leader)) return false;
        leader = l.id;
      }
      const rows = await agentClusterList(ziti, env, members.find((m) => m.name === leader)!.pid);
      return rows.length === members.length && rows.every((r) => r.connected);
    },
    async listsLive(viewer, dead) {
      const r = await call(viewer, ca, 'GET', `${MANAGEMENT}/controllers`, { timeoutMs: 2000 });
      if (r.status !== 200) return true;
      return (r.json.data as Array<{ id: string; isOnline: boolean }>).some((d) => d.id === dead.id && d.isOnline);
    },
    async tokenFor(m) {
      return adminLogin(m, ca);
    },
    async stop() {
      for (const m of members) {
        m.agent.destroy();
        if (m.child) await stopExternal(m.child, 20_000);
      }
    },
  };
  try {
    const first = members[0]!;
    const t0 = now();
    first.child = first.start();
    first.pid = first.child.pid!;
    await waitFor('the CA file of the first member', START_TIMEOUT_MS, async () => existsSync(caFile) && alive(first));
    ca = readFileSync(caFile, 'utf8');
    await waitVersion(first, ca, t0);
    await waitFor('the first member leads', START_TIMEOUT_MS, async () => (await c.leader(first)) === first.name, 500);
    for (const m of members.slice(1)) {
      // A join before the first member has a leader fails (CLUSTER_NO_LEADER): try again every second.
      const deadline = now() + START_TIMEOUT_MS;
      for (;;) {
        const t1 = now();
        m.child = m.start();
        m.pid = m.child.pid!;
        try {
          await waitVersion(m, ca, t1);
          break;
        } catch (err) {
          if (alive(m)) await stopExternal(m.child, 5000);
          if (now() > deadline) throw new Error(`${m.name} did not join: ${(err as Error).message} ${logTail(join(dir, `${m.name}.log`))}`);
          await sleep(1000);
        }
      }
    }
    await waitFor('all three members are connected with a leader', START_TIMEOUT_MS, () => c.inMembership(), 500);
    for (const m of members) m.token = await adminLogin(m, ca);
    return c;
  } catch (err) {
    await c.stop();
    throw err;
  }
}

// ---- 1. idle and under a read load -----------------------------------------------------------------------------

interface MemberFigures {
  name: string;
  idleCpuMsPerS: number;
  idleRssMb: number;
  loadRequests: number;
  loadCpuMs: number;
  loadCpuMsPerRequest: number;
  /** The same less the member's idle CPU rate over the load's wall time. */
  loadCpuMsPerRequestNet: number;
  loadRssMb: number;
}

interface LoadFigures {
  members: MemberFigures[];
  rate: number;
  seconds: number;
  answered: number;
  errors: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** CPU of every member over the load ÷ every answered request. */
  cpuMsPerRequest: number;
  /** Portcullis only: PostgreSQL's CPU idle (ms/s) and under the load (ms per request). */
  dbIdleCpuMsPerS?: number;
  dbCpuMsPerRequest?: number;
}

async function idleAndLoad(c: Cluster, opts: HaBenchOptions): Promise<LoadFigures> {
  const ms = c.members;
  // Idle.
  await sleep(1000);
  const cpu0 = ms.map((m) => procStats(m.pid).cpuMs);
  const db0 = c.dbCpuMs?.();
  const t0 = now();
  await sleep(opts.duration * 1000);
  const idleWall = now() - t0;
  const idleCpu = ms.map((m, i) => procStats(m.pid).cpuMs - cpu0[i]!);
  const dbIdle = c.dbCpuMs ? ((c.dbCpuMs() - db0!) / idleWall) * 1000 : undefined;
  const idleRss: number[] = [];
  for (const m of ms) idleRss.push(await settledRssMb(m.pid, 0));

  // Open loop, request i due at start + i/rate, to member i mod n.
  const path = `${MANAGEMENT}/services?limit=10`;
  for (const m of ms) for (let k = 0; k < 8; k++) await call(m, c.ca, 'GET', path); // connections and a warm-up
  const n = Math.round(opts.rate * opts.duration);
  const served = ms.map(() => 0);
  const latencies: number[] = [];
  let errors = 0;
  let finished = 0;
  const l0 = ms.map((m) => procStats(m.pid).cpuMs);
  const ldb0 = c.dbCpuMs?.();
  const lt0 = now();
  await new Promise<void>((resolve) => {
    const start = now();
    let sent = 0;
    const done = () => {
      if (++finished === n) resolve();
    };
    const tick = () => {
      const due = Math.min(n, Math.floor(((now() - start) * opts.rate) / 1000) + 1);
      while (sent < due) {
        const i = sent++;
        const scheduled = start + (i * 1000) / opts.rate;
        const k = i % ms.length;
        void call(ms[k]!, c.ca, 'GET', path, { timeoutMs: 10_000 })
          .then((r) => {
            if (r.status === 200) {
              served[k]!++;
              latencies.push(now() - scheduled);
            } else errors++;
          })
          .catch(() => errors++)
          .finally(done);
      }
      if (sent < n) setTimeout(tick, 1);
    };
    tick();
  });
  const loadCpu = ms.map((m, i) => procStats(m.pid).cpuMs - l0[i]!);
  const loadWall = now() - lt0;
  const dbLoad = c.dbCpuMs ? c.dbCpuMs() - ldb0! : undefined;
  const loadRss: number[] = [];
  for (const m of ms) loadRss.push(await settledRssMb(m.pid, 0));
  const sorted = latencies.sort((a, b) => a - b);
  const answered = served.reduce((a, b) => a + b, 0);
  return {
    rate: opts.rate,
    seconds: opts.duration,
    answered,
    errors,
    p50Ms: percentileOf(sorted, 50),
    p99Ms: percentileOf(sorted, 99),
    maxMs: sorted[sorted.length - 1] ?? Number.NaN,
    cpuMsPerRequest: loadCpu.reduce((a, b) => a + b, 0) / Math.max(1, answered),
    ...(dbIdle !== undefined ? { dbIdleCpuMsPerS: dbIdle, dbCpuMsPerRequest: dbLoad! / Math.max(1, answered) } : {}),
    members: ms.map((m, i) => ({
      name: m.name,
      idleCpuMsPerS: (idleCpu[i]! / idleWall) * 1000,
      idleRssMb: idleRss[i]!,
      loadRequests: served[i]!,
      loadCpuMs: loadCpu[i]!,
      loadCpuMsPerRequest: loadCpu[i]! / Math.max(1, served[i]!),
      loadCpuMsPerRequestNet: Math.max(0, loadCpu[i]! - (idleCpu[i]! / idleWall) * loadWall) / Math.max(1, served[i]!),
      loadRssMb: loadRss[i]!,
    })),
  };
}

// ---- 2. change propagation -------------------------------------------------------------------------------------

interface PropagationFigures {
  writer: string;
  reader: string;
  writerLeads: boolean;
  tries: number;
  /** From the write's response to the first poll answer that has the change. */
  medianMs: number;
  maxMs: number;
  /** From the write's send. */
  fromSendMedianMs: number;
  fromSendMaxMs: number;
  writeMedianMs: number;
  notSeen: number;
}

async function seed(c: Cluster): Promise<void> {
  const m = c.members[0]!;
  for (let i = 0; i < SEED_SERVICES; i++) await must(m, c.ca, 'POST', `${MANAGEMENT}/services`, { name: `ha-seed-${i}`, encryptionRequired: true }, 201);
  // The viewer: a non-admin identity with a password and a Dial policy for the propagation service.
  const svc = await must(m, c.ca, 'POST', `${MANAGEMENT}/services`, { name: 'ha-prop', encryptionRequired: true, tags: { seq: '0' } }, 201);
  const ident = await must(m, c.ca, 'POST', `${MANAGEMENT}/identities`, { name: 'ha-viewer', type: 'Default', isAdmin: false }, 201);
  await must(m, c.ca, 'POST', `${MANAGEMENT}/authenticators`, { method: 'updb', identityId: ident.data.id, username: 'ha-viewer', password: VIEWER_PASSWORD }, 201);
  await must(m, c.ca, 'POST', `${MANAGEMENT}/service-policies`, { name: 'ha-prop-dial', type: 'Dial', semantic: 'AnyOf', serviceRoles: [`@${svc.data.id}`], identityRoles: [`@${ident.data.id}`] }, 201);
  propService.set(c, svc.data.id as string);
}
const propService = new Map<Cluster, string>();

async function propagation(c: Cluster, writer: Member, reader: Member, tries: number): Promise<PropagationFigures> {
  const id = propService.get(c)!;
  const login = await call(reader, c.ca, 'POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'ha-viewer', password: VIEWER_PASSWORD }, token: '' });
  if (login.status !== 200) throw new Error(`${reader.name}: viewer login ${login.status}`);
  const viewer = login.json.data.token as string;
  const read = () => call(reader, c.ca, 'GET', `${CLIENT}/services/${id}`, { token: viewer, timeoutMs: 5000 });
  await waitFor(`the viewer sees ha-prop on ${reader.name}`, VISIBLE_BOUND_MS, async () => (await read()).status === 200, 50);
  const leader = await c.leader();
  const fromResponse: number[] = [];
  const fromSend: number[] = [];
  const writes: number[] = [];
  let notSeen = 0;
  for (let k = 1; k <= tries; k++) {
    const seq = `${Date.now()}-${k}`;
    const t0 = now();
    await must(writer, c.ca, 'PATCH', `${MANAGEMENT}/services/${id}`, { tags: { seq } }, 200);
    const t1 = now();
    writes.push(t1 - t0);
    let seen = false;
    while (now() - t1 < VISIBLE_BOUND_MS) {
      const p = now();
      const r = await read().catch(() => undefined);
      if (r?.status === 200 && r.json?.data?.tags?.seq === seq) {
        const t2 = now();
        fromResponse.push(t2 - t1);
        fromSend.push(t2 - t0);
        seen = true;
        break;
      }
      await sleep(Math.max(0, POLL_INTERVAL_MS - (now() - p)));
    }
    if (!seen) notSeen++;
    await sleep(100);
  }
  return {
    writer: writer.name, reader: reader.name, writerLeads: leader === writer.name, tries,
    medianMs: median(fromResponse), maxMs: max(fromResponse), fromSendMedianMs: median(fromSend), fromSendMaxMs: max(fromSend), writeMedianMs: median(writes), notSeen,
  };
}

// ---- 3. failover -------------------------------------------------------------------------------------------------

interface FailoverRep {
  victim: string;
  role: 'leader' | 'non-leader';
  /** kill → first 201 of POST /services on a survivor. */
  firstWriteMs: number;
  /** kill → the last refused attempt before it (0: none refused). */
  refusalWindowMs: number;
  refusals: Record<string, number>;
  attempts: number;
  /** kill → a new leader (leader kills). */
  newLeaderMs?: number;
  newLeader?: string;
  /** kill → no survivor lists the dead member as live in GET /controllers. */
  delistedMs: number;
  /** spawn → first 200 of GET /version. */
  restartReadyMs: number;
  /** spawn → its first read of the write made while it was down answered (after a login on upstream). */
  firstReadMs: number;
  firstReadHasWrite: boolean;
  /** spawn → a read that has the write. */
  hasWriteMs: number;
  /** spawn → back in the membership (every member lists / is connected to every other). */
  rejoinedMs: number;
}

function codeOf(r: Answer | Error): string {
  if (r instanceof Error) return /no answer/.test(r.message) ? 'timeout' : (r as NodeJS.ErrnoException).code ?? 'error';
  const code = r.json?.error?.code;
  return `${r.status}${code ? ` ${code}` : ''}`;
}

async function failoverOnce(c: Cluster, victim: Member, role: FailoverRep['role'], rep: number): Promise<FailoverRep> {
  const survivors = c.members.filter((m) => m !== victim);
  const kill = now();
  victim.child!.kill('SIGKILL');
  await new Promise<void>((r) => (victim.child!.exitCode !== null || victim.child!.signalCode !== null ? r() : victim.child!.once('exit', () => r())));
  rmSync(`/tmp/gops-agent.${victim.pid}.sock`, { force: true });
  victim.agent.destroy();
  victim.agent = new Agent({ keepAlive: true, maxSockets: 64 });

  // (a) writes on the survivors, in turn.
  const refusals: Record<string, number> = {};
  let attempts = 0;
  let lastRefusal = 0;
  let written = '';
  const writes = (async () => {
    for (let i = 0; now() - kill < FAILOVER_BOUND_MS; i++) {
      const m = survivors[i % survivors.length]!;
      const name = `ha-failover-${c.members.length}-${role}-${rep}-${i}`;
      const t = now();
      attempts++;
      const r = await call(m, c.ca, 'POST', `${MANAGEMENT}/services`, { body: { name, encryptionRequired: true }, timeoutMs: WRITE_PROBE_TIMEOUT_MS }).catch((e: Error) => e);
      if (!(r instanceof Error) && r.status === 201) {
        written = name;
        return now() - kill;
      }
      const code = codeOf(r);
      refusals[code] = (refusals[code] ?? 0) + 1;
      lastRefusal = t - kill;
      await sleep(Math.max(0, WRITE_PROBE_INTERVAL_MS - (now() - t)));
    }
    throw new Error(`no write succeeded within ${FAILOVER_BOUND_MS} ms of the kill: ${JSON.stringify(refusals)}`);
  })();
  // (b) a new leader; the dead member off every survivor's list of live controllers.
  const leading = role !== 'leader' ? Promise.resolve(undefined) : (async () => {
    for (;;) {
      const l = await c.leader().catch(() => undefined);
      if (l && l !== victim.name) return { ms: now() - kill, name: l };
      if (now() - kill > FAILOVER_BOUND_MS) throw new Error(`no new leader within ${FAILOVER_BOUND_MS} ms`);
      await sleep(WRITE_PROBE_INTERVAL_MS);
    }
  })();
  const delisted = (async () => {
    for (;;) {
      const listed = await Promise.all(survivors.map((m) => c.listsLive(m, victim).catch(() => true)));
      if (!listed.some(Boolean)) return now() - kill;
      if (now() - kill > FAILOVER_BOUND_MS) throw new Error(`survivors still list ${victim.name} after ${FAILOVER_BOUND_MS} ms`);
      await sleep(WRITE_PROBE_INTERVAL_MS);
    }
  })();
  const [firstWriteMs, newLeader, delistedMs] = await Promise.all([writes, leading, delisted]);

  // (c) restart; its first read of the write made while it was down.
  const t0 = now();
  victim.child = victim.start();
  victim.pid = victim.child.pid!;
  outputOf(victim.child); // drained
  const restartReadyMs = await waitVersion(victim, c.ca, t0);
  // (Upstream closes the first connections of a member that has just started: retried, bounded.)
  let token = '';
  await waitFor(`a session on ${victim.name}`, VISIBLE_BOUND_MS, async () => Boolean((token = await c.tokenFor(victim))), 50);
  victim.token = token;
  const readWrite = async () => {
    const r = await call(victim, c.ca, 'GET', `${MANAGEMENT}/services?filter=${encodeURIComponent(`name="${written}"`)}`, { timeoutMs: 5000 });
    return r.status === 200 && (r.json.data as unknown[]).length === 1;
  };
  const firstReadHasWrite = await readWrite().catch(() => false);
  const firstReadMs = now() - t0;
  let hasWriteMs = firstReadMs;
  if (!firstReadHasWrite) hasWriteMs = firstReadMs + (await waitFor(`${victim.name} has the write made while it was down`, VISIBLE_BOUND_MS, readWrite, POLL_INTERVAL_MS));
  await waitFor(`${victim.name} is back in the membership`, FAILOVER_BOUND_MS, () => c.inMembership(), 100);
  const rejoinedMs = now() - t0;
  return {
    victim: victim.name, role, firstWriteMs, refusalWindowMs: lastRefusal, refusals, attempts,
    ...(newLeader ? { newLeaderMs: newLeader.ms, newLeader: newLeader.name } : {}),
    delistedMs, restartReadyMs, firstReadMs, firstReadHasWrite, hasWriteMs, rejoinedMs,
  };
}

async function failover(c: Cluster, repeats: number, roles: Array<FailoverRep['role']>): Promise<FailoverRep[]> {
  const reps: FailoverRep[] = [];
  for (const role of roles) {
    for (let rep = 1; rep <= repeats; rep++) {
      const leader = await c.leader();
      if (!leader) throw new Error(`${c.label}: no leader before repetition ${rep}`);
      const others = c.members.filter((m) => m.name !== leader);
      const victim = role === 'leader' ? c.members.find((m) => m.name === leader)! : others[rep % others.length]!;
      const r = await failoverOnce(c, victim, role, rep);
      reps.push(r);
      console.log(
        `    kill -9 ${role} ${r.victim}: first write ${fmt(r.firstWriteMs)} ms (refused until ${fmt(r.refusalWindowMs)} ms: ${JSON.stringify(r.refusals)})` +
          `${r.newLeaderMs !== undefined ? `, new leader ${r.newLeader} ${fmt(r.newLeaderMs)} ms` : ''}, delisted ${fmt(r.delistedMs)} ms; ` +
          `restart ready ${fmt(r.restartReadyMs)} ms, first read ${r.firstReadHasWrite ? 'has' : 'lacks'} the write (${fmt(r.firstReadMs)} ms), has it ${fmt(r.hasWriteMs)} ms, rejoined ${fmt(r.rejoinedMs)} ms`,
      );
      await sleep(1000);
    }
  }
  return reps;
}

// ---- the run ---------------------------------------------------------------------------------------------------

interface ClusterResult {
  label: string;
  kind: Cluster['kind'];
  controllers: number;
  command: string;
  startMs: number;
  load: LoadFigures;
  propagation?: PropagationFigures;
  failover?: FailoverRep[];
}

export interface HaBenchResult {
  suite: 'ha';
  date: string;
  command: string;
  machine: ReturnType<typeof machine>;
  loadAverage: { start: number[]; end: number[] };
  settings: HaBenchOptions;
  /** The commit Portcullis was built from (dist/ is rebuilt when src/ differs), "+ changes" when src/ had uncommitted ones. */
  portcullisCommit: string;
  upstreamVersion: string;
  postgres: string;
  clusters: ClusterResult[];
  notMeasured: string[];
  wallS: number;
}

export async function runHaBench(opts: HaBenchOptions): Promise<HaBenchResult> {
  const wall0 = now();
  const loadStart = loadavg();
  console.log('[ha] several controllers: Portcullis ×1/×2/×3 on PostgreSQL, upstream ×3 (raft)');
  const built = spawnSync(process.execPath, ['scripts/build.mjs', '--if-stale'], { stdio: 'inherit' });
  if (built.status !== 0) throw new Error('the production build failed');
  const tmp = mkdtempSync(join(tmpdir(), 'portcullis-bench-ha-'));
  const { startTestPostgres } = await import('../test/support/postgres.ts');
  const server = await startTestPostgres({ durable: true });
  // Also on an exit that skips the finally below (SIGINT: run.ts exits the process); stop() runs synchronously.
  const onExit = () => {
    void server.stop().catch(() => undefined);
    rmSync(tmp, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  const clusters: ClusterResult[] = [];
  let running: Cluster | undefined;
  try {
    const pgVersion = (await sql(server.url, 'SHOW server_version'))[0]?.server_version as string;
    const base = new URL(server.url);
    for (const count of opts.sides.includes('portcullis') ? [1, 2, 3] : []) {
      const db = `ha_${count}`;
      await sql(server.url, `CREATE DATABASE ${db}`);
      const url = new URL(base);
      url.pathname = `/${db}`;
      console.log(`  Portcullis ×${count}`);
      const t0 = now();
      running = await startPortcullisCluster(count, tmp, url.toString(), () => server.serverPid());
      const startMs = now() - t0;
      const c = running;
      await seed(c);
      const load = await idleAndLoad(c, opts);
      printLoad(c, load);
      const prop = await propagation(c, c.members[0]!, c.members[Math.min(1, count - 1)]!, opts.tries);
      console.log(`    propagation ${prop.writer} → ${prop.reader}: median ${prop.medianMs.toFixed(1)} ms, max ${prop.maxMs.toFixed(1)} ms (write ${prop.writeMedianMs.toFixed(1)} ms)${prop.notSeen ? `, not seen ${prop.notSeen}` : ''}`);
      const fo = count === 3 ? await failover(c, opts.repeats, ['leader', 'non-leader']) : undefined;
      clusters.push({
        label: c.label, kind: c.kind, controllers: count, startMs, load, propagation: prop, ...(fo ? { failover: fo } : {}),
        command: 'node dist/main.js --data-dir D --database-url URL --port P --advertise 127.0.0.1 --address 127.0.0.1 --cluster-secret-file F --workers 1 --admin-user admin --admin-password PW',
      });
      await c.stop();
      running = undefined;
    }
    if (opts.sides.includes('upstream')) {
    console.log('  upstream ×3');
    const t0 = now();
    running = await startUpstreamCluster(tmp);
    const startMs = now() - t0;
    const u = running;
    await seed(u);
    const load = await idleAndLoad(u, opts);
    printLoad(u, load);
    const leader = await u.leader();
    const writer = u.members.find((m) => m.name === leader) ?? u.members[0]!;
    const reader = u.members.find((m) => m !== writer)!;
    const prop = await propagation(u, writer, reader, opts.tries);
    console.log(`    propagation ${prop.writer} → ${prop.reader}: median ${prop.medianMs.toFixed(1)} ms, max ${prop.maxMs.toFixed(1)} ms (write ${prop.writeMedianMs.toFixed(1)} ms)${prop.notSeen ? `, not seen ${prop.notSeen}` : ''}`);
    const fo = await failover(u, opts.repeats, ['leader', 'non-leader']);
    clusters.push({
      label: u.label, kind: u.kind, controllers: 3, startMs, load, propagation: prop, failover: fo,
      command: 'ziti edge quickstart ha --no-router --home H --ctrl-address 127.0.0.1 --ctrl-port P --instance-id m1 --trust-domain bench.ha; ziti edge quickstart join --no-router … --instance-id m2|m3 -m tls:127.0.0.1:P1; restarts: ziti controller run H/<member>/ctrl.yaml',
    });
    await u.stop();
    running = undefined;
    }
    const result: HaBenchResult = {
      suite: 'ha',
      date: new Date().toISOString(),
      command: `npm run bench -- --suite ha --duration ${opts.duration} --rate ${opts.rate} --tries ${opts.tries} --repeats ${opts.repeats}${opts.sides.length < 2 ? ` --sides ${opts.sides.join(',')}` : ''}`,
      machine: machine(),
      loadAverage: { start: loadStart, end: loadavg() },
      settings: opts,
      portcullisCommit: portcullisCommit(),
      upstreamVersion: zitiVersion(),
      postgres: pgVersion,
      clusters,
      notMeasured: [
        'New SDK dials through routers after a kill: not measured here (the routers, SDK identities and sdkecho sessions this needs for both controllers did not fit the time given to this suite); test/interop/router/ha.suite.ts measures it for Portcullis.',
      ],
      wallS: (now() - wall0) / 1000,
    };
    writeResult(result);
    return result;
  } finally {
    if (running) await running.stop().catch(() => undefined);
    await server.stop().catch(() => undefined);
    rmSync(tmp, { recursive: true, force: true });
    process.removeListener('exit', onExit);
  }
}

function portcullisCommit(): string {
  const head = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  const dirty = spawnSync('git', ['status', '--porcelain', '--', 'src'], { encoding: 'utf8' }).stdout.trim();
  return head ? `${head}${dirty ? ' + changes' : ''}` : 'unknown';
}

function printLoad(c: Cluster, l: LoadFigures): void {
  for (const m of l.members) {
    console.log(
      `    ${m.name}: idle ${m.idleCpuMsPerS.toFixed(1)} CPU ms/s, RSS ${fmt(m.idleRssMb)} MB; load ${m.loadRequests} requests, ${m.loadCpuMsPerRequest.toFixed(2)} CPU ms/request, RSS ${fmt(m.loadRssMb)} MB`,
    );
  }
  console.log(
    `    load ${l.rate}/s × ${l.seconds} s: ${l.answered} answered, ${l.errors} errors, p50 ${l.p50Ms.toFixed(1)} ms, p99 ${l.p99Ms.toFixed(1)} ms` +
      `${l.dbCpuMsPerRequest !== undefined ? `; PostgreSQL idle ${l.dbIdleCpuMsPerS!.toFixed(1)} ms/s, ${l.dbCpuMsPerRequest.toFixed(2)} ms/request` : ''} (${c.label})`,
  );
}

// ---- report ------------------------------------------------------------------------------------------------------

function stats(values: number[], digits = 0): string {
  const v = values.filter((x) => Number.isFinite(x));
  return v.length ? `${fmt(median(v), digits)} / ${fmt(max(v), digits)}` : '–';
}

export function markdown(r: HaBenchResult): string {
  const m = r.machine;
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const fo = (c: ClusterResult, role: FailoverRep['role']) => c.failover?.filter((f) => f.role === role) ?? [];
  const lines: string[] = [
    '# Several controllers: Portcullis ×1/×2/×3 on one PostgreSQL, upstream\'s 3-member raft cluster',
    '',
    `${r.date.slice(0, 10)} · ${m.cpu}, ${m.cores} cores, ${m.memGb} GB, ${m.os}, Node ${m.node} · Portcullis ${r.portcullisCommit} · upstream ${r.upstreamVersion} · PostgreSQL ${r.postgres} (private, durable settings) · ` +
      `load average at start ${r.loadAverage.start.map((x) => x.toFixed(2)).join(' ')}, at end ${r.loadAverage.end.map((x) => x.toFixed(2)).join(' ')} (the cores are shared with other work).`,
    '',
    `Command: \`${r.command}\` (${fmt(r.wallS)} s). Every process on 127.0.0.1, one process per controller (Portcullis \`--workers 1\`; upstream without its router, \`--no-router\`).`,
    '',
    '## All figures',
    '',
    `Per controller: the mean over the members. Idle: ${r.settings.duration} s. Load: ${r.settings.rate} req/s \`GET /edge/management/v1/services?limit=10\` (admin), open loop, round-robin over the members, ` +
      `${r.settings.duration} s. Propagation: ${r.settings.tries} PATCHes of a service's tags, polled every 10 ms on another member's client API as a non-admin identity with a Dial policy for it (from the write's answer). ` +
      `Failover: ${r.settings.repeats} kill -9 per row, "median / max" ms from the kill (restart: from the spawn).`,
    '',
    '| | Portcullis ×1 | Portcullis ×2 | Portcullis ×3 | upstream ×3 |',
    '|---|---:|---:|---:|---:|',
  ];
  const cols = ['Portcullis ×1', 'Portcullis ×2', 'Portcullis ×3', 'upstream ×3 (raft)'].map((l) => r.clusters.find((c) => c.label === l));
  const row = (name: string, f: (c: ClusterResult) => string) => lines.push(`| ${name} | ${cols.map((c) => (c ? f(c) : '–')).join(' | ')} |`);
  row('start of the cluster, s', (c) => fmt(c.startMs / 1000, 1));
  row('idle RSS per controller, MB', (c) => fmt(avg(c.load.members.map((x) => x.idleRssMb))));
  row('idle CPU per controller, ms/s', (c) => fmt(avg(c.load.members.map((x) => x.idleCpuMsPerS)), 1));
  row('PostgreSQL idle CPU, ms/s', (c) => (c.load.dbIdleCpuMsPerS !== undefined ? fmt(c.load.dbIdleCpuMsPerS, 1) : '–'));
  row('RSS per controller under load, MB', (c) => fmt(avg(c.load.members.map((x) => x.loadRssMb))));
  row('CPU per request (controllers), ms', (c) => fmt(c.load.cpuMsPerRequest, 2));
  row('CPU per request per controller, ms', (c) => c.load.members.map((x) => fmt(x.loadCpuMsPerRequest, 2)).join(' · '));
  row('… less its idle CPU, ms', (c) => c.load.members.map((x) => fmt(x.loadCpuMsPerRequestNet, 2)).join(' · '));
  row('PostgreSQL CPU per request, ms', (c) => (c.load.dbCpuMsPerRequest !== undefined ? fmt(c.load.dbCpuMsPerRequest, 2) : '–'));
  row('read latency p50 / p99, ms', (c) => `${fmt(c.load.p50Ms, 1)} / ${fmt(c.load.p99Ms, 1)}${c.load.errors ? ` (${c.load.errors} errors)` : ''}`);
  row('propagation median / max, ms', (c) => (c.propagation ? `${fmt(c.propagation.medianMs, 1)} / ${fmt(c.propagation.maxMs, 1)}${c.propagation.notSeen ? ` (${c.propagation.notSeen} not seen)` : ''}` : '–'));
  row('propagation: writer → reader', (c) => (c.propagation ? `${c.propagation.writer}${c.propagation.writerLeads ? ' (leader)' : ''} → ${c.propagation.reader}${c.propagation.writer === c.propagation.reader ? ' (same)' : ''}` : '–'));
  row('propagation: the write itself, median ms', (c) => (c.propagation ? fmt(c.propagation.writeMedianMs, 1) : '–'));
  for (const role of ['leader', 'non-leader'] as const) {
    row(`kill -9 ${role}: first write on a survivor`, (c) => stats(fo(c, role).map((f) => f.firstWriteMs)));
    row(`kill -9 ${role}: writes refused until`, (c) => stats(fo(c, role).map((f) => f.refusalWindowMs)));
    row(`kill -9 ${role}: refusals seen`, (c) => refusalText(fo(c, role)));
    if (role === 'leader') row('kill -9 leader: new leader', (c) => stats(fo(c, role).map((f) => f.newLeaderMs ?? Number.NaN)));
    row(`kill -9 ${role}: dead one off survivors' live list`, (c) => stats(fo(c, role).map((f) => f.delistedMs)));
    row(`kill -9 ${role}: restart to first 200 of /version`, (c) => stats(fo(c, role).map((f) => f.restartReadyMs)));
    row(`kill -9 ${role}: first read has the write made meanwhile`, (c) => (fo(c, role).length ? `${fo(c, role).filter((f) => f.firstReadHasWrite).length} of ${fo(c, role).length}` : '–'));
    row(`kill -9 ${role}: restart to a read with the write`, (c) => stats(fo(c, role).map((f) => f.hasWriteMs)));
    row(`kill -9 ${role}: restart to back in the membership`, (c) => stats(fo(c, role).map((f) => f.rejoinedMs)));
  }
  lines.push('');
  lines.push('## Per controller');
  lines.push('');
  lines.push('| Cluster | member | idle CPU ms/s | idle RSS MB | requests under load | CPU ms under load | CPU ms/request | less idle CPU | RSS under load MB |');
  lines.push('|---|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const c of r.clusters) {
    for (const x of c.load.members) lines.push(`| ${c.label} | ${x.name} | ${fmt(x.idleCpuMsPerS, 1)} | ${fmt(x.idleRssMb)} | ${x.loadRequests} | ${fmt(x.loadCpuMs)} | ${fmt(x.loadCpuMsPerRequest, 2)} | ${fmt(x.loadCpuMsPerRequestNet, 2)} | ${fmt(x.loadRssMb)} |`);
  }
  lines.push('');
  lines.push('## Failover, every repetition');
  lines.push('');
  lines.push('| Cluster | killed | first write ms | refused until ms | refusals | new leader ms | off the live list ms | restart ready ms | first read ms (has the write) | has the write ms | rejoined ms |');
  lines.push('|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|');
  for (const c of r.clusters) {
    for (const f of c.failover ?? []) {
      lines.push(
        `| ${c.label} | ${f.role} ${f.victim} | ${fmt(f.firstWriteMs)} | ${fmt(f.refusalWindowMs)} | ${refusalText([f])} | ${f.newLeaderMs !== undefined ? `${fmt(f.newLeaderMs)} (${f.newLeader})` : '–'} | ${fmt(f.delistedMs)} | ` +
          `${fmt(f.restartReadyMs)} | ${fmt(f.firstReadMs)} (${f.firstReadHasWrite ? 'yes' : 'no'}) | ${fmt(f.hasWriteMs)} | ${fmt(f.rejoinedMs)} |`,
      );
    }
  }
  lines.push('');
  lines.push('## How each figure was taken');
  lines.push('');
  for (const c of r.clusters) lines.push(`- ${c.label}: \`${c.command}\`, one per member (started in ${fmt(c.startMs / 1000, 1)} s).`);
  lines.push(
    '- CPU: user + system time from `/proc/<pid>/stat` of each controller process; RSS: `/proc/<pid>/status` VmRSS, median of five samples 200 ms apart, taken right after the idle period and after the load. ' +
      'PostgreSQL: its postmaster, its reaped and its live backends.',
    '- Load: request *i* due at start + *i*/rate and sent to member *i* mod *n* over a keep-alive pool per member; latency from the scheduled time; CPU ms/request = the member\'s CPU over the load ÷ the requests it answered.',
    '- Propagation: PATCH `/edge/management/v1/services/{id}` `{tags: {seq}}` on the writer with an admin session; then `GET /edge/client/v1/services/{id}` on the reader as `ha-viewer` every 10 ms until `tags.seq` is the new value (bounded 10 s).',
    '- Failover: kill -9 of the member; from then, `POST /edge/management/v1/services` on each survivor in turn every 50 ms (1 s timeout) until a 201; "refused until" is the start of the last failed attempt. ' +
      'Leader: Portcullis `controller_facts` \'leader-controller\', upstream `ziti agent cluster list --pid <survivor>`. Off the live list: every survivor\'s `GET /controllers` lacks it (Portcullis) or shows it `isOnline: false` (upstream). ' +
      'Restart: Portcullis the same command on the same data dir, upstream `ziti controller run <home>/<member>/ctrl.yaml` (the configuration quickstart wrote; `quickstart join` again would ask the cluster to add the member anew and exits when refused); then `GET /version` every 50 ms on new connections, then (upstream: after an admin login, its zt-sessions are per member) ' +
      '`GET /services?filter=name="<the first write after the kill>"`, polled every 10 ms until it has it; membership: every member lists all three (Portcullis) / every member\'s agent shows three connected with a leader (upstream). Between repetitions: 1 s.',
  );
  lines.push('');
  lines.push('## Not measured');
  lines.push('');
  for (const n of r.notMeasured) lines.push(`- ${n}`);
  lines.push('');
  return lines.join('\n');
}

function refusalText(reps: FailoverRep[]): string {
  const all: Record<string, number> = {};
  for (const f of reps) for (const [k, v] of Object.entries(f.refusals)) all[k] = (all[k] ?? 0) + v;
  const entries = Object.entries(all);
  return entries.length ? entries.map(([k, v]) => `${k} ×${v}`).join(', ') : 'none';
}

function writeResult(r: HaBenchResult): void {
  mkdirSync(join('bench', 'results'), { recursive: true });
  const base = join('bench', 'results', 'ha');
  writeFileSync(`${base}.json`, JSON.stringify(r, null, 2) + '\n');
  const text = markdown(r);
  writeFileSync(`${base}.md`, text);
  console.log('\n' + text);
  console.log(`  written ${base}.json and ${base}.md (${r.wallS.toFixed(0)} s)`);
}
