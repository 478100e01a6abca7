/**
 * Harness for suites that run upstream `ziti router` processes against the controller under test (the interop
 * runner passes PORTCULLIS_URL, PORTCULLIS_ADMIN_USER, PORTCULLIS_ADMIN_PASSWORD, PORTCULLIS_CA_FILE and ZITI_BIN):
 * the `ziti` CLI logged in as the admin, edge and transit routers created, configured, enrolled and run, a REST
 * client for the management and client APIs, and a polling helper.
 *
 * Everything binds to and dials loopback only: router configs are generated with 127.0.0.1 as the advertised
 * address and every `0.0.0.0` bind rewritten to 127.0.0.1. All files live in one temp dir per test process
 * (`workDir()`). Every router process started here is tracked: `cleanupRouters()` (call it from the suite's `after`
 * hook) stops them, and exit/signal handlers kill whatever is left, so no router outlives the test process.
 * Other programs a suite runs beside the routers (SDK peers, tunnelers, scripts) go through `startProcess`, which
 * tracks them the same way and keeps their output (in memory, line by line, and in a log file).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { zitiBinary } from '../ziti-bin.mjs';

// ---------------------------------------------------------------------------------------------------------------
// The controller under test

export interface ControllerUnderTest {
  /** `https://host:port`, the server root. */
  url: string;
  host: string;
  port: number;
  caFile: string;
  /** PEM text of caFile. */
  ca: string;
  adminUser: string;
  adminPassword: string;
}

let controllerCache: ControllerUnderTest | undefined;

/** The controller the runner started, from the PORTCULLIS_* environment variables. */
export function controller(): ControllerUnderTest {
  if (controllerCache) return controllerCache;
  const url = process.env.PORTCULLIS_URL ?? '';
  const caFile = process.env.PORTCULLIS_CA_FILE ?? '';
  const adminUser = process.env.PORTCULLIS_ADMIN_USER ?? '';
  const adminPassword = process.env.PORTCULLIS_ADMIN_PASSWORD ?? '';
  if (!url || !caFile || !adminUser || !adminPassword) {
    throw new Error('PORTCULLIS_URL, PORTCULLIS_CA_FILE, PORTCULLIS_ADMIN_USER and PORTCULLIS_ADMIN_PASSWORD are set by test/interop/run.mjs');
  }
  const parsed = new URL(url);
  const port = Number(parsed.port || 443);
  controllerCache = { url: url.replace(/\/+$/, ''), host: parsed.hostname, port, caFile, ca: readFileSync(caFile, 'utf8'), adminUser, adminPassword };
  return controllerCache;
}

/** The router control endpoint of the controller as routers and enrollment JWTs spell it: `tls:host:port`. */
export function ctrlEndpoint(): string {
  const c = controller();
  return `tls:${c.host}:${c.port}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Files, ports, polling

let workDirPath: string | undefined;

/** This process's temp dir for router files, CLI state and logs (created on first use). */
export function workDir(): string {
  if (!workDirPath) {
    installExitHandlers();
    workDirPath = mkdtempSync(join(tmpdir(), 'portcullis-routers-'));
  }
  return workDirPath;
}

/** A TCP port free on 127.0.0.1 right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface WaitOptions {
  /** Poll interval; 250 ms unless given. */
  intervalMs?: number;
  /** What is awaited, for the timeout message. */
  what?: string;
  /** Called on timeout; its text (e.g. the last state seen) is appended to the error message. */
  lastSeen?: () => string;
  /** Checked before each poll: a returned text ends the wait at once with that reason (e.g. "the router exited"). */
  abort?: () => string | undefined;
}

/**
 * Polls `predicate` until it returns a truthy value (returned) or `timeoutMs` passes (throws, naming `what`, the
 * last error the predicate threw and `lastSeen()`). A throwing predicate counts as "not yet".
 */
export async function waitFor<T>(predicate: () => T | Promise<T>, timeoutMs: number, opts: WaitOptions = {}): Promise<NonNullable<T>> {
  const interval = opts.intervalMs ?? 250;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    const aborted = opts.abort?.();
    if (aborted) {
      let message = `gave up waiting for ${opts.what ?? 'a condition'}: ${aborted}`;
      if (opts.lastSeen) message += `; last seen: ${opts.lastSeen()}`;
      throw new Error(message);
    }
    try {
      const value = await predicate();
      if (value) return value as NonNullable<T>;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) break;
    await sleep(Math.min(interval, Math.max(0, deadline - Date.now())));
  }
  let message = `timed out after ${timeoutMs} ms waiting for ${opts.what ?? 'a condition'}`;
  if (lastError) message += `; last error: ${lastError instanceof Error ? lastError.message : String(lastError)}`;
  if (opts.lastSeen) message += `; last seen: ${opts.lastSeen()}`;
  throw new Error(message);
}

/** The payload of a JWT (compact form, as text or in a file), not verified. */
export function jwtPayload(jwtOrFile: string): Record<string, any> {
  const jwt = existsSync(jwtOrFile) ? readFileSync(jwtOrFile, 'utf8').trim() : jwtOrFile.trim();
  const parts = jwt.split('.');
  if (parts.length !== 3) throw new Error(`not a compact JWT: ${jwt.slice(0, 40)}...`);
  return JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
}

// ---------------------------------------------------------------------------------------------------------------
// The ziti program

let zitiPath: string | undefined;

/** The `ziti` program: ZITI_BIN (set by the runner), else the shared copy (test/interop/ziti-bin.mjs). */
export function ziti(): string {
  zitiPath ??= zitiBinary();
  return zitiPath;
}

/** Each ziti process leaves its diagnostics agent socket behind; removes the one of `pid`. */
export function removeAgentSocket(pid: number | undefined): void {
  if (pid) rmSync(`/tmp/gops-agent.${pid}.sock`, { force: true });
}

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** Return a failed run instead of throwing. */
  allowFailure?: boolean;
  timeoutMs?: number;
}

/** The CLI's login state lives here (ZITI_CONFIG_DIR), never in the user's home. */
export function cliConfigDir(): string {
  const dir = join(workDir(), 'ziti-cli');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Runs `ziti <args>` with the harness's CLI config dir; throws with the output on a non-zero exit. */
export function zitiCli(args: string[], opts: CliOptions = {}): CliResult {
  const r = spawnSync(ziti(), args, {
    encoding: 'utf8',
    timeout: opts.timeoutMs ?? 60_000,
    env: { ...process.env, ZITI_CONFIG_DIR: cliConfigDir(), ...opts.env },
  });
  removeAgentSocket(r.pid);
  const result = { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
  if (r.error) throw new Error(`ziti ${args.join(' ')}: ${r.error.message}`);
  if (r.status !== 0 && !opts.allowFailure) {
    throw new Error(`ziti ${args.join(' ')} exited ${r.status ?? r.signal}:\n${result.stdout}\n${result.stderr}`);
  }
  return result;
}

let cliLoggedIn = false;

/** `ziti edge login` as the admin, trusting the controller's CA file (once per process). */
export function loginCli(): void {
  if (cliLoggedIn) return;
  const c = controller();
  zitiCli(['edge', 'login', `${c.host}:${c.port}`, '-u', c.adminUser, '-p', c.adminPassword, '--ca', c.caFile, '-y']);
  cliLoggedIn = true;
}

// ---------------------------------------------------------------------------------------------------------------
// REST

export interface RestResponse {
  status: number;
  body: any;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * One JSON request over HTTPS trusting `ca`, with a zt-session when `token` is set: the answer's status, parsed body
 * (the text when it is not JSON) and headers.
 */
export function requestJson(url: string, method: string, ca: string, token: string, body?: unknown, timeoutMs = 15_000): Promise<RestResponse> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(url, {
      method,
      ca,
      headers: {
        accept: 'application/json',
        ...(token ? { 'zt-session': token } : {}),
        ...(payload ? { 'content-type': 'application/json' } : {}),
      },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        let parsed: unknown = text;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          // not JSON: keep the text
        }
        resolve({ status: res.statusCode ?? 0, body: parsed, headers: res.headers });
      });
    });
    req.on('error', reject);
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${url}: no answer within ${timeoutMs} ms`)));
    req.end(payload);
  });
}

/**
 * A small client of one API of the controller under test (the edge `management` or `client` API, or the
 * `fabric` management API, which takes management API sessions), over node's https.
 */
export class EdgeRest {
  token = '';

  constructor(readonly api: 'management' | 'client' | 'fabric') {}

  /** Password login; keeps the session token. */
  async authenticate(username: string, password: string): Promise<void> {
    const res = await this.request('POST', '/authenticate?method=password', { username, password });
    if (res.status !== 200 || !res.body?.data?.token) {
      throw new Error(`${this.api} API login of ${username} failed: ${res.status} ${JSON.stringify(res.body)}`);
    }
    this.token = res.body.data.token;
  }

  request(method: string, path: string, body?: unknown): Promise<RestResponse> {
    const c = controller();
    const base = this.api === 'fabric' ? '/fabric/v1' : `/edge/${this.api}/v1`;
    return requestJson(`${c.url}${base}${path}`, method, c.ca, this.token, body);
  }

  get(path: string): Promise<RestResponse> {
    return this.request('GET', path);
  }

  post(path: string, body: unknown): Promise<RestResponse> {
    return this.request('POST', path, body);
  }

  /** GET that must answer 200; returns `data`. */
  async data(path: string): Promise<any> {
    const res = await this.get(path);
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data;
  }

  /** POST that must answer 201; returns the new entity's id. */
  async create(path: string, body: unknown): Promise<string> {
    const res = await this.post(path, body);
    if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data.id;
  }

  /** Management: `GET /edge-routers/{id}`. */
  edgeRouter(id: string): Promise<any> {
    return this.data(`/edge-routers/${encodeURIComponent(id)}`);
  }

  /** Management: `GET /routers/{id}` (every router, edge or transit, as the fabric sees it). */
  router(id: string): Promise<any> {
    return this.data(`/routers/${encodeURIComponent(id)}`);
  }

  /** Management: the id of the one entity of `collection` (e.g. `edge-routers`) named `name`. */
  async idByName(collection: string, name: string): Promise<string> {
    const list = await this.data(`/${collection}?filter=${encodeURIComponent(`name = "${name}"`)}`);
    if (!Array.isArray(list) || list.length !== 1) throw new Error(`expected one of ${collection} named ${name}, got ${JSON.stringify(list)}`);
    return list[0].id;
  }
}

/** A management API client logged in as the admin. */
export async function adminRest(): Promise<EdgeRest> {
  const c = controller();
  const rest = new EdgeRest('management');
  await rest.authenticate(c.adminUser, c.adminPassword);
  return rest;
}

export interface UpdbIdentity {
  id: string;
  name: string;
  password: string;
}

/** Creates a non-admin identity with username/password enrollment and completes the enrollment. */
export async function createUpdbIdentity(admin: EdgeRest, name: string, roleAttributes: string[] = []): Promise<UpdbIdentity> {
  const id = await admin.create('/identities', { name, type: 'User', isAdmin: false, roleAttributes, enrollment: { updb: name } });
  const identity = await admin.data(`/identities/${id}`);
  const token = identity?.enrollment?.updb?.token;
  if (!token) throw new Error(`identity ${name} has no updb enrollment token: ${JSON.stringify(identity?.enrollment)}`);
  const password = `Pw-${Math.random().toString(36).slice(2)}-9x!`;
  const res = await new EdgeRest('client').post(`/enroll/updb?token=${encodeURIComponent(token)}`, { password });
  if (res.status !== 200) throw new Error(`updb enrollment of ${name}: ${res.status} ${JSON.stringify(res.body)}`);
  return { id, name, password };
}

/** A client API session of `identity`. */
export async function clientSession(identity: UpdbIdentity): Promise<EdgeRest> {
  const rest = new EdgeRest('client');
  await rest.authenticate(identity.name, identity.password);
  return rest;
}

// ---------------------------------------------------------------------------------------------------------------
// Routers: create, configure, enroll

export type RouterKind = 'edge' | 'transit';

export interface RouterHandle {
  kind: RouterKind;
  name: string;
  id: string;
  /** The router's own folder under workDir(): JWT, config, keys, certificates, logs. */
  dir: string;
  /** The enrollment JWT the CLI wrote. */
  jwtFile: string;
}

function routerDir(name: string): string {
  const dir = join(workDir(), name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

async function routerId(collection: string, name: string, cliOutput: string): Promise<string> {
  const m = /created with id:?\s*([A-Za-z0-9._-]+)/i.exec(cliOutput);
  if (m) return m[1];
  return (await adminRest()).idByName(collection, name);
}

/** `ziti edge create edge-router <name> -o <jwt> [-t] [-a attrs]` (CLI logged in as the admin). */
export async function createEdgeRouter(name: string, opts: { tunneler?: boolean; roleAttributes?: string[] } = {}): Promise<RouterHandle> {
  loginCli();
  const dir = routerDir(name);
  const jwtFile = join(dir, `${name}.jwt`);
  const args = ['edge', 'create', 'edge-router', name, '-o', jwtFile];
  if (opts.tunneler) args.push('-t');
  if (opts.roleAttributes?.length) args.push('-a', opts.roleAttributes.join(','));
  const r = zitiCli(args);
  if (!existsSync(jwtFile)) throw new Error(`ziti edge create edge-router wrote no JWT to ${jwtFile}:\n${r.stdout}${r.stderr}`);
  return { kind: 'edge', name, id: await routerId('edge-routers', name, r.stdout + r.stderr), dir, jwtFile };
}

/** `ziti edge create transit-router <name> -o <jwt>` (CLI logged in as the admin). */
export async function createTransitRouter(name: string): Promise<RouterHandle> {
  loginCli();
  const dir = routerDir(name);
  const jwtFile = join(dir, `${name}.jwt`);
  const r = zitiCli(['edge', 'create', 'transit-router', name, '-o', jwtFile]);
  if (!existsSync(jwtFile)) throw new Error(`ziti edge create transit-router wrote no JWT to ${jwtFile}:\n${r.stdout}${r.stderr}`);
  return { kind: 'transit', name, id: await routerId('transit-routers', name, r.stdout + r.stderr), dir, jwtFile };
}

export interface RouterConfig {
  configFile: string;
  /** The edge listener's port (edge routers: clients connect to tls://127.0.0.1:<edgePort>). */
  edgePort: number;
  /** The link listener's port (router-to-router links). */
  linkPort: number;
}

/**
 * `ziti create config router edge|fabric --routerName <name> -o <dir>/<name>.yaml` (edge for edge routers, fabric
 * for transit routers) with the controller's host and port as the control endpoint, 127.0.0.1 as the advertised
 * address and free loopback ports; then every `0.0.0.0` bind becomes `127.0.0.1`, and a metrics report interval
 * is set when asked. Identity files go to the router's folder (ZITI_HOME).
 */
export async function writeRouterConfig(
  router: RouterHandle,
  opts: { edgePort?: number; linkPort?: number; metricsReportInterval?: string } = {},
): Promise<RouterConfig> {
  const c = controller();
  const edgePort = opts.edgePort ?? (await freePort());
  let linkPort = opts.linkPort ?? (await freePort());
  while (linkPort === edgePort) linkPort = await freePort();
  const configFile = join(router.dir, `${router.name}.yaml`);
  zitiCli(['create', 'config', 'router', router.kind === 'edge' ? 'edge' : 'fabric', '--routerName', router.name, '-o', configFile], {
    env: {
      ZITI_HOME: router.dir,
      ZITI_CTRL_ADVERTISED_ADDRESS: c.host,
      ZITI_CTRL_ADVERTISED_PORT: String(c.port),
      ZITI_ROUTER_ADVERTISED_ADDRESS: '127.0.0.1',
      ZITI_ROUTER_PORT: String(edgePort),
      ZITI_ROUTER_LISTENER_BIND_PORT: String(linkPort),
      ZITI_ROUTER_CSR_SANS_DNS: 'localhost',
    },
  });
  let yaml = readFileSync(configFile, 'utf8').replaceAll('0.0.0.0', '127.0.0.1');
  // How often the router sends its metrics (link latencies among them); upstream's default is a minute.
  if (opts.metricsReportInterval) yaml += `\nmetrics:\n  reportInterval: ${opts.metricsReportInterval}\n`;
  writeFileSync(configFile, yaml);
  return { configFile, edgePort, linkPort };
}

/** `ziti router enroll <config> --jwt <jwt>`: the router's key, CSR and certificates land beside its config. */
export function enrollRouter(configFile: string, jwtFile: string): CliResult {
  return zitiCli(['router', 'enroll', configFile, '--jwt', jwtFile], { timeoutMs: 120_000 });
}

// ---------------------------------------------------------------------------------------------------------------
// Routers: run

export interface RouterProcess {
  readonly pid: number;
  readonly configFile: string;
  /** stdout and stderr of the router, appended across restarts. */
  readonly logFile: string;
  /** Set once the process has exited. */
  readonly exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** The last `lines` lines of the log. */
  logTail(lines?: number): string;
  /** SIGTERM, then SIGKILL after `timeoutMs` (10 s); removes the agent socket. */
  stop(timeoutMs?: number): Promise<void>;
  /** SIGKILL; removes the agent socket. */
  kill9(): Promise<void>;
}

/** Router processes still running (killed by cleanupRouters and the exit handlers). */
const live = new Set<ChildProcess>();
/** Every log file written, for printRouterLogs. */
const logFiles = new Set<string>();

function tail(file: string, lines: number): string {
  if (!existsSync(file)) return '';
  return readFileSync(file, 'utf8').split('\n').slice(-lines - 1).join('\n');
}

function waitExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.off('exit', onExit);
      resolve(false);
    }, timeoutMs);
    const onExit = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    child.once('exit', onExit);
  });
}

/** SIGTERM-then-SIGKILL and plain SIGKILL for a tracked child; either untracks it and removes its agent socket. */
function ending(child: ChildProcess, pid: number): { stop(timeoutMs?: number): Promise<void>; kill9(): Promise<void> } {
  const untrack = (): void => {
    live.delete(child);
    removeAgentSocket(pid);
  };
  return {
    async stop(timeoutMs = 10_000) {
      if (!(await waitExit(child, 0))) {
        child.kill('SIGTERM');
        if (!(await waitExit(child, timeoutMs))) {
          child.kill('SIGKILL');
          await waitExit(child, 10_000);
        }
      }
      untrack();
    },
    async kill9() {
      if (!(await waitExit(child, 0))) {
        child.kill('SIGKILL');
        await waitExit(child, 10_000);
      }
      untrack();
    },
  };
}

export interface StartOptions {
  /** Default: the config's path with `.log` instead of `.yaml`. */
  logFile?: string;
  /** `--verbose` (debug logging). */
  verbose?: boolean;
  /** `--log-formatter`: `pfxlog` (default, one short line per entry), `text` or `json`. */
  logFormatter?: 'pfxlog' | 'text' | 'json';
}

/** `ziti router run <config>` with stdout and stderr appended to a log file (kept across restarts). */
export function startRouter(configFile: string, opts: StartOptions = {}): RouterProcess {
  installExitHandlers();
  const logFile = opts.logFile ?? configFile.replace(/\.ya?ml$/, '') + '.log';
  logFiles.add(logFile);
  const fd = openSync(logFile, 'a');
  writeSync(fd, `\n===== ${new Date().toISOString()} ziti router run ${basename(configFile)}\n`);
  let child: ChildProcess;
  try {
    const args = ['router', 'run', configFile, '--log-formatter', opts.logFormatter ?? 'pfxlog', ...(opts.verbose ? ['--verbose'] : [])];
    child = spawn(ziti(), args, { stdio: ['ignore', fd, fd], env: { ...process.env, ZITI_CONFIG_DIR: cliConfigDir() } });
  } finally {
    closeSync(fd);
  }
  if (child.pid === undefined) throw new Error(`could not start ziti router run ${configFile}`);
  const pid = child.pid;
  live.add(child);
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  child.on('error', () => undefined);
  child.on('exit', (code, signal) => {
    exit = { code, signal };
    live.delete(child);
    removeAgentSocket(pid);
  });

  const { stop, kill9 } = ending(child, pid);

  return {
    pid,
    configFile,
    logFile,
    get exit() {
      return exit;
    },
    logTail: (lines = 60) => tail(logFile, lines),
    stop,
    kill9,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Other processes: SDK peers, tunnelers, scripts

export interface PeerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface PeerProcess {
  readonly name: string;
  readonly pid: number;
  /** stdout and stderr, appended across restarts of the same name. */
  readonly logFile: string;
  /** Set once the process has exited. */
  readonly exit: PeerExit | undefined;
  /** Every complete stdout line so far. */
  readonly lines: readonly string[];
  /** Everything written to stderr so far. */
  stderr(): string;
  /**
   * Waits for a stdout line matching `pattern` at index `from` (default 0) or later; returns its index and text.
   * Fails at once when the process exits first, and after `timeoutMs`; both messages quote the output's tail.
   */
  waitForLine(pattern: RegExp | string, timeoutMs: number, from?: number): Promise<{ index: number; line: string }>;
  /** Writes one line to stdin (started with `stdin: true`). */
  send(line: string): void;
  /** Sends `line` and waits for the next stdout line matching `answer` (default: any line); returns it. */
  ask(line: string, timeoutMs: number, answer?: RegExp): Promise<string>;
  /** Resolves with the exit once the process has exited (at most `timeoutMs`, else throws). */
  exited(timeoutMs: number): Promise<PeerExit>;
  /** SIGTERM, then SIGKILL after `timeoutMs` (10 s); removes the agent socket. */
  stop(timeoutMs?: number): Promise<void>;
  /** SIGKILL; removes the agent socket. */
  kill9(): Promise<void>;
  /** The last `lines` lines of stdout and stderr, for messages. */
  tail(lines?: number): string;
}

export interface ProcessOptions {
  env?: Record<string, string>;
  cwd?: string;
  /** Keep stdin open for `send` / `ask`. */
  stdin?: boolean;
}

/**
 * Starts `command args` as a tracked process (stopped by cleanupRouters, killed by the exit handlers, its
 * `/tmp/gops-agent.<pid>.sock` removed when it ends). Its output goes to `<workDir>/logs/<name>.log`, which
 * printRouterLogs shows with the router logs.
 */
export function startProcess(name: string, command: string, args: string[], opts: ProcessOptions = {}): PeerProcess {
  installExitHandlers();
  const logDir = join(workDir(), 'logs');
  mkdirSync(logDir, { recursive: true });
  const logFile = join(logDir, `${name}.log`);
  logFiles.add(logFile);
  appendFileSync(logFile, `\n===== ${new Date().toISOString()} ${basename(command)} ${args.join(' ')}\n`);
  const child = spawn(command, args, {
    cwd: opts.cwd,
    stdio: [opts.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    env: { ...process.env, ZITI_CONFIG_DIR: cliConfigDir(), ...opts.env },
  });
  if (child.pid === undefined) throw new Error(`could not start ${command} ${args.join(' ')}`);
  const pid = child.pid;
  live.add(child);
  const lines: string[] = [];
  let pending = '';
  let errText = '';
  let exit: PeerExit | undefined;
  const waiters = new Set<() => void>();
  const wake = (): void => {
    for (const w of [...waiters]) w();
  };
  child.stdout?.setEncoding('utf8');
  child.stderr?.setEncoding('utf8');
  // Output that arrives after the suite removed its work directory (a process flushing as it is stopped) is dropped.
  const keepLog = (chunk: string): void => {
    try {
      appendFileSync(logFile, chunk);
    } catch {
      // the log directory is gone: the suite has ended
    }
  };
  child.stdout?.on('data', (chunk: string) => {
    keepLog(chunk);
    pending += chunk;
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    lines.push(...parts);
    if (parts.length) wake();
  });
  child.stderr?.on('data', (chunk: string) => {
    keepLog(chunk);
    errText += chunk;
    if (errText.length > 2_000_000) errText = errText.slice(-1_000_000);
  });
  child.stdin?.on('error', () => undefined);
  child.on('error', () => undefined);
  child.on('close', (code, signal) => {
    if (pending) lines.push(pending);
    pending = '';
    exit = { code, signal };
    live.delete(child);
    removeAgentSocket(pid);
    keepLog(`===== exited ${JSON.stringify(exit)}\n`);
    wake();
  });

  function tailText(n = 30): string {
    const out = lines.slice(-n).join('\n');
    const err = errText.split('\n').slice(-n).join('\n');
    return `stdout: ${out || '(none)'}\nstderr: ${err.trim() || '(none)'}`;
  }

  function waitForLine(pattern: RegExp | string, timeoutMs: number, from = 0): Promise<{ index: number; line: string }> {
    const matches = (l: string): boolean => (typeof pattern === 'string' ? l.includes(pattern) : pattern.test(l));
    return new Promise((resolve, reject) => {
      const check = (): void => {
        for (let i = from; i < lines.length; i++) {
          if (matches(lines[i])) {
            done();
            resolve({ index: i, line: lines[i] });
            return;
          }
        }
        if (exit) {
          done();
          reject(new Error(`${name} exited (${JSON.stringify(exit)}) before printing a line matching ${pattern}\n${tailText()}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`${name}: no line matching ${pattern} within ${timeoutMs} ms\n${tailText()}`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });
  }

  function send(line: string): void {
    if (!child.stdin) throw new Error(`${name} was started without stdin`);
    appendFileSync(logFile, `<<< ${line}\n`);
    child.stdin.write(`${line}\n`);
  }

  async function ask(line: string, timeoutMs: number, answer: RegExp = /./): Promise<string> {
    const from = lines.length;
    send(line);
    return (await waitForLine(answer, timeoutMs, from)).line;
  }

  async function exited(timeoutMs: number): Promise<PeerExit> {
    if (!(await waitExit(child, timeoutMs))) throw new Error(`${name} still running after ${timeoutMs} ms\n${tailText()}`);
    // 'exit' can come before the output is drained ('close'): wait for that too.
    await new Promise<void>((r) => (exit ? r() : child.once('close', () => r())));
    return exit as PeerExit;
  }

  const { stop, kill9 } = ending(child, pid);

  return {
    name,
    pid,
    logFile,
    get exit() {
      return exit;
    },
    lines,
    stderr: () => errText,
    waitForLine,
    send,
    ask,
    exited,
    stop,
    kill9,
    tail: tailText,
  };
}

/** Runs a program to its end (a tracked process, killed after `timeoutMs`); its exit, stdout lines and stderr. */
export async function runProcess(name: string, command: string, args: string[], timeoutMs: number, opts: ProcessOptions = {}): Promise<{ exit: PeerExit; stdout: string[]; stderr: string }> {
  const p = startProcess(name, command, args, opts);
  try {
    const exit = await p.exited(timeoutMs);
    return { exit, stdout: [...p.lines], stderr: p.stderr() };
  } catch (err) {
    await p.kill9();
    throw err;
  }
}

/** How much of each log printRouterLogs has shown already. */
const printedUpTo = new Map<string, number>();

/**
 * Prints, for every router (and startProcess) log written by this process, the tail (at most `lines` lines) of what
 * was appended since the previous call, to stderr (which the test reporter shows).
 */
export function printRouterLogs(reason: string, lines = 60): void {
  for (const file of logFiles) {
    if (!existsSync(file)) continue;
    const text = readFileSync(file, 'utf8');
    const fresh = text.slice(printedUpTo.get(file) ?? 0);
    printedUpTo.set(file, text.length);
    if (!fresh.trim()) {
      console.error(`--- ${reason}: nothing new in ${file} ---`);
      continue;
    }
    const shown = fresh.split('\n').slice(-lines - 1).join('\n');
    console.error(`--- ${reason}: ${file} (last lines) ---\n${shown}\n--- end of ${basename(file)} ---`);
  }
}

function killAllSync(): void {
  for (const child of live) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
    removeAgentSocket(child.pid);
  }
  live.clear();
}

let exitHandlersInstalled = false;

/**
 * Kills every router (and process of startProcess) left running when the test process exits, is interrupted or
 * terminated.
 */
function installExitHandlers(): void {
  if (exitHandlersInstalled) return;
  exitHandlersInstalled = true;
  process.on('exit', () => {
    killAllSync();
    removeWorkDir();
  });
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]] as const) {
    process.once(signal, () => {
      killAllSync();
      removeWorkDir();
      process.exit(code);
    });
  }
}

function removeWorkDir(): void {
  if (workDirPath) rmSync(workDirPath, { recursive: true, force: true });
  workDirPath = undefined;
}

/**
 * Stops every router (and process of startProcess) still running and removes the work dir. With `keepLogs` (a test
 * failed) the logs are first copied to a fresh `portcullis-router-logs-*` folder under the temp dir, whose path is
 * printed.
 */
export async function cleanupRouters(opts: { keepLogs?: boolean } = {}): Promise<void> {
  const children = [...live];
  await Promise.all(children.map(async (child) => {
    child.kill('SIGTERM');
    if (!(await waitExit(child, 10_000))) {
      child.kill('SIGKILL');
      await waitExit(child, 5_000);
    }
    removeAgentSocket(child.pid);
  }));
  killAllSync();
  if (opts.keepLogs) {
    const kept = [...logFiles].filter((f) => existsSync(f));
    if (kept.length) {
      const dest = mkdtempSync(join(tmpdir(), 'portcullis-router-logs-'));
      for (const f of kept) copyFileSync(f, join(dest, basename(f)));
      console.error(`router logs kept in ${dest}: ${readdirSync(dest).join(', ')}`);
    }
  }
  removeWorkDir();
  logFiles.clear();
  printedUpTo.clear();
  cliLoggedIn = false;
}
