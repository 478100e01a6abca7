/**
 * The upstream controller as a black-box benchmark peer: `ziti edge quickstart --no-router` (the program from
 * ZITI_BIN, else the shared copy beside the repository, test/interop/ziti-bin.mjs) in its own home directory, on
 * 127.0.0.1 only (ZITI_CTRL_BIND_ADDRESS and ZITI_CTRL_EDGE_BIND_ADDRESS: the control channel and the REST APIs,
 * which upstream serves on one port, bind loopback) at a free port, with the bench admin credentials.
 *
 * A sized dataset is loaded once per size and seed through the management API (datasets/rest-loader.ts; medium
 * takes about 20 s, large minutes: its policies go one at a time, each evaluated against 100k identities) into
 * `bench/.data/upstream-<size>/home`, with `upstream.json` beside it naming the size, seed, ziti version, the
 * users and the home path and port the configuration was written with. Each run starts from a private copy of that
 * home: quickstart reuses an initialised home as it is, so the copy's ctrl.yaml is rewritten first (paths into the
 * copy, the new port). Trust anchor: the home's `pki/root-ca/certs/root-ca.cert` (the server chain carries the
 * intermediate; the server certificate covers localhost and 127.0.0.1). Every ziti process is stopped (killed if the
 * benchmark exits otherwise) and its /tmp/gops-agent.<pid>.sock removed.
 */
import type { ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { zitiBinary } from '../test/interop/ziti-bin.mjs';
import { BENCH_ADMIN_PASSWORD } from './datasets/identities.ts';
import { loadThroughApi, type RestCertUser, type RestUser } from './datasets/rest-loader.ts';
import { SIZES, generateDataset, type SizeName, type SizeSpec } from './datasets/sized.ts';
import { freePort, runSync, startExternal, stopExternal } from './fabric.ts';
import { HOST, apiClient, fetchOnce } from './lib.ts';
import { CLIENT, MANAGEMENT } from './scenarios/context.ts';

const ADMIN_USER = 'admin';
const READY_TIMEOUT_MS = 120_000;
/** Creates in flight while loading (upstream serialises its writes; a few in flight hide the round trips). */
const LOAD_CONCURRENCY = 8;
const MARKER = 'upstream.json';

export interface UpstreamMarker {
  size: SizeName;
  seed: number;
  zitiVersion: string;
  /** The home directory and port ctrl.yaml was written with (rewritten in each copy). */
  homeAtLoad: string;
  portAtLoad: number;
  adminUser: string;
  adminPassword: string;
  counts: SizeSpec;
  loadMs: number;
  phasesMs: Record<string, number>;
  users: RestUser[];
  certUsers: RestCertUser[];
}

/** A running upstream controller. */
export interface Upstream {
  child: ChildProcess;
  pid: number;
  port: number;
  /** PEM trust anchor of its TLS server certificate. */
  ca: string;
  home: string;
  /** Spawn until the client API answered. */
  startMs: number;
}

export function upstreamCacheDir(size: SizeName): string {
  return join('bench', '.data', `upstream-${size}`);
}

/** `ziti version` of the program in use. */
export function zitiVersion(): string {
  return runSync(zitiBinary(), ['version'], {}).trim().split('\n').pop() ?? '';
}

/**
 * Starts quickstart on `home` (created and initialised when it does not exist). `rewrite` names the home path and
 * port an existing home's ctrl.yaml was written with; they are replaced by this home and a new free port.
 */
export async function startUpstream(home: string, rewrite?: { homeAtLoad: string; portAtLoad: number }): Promise<Upstream> {
  const ziti = zitiBinary();
  home = resolve(home);
  const port = await freePort();
  if (rewrite) {
    const yaml = join(home, 'ctrl.yaml');
    const text = readFileSync(yaml, 'utf8').split(rewrite.homeAtLoad).join(home).split(`:${rewrite.portAtLoad}`).join(`:${port}`);
    writeFileSync(yaml, text);
  }
  const work = dirname(home);
  const cliDir = join(work, 'ziti-cli');
  mkdirSync(cliDir, { recursive: true });
  const logFile = join(work, 'quickstart.log');
  const t0 = performance.now();
  const child = startExternal(
    ziti,
    ['edge', 'quickstart', '--no-router', '--home', home, '--ctrl-address', HOST, '--ctrl-port', String(port), '--username', ADMIN_USER, '--password', BENCH_ADMIN_PASSWORD],
    { env: { ZITI_CTRL_BIND_ADDRESS: HOST, ZITI_CTRL_EDGE_BIND_ADDRESS: HOST, ZITI_CONFIG_DIR: cliDir }, logFile, cwd: work },
  );
  const caFile = join(home, 'pki', 'root-ca', 'certs', 'root-ca.cert');
  const deadline = performance.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`ziti edge quickstart exited (${child.exitCode ?? child.signalCode}): ${tail(logFile)}`);
    if (performance.now() > deadline) {
      await stopExternal(child);
      throw new Error(`ziti edge quickstart: the client API did not answer within ${READY_TIMEOUT_MS / 1000} s: ${tail(logFile)}`);
    }
    if (existsSync(caFile)) {
      const ca = readFileSync(caFile, 'utf8');
      const r = await fetchOnce(port, ca, 'GET', `${CLIENT}/version`, { accept: 'application/json' }).catch(() => undefined);
      if (r?.status === 200) return { child, pid: child.pid!, port, ca, home, startMs: performance.now() - t0 };
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function stopUpstream(u: Upstream): Promise<void> {
  await stopExternal(u.child, 20_000);
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').slice(-1500);
  } catch {
    return '(no output)';
  }
}

/** An admin API client of a running upstream controller (logged in). */
export async function upstreamAdmin(u: Upstream, sockets = LOAD_CONCURRENCY) {
  const api = apiClient(u.port, u.ca, sockets);
  const login = await api.must('POST', `${MANAGEMENT}/authenticate?method=password`, { username: ADMIN_USER, password: BENCH_ADMIN_PASSWORD }, 200);
  api.setToken(login.data.token as string);
  return api;
}

/**
 * The cached upstream home of a size and seed: reused when its marker matches (and the ziti version is the same),
 * else loaded now through the REST API into a fresh quickstart home and moved into place when complete.
 */
export async function ensureUpstreamHome(size: SizeName, seed: number, log: (line: string) => void = console.log): Promise<{ home: string; marker: UpstreamMarker }> {
  const dir = upstreamCacheDir(size);
  const version = zitiVersion();
  const home = resolve(dir, 'home');
  try {
    const marker = JSON.parse(readFileSync(join(dir, MARKER), 'utf8')) as UpstreamMarker;
    if (marker.size === size && marker.seed === seed && marker.zitiVersion === version && existsSync(join(home, 'ctrl.yaml'))) {
      log(`upstream ${size}: reusing ${dir} (loaded through the REST API in ${(marker.loadMs / 1000).toFixed(0)} s)`);
      return { home, marker };
    }
  } catch {
    // no usable cache: load below
  }
  const partial = resolve(`${dir}.partial`);
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  const generated = generateDataset(size, seed);
  const spec = SIZES[size];
  log(`upstream ${size}: loading ${spec.identities} identities, ${spec.services} services, ${spec.edgeRouters} edge routers and policies through the REST API of ziti ${version}`);
  const u = await startUpstream(join(partial, 'home'));
  let marker: UpstreamMarker;
  try {
    const api = await upstreamAdmin(u);
    try {
      const loaded = await loadThroughApi({ api, port: u.port, ca: u.ca }, generated, LOAD_CONCURRENCY, log);
      marker = { size, seed, zitiVersion: version, homeAtLoad: u.home, portAtLoad: u.port, adminUser: ADMIN_USER, adminPassword: BENCH_ADMIN_PASSWORD, counts: { ...spec }, ...loaded };
    } finally {
      api.close();
    }
  } finally {
    await stopUpstream(u);
  }
  for (const leftover of ['ziti-cli', 'quickstart.log']) rmSync(join(partial, leftover), { recursive: true, force: true });
  writeFileSync(join(partial, MARKER), JSON.stringify(marker, null, 2) + '\n');
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, resolve(dir));
  log(`upstream ${size}: loaded in ${(marker.loadMs / 1000).toFixed(0)} s → ${dir}`);
  return { home, marker };
}

/** Copies the cached home into `work` and starts quickstart on the copy. */
export async function startUpstreamCopy(cached: { home: string; marker: UpstreamMarker }, work: string): Promise<Upstream> {
  const home = join(resolve(work), 'home');
  cpSync(cached.home, home, { recursive: true });
  return startUpstream(home, cached.marker);
}
