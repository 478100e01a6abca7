/**
 * Several controllers on one PostgreSQL store: founding and joining a network, the refusals, membership as
 * `GET /controllers` shows it, death and return of a controller, leadership moving, and sessions and writes made on
 * one controller seen on the others.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { ADMIN_PASSWORD, ADMIN_USER, startTestController, testStore, uniqueName } from '../support/controller.ts';
import { bearer, oidcLogin, tokenRequest } from '../support/oidc.ts';
import { createClient } from '../support/client.ts';
import { eventually, startCluster, writeSecretFile } from '../support/cluster.ts';
import { assertMatchesReference } from '../support/reference-spec.ts';

const postgres = testStore() === 'postgres';

describe('several controllers on one PostgreSQL store', { skip: !postgres && 'needs PostgreSQL' }, async () => {
  const cluster = postgres ? await startCluster(3) : undefined!;
  const [a, b, c] = postgres ? cluster.members : [];
  const idOf = async (tc: typeof a) => (await tc.http.get('/version')).headers['ziti-instance-id'] as string;

  it('gives each controller its own id, a server certificate of its own key chained to the one root, and keeps the shared key off the joiners', async () => {
    const ids = await Promise.all([a, b, c].map(idOf));
    assert.equal(new Set(ids).size, 3);
    assert.equal(a.controller.membership.networkId, ids[0], 'the founder keeps the network id as its own');
    for (const tc of [b, c]) {
      assert.equal(tc.controller.membership.networkId, ids[0]);
      assert.equal(tc.controller.pki.rootCertPem, a.controller.pki.rootCertPem);
      assert.equal(tc.controller.pki.intermediateCertPem, a.controller.pki.intermediateCertPem);
      assert.notEqual(tc.controller.pki.serverKeyPem, a.controller.pki.serverKeyPem);
      const leaf = new X509Certificate(tc.controller.pki.serverCertPem);
      assert.ok(leaf.verify(new X509Certificate(tc.controller.pki.intermediateCertPem).publicKey));
      assert.equal(existsSync(join(tc.dataDir, 'pki', 'intermediate-ca.key.pem')), false, 'a joiner keeps the shared key in memory only');
      assert.equal(existsSync(join(tc.dataDir, 'pki', 'api-session-seal.key')), false);
      const file = JSON.parse(readFileSync(join(tc.dataDir, 'controller.json'), 'utf8'));
      assert.deepEqual(file, { controllerId: await idOf(tc), networkId: ids[0] });
    }
    // Nothing private is stored unwrapped.
    const stored = await cluster.sql<{ wrapped: string }>('SELECT wrapped FROM shared_keys');
    assert.ok(stored.length >= 3);
    for (const row of stored) assert.ok(!row.wrapped.includes('PRIVATE KEY'));
  });

  it('lists the live controllers on every controller, with the addresses routers and SDKs use', async () => {
    const ids = (await Promise.all([a, b, c].map(idOf))).sort();
    for (const tc of [a, b, c]) {
      const res = await tc.mgmt.get('/controllers');
      assert.equal(res.status, 200, res.text);
      assertMatchesReference('management', 'GET', '/controllers', 200, res.body);
      assert.deepEqual(res.body.data.map((d: { id: string }) => d.id).sort(), ids);
      for (const d of res.body.data) {
        const member = [a, b, c].find((m) => m.port === Number(d.ctrlAddress.split(':').pop()))!;
        assert.equal(d.ctrlAddress, `tls:localhost:${member.port}`);
        assert.deepEqual(d.apiAddresses['edge-oidc'], [{ url: `https://localhost:${member.port}/oidc`, version: 'v1' }]);
        assert.equal(d.isOnline, true);
      }
      const client = await tc.client.get('/controllers');
      assertMatchesReference('client', 'GET', '/controllers', 200, client.body);
      assert.equal(client.body.data.length, 3);
      // Each controller's own view follows within a poll.
      await eventually(() => tc.controller.membership.live().map((m) => m.id).join() === ids.join(), 3000, 'membership view');
    }
  });

  it('accepts a session made on one controller on the others, and shows a write made on one on the others', async () => {
    const token = a.adminToken;
    for (const tc of [b, c]) {
      const res = await createClient(`https://127.0.0.1:${tc.port}/edge/management/v1`, tc.ca, { token }).get('/current-api-session');
      assert.equal(res.status, 200, res.text);
    }
    const name = uniqueName('svc');
    const created = await b.mgmt.post('/services', { name, encryptionRequired: true });
    assert.equal(created.status, 201, created.text);
    const seen = await c.mgmt.get(`/services/${created.body.data.id}`);
    assert.equal(seen.status, 200, seen.text);
    assert.equal(seen.body.data.name, name);
  });

  it('has exactly one leader, and a membership that stands still while nothing changes', async () => {
    assert.equal([a, b, c].filter((tc) => tc.controller.membership.isLeader()).length, 1);
    const version = a.controller.membership.version();
    const rows = await cluster.sql<{ value: string }>("SELECT value FROM controller_facts WHERE key = 'membership-version'");
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(a.controller.membership.version(), version);
    assert.deepEqual(await cluster.sql("SELECT value FROM controller_facts WHERE key = 'membership-version'"), rows);
  });

  it('refuses a join without the secret, or with another one', async () => {
    await assert.rejects(startTestController({ databaseUrl: cluster.databaseUrl }), /needs its cluster secret/);
    await assert.rejects(
      startTestController({ databaseUrl: cluster.databaseUrl, extraArgs: ['--cluster-secret-file', writeSecretFile()] }),
      /the cluster secret does not open the keys of network/,
    );
    await assert.rejects(
      startTestController({ databaseUrl: cluster.databaseUrl, extraArgs: ['--cluster-secret-file', writeSecretFile('too short')] }),
      /at least 32 characters/,
    );
  });

  it('refuses a data dir of another network, and a copy of a running controller\'s data dir', async () => {
    const other = await startTestController();
    await assert.rejects(
      startTestController({ dataDir: other.dataDir, databaseUrl: cluster.databaseUrl, extraArgs: ['--cluster-secret-file', cluster.secretFile] }),
      /belongs to network .*(root CA|to network)/,
    );
    const copy = mkdtempSync(join(tmpdir(), 'portcullis-copy-'));
    try {
      cpSync(b.dataDir, copy, { recursive: true });
      await assert.rejects(
        startTestController({ dataDir: copy, databaseUrl: cluster.databaseUrl, extraArgs: ['--cluster-secret-file', cluster.secretFile] }),
        /controller id \S+ is in use by a running controller/,
      );
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it('refuses a second controller on the control address of a live one', async () => {
    const address = `tls:localhost:${b.port}`;
    // Configured with B's advertised address (its port taken or not): routers could not tell them apart.
    await assert.rejects(
      startTestController({ databaseUrl: cluster.databaseUrl, extraArgs: ['--cluster-secret-file', cluster.secretFile, '--port', String(b.port)] }),
      new RegExp(`same control address ${address}`),
    );
  });

  it('keeps a controller whose database session is cut for a moment: it takes its locks again by itself', async () => {
    const cId = await idOf(c);
    const holders = () =>
      cluster.sql<{ pid: number }>(
        `SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::int::oid AND l.objid = hashtext($2)::oid`,
        [0x70634330, cId],
      );
    const [before] = await holders();
    assert.ok(before, "C's controller lock is held");
    // The backend holding C's locks is cut, as a network blip or a server-side timeout would.
    await cluster.sql('SELECT pg_terminate_backend($1)', [before.pid]);
    await eventually(async () => (await holders()).some((h) => h.pid !== before.pid), 5000, "C's lock taken again on a new connection");
    // Gone for less than two of the leader's passes: still listed, or listed again at once.
    await eventually(async () => (await a.mgmt.get('/controllers')).body.data.some((d: { id: string }) => d.id === cId), 5000, 'C listed');
    assert.equal((await c.mgmt.get('/controllers')).status, 200);
  });

  let stopped: { dataDir: string; id: string } | undefined;

  it('moves leadership when the leader stops, and lists the stopped controller no more', async () => {
    const members = [a, b, c];
    const leader = members.find((tc) => tc.controller.membership.isLeader())!;
    const leaderId = await idOf(leader);
    const epoch = leader.controller.membership.leaderEpoch();
    // JWTs the leader signed, to use once it is gone.
    const tokens = await oidcLogin(leader.http, { username: ADMIN_USER, password: ADMIN_PASSWORD });
    await leader.stop();
    stopped = { dataDir: leader.dataDir, id: leaderId };
    const rest = members.filter((tc) => tc !== leader);
    await eventually(() => rest.some((tc) => tc.controller.membership.isLeader()), 5000, 'a new leader');
    const next = rest.find((tc) => tc.controller.membership.isLeader())!;
    assert.ok(next.controller.membership.leaderEpoch() > epoch);
    for (const tc of rest) {
      await eventually(async () => !(await tc.mgmt.get('/controllers')).body.data.some((d: { id: string }) => d.id === leaderId), 5000, 'stopped controller gone');
      assert.equal((await tc.mgmt.get('/controllers')).body.data.length, 2);
    }
    // Writes need no leader election: they work on every survivor at once.
    for (const tc of rest) assert.equal((await tc.mgmt.post('/services', { name: uniqueName('after'), encryptionRequired: true })).status, 201);
    // A JWT session made on the stopped controller goes on on the others: its tokens verify, and refresh there.
    for (const tc of rest) {
      assert.equal((await tc.http.get('/edge/client/v1/current-api-session', bearer(tokens.accessToken))).status, 200);
      assert.ok(tc.controller.membership.known().some((m) => m.id === leaderId), 'a stopped controller is still known');
    }
    const refreshed = await tokenRequest(rest[0]!.http, { grant_type: 'refresh_token', client_id: 'native', refresh_token: tokens.refreshToken });
    assert.equal(refreshed.status, 200, refreshed.text);
  });

  it('lets the stopped controller come back with its id and catch up at once', async () => {
    assert.ok(stopped);
    const name = uniqueName('while-down');
    const survivor = [a, b, c].find((tc) => tc.dataDir !== stopped!.dataDir)!;
    const made = await survivor.mgmt.post('/services', { name, encryptionRequired: true });
    const tc = await cluster.join({ dataDir: stopped.dataDir });
    assert.equal(await idOf(tc), stopped.id);
    const seen = await tc.mgmt.get(`/services/${made.body.data.id}`);
    assert.equal(seen.status, 200);
    await eventually(async () => (await survivor.mgmt.get('/controllers')).body.data.length === 3, 5000, 'three controllers again');
  });
});
