/**
 * The router data model with a real `ziti router` (v2.0): the router keeps the full model (identities, services,
 * configs, policies, posture checks, public keys) and its change sets, and acts on it as upstream's routers do.
 *
 * - The router's own tunneler (`ziti edge create edge-router rT -o rT.jwt -t`, `tunnel` listener in host mode) hosts
 *   a service: the router's tunneler identity (type Router, the router's id) gets a Bind policy, the service has a
 *   host.v1 config pointing at a local HTTP server; the tunneler learns this from the data model and creates a
 *   terminator (binding `tunnel`); `ziti tunnel proxy` on a client identity carries HTTP GETs to the server.
 *   When the Bind policy goes, the tunneler removes its terminator.
 * - A dialing SDK (Go SDK, `sdkecho session`) with a connection open loses it when its identity loses Dial access
 *   (its policy deleted). Two paths close it, as with upstream: the session removal (the controller ends the
 *   session's circuits) and the router's own data model (a change set takes the identity out of the policy; the
 *   router closes circuits of services the identity may no longer dial, "dial access lost"). Here the first one
 *   usually wins: the test checks the SDK's connection fails and shows what the router logged.
 *
 * Run by `node test/interop/run.mjs --only router/model`, which passes the controller's address, credentials and
 * CA file and the `ziti` program in ZITI_BIN. Loopback only.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import {
  createEdgeRouter, enrollRouter, freePort, startProcess, startRouter, waitFor, writeRouterConfig, ziti, zitiCli,
  type EdgeRest, type PeerProcess, type RouterConfig, type RouterHandle, type RouterProcess,
} from './harness.ts';
import { closeServer, cliId, enrolledIdentity, fetchPage, routerSuite, terminators, waitListening, waitOnlineSynced, waitTerminators } from './kit.ts';

const ONLINE_WITHIN_MS = 20_000;
/** How long the router's tunneler may take to host a service once it may (a change set, then its terminator). */
const HOST_WITHIN_MS = 30_000;
const PEER_RUN_MS = 60_000;

let httpServer: Server | undefined;
const suite = routerSuite({ sdkecho: true, onEnd: () => closeServer(httpServer) });
let admin: EdgeRest;
let sdkecho = '';
before(async () => {
  ({ admin, sdkecho } = await suite.ready);
});

// ---------------------------------------------------------------------------------------------------------------
// Helpers

/** The router log written since `from` (a length read before). */
function logSince(proc: RouterProcess, from: number): string {
  return readFileSync(proc.logFile, 'utf8').slice(from);
}

// ---------------------------------------------------------------------------------------------------------------

describe('the router data model in a real router', () => {
  let rT: RouterHandle;
  let rTConfig: RouterConfig;
  let rTProc: RouterProcess | undefined;
  let ready = false;

  function needReady(): RouterProcess {
    if (!ready || !rTProc) assert.fail('rT was not set up (see the first failure)');
    return rTProc;
  }

  it('setup: rT (tunneler enabled) is created, enrolled and run, gets the full model and is online and synced', async () => {
    rT = await createEdgeRouter('rT', { tunneler: true });
    // The tunneler's identity: type Router, the router's id and name.
    const identity = await admin.data(`/identities/${rT.id}`);
    assert.equal(identity.name, 'rT');
    assert.equal(identity.type?.name ?? identity.typeId, 'Router');
    rTConfig = await writeRouterConfig(rT);
    assert.match(readFileSync(rTConfig.configFile, 'utf8'), /binding: tunnel[\s\S]*mode: host/, 'the router config has a tunnel listener in host mode');
    enrollRouter(rTConfig.configFile, rT.jwtFile);
    const started = Date.now();
    rTProc = startRouter(rTConfig.configFile);
    const proc = rTProc;
    await waitOnlineSynced(admin, rT, proc, ONLINE_WITHIN_MS);
    await waitFor(() => /received full router data model state/.test(readFileSync(proc.logFile, 'utf8')), ONLINE_WITHIN_MS - (Date.now() - started) + 5_000, {
      what: 'rT to log the full data model state',
    });
    const log = readFileSync(proc.logFile, 'utf8');
    assert.ok(!/gap detected/.test(log), 'no gap in the data model');
    ready = true;
  });

  it('the router\'s tunneler hosts a service (host.v1) once its identity may bind it; ziti tunnel proxy reaches it', async () => {
    const proc = needReady();
    const page = `<html><body>portcullis model suite ${Math.random().toString(36).slice(2)}</body></html>\n`;
    let served = 0;
    httpServer = createHttpServer((_req, res) => {
      served++;
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(page);
    });
    await new Promise<void>((r) => httpServer!.listen(0, '127.0.0.1', () => r()));
    const httpPort = (httpServer.address() as { port: number }).port;

    const client = await enrolledIdentity(admin, 'rt-client', ['rt-clients']);
    zitiCli(['edge', 'create', 'config', 'rt-web-host', 'host.v1', JSON.stringify({ protocol: 'tcp', address: '127.0.0.1', port: httpPort })]);
    const webId = await cliId(admin, 'services', 'rt-web', (({ stdout, stderr }) => stdout + stderr)(zitiCli(['edge', 'create', 'service', 'rt-web', '--configs', 'rt-web-host'])));
    zitiCli(['edge', 'create', 'edge-router-policy', 'rt-clients', '--edge-router-roles', `@${rT.id}`, '--identity-roles', '#rt-clients']);
    zitiCli(['edge', 'create', 'service-edge-router-policy', 'rt-services', '--edge-router-roles', `@${rT.id}`, '--service-roles', '#all']);
    zitiCli(['edge', 'create', 'service-policy', 'rt-web-dial', 'Dial', '--service-roles', '@rt-web', '--identity-roles', '#rt-clients']);
    assert.deepEqual(await terminators(admin, `service = "${webId}"`), [], 'nobody hosts rt-web yet');

    // The router's own identity may bind the service: its tunneler hosts it.
    zitiCli(['edge', 'create', 'service-policy', 'rt-web-bind', 'Bind', '--service-roles', '@rt-web', '--identity-roles', `@${rT.id}`]);
    const [t] = await waitTerminators(admin, `service = "${webId}"`, 'the terminator of rt-web (rT\'s tunneler)', HOST_WITHIN_MS, (l) => l.length === 1);
    assert.equal(t.routerId, rT.id);
    assert.equal(t.binding, 'tunnel');

    const proxyPort = await freePort();
    const proxy: PeerProcess = startProcess('rt-tunnel-proxy', ziti(), ['tunnel', 'proxy', `rt-web:${proxyPort}`, '--identity', client.file]);
    try {
      await waitListening(proxyPort, 30_000, () => (proxy.exit ? `ziti tunnel proxy exited ${JSON.stringify(proxy.exit)}: ${proxy.tail()}` : undefined));
      for (let i = 0; i < 5; i++) {
        const r = await fetchPage(proxyPort);
        assert.equal(r.status, 200, `GET ${i + 1} through the proxy`);
        assert.equal(r.body, page, `GET ${i + 1} returns the page`);
      }
      assert.equal(served, 5, 'the HTTP server answered every GET');
    } finally {
      await proxy.stop();
    }

    // Bind access gone (the policy deleted): the tunneler stops hosting and removes its terminator.
    const from = readFileSync(proc.logFile, 'utf8').length;
    zitiCli(['edge', 'delete', 'service-policy', 'rt-web-bind']);
    await waitTerminators(admin, `service = "${webId}"`, 'rT\'s tunneler to remove its terminator once it may not bind', HOST_WITHIN_MS, (l) => l.length === 0);
    console.error(`rT after the Bind policy went:\n${logSince(proc, from).split('\n').filter((l) => /rt-web|terminator|service/i.test(l)).slice(-5).join('\n')}`);
    assert.ok(!/gap detected/.test(logSince(proc, from)), 'no gap in the data model');
  });

  it('an SDK with a connection open loses it when its identity loses Dial access (its policy deleted)', async () => {
    const proc = needReady();
    const hostId = await enrolledIdentity(admin, 'rt-echo-host', ['rt-echo-hosts', 'rt-clients']);
    const dialer = await enrolledIdentity(admin, 'rt-echo-dialer', ['rt-echo-dialers', 'rt-clients']);
    const echoId = await cliId(admin, 'services', 'rt-echo', (({ stdout, stderr }) => stdout + stderr)(zitiCli(['edge', 'create', 'service', 'rt-echo'])));
    zitiCli(['edge', 'create', 'service-policy', 'rt-echo-bind', 'Bind', '--service-roles', '@rt-echo', '--identity-roles', '#rt-echo-hosts']);
    zitiCli(['edge', 'create', 'service-policy', 'rt-echo-dial', 'Dial', '--service-roles', '@rt-echo', '--identity-roles', '#rt-echo-dialers']);

    const host = startProcess('rt-echo-host', sdkecho, ['host', hostId.file, 'rt-echo']);
    const s = startProcess('rt-echo-session', sdkecho, ['session', dialer.file, 'rt-echo'], { stdin: true });
    try {
      await host.waitForLine('bound', PEER_RUN_MS);
      await waitTerminators(admin, `service = "${echoId}"`, 'the terminator of rt-echo', PEER_RUN_MS, (l) => l.length === 1);
      await s.waitForLine('ready', PEER_RUN_MS);
      assert.equal(await s.ask('open', PEER_RUN_MS), 'opened');
      assert.equal(await s.ask('exchange 3', PEER_RUN_MS), 'ok 3', 'the connection works with the policy in place');
      await new Promise((r) => setTimeout(r, 3_000));
      assert.equal(await s.ask('exchange 2', PEER_RUN_MS), 'ok 2', 'the connection still works a few seconds later');

      const from = readFileSync(proc.logFile, 'utf8').length;
      const deletedAt = Date.now();
      const res = await admin.request('DELETE', `/service-policies/${await admin.idByName('service-policies', 'rt-echo-dial')}`);
      assert.equal(res.status, 200);
      let last = '';
      await waitFor(async () => {
        last = await s.ask('exchange 1', 20_000);
        return last.startsWith('error');
      }, 15_000, { what: 'the open connection to fail once the Dial policy is gone', intervalMs: 200, lastSeen: () => last });
      const routerLog = logSince(proc, from);
      console.error(`${Date.now() - deletedAt} ms after the Dial policy was deleted the connection answered: ${last}`);
      console.error(`rT meanwhile:\n${routerLog.split('\n').slice(0, 30).join('\n')}`);
      assert.ok(!/gap detected/.test(routerLog), 'no gap in the data model');
    } finally {
      s.send('quit');
      await s.exited(20_000).catch(() => s.kill9());
      await host.stop();
    }
  });
});
