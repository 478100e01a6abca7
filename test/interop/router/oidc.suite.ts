/**
 * Upstream v2 clients with OIDC logins and JWT API sessions: this suite runs a Portcullis of its own that lists
 * OIDC_AUTH in /version, with 30-second access tokens, so every Go client logs in through /oidc and refreshes
 * during the suite.
 *
 * - The `ziti` CLI (its embedded Go SDK) logs in through /oidc and manages the network with a Bearer token.
 * - The Go SDK (`sdkecho`) hosts and dials through an upstream edge router: a certificate identity binds, one dials;
 *   a password identity (its API-session certificate names its JWT session) dials too.
 * - A connection stays open across two refreshes of the dialer's access token (the SDK hands each new token to the
 *   router), and keeps carrying data.
 * - Ending the dialer's API session ends its open connection; the SDK logs in again for its next dial.
 * - TOTP through OIDC: an identity with MFA answers the code in its login; one whose auth policy requires TOTP
 *   enrolls during its login (the Go SDK's enrollment listener).
 * - `ziti tunnel host` and `ziti tunnel proxy` carry HTTP through the router with JWT sessions.
 * - The Python package's C SDK (openziti 0.6.0) keeps logging in with a zt-session, and dials beside them.
 *
 * Run by `npm run test:interop` (suite `router`; `--only router/oidc`). Loopback only.
 */
import { afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { Secret, TOTP } from 'otpauth';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  cliConfigDir, createEdgeRouter, enrollRouter, freePort, runProcess, startProcess, startRouter, waitFor, workDir, writeRouterConfig, ziti, zitiCli,
  type EdgeRest, type PeerProcess, type RouterHandle,
} from './harness.ts';
import { closeServer, enrolledIdentity, fetchPage, ownDatabase, routerSuite, waitListening, waitOnlineSynced, type Identity } from './kit.ts';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..', '..');
const dataDir = mkdtempSync(join(tmpdir(), 'portcullis-oidc-'));
const adminPassword = `Oidc-${Math.random().toString(36).slice(2)}-Pw1!`;
/** Access-token lifetime of this suite's controller: the Go SDK refreshes 10 s before expiry, every 20 s here. */
const ACCESS_TOKEN_SECONDS = 30;
let port = 0;
let controllerProcess: ChildProcess | undefined;
let controllerLog = '';
let database: { url: string; drop(): Promise<void> } | undefined;
let httpServer: Server | undefined;


function startController(): void {
  const child = spawn(
    process.execPath,
    ['dist/main.js', '--data-dir', join(dataDir, 'data'), '--address', '127.0.0.1', '--port', String(port), '--advertise', '127.0.0.1',
      '--admin-user', 'admin', '--admin-password', adminPassword, '--log-level', 'info', '--oidc-auth',
      // An RSA key: the Python package's C SDK enrolls only with RS256 enrollment JWTs (the OIDC tokens are RS256 too).
      '--server-key-type', 'rsa'],
    {
      cwd: repo,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PORTCULLIS_DATABASE_URL: database?.url ?? '', PORTCULLIS_OIDC_ACCESS_TOKEN_SECONDS: String(ACCESS_TOKEN_SECONDS) },
    },
  );
  const keep = (chunk: Buffer) => {
    controllerLog = (controllerLog + chunk.toString()).slice(-200_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  controllerProcess = child;
}

let admin: EdgeRest;
let sdkecho = '';
let router: RouterHandle;
const service = 'oidc-echo';

const suite = routerSuite({
  setup: async () => {
    port = await freePort();
    database = await ownDatabase('oidc');
    startController();
    await waitFor(() => controllerLog.includes('Portcullis ready') || undefined, 60_000, { what: 'the controller to start', lastSeen: () => controllerLog.slice(-2000) });
    process.env.PORTCULLIS_URL = `https://127.0.0.1:${port}`;
    process.env.PORTCULLIS_CA_FILE = join(dataDir, 'data', 'pki', 'root-ca.cert.pem');
    process.env.PORTCULLIS_ADMIN_USER = 'admin';
    process.env.PORTCULLIS_ADMIN_PASSWORD = adminPassword;
  },
  sdkecho: true,
  onEnd: async () => {
    await closeServer(httpServer);
    const child = controllerProcess;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((res) => child.once('exit', () => res()));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
    await database?.drop();
  },
});
before(async () => {
  ({ admin, sdkecho } = await suite.ready);
});
afterEach((t) => {
  if ((t as unknown as { passed?: boolean }).passed === false) console.log(`--- controller log (tail) ---\n${controllerLog.slice(-6000)}`);
});

/** The OIDC client of each API session of an identity (null for a zt-session), read from the controller's store. */
async function loginKinds(identityId: string): Promise<Array<string | null>> {
  const sql = 'SELECT oidc_client_id FROM api_sessions WHERE identity_id = $1';
  if (database) {
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      return (await client.query(sql, [identityId])).rows.map((r: { oidc_client_id: string | null }) => r.oidc_client_id);
    } finally {
      await client.end();
    }
  }
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(join(dataDir, 'data', 'portcullis.db'), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare(sql.replace('$1', '?')).all(identityId) as Array<{ oidc_client_id: string | null }>).map((r) => r.oidc_client_id);
  } finally {
    db.close();
  }
}

/** An sdkecho session (one SDK context driven line by line). */
function sdkSession(name: string, identity: Identity): PeerProcess {
  return startProcess(name, sdkecho, ['session', identity.file, service], { stdin: true });
}

/** `whoami` of an sdkecho session: its API session kind, id and token digest. */
async function whoami(p: PeerProcess): Promise<{ kind: string; id: string; digest: string }> {
  const line = await p.ask('whoami', 20_000, /^(session|error)/);
  const m = /^session (\S+) (\S+) (\S+)$/.exec(line);
  assert.ok(m, `whoami answered: ${line}`);
  return { kind: m[1]!, id: m[2]!, digest: m[3]! };
}

/**
 * The CLI keeps the access token of its last `ziti edge login` and does not refresh it between commands: with this
 * suite's 30-second tokens it logs in again before the commands of a test.
 */
function cliLogin(): void {
  zitiCli(['edge', 'login', `127.0.0.1:${port}`, '-u', 'admin', '-p', adminPassword, '--ca', process.env.PORTCULLIS_CA_FILE!, '-y']);
}

describe('OIDC logins and JWT API sessions with upstream clients', () => {
  let hostId: Identity;
  let dialer: Identity;
  let host: PeerProcess | undefined;

  it('advertises OIDC_AUTH, and the ziti CLI works with the token its OIDC login got', async () => {
    const version = await admin.get('/version');
    assert.deepEqual(version.body.data.capabilities, ['OIDC_AUTH']);
    // The CLI logged in when the suite started (`ziti edge login`); what it keeps is an access token.
    const files = readdirSync(cliConfigDir()).filter((f) => f.endsWith('.json'));
    const stored = files.map((f) => readFileSync(join(cliConfigDir(), f), 'utf8')).join('\n');
    assert.match(stored, /"ey[A-Za-z0-9_-]+\.ey/, 'the CLI stored a JWT');
    const listed = zitiCli(['edge', 'list', 'identities', 'isDefaultAdmin=true', '-j']);
    assert.match(listed.stdout, /"isDefaultAdmin":\s*true/);
  });

  it('sets up a router, a certificate host and a dialer; the host binds and the dialer dials with JWT sessions', async () => {
    cliLogin();
    router = await createEdgeRouter('oidc-r1', { tunneler: true });
    const config = await writeRouterConfig(router);
    enrollRouter(config.configFile, router.jwtFile);
    const proc = startRouter(config.configFile);
    zitiCli(['edge', 'create', 'service', service]);
    zitiCli(['edge', 'create', 'service-policy', `${service}-bind`, 'Bind', '--service-roles', `@${service}`, '--identity-roles', '#oidc-hosts']);
    zitiCli(['edge', 'create', 'service-policy', `${service}-dial`, 'Dial', '--service-roles', `@${service}`, '--identity-roles', '#oidc-dialers']);
    zitiCli(['edge', 'create', 'edge-router-policy', 'oidc-all', '--edge-router-roles', '#all', '--identity-roles', '#all']);
    zitiCli(['edge', 'create', 'service-edge-router-policy', 'oidc-all', '--edge-router-roles', '#all', '--service-roles', '#all']);
    hostId = await enrolledIdentity(admin, 'oidc-host', ['oidc-hosts']);
    dialer = await enrolledIdentity(admin, 'oidc-dialer', ['oidc-dialers']);
    await waitOnlineSynced(admin, router, proc, 30_000);
    host = startProcess('oidc-host', sdkecho, ['host', hostId.file, service]);
    await host.waitForLine('bound', 60_000);
    const d = sdkSession('oidc-dialer', dialer);
    await d.waitForLine('ready', 60_000);
    const me = await whoami(d);
    assert.equal(me.kind, 'jwt', 'the Go SDK logged in through /oidc');
    const session = await admin.data(`/api-sessions/${me.id}`);
    assert.equal(session?.identityId, dialer.id, 'the JWT session is listed as an API session of the dialer');
    assert.equal(await d.ask('dial 5', 60_000), 'ok 5');
    d.send('quit');
    await d.exited(20_000);
  });

  it('keeps an open connection across two refreshes of the access token', async () => {
    const d = startProcess('oidc-long', sdkecho, ['session', dialer.file, service], { stdin: true, env: { SDKECHO_LOG: 'debug' } });
    await d.waitForLine('ready', 60_000);
    const first = await whoami(d);
    assert.equal(await d.ask('open', 60_000), 'opened');
    const deadline = Date.now() + (ACCESS_TOKEN_SECONDS * 2 + 15) * 1000;
    const digests = new Set([first.digest]);
    while (Date.now() < deadline) {
      assert.equal(await d.ask('exchange 2 500', 30_000, /^(ok|error)/), 'ok 2');
      const now = await whoami(d);
      assert.equal(now.id, first.id, 'a refresh keeps the API session');
      digests.add(now.digest);
    }
    assert.ok(digests.size >= 3, `the access token was refreshed at least twice (${digests.size - 1} times)`);
    // What the SDK's own log says of it (debug level).
    const refreshLines = d.stderr().split('\n').filter((l) => /refresh|exchang|token/i.test(l));
    // Tokens the SDK logs at debug level are shown as <token>.
    const shown = (l: string) => `#   ${l.replace(/eyJ[A-Za-z0-9_.-]+/g, '<token>').slice(0, 300)}`;
    console.log(`# the Go SDK's log of its refreshes (${refreshLines.length} lines):\n${refreshLines.slice(0, 12).map(shown).join('\n')}`);
    assert.equal(await d.ask('exchange 3', 30_000, /^(ok|error)/), 'ok 3');
    d.send('quit');
    await d.exited(20_000);
  });

  it('ending the dialer\'s API session ends its open connection; the SDK logs in again for its next dial', async () => {
    const d = sdkSession('oidc-revoked', dialer);
    await d.waitForLine('ready', 60_000);
    const me = await whoami(d);
    assert.equal(await d.ask('open', 60_000), 'opened');
    assert.equal(await d.ask('exchange 1', 30_000, /^(ok|error)/), 'ok 1');
    const removed = await admin.request('DELETE', `/api-sessions/${me.id}`);
    assert.equal(removed.status, 200, JSON.stringify(removed.body));
    await waitFor(async () => /^error/.test(await d.ask('exchange 1 100', 30_000, /^(ok|error)/)) || undefined, 15_000, { what: 'the open connection to end' });
    // The SDK learns at its next request that the session has ended, and logs in again by itself (it holds its
    // certificate): the next dial works, with a new API session.
    assert.equal(await d.ask('dial 1', 60_000, /^(ok|error)/), 'ok 1');
    const logged = d.stderr().split('\n').filter((l) => /refresh|authenticat|invalid_grant/i.test(l));
    console.log(`# the Go SDK's log after the revocation:\n${logged.slice(0, 6).map((l) => `#   ${l.replace(/eyJ[A-Za-z0-9_.-]+/g, '<token>').slice(0, 300)}`).join('\n')}`);
    const after = await whoami(d);
    assert.notEqual(after.id, me.id, 'the SDK dials with a new API session');
    assert.equal(after.kind, 'jwt');
    d.send('quit');
    await d.exited(20_000);
  });

  it('a password identity (API-session certificate) dials with a JWT session', async () => {
    const name = 'oidc-pw-user';
    cliLogin();
    zitiCli(['edge', 'create', 'identity', name, '-a', 'oidc-dialers']);
    zitiCli(['edge', 'create', 'authenticator', 'updb', name, name, 'Pw-user-123']);
    // The identity file gives only the controller URL and its CA; sdkecho logs in with the password it is given.
    const ca = readFileSync(process.env.PORTCULLIS_CA_FILE!, 'utf8');
    const file = join(workDir(), `${name}.json`);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file, JSON.stringify({ ztAPI: `https://127.0.0.1:${port}/edge/client/v1`, id: { ca: `pem:${ca}` } }));
    const d = startProcess('oidc-pw', sdkecho, ['session', file, service], { stdin: true, env: { SDKECHO_USERNAME: name, SDKECHO_PASSWORD: 'Pw-user-123' } });
    await d.waitForLine('ready', 60_000);
    assert.equal((await whoami(d)).kind, 'jwt');
    assert.equal(await d.ask('dial 3', 60_000), 'ok 3');
    d.send('quit');
    await d.exited(20_000);
  });

  it('TOTP through OIDC: an identity with MFA logs in with a code and dials; one that a policy requires TOTP of enrolls during its login', async () => {
    cliLogin();
    // An identity with verified MFA, enrolled over REST with a zt-session of its certificate.
    const mfaUser = await enrolledIdentity(admin, 'oidc-mfa', ['oidc-dialers']);
    const file = JSON.parse(readFileSync(mfaUser.file, 'utf8')) as { id: { cert: string; key: string } };
    const tls = { cert: file.id.cert.replace(/^pem:/, ''), key: file.id.key.replace(/^pem:/, '') };
    const ca = readFileSync(process.env.PORTCULLIS_CA_FILE!, 'utf8');
    const call = (method: string, path: string, token?: string, body?: unknown) =>
      new Promise<{ status: number; body: any }>((resolve, reject) => {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const req = httpsRequest(`https://127.0.0.1:${port}/edge/client/v1${path}`, {
          method, ca, ...tls,
          headers: { accept: 'application/json', ...(token ? { 'zt-session': token } : {}), ...(payload ? { 'content-type': 'application/json' } : {}) },
        }, (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
        });
        req.on('error', reject);
        req.end(payload);
      });
    const login = await call('POST', '/authenticate?method=cert', undefined, {});
    assert.equal(login.status, 200, JSON.stringify(login.body));
    const zt = login.body.data.token as string;
    assert.equal((await call('POST', '/current-identity/mfa', zt)).status, 201);
    const secret = new URL((await call('GET', '/current-identity/mfa', zt)).body.data.provisioningUrl).searchParams.get('secret')!;
    const code = () => new TOTP({ secret: Secret.fromBase32(secret) }).generate();
    assert.equal((await call('POST', '/current-identity/mfa/verify', zt, { code: code() })).status, 200);

    const d = startProcess('oidc-mfa', sdkecho, ['session', mfaUser.file, service], { stdin: true, env: { SDKECHO_TOTP_SECRET: secret } });
    await d.waitForLine('ready', 60_000);
    const me = await whoami(d);
    assert.equal(me.kind, 'jwt');
    assert.equal((await admin.data(`/api-sessions/${me.id}`)).isMfaComplete, true, 'the JWT session passed TOTP');
    assert.equal(await d.ask('dial 3', 60_000), 'ok 3');
    d.send('quit');
    await d.exited(20_000);

    // A policy that requires TOTP of an identity without MFA: the SDK enrolls during its OIDC login.
    const policy = await admin.create('/auth-policies', {
      name: 'oidc-totp-required',
      primary: {
        cert: { allowed: true, allowExpiredCerts: false },
        extJwt: { allowed: false, allowedSigners: [] },
        updb: { allowed: true, lockoutDurationMinutes: 0, maxAttempts: 5, minPasswordLength: 5, requireMixedCase: false, requireNumberChar: false, requireSpecialChar: false },
      },
      secondary: { requireTotp: true },
    });
    const enrolling = await enrolledIdentity(admin, 'oidc-totp-enroll', ['oidc-dialers']);
    const patched = await admin.request('PATCH', `/identities/${enrolling.id}`, { authPolicyId: policy });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const e = startProcess('oidc-totp-enroll', sdkecho, ['session', enrolling.file, service], { stdin: true, env: { SDKECHO_TOTP_ENROLL: '1' } });
    await e.waitForLine(/^totp-secret /, 60_000);
    await e.waitForLine('ready', 60_000);
    assert.equal((await whoami(e)).kind, 'jwt');
    assert.equal(await e.ask('dial 2', 60_000), 'ok 2');
    e.send('quit');
    await e.exited(20_000);
    const mfa = await admin.data(`/identities/${enrolling.id}`);
    assert.equal(mfa.isMfaEnabled, true, 'the identity has verified MFA now');
  });

  it('the Python SDK (the C SDK) enrolls and dials, with a zt-session beside the JWT sessions', async () => {
    const python = process.env.PORTCULLIS_PYTHON;
    assert.ok(python && existsSync(python), `PORTCULLIS_PYTHON names the Python of the interop virtualenv: ${python}`);
    cliLogin();
    const { createIdentity: newIdentity } = await import('./kit.ts');
    const py = await newIdentity(admin, 'oidc-py', ['oidc-dialers']);
    const script = join(here, 'cdial.py');
    const enrolled = await runProcess('oidc-cdial-enroll', python, [script, 'enroll', py.jwtFile, py.file], 60_000);
    assert.equal(enrolled.exit.code, 0, enrolled.stderr);
    const dialed = await runProcess('oidc-cdial-dial', python, [script, 'dial', py.file, service, '5'], 60_000);
    assert.equal(dialed.exit.code, 0, `${dialed.stderr}\n${dialed.stdout.join('\n')}`);
    assert.deepEqual(dialed.stdout.filter(Boolean), ['ok 5']);
    const kinds = await loginKinds(py.id);
    console.log(`# the C SDK's API sessions: ${JSON.stringify(kinds)} (an OIDC client id, or null for a zt-session)`);
    // The package's C SDK logs in with a zt-session even when OIDC_AUTH is listed: older SDKs keep the legacy path.
    assert.ok(kinds.length > 0 && kinds.every((k) => k === null), `the C SDK's login path: ${JSON.stringify(kinds)}`);
  });

  it('ziti tunnel host and proxy carry HTTP with JWT sessions', async () => {
    const page = `<html><body>oidc tunnel ${Math.random().toString(36).slice(2)}</body></html>\n`;
    httpServer = createHttpServer((_req, res) => res.end(page));
    const webPort = await freePort();
    await new Promise<void>((r) => httpServer!.listen(webPort, '127.0.0.1', () => r()));
    const tunnelService = 'oidc-web';
    cliLogin();
    zitiCli(['edge', 'create', 'config', 'oidc-web-host', 'host.v1', JSON.stringify({ protocol: 'tcp', address: '127.0.0.1', port: webPort })]);
    zitiCli(['edge', 'create', 'service', tunnelService, '--configs', 'oidc-web-host']);
    zitiCli(['edge', 'create', 'service-policy', 'oidc-web-bind', 'Bind', '--service-roles', `@${tunnelService}`, '--identity-roles', '#oidc-hosts']);
    zitiCli(['edge', 'create', 'service-policy', 'oidc-web-dial', 'Dial', '--service-roles', `@${tunnelService}`, '--identity-roles', '#oidc-dialers']);
    await host?.stop();
    const tunnelHost = startProcess('oidc-tunnel-host', ziti(), ['tunnel', 'host', '--identity', hostId.file]);
    const proxyPort = await freePort();
    const proxy = startProcess('oidc-tunnel-proxy', ziti(), ['tunnel', 'proxy', `${tunnelService}:${proxyPort}`, '--identity', dialer.file]);
    await waitListening(proxyPort, 60_000, () => (proxy.exit ? `the proxy exited ${JSON.stringify(proxy.exit)}` : tunnelHost.exit ? 'the tunnel host exited' : undefined));
    const got = await waitFor(async () => {
      try {
        const r = await fetchPage(proxyPort);
        return r.status === 200 && r.body === page ? r : undefined;
      } catch {
        return undefined;
      }
    }, 60_000, { what: 'the page through the tunnelers' });
    assert.equal(got.body, page);
    await proxy.stop();
    await tunnelHost.stop();
    assert.ok(existsSync(hostId.file));
  });
});
