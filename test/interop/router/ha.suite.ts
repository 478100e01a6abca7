/**
 * Several Portcullis controllers on one PostgreSQL store, with real upstream routers, the Go SDK and the tunnelers,
 * and controllers killed with SIGKILL under load.
 *
 * - Three controllers (A, B, C), each with its own data dir and port, one database, one cluster secret: A founds the
 *   network, B and C join.
 * - Two edge routers enrolled through A (r1 with its tunneler) learn the other controllers from A
 *   (UpdateCtrlAddresses) and keep a control channel to each.
 * - A Go SDK host (`sdkecho host`) binds, a Go SDK dialer (`sdkecho session`) dials; both identity files name A.
 *   r1's tunneler hosts an HTTP service that `ziti tunnel proxy` dials.
 * - SIGKILL of A (the controller the routers enrolled through and the SDKs logged in to), then of the leader: an open
 *   connection keeps carrying data, new dials and REST writes on the survivors work again, measured from the kill; a
 *   write acknowledged before the kill is still there; the killed controller, restarted, answers a read of a write
 *   made while it was down and gets its routers back.
 * - A policy change made on B stops dials of an identity whose SDK logged in elsewhere, measured 10 times.
 *
 * Runs in `npm run test:interop:postgres` (suite `router`, `--only router/ha`); skipped without PostgreSQL.
 * Loopback only. Figures are printed as `# ha:` lines.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createEdgeRouter, enrollRouter, freePort, jwtPayload, requestJson, startProcess, startRouter, waitFor, writeRouterConfig, ziti, zitiCli,
  type EdgeRest, type PeerProcess, type RestResponse, type RouterHandle, type RouterProcess,
} from './harness.ts';
import { closeServer, enrolledIdentity, fetchPage, ownDatabase, routerSuite, waitListening, waitOnlineSynced, type Identity } from './kit.ts';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..', '..');
const work = mkdtempSync(join(tmpdir(), 'portcullis-ha-'));
const adminPassword = `Ha-${randomBytes(6).toString('hex')}-Pw1!`;
const secretFile = join(work, 'cluster-secret');
writeFileSync(secretFile, randomBytes(32).toString('base64') + '\n', { mode: 0o600 });

interface Ctl {
  name: string;
  port: number;
  dataDir: string;
  proc?: PeerProcess;
  id?: string;
}
const ctls: Ctl[] = ['a', 'b', 'c'].map((name) => ({ name, port: 0, dataDir: join(work, name) }));
const [A, B, C] = ctls;
let database: { url: string; drop(): Promise<void> } | undefined;
let caPem = '';

async function startCtl(c: Ctl): Promise<void> {
  c.proc = startProcess(
    `ctrl-${c.name}`,
    process.execPath,
    ['dist/main.js', '--data-dir', c.dataDir, '--address', '127.0.0.1', '--port', String(c.port), '--advertise', '127.0.0.1', '--admin-user', 'admin',
      '--admin-password', adminPassword, '--log-level', 'info', '--workers', '1', '--cluster-secret-file', secretFile],
    { cwd: repo, env: { PORTCULLIS_DATABASE_URL: database!.url } },
  );
  await c.proc.waitForLine(/Portcullis ready/, 60_000);
  // The network's root, written by the founder at its first start: every controller's chain ends there.
  caPem ||= readFileSync(join(A.dataDir, 'pki', 'root-ca.cert.pem'), 'utf8');
  c.id = (await rest(c, 'GET', '/version')).headers['ziti-instance-id'] as string;
}

let token = '';
/** A request to one controller's management API with the admin's zt-session (made on A, valid on all). */
function rest(c: Ctl, method: string, path: string, body?: unknown, timeoutMs = 5000): Promise<RestResponse> {
  const base = path === '/version' ? '' : '/edge/management/v1';
  return requestJson(`https://127.0.0.1:${c.port}${base}${path}`, method, caPem, token, body, timeoutMs);
}

async function sql<T = any>(text: string, params: unknown[] = []): Promise<T[]> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: database!.url });
  await client.connect();
  try {
    return (await client.query(text, params)).rows as T[];
  } finally {
    await client.end();
  }
}

const channels = new Map<string, string[]>();
/** The controllers each router has a control channel to, as the controllers recorded them. */
async function channelsOf(routerId: string): Promise<string[]> {
  const rows = await sql<{ controller_id: string }>('SELECT DISTINCT controller_id FROM router_connections WHERE router_id = $1 ORDER BY 1', [routerId]);
  channels.set(routerId, rows.map((r) => r.controller_id));
  return channels.get(routerId)!;
}

async function leaderId(): Promise<string> {
  return (await sql<{ value: string }>("SELECT value FROM controller_facts WHERE key = 'leader-controller'"))[0]!.value;
}

const liveIds = () => ctls.filter((c) => c.proc && !c.proc.exit).map((c) => c.id!).sort();

function figure(text: string): void {
  console.log(`# ha: ${text}`);
}

let admin: EdgeRest;
let sdkecho = '';
let r1: RouterHandle;
let r2: RouterHandle;
const routerProcs: RouterProcess[] = [];
let host: PeerProcess;
let hostId: Identity;
let dialerId: Identity;
let dialer: PeerProcess;
let proxyPort = 0;
let web: Server | undefined;
const page = `<html>ha ${randomBytes(4).toString('hex')}</html>\n`;
const service = 'ha-echo';

const suite = !process.env.PORTCULLIS_TEST_DATABASE_URL ? undefined : routerSuite({
  setup: async () => {
    database = await ownDatabase('ha');
    for (const c of ctls) c.port = await freePort();
    await startCtl(A);
    await startCtl(B);
    await startCtl(C);
    process.env.PORTCULLIS_URL = `https://127.0.0.1:${A.port}`;
    process.env.PORTCULLIS_CA_FILE = join(A.dataDir, 'pki', 'root-ca.cert.pem');
    process.env.PORTCULLIS_ADMIN_USER = 'admin';
    process.env.PORTCULLIS_ADMIN_PASSWORD = adminPassword;
    const login = await rest(A, 'POST', '/authenticate?method=password', { username: 'admin', password: adminPassword });
    token = login.body.data.token;
  },
  sdkecho: true,
  onEnd: async () => {
    await closeServer(web);
    for (const c of ctls) await c.proc?.stop().catch(() => undefined);
    rmSync(work, { recursive: true, force: true });
    await database?.drop();
  },
});

describe('three controllers on one PostgreSQL, upstream routers and SDKs, SIGKILL under load', { skip: suite === undefined && 'needs PostgreSQL (npm run test:interop:postgres)' }, () => {
  before(async () => {
    ({ admin, sdkecho } = await suite!.ready);
  });

  it('forms one network: every controller lists all three, with their control addresses', async () => {
    const ids = ctls.map((c) => c.id!).sort();
    assert.equal(new Set(ids).size, 3);
    for (const c of ctls) {
      const res = await rest(c, 'GET', '/controllers');
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.data.map((d: { id: string }) => d.id).sort(), ids);
      for (const d of res.body.data) assert.equal(d.ctrlAddress, `tls:127.0.0.1:${ctls.find((x) => x.id === d.id)!.port}`);
    }
  });

  it('enrolls two routers through A; they keep a control channel to every controller', async () => {
    r1 = await createEdgeRouter('ha-r1', { tunneler: true });
    r2 = await createEdgeRouter('ha-r2');
    const ctrls = jwtPayload(r1.jwtFile).ctrls as string[];
    assert.deepEqual([...ctrls].sort(), ctls.map((c) => `tls:127.0.0.1:${c.port}`).sort(), 'the enrollment JWT names every controller');
    for (const r of [r1, r2]) {
      const config = await writeRouterConfig(r);
      enrollRouter(config.configFile, r.jwtFile);
      const proc = startRouter(config.configFile);
      routerProcs.push(proc);
      await waitOnlineSynced(admin, r, proc, 30_000);
    }
    for (const r of [r1, r2]) {
      await waitFor(async () => (await channelsOf(r.id)).length === 3 || undefined, 30_000, {
        what: `${r.name} connected to three controllers`,
        lastSeen: () => JSON.stringify(channels.get(r.id)),
      });
      const endpoints = readFileSync(join(r.dir, 'endpoints.yml'), 'utf8');
      for (const c of ctls) assert.ok(endpoints.includes(`tls:127.0.0.1:${c.port}`), `endpoints file of ${r.name} names ${c.name}: ${endpoints}`);
    }
  });

  it('carries Go SDK and tunneler traffic through them', async () => {
    zitiCli(['edge', 'create', 'service', service]);
    zitiCli(['edge', 'create', 'service-policy', `${service}-bind`, 'Bind', '--service-roles', `@${service}`, '--identity-roles', '#ha-hosts']);
    zitiCli(['edge', 'create', 'service-policy', `${service}-dial`, 'Dial', '--service-roles', `@${service}`, '--identity-roles', '#ha-dialers']);
    zitiCli(['edge', 'create', 'edge-router-policy', 'ha-all', '--edge-router-roles', '#all', '--identity-roles', '#all']);
    zitiCli(['edge', 'create', 'service-edge-router-policy', 'ha-all', '--edge-router-roles', '#all', '--service-roles', '#all']);
    hostId = await enrolledIdentity(admin, 'ha-host', ['ha-hosts']);
    dialerId = await enrolledIdentity(admin, 'ha-dialer', ['ha-dialers']);
    host = startProcess('ha-host', sdkecho, ['host', hostId.file, service]);
    await host.waitForLine('bound', 60_000);
    dialer = startProcess('ha-dialer', sdkecho, ['session', dialerId.file, service], { stdin: true });
    await dialer.waitForLine('ready', 60_000);
    assert.equal(await dialer.ask('dial 3', 60_000), 'ok 3');

    // r1's tunneler hosts a web page; `ziti tunnel proxy` dials it.
    web = createHttpServer((_req, res) => res.end(page));
    const webPort = await freePort();
    await new Promise<void>((r) => web!.listen(webPort, '127.0.0.1', () => r()));
    zitiCli(['edge', 'create', 'config', 'ha-web-host', 'host.v1', JSON.stringify({ protocol: 'tcp', address: '127.0.0.1', port: webPort })]);
    zitiCli(['edge', 'create', 'service', 'ha-web', '--configs', 'ha-web-host']);
    zitiCli(['edge', 'update', 'edge-router', 'ha-r1', '--role-attributes', 'ha-web-hosts']);
    zitiCli(['edge', 'create', 'service-policy', 'ha-web-bind', 'Bind', '--service-roles', '@ha-web', '--identity-roles', `@ha-r1`]);
    zitiCli(['edge', 'create', 'service-policy', 'ha-web-dial', 'Dial', '--service-roles', '@ha-web', '--identity-roles', '#ha-dialers']);
    proxyPort = await freePort();
    const proxy = startProcess('ha-proxy', ziti(), ['tunnel', 'proxy', `ha-web:${proxyPort}`, '--identity', dialerId.file]);
    await waitListening(proxyPort, 60_000, () => (proxy.exit ? `the proxy exited ${JSON.stringify(proxy.exit)}` : undefined));
    await waitFor(async () => (await tunnelPage()) || undefined, 60_000, { what: 'the page through the tunnelers' });
  });

  async function tunnelPage(): Promise<boolean> {
    try {
      const r = await fetchPage(proxyPort);
      return r.status === 200 && r.body === page;
    } catch {
      return false;
    }
  }

  /** Kills `victim` with SIGKILL under load and measures what the issue asks; restarts it at the end. */
  async function killAndMeasure(victim: Ctl, label: string): Promise<void> {
    const survivors = ctls.filter((c) => c !== victim);
    // A connection open before the kill, and a write acknowledged before it; the host's terminators.
    assert.equal(await dialer.ask('open', 30_000), 'opened');
    const terminatorsOf = async (on: Ctl) =>
      ((await rest(on, 'GET', `/terminators?filter=${encodeURIComponent(`service.name = "${service}"`)}`)).body.data as Array<{ id: string }>).map((t) => t.id).sort();
    const hostTerminators = await terminatorsOf(survivors[0]!);
    assert.ok(hostTerminators.length > 0);
    const before = await rest(survivors[0]!, 'POST', '/services', { name: `ha-before-${label}`, encryptionRequired: true });
    assert.equal(before.status, 201);
    // Writes on the victim until it dies: every one it acknowledged must be there afterwards.
    const acknowledged: string[] = [];
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        try {
          const res = await rest(victim, 'POST', '/services', { name: `ha-acked-${label}-${i}`, encryptionRequired: true }, 2000);
          if (res.status === 201) acknowledged.push(res.body.data.id);
        } catch {
          return;
        }
      }
    })();
    await new Promise((r) => setTimeout(r, 500));
    // Writes on each survivor, every 50 ms, until one succeeds after the kill.
    const killedAt = Date.now();
    await victim.proc!.kill9();
    writing = false;
    await writer;
    const firstWrite = Promise.all(
      survivors.map(async (c) => {
        for (let i = 0; ; i++) {
          try {
            const res = await rest(c, 'POST', '/services', { name: `ha-${label}-${c.name}-${i}`, encryptionRequired: true }, 2000);
            if (res.status === 201) return Date.now() - killedAt;
          } catch {
            // not answering yet
          }
          await new Promise((r) => setTimeout(r, 50));
        }
      }),
    );
    // New dials, until one succeeds after the kill.
    let dialMs = -1;
    for (;;) {
      const answer = await dialer.ask('dial 1', 30_000, /^(ok|error)/);
      if (answer === 'ok 1') {
        dialMs = Date.now() - killedAt;
        break;
      }
      if (Date.now() - killedAt > 30_000) assert.fail(`no dial succeeded within 30 s of the kill: ${answer}`);
    }
    const writeMs = await firstWrite;
    assert.equal(await dialer.ask('exchange 3', 30_000, /^(ok|error)/), 'ok 3', 'the connection open before the kill still carries data');
    assert.equal(await dialer.ask('close', 10_000), 'closed');
    assert.ok(await tunnelPage(), 'the tunnelers still carry the page');
    // The writes acknowledged before the kill are there, on every survivor.
    for (const c of survivors) assert.equal((await rest(c, 'GET', `/services/${before.body.data.id}`)).status, 200);
    assert.ok(acknowledged.length > 0, 'the victim acknowledged writes before it died');
    for (const c of survivors) assert.deepEqual(await terminatorsOf(c), hostTerminators, "the host's terminators survive the controller's death");
    for (const id of acknowledged) assert.equal((await rest(survivors[0]!, 'GET', `/services/${id}`)).status, 200, `acknowledged write ${id} is there`);
    // The survivors stop listing the dead controller.
    const goneMs = await (async () => {
      for (;;) {
        const listed = (await rest(survivors[0]!, 'GET', '/controllers')).body.data.map((d: { id: string }) => d.id);
        if (!listed.includes(victim.id)) return Date.now() - killedAt;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    figure(`${label}: first new dial ${dialMs} ms after SIGKILL; first REST write ${writeMs.join(' / ')} ms on ${survivors.map((c) => c.name).join(' / ')}; dropped from /controllers after ${goneMs} ms; ${acknowledged.length} writes it acknowledged, none lost`);
    assert.ok(Math.max(...writeMs) <= 5000, 'writes worked on every survivor within 5 s');

    // A write made while it is down, then the restart: its first answer has it, and the routers come back to it.
    const during = await rest(survivors[0]!, 'POST', '/services', { name: `ha-during-${label}`, encryptionRequired: true });
    assert.equal(during.status, 201);
    const restartAt = Date.now();
    await startCtl(victim);
    const read = await rest(victim, 'GET', `/services/${during.body.data.id}`);
    assert.equal(read.status, 200, 'the restarted controller has the write made while it was down');
    figure(`${label}: restarted controller answered a read of a write made during its downtime ${Date.now() - restartAt} ms after its start began`);
    for (const r of [r1, r2]) {
      await waitFor(async () => (await channelsOf(r.id)).length === 3 || undefined, 60_000, {
        what: `${r.name} back on three controllers`,
        lastSeen: () => JSON.stringify(channels.get(r.id)),
      });
    }
    assert.deepEqual((await rest(survivors[0]!, 'GET', '/controllers')).body.data.map((d: { id: string }) => d.id).sort(), liveIds());
  }

  it('rides through SIGKILL of A, the controller the routers enrolled through and the SDKs logged in to', async () => {
    await killAndMeasure(A, 'kill A');
  });

  it('rides through SIGKILL of the leader', async () => {
    const id = await leaderId();
    const victim = ctls.find((c) => c.id === id)!;
    await killAndMeasure(victim, `kill leader ${victim.name}`);
    assert.notEqual(await leaderId(), undefined);
  });

  it('enforces a policy change made on B: dials refused and open connections ended, whichever controller the SDK uses', async () => {
    const refused: number[] = [];
    const ended: number[] = [];
    const dialPolicy = (await rest(B, 'GET', `/service-policies?filter=${encodeURIComponent(`name = "${service}-dial"`)}`)).body.data[0];
    for (let i = 0; i < 10; i++) {
      // A fresh SDK context each time: one that saw the service go away keeps it out of its list until its next refresh.
      const d = startProcess(`ha-policy-${i}`, sdkecho, ['session', dialerId.file, service], { stdin: true });
      await d.waitForLine('ready', 60_000);
      assert.equal(await d.ask('dial 1', 30_000, /^(ok|error)/), 'ok 1');
      assert.equal(await d.ask('open', 30_000), 'opened');
      const changedAt = Date.now();
      assert.equal((await rest(B, 'PATCH', `/service-policies/${dialPolicy.id}`, { identityRoles: ['#nobody'] })).status, 200);
      for (;;) {
        const answer = await d.ask('exchange 1', 30_000, /^(ok|error)/);
        if (answer.startsWith('error')) break;
        if (Date.now() - changedAt > 10_000) assert.fail('the open connection still carries data 10 s after the policy was removed');
        await new Promise((r) => setTimeout(r, 20));
      }
      ended.push(Date.now() - changedAt);
      for (;;) {
        const answer = await d.ask('dial 1', 30_000, /^(ok|error)/);
        if (answer.startsWith('error')) break;
        if (Date.now() - changedAt > 10_000) assert.fail('dials still succeed 10 s after the policy was removed');
      }
      refused.push(Date.now() - changedAt);
      d.send('quit');
      await d.exited(20_000);
      assert.equal((await rest(C, 'PATCH', `/service-policies/${dialPolicy.id}`, { identityRoles: ['#ha-dialers'] })).status, 200);
    }
    const stat = (xs: number[]) => {
      const sorted = [...xs].sort((x, y) => x - y);
      return `median ${sorted[Math.floor(sorted.length / 2)]} ms, max ${sorted[sorted.length - 1]} ms`;
    };
    figure(`policy removed on B (restored on C), 10 tries: open connection ended after ${stat(ended)}; next dial refused after ${stat(refused)}`);
  });
});
