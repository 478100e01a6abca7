/**
 * SDK traffic through one upstream edge router (`ziti router`, v2.0) joined to the controller: real SDKs host and
 * dial services through it and the controller's terminators, circuits and policies decide what flows.
 *
 * - The Go SDK (`test/interop/go/cmd/sdkecho`, built here) hosts an echo service and dials it: many lines, dials in
 *   a row, two dialers at once, clean closes on both sides; the terminator the router creates shows over REST and
 *   goes when its host or the router stops.
 * - The Python `openziti` package (the C SDK; the Python suite's virtualenv, passed in PORTCULLIS_PYTHON) enrolls
 *   with its own enroll and dials the same Go-hosted service (`cdial.py`).
 * - A tunneler end to end: `ziti tunnel host` serves a local HTTP server (host.v1 config), `ziti tunnel proxy`
 *   carries HTTP GETs to it.
 * - Policy on the wire: a deleted Dial policy, deleted API sessions, an identity without an edge-router policy.
 * - Faults: the router killed (SIGKILL) mid-exchange, then restarted: the host binds again by itself.
 *
 * Run by `npm run test:interop` (suite `router`, `--only router`), which passes the controller's address,
 * credentials and CA file, the `ziti` program in ZITI_BIN and the Python in PORTCULLIS_PYTHON. Loopback only.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createEdgeRouter, enrollRouter, freePort, runProcess, sleep, startProcess, startRouter, waitFor, workDir, writeRouterConfig, ziti, zitiCli,
  type EdgeRest, type PeerProcess, type RouterConfig, type RouterHandle, type RouterProcess,
} from './harness.ts';
import {
  brief, closeServer, cliId, createIdentity, enrollIdentity, fetchPage, routerSuite, terminators, waitListening, waitOnlineSynced, waitTerminators, type Identity,
} from './kit.ts';

const here = dirname(fileURLToPath(import.meta.url));

/** How long a router may take to come online (and sync) once started. */
const ONLINE_WITHIN_MS = 20_000;
/** "Within a few seconds": how fast a terminator must go once its host or its router is gone. */
const GONE_WITHIN_MS = 5_000;
/** How long a host SDK may take to bind (again) once its router is there. */
const BIND_WITHIN_MS = 60_000;
/** One SDK run (a dial with its exchange) on this small, shared machine. */
const PEER_RUN_MS = 60_000;

let httpServer: Server | undefined;
const suite = routerSuite({ sdkecho: true, onEnd: () => closeServer(httpServer) });
let admin: EdgeRest;
/** The built sdkecho program (Go SDK peer). */
let sdkecho = '';
before(async () => {
  ({ admin, sdkecho } = await suite.ready);
});

// ---------------------------------------------------------------------------------------------------------------
// Helpers

/** Runs `sdkecho dial <identity> <service> <n>` to its end; asserts "ok <n>" and exit 0. */
async function goDial(identity: Identity, service: string, count: number, name = `dial-${identity.name}`): Promise<void> {
  const r = await runProcess(name, sdkecho, ['dial', identity.file, service, String(count)], PEER_RUN_MS);
  assert.equal(r.exit.code, 0, `sdkecho dial ${identity.name} ${service} ${count} exited ${JSON.stringify(r.exit)}:\n${r.stdout.join('\n')}\n${r.stderr.slice(-3000)}`);
  assert.deepEqual(r.stdout.filter(Boolean), [`ok ${count}`]);
}

/** How many "peer closed" lines a host printed so far. */
function peerCloses(p: PeerProcess): number {
  return p.lines.filter((l) => l === 'peer closed').length;
}

/** Waits until a host printed at least `n` "peer closed" lines. */
async function waitPeerCloses(p: PeerProcess, n: number, timeoutMs = 10_000): Promise<void> {
  await waitFor(() => peerCloses(p) >= n, timeoutMs, { what: `${n} "peer closed" lines from ${p.name}`, lastSeen: () => p.tail(10) });
}

/** The listening sockets of a process (from /proc/net/tcp*, matched by the socket inodes in /proc/<pid>/fd). */
function listeningAddresses(pid: number): string[] {
  const r = spawnSync('sh', ['-c', `ls -l /proc/${pid}/fd 2>/dev/null | sed -n 's/.*socket:\\[\\([0-9]*\\)\\].*/\\1/p'`], { encoding: 'utf8' });
  const inodes = new Set(r.stdout.split('\n').filter(Boolean));
  const out: string[] = [];
  for (const [file, v6] of [['/proc/net/tcp', false], ['/proc/net/tcp6', true]] as const) {
    if (!existsSync(file)) continue;
    const rows = spawnSync('cat', [file], { encoding: 'utf8' }).stdout.split('\n').slice(1);
    for (const row of rows) {
      const cols = row.trim().split(/\s+/);
      if (cols.length < 10 || cols[3] !== '0A' || !inodes.has(cols[9])) continue; // 0A = LISTEN
      const [hexAddr, hexPort] = cols[1].split(':');
      const port = parseInt(hexPort, 16);
      let addr: string;
      if (!v6) addr = hexAddr.match(/../g)!.reverse().map((h) => parseInt(h, 16)).join('.');
      else addr = /^0+$/.test(hexAddr) ? '::' : hexAddr;
      out.push(`${addr}:${port}`);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------

describe('SDK traffic through one edge router', () => {
  let r1: RouterHandle;
  let r1Config: RouterConfig;
  let r1Proc: RouterProcess | undefined;
  let ready = false;
  let echoId = '';
  const ids: Record<string, Identity> = {};
  let host: PeerProcess | undefined;

  function needReady(): void {
    if (!ready) assert.fail('the network was not set up (see the first failure)');
  }

  function needHost(): PeerProcess {
    needReady();
    if (!host || host.exit) assert.fail(`the echo host is not running${host ? ` (${JSON.stringify(host.exit)})` : ''}`);
    return host;
  }

  async function startR1(): Promise<void> {
    r1Proc = startRouter(r1Config.configFile);
    await waitOnlineSynced(admin, r1, r1Proc, ONLINE_WITHIN_MS);
  }

  /** Starts the Go SDK host of echo and waits for "bound" and its terminator on r1. */
  async function startHost(): Promise<any> {
    host = startProcess('host', sdkecho, ['host', ids.host.file, 'echo']);
    await host.waitForLine('bound', BIND_WITHIN_MS);
    const [t] = await waitTerminators(admin, `service = "${echoId}"`, 'the terminator of echo', BIND_WITHIN_MS, (l) => l.length === 1);
    return t;
  }

  it('setup: r1 is created, enrolled and run, and is online and synced', async () => {
    r1 = await createEdgeRouter('r1', { tunneler: true });
    r1Config = await writeRouterConfig(r1);
    enrollRouter(r1Config.configFile, r1.jwtFile);
    await startR1();
  });

  it('setup: identities enrolled with ziti edge enroll, service echo and its policies made with the CLI', async () => {
    assert.ok(r1Proc, 'r1 runs');
    // Every identity that should reach r1 has the attribute "routed"; "outsider" has none to any router.
    const plan: Record<string, string[]> = {
      host: ['host', 'routed'],
      client: ['client', 'routed'],
      pyclient: ['client', 'routed'],
      revokable: ['revokable', 'routed'],
      dropped: ['client', 'routed'],
      outsider: ['host', 'client'],
      thost: ['web-hosts', 'routed'],
      tclient: ['web-clients', 'routed'],
    };
    for (const [name, attrs] of Object.entries(plan)) ids[name] = await createIdentity(admin, name, attrs);
    for (const [name, identity] of Object.entries(ids)) if (name !== 'pyclient') enrollIdentity(identity);
    echoId = await cliId(admin, 'services', 'echo', (({ stdout, stderr }) => stdout + stderr)(zitiCli(['edge', 'create', 'service', 'echo'])));
    zitiCli(['edge', 'create', 'service-policy', 'echo-bind', 'Bind', '--service-roles', '@echo', '--identity-roles', '#host']);
    zitiCli(['edge', 'create', 'service-policy', 'echo-dial', 'Dial', '--service-roles', '@echo', '--identity-roles', '#client']);
    zitiCli(['edge', 'create', 'service-policy', 'echo-dial-revokable', 'Dial', '--service-roles', '@echo', '--identity-roles', '#revokable']);
    zitiCli(['edge', 'create', 'edge-router-policy', 'routed', '--edge-router-roles', '#all', '--identity-roles', '#routed']);
    zitiCli(['edge', 'create', 'service-edge-router-policy', 'all', '--edge-router-roles', '#all', '--service-roles', '#all']);
    ready = true;
  });

  it('a Go SDK host binds echo: one terminator on r1 (binding edge, address = its id, cost 0, precedence default)', async () => {
    needReady();
    const t = await startHost();
    assert.equal(t.routerId, r1.id);
    assert.equal(t.router?.id, r1.id);
    assert.equal(t.router?.name, 'r1');
    assert.equal(t.serviceId, echoId);
    assert.equal(t.service?.name, 'echo');
    assert.equal(t.binding, 'edge');
    assert.equal(t.address, t.id, 'an SDK terminator\'s address is its id');
    assert.equal(t.cost, 0);
    assert.equal(t.precedence, 'default');
    // `identity` is the terminator's instance id (upstream's Terminator.InstanceId): the SDK bound without one. The
    // hosting identity (upstream's hostId) is not part of terminatorDetail, upstream's or ours.
    assert.equal(t.identity, '');
    assert.ok(!('hostId' in t), `no hostId in the REST detail: ${JSON.stringify(t)}`);
    assert.deepEqual(await admin.data(`/terminators/${encodeURIComponent(t.id)}`), t, 'GET /terminators/<id> shows the same');
    // The CLI's table: │ ID │ SERVICE │ ROUTER │ BINDING │ ADDRESS │ IDENTITY │ COST │ PRECEDENCE │ DYNAMIC COST │
    const out = zitiCli(['edge', 'list', 'terminators']).stdout;
    const row = out.split('\n').find((l) => l.includes(t.id));
    assert.ok(row, `ziti edge list terminators shows ${t.id}:\n${out}`);
    const cells = row.split('│').map((c) => c.trim());
    assert.ok(cells.includes('r1') && cells.includes('edge') && cells.includes('echo'), `service echo, router r1, binding edge: ${row}`);
  });

  it('a Go SDK dialer exchanges 200 lines with the host through r1; both sides close cleanly', async () => {
    const h = needHost();
    const closes = peerCloses(h);
    await goDial(ids.client, 'echo', 200);
    await waitPeerCloses(h, closes + 1);
  });

  it('five dials in a row, 50 lines each', async () => {
    const h = needHost();
    const closes = peerCloses(h);
    for (let i = 0; i < 5; i++) await goDial(ids.client, 'echo', 50, `dial-client-${i}`);
    await waitPeerCloses(h, closes + 5);
  });

  it('two dialers at once, 200 lines each', async () => {
    const h = needHost();
    const closes = peerCloses(h);
    await Promise.all([goDial(ids.client, 'echo', 200, 'dial-client-a'), goDial(ids.dropped, 'echo', 200, 'dial-dropped-a')]);
    await waitPeerCloses(h, closes + 2);
  });

  it('the Python openziti package (C SDK) enrolls with its own enroll and exchanges lines with the Go host', async () => {
    const h = needHost();
    const python = process.env.PORTCULLIS_PYTHON;
    assert.ok(python && existsSync(python), `PORTCULLIS_PYTHON names the Python of test/interop/.venv (made by test/interop/python/setup.sh): ${python}`);
    const script = join(here, 'cdial.py');
    const enrolled = await runProcess('cdial-enroll', python, [script, 'enroll', ids.pyclient.jwtFile, ids.pyclient.file], PEER_RUN_MS);
    assert.equal(enrolled.exit.code, 0, `the C SDK's enroll: ${JSON.stringify(enrolled.exit)}\n${enrolled.stdout.join('\n')}\n${enrolled.stderr.slice(-3000)}`);
    const closes = peerCloses(h);
    const dialed = await runProcess('cdial-dial', python, [script, 'dial', ids.pyclient.file, 'echo', '20'], PEER_RUN_MS);
    assert.equal(dialed.exit.code, 0, `the C SDK's dial: ${JSON.stringify(dialed.exit)}\n${dialed.stdout.join('\n')}\n${dialed.stderr.slice(-3000)}`);
    assert.deepEqual(dialed.stdout.filter((l) => /^ok /.test(l)), ['ok 20']);
    await waitPeerCloses(h, closes + 1);
  });

  it('a tunneler end to end: ziti tunnel host serves a local HTTP server, ziti tunnel proxy carries GETs to it', async () => {
    needReady();
    const page = `<html><body>portcullis traffic suite ${Math.random().toString(36).slice(2)}</body></html>\n`;
    let served = 0;
    httpServer = createHttpServer((req, res) => {
      served++;
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(page);
    });
    await new Promise<void>((r) => httpServer!.listen(0, '127.0.0.1', () => r()));
    const httpPort = (httpServer.address() as { port: number }).port;

    zitiCli(['edge', 'create', 'config', 'web-host', 'host.v1', JSON.stringify({ protocol: 'tcp', address: '127.0.0.1', port: httpPort })]);
    const webId = await cliId(admin, 'services', 'web', (({ stdout, stderr }) => stdout + stderr)(zitiCli(['edge', 'create', 'service', 'web', '--configs', 'web-host'])));
    zitiCli(['edge', 'create', 'service-policy', 'web-bind', 'Bind', '--service-roles', '@web', '--identity-roles', '#web-hosts']);
    zitiCli(['edge', 'create', 'service-policy', 'web-dial', 'Dial', '--service-roles', '@web', '--identity-roles', '#web-clients']);

    const tunnelHost = startProcess('tunnel-host', ziti(), ['tunnel', 'host', '--identity', ids.thost.file]);
    const [t] = await waitTerminators(admin, `service = "${webId}"`, 'the terminator of web (ziti tunnel host)', BIND_WITHIN_MS, (l) => l.length === 1);
    assert.equal(t.routerId, r1.id);
    assert.equal(t.binding, 'edge');
    assert.ok(!tunnelHost.exit, `ziti tunnel host runs: ${tunnelHost.tail()}`);

    const proxyPort = await freePort();
    const proxy = startProcess('tunnel-proxy', ziti(), ['tunnel', 'proxy', `web:${proxyPort}`, '--identity', ids.tclient.file]);
    await waitListening(proxyPort, 30_000, () => (proxy.exit ? `ziti tunnel proxy exited ${JSON.stringify(proxy.exit)}: ${proxy.tail()}` : undefined));
    // Upstream's proxy listens on every interface (it binds net.IPv4zero, with no option); this suite only ever
    // connects to it on 127.0.0.1, and it lives for this test only.
    console.error(`ziti tunnel proxy listens on ${listeningAddresses(proxy.pid).join(', ') || '(unknown)'}`);

    for (let i = 0; i < 5; i++) {
      const r = await fetchPage(proxyPort);
      assert.equal(r.status, 200, `GET ${i + 1} through the proxy`);
      assert.equal(r.body, page, `GET ${i + 1} through the proxy returns the page`);
    }
    assert.equal(served, 5, 'the HTTP server answered every GET');
    await proxy.stop();
    await tunnelHost.stop();
    await waitTerminators(admin, `service = "${webId}"`, 'the terminator of web to go with ziti tunnel host', GONE_WITHIN_MS, (l) => l.length === 0);
  });

  it('policy: once its Dial policy is deleted, an SDK that had a session is refused on its next dial', async () => {
    needHost();
    const s = startProcess('session-revokable', sdkecho, ['session', ids.revokable.file, 'echo'], { stdin: true });
    await s.waitForLine('ready', PEER_RUN_MS);
    assert.equal(await s.ask('dial 5', PEER_RUN_MS), 'ok 5', 'a dial with the policy in place');
    assert.ok(r1Proc);
    const routerLogFrom = readFileSync(r1Proc.logFile, 'utf8').length;
    const sdkLogFrom = s.stderr().length;
    zitiCli(['edge', 'delete', 'service-policy', 'echo-dial-revokable']);
    const answer = await s.ask('dial 5', PEER_RUN_MS);
    console.error(`dial after the policy was deleted: ${answer}`);
    assert.match(answer, /^error dial: unable to dial service 'echo'/, 'the dial fails');
    // On the wire: the SDK dials r1 with the session it holds. With a JWT API session (an OIDC login: what the Go SDK
    // does when /version lists OIDC_AUTH) r1 checks its data model itself, where the policy is gone ("no policies
    // provide access"); with a zt-session it asks the controller for a circuit and gets "invalid session" (the
    // session went with the policy)...
    const routerLog = readFileSync(r1Proc.logFile, 'utf8').slice(routerLogFrom);
    assert.ok(
      routerLog.split('\n').some((l) => (l.includes('failed to dial fabric') && l.includes('invalid session')) || (l.includes('no policies provide access') && l.includes('access denied'))),
      `r1 logs the refusal of the dial (its data model's, or the controller's):\n${routerLog.split('\n').slice(-20).join('\n')}`,
    );
    // ...then the SDK asks the controller for a new Dial session and is refused: the service is gone for it.
    assert.match(s.stderr().slice(sdkLogFrom), /failure creating Dial session to service echo.*NOT_FOUND/);
    s.send('quit');
    await s.exited(20_000).catch(() => s.kill9());
  });

  it('policy: deleting an SDK\'s API session over REST makes the router drop its connection', async () => {
    needHost();
    const s = startProcess('session-dropped', sdkecho, ['session', ids.dropped.file, 'echo'], { stdin: true });
    await s.waitForLine('ready', PEER_RUN_MS);
    assert.equal(await s.ask('open', PEER_RUN_MS), 'opened');
    assert.equal(await s.ask('exchange 3', PEER_RUN_MS), 'ok 3');
    const sessions = await admin.data(`/api-sessions?filter=${encodeURIComponent(`identity = "${ids.dropped.id}"`)}`);
    assert.ok(sessions.length >= 1, `the SDK has an API session: ${JSON.stringify(sessions)}`);
    for (const apiSession of sessions) {
      const res = await admin.request('DELETE', `/api-sessions/${apiSession.id}`);
      assert.equal(res.status, 200, `DELETE /api-sessions/${apiSession.id}: ${JSON.stringify(res.body)}`);
    }
    const deletedAt = Date.now();
    let last = '';
    await waitFor(async () => {
      last = await s.ask('exchange 1', 20_000);
      return last.startsWith('error');
    }, 15_000, { what: 'the open connection to fail after its API session was deleted', intervalMs: 500, lastSeen: () => last });
    console.error(`${Date.now() - deletedAt} ms after the API session was deleted, the open connection answered: ${last}`);
    s.send('quit');
    await s.exited(20_000).catch(() => s.kill9());
  });

  it('policy: an identity without an edge-router policy to r1 can neither bind nor dial (clear errors)', async () => {
    needHost();
    const bound = await runProcess('bind-outsider', sdkecho, ['bind', ids.outsider.file, 'echo', '10'], PEER_RUN_MS);
    console.error(`outsider bind: ${JSON.stringify(bound.exit)} ${bound.stderr.split('\n').filter(Boolean).slice(-3).join(' | ')}`);
    assert.notEqual(bound.exit.code, 0, `the bind fails: ${bound.stdout.join('\n')}`);
    assert.ok(!bound.stdout.includes('bound'), 'never bound');
    assert.match(bound.stderr, /listen: .*timed out waiting for 1 listeners/);
    // The controller refuses the Bind session (as upstream does when no edge router serves identity and service).
    assert.match(bound.stderr, /failure creating Bind session to service echo.*NO_EDGE_ROUTERS_AVAILABLE/);
    const hosted = await terminators(admin, `service = "${echoId}"`);
    assert.equal(hosted.length, 1, `echo still has only the host's terminator: ${brief(hosted)}`);

    const dialed = await runProcess('dial-outsider', sdkecho, ['dial', ids.outsider.file, 'echo', '1'], PEER_RUN_MS);
    console.error(`outsider dial: ${JSON.stringify(dialed.exit)} ${dialed.stderr.split('\n').filter(Boolean).slice(-3).join(' | ')}`);
    assert.notEqual(dialed.exit.code, 0, 'the dial fails');
    assert.match(dialed.stderr, /dial: unable to dial service 'echo'/);
    // The controller refuses the Dial session. (The SDK retries with backoff within its 5 s dial timeout, so its
    // final error is that refusal or "context deadline exceeded"; each refusal is logged.)
    assert.match(dialed.stderr, /failure creating Dial session to service echo.*NO_EDGE_ROUTERS_AVAILABLE: No edge routers are assigned and online/);
    // Refused at the session: the identity has none.
    const sessions = await admin.data(`/sessions?filter=${encodeURIComponent(`identity = "${ids.outsider.id}"`)}`);
    assert.deepEqual(sessions, [], 'no session was created for the outsider');
  });

  it('stopping the host removes its terminator within a few seconds', async () => {
    const h = needHost();
    const before = await terminators(admin, `service = "${echoId}"`);
    assert.equal(before.length, 1, brief(before));
    await h.stop();
    await waitTerminators(admin, `service = "${echoId}"`, 'the terminator of echo to go with its host', GONE_WITHIN_MS, (l) => l.length === 0);
    const t = await startHost();
    assert.notEqual(t.id, before[0].id, 'a new host, a new terminator');
  });

  it('stopping r1 removes its terminators within a few seconds', async () => {
    needHost();
    assert.ok(r1Proc);
    const before = await terminators(admin, `router = "${r1.id}"`);
    assert.ok(before.length >= 1, `r1 has terminators: ${brief(before)}`);
    await r1Proc.stop();
    await waitTerminators(admin, `router = "${r1.id}"`, 'the terminators of r1 to go with it', GONE_WITHIN_MS, (l) => l.length === 0);
  });

  it('r1 started again: the host binds again by itself and a new dial works', async () => {
    const h = needHost();
    await startR1();
    const onlineAt = Date.now();
    const [t] = await waitTerminators(admin, `service = "${echoId}"`, 'the host to bind echo again on r1', BIND_WITHIN_MS, (l) => l.length === 1);
    console.error(`the host bound echo again ${Date.now() - onlineAt} ms after r1 was online and synced`);
    assert.equal(t.routerId, r1.id);
    assert.ok(!h.exit, `the host still runs: ${h.tail()}`);
    await goDial(ids.client, 'echo', 20, 'dial-client-after-restart');
  });

  it('r1 killed (SIGKILL) mid-exchange: both SDKs see the failure and its terminators go within seconds', async () => {
    const h = needHost();
    assert.ok(r1Proc);
    const s = startProcess('session-client', sdkecho, ['session', ids.client.file, 'echo'], { stdin: true });
    await s.waitForLine('ready', PEER_RUN_MS);
    assert.equal(await s.ask('open', PEER_RUN_MS), 'opened');
    assert.equal(await s.ask('exchange 5', PEER_RUN_MS), 'ok 5');
    const hostLines = h.lines.length;
    const hostErr = h.stderr().length;
    const from = s.lines.length;
    s.send('exchange 1000 20'); // about 20 s of traffic
    await sleep(1_500);
    assert.equal(s.lines.length, from, 'the exchange is under way');
    await r1Proc.kill9();
    const killedAt = Date.now();
    const { line } = await s.waitForLine(/^(ok|error)/, 30_000, from);
    console.error(`dialer, ${Date.now() - killedAt} ms after the kill: ${line}`);
    assert.match(line, /^error /, 'the dialer sees its connection fail');
    await waitTerminators(admin, `router = "${r1.id}"`, 'the terminators of the killed r1 to go', GONE_WITHIN_MS, (l) => l.length === 0);
    // The host's side of that connection ends too: a close (EOF) or a read error.
    await waitFor(() => h.lines.slice(hostLines).includes('peer closed') || /read: /.test(h.stderr().slice(hostErr)), 20_000, {
      what: 'the host to see its side of the connection end',
      lastSeen: () => h.tail(10),
    });
    s.send('quit');
    await s.exited(20_000).catch(() => s.kill9());
  });

  it('r1 restarted after the kill: the host binds again by itself and a new dial works', async () => {
    const h = needHost();
    await startR1();
    const onlineAt = Date.now();
    const [t] = await waitTerminators(admin, `service = "${echoId}"`, 'the host to bind echo again on r1', BIND_WITHIN_MS, (l) => l.length === 1);
    console.error(`the host bound echo again ${Date.now() - onlineAt} ms after r1 was online and synced`);
    assert.equal(t.routerId, r1.id);
    assert.ok(!h.exit, `the host still runs: ${h.tail()}`);
    const closes = peerCloses(h);
    await goDial(ids.client, 'echo', 50, 'dial-client-after-kill');
    await waitPeerCloses(h, closes + 1);
  });
});
