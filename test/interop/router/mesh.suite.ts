/**
 * A mesh of upstream routers (`ziti router`, v2.0): three edge routers A, B, C whose link groups make a line
 * (A dials B, C dials B; A and C never link). They learn each other from the controller, link, and the controller
 * routes circuits across them:
 *
 * - an SDK on A reaches a host on C across two links; the session's route path is A, B, C;
 * - B killed mid-exchange ends the circuit, and with no path left dials fail cleanly; B back, dials work again;
 * - B marked `noTraversal` can not carry the circuit; cleared, it can;
 * - two hosts of one service (on A and on C): smart routing prefers the near one, `random` spreads dials over
 *   both, a `required` host wins over a nearer `default` one, a host that goes away fails over to the other;
 *   `ziti edge list terminators` shows both.
 * - `weighted` sends no dial to a host whose terminator costs 60000 while the other costs 0 (both ways round);
 *   `sticky` keeps a dialer that passes its stickiness token at its host after that host became the costlier one,
 *   while a dial without the token goes to the cheaper host.
 *
 * Run by `npm run test:interop` (suite `router`). Loopback only.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import {
  createEdgeRouter, enrollRouter, startProcess, startRouter, waitFor, writeRouterConfig, zitiCli,
  EdgeRest, type PeerProcess, type RouterConfig, type RouterHandle, type RouterProcess,
} from './harness.ts';
import { enrolledIdentity, routerSuite } from './kit.ts';

const ONLINE_WITHIN_MS = 30_000;
const LINKED_WITHIN_MS = 60_000;
const BIND_WITHIN_MS = 60_000;

const suite = routerSuite({ sdkecho: true });
let admin: EdgeRest;
let sdkecho = '';
before(async () => {
  ({ admin, sdkecho } = await suite.ready);
});

interface MeshRouter {
  handle: RouterHandle;
  config: RouterConfig;
  run: RouterProcess;
}
const routers: Record<'A' | 'B' | 'C', MeshRouter> = {} as never;

/** Sets the router's link dialer and listener groups: a router dials only listeners that share a group. */
function setLinkGroups(configFile: string, dialerGroups: string[], listenerGroups: string[]): void {
  const config = parseYaml(readFileSync(configFile, 'utf8'));
  config.link.dialers = config.link.dialers.map((d: Record<string, unknown>) => ({ ...d, groups: dialerGroups }));
  config.link.listeners = config.link.listeners.map((l: Record<string, unknown>) => ({ ...l, groups: listenerGroups }));
  writeFileSync(configFile, stringifyYaml(config));
}

async function startMeshRouter(name: 'A' | 'B' | 'C', dialers: string[], listeners: string[]): Promise<void> {
  const handle = await createEdgeRouter(`mesh-${name.toLowerCase()}`, { roleAttributes: [`mesh-${name.toLowerCase()}`] });
  const config = await writeRouterConfig(handle);
  setLinkGroups(config.configFile, dialers, listeners);
  enrollRouter(config.configFile, handle.jwtFile);
  routers[name] = { handle, config, run: startRouter(config.configFile) };
}

async function identity(name: string, attribute: string): Promise<string> {
  return (await enrolledIdentity(admin, name, [attribute])).file;
}

/** Links between two routers as the store has them (either direction). */
async function linked(a: MeshRouter, b: MeshRouter): Promise<boolean> {
  const fabric = new EdgeRest('fabric');
  fabric.token = admin.token;
  const res = await fabric.get('/links');
  if (res.status === 200) {
    return (res.body.data as any[]).some((l) => [l.sourceRouter?.id, l.destRouter?.id].sort().join() === [a.handle.id, b.handle.id].sort().join());
  }
  return false;
}

/** One SDK context that dials on command (sdkecho session). */
function sessionPeer(name: string, identityFile: string, service: string): PeerProcess {
  return startProcess(name, sdkecho, ['session', identityFile, service], { stdin: true });
}

describe('a line of three routers', () => {
  let client: PeerProcess;
  let hostC: PeerProcess;
  let hostA: PeerProcess | undefined;
  let clientFile = '';
  let hostAFile = '';

  it('routers link as their groups allow and show online', async () => {
    // A dials B; C dials B; B dials no one; A's and C's listeners share no group with any dialer but B's.
    await startMeshRouter('A', ['ab'], ['a-only']);
    await startMeshRouter('B', ['none'], ['ab', 'bc']);
    await startMeshRouter('C', ['bc'], ['c-only']);
    for (const r of Object.values(routers)) {
      await waitFor(async () => (await admin.edgeRouter(r.handle.id))?.isOnline === true || undefined, ONLINE_WITHIN_MS, { what: `${r.handle.name} online` });
    }
    await waitFor(() => linked(routers.A, routers.B), LINKED_WITHIN_MS, { what: 'the A-B link' });
    await waitFor(() => linked(routers.C, routers.B), LINKED_WITHIN_MS, { what: 'the C-B link' });
    assert.equal(await linked(routers.A, routers.C), false, 'A and C share no link group');
  });

  it('an SDK on A reaches a host on C across two links; the route path is A, B, C', async () => {
    clientFile = await identity('mesh-client', 'mesh-clients');
    const hostCFile = await identity('mesh-host-c', 'mesh-hosts-c');
    hostAFile = await identity('mesh-host-a', 'mesh-hosts-a');
    zitiCli(['edge', 'create', 'service', 'mesh-echo']);
    zitiCli(['edge', 'create', 'service-policy', 'mesh-bind', 'Bind', '--service-roles', '@mesh-echo', '--identity-roles', '#mesh-hosts-c,#mesh-hosts-a']);
    zitiCli(['edge', 'create', 'service-policy', 'mesh-dial', 'Dial', '--service-roles', '@mesh-echo', '--identity-roles', '#mesh-clients']);
    zitiCli(['edge', 'create', 'edge-router-policy', 'mesh-client-a', '--edge-router-roles', '#mesh-a', '--identity-roles', '#mesh-clients,#mesh-hosts-a']);
    zitiCli(['edge', 'create', 'edge-router-policy', 'mesh-host-c', '--edge-router-roles', '#mesh-c', '--identity-roles', '#mesh-hosts-c']);
    zitiCli(['edge', 'create', 'service-edge-router-policy', 'mesh-all', '--edge-router-roles', '#all', '--service-roles', '@mesh-echo']);
    hostC = startProcess('mesh-host-c', sdkecho, ['host', hostCFile, 'mesh-echo']);
    await hostC.waitForLine('bound', BIND_WITHIN_MS);
    client = sessionPeer('mesh-client', clientFile, 'mesh-echo');
    await client.waitForLine('ready', 30_000);
    assert.equal(await client.ask('dial 20', 60_000), 'ok 20');
    assert.equal(await client.ask('open', 60_000), 'opened');
    assert.equal(await client.ask('exchange 3', 30_000), 'ok 3');
    const sessions = await admin.get(`/sessions?limit=500&filter=${encodeURIComponent('type = "Dial"')}`);
    assert.equal(sessions.status, 200, JSON.stringify(sessions.body));
    const paths = await Promise.all((sessions.body.data as any[]).map(async (s) => (await admin.get(`/sessions/${s.id}/route-path`)).body.data.routePath));
    assert.ok(
      paths.some((p: string[]) => p.join() === [routers.A.handle.id, routers.B.handle.id, routers.C.handle.id].join()),
      `route paths: ${JSON.stringify(paths)}`,
    );
  });

  it('B killed mid-exchange ends the circuit and dials fail without a path; B back, dials work', async () => {
    await routers.B.run.kill9();
    assert.match(await client.ask('exchange 50 50', 60_000), /^error/);
    await waitFor(async () => (await admin.edgeRouter(routers.B.handle.id))?.isOnline === false || undefined, ONLINE_WITHIN_MS);
    assert.match(await client.ask('dial 1', 60_000), /^error/, 'no path from A to C without B');
    routers.B.run = startRouter(routers.B.config.configFile);
    await waitFor(() => linked(routers.A, routers.B), LINKED_WITHIN_MS, { what: 'the A-B link again' });
    await waitFor(() => linked(routers.C, routers.B), LINKED_WITHIN_MS, { what: 'the C-B link again' });
    await waitFor(async () => ((await client.ask('dial 5', 60_000)) === 'ok 5') || undefined, 60_000, { what: 'a dial across B again', intervalMs: 1000 });
  });

  it('a router marked noTraversal does not carry circuits; cleared, it does', async () => {
    const patched = await admin.request('PATCH', `/edge-routers/${routers.B.handle.id}`, { noTraversal: true });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.match(await client.ask('dial 1', 60_000), /^error/);
    assert.equal((await admin.request('PATCH', `/edge-routers/${routers.B.handle.id}`, { noTraversal: false })).status, 200);
    assert.equal(await client.ask('dial 3', 60_000), 'ok 3');
  });

  it('two hosts of one service: near first, spread at random, required wins, failover; both listed', async () => {
    hostA = startProcess('mesh-host-a', sdkecho, ['host', hostAFile, 'mesh-echo']);
    await hostA.waitForLine('bound', BIND_WITHIN_MS);
    // `host` prints "bound" once the service has any terminator, and C's already counts: wait for A's own.
    const termsOf = async () => (await admin.data(`/terminators?filter=${encodeURIComponent('service.name = "mesh-echo"')}`)) as any[];
    await waitFor(async () => (await termsOf()).some((t) => t.routerId === routers.A.handle.id) || undefined, BIND_WITHIN_MS, { what: "host A's terminator" });
    const list = zitiCli(['edge', 'list', 'terminators', 'service.name = "mesh-echo"']);
    const termRows = list.stdout.split('\n').filter((l) => l.includes('mesh-echo'));
    assert.equal(termRows.length, 2, list.stdout);

    const closes = (p: PeerProcess) => p.lines.filter((l) => l === 'peer closed').length;
    const before = { a: closes(hostA), c: closes(hostC) };
    for (let i = 0; i < 6; i++) assert.equal(await client.ask('dial 1', 60_000), 'ok 1');
    await waitFor(() => closes(hostA!) - before.a === 6 || undefined, 10_000, { what: 'six dials at the near host (A)' });
    assert.equal(closes(hostC) - before.c, 0, 'smart routing never crossed two links for an equal host');

    const service = await admin.data(`/services?filter=${encodeURIComponent('name = "mesh-echo"')}`);
    const serviceId = (service as any[])[0].id;
    assert.equal((await admin.request('PATCH', `/services/${serviceId}`, { terminatorStrategy: 'random' })).status, 200);
    const spread = { a: closes(hostA), c: closes(hostC) };
    for (let i = 0; i < 16; i++) assert.equal(await client.ask('dial 1', 60_000), 'ok 1');
    await waitFor(() => closes(hostA!) + closes(hostC) - spread.a - spread.c === 16 || undefined, 10_000);
    assert.ok(closes(hostA) > spread.a && closes(hostC) > spread.c, `random reached both hosts (A ${closes(hostA) - spread.a}, C ${closes(hostC) - spread.c})`);

    assert.equal((await admin.request('PATCH', `/services/${serviceId}`, { terminatorStrategy: 'smartrouting' })).status, 200);
    const terms = (await admin.data(`/terminators?filter=${encodeURIComponent(`service = "${serviceId}"`)}`)) as any[];
    const onC = terms.find((t) => t.routerId === routers.C.handle.id);
    assert.equal((await admin.request('PATCH', `/terminators/${onC.id}`, { precedence: 'required' })).status, 200);
    const req = { a: closes(hostA), c: closes(hostC) };
    for (let i = 0; i < 4; i++) assert.equal(await client.ask('dial 1', 60_000), 'ok 1');
    await waitFor(() => closes(hostC) - req.c === 4 || undefined, 10_000, { what: 'every dial at the required host (C)' });
    assert.equal(closes(hostA) - req.a, 0);

    assert.equal((await admin.request('PATCH', `/terminators/${onC.id}`, { precedence: 'default' })).status, 200);
    await hostA.stop();
    await waitFor(async () => (((await admin.data(`/terminators?filter=${encodeURIComponent(`service = "${serviceId}"`)}`)) as any[]).length === 1) || undefined, 10_000);
    const fail = closes(hostC);
    assert.equal(await client.ask('dial 2', 60_000), 'ok 2');
    await waitFor(() => closes(hostC) > fail || undefined, 10_000, { what: 'the dial failed over to C' });
    client.send('quit');
  });

  it('weighted and sticky honour terminator costs: the costly host gets no dials, a sticky dialer keeps its host', async () => {
    hostA = startProcess('mesh-host-a-again', sdkecho, ['host', hostAFile, 'mesh-echo']);
    await hostA.waitForLine('bound', BIND_WITHIN_MS);
    const serviceId = ((await admin.data(`/services?filter=${encodeURIComponent('name = "mesh-echo"')}`)) as any[])[0].id;
    const terms = await waitFor(async () => {
      const list = (await admin.data(`/terminators?filter=${encodeURIComponent(`service = "${serviceId}"`)}`)) as any[];
      const a = list.find((t) => t.routerId === routers.A.handle.id);
      const c = list.find((t) => t.routerId === routers.C.handle.id);
      return a && c ? { a, c } : undefined;
    }, BIND_WITHIN_MS, { what: 'a terminator on A and on C' });
    const dialer = sessionPeer('mesh-client-costs', clientFile, 'mesh-echo');
    await dialer.waitForLine('ready', 30_000);
    const closes = (p: PeerProcess) => p.lines.filter((l) => l === 'peer closed').length;
    const patch = async (path: string, body: Record<string, unknown>) => {
      const res = await admin.request('PATCH', path, body);
      assert.equal(res.status, 200, JSON.stringify(res.body));
    };
    const costs = async (a: number, c: number) => {
      await patch(`/terminators/${terms.a.id}`, { cost: a });
      await patch(`/terminators/${terms.c.id}`, { cost: c });
    };
    /** Runs `dials` commands; all of them must land on `host` (the other host gets none). */
    const allAt = async (host: PeerProcess, other: PeerProcess, dials: Array<() => Promise<void>>, what: string) => {
      const before = { host: closes(host), other: closes(other) };
      for (const dial of dials) await dial();
      await waitFor(() => closes(host) - before.host === dials.length || undefined, 10_000, { what });
      assert.equal(closes(other) - before.other, 0, what);
    };
    const plainDial = async () => assert.equal(await dialer.ask('dial 1', 60_000), 'ok 1');
    const tokens: string[] = [];
    const stickyDial = async () => {
      const answer = await dialer.ask('stickydial 1', 60_000);
      const m = /^ok 1 (\S+)$/.exec(answer);
      assert.ok(m, answer);
      tokens.push(m[1]!);
    };

    // weighted: a host's weight is 1 / (1 + path cost + its cost); at cost 60000 it is as good as never chosen.
    await patch(`/services/${serviceId}`, { terminatorStrategy: 'weighted' });
    await costs(60_000, 0);
    await allAt(hostC, hostA, Array(6).fill(plainDial), 'weighted: every dial at C while A costs 60000');
    await costs(0, 60_000);
    await allAt(hostA, hostC, Array(6).fill(plainDial), 'weighted: every dial at A while C costs 60000');

    // sticky: without a token the cheapest host (A); with it, that host even once it is the costlier one.
    await patch(`/services/${serviceId}`, { terminatorStrategy: 'sticky' });
    await allAt(hostA, hostC, [stickyDial], 'sticky: the first dial at the cheapest host (A)');
    assert.equal(tokens[0], terms.a.id, 'the stickiness token names the chosen terminator');
    await costs(60_000, 0);
    await allAt(hostA, hostC, Array(3).fill(stickyDial), 'sticky: the token keeps the dials at A');
    assert.deepEqual(tokens, Array(4).fill(terms.a.id));
    await allAt(hostC, hostA, [plainDial], 'sticky: a dial without the token goes to the cheapest host (C)');

    await costs(0, 0);
    await patch(`/services/${serviceId}`, { terminatorStrategy: 'smartrouting' });
    dialer.send('quit');
  });
});
