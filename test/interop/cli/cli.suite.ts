/**
 * The real `ziti` CLI (upstream v2.0) against Portcullis: log in, create and update an OS posture check (the
 * CLI writes `Type`/`Versions` keys), create an MFA check, run the database integrity check and read its
 * status, and list the fabric API's routers, services, terminators, links and circuits (`ziti fabric list`,
 * with and without filters). Each result is also read back over REST. Run by `npm run test:interop` (suite
 * `cli`), which passes the controller's address, credentials and CA file, and the CLI binary in ZITI_BIN.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const url = process.env.PORTCULLIS_URL ?? '';
const zitiBin = process.env.ZITI_BIN ?? '';
const ca = readFileSync(process.env.PORTCULLIS_CA_FILE ?? '', 'utf8');
const configDir = mkdtempSync(join(tmpdir(), 'ziti-cli-'));

/** Runs the CLI with its own config dir; fails the test on a non-zero exit. */
function ziti(...args: string[]): string {
  const r = spawnSync(zitiBin, args, { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ZITI_CONFIG_DIR: configDir } });
  assert.equal(r.status, 0, `ziti ${args.join(' ')} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout + r.stderr;
}

let token = '';

function rest(method: string, path: string, body?: unknown, api = '/edge/management/v1'): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(`${url}${api}${path}`, {
      method, ca,
      headers: { accept: 'application/json', ...(token ? { 'zt-session': token } : {}), ...(payload ? { 'content-type': 'application/json' } : {}) },
    }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

async function checkNamed(name: string): Promise<Record<string, any>> {
  const res = await rest('GET', `/posture-checks?filter=${encodeURIComponent(`name = "${name}"`)}`);
  assert.equal(res.status, 200);
  assert.equal(res.body.data.length, 1, `one posture check named ${name}`);
  return res.body.data[0];
}

/** Removes the diagnostics sockets the CLI leaves behind. */
function removeAgentSockets(): void {
  for (const f of readdirSync('/tmp')) if (/^gops-agent\.\d+\.sock$/.test(f)) rmSync(join('/tmp', f), { force: true });
}

before(async () => {
  assert.ok(url && zitiBin, 'PORTCULLIS_URL and ZITI_BIN are set by the interop runner');
  const login = await rest('POST', '/authenticate?method=password', { username: process.env.PORTCULLIS_ADMIN_USER, password: process.env.PORTCULLIS_ADMIN_PASSWORD });
  assert.equal(login.status, 200);
  token = login.body.data.token;
  ziti('edge', 'login', url.replace('https://', ''), '-u', process.env.PORTCULLIS_ADMIN_USER ?? '', '-p', process.env.PORTCULLIS_ADMIN_PASSWORD ?? '', '--ca', process.env.PORTCULLIS_CA_FILE ?? '', '-y');
});

after(() => {
  rmSync(configDir, { recursive: true, force: true });
  removeAgentSockets();
});

describe('ziti edge posture checks and database commands', () => {
  it('create posture-check os stores every OS entry the CLI sends', async () => {
    ziti('edge', 'create', 'posture-check', 'os', 'cli-os', '-o', 'Windows:10.0.19041:10.0.22000', '-o', 'Linux', '-o', 'macOS:13.0.0', '-a', 'a1,a2');
    const check = await checkNamed('cli-os');
    assert.equal(check.typeId, 'OS');
    assert.deepEqual(check.roleAttributes, ['a1', 'a2']);
    assert.deepEqual(check.operatingSystems, [
      { type: 'Linux', versions: null },
      { type: 'Windows', versions: ['10.0.19041', '10.0.22000'] },
      { type: 'macOS', versions: ['13.0.0'] },
    ]);
  });

  it('update posture-check os replaces the entries and renames', async () => {
    ziti('edge', 'update', 'posture-check', 'os', 'cli-os', '-o', 'Android:11.0.0', '-n', 'cli-os-2');
    const check = await checkNamed('cli-os-2');
    assert.deepEqual(check.operatingSystems, [{ type: 'Android', versions: ['11.0.0'] }]);
    assert.deepEqual(check.roleAttributes, ['a1', 'a2']);
    const listed = ziti('edge', 'list', 'posture-checks', `name = "cli-os-2"`);
    assert.match(listed, /cli-os-2/);
  });

  it('db check-integrity-status reports no error with MFA checks present', async () => {
    ziti('edge', 'create', 'posture-check', 'mfa', 'cli-mfa');
    assert.equal((await checkNamed('cli-mfa')).typeId, 'MFA');
    ziti('edge', 'db', 'start-check-integrity');
    let status = '';
    for (let i = 0; i < 50; i++) {
      status = ziti('edge', 'db', 'check-integrity-status');
      if (/Finished At: \d/.test(status)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.match(status, /no data integrity errors found/, status);
    assert.doesNotMatch(status, /unknown posture check type/);
  });
});

describe('ziti fabric list', () => {
  const suffix = Date.now().toString(36);
  const names = { router: `cli-fabric-router-${suffix}`, service: `cli-fabric-service-${suffix}` };
  const ids: Record<string, string> = {};

  before(async () => {
    const router = await rest('POST', '/transit-routers', { name: names.router, cost: 9 });
    assert.equal(router.status, 201, JSON.stringify(router.body));
    const service = await rest('POST', '/services', { name: names.service, encryptionRequired: true, terminatorStrategy: 'weighted' });
    assert.equal(service.status, 201, JSON.stringify(service.body));
    const terminator = await rest('POST', '/terminators', { service: service.body.data.id, router: router.body.data.id, binding: 'transport', address: 'tcp:cli.test:8080' });
    assert.equal(terminator.status, 201, JSON.stringify(terminator.body));
    Object.assign(ids, { router: router.body.data.id, service: service.body.data.id, terminator: terminator.body.data.id });
  });

  it('routers: every router, with the filter the CLI passes through', async () => {
    const all = ziti('fabric', 'list', 'routers');
    assert.match(all, new RegExp(names.router));
    assert.match(all, /ID\s*│\s*NAME\s*│\s*ONLINE/i);
    const offline = ziti('fabric', 'list', 'routers', `connected = false and name = "${names.router}"`);
    assert.match(offline, new RegExp(`${ids.router}.*${names.router}.*false.*9`));
    const none = ziti('fabric', 'list', 'routers', `connected = true and name = "${names.router}"`);
    assert.doesNotMatch(none, new RegExp(names.router));
    const rest1 = await rest('GET', `/routers/${ids.router}`, undefined, '/fabric/v1');
    assert.equal(rest1.body.data.connected, false);
  });

  it('services: every service with its terminator strategy', () => {
    const listed = ziti('fabric', 'list', 'services', `name = "${names.service}"`);
    assert.match(listed, new RegExp(`${ids.service}.*${names.service}.*weighted`));
  });

  it('terminators: with their service and router names', () => {
    const listed = ziti('fabric', 'list', 'terminators', `service = "${ids.service}"`);
    assert.match(listed, new RegExp(`${ids.terminator}.*${names.service}.*${names.router}.*transport.*tcp:cli.test:8080`));
  });

  it('links and circuits: the lists answer (none exist without connected routers)', async () => {
    const links = ziti('fabric', 'list', 'links');
    assert.match(links, /ID\s*│\s*DIALER\s*│\s*ACCEPTOR/i);
    const circuits = ziti('fabric', 'list', 'circuits');
    assert.match(circuits, /ID\s*│\s*CLIENT\s*│\s*SERVICE/i);
    assert.equal((await rest('GET', '/links', undefined, '/fabric/v1')).body.meta.pagination.totalCount, 0);
    assert.equal((await rest('GET', '/circuits', undefined, '/fabric/v1')).body.meta.pagination.totalCount, 0);
  });

  it('a filter on a field routers do not have fails with 400', async () => {
    // The fabric client declares no 400 answer for this operation, so it shows only the status (as with upstream).
    const r = spawnSync(zitiBin, ['fabric', 'list', 'routers', 'isOnline = true'], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ZITI_CONFIG_DIR: configDir } });
    assert.notEqual(r.status, 0);
    assert.match(r.stdout + r.stderr, /listRouters \(status 400\)/);
    const res = await rest('GET', `/routers?filter=${encodeURIComponent('isOnline = true')}`, undefined, '/fabric/v1');
    assert.equal(res.body.error.code, 'INVALID_FILTER');
  });
});
