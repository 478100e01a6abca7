/**
 * The PostgreSQL primary dies and a streaming replica is promoted, behind one endpoint (here a TCP proxy that moves
 * to the new primary, as HAProxy or a virtual IP does): two controllers of one network serve again by themselves,
 * keep what was replicated, list each other, and one of them leads again. The servers are this file's own
 * (test/support/postgres.ts); see test/store/postgres-outage.test.ts for why the harness is loaded after the
 * variable is removed.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Socket } from 'node:net';
import pg from 'pg';

delete process.env.PORTCULLIS_TEST_DATABASE_URL;
const { startTestController, uniqueName } = await import('../support/controller.ts');
const { eventually, writeSecretFile } = await import('../support/cluster.ts');
const { startTestPostgres } = await import('../support/postgres.ts');

/** A TCP proxy on loopback to `target`, which `moveTo` changes (cutting the connections to the old one). */
async function endpoint(target: number) {
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect({ host: '127.0.0.1', port: target });
    open.add(client);
    open.add(upstream);
    const close = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as { port: number }).port,
    moveTo(port: number) {
      target = port;
      for (const s of open) s.destroy();
      open.clear();
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of open) s.destroy();
        server.close(() => r());
      }),
  };
}

const primary = await startTestPostgres();
const replica = await primary.replica();
const proxy = await endpoint(primary.port);

const url = `postgres://portcullis@127.0.0.1:${proxy.port}/portcullis_test`;
const args = ['--database-url', url, '--cluster-secret-file', writeSecretFile()];
const a = await startTestController({ env: {}, extraArgs: args });
const b = await startTestController({ env: {}, extraArgs: args });
// After the controllers' own stops (hooks run in the order they were added): their stop still writes.
after(() => proxy.close());
after(() => replica.stop());
after(() => primary.stop());

/** Waits until the replica has replayed everything the primary wrote so far. */
async function replicated(): Promise<void> {
  const onPrimary = new pg.Client({ connectionString: primary.url });
  await onPrimary.connect();
  try {
    // The insert position: with this test server's asynchronous commits, what is written may still lag what was committed.
    const lsn = (await onPrimary.query('SELECT pg_current_wal_insert_lsn()::text AS lsn')).rows[0].lsn as string;
    const onReplica = new pg.Client({ connectionString: replica.url });
    await onReplica.connect();
    try {
      await eventually(async () => (await onReplica.query('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done', [lsn])).rows[0].done === true, 10_000, 'replica caught up');
    } finally {
      await onReplica.end();
    }
  } finally {
    await onPrimary.end();
  }
}

describe('the PostgreSQL primary replaced by a promoted replica under two controllers', () => {
  it('both serve again by themselves, keep what was replicated, list each other, and one leads', async () => {
    await eventually(() => a.controller.membership.live().length === 2 && b.controller.membership.live().length === 2, 5000, 'two members');
    const made = await a.mgmt.post('/services', { name: uniqueName('before'), encryptionRequired: true });
    assert.equal(made.status, 201);
    await replicated();

    await primary.crash();
    await replica.promote();
    proxy.moveTo(replica.port);

    for (const tc of [a, b]) {
      await eventually(async () => (await tc.mgmt.post('/services', { name: uniqueName('after'), encryptionRequired: true })).status === 201, 20_000, 'writes on the new primary');
      assert.equal((await tc.mgmt.get(`/services/${made.body.data.id}`)).status, 200, 'the replicated write is there');
    }
    await eventually(() => [a, b].filter((tc) => tc.controller.membership.isLeader()).length === 1, 10_000, 'one leader');
    for (const tc of [a, b]) await eventually(async () => (await tc.mgmt.get('/controllers')).body.data?.length === 2, 10_000, 'both listed');
    // A session made before the failover (replicated) works on the other controller.
    assert.equal((await b.http.get('/edge/management/v1/current-api-session', { token: a.adminToken })).status, 200);
  });
});
