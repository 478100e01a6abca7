/**
 * PostgreSQL stopped and started again under two controllers of one network (a primary restarting, or a new primary
 * behind the same endpoint): both serve again by themselves, keep each other on their list, and one of them leads
 * again. The cluster is this file's own (test/support/postgres.ts), whatever the suite runs on; see
 * test/store/postgres-outage.test.ts for why the harness is loaded after the variable is removed.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';

delete process.env.PORTCULLIS_TEST_DATABASE_URL;
const { startTestController, uniqueName } = await import('../support/controller.ts');
const { eventually, writeSecretFile } = await import('../support/cluster.ts');
const { startTestPostgres } = await import('../support/postgres.ts');

const server = await startTestPostgres();
let down = false;
after(async () => {
  if (down) await server.startServer();
});
const secret = writeSecretFile();
const args = ['--database-url', server.url, '--cluster-secret-file', secret];
const a = await startTestController({ env: {}, extraArgs: args });
const b = await startTestController({ env: {}, extraArgs: args });
after(() => server.stop());

describe('PostgreSQL restarting under two controllers', () => {
  it('both serve again by themselves, list each other, and one leads', async () => {
    await eventually(() => a.controller.membership.live().length === 2 && b.controller.membership.live().length === 2, 5000, 'two members');
    down = true;
    await server.stopServer();
    const during = await a.mgmt.get('/services');
    assert.equal(during.status, 503);
    assert.equal(during.body.error.code, 'STORAGE_UNAVAILABLE');
    await server.startServer();
    down = false;
    for (const tc of [a, b]) {
      await eventually(async () => (await tc.mgmt.post('/services', { name: uniqueName('back'), encryptionRequired: true })).status === 201, 20_000, 'writes again');
    }
    await eventually(() => [a, b].filter((tc) => tc.controller.membership.isLeader()).length === 1, 10_000, 'one leader again');
    for (const tc of [a, b]) {
      await eventually(async () => (await tc.mgmt.get('/controllers')).body.data?.length === 2, 10_000, 'both listed');
    }
    // A session made before the restart still works on the other controller.
    assert.equal((await b.http.get('/edge/management/v1/current-api-session', { token: a.adminToken })).status, 200);
  });
});
