/**
 * `--workers 2` on the real entry point: two worker processes share the listener (round-robin per
 * connection) and every request here opens its own TLS connection, so consecutive requests land on
 * different workers. Each answer names its worker in `x-portcullis-worker`. Checked: read-your-writes
 * across workers for every kind of access write (a policy created, narrowed and deleted, identity role
 * attributes, a service deleted), database operations shared through the store (one integrity run, results from
 * any worker; on SQLite one snapshot per minute, on PostgreSQL none), one ready line and one credentials print, a killed
 * worker replaced, and a clean stop of every process on SIGTERM.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { request } from 'node:https';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropTestDatabase, freePort, removeTestDir, stopChildController, testDatabaseArgs, testStore, uniqueName } from '../support/controller.ts';
import { createClient, type HttpClient, type HttpResponse } from '../support/client.ts';
import { assertMatchesReference } from '../support/reference-spec.ts';
import { bearer, oidcLogin, tokenRequest } from '../support/oidc.ts';

const ADMIN_PASSWORD = 'workers-admin-password';
const dataDir = mkdtempSync(join(tmpdir(), 'portcullis-workers-'));
const port = await freePort();
const child = spawn(
  process.execPath,
  ['--import', 'tsx', 'src/main.ts', '--workers', '2', '--data-dir', dataDir, ...(await testDatabaseArgs(dataDir)), '--address', '127.0.0.1',
    '--port', String(port), '--admin-password', ADMIN_PASSWORD, '--log-level', 'info'],
  { cwd: new URL('../../', import.meta.url).pathname, stdio: ['ignore', 'pipe', 'pipe'] },
);
let output = '';
child.stdout.on('data', (c) => (output += c));
child.stderr.on('data', (c) => (output += c));
const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
after(async () => {
  await stopChildController(child);
  removeTestDir(dataDir);
  await dropTestDatabase(dataDir);
});

await new Promise<void>((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`controller did not get ready:\n${output}`)), 30_000);
  const check = () => {
    if (!output.includes('Portcullis ready')) return;
    clearTimeout(timer);
    resolve();
  };
  child.stdout.on('data', check);
  child.on('exit', () => reject(new Error(`controller exited early:\n${output}`)));
});

const ca = readFileSync(join(dataDir, 'pki', 'root-ca.cert.pem'), 'utf8');
const http = createClient(`https://127.0.0.1:${port}`, ca);
const login = await http.post('/edge/management/v1/authenticate?method=password', { username: 'admin', password: ADMIN_PASSWORD });
assert.equal(login.status, 200, login.text);
const mgmt = createClient(`https://127.0.0.1:${port}/edge/management/v1`, ca, { token: login.body.data.token });

function workerOf(res: HttpResponse): string {
  const id = res.headers['x-portcullis-worker'];
  assert.equal(typeof id, 'string', 'every answer names its worker');
  return id as string;
}

async function created(path: string, body: Record<string, unknown>): Promise<{ id: string; worker: string }> {
  const res = await mgmt.post(path, body);
  assert.equal(res.status, 201, `${path}: ${res.text}`);
  return { id: res.body.data.id as string, worker: workerOf(res) };
}

/** A client-API user with a password, logged in. */
async function clientUser(roleAttributes: string[]): Promise<{ id: string; client: HttpClient }> {
  const identity = await created('/identities', { name: uniqueName('wk-user'), type: 'User', isAdmin: false, roleAttributes });
  const username = uniqueName('wk-login');
  await created('/authenticators', { method: 'updb', identityId: identity.id, username, password: 'Secret-pass-123' });
  const res = await http.post('/edge/client/v1/authenticate?method=password', { username, password: 'Secret-pass-123' });
  assert.equal(res.status, 200, res.text);
  return { id: identity.id, client: createClient(`https://127.0.0.1:${port}/edge/client/v1`, ca, { token: res.body.data.token }) };
}

/** The ids of the services the user sees, with the answering worker. */
/**
 * On SQLite the next read sees the write at once. On PostgreSQL the client API's hot reads (the service list) may lag
 * a commit made through the other worker by its commit notice's delay (about a millisecond): they are read again
 * until they show `expected`, for at most a second, and then compared as on SQLite.
 */
const NOTICE_GRACE_MS = testStore() === 'postgres' ? 1000 : 0;

async function eventually<T>(read: () => Promise<T>, shows: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + NOTICE_GRACE_MS;
  for (;;) {
    const value = await read();
    if (shows(value) || Date.now() >= deadline) return value;
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function visible(client: HttpClient, filter: string, expected?: string[]): Promise<{ ids: string[]; worker: string }> {
  return eventually(
    async () => {
      const res = await client.get(`/services?limit=500&filter=${encodeURIComponent(filter)}`);
      assert.equal(res.status, 200, res.text);
      assertMatchesReference('client', 'GET', '/services', 200, res.body, { allowNullAt: ['/data/*/configs', '/data/*/roleAttributes'] });
      return { ids: (res.body.data as Array<{ id: string }>).map((s) => s.id).sort(), worker: workerOf(res) };
    },
    (read) => expected === undefined || JSON.stringify(read.ids) === JSON.stringify([...expected].sort()),
  );
}

/** Pairs (writer, reader) seen; at least one must cross workers for the test to mean anything. */
const pairs: Array<[string, string]> = [];
function note(writer: string, reader: string): void {
  pairs.push([writer, reader]);
}

describe('two workers', () => {
  it('prints the credentials and the ready line once, and both workers answer', async () => {
    assert.equal(output.match(/Portcullis ready/g)?.length, 1, output);
    assert.equal(output.match(/Default admin created/g)?.length, 1, output);
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) seen.add(workerOf(await http.get('/version')));
    assert.deepEqual([...seen].sort(), ['1', '2']);
  });

  it('a service policy created through one worker is seen by the next read, 24 times on fresh connections', async () => {
    const tag = uniqueName('ryw').replace(/[^a-z0-9-]/gi, '');
    const user = await clientUser([tag]);
    const filter = `name contains "${tag}"`;
    const expected: string[] = [];
    for (let i = 0; i < 24; i++) {
      const service = await created('/services', { name: `${tag}-svc-${i}`, encryptionRequired: true });
      // Alternate the two ways a policy can select: the identity's attribute and its @id.
      const identityRoles = i % 2 === 0 ? [`#${tag}`] : [`@${user.id}`];
      const policy = await created('/service-policies', { name: `${tag}-sp-${i}`, type: 'Dial', semantic: 'AnyOf', identityRoles, serviceRoles: [`@${service.id}`] });
      expected.push(service.id);
      const read = await visible(user.client, filter, [...expected].sort());
      assert.deepEqual(read.ids, [...expected].sort(), `read ${i} (policy written by worker ${policy.worker}, read by ${read.worker})`);
      note(policy.worker, read.worker);
    }
    assert.ok(pairs.some(([w, r]) => w !== r), `some reads crossed workers: ${JSON.stringify(pairs)}`);
  });

  it('every kind of access write is seen by the next read, whichever worker answers', async () => {
    const tag = uniqueName('kinds').replace(/[^a-z0-9-]/gi, '');
    const user = await clientUser([]);
    const filter = `name contains "${tag}"`;
    const svc = await created('/services', { name: `${tag}-svc`, encryptionRequired: true, roleAttributes: [`${tag}-app`] });
    const policy = await created('/service-policies', { name: `${tag}-sp`, type: 'Dial', semantic: 'AnyOf', identityRoles: [`#${tag}-team`], serviceRoles: [`#${tag}-app`] });
    for (let round = 0; round < 4; round++) {
      // The identity joins the policy by a role attribute change...
      const join = await mgmt.patch(`/identities/${user.id}`, { roleAttributes: [`${tag}-team`] });
      assert.equal(join.status, 200, join.text);
      let read = await visible(user.client, filter, [svc.id]);
      assert.deepEqual(read.ids, [svc.id], `round ${round}: joined`);
      note(workerOf(join), read.worker);
      // ...and leaves it again.
      const leave = await mgmt.patch(`/identities/${user.id}`, { roleAttributes: [] });
      assert.equal(leave.status, 200, leave.text);
      read = await visible(user.client, filter, []);
      assert.deepEqual(read.ids, [], `round ${round}: left`);
      note(workerOf(leave), read.worker);
    }
    // The policy is narrowed to the identity's id, then the service's attribute is dropped.
    const narrowed = await mgmt.patch(`/service-policies/${policy.id}`, { identityRoles: [`@${user.id}`] });
    assert.equal(narrowed.status, 200, narrowed.text);
    assert.deepEqual((await visible(user.client, filter, [svc.id])).ids, [svc.id]);
    const detached = await mgmt.patch(`/services/${svc.id}`, { roleAttributes: [] });
    assert.equal(detached.status, 200, detached.text);
    assert.deepEqual((await visible(user.client, filter, [])).ids, []);
    const reattached = await mgmt.patch(`/services/${svc.id}`, { roleAttributes: [`${tag}-app`] });
    assert.equal(reattached.status, 200, reattached.text);
    assert.deepEqual((await visible(user.client, filter, [svc.id])).ids, [svc.id]);
    // Deleting the policy, then a second service with its own policy, then that service.
    assert.equal((await mgmt.delete(`/service-policies/${policy.id}`)).status, 200);
    assert.deepEqual((await visible(user.client, filter, [])).ids, []);
    const other = await created('/services', { name: `${tag}-other`, encryptionRequired: true });
    await created('/service-policies', { name: `${tag}-sp2`, type: 'Dial', semantic: 'AnyOf', identityRoles: ['#all'], serviceRoles: [`@${other.id}`] });
    assert.deepEqual((await visible(user.client, filter, [other.id])).ids, [other.id]);
    assert.equal((await mgmt.delete(`/services/${other.id}`)).status, 200);
    assert.deepEqual((await visible(user.client, filter, [])).ids, []);
    assert.ok(pairs.some(([w, r]) => w !== r));
  });

  it('the default-order service list sees service, config and config type writes made through any worker', async () => {
    const tag = uniqueName('cat').replace(/[^a-z0-9-]/gi, '');
    const user = await clientUser([`${tag}-team`]);
    await created('/service-policies', { name: `${tag}-sp`, type: 'Dial', semantic: 'AnyOf', identityRoles: [`#${tag}-team`], serviceRoles: [`#${tag}-app`] });
    const type = await created('/config-types', { name: `${tag}-type` });
    const config = await created('/configs', { name: `${tag}-cfg`, configTypeId: type.id, data: { round: -1 } });
    // No filter, no sort: the page comes from each worker's service catalogue.
    type Page = { services: Array<{ id: string; name: string; config: Record<string, unknown> }>; worker: string };
    // `shows`: what the page must show once the last write is seen (read again for a moment on PostgreSQL).
    async function page(shows: (p: Page) => boolean = () => true): Promise<Page> {
      return eventually(async () => {
        const res = await user.client.get('/services?limit=500&configTypes=all');
        assert.equal(res.status, 200, res.text);
        assertMatchesReference('client', 'GET', '/services', 200, res.body, { allowNullAt: ['/data/*/configs', '/data/*/roleAttributes'] });
        return { services: res.body.data, worker: workerOf(res) };
      }, shows);
    }
    const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
    const ids: string[] = [];
    for (let round = 0; round < 6; round++) {
      const svc = await created('/services', { name: `${tag}-svc-${round}`, encryptionRequired: true, roleAttributes: [`${tag}-app`], configs: [config.id] });
      ids.push(svc.id);
      let read = await page((p) => same(p.services.map((s) => s.id), [...ids].sort()));
      assert.deepEqual(read.services.map((s) => s.id), [...ids].sort(), `round ${round}: new service`);
      note(svc.worker, read.worker);
      const data = await mgmt.patch(`/configs/${config.id}`, { data: { round } });
      assert.equal(data.status, 200, data.text);
      const typeName = round === 0 ? `${tag}-type` : `${tag}-type-${round - 1}`;
      read = await page((p) => p.services.every((s) => same(s.config, { [typeName]: { round } })));
      for (const s of read.services) assert.deepEqual(s.config, { [typeName]: { round } }, `round ${round}: config data`);
      note(workerOf(data), read.worker);
      const renamed = await mgmt.patch(`/config-types/${type.id}`, { name: `${tag}-type-${round}` });
      assert.equal(renamed.status, 200, renamed.text);
      read = await page((p) => p.services.every((s) => same(s.config, { [`${tag}-type-${round}`]: { round } })));
      for (const s of read.services) assert.deepEqual(s.config, { [`${tag}-type-${round}`]: { round } }, `round ${round}: type name`);
      note(workerOf(renamed), read.worker);
      const name = await mgmt.patch(`/services/${svc.id}`, { name: `${tag}-renamed-${round}` });
      assert.equal(name.status, 200, name.text);
      read = await page((p) => p.services.find((s) => s.id === svc.id)?.name === `${tag}-renamed-${round}`);
      assert.equal(read.services.find((s) => s.id === svc.id)?.name, `${tag}-renamed-${round}`, `round ${round}: service name`);
      note(workerOf(name), read.worker);
    }
    const gone = await mgmt.delete(`/services/${ids[0]}`);
    assert.equal(gone.status, 200, gone.text);
    const read = await page((p) => same(p.services.map((s) => s.id), ids.slice(1).sort()));
    assert.deepEqual(read.services.map((s) => s.id), ids.slice(1).sort());
    note(workerOf(gone), read.worker);
    assert.ok(pairs.some(([w, r]) => w !== r));
  });

  it('shares database operations through the store: one integrity run, one snapshot per minute', async () => {
    const first = await mgmt.post('/database/check-data-integrity');
    assert.equal(first.status, 202, first.text);
    const workers = new Set<string>([workerOf(first)]);
    let results: Record<string, unknown> = {};
    for (let i = 0; i < 200; i++) {
      const res = await mgmt.get('/database/data-integrity-results');
      assert.equal(res.status, 200, res.text);
      workers.add(workerOf(res));
      results = res.body.data;
      if (results.inProgress === false && workers.size === 2) break;
    }
    assert.equal(results.inProgress, false);
    assert.equal(results.results, null, 'a healthy store (no results, as upstream), and the same answer from both workers');
    assert.deepEqual([...workers].sort(), ['1', '2']);

    if (testStore() === 'sqlite') {
      const snapshot = await mgmt.post('/database/snapshot');
      assert.equal(snapshot.status, 200, snapshot.text);
      for (let i = 0; i < 2; i++) {
        const again = await mgmt.post('/database/snapshot');
        assert.equal(again.status, 429, `worker ${workerOf(again)}: ${again.text}`);
      }
    } else {
      // A snapshot is a copy of the SQLite file: a PostgreSQL store refuses it, in every worker, each time.
      for (let i = 0; i < 2; i++) {
        const refused = await mgmt.post('/database/snapshot');
        assert.equal(refused.status, 409, `worker ${workerOf(refused)}: ${refused.text}`);
        assert.equal(refused.body.error.code, 'SNAPSHOT_NOT_SUPPORTED', refused.text);
      }
    }
  });

  it('an OIDC login whose steps land on different workers completes, and its token works on both', async () => {
    const user = uniqueName('oidc-worker');
    const identity = await mgmt.post('/identities', { name: user, type: 'User', isAdmin: false });
    assert.equal(identity.status, 201, identity.text);
    assert.equal((await mgmt.post('/authenticators', { method: 'updb', identityId: identity.body.data.id, username: user, password: 'Oidc-worker-123' })).status, 201);
    // Every step opens a connection of its own: authorize, login, callback and token alternate between workers.
    const tokens = await oidcLogin(http, { username: user, password: 'Oidc-worker-123' });
    const workers = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const res = await http.get('/edge/client/v1/current-api-session', bearer(tokens.accessToken));
      assert.equal(res.status, 200, res.text);
      workers.add(workerOf(res));
    }
    assert.equal(workers.size, 2, 'the token was used on both workers');
    const refreshed = await tokenRequest(http, { grant_type: 'refresh_token', refresh_token: tokens.refreshToken }, 'native');
    assert.equal(refreshed.status, 200, refreshed.text);
    // Ended through one worker, refused by both.
    assert.equal((await http.delete('/edge/client/v1/current-api-session', bearer(refreshed.body.access_token))).status, 200);
    // On PostgreSQL the other worker learns of the commit by its notice, which may trail the answer by a moment.
    const deadline = Date.now() + (testStore() === 'postgres' ? 2000 : 0);
    for (let i = 0; i < 4; i++) {
      let status = (await http.get('/edge/client/v1/current-api-session', bearer(refreshed.body.access_token))).status;
      while (status !== 401 && Date.now() < deadline) status = (await http.get('/edge/client/v1/current-api-session', bearer(refreshed.body.access_token))).status;
      assert.equal(status, 401);
    }
  });

  it('replaces a worker that dies, and stops every process on SIGTERM', async () => {
    // The primary's node children; the TypeScript loader may have a compiler process of its own beside them.
    const workerPids = () =>
      execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(child.pid)], { encoding: 'utf8' })
        .split('\n')
        .map((line) => line.trim().split(/\s+/))
        .filter(([, comm]) => comm === 'node')
        .map(([pid]) => Number(pid))
        .filter((n) => n > 0);
    const before = workerPids();
    assert.equal(before.length, 2, `two worker processes: ${before.join(', ')}`);
    process.kill(before[0]!, 'SIGKILL');
    // A connection handed to the killed worker before the primary noticed its death is never answered:
    // these probes give up after a while (as any real client would) and try again.
    const probe = () =>
      new Promise<string | undefined>((resolve) => {
        const req = request({ host: '127.0.0.1', port, path: '/version', ca, servername: 'localhost', agent: false, timeout: 2000 }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.headers['x-portcullis-worker'] as string | undefined));
        });
        req.on('timeout', () => req.destroy());
        req.on('error', () => resolve(undefined));
        req.end();
      });
    const seen = new Set<string>();
    for (let i = 0; i < 300 && !seen.has('3'); i++) {
      const id = await probe();
      if (id) seen.add(id);
      if (!seen.has('3')) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(seen.has('3'), `a third worker took over: ${[...seen].join(', ')}\n${output}`);
    assert.match(output, /died \(SIGKILL\); starting a new one/);
    const after = workerPids();
    assert.equal(after.length, 2);

    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([exited, new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still running'), 30_000)))]);
    clearTimeout(timer);
    assert.equal(code, 0, output);
    for (const pid of after) assert.throws(() => process.kill(pid, 0), 'worker stopped with the primary');
  });
});
