/**
 * OIDC logins and JWT API sessions, Portcullis and the upstream controller side by side in one run:
 * `npm run bench -- --suite oidc [--duration D --concurrency C --rounds R --key-type ec|rsa]`.
 *
 * Both start fresh on 127.0.0.1: Portcullis as the README's quick start runs it (`node dist/main.js`, default
 * workers, a new data dir), upstream as `ziti edge quickstart --no-router` on a new home. The same records are made
 * on each over REST: users with a password, one identity with a certificate (ott enrollment).
 *
 * Loads, each closed loop with C concurrent clients for D seconds after a warm-up, P U P U … for R rounds, the
 * median reported:
 * - OIDC password login, the Go SDK's flow: authorize, the login step, the callback, the code for tokens (four
 *   requests, one keep-alive connection per client);
 * - OIDC certificate login, the same over mutual TLS;
 * - refresh: a token exchange of a refresh token for new tokens, as the Go SDK refreshes;
 * - service-updates with a Bearer access token, and the same with a zt-session.
 * Per load: operations per second, p50/p99 per operation, and the server's CPU time per operation (the figure that
 * holds on a bigger machine: the load generator shares the cores). `--key-type rsa` gives Portcullis an RSA-4096 key
 * like upstream's quickstart PKI (its default is EC P-256): signing is most of a refresh's cost. Results:
 * bench/results/oidc-<key type>.json and .md.
 */
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { enrollOtt } from './datasets/rest-loader.ts';
import { freePort, outputOf, settledRssMb, startExternal, stopExternal } from './fabric.ts';
import { HOST, apiClient, closedLoop, fetchOnce, fmt, machine, ms, percentileOf, procStats, type ClientTls, type RequestGen } from './lib.ts';
import { CLIENT, MANAGEMENT, WARMUP_S } from './scenarios/context.ts';
import { startUpstream, stopUpstream, zitiVersion } from './upstream.ts';
import { BENCH_ADMIN_PASSWORD } from './datasets/identities.ts';

export interface OidcBenchOptions {
  duration: number;
  concurrency: number;
  rounds: number;
  /** Portcullis' server (and token signing) key: `ec` (its default, P-256) or `rsa` (RSA-4096, as upstream's quickstart PKI). */
  keyType: 'ec' | 'rsa';
}

type Label = 'portcullis' | 'upstream';

interface Side {
  label: Label;
  port: number;
  ca: string;
  pid: number;
  users: Array<{ username: string; password: string }>;
  cert: ClientTls;
  refreshToken: string;
  accessToken: string;
  ztSession: string;
}

interface Figures {
  opsPerS: number;
  p50: number;
  p99: number;
  cpuMsPerOp: number;
  errors: number;
}

interface LoadResult {
  name: string;
  runs: Array<{ server: Label; round: number } & Figures>;
  portcullis: Figures;
  upstream: Figures;
}

export interface OidcBenchResult {
  suite: 'oidc';
  date: string;
  machine: ReturnType<typeof machine>;
  settings: OidcBenchOptions & { warmupS: number };
  portcullis: { command: string; workers: number; keyType: 'ec' | 'rsa' };
  upstream: { command: string; version: string };
  loads: LoadResult[];
  wallS: number;
}

const REDIRECT = 'http://localhost:8080/auth/callback';
const PASSWORD = 'Bench-oidc-pw-1';
const USERS = 8;

// ---- one HTTP exchange on a worker's own keep-alive connection ---------------------------------------------------

interface Answer {
  status: number;
  location: string;
  body: string;
}

function exchange(agent: Agent, port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: HOST, port, method, path, agent, headers: { ...headers, ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, location: String(res.headers.location ?? ''), body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(15_000, () => req.destroy(new Error(`${method} ${path}: no answer within 15 s`)));
    req.end(body);
  });
}

const form = (fields: Record<string, string>) => ({ headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });

/** The path and query of a Location (absolute or relative). */
function pathOf(location: string): string {
  const u = new URL(location, 'https://placeholder');
  return u.pathname + u.search;
}

/** One whole OIDC login, the Go SDK's way; returns the token answer. */
async function oidcLogin(agent: Agent, port: number, creds: { username: string; password: string } | 'cert'): Promise<{ access_token: string; refresh_token: string }> {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const method = creds === 'cert' ? 'cert' : 'password';
  const query = new URLSearchParams({
    client_id: 'native', response_type: 'code', scope: 'openid offline_access', state: randomBytes(16).toString('base64url'),
    nonce: randomBytes(16).toString('base64url'), code_challenge: challenge, code_challenge_method: 'S256', redirect_uri: REDIRECT, method,
  });
  const a = await exchange(agent, port, 'GET', `/oidc/authorize?${query}`, {});
  if (a.status !== 302) throw new Error(`authorize: ${a.status} ${a.body.slice(0, 200)}`);
  const id = new URL(a.location, 'https://x').searchParams.get('authRequestID') ?? '';
  const step = creds === 'cert' ? form({ id }) : form({ id, username: creds.username, password: creds.password });
  const l = await exchange(agent, port, 'POST', `/oidc/login/${method}`, step.headers, step.body);
  if (l.status !== 302) throw new Error(`login: ${l.status} ${l.body.slice(0, 200)}`);
  const c = await exchange(agent, port, 'GET', pathOf(l.location), {});
  const code = new URL(c.location, 'https://x').searchParams.get('code');
  if (c.status !== 302 || !code) throw new Error(`callback: ${c.status} ${c.location}`);
  const t = form({ grant_type: 'authorization_code', client_id: 'native', code, code_verifier: verifier, redirect_uri: REDIRECT });
  const tokens = await exchange(agent, port, 'POST', '/oidc/oauth/token', t.headers, t.body);
  if (tokens.status !== 200) throw new Error(`token: ${tokens.status} ${tokens.body.slice(0, 200)}`);
  return JSON.parse(tokens.body) as { access_token: string; refresh_token: string };
}

/** C clients running `flow` over and over for `seconds`, each on its own keep-alive connection. */
async function flowLoop(side: Side, seconds: number, concurrency: number, flow: (agent: Agent, worker: number) => Promise<unknown>, tls?: ClientTls): Promise<Figures> {
  const latencies: number[] = [];
  let errors = 0;
  const agents = Array.from({ length: concurrency }, () => new Agent({ keepAlive: true, maxSockets: 1, ca: side.ca, servername: 'localhost', rejectUnauthorized: false, ...(tls ?? {}) }));
  const before = procStats(side.pid).cpuMs;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    agents.map(async (agent, w) => {
      while (performance.now() < end) {
        const s = performance.now();
        try {
          await flow(agent, w);
          latencies.push(performance.now() - s);
        } catch {
          errors += 1;
        }
      }
    }),
  );
  const wall = performance.now() - t0;
  const cpu = procStats(side.pid).cpuMs - before;
  for (const a of agents) a.destroy();
  const sorted = Float64Array.from(latencies).sort();
  const ops = latencies.length;
  return { opsPerS: (ops / wall) * 1000, p50: percentileOf(sorted, 50), p99: percentileOf(sorted, 99), cpuMsPerOp: ops > 0 ? cpu / ops : 0, errors };
}

/** A single-request load through autocannon (as the other suites measure), per operation. */
async function requestLoop(side: Side, seconds: number, concurrency: number, gen: RequestGen): Promise<Figures> {
  const before = procStats(side.pid).cpuMs;
  const t0 = performance.now();
  const f = await closedLoop(side.port, gen, { connections: concurrency, seconds, pid: side.pid });
  const cpu = procStats(side.pid).cpuMs - before;
  const wall = performance.now() - t0;
  const ok = f.total - f.non2xx;
  return { opsPerS: (ok / wall) * 1000 * (wall / (seconds * 1000)), p50: f.p50, p99: f.p99, cpuMsPerOp: ok > 0 ? cpu / ok : 0, errors: f.non2xx + f.errors };
}

interface LoadDef {
  name: string;
  run: (side: Side, seconds: number, concurrency: number) => Promise<Figures>;
}

function loads(): LoadDef[] {
  const updates = `${CLIENT}/current-api-session/service-updates`;
  return [
    { name: 'OIDC password login (4 requests)', run: (s, d, c) => flowLoop(s, d, c, (agent, w) => oidcLogin(agent, s.port, s.users[w % s.users.length]!)) },
    { name: 'OIDC certificate login (4 requests, mutual TLS)', run: (s, d, c) => flowLoop(s, d, c, (agent) => oidcLogin(agent, s.port, 'cert'), s.cert) },
    {
      name: 'refresh (token exchange)',
      run: (s, d, c) => {
        const f = form({ grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: s.refreshToken, subject_token_type: 'urn:ietf:params:oauth:token-type:refresh_token', requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' });
        const headers = { ...f.headers, authorization: `Basic ${Buffer.from('native:').toString('base64')}`, accept: 'application/json' };
        return requestLoop(s, d, c, () => ({ method: 'POST', path: '/oidc/oauth/token', headers, body: f.body }));
      },
    },
    { name: 'service-updates, Bearer token', run: (s, d, c) => requestLoop(s, d, c, () => ({ method: 'GET', path: updates, headers: { authorization: `Bearer ${s.accessToken}`, accept: 'application/json' } })) },
    { name: 'service-updates, zt-session', run: (s, d, c) => requestLoop(s, d, c, () => ({ method: 'GET', path: updates, headers: { 'zt-session': s.ztSession, accept: 'application/json' } })) },
  ];
}

// ---- the two servers -------------------------------------------------------------------------------------------

async function startPortcullis(dataDir: string, keyType: 'ec' | 'rsa') {
  const port = await freePort();
  const child = startExternal(process.execPath, ['dist/main.js', '--data-dir', dataDir, '--address', HOST, '--port', String(port), '--admin-password', PASSWORD, '--server-key-type', keyType], {
    env: { NODE_OPTIONS: '' },
  });
  await outputOf(child).waitLine(/Portcullis ready/, 120_000);
  return { child, pid: child.pid!, port, ca: readFileSync(join(dataDir, 'pki', 'root-ca.cert.pem'), 'utf8') };
}

/** The records both servers get, over REST: users with a password and one identity with a certificate. */
async function prepare(label: Label, server: { port: number; ca: string; pid: number }, admin: { username: string; password: string }): Promise<Side> {
  const { port, ca } = server;
  const api = apiClient(port, ca, 4);
  const r = await fetchOnce(port, ca, 'POST', `${MANAGEMENT}/authenticate?method=password`, { 'content-type': 'application/json' }, JSON.stringify(admin));
  if (r.status !== 200) throw new Error(`${label}: admin login ${r.status}`);
  api.setToken((JSON.parse(r.body.toString('utf8')) as { data: { token: string } }).data.token);
  const users: Side['users'] = [];
  for (let i = 0; i < USERS; i++) {
    const created = await api.must('POST', `${MANAGEMENT}/identities`, { name: `oidc-bench-${i}`, type: 'Default', isAdmin: false }, 201);
    const username = `oidc-bench-user-${i}`;
    await api.must('POST', `${MANAGEMENT}/authenticators`, { method: 'updb', identityId: created.data.id, username, password: PASSWORD }, 201);
    users.push({ username, password: PASSWORD });
  }
  const certIdentity = await api.must('POST', `${MANAGEMENT}/identities`, { name: 'oidc-bench-cert', type: 'Default', isAdmin: false }, 201);
  const cert = await enrollOtt({ api, port, ca }, certIdentity.data.id);
  api.close();
  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca, servername: 'localhost', rejectUnauthorized: false });
  const tokens = await oidcLogin(agent, port, users[0]!);
  agent.destroy();
  const zt = await fetchOnce(port, ca, 'POST', `${CLIENT}/authenticate?method=password`, { 'content-type': 'application/json' }, JSON.stringify(users[1]));
  const ztSession = (JSON.parse(zt.body.toString('utf8')) as { data: { token: string } }).data.token;
  return { label, ...server, users, cert: { cert: cert.certPem, key: cert.keyPem }, refreshToken: tokens.refresh_token, accessToken: tokens.access_token, ztSession };
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function summarize(runs: Figures[]): Figures {
  return { opsPerS: median(runs.map((r) => r.opsPerS)), p50: median(runs.map((r) => r.p50)), p99: median(runs.map((r) => r.p99)), cpuMsPerOp: median(runs.map((r) => r.cpuMsPerOp)), errors: runs.reduce((a, r) => a + r.errors, 0) };
}

export async function runOidcBench(opts: OidcBenchOptions): Promise<OidcBenchResult> {
  const wall0 = performance.now();
  console.log('[oidc] OIDC logins and JWT API sessions, Portcullis and upstream');
  const built = spawnSync(process.execPath, ['scripts/build.mjs', '--if-stale'], { stdio: 'inherit' });
  if (built.status !== 0) throw new Error('the production build failed');
  const tmp = mkdtempSync(join(tmpdir(), 'portcullis-bench-oidc-'));
  let pc: Awaited<ReturnType<typeof startPortcullis>> | undefined;
  let up: Awaited<ReturnType<typeof startUpstream>> | undefined;
  try {
    pc = await startPortcullis(join(tmp, 'portcullis'), opts.keyType);
    mkdirSync(join(tmp, 'upstream'), { recursive: true });
    up = await startUpstream(join(tmp, 'upstream', 'home'));
    const p = await prepare('portcullis', { port: pc.port, ca: pc.ca, pid: pc.pid }, { username: 'admin', password: PASSWORD });
    const u = await prepare('upstream', { port: up.port, ca: up.ca, pid: up.pid }, { username: 'admin', password: BENCH_ADMIN_PASSWORD });
    console.log(`  ready: Portcullis on ${p.port}, upstream on ${u.port}`);
    const results: LoadResult[] = [];
    for (const def of loads()) {
      console.log(`  ${def.name}`);
      const runs: LoadResult['runs'] = [];
      for (let round = 1; round <= opts.rounds; round++) {
        for (const side of [p, u]) {
          await def.run(side, WARMUP_S, opts.concurrency);
          const f = await def.run(side, opts.duration, opts.concurrency);
          runs.push({ server: side.label, round, ...f });
          console.log(`    ${side.label.padEnd(10)} round ${round}: ${fmt(f.opsPerS)} /s, p50 ${ms(f.p50)} p99 ${ms(f.p99)} ms, ${f.cpuMsPerOp.toFixed(2)} ms CPU per operation${f.errors ? `, errors ${f.errors}` : ''}`);
        }
      }
      results.push({ name: def.name, runs, portcullis: summarize(runs.filter((r) => r.server === 'portcullis')), upstream: summarize(runs.filter((r) => r.server === 'upstream')) });
    }
    console.log(`  RSS: Portcullis ${fmt(await settledRssMb(pc.pid))} MB, upstream ${fmt(await settledRssMb(up.pid))} MB`);
    const result: OidcBenchResult = {
      suite: 'oidc',
      date: new Date().toISOString(),
      machine: machine(),
      settings: { ...opts, warmupS: WARMUP_S },
      portcullis: { command: `node dist/main.js --server-key-type ${opts.keyType}`, workers: availableParallelism(), keyType: opts.keyType },
      upstream: { command: 'ziti edge quickstart --no-router', version: zitiVersion() },
      loads: results,
      wallS: (performance.now() - wall0) / 1000,
    };
    writeResult(result);
    return result;
  } finally {
    if (pc) await stopExternal(pc.child, 40_000);
    if (up) await stopUpstream(up);
    rmSync(tmp, { recursive: true, force: true });
  }
}

export function markdown(r: OidcBenchResult): string {
  const m = r.machine;
  const cell = (f: Figures) => `${fmt(f.opsPerS)} | ${ms(f.p50)} / ${ms(f.p99)} | ${f.cpuMsPerOp.toFixed(2)}`;
  return [
    `# OIDC logins and JWT API sessions: Portcullis (${r.portcullis.keyType === 'ec' ? 'EC' : 'RSA'} key) and the upstream controller`,
    '',
    `${r.date.slice(0, 10)} · ${m.cpu}, ${m.cores} cores, Node ${m.node} · upstream ${r.upstream.version}. Portcullis: \`${r.portcullis.command}\` (${r.portcullis.workers} workers); ` +
      `upstream: \`${r.upstream.command}\`. Closed loop, ${r.settings.concurrency} concurrent clients, ${r.settings.duration} s per run after ${r.settings.warmupS} s of warm-up, ` +
      `P U × ${r.settings.rounds}, the median. A login is the Go SDK's four requests on one keep-alive connection. CPU ms per operation: the server's CPU time (all its processes) over the run ÷ the operations completed. ` +
      `Token signing key: Portcullis ${r.portcullis.keyType === 'ec' ? 'EC P-256 (ES256)' : 'RSA-4096 (RS256)'}, upstream's quickstart RSA-4096 (RS256).`,
    '',
    '| Load | upstream /s | upstream p50 / p99 ms | upstream CPU ms/op | Portcullis /s | Portcullis p50 / p99 ms | Portcullis CPU ms/op | P ÷ U (rate) | U ÷ P (CPU per op) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...r.loads.map(
      (l) =>
        `| ${l.name} | ${cell(l.upstream)} | ${cell(l.portcullis)} | ${(l.portcullis.opsPerS / l.upstream.opsPerS).toFixed(2)}× | ${(l.upstream.cpuMsPerOp / l.portcullis.cpuMsPerOp).toFixed(2)}× |`,
    ),
    '',
    ...(r.loads.some((l) => l.portcullis.errors + l.upstream.errors > 0)
      ? [`Errors: ${r.loads.map((l) => `${l.name}: P ${l.portcullis.errors}, U ${l.upstream.errors}`).join('; ')}.`, '']
      : []),
  ].join('\n');
}

function writeResult(r: OidcBenchResult): void {
  mkdirSync(join('bench', 'results'), { recursive: true });
  const base = join('bench', 'results', `oidc-${r.portcullis.keyType}`);
  writeFileSync(`${base}.json`, JSON.stringify(r, null, 2) + '\n');
  const text = markdown(r);
  writeFileSync(`${base}.md`, text);
  console.log('\n' + text);
  console.log(`  written ${base}.json and ${base}.md (${r.wallS.toFixed(0)} s)`);
}
