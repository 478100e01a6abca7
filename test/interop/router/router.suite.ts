/**
 * Upstream routers (`ziti router`, v2.0) join the controller: an edge router (tunneler enabled) is created with the
 * CLI, configured, enrolled and run on loopback, and must show up online over REST with the facts it reports
 * (hostname, edge listener, sync status, version), in `ziti edge list edge-routers` and in the client API's list
 * of an identity that has an edge-router policy to it; stopping it takes it offline, starting it again brings it
 * back. A transit router does the same through the fabric view. Run by `npm run test:interop` (suite `router`,
 * `--only router`), which passes the controller's address, credentials and CA file, and the program in ZITI_BIN.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import {
  clientSession, createEdgeRouter, createTransitRouter, createUpdbIdentity, ctrlEndpoint,
  enrollRouter, jwtPayload, startRouter, waitFor, writeRouterConfig, zitiCli,
  type EdgeRest, type RouterConfig, type RouterHandle, type RouterProcess,
} from './harness.ts';
import { routerSuite } from './kit.ts';

/** How long a router may take to come online (or to be seen offline) once started (or stopped). */
const ONLINE_WITHIN_MS = 20_000;
/** The version the v2.0.0-pre3 `ziti` program reports for itself (`ziti version`) and in its router hello. */
const ROUTER_VERSION = 'v2.0.0-pre3';

const suite = routerSuite();
let admin: EdgeRest;
before(async () => {
  ({ admin } = await suite.ready);
});

/** A short summary of a router's REST state, for timeout messages. */
function summary(r: any): string {
  if (!r) return 'nothing yet';
  const { isOnline, hostname, supportedProtocols, syncStatus, versionInfo, isVerified } = r;
  return JSON.stringify({ isOnline, isVerified, hostname, supportedProtocols, syncStatus, version: versionInfo?.version });
}

/** The files a router config names for the router's identity. */
function identityFiles(configFile: string): string[] {
  const cfg = parseYaml(readFileSync(configFile, 'utf8'));
  return [cfg.identity.cert, cfg.identity.server_cert, cfg.identity.key, cfg.identity.ca];
}

/** Asserts the config generated for a router is loopback-only and points at the controller. */
function assertLoopbackConfig(rc: RouterConfig, edge: boolean): void {
  const text = readFileSync(rc.configFile, 'utf8');
  assert.doesNotMatch(text, /0\.0\.0\.0/, 'no bind on all interfaces is left');
  const cfg = parseYaml(text);
  assert.equal(cfg.ctrl.endpoint, ctrlEndpoint(), 'the control endpoint is the controller under test');
  const links = cfg.link?.listeners ?? [];
  assert.equal(links.length, 1, 'one link listener');
  assert.equal(links[0].bind, `tls:127.0.0.1:${rc.linkPort}`);
  assert.equal(links[0].advertise, `tls:127.0.0.1:${rc.linkPort}`);
  const edgeListeners = (cfg.listeners ?? []).filter((l: any) => l.binding === 'edge');
  if (edge) {
    assert.equal(edgeListeners.length, 1, 'one edge listener');
    assert.equal(edgeListeners[0].address, `tls:127.0.0.1:${rc.edgePort}`);
    assert.equal(edgeListeners[0].options.advertise, `127.0.0.1:${rc.edgePort}`);
  } else {
    assert.equal(edgeListeners.length, 0, 'a fabric router has no edge listener');
  }
}

describe('an edge router joins', () => {
  let r1: RouterHandle;
  let r1Config: RouterConfig;
  let r1Proc: RouterProcess | undefined;
  /** When r1 was last started: the online and sync checks count their 20 s from here. */
  let r1StartedAt = 0;
  /** Set once r1 was seen online: the later tests need it and fail at once without it. */
  let r1CameOnline = false;

  function needOnline(): void {
    if (!r1CameOnline) assert.fail('r1 never came online (see the earlier failure and the router log)');
  }

  /** Polls r1's management detail until `ready` holds, at most until 20 s after r1 was started; returns it. */
  async function waitR1(what: string, ready: (er: any) => boolean): Promise<any> {
    let last: any;
    const proc = r1Proc;
    return waitFor(async () => {
      last = await admin.edgeRouter(r1.id);
      return ready(last) ? last : undefined;
    }, Math.max(1_000, r1StartedAt + ONLINE_WITHIN_MS - Date.now()), {
      what: `r1 ${what} (within ${ONLINE_WITHIN_MS / 1000} s of its start)`,
      lastSeen: () => summary(last),
      abort: () => (proc?.exit ? `the router exited (${JSON.stringify(proc.exit)})` : undefined),
    });
  }

  const isOnline = (er: any): boolean => er.isOnline === true;
  /** Upstream: the edge side of the router's connection is set up (hostname, listeners) and its sync is done. */
  const isSynced = (er: any): boolean => er.isOnline === true && er.syncStatus === 'SYNC_DONE' && Boolean(er.supportedProtocols?.tls);

  function startR1(): void {
    r1StartedAt = Date.now();
    r1Proc = startRouter(r1Config.configFile);
  }

  it('ziti edge create edge-router -t creates r1 and writes its enrollment JWT', async () => {
    r1 = await createEdgeRouter('r1', { tunneler: true });
    const er = await admin.edgeRouter(r1.id);
    assert.equal(er.name, r1.name);
    assert.equal(er.isTunnelerEnabled, true);
    assert.equal(er.isVerified, false);
    assert.equal(er.isOnline, false);
    const claims = jwtPayload(r1.jwtFile);
    assert.equal(claims.em, 'erott');
    assert.equal(claims.sub, r1.id);
    assert.equal(claims.jti, er.enrollmentToken, 'the JWT carries the enrollment token');
  });

  it('the enrollment JWT names the controller\'s control endpoint in its ctrls claim', () => {
    assert.ok(r1, 'r1 was created');
    const claims = jwtPayload(r1.jwtFile);
    assert.ok(Array.isArray(claims.ctrls) && claims.ctrls.length > 0, `ctrls is a non-empty array: ${JSON.stringify(claims.ctrls)}`);
    assert.ok(claims.ctrls.includes(ctrlEndpoint()), `ctrls ${JSON.stringify(claims.ctrls)} names ${ctrlEndpoint()}`);
  });

  it('ziti create config router edge writes a loopback-only config', async () => {
    assert.ok(r1, 'r1 was created');
    r1Config = await writeRouterConfig(r1);
    assertLoopbackConfig(r1Config, true);
  });

  it('ziti router enroll enrolls r1', async () => {
    assert.ok(r1Config, 'r1 has a config');
    enrollRouter(r1Config.configFile, r1.jwtFile);
    for (const f of identityFiles(r1Config.configFile)) assert.ok(existsSync(f), `enrollment wrote ${f}`);
    const er = await admin.edgeRouter(r1.id);
    assert.equal(er.isVerified, true);
    assert.ok(er.fingerprint, 'the enrolled certificate\'s fingerprint is recorded');
    assert.equal(er.enrollmentJwt ?? null, null, 'the enrollment is used up');
  });

  it('ziti router run: within 20 s r1 is online and reports its version', async () => {
    assert.ok(r1Config, 'r1 has a config');
    startR1();
    const er = await waitR1('to be online', isOnline);
    r1CameOnline = true;
    assert.equal(er.versionInfo?.version, ROUTER_VERSION);
    const fabric = await admin.router(r1.id);
    assert.equal(fabric.isOnline, true, 'the fabric view agrees');
  });

  it('within 20 s r1 reports its hostname and edge listener, and its sync is done', async () => {
    needOnline();
    const er = await waitR1('to be synced (SYNC_DONE, edge listener known)', isSynced);
    assert.equal(typeof er.hostname, 'string');
    assert.ok(er.hostname.length > 0, 'hostname is not empty');
    assert.deepEqual(er.supportedProtocols, { tls: `tls://127.0.0.1:${r1Config.edgePort}` });
    assert.equal(er.syncStatus, 'SYNC_DONE');
  });

  it('ziti edge list edge-routers shows r1 online', () => {
    needOnline();
    // A table: │ ID │ NAME │ ONLINE │ ALLOW TRANSIT │ COST │ ATTRIBUTES │
    const out = zitiCli(['edge', 'list', 'edge-routers', `name = "${r1.name}"`]).stdout;
    const rows = out.split('\n').filter((l) => l.includes('│')).map((l) => l.split('│').slice(1, -1).map((c) => c.trim()));
    const columns = rows.find((cells) => cells.includes('ONLINE'));
    assert.ok(columns, `a table with an ONLINE column:\n${out}`);
    const row = rows.find((cells) => cells[columns.indexOf('NAME')] === r1.name);
    assert.ok(row, `a row for r1:\n${out}`);
    assert.equal(row[columns.indexOf('ID')], r1.id);
    assert.equal(row[columns.indexOf('ONLINE')], 'true', `r1 is online:\n${out}`);
  });

  it('GET /current-identity/edge-routers lists r1 with its supportedProtocols to an identity with a policy to it', async () => {
    assert.ok(r1, 'r1 was created');
    const joiner = await createUpdbIdentity(admin, 'joiner', ['joiners']);
    const outsider = await createUpdbIdentity(admin, 'outsider', ['outsiders']);
    await admin.create('/edge-router-policies', { name: 'joiners-to-r1', semantic: 'AnyOf', identityRoles: ['#joiners'], edgeRouterRoles: [`@${r1.id}`] });

    const seen = await (await clientSession(outsider)).data('/current-identity/edge-routers');
    assert.ok(!seen.some((r: any) => r.id === r1.id), 'an identity without a policy to r1 does not see it');

    const session = await clientSession(joiner);
    const listed = (await session.data('/current-identity/edge-routers')).find((r: any) => r.id === r1.id);
    assert.ok(listed, 'the identity with a policy to r1 sees it');
    assert.equal(listed.name, r1.name);
    needOnline();
    assert.equal(listed.isOnline, true, `r1 as listed: ${JSON.stringify(listed)}`);
    assert.equal(listed.supportedProtocols?.tls, `tls://127.0.0.1:${r1Config.edgePort}`, `r1 as listed: ${JSON.stringify(listed)}`);
  });

  it('stopping r1 takes it offline', async () => {
    needOnline();
    assert.ok(r1Proc);
    await r1Proc.stop();
    assert.ok(r1Proc.exit, 'the router process ended');
    let last: any;
    await waitFor(async () => {
      last = await admin.edgeRouter(r1.id);
      return last.isOnline === false;
    }, ONLINE_WITHIN_MS, { what: 'r1 to be offline', lastSeen: () => summary(last) });
  });

  it('starting r1 again brings it back online', async () => {
    needOnline();
    startR1();
    const er = await waitR1('to be back online', isOnline);
    assert.equal(er.versionInfo?.version, ROUTER_VERSION);
  });

  it('after the restart r1 syncs again', async () => {
    needOnline();
    const er = await waitR1('to be synced again', isSynced);
    assert.deepEqual(er.supportedProtocols, { tls: `tls://127.0.0.1:${r1Config.edgePort}` });
  });

  it('a killed r1 (SIGKILL) is seen offline', async () => {
    needOnline();
    assert.ok(r1Proc);
    await r1Proc.kill9();
    let last: any;
    await waitFor(async () => {
      last = await admin.edgeRouter(r1.id);
      return last.isOnline === false;
    }, ONLINE_WITHIN_MS, { what: 'r1 to be offline after SIGKILL', lastSeen: () => summary(last) });
  });
});

describe('a transit router joins', () => {
  let t1: RouterHandle;
  let t1Config: RouterConfig;

  it('ziti edge create transit-router creates t1 and writes its enrollment JWT', async () => {
    t1 = await createTransitRouter('t1');
    const tr = await admin.data(`/transit-routers/${t1.id}`);
    assert.equal(tr.name, t1.name);
    assert.equal(tr.isVerified, false);
    const claims = jwtPayload(t1.jwtFile);
    assert.equal(claims.sub, t1.id);
    assert.equal(claims.jti, tr.enrollmentToken, 'the JWT carries the enrollment token');
  });

  it('ziti create config router fabric writes a loopback-only config', async () => {
    assert.ok(t1, 't1 was created');
    t1Config = await writeRouterConfig(t1);
    assertLoopbackConfig(t1Config, false);
  });

  it('ziti router enroll enrolls t1', async () => {
    assert.ok(t1Config, 't1 has a config');
    enrollRouter(t1Config.configFile, t1.jwtFile);
    for (const f of identityFiles(t1Config.configFile)) assert.ok(existsSync(f), `enrollment wrote ${f}`);
    const tr = await admin.data(`/transit-routers/${t1.id}`);
    assert.equal(tr.isVerified, true);
    assert.ok(tr.fingerprint, 'the enrolled certificate\'s fingerprint is recorded');
  });

  it('ziti router run: within 20 s GET /routers/<id> shows t1 online', async () => {
    assert.ok(t1Config, 't1 has a config');
    const proc = startRouter(t1Config.configFile);
    let last: any;
    const r = await waitFor(async () => {
      last = await admin.router(t1.id);
      return last.isOnline === true ? last : undefined;
    }, ONLINE_WITHIN_MS, {
      what: 't1 to be online',
      lastSeen: () => summary(last),
      abort: () => (proc.exit ? `the router exited (${JSON.stringify(proc.exit)})` : undefined),
    });
    assert.equal(r.name, t1.name);
  });
});
