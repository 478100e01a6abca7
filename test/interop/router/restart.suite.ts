/**
 * Routers and SDKs across controller restarts: this suite runs a Portcullis of its own (the runner's stays
 * untouched) so it can stop it. An edge router and a hosting Go SDK stay up while the controller is stopped
 * cleanly, then killed with SIGKILL with a circuit open; each time the restarted controller sees the router
 * reconnect by itself, the router re-creates the host's terminator (its API session survives the restart), and a
 * new dial works with the dialer's old API session. No circuit or terminator outlives the restart in REST.
 */
import { afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  adminRest, runProcess, createEdgeRouter, enrollRouter, freePort, startProcess, startRouter, waitFor,
  workDir, writeRouterConfig, zitiCli, type EdgeRest, type PeerProcess, type RouterHandle, type RouterProcess,
} from './harness.ts';
import { ownDatabase, routerSuite } from './kit.ts';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const dataDir = mkdtempSync(join(tmpdir(), 'portcullis-restart-'));
const adminPassword = `Restart-${Math.random().toString(36).slice(2)}-Pw1!`;
let port = 0;
let controllerProcess: ChildProcess | undefined;
let controllerLog = '';
/** Its own database when the suites run on PostgreSQL (never the database of the suite's shared controller). */
let database: { url: string; drop(): Promise<void> } | undefined;


function startController(): ChildProcess {
  const child = spawn(
    process.execPath,
    ['dist/main.js', '--data-dir', join(dataDir, 'data'), '--address', '127.0.0.1', '--port', String(port),
      '--advertise', '127.0.0.1', '--admin-user', 'admin', '--admin-password', adminPassword, '--log-level', 'info'],
    { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PORTCULLIS_DATABASE_URL: database?.url ?? '' } },
  );
  const keep = (chunk: Buffer) => {
    controllerLog = (controllerLog + chunk.toString()).slice(-200_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  controllerProcess = child;
  return child;
}

async function waitControllerReady(): Promise<void> {
  await waitFor(() => controllerLog.includes('Portcullis ready') || undefined, 60_000, { what: 'the controller to start', lastSeen: () => controllerLog.slice(-2000) });
}

async function stopController(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
  const child = controllerProcess;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((res) => child.once('exit', () => res()));
  child.kill(signal);
  await exited;
  controllerLog = '';
}

let admin: EdgeRest;
let router: RouterHandle;
let routerRun: RouterProcess;
let host: PeerProcess | undefined;
let sdkecho = '';
const service = 'restart-echo';

async function routerState(): Promise<any> {
  return (await admin.data(`/edge-routers/${router.id}`)) ?? {};
}

async function terminatorCount(): Promise<number> {
  const res = await admin.get(`/terminators?filter=${encodeURIComponent(`service.name = "${service}"`)}`);
  return (res.body?.data ?? []).length;
}

async function dialOk(count = 5): Promise<void> {
  const { exit, stdout, stderr } = await runProcess('dialer', sdkecho, ['dial', join(workDir(), 'client.json'), service, String(count)], 60_000);
  assert.equal(exit.code, 0, `dial failed: ${stderr}\n${stdout.join('\n')}`);
  assert.ok(stdout.includes(`ok ${count}`), stdout.join('\n'));
}

const suite = routerSuite({
  // A controller of its own, started before the suite's setup logs in to it.
  setup: async () => {
    port = await freePort();
    database = await ownDatabase('restart');
    startController();
    await waitControllerReady();
    process.env.PORTCULLIS_URL = `https://127.0.0.1:${port}`;
    process.env.PORTCULLIS_CA_FILE = join(dataDir, 'data', 'pki', 'root-ca.cert.pem');
    process.env.PORTCULLIS_ADMIN_USER = 'admin';
    process.env.PORTCULLIS_ADMIN_PASSWORD = adminPassword;
  },
  sdkecho: true,
  onEnd: async () => {
    await stopController('SIGTERM');
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

describe('routers and SDKs across controller restarts', () => {
  it('sets up a router, a hosted service and a working dial', async () => {
    router = await createEdgeRouter('restart-r1');
    const config = await writeRouterConfig(router);
    enrollRouter(config.configFile, router.jwtFile);
    routerRun = startRouter(config.configFile);
    for (const name of ['host', 'client']) {
      zitiCli(['edge', 'create', 'identity', `restart-${name}`, '-o', join(workDir(), `${name}.jwt`), '-a', `restart-${name}s`]);
      zitiCli(['edge', 'enroll', join(workDir(), `${name}.jwt`), '-o', join(workDir(), `${name}.json`)]);
      assert.ok(existsSync(join(workDir(), `${name}.json`)), `${name} identity enrolled`);
    }
    zitiCli(['edge', 'create', 'service', service]);
    zitiCli(['edge', 'create', 'service-policy', `${service}-bind`, 'Bind', '--service-roles', `@${service}`, '--identity-roles', '#restart-hosts']);
    zitiCli(['edge', 'create', 'service-policy', `${service}-dial`, 'Dial', '--service-roles', `@${service}`, '--identity-roles', '#restart-clients']);
    zitiCli(['edge', 'create', 'edge-router-policy', 'restart-all', '--edge-router-roles', '#all', '--identity-roles', '#all']);
    zitiCli(['edge', 'create', 'service-edge-router-policy', 'restart-all', '--edge-router-roles', '#all', '--service-roles', '#all']);
    await waitFor(async () => (await routerState()).syncStatus === 'SYNC_DONE' || undefined, 30_000);
    host = startProcess('host', sdkecho, ['host', join(workDir(), 'host.json'), service]);
    await host.waitForLine('bound', 30_000);
    await waitFor(async () => (await terminatorCount()) === 1 || undefined, 20_000);
    await dialOk();
  });

  it('after a clean controller restart the router reconnects, the host is hosted again and dials work', async () => {
    await stopController('SIGTERM');
    startController();
    await waitControllerReady();
    admin = await adminRest();
    assert.equal(await terminatorCount(), 0, 'no terminator outlives the restart');
    await waitFor(async () => (await routerState()).isOnline === true || undefined, 60_000);
    await waitFor(async () => (await routerState()).syncStatus === 'SYNC_DONE' || undefined, 30_000);
    // The router re-creates its SDKs' terminators a little after it reconnects.
    await waitFor(async () => (await terminatorCount()) === 1 || undefined, 60_000);
    await dialOk();
  });

  it('after SIGKILL with a circuit open the restarted controller recovers the same way', async () => {
    const dialer = startProcess('long-dialer', sdkecho, ['dial', join(workDir(), 'client.json'), service, '100000']);
    await new Promise((r) => setTimeout(r, 1500));
    await stopController('SIGKILL');
    startController();
    await waitControllerReady();
    admin = await adminRest();
    await waitFor(async () => (await routerState()).isOnline === true || undefined, 60_000);
    await waitFor(async () => (await terminatorCount()) === 1 || undefined, 60_000);
    await dialOk();
    await dialer.stop();
    assert.equal(routerRun.exit, undefined, 'the router kept running throughout');
  });
});
