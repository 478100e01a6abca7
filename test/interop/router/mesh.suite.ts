/**
 * A mesh of upstream routers (`ziti router`, v2.0): four edge routers whose link groups make two paths from A to C,
 * through B and through D (A dials B and D, C dials B and D; A and C never link, nor B and D). D costs 100, so
 * while both paths are up circuits go through B. They learn each other from the controller, link, report their
 * links' latencies in their metrics (every second here), and the controller routes circuits across them:
 *
 * - every link's latency is measured at both ends and its cost is its static cost plus both, in milliseconds;
 * - an SDK on A reaches a host on C across two links; the route path is A, B, C;
 * - B killed mid-exchange ends the circuit, and new circuits go through D; B back (its new links measured), they
 *   go through B again;
 * - a link taken down, or given a static cost above D's, carries no new circuit: they go through D; restored,
 *   through B;
 * - B marked `noTraversal` can not carry the circuit (it goes through D); D as well, dials fail; cleared, they work;
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
/** Links heartbeat every 10 s; the first answer is the first latency sample, reported within a second. */
const MEASURED_WITHIN_MS = 45_000;
/** What each end of a link counts until its router has measured it (nanoseconds). */
const INITIAL_LATENCY_NS = 65_000_000_000;

const suite = routerSuite({ sdkecho: true });
let admin: EdgeRest;
let fabric: EdgeRest;
let sdkecho = '';
before(async () => {
  ({ admin, sdkecho } = await suite.ready);
  fabric = new EdgeRest('fabric');
  fabric.token = admin.token;
});

type Name = 'A' | 'B' | 'C' | 'D';
interface MeshRouter {
  handle: RouterHandle;
  config: RouterConfig;
  run: RouterProcess;
}
const routers: Record<Name, MeshRouter> = {} as never;

/** Sets the router's link dialer and listener groups: a router dials only listeners that share a group. */
function setLinkGroups(configFile: string, dialerGroups: string[], listenerGroups: string[]): void {
  const config = parseYaml(readFileSync(configFile, 'utf8'));
  config.link.dialers = config.link.dialers.map((d: Record<string, unknown>) => ({ ...d, groups: dialerGroups }));
  config.link.listeners = config.link.listeners.map((l: Record<string, unknown>) => ({ ...l, groups: listenerGroups }));
  writeFileSync(configFile, stringifyYaml(config));
}

async function startMeshRouter(name: Name, dialers: string[], listeners: string[]): Promise<void> {
  const handle = await createEdgeRouter(`mesh-${name.toLowerCase()}`, { roleAttributes: [`mesh-${name.toLowerCase()}`] });
  const config = await writeRouterConfig(handle, { metricsReportInterval: '1s' });
  setLinkGroups(config.configFile, dialers, listeners);
  enrollRouter(config.configFile, handle.jwtFile);
  routers[name] = { handle, config, run: startRouter(config.configFile) };
}

async function identity(name: string, attribute: string): Promise<string> {
  return (await enrolledIdentity(admin, name, [attribute])).file;
}

/** The links as the fabric API has them. */
async function links(): Promise<any[]> {
  const res = await fabric.get('/links?limit=100');
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data as any[];
}

const joins = (l: any, a: MeshRouter, b: MeshRouter) =>
  [l.sourceRouter?.id, l.destRouter?.id].sort().join() === [a.handle.id, b.handle.id].sort().join();

/** The link between two routers (either direction), if there is one. */
async function linkBetween(a: MeshRouter, b: MeshRouter): Promise<any | undefined> {
  return (await links()).find((l) => joins(l, a, b));
}

async function linked(a: MeshRouter, b: MeshRouter): Promise<boolean> {
  return (await linkBetween(a, b)) !== undefined;
}

/** Waits until every link has been measured at both ends. */
async function allMeasured(what: string): Promise<any[]> {
  return waitFor(async () => {
    const all = await links();
    return all.length === 4 && all.every((l) => l.sourceLatency < INITIAL_LATENCY_NS && l.destLatency < INITIAL_LATENCY_NS) ? all : undefined;
  }, MEASURED_WITHIN_MS, { what, intervalMs: 1000 });
}

async function patchLink(link: any, body: Record<string, unknown>): Promise<void> {
  const res = await fabric.request('PATCH', `/links/${link.id}`, body);
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

/** One SDK context that dials on command (sdkecho session). */
function sessionPeer(name: string, identityFile: string, service: string): PeerProcess {
  return startProcess(name, sdkecho, ['session', identityFile, service], { stdin: true });
}

describe('a mesh of four routers: two paths from A to C', () => {
  let client: PeerProcess;
  let hostC: PeerProcess;
  let hostA: PeerProcess | undefined;
  let clientFile = '';
  let hostAFile = '';

  /** Opens a connection (one circuit, kept open), reads its route from the fabric API, closes it: router names. */
  const routeOfNewCircuit = async (): Promise<string> => {
    assert.equal(await client.ask('open', 60_000), 'opened');
    const res = await fabric.get(`/circuits?limit=100&filter=${encodeURIComponent('true sort by createdAt desc')}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const circuit = (res.body.data as any[])[0];
    assert.ok(circuit, 'the open connection has a circuit');
    assert.equal(await client.ask('exchange 2', 30_000), 'ok 2');
    assert.equal(await client.ask('close', 30_000), 'closed');
    const byId = new Map(Object.entries(routers).map(([name, r]) => [r.handle.id, name]));
    return (circuit.path.nodes as any[]).map((n) => byId.get(n.id) ?? n.id).join('');
  };

  it('routers link as their groups allow, show online, and measure every link', async () => {
    // A dials B and D; C dials B and D; B and D dial no one; A's and C's listeners share no group with a dialer.
    await startMeshRouter('A', ['ab', 'ad'], ['a-only']);
    await startMeshRouter('B', ['none'], ['ab', 'bc']);
    await startMeshRouter('C', ['bc', 'cd'], ['c-only']);
    await startMeshRouter('D', ['none'], ['ad', 'cd']);
    for (const r of Object.values(routers)) {
      await waitFor(async () => (await admin.edgeRouter(r.handle.id))?.isOnline === true || undefined, ONLINE_WITHIN_MS, { what: `${r.handle.name} online` });
    }
    const dCost = await admin.request('PATCH', `/edge-routers/${routers.D.handle.id}`, { cost: 100 });
    assert.equal(dCost.status, 200, JSON.stringify(dCost.body));
    for (const [a, b] of [['A', 'B'], ['C', 'B'], ['A', 'D'], ['C', 'D']] as const) {
      await waitFor(() => linked(routers[a], routers[b]), LINKED_WITHIN_MS, { what: `the ${a}-${b} link` });
    }
    assert.equal(await linked(routers.A, routers.C), false, 'A and C share no link group');
    assert.equal(await linked(routers.B, routers.D), false, 'B and D share no link group');
    // Until measured, each end counts 65 s; the routers' metrics replace that with what they measured.
    for (const l of await allMeasured('every link measured at both ends')) {
      assert.ok(l.sourceLatency > 0 && l.destLatency > 0, JSON.stringify(l));
      assert.equal(l.cost, l.staticCost + Math.trunc(l.sourceLatency / 1e6) + Math.trunc(l.destLatency / 1e6), JSON.stringify(l));
      assert.ok(l.cost < 100, `a loopback link costs less than D: ${JSON.stringify(l)}`);
    }
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
    hostC = startProcess('mesh-host-c', sdkecho, ['host', hostCFile, 'mesh-echo'], { stdin: true });
    await hostC.waitForLine('bound', BIND_WITHIN_MS);
    client = sessionPeer('mesh-client', clientFile, 'mesh-echo');
    await client.waitForLine('ready', 30_000);
    assert.equal(await client.ask('dial 20', 60_000), 'ok 20');
    assert.equal(await routeOfNewCircuit(), 'ABC');
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

  it('B killed mid-exchange ends the circuit; new circuits go through D, and through B again once it is back', async () => {
    await routers.B.run.kill9();
    assert.match(await client.ask('exchange 50 50', 60_000), /^error/);
    await waitFor(async () => (await admin.edgeRouter(routers.B.handle.id))?.isOnline === false || undefined, ONLINE_WITHIN_MS);
    assert.equal(await client.ask('dial 5', 60_000), 'ok 5');
    assert.equal(await routeOfNewCircuit(), 'ADC');
    routers.B.run = startRouter(routers.B.config.configFile);
    await waitFor(() => linked(routers.A, routers.B), LINKED_WITHIN_MS, { what: 'the A-B link again' });
    await waitFor(() => linked(routers.C, routers.B), LINKED_WITHIN_MS, { what: 'the C-B link again' });
    // B's new links count 65 s at each end until measured: D's path stays cheaper until then.
    await allMeasured("B's new links measured");
    assert.equal(await routeOfNewCircuit(), 'ABC');
  });

  it('a link taken down or made costly carries no new circuit; restored, it does (ziti fabric update link, REST)', async () => {
    const ab = await linkBetween(routers.A, routers.B);
    zitiCli(['fabric', 'update', 'link', ab.id, '--down']);
    assert.equal((await linkBetween(routers.A, routers.B)).down, true);
    assert.equal(await routeOfNewCircuit(), 'ADC', 'A-B is down');
    zitiCli(['fabric', 'update', 'link', ab.id, '--down=false']);
    assert.equal((await linkBetween(routers.A, routers.B)).down, false);
    assert.equal(await routeOfNewCircuit(), 'ABC');
    zitiCli(['fabric', 'update', 'link', ab.id, '--static-cost', '500']);
    const costly = await linkBetween(routers.A, routers.B);
    assert.equal(costly.staticCost, 500);
    assert.equal(costly.cost, 500 + Math.trunc(costly.sourceLatency / 1e6) + Math.trunc(costly.destLatency / 1e6));
    assert.equal(await routeOfNewCircuit(), 'ADC', 'A-B costs more than D');
    await patchLink(ab, { staticCost: 1 });
    assert.equal(await routeOfNewCircuit(), 'ABC');
  });

  it('a router marked noTraversal does not carry circuits; with both middles marked, dials fail; cleared, they work', async () => {
    const noTraversal = async (r: MeshRouter, value: boolean) => {
      const patched = await admin.request('PATCH', `/edge-routers/${r.handle.id}`, { noTraversal: value });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
    };
    await noTraversal(routers.B, true);
    assert.equal(await routeOfNewCircuit(), 'ADC');
    await noTraversal(routers.D, true);
    assert.match(await client.ask('dial 1', 60_000), /^error/, 'no router may carry the circuit');
    await noTraversal(routers.B, false);
    await noTraversal(routers.D, false);
    assert.equal(await client.ask('dial 3', 60_000), 'ok 3');
    assert.equal(await routeOfNewCircuit(), 'ABC');
  });

  /** Changes a host's terminator through its SDK and router, then waits until REST shows the new value. */
  async function hostTerminator(host: PeerProcess, terminatorId: string, field: 'cost' | 'precedence', value: number | string): Promise<void> {
    assert.equal(await host.ask(`${field} ${value}`, 30_000, /^(cost|precedence|error) /), `${field} ${value}`);
    await waitFor(async () => ((await admin.data(`/terminators/${terminatorId}`)) as any)[field] === value || undefined, 10_000, { what: `terminator ${field} ${value}` });
  }

  it('two hosts of one service: near first, spread at random, required wins, failover; both listed', async () => {
    hostA = startProcess('mesh-host-a', sdkecho, ['host', hostAFile, 'mesh-echo'], { stdin: true });
    await hostA.waitForLine('bound', BIND_WITHIN_MS);
    // `host` prints "bound" once the service has any terminator, and C's already counts: wait for A's own.
    const termsOf = async () => (await admin.data(`/terminators?filter=${encodeURIComponent('service.name = "mesh-echo"')}`)) as any[];
    await waitFor(async () => (await termsOf()).some((t) => t.routerId === routers.A.handle.id) || undefined, BIND_WITHIN_MS, { what: "host A's terminator" });
    const list = zitiCli(['edge', 'list', 'terminators', 'service.name = "mesh-echo"']);
    const termRows = list.stdout.split('\n').filter((l) => l.includes('mesh-echo'));
    assert.equal(termRows.length, 2, list.stdout);

    // Where dials land: the connections a host accepted (a dialer's close can end one with an SDK read error rather
    // than a clean "peer closed", so those are not counted).
    const landed = (p: PeerProcess) => p.lines.filter((l) => l === 'accepted').length;
    const before = { a: landed(hostA), c: landed(hostC) };
    for (let i = 0; i < 6; i++) assert.equal(await client.ask('dial 1', 60_000), 'ok 1');
    await waitFor(() => landed(hostA!) - before.a === 6 || undefined, 10_000, { what: 'six dials at the near host (A)' });
    assert.equal(landed(hostC) - before.c, 0, 'smart routing never crossed two links for an equal host');

    const service = await admin.data(`/services?filter=${encodeURIComponent('name = "mesh-echo"')}`);
    const serviceId = (service as any[])[0].id;
    assert.equal((await admin.request('PATCH', `/services/${serviceId}`, { terminatorStrategy: 'random' })).status, 200);
    const spread = { a: landed(hostA), c: landed(hostC) };
    for (let i = 0; i < 16; i++) assert.equal(await client.ask('dial 1', 60_000), 'ok 1');
    await waitFor(() => landed(hostA!) + landed(hostC) - spread.a - spread.c === 16 || undefined, 10_000);
    assert.ok(landed(hostA) > spread.a && landed(hostC) > spread.c, `random reached both hosts (A ${landed(hostA) - spread.a}, C ${landed(hostC) - spread.c})`);

    assert.equal((await admin.request('PATCH', `/services/${serviceId}`, { terminatorStrategy: 'smartrouting' })).status, 200);
    const terms = (await admin.data(`/terminators?filter=${encodeURIComponent(`service = "${serviceId}"`)}`)) as any[];
    const onC = terms.find((t) => t.routerId === routers.C.handle.id);
    // A router's terminator is its SDK's to change (REST may not update it, as upstream): the host asks its router.
    await hostTerminator(hostC, onC.id, 'precedence', 'required');
    const req = { a: landed(hostA), c: landed(hostC) };
    for (let i = 0; i < 4; i++) assert.equal(await client.ask('dial 1', 60_000), 'ok 1');
    await waitFor(() => landed(hostC) - req.c === 4 || undefined, 10_000, { what: 'every dial at the required host (C)' });
    assert.equal(landed(hostA) - req.a, 0);

    await hostTerminator(hostC, onC.id, 'precedence', 'default');
    await hostA.stop();
    await waitFor(async () => (((await admin.data(`/terminators?filter=${encodeURIComponent(`service = "${serviceId}"`)}`)) as any[]).length === 1) || undefined, 10_000);
    const fail = landed(hostC);
    assert.equal(await client.ask('dial 2', 60_000), 'ok 2');
    await waitFor(() => landed(hostC) > fail || undefined, 10_000, { what: 'the dial failed over to C' });
    client.send('quit');
  });

  it('weighted and sticky honour terminator costs: the costly host gets no dials, a sticky dialer keeps its host', async () => {
    hostA = startProcess('mesh-host-a-again', sdkecho, ['host', hostAFile, 'mesh-echo'], { stdin: true });
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
    // Where dials land: the connections a host accepted (a dialer's close can end one with an SDK read error rather
    // than a clean "peer closed", so those are not counted).
    const landed = (p: PeerProcess) => p.lines.filter((l) => l === 'accepted').length;
    const patch = async (path: string, body: Record<string, unknown>) => {
      const res = await admin.request('PATCH', path, body);
      assert.equal(res.status, 200, JSON.stringify(res.body));
    };
    const costs = async (a: number, c: number) => {
      await hostTerminator(hostA!, terms.a.id, 'cost', a);
      await hostTerminator(hostC, terms.c.id, 'cost', c);
    };
    /** Runs `dials` commands; all of them must land on `host` (the other host gets none). */
    const allAt = async (host: PeerProcess, other: PeerProcess, dials: Array<() => Promise<void>>, what: string) => {
      const before = { host: landed(host), other: landed(other) };
      for (const dial of dials) await dial();
      await waitFor(() => landed(host) - before.host === dials.length || undefined, 10_000, { what });
      assert.equal(landed(other) - before.other, 0, what);
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
