/**
 * No acknowledged write is lost: the real entry point with two worker processes is killed with SIGKILL (every
 * process of it at once) at a random moment while four clients create, update and delete identities over REST,
 * twenty times (no two clients write one identity at once). After each restart every write answered 2xx before
 * the kill is there (creates exist with their last acknowledged value, deletes are gone), every write answered
 * with an error is absent, writes that got no answer may have happened or not, and the controller starts every
 * time. At the end the integrity check is clean. The random schedule comes from a fixed seed.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropTestDatabase, freePort, removeTestDir, testDatabaseArgs } from '../support/controller.ts';
import { createClient, type HttpClient } from '../support/client.ts';
import { mulberry32 } from '../support/prng.ts';

const CYCLES = 20;
const CLIENTS = 4;
const ADMIN_PASSWORD = 'durability-admin-password';
const root = new URL('../../', import.meta.url).pathname;
const dataDir = mkdtempSync(join(tmpdir(), 'portcullis-kill9-'));
const port = await freePort();
const random = mulberry32(0x5eed_9);
let child: ChildProcess | undefined;
let output = '';

after(async () => {
  try {
    if (child?.pid) process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
  removeTestDir(dataDir);
  await dropTestDatabase(dataDir);
});

async function start(): Promise<void> {
  output = '';
  // On PostgreSQL every start finds the same database again (testDatabaseArgs keeps one per data dir).
  const database = await testDatabaseArgs(dataDir);
  child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/main.ts', '--workers', '2', '--data-dir', dataDir, ...database, '--address', '127.0.0.1', '--port', String(port), '--admin-password', ADMIN_PASSWORD, '--log-level', 'info'],
    // Its own process group, so one signal reaches the primary and its workers at once.
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  child.stdout!.on('data', (c) => (output += c));
  child.stderr!.on('data', (c) => (output += c));
  const started = Date.now();
  while (!output.includes('Portcullis ready')) {
    if (child.exitCode !== null) assert.fail(`the controller did not start:\n${output}`);
    if (Date.now() - started > 60_000) assert.fail(`the controller did not get ready:\n${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function killAll(): Promise<void> {
  const c = child!;
  const exited = new Promise((resolve) => c.once('exit', resolve));
  process.kill(-c.pid!, 'SIGKILL');
  await exited;
  // The workers die with the group; wait until none holds the port any more.
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(-c.pid!, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function admin(): Promise<HttpClient> {
  const ca = readFileSync(join(dataDir, 'pki', 'root-ca.cert.pem'), 'utf8');
  const http = createClient(`https://127.0.0.1:${port}`, ca);
  const login = await http.post('/edge/management/v1/authenticate?method=password', { username: 'admin', password: ADMIN_PASSWORD });
  assert.equal(login.status, 200, login.text);
  return createClient(`https://127.0.0.1:${port}/edge/management/v1`, ca, { token: login.body.data.token });
}

/** What the clients know of one identity they wrote. */
interface Record {
  name: string;
  id?: string;
  /** created: answered 201; absent: answered with an error; maybe: no answer. */
  created: 'yes' | 'no' | 'maybe';
  /** deleted: answered 200; maybe: no answer. */
  deleted: 'yes' | 'no' | 'maybe';
  /** Values `appData.v` may have: the last acknowledged one, plus any sent without an answer since. */
  values: Set<number>;
}

const records: Record[] = [];
/** Records written since the last verification. */
let touched = new Set<Record>();
/**
 * Records a client is writing now. No two clients write one record at once: the order in which concurrent
 * writes are answered need not be the order they were applied in, and the bookkeeping above does not model that.
 */
const busy = new Set<Record>();
let writes = 0;
/** Writes answered 2xx: each must be found after the restarts. */
let acknowledged = 0;

/** One client's writes until the controller dies under it. */
async function client(mgmt: HttpClient, cycle: number, n: number, stop: { dead: boolean }): Promise<void> {
  for (let i = 0; !stop.dead; i++) {
    const roll = random();
    const live = records.filter((r) => r.created === 'yes' && r.deleted === 'no' && !busy.has(r));
    writes++;
    let writing: Record | undefined;
    try {
      if (roll < 0.55 || live.length === 0) {
        const record: Record = { name: `kill9-${cycle}-${n}-${i}`, created: 'maybe', deleted: 'no', values: new Set([0]) };
        records.push(record);
        touched.add(record);
        const res = await mgmt.post('/identities', { name: record.name, type: 'User', isAdmin: false, appData: { v: 0 } });
        if (res.status === 201) {
          acknowledged++;
          record.created = 'yes';
          record.id = res.body.data.id;
        } else {
          record.created = 'no';
        }
      } else if (roll < 0.85) {
        const record = live[Math.floor(random() * live.length)]!;
        busy.add((writing = record));
        touched.add(record);
        const v = Math.floor(random() * 1_000_000) + 1;
        const before = new Set(record.values);
        record.values.add(v);
        const res = await mgmt.patch(`/identities/${record.id}`, { appData: { v } });
        record.values = res.status === 200 ? new Set([v]) : before;
        if (res.status === 200) acknowledged++;
      } else {
        const record = live[Math.floor(random() * live.length)]!;
        busy.add((writing = record));
        touched.add(record);
        record.deleted = 'maybe';
        const res = await mgmt.delete(`/identities/${record.id}`);
        record.deleted = res.status === 200 ? 'yes' : 'no';
        if (res.status === 200) acknowledged++;
      }
    } catch {
      // No answer: the controller died with this write in flight; the record keeps its "maybe".
      return;
    } finally {
      if (writing) busy.delete(writing);
    }
  }
}

/** Checks the records written since the last look (all of them with `all`) against the store. */
async function verify(mgmt: HttpClient, all = false): Promise<void> {
  const list = all ? records : [...touched];
  touched = new Set();
  for (const record of list) {
    if (record.created === 'maybe' || record.deleted === 'maybe') {
      // Unknown outcome: settle it from the store, for the next cycles.
      const found = await mgmt.get(`/identities?filter=${encodeURIComponent(`name = "${record.name}"`)}`);
      const row = found.body.data[0];
      record.created = row ? 'yes' : 'no';
      record.id = row?.id;
      record.deleted = row ? 'no' : record.created === 'no' ? 'no' : 'yes';
      if (row) record.values = new Set([row.appData?.v]);
      continue;
    }
    if (record.created === 'no') {
      const found = await mgmt.get(`/identities?filter=${encodeURIComponent(`name = "${record.name}"`)}`);
      assert.equal(found.body.data.length, 0, `${record.name}: a create answered with an error exists`);
      continue;
    }
    const res = await mgmt.get(`/identities/${record.id}`);
    if (record.deleted === 'yes') {
      assert.equal(res.status, 404, `${record.name}: an acknowledged delete is back`);
    } else {
      assert.equal(res.status, 200, `${record.name}: an acknowledged create is lost`);
      assert.ok(record.values.has(res.body.data.appData.v), `${record.name}: appData.v ${res.body.data.appData.v} is none of ${[...record.values]}`);
      record.values = new Set([res.body.data.appData.v]);
    }
  }
}

describe('kill -9 durability', () => {
  it(`keeps every acknowledged write across ${CYCLES} SIGKILLs of every process`, async (t) => {
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      await start();
      const mgmt = await admin();
      if (cycle > 0) await verify(mgmt);
      const stop = { dead: false };
      const clients = Array.from({ length: CLIENTS }, (_, n) => client(mgmt, cycle, n, stop));
      await new Promise((r) => setTimeout(r, 300 + Math.floor(random() * 1200)));
      await killAll();
      stop.dead = true;
      await Promise.all(clients);
    }
    await start();
    const mgmt = await admin();
    await verify(mgmt, true);
    assert.ok(records.filter((r) => r.created === 'yes').length > 50, `enough writes were acknowledged (${writes} sent)`);

    const started = await mgmt.post('/database/check-data-integrity', {});
    assert.equal(started.status, 202, started.text);
    let results;
    for (let i = 0; i < 600; i++) {
      results = (await mgmt.get('/database/data-integrity-results')).body.data;
      if (!results.inProgress) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(results.inProgress, false);
    assert.equal(results.error, null);
    assert.deepEqual(results.results ?? [], [], 'the integrity check is clean');
    t.diagnostic(`kill9: ${CYCLES} SIGKILLs of every process under ${CLIENTS} writing clients; ${writes} writes sent, ${acknowledged} acknowledged, none of them lost; integrity check clean`);
    await killAll();
  });
});
