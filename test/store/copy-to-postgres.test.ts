/**
 * `portcullis copy-to-postgres`, black box: a controller on its embedded SQLite store is given a varied data set
 * through the management API (identities with role attributes, a password, pending ott/updb/ottca enrollments and
 * a completed ott enrollment; services, config types and configs, an identity's service config override; service,
 * edge router and service edge router policies; posture checks; an auth policy; an external JWT signer; a verified
 * CA; edge and transit routers with their enrollments; tags; API sessions of admin and non-admin identities and a
 * client session), and the answers of every GET of the management API over these records are recorded (lists,
 * details, access lists, policy advice). The controller is stopped; the real command runs as a child process into a
 * private PostgreSQL cluster; a controller started on the same data dir with `--database-url` answers the same,
 * accepts the same admin password and every token issued before the move, and finds no integrity error. Bad input:
 * a non-empty target (a second copy) is refused and left as it was, a malformed URL and a missing data dir are
 * refused, and no output ever shows the URL's password.
 *
 * The source is SQLite whatever the suite runs on: the harness reads PORTCULLIS_TEST_DATABASE_URL once, when it is
 * loaded, to give every controller a database of the suite's server; this file removes the variable before loading
 * it (hence the dynamic imports below), passes an explicit empty environment to the controllers and checks the kind
 * of store each one runs on.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import type { TestController } from '../support/controller.ts';
import type { HttpClient, HttpResponse } from '../support/client.ts';

delete process.env.PORTCULLIS_TEST_DATABASE_URL;
const { startTestController, uniqueName, freePort, ADMIN_USER, ADMIN_PASSWORD } = await import('../support/controller.ts');
const { createClient } = await import('../support/client.ts');
const { createUserWithPassword } = await import('../support/factories.ts');
const { startTestPostgres } = await import('../support/postgres.ts');
const { createTestSigner } = await import('../support/external-signer.ts');
const { trustedCa } = await import('../support/third-party-ca.ts');
const { csrFor, identityWithEnrollment, newEcKey } = await import('../support/enrollment.ts');

const REPO = fileURLToPath(new URL('../../', import.meta.url));
/** The command's environment: nothing of the caller's PORTCULLIS_* settings (it would read a data dir or URL from them). */
const COMMAND_ENV = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PORTCULLIS_'))) as NodeJS.ProcessEnv;
/** A password put into the URLs of the failing runs: it must never appear in their output. */
const SECRET = 'Sup3r-Secret-Pw-7731';

interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** `node --import tsx src/main.ts copy-to-postgres ARGS` as a child process (killed after 60 s), `env` added. */
function copyCommand(args: string[], env: Record<string, string> = {}): Promise<CommandResult> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'copy-to-postgres', ...args], {
      cwd: REPO, env: { ...COMMAND_ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

function show(r: CommandResult): string {
  return `exit ${r.code}\n--- stdout\n${r.stdout}--- stderr\n${r.stderr}`;
}

/** A failed run: exit code 1, one clear line on stderr matching `reason`, nothing on stdout, never the password. */
function assertRefused(r: CommandResult, reason: RegExp): void {
  assert.equal(r.code, 1, show(r));
  assert.equal(r.stdout, '', show(r));
  const lines = r.stderr.trim().split('\n');
  assert.equal(lines.length, 1, `one line on stderr\n${show(r)}`);
  assert.match(lines[0]!, reason, show(r));
  assert.ok(!`${r.stdout}${r.stderr}`.includes(SECRET), `the password is not shown\n${show(r)}`);
  assert.ok(!`${r.stdout}${r.stderr}`.includes(encodeURIComponent(SECRET)), `the password is not shown\n${show(r)}`);
}

/** A pattern matching exactly `line`. */
function literally(line: string): RegExp {
  return new RegExp(`^${line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
}

function withPassword(url: string, password = SECRET): string {
  const u = new URL(url);
  u.password = password;
  return u.toString();
}

function onDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

async function withClient<T>(url: string, work: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Every table of a database with its row count and a digest of its rows: equal fingerprints, same contents. */
function fingerprint(url: string): Promise<Record<string, string>> {
  return withClient(url, async (c) => {
    const tables = (
      await c.query<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1")
    ).rows.map((r) => r.name);
    const out: Record<string, string> = {};
    for (const t of tables) {
      const r = await c.query<{ n: string; digest: string | null }>(`SELECT COUNT(*) AS n, md5(string_agg(t::text, E'\\n' ORDER BY t::text)) AS digest FROM "${t}" t`);
      out[t] = `${r.rows[0]!.n}:${r.rows[0]!.digest ?? ''}`;
    }
    return out;
  });
}

// ---- recording the answers ---------------------------------------------------------------------------------------

type Answer = { status: number; body: unknown };
type Answers = Map<string, Answer>;

async function managementGets(mgmt: HttpClient): Promise<string[]> {
  const res = await mgmt.get('/specs/edge-management/spec', { headers: { accept: 'application/json' } });
  assert.equal(res.status, 200, res.text);
  const paths = Object.entries(res.body.paths as Record<string, Record<string, unknown>>).filter(([, ops]) => ops.get !== undefined).map(([p]) => p);
  assert.ok(paths.length > 50, `the management API document lists its GETs (${paths.length})`);
  return paths;
}

/** One GET; a list that does not fit its default page is read again whole. */
async function read(mgmt: HttpClient, path: string): Promise<Answer> {
  let res: HttpResponse = await mgmt.get(path);
  const pagination = res.body?.meta?.pagination;
  if (res.status === 200 && pagination && pagination.totalCount > (res.body.data?.length ?? 0)) {
    res = await mgmt.get(`${path}${path.includes('?') ? '&' : '?'}limit=500`);
    assert.ok(res.body.meta.pagination.totalCount <= 500, `${path}: the data set fits one page`);
  }
  return { status: res.status, body: res.body };
}

/**
 * The answers of every GET of the management API: each collection, then each path with one `{id}` for every id its
 * collection lists (details and access lists), then the policy advice of every identity for every service.
 */
async function record(mgmt: HttpClient): Promise<Answers> {
  const paths = await managementGets(mgmt);
  const answers: Answers = new Map();
  const ids = new Map<string, string[]>();
  for (const p of paths.filter((p) => !p.includes('{'))) {
    const a = await read(mgmt, p);
    answers.set(p, a);
    const data = (a.body as { data?: unknown }).data;
    if (Array.isArray(data)) ids.set(p, data.map((d) => (d as { id?: unknown }).id).filter((id): id is string => typeof id === 'string'));
  }
  for (const p of paths) {
    const m = /^(.*)\/\{id\}(\/[^{}]*)?$/.exec(p);
    if (!m) continue;
    const of = ids.get(m[1]!);
    assert.ok(of !== undefined, `${p}: the collection ${m[1]} is read first`);
    for (const id of of) {
      const path = p.replace('{id}', id);
      answers.set(path, await read(mgmt, path));
    }
  }
  assert.ok(paths.includes('/identities/{id}/policy-advice/{serviceId}'));
  for (const identity of ids.get('/identities') ?? []) {
    for (const service of ids.get('/services') ?? []) {
      const path = `/identities/${identity}/policy-advice/${service}`;
      answers.set(path, await read(mgmt, path));
    }
  }
  return answers;
}

/** Where two JSON values differ, as JSON pointers (at most `max`). */
function differences(a: unknown, b: unknown, at = '', out: string[] = [], max = 20): string[] {
  if (out.length >= max) return out;
  if (a === b) return out;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) {
    out.push(`${at || '/'}: ${JSON.stringify(a)} → ${JSON.stringify(b)}`);
    return out;
  }
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) differences((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${at}/${k}`, out, max);
  return out;
}

/** A JWT as its header and claims (the signature differs at each signing: ES256 is randomized). */
function jwtParts(token: string): { header: unknown; claims: unknown } {
  const [header, claims] = token.split('.').slice(0, 2).map((part) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')));
  return { header, claims };
}

/** `value` with every string's `localhost:PORT` / `127.0.0.1:PORT` of the controller's own port made `…:PORT`. */
function withoutPort(value: unknown, port: number): unknown {
  if (typeof value === 'string') return value.split(`localhost:${port}`).join('localhost:PORT').split(`127.0.0.1:${port}`).join('127.0.0.1:PORT');
  if (Array.isArray(value)) return value.map((v) => withoutPort(v, port));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutPort(v, port)]));
  return value;
}

function without(value: any, ...fields: string[]): any {
  const out = { ...value };
  for (const f of fields) delete out[f];
  return out;
}

/**
 * The answers as compared: every GET of the management API, with what legitimately differs after the move, and only
 * that, set aside:
 * - the controller's own port (the new one listens on another free port): in the API base URLs of `/`, `/version`,
 *   `/controllers`, the API documents (`/specs/…`), and the JWTs signed when asked (`/network-jwts`, `/cas/{id}/jwt`:
 *   compared by header and claims, ES256 signatures being randomized). Stored JWTs (enrollments) are compared as they
 *   are: they keep the port they were issued with;
 * - `buildDate` of `/` and `/version`, `createdAt`/`updatedAt` of the API documents (`/specs`): without a build, the
 *   time the process loaded them; the `jti` of `/network-jwts`: random at each signing;
 * - the `requestId` of error answers (the admin has no MFA: 404 on `/current-identity/mfa…`): one per request;
 * - `/controllers` itself: a controller alone on SQLite lists none, on PostgreSQL the live ones; the test checks that
 *   the moved controller lists itself under the id the copied database had;
 * - API sessions created after the move (the harness's admin login on the new controller): out of `/api-sessions` (and
 *   its count), `/summary`'s count, their own paths and the admin's `apiSessionPostureData`;
 * - `lastActivityAt`/`cachedLastActivityAt` (and the `expiresAt`/`expirationSeconds` following from them) of the API
 *   sessions the recording itself and the reads after it use (the admin's and the user's): every request moves them,
 *   and the stop writes the last marks to the store. Every other session keeps them exactly.
 */
function comparable(answers: Answers, ctx: { port: number; used: Set<string>; added: Set<string> }): Answers {
  const out: Answers = new Map();
  const activity = (session: Record<string, unknown>) =>
    ctx.used.has(session.id as string) ? without(session, 'lastActivityAt', 'cachedLastActivityAt', 'expiresAt', 'expirationSeconds') : session;
  for (const [path, answer] of answers) {
    const body = answer.body as any;
    const data = body?.data;
    const session = /^\/api-sessions\/([^/]+)/.exec(path);
    if (session && ctx.added.has(session[1]!)) continue;
    let compared: unknown = body;
    if (answer.status !== 200) {
      compared = body?.error ? { ...body, error: without(body.error, 'requestId') } : body;
    } else if (path === '/specs' || /^\/specs\/[^/]+$/.test(path)) {
      const strip = (d: unknown) => without(d, 'createdAt', 'updatedAt');
      compared = { ...body, data: Array.isArray(data) ? data.map(strip) : strip(data) };
    } else if (path === '/' || path === '/version') {
      compared = { ...body, data: without(data, 'buildDate') };
    } else if (path === '/controllers' || path.startsWith('/controllers/')) {
      continue;
    } else if (path === '/summary') {
      compared = { ...body, data: { ...data, apiSessions: data.apiSessions - ctx.added.size } };
    } else if (path === '/network-jwts') {
      compared = {
        ...body,
        data: data.map((j: any) => {
          const { header, claims } = jwtParts(j.token);
          return { ...j, token: { header, claims: without(claims, 'jti') } };
        }),
      };
    } else if (/^\/cas\/[^/]+\/jwt$/.test(path)) {
      compared = jwtParts(body as string);
    } else if (path === '/api-sessions') {
      const kept = (data as Array<Record<string, unknown>>).filter((s) => !ctx.added.has(s.id as string)).map(activity);
      const pagination = { ...body.meta.pagination, totalCount: body.meta.pagination.totalCount - (data.length - kept.length) };
      compared = { ...body, data: kept, meta: { ...body.meta, pagination } };
    } else if (session || path === '/current-api-session') {
      compared = { ...body, data: activity(data) };
    } else if (/^\/identities\/[^/]+\/posture-data$/.test(path) && data?.apiSessionPostureData) {
      const kept = Object.fromEntries(Object.entries(data.apiSessionPostureData as Record<string, unknown>).filter(([id]) => !ctx.added.has(id)));
      compared = { ...body, data: { ...data, apiSessionPostureData: kept } };
    }
    out.set(path, { status: answer.status, body: withoutPort(compared, ctx.port) });
  }
  return out;
}

// ---- the source controller and its data set ----------------------------------------------------------------------

const dataDir = mkdtempSync(join(tmpdir(), 'portcullis-copy-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));
const server = await startTestPostgres();
after(() => server.stop());
const target = server.url;

const source: TestController = await startTestController({ dataDir, env: {} });
/** A second SQLite controller, with a value PostgreSQL can not hold (a NUL character, which SQLite text takes). */
const unfitDir = mkdtempSync(join(tmpdir(), 'portcullis-copy-unfit-'));
after(() => rmSync(unfitDir, { recursive: true, force: true }));
const unfit: TestController = await startTestController({ dataDir: unfitDir, env: {} });

async function create(mgmt: HttpClient, path: string, body: Record<string, unknown>): Promise<string> {
  const res = await mgmt.post(path, body);
  assert.equal(res.status, 201, `${path}: ${res.text}`);
  return res.body.data.id as string;
}

interface Recorded {
  answers: Answers;
  /** The port of the controller the answers came from. */
  port: number;
  adminToken: string;
  /** The API sessions the recording itself and the reads after it use (the admin's, the user's client session). */
  usedSessions: Set<string>;
  user: { id: string; username: string; password: string; token: string; apiSession: Answer; currentIdentity: Answer; services: Answer };
  certIdentity: { id: string; cert: string; keyPem: string };
  counts: Record<string, number>;
  copied?: boolean;
}
let recorded: Recorded | undefined;

describe('copy-to-postgres: moving a controller from SQLite to PostgreSQL', () => {
  it('builds a varied data set on a SQLite controller and records every answer', async () => {
    assert.equal(source.controller.store.kind, 'sqlite');
    assert.equal(source.databaseUrl, undefined);
    const m = source.mgmt;
    const signer = await createTestSigner('copy-idp');
    const signerId = await create(m, '/external-jwt-signers', {
      name: uniqueName('signer'), issuer: uniqueName('https://idp.example.com/'), audience: 'portcullis', enabled: true, certPem: signer.certPem,
      claimsProperty: 'email', useExternalId: true, tags: { idp: 'corporate' },
    });
    const authPolicyId = await create(m, '/auth-policies', {
      name: uniqueName('auth-policy'),
      primary: {
        cert: { allowed: true, allowExpiredCerts: false },
        updb: { allowed: true, minPasswordLength: 8, requireSpecialChar: false, requireNumberChar: true, requireMixedCase: true, maxAttempts: 5, lockoutDurationMinutes: 15 },
        extJwt: { allowed: true, allowedSigners: [signerId] },
      },
      secondary: { requireTotp: false },
      tags: { tier: 'staff' },
    });
    const { id: caId } = await trustedCa(m, { identityRoles: ['from-ca'], identityNameFormat: '[caName]-[commonName]', externalIdClaim: { location: 'COMMON_NAME', matcher: 'PREFIX', matcherCriteria: 'user-', parser: 'NONE', parserCriteria: '', index: 0 } });
    const configTypeId = await create(m, '/config-types', {
      name: uniqueName('ct'),
      schema: { type: 'object', properties: { host: { type: 'string' }, port: { type: 'integer' } }, required: ['host'] },
      tags: { owner: 'platform' },
    });
    const configA = await create(m, '/configs', {
      name: uniqueName('cfg'), configTypeId,
      data: { host: 'db.internal', port: 5432, weight: 0.25, nested: { list: [1, 'two', null, true], unicode: 'Zürich ✓ 東京' } },
      tags: { env: 'prod' },
    });
    const configB = await create(m, '/configs', { name: uniqueName('cfg'), configTypeId, data: { host: 'override.internal' } });
    const web = await create(m, '/services', { name: uniqueName('web'), roleAttributes: ['web', 'public'], configs: [configA], encryptionRequired: true, tags: { app: 'web', zeta: 'last', alpha: true } });
    const db = await create(m, '/services', { name: uniqueName('db'), roleAttributes: ['db'], encryptionRequired: false, terminatorStrategy: 'weighted', maxIdleTimeMillis: 60000 });
    const secure = await create(m, '/services', { name: uniqueName('secure'), roleAttributes: ['secure'], encryptionRequired: true });
    const postureDomain = await create(m, '/posture-checks', { name: uniqueName('pc-domain'), typeId: 'DOMAIN', domains: ['corp.example'], roleAttributes: ['pc-corp'], tags: { check: 'domain' } });
    await create(m, '/posture-checks', { name: uniqueName('pc-mfa'), typeId: 'MFA', timeoutSeconds: 300, promptOnWake: true, roleAttributes: ['pc-mfa'] });

    const user = await createUserWithPassword(source, {
      roleAttributes: ['staff', 'web-users'], authPolicyId, tags: { dept: 'engineering' }, appData: { shell: 'zsh' },
      defaultHostingCost: 3, serviceHostingCosts: { [db]: 10 }, serviceHostingPrecedences: { [db]: 'required' },
    });
    const operator = await createUserWithPassword(source, { roleAttributes: ['staff', 'ops'], isAdmin: false });
    const pendingOtt = await identityWithEnrollment(source, { ott: true });
    await identityWithEnrollment(source, { updb: uniqueName('enrollee') });
    await identityWithEnrollment(source, { ottca: caId });
    // An identity that completed its ott enrollment: a certificate authenticator issued by the controller's PKI.
    const enrolled = await identityWithEnrollment(source, { ott: true });
    const key = await newEcKey();
    const enrollRes = await source.http.post('/edge/client/v1/enroll/ott', { token: enrolled.enrollment.ott.token, clientCsr: await csrFor(key, enrolled.id) });
    assert.equal(enrollRes.status, 200, enrollRes.text);
    assert.ok(pendingOtt.enrollment.ott.token);
    const patched = await m.patch(`/identities/${enrolled.id}`, { roleAttributes: ['devices', 'staff'], tags: { enrolled: true } });
    assert.equal(patched.status, 200, patched.text);

    const overrides = await m.post(`/identities/${user.id}/service-configs`, [{ serviceId: web, configId: configB }]);
    assert.equal(overrides.status, 200, overrides.text);

    const edge = await create(m, '/edge-routers', { name: uniqueName('er'), roleAttributes: ['edge', 'east'], cost: 5, noTraversal: false, isTunnelerEnabled: true, tags: { rack: 'r1' } });
    await create(m, '/edge-routers', { name: uniqueName('er'), roleAttributes: ['edge', 'west'], disabled: false });
    await create(m, '/transit-routers', { name: uniqueName('tr'), cost: 9, tags: { role: 'transit' } });

    await create(m, '/service-policies', { name: uniqueName('sp-dial'), type: 'Dial', semantic: 'AnyOf', identityRoles: ['#staff'], serviceRoles: ['#web', '#db'], tags: { policy: 'dial' } });
    await create(m, '/service-policies', { name: uniqueName('sp-bind'), type: 'Bind', semantic: 'AllOf', identityRoles: [`@${operator.id}`], serviceRoles: [`@${db}`] });
    await create(m, '/service-policies', { name: uniqueName('sp-secure'), type: 'Dial', semantic: 'AnyOf', identityRoles: ['#devices'], serviceRoles: ['#secure'], postureCheckRoles: ['#pc-corp', `@${postureDomain}`] });
    await create(m, '/edge-router-policies', { name: uniqueName('erp'), semantic: 'AnyOf', identityRoles: ['#staff'], edgeRouterRoles: ['#edge'] });
    await create(m, '/edge-router-policies', { name: uniqueName('erp-all'), semantic: 'AllOf', identityRoles: ['#all'], edgeRouterRoles: [`@${edge}`] });
    await create(m, '/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AnyOf', serviceRoles: ['#all'], edgeRouterRoles: ['#east'], tags: { scope: 'east' } });

    // The non-admin logs in on the client API (an API session) and opens a session to the web service.
    const login = await source.http.post('/edge/client/v1/authenticate?method=password', { username: user.username, password: user.password });
    assert.equal(login.status, 200, login.text);
    const token = login.body.data.token as string;
    const client = createClient(`https://127.0.0.1:${source.port}/edge/client/v1`, source.ca, { token });
    const session = await client.post('/sessions', { serviceId: web, tags: { purpose: 'copy' } });
    assert.equal(session.status, 201, session.text);

    const adminSession = await m.get('/current-api-session');
    assert.equal(adminSession.status, 200, adminSession.text);
    const answers = await record(m);
    const apiSession = await client.get('/current-api-session');
    assert.equal(apiSession.status, 200, apiSession.text);
    const currentIdentity = await client.get('/current-identity');
    const services = await client.get('/services');
    assert.equal(services.body.meta.pagination.totalCount, 2, services.text);
    recorded = {
      answers,
      port: source.port,
      adminToken: source.adminToken,
      usedSessions: new Set([adminSession.body.data.id as string, login.body.data.id as string]),
      user: { ...user, token, apiSession: { status: 200, body: apiSession.body }, currentIdentity: { status: currentIdentity.status, body: currentIdentity.body }, services: { status: services.status, body: services.body } },
      certIdentity: { id: enrolled.id, cert: enrollRes.body.data.cert, keyPem: key.keyPem },
      counts: {},
    };
    await source.stop();

    // What the command should report: every table's rows (read from the stopped controller's file).
    const file = new BetterSqlite3(join(dataDir, 'portcullis.db'), { readonly: true });
    try {
      const tables = file.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations'").pluck().all() as string[];
      for (const t of tables) recorded.counts[t] = file.prepare(`SELECT COUNT(*) FROM "${t}"`).pluck().get() as number;
    } finally {
      file.close();
    }
    assert.ok(answers.size > 150, `answers recorded: ${answers.size}`);
  });

  it('copies the stopped controller\'s store with the real command', async () => {
    assert.ok(recorded, 'the data set was recorded');
    // The server trusts its local connections: the password in the URL is not checked, but must not be shown.
    const r = await copyCommand(['--data-dir', dataDir, '--database-url', withPassword(target)]);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.stderr, '', show(r));
    assert.ok(!r.stdout.includes(SECRET), show(r));
    const lines = r.stdout.trim().split('\n');
    const summary = lines.at(-2) ?? '';
    const m = /^copied (\d+) rows of (\d+) tables \(schema version (\d+)\) in \d+ ms$/.exec(summary);
    assert.ok(m, `the summary line\n${show(r)}`);
    assert.match(lines.at(-1)!, literally(`start the controller with --data-dir ${dataDir} --database-url <the same URL>`));
    // One line per non-empty table, as many rows as the SQLite file has.
    const reported = Object.fromEntries(lines.slice(0, -2).map((l) => { const [t, n] = l.split(': '); return [t!, Number(n)]; }));
    const nonEmpty = Object.fromEntries(Object.entries(recorded.counts).filter(([, n]) => n > 0));
    assert.deepEqual(reported, nonEmpty, show(r));
    assert.equal(Number(m[1]), Object.values(recorded.counts).reduce((a, b) => a + b, 0));
    assert.equal(Number(m[2]), Object.keys(recorded.counts).length);
    // The target holds as many rows of each table.
    const print = await fingerprint(target);
    for (const [t, n] of Object.entries(recorded.counts)) assert.equal(Number(print[t]?.split(':')[0]), n, `rows of ${t} on PostgreSQL`);
    recorded.copied = true;
  });


  it('a controller on the copy answers as the original did, with the same credentials and tokens', async (t) => {
    assert.ok(recorded?.copied, 'the store was copied');
    const rec = recorded;
    // The harness logs in as the admin with ADMIN_PASSWORD (the password created on SQLite): it fails the start if refused.
    const moved = await startTestController({ dataDir, env: {}, extraArgs: ['--database-url', target] });
    assert.equal(moved.controller.store.kind, 'postgres');
    const root = `https://127.0.0.1:${moved.port}`;
    const asOldAdmin = createClient(`${root}/edge/management/v1`, moved.ca, { token: rec.adminToken });
    const asUser = createClient(`${root}/edge/client/v1`, moved.ca, { token: rec.user.token });
    const harnessSession = await moved.mgmt.get('/current-api-session');
    assert.equal(harnessSession.status, 200, harnessSession.text);
    const newSessions = new Set([harnessSession.body.data.id as string]);
    assert.ok(!rec.usedSessions.has(harnessSession.body.data.id), 'a new API session');

    await t.test('every recorded answer is the same', async () => {
      const answers = await record(asOldAdmin);
      const before = comparable(rec.answers, { port: rec.port, used: rec.usedSessions, added: new Set() });
      const now = comparable(answers, { port: moved.port, used: rec.usedSessions, added: newSessions });
      const problems: string[] = [];
      for (const [path, answer] of before) {
        const after = now.get(path);
        if (after === undefined) problems.push(`${path}: not read after the move`);
        else for (const d of differences(answer, after)) problems.push(`${path} ${d}`);
      }
      for (const path of now.keys()) if (!before.has(path)) problems.push(`${path}: new after the move`);
      assert.deepEqual(problems, []);
      assert.ok(before.size > 150, `answers compared: ${before.size}`);
      // Alone on SQLite it listed none; on PostgreSQL it lists itself, under the id the copied database had.
      assert.deepEqual((rec.answers.get('/controllers')?.body as { data: unknown[] }).data, []);
      const listed = await asOldAdmin.get('/controllers');
      const copiedId = await moved.controller.store.value<string>("SELECT value FROM controller_facts WHERE key = 'instance-id'");
      assert.deepEqual(listed.body.data.map((c: { id: string }) => c.id), [copiedId]);
      assert.equal(listed.headers['ziti-instance-id'], copiedId);
    });

    await t.test('the admin password and the users\' passwords log in; a wrong one does not', async () => {
      const admin = await moved.http.post('/edge/management/v1/authenticate?method=password', { username: ADMIN_USER, password: ADMIN_PASSWORD });
      assert.equal(admin.status, 200, admin.text);
      assert.equal(admin.body.data.identity.id, (rec.answers.get('/current-identity')!.body as { data: { id: string } }).data.id);
      const wrong = await moved.http.post('/edge/management/v1/authenticate?method=password', { username: ADMIN_USER, password: `${ADMIN_PASSWORD}-not` });
      assert.equal(wrong.status, 401, wrong.text);
      const user = await moved.http.post('/edge/client/v1/authenticate?method=password', { username: rec.user.username, password: rec.user.password });
      assert.equal(user.status, 200, user.text);
      assert.equal(user.body.data.identity.id, rec.user.id);
    });

    await t.test('API session tokens issued on SQLite still work', async () => {
      const current = await asUser.get('/current-api-session');
      assert.equal(current.status, 200, current.text);
      const strip = (body: any) => {
        // Activity and the expiry computed from it move with every use of the session.
        const { lastActivityAt: _l, cachedLastActivityAt: _c, expiresAt: _e, expirationSeconds: _s, ...rest } = body.data;
        return { ...body, data: rest };
      };
      assert.deepEqual(strip(current.body), strip(rec.user.apiSession.body));
      assert.ok(Date.parse(current.body.data.expiresAt) >= Date.parse((rec.user.apiSession.body as any).data.expiresAt));
      const identity = await asUser.get('/current-identity');
      assert.deepEqual({ status: identity.status, body: identity.body }, rec.user.currentIdentity);
      const services = await asUser.get('/services');
      assert.deepEqual({ status: services.status, body: services.body }, rec.user.services);
      const admin = await asOldAdmin.get('/current-api-session');
      assert.equal(admin.status, 200, admin.text);
      assert.ok(rec.usedSessions.has(admin.body.data.id));
    });

    await t.test('a certificate the controller issued on SQLite authenticates', async () => {
      const res = await moved.http.post('/edge/client/v1/authenticate?method=cert', undefined, { cert: rec.certIdentity.cert, key: rec.certIdentity.keyPem });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.data.identity.id, rec.certIdentity.id);
    });

    await t.test('the data integrity check finds no error', async () => {
      const started = await moved.mgmt.post('/database/check-data-integrity');
      assert.equal(started.status, 202, started.text);
      let results: any;
      for (let i = 0; i < 300; i++) {
        const res = await moved.mgmt.get('/database/data-integrity-results');
        assert.equal(res.status, 200, res.text);
        results = res.body.data;
        if (!results.inProgress && results.endTime) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(results.inProgress, false, JSON.stringify(results));
      assert.equal(results.error, null, JSON.stringify(results));
      assert.equal(results.tooManyErrors, false, JSON.stringify(results));
      assert.deepEqual(results.results ?? [], [], JSON.stringify(results));
    });
  });
});

describe('copy-to-postgres: what it refuses', () => {
  it('a second copy into the now non-empty database fails with one line and changes nothing', async () => {
    assert.ok(recorded?.copied, 'the store was copied');
    const before = await fingerprint(target);
    const r = await copyCommand(['--data-dir', dataDir, '--database-url', withPassword(target)]);
    assertRefused(r, /^the target database is not empty \(it has tables\); copy into a new, empty database$/);
    assert.deepEqual(await fingerprint(target), before);
  });

  it('a malformed URL, with the reason and without the password', async () => {
    const cases: Array<[string, RegExp]> = [
      [`postgres://portcullis:${SECRET}@127.0.0.1:notaport/portcullis_test`, /^--database-url is not a URL/],
      [`mysql://portcullis:${SECRET}@127.0.0.1:5432/portcullis_test`, /^--database-url must start with postgres:\/\/ or postgresql:\/\//],
      [`postgres://portcullis:${SECRET}@127.0.0.1:5432/`, /^--database-url names no database/],
      [`postgres://portcullis:${SECRET}@127.0.0.1:5432/portcullis_test?sslmode=sometimes`, /^invalid PostgreSQL URL \(sslmode=sometimes is not supported/],
      [`postgres://portcullis:${SECRET}@127.0.0.1:5432/portcullis_test?password=${SECRET}`, /^invalid PostgreSQL URL \(unsupported parameter "password"\)/],
    ];
    for (const [url, reason] of cases) assertRefused(await copyCommand(['--data-dir', dataDir, '--database-url', url]), reason);
    assertRefused(await copyCommand(['--data-dir', dataDir]), /^copy-to-postgres needs --database-url/);
  });

  it('--help, a misspelt option and a stray argument; the URL from PORTCULLIS_DATABASE_URL: no password shown', async () => {
    const env = { PORTCULLIS_DATABASE_URL: withPassword(target) };
    const help = await copyCommand(['--help'], env);
    assert.equal(help.code, 0, show(help));
    assert.match(help.stdout, /^Usage: portcullis copy-to-postgres \[options\]/, show(help));
    assert.equal(help.stderr, '', show(help));
    assert.ok(!help.stdout.includes(SECRET), `the help does not show the URL of the environment\n${show(help)}`);
    assertRefused(await copyCommand(['--data-dir', dataDir, `--databse-url=${withPassword(target)}`]), /^error: unknown option '--databse-url=postgres:\/\/portcullis:\*\*\*@127\.0\.0\.1:\d+\/portcullis_test'$/);
    assertRefused(await copyCommand(['--data-dir', dataDir, withPassword(target)]), /^error: too many arguments/);
    const missing = join(dataDir, 'no-such-dir');
    assertRefused(await copyCommand(['--data-dir', missing], env), literally(`no SQLite store in ${missing} (portcullis.db is missing)`));
  });

  it('a missing data dir, an unknown database and a server that is not there, leaving an empty target empty', async () => {
    await withClient(onDatabase(target, 'postgres'), (c) => c.query('CREATE DATABASE copy_empty'));
    const empty = onDatabase(target, 'copy_empty');
    const missing = join(dataDir, 'no-such-dir');
    assertRefused(await copyCommand(['--data-dir', missing, '--database-url', withPassword(empty)]), literally(`no SQLite store in ${missing} (portcullis.db is missing)`));
    assertRefused(
      await copyCommand(['--data-dir', dataDir, '--database-url', withPassword(onDatabase(target, 'no_such_database'))]),
      /^cannot connect to PostgreSQL at 127\.0\.0\.1:\d+\/no_such_database as portcullis: .*does not exist/,
    );
    const nobody = new URL(target);
    nobody.port = String(await freePort());
    assertRefused(
      await copyCommand(['--data-dir', dataDir, '--database-url', withPassword(nobody.toString())]),
      /^cannot connect to PostgreSQL at 127\.0\.0\.1:\d+\/portcullis_test as portcullis: connection refused$/,
    );
    assert.deepEqual(await fingerprint(empty), {}, 'the empty database is still empty');
  });

  it('a copy that fails part-way copies nothing and says what to do next', async () => {
    assert.equal(unfit.controller.store.kind, 'sqlite');
    // The API refuses the NUL character on both stores; a store written by an older version may still hold one.
    const res = await unfit.mgmt.post('/services', { name: uniqueName('unfit'), encryptionRequired: true, tags: { note: 'fine' } });
    assert.equal(res.status, 201, res.text);
    await unfit.stop();
    const db = new BetterSqlite3(join(unfitDir, 'portcullis.db'));
    try {
      db.prepare('UPDATE services SET tags = ? WHERE id = ?').run(JSON.stringify({ note: 'nul \u0000 inside' }), res.body.data.id);
    } finally {
      db.close();
    }
    await withClient(onDatabase(target, 'postgres'), (c) => c.query('CREATE DATABASE copy_partway'));
    const partway = onDatabase(target, 'copy_partway');
    const r = await copyCommand(['--data-dir', unfitDir, '--database-url', withPassword(partway)]);
    assertRefused(r, /^the copy failed and nothing was copied \(rows of services: .+\); the target now holds an empty schema: drop and re-create the database before trying again$/);
    const rows = await withClient(partway, async (c) => (await c.query<{ n: number }>('SELECT (SELECT COUNT(*) FROM identities) + (SELECT COUNT(*) FROM services) + (SELECT COUNT(*) FROM api_sessions) AS n')).rows[0]!.n);
    assert.equal(Number(rows), 0, 'no identity, service or API session was copied');
    assertRefused(await copyCommand(['--data-dir', unfitDir, '--database-url', withPassword(partway)]), /^the target database is not empty/);
  });
});
