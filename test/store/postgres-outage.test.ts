/**
 * PostgreSQL restarting under a running controller, black box: a controller runs on a private PostgreSQL cluster
 * (test/support/postgres.ts), which is stopped (`pg_ctl stop -m fast`) and started again on the same port and data
 * dir while the controller keeps running. While it is down, a management read, a management write and a client login
 * each answer 503 with the error envelope STORAGE_UNAVAILABLE within a few seconds (a hang check, not a benchmark);
 * once it is back, the same requests succeed again without restarting the controller; what was written before is
 * intact and a write that got 503 left nothing behind. Under load: workers keep reading, writing and logging in
 * across a stop and a start, and every answer is a success or that 503 envelope, never a 500, never a hang.
 *
 * The controller's PostgreSQL is this file's own cluster whatever the suite runs on: the harness reads
 * PORTCULLIS_TEST_DATABASE_URL once, when it is loaded, to give every controller a database of the suite's server;
 * this file removes the variable before loading it (hence the dynamic imports) and names its cluster itself.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import type { HttpResponse } from '../support/client.ts';

delete process.env.PORTCULLIS_TEST_DATABASE_URL;
const { startTestController, uniqueName } = await import('../support/controller.ts');
const { createClient } = await import('../support/client.ts');
const { createUserWithPassword } = await import('../support/factories.ts');
const { startTestPostgres } = await import('../support/postgres.ts');

/** A request answered later than this is a hang (above the store's statement timeout of 10 s plus the driver's 2 s). */
const HANG_MS = 12_000;
/** How fast a request must fail while PostgreSQL is down (connecting is refused at once; 2.5 s connect timeout). */
const FAIL_FAST_MS = 5_000;
/** How long the controller may take to serve again once PostgreSQL is back. */
const RECOVERY_MS = 15_000;

const server = await startTestPostgres();
let down = false;
// After hooks run in the order they are added: the server is back before the controller stops (its stop writes),
// and the cluster is removed last.
after(async () => {
  if (down) await server.startServer();
});
const tc = await startTestController({ env: {}, extraArgs: ['--database-url', server.url] });
after(() => server.stop());
const controller = tc.controller;
const user = await createUserWithPassword(tc, { roleAttributes: ['outage'] });
const asUser = createClient(`https://127.0.0.1:${tc.port}/edge/client/v1`, tc.ca, { token: user.token });

async function stopPostgres(): Promise<void> {
  down = true;
  await server.stopServer();
}

async function startPostgres(): Promise<void> {
  await server.startServer();
  down = false;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

type Outcome = { res: HttpResponse; ms: number } | { hung: true; ms: number };

/** `send()` with its duration; a request not answered within HANG_MS is reported as hung (and left to finish). */
async function timed(send: () => Promise<HttpResponse>): Promise<Outcome> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<{ hung: true; ms: number }>((resolve) => {
    timer = setTimeout(() => resolve({ hung: true, ms: Date.now() - started }), HANG_MS);
  });
  try {
    return await Promise.race([send().then((res) => ({ res, ms: Date.now() - started })), hang]);
  } finally {
    clearTimeout(timer);
  }
}

function isUnavailable(res: HttpResponse): boolean {
  return (
    res.status === 503 &&
    res.body?.error?.code === 'STORAGE_UNAVAILABLE' &&
    typeof res.body.error.requestId === 'string' &&
    typeof res.body.error.message === 'string' &&
    res.body.meta?.apiVersion === '0.0.1'
  );
}

function describeOutcome(o: Outcome): string {
  return 'hung' in o ? `no answer within ${o.ms} ms` : `${o.res.status} in ${o.ms} ms: ${o.res.text.slice(0, 300)}`;
}

/** The requests checked: a management read and write, and a client login. */
const requests = {
  read: () => tc.mgmt.get('/services?limit=100'),
  write: (name: string) => tc.mgmt.post('/services', { name, encryptionRequired: true, roleAttributes: ['outage'] }),
  login: () => tc.http.post('/edge/client/v1/authenticate?method=password', { username: user.username, password: user.password }),
};

/** Rows of `services` with this name, asked of PostgreSQL itself. */
async function servicesNamed(names: string[]): Promise<string[]> {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    return (await client.query<{ name: string }>('SELECT name FROM services WHERE name = ANY($1)', [names])).rows.map((r) => r.name);
  } finally {
    await client.end();
  }
}

describe('PostgreSQL stopped and started under a running controller', () => {
  const written: Array<{ id: string; detail: unknown }> = [];
  const refusedWrites: string[] = [];

  it('writes some data while PostgreSQL is up', async () => {
    assert.equal(controller.store.kind, 'postgres');
    for (let i = 0; i < 3; i++) {
      const res = await requests.write(uniqueName('before'));
      assert.equal(res.status, 201, res.text);
      const detail = await tc.mgmt.get(`/services/${res.body.data.id}`);
      assert.equal(detail.status, 200, detail.text);
      written.push({ id: res.body.data.id, detail: detail.body });
    }
    const identity = await tc.mgmt.get(`/identities/${user.id}`);
    assert.equal(identity.status, 200, identity.text);
    written.push({ id: user.id, detail: identity.body });
  });

  it('while it is stopped, a read, a write and a login each answer 503 STORAGE_UNAVAILABLE at once', async () => {
    await stopPostgres();
    // Each twice: the first may meet a pooled connection the shutdown ended, the second a pool with none left.
    for (let round = 0; round < 2; round++) {
      const name = uniqueName('during');
      refusedWrites.push(name);
      for (const [what, send] of [['read', requests.read], ['write', () => requests.write(name)], ['login', requests.login]] as const) {
        const o = await timed(send);
        assert.ok(!('hung' in o) && isUnavailable(o.res), `${what} (round ${round + 1}): ${describeOutcome(o)}`);
        assert.ok(o.ms < FAIL_FAST_MS, `${what} (round ${round + 1}) answered in ${o.ms} ms`);
      }
    }
    // A client API read with the user's session (its caller may be cached): an answer either way, never a 500.
    const o = await timed(() => asUser.get('/current-identity'));
    assert.ok(!('hung' in o) && (o.res.status === 200 || isUnavailable(o.res)), `client read: ${describeOutcome(o)}`);
    assert.ok(o.ms < FAIL_FAST_MS, `client read answered in ${o.ms} ms`);
  });

  it('once it is started again, the same requests succeed without restarting the controller', async () => {
    await startPostgres();
    const started = Date.now();
    for (const [what, send, ok] of [
      ['read', requests.read, 200],
      ['write', () => requests.write(uniqueName('after')), 201],
      ['login', requests.login, 200],
    ] as const) {
      const seen: string[] = [];
      for (;;) {
        const o = await timed(send);
        assert.ok(!('hung' in o) && (o.res.status === ok || isUnavailable(o.res)), `${what} after the restart: ${describeOutcome(o)}`);
        if (o.res.status === ok) break;
        seen.push(describeOutcome(o));
        assert.ok(Date.now() - started < RECOVERY_MS, `${what} still refused ${RECOVERY_MS} ms after PostgreSQL is back:\n${seen.join('\n')}`);
        await sleep(250);
      }
    }
    assert.equal(tc.controller, controller, 'the same controller, never restarted');
  });

  it('what was written before the outage is intact; the writes that got 503 left nothing', async () => {
    for (const w of written) {
      const path = w.id === user.id ? `/identities/${w.id}` : `/services/${w.id}`;
      const res = await tc.mgmt.get(path);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, w.detail, path);
    }
    const relogin = await requests.login();
    assert.equal(relogin.status, 200, relogin.text);
    assert.deepEqual(await servicesNamed(refusedWrites), []);
    for (const name of refusedWrites) {
      const res = await tc.mgmt.get(`/services?filter=${encodeURIComponent(`name="${name}"`)}`);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.meta.pagination.totalCount, 0, `${name} was not created`);
    }
  });
});

describe('PostgreSQL stopped and started under load', () => {
  it('every answer of concurrent readers, writers and logins is a success or 503 STORAGE_UNAVAILABLE, never a hang', async () => {
    // client: the user's client API reads (its caller and service list may be answered from memory while the store
    // is down: 200 then counts as a success).
    type Kind = 'read' | 'write' | 'login' | 'detail' | 'client';
    interface Answered {
      kind: Kind;
      at: number;
      ms: number;
      status: number | 'hung';
      unavailable: boolean;
      text: string;
      name?: string;
    }
    const expected: { [k in Kind]: number } = { read: 200, write: 201, login: 200, detail: 200, client: 200 };
    const records: Answered[] = [];
    let running = true;
    const begin = Date.now();
    const detailPath = `/identities/${user.id}`;
    const worker = async (kind: Kind) => {
      while (running) {
        const name = kind === 'write' ? uniqueName('load') : undefined;
        const send =
          kind === 'read' ? requests.read
          : kind === 'write' ? () => requests.write(name!)
          : kind === 'login' ? requests.login
          : kind === 'client' ? () => asUser.get('/services')
          : () => tc.mgmt.get(detailPath);
        const o = await timed(send);
        records.push(
          'hung' in o
            ? { kind, at: Date.now() - begin, ms: o.ms, status: 'hung', unavailable: false, text: '', name }
            : { kind, at: Date.now() - begin, ms: o.ms, status: o.res.status, unavailable: isUnavailable(o.res), text: o.res.text.slice(0, 300), name },
        );
        // Failures come back at once: pause a little so a worker does not spin on them.
        if ('hung' in o || o.res.status !== expected[kind]) await sleep(50);
      }
    };
    const kinds: Kind[] = ['read', 'read', 'write', 'write', 'login', 'login', 'detail', 'client'];
    const workers = kinds.map((k) => worker(k));

    // Three outages: a long one, longer than a pass of the controller's background work on the store (API session
    // upkeep every 5 s, the commit mark's polling and its listener's reconnecting every second), which fails meanwhile;
    // then two short ones, each stop catching requests at other points of their work.
    const cycles: Array<{ stopAt: number; startAt: number; recovered: boolean }> = [];
    await sleep(1000);
    for (const outage of [6000, 1000, 1000]) {
      const stopAt = Date.now() - begin;
      await stopPostgres();
      await sleep(outage);
      const startAt = Date.now() - begin;
      await startPostgres();
      // Until every kind succeeded after the start (bounded), then a little more.
      const recovered = () => kinds.every((k) => records.some((r) => r.kind === k && r.at > startAt && r.status === expected[k]));
      while (!recovered() && Date.now() - begin - startAt < RECOVERY_MS) await sleep(100);
      cycles.push({ stopAt, startAt, recovered: recovered() });
      await sleep(500);
    }
    running = false;
    await Promise.all(workers);

    const bad = records.filter((r) => !(r.status === expected[r.kind] || r.unavailable));
    assert.deepEqual(bad.map((r) => `${r.kind} at ${r.at} ms: ${r.status} in ${r.ms} ms ${r.text}`), [], 'only successes and 503 STORAGE_UNAVAILABLE');
    const slowest = Math.max(...records.map((r) => r.ms));
    assert.ok(slowest < HANG_MS, `slowest answer ${slowest} ms`);
    assert.ok(cycles.every((c) => c.recovered), `every kind succeeded again within ${RECOVERY_MS} ms of each start: ${JSON.stringify(cycles)}`);
    const refused = records.filter((r) => r.unavailable);
    assert.ok(refused.length > 0, 'the outage was met');
    assert.ok(refused.every((r) => r.at >= cycles[0]!.stopAt), 'nothing was refused before the first stop');
    assert.ok(records.length < 20_000, `requests made: ${records.length}`);
    assert.ok(Date.now() - begin < 60_000, `the load test took ${Date.now() - begin} ms`);
    // Writes: every 201 is stored, every 503 left nothing.
    const created = records.filter((r) => r.kind === 'write' && r.status === 201).map((r) => r.name!);
    const notCreated = records.filter((r) => r.kind === 'write' && r.unavailable).map((r) => r.name!);
    assert.ok(notCreated.length > 0, 'some writes met the outage');
    assert.deepEqual((await servicesNamed(created)).sort(), [...created].sort());
    assert.deepEqual(await servicesNamed(notCreated), []);
    const summary = Object.fromEntries(
      (['read', 'write', 'login', 'detail', 'client'] as const).map((k) => {
        const of = records.filter((r) => r.kind === k);
        return [k, { ok: of.filter((r) => r.status === expected[k]).length, unavailable: of.filter((r) => r.unavailable).length, maxMs: Math.max(...of.map((r) => r.ms)) }];
      }),
    );
    console.log(`load: outages ${cycles.map((c) => `${c.stopAt}-${c.startAt} ms`).join(', ')}; ${records.length} requests ${JSON.stringify(summary)}`);
  });
});
