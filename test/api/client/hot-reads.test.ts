/**
 * The client API's hot reads — service-updates and the service list — make no store round trip per request on
 * PostgreSQL: they are answered from memory kept current by the change feed and the store's commit mark. Background
 * work may fall in the window: the API-session maintenance pass (every 5 s) writes, its commit moves the mark, and
 * the fabric's poll then reads the feed head and the mesh counters once (about five connections a pass). A read per
 * request would take 200 or more; the limit is a tenth of that.
 * The answers still follow a change made through the management API.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, testStore, uniqueName } from '../../support/controller.ts';

const onPostgres = testStore() === 'postgres';

describe('hot client reads on PostgreSQL', { skip: onPostgres ? false : 'counts PostgreSQL round trips (the suite runs on SQLite)' }, async () => {
  const tc = await startTestController();
  const pool = (tc.controller.store as unknown as { pool: { connect: (...args: unknown[]) => unknown } }).pool;

  async function roundTrips(path: string, requests: number): Promise<number> {
    for (let i = 0; i < 5; i++) assert.equal((await tc.client.get(path)).status, 200);
    let n = 0;
    const real = pool.connect.bind(pool);
    pool.connect = (...args: unknown[]) => {
      n += 1;
      return real(...args);
    };
    try {
      for (let i = 0; i < requests; i++) assert.equal((await tc.client.get(path)).status, 200);
    } finally {
      pool.connect = real;
    }
    return n;
  }

  it('answers service-updates and the service list without a store round trip per request', async () => {
    for (const path of ['/current-api-session/service-updates', '/services']) {
      const n = await roundTrips(path, 200);
      assert.ok(n <= 20, `${path}: ${n} store connections taken for 200 requests`);
    }
  });

  it('still shows a change made through the management API', async () => {
    const name = uniqueName('hot');
    const before = (await tc.client.get('/current-api-session/service-updates')).body.data.lastChangeAt as string;
    const created = await tc.mgmt.post('/services', { name, encryptionRequired: true });
    assert.equal(created.status, 201, created.text);
    const policy = await tc.mgmt.post('/service-policies', { name, type: 'Dial', semantic: 'AnyOf', identityRoles: ['#all'], serviceRoles: [`@${created.body.data.id}`] });
    assert.equal(policy.status, 201, policy.text);
    const names = ((await tc.client.get('/services?limit=500')).body.data as Array<{ name: string }>).map((s) => s.name);
    assert.ok(names.includes(name), 'the new service is listed');
    const after = (await tc.client.get('/current-api-session/service-updates')).body.data.lastChangeAt as string;
    assert.ok(after > before, `lastChangeAt moved (${before} -> ${after})`);
  });
});
