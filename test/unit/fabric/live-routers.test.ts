/**
 * Router connection rows per controller (migration 0039) on the embedded store: each controller's view of its own
 * routers and of every router, where a router is still connected once a connection ends, and what the rows of a
 * dead process take with them (only what routers connected to no other controller held).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { clearLiveRoutersOf, createLiveRouters } from '../../../src/fabric/live-routers.ts';
import { openMigratedSqlite } from '../../store/postgres-helpers.ts';

const { store, remove } = openMigratedSqlite();
after(async () => {
  await store.close();
  remove();
});

const T = '2026-01-01T00:00:00.000Z';
const version = { version: 'v2.0.0-pre3', revision: '', buildDate: '', os: 'linux', arch: 'amd64' };
await store.write(async (tx) => {
  for (const id of ['r1', 'r2', 'r3']) await tx.run('INSERT INTO routers (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)', [id, `router-${id}`, T, T]);
  await tx.run("INSERT INTO services (id, name, created_at, updated_at) VALUES ('s1', 'service-1', ?, ?)", [T, T]);
});

const a = createLiveRouters(store, 'process-a', 'ctrl-a');
const a2 = createLiveRouters(store, 'process-a2', 'ctrl-a');
const b = createLiveRouters(store, 'process-b', 'ctrl-b');

async function holds(routerId: string): Promise<void> {
  await store.write(async (tx) => {
    await tx.run('INSERT INTO terminators (id, service_id, router_id, binding, address, created_at, updated_at, is_system) VALUES (?, ?, ?, ?, ?, ?, ?, 1)', [
      `t-${routerId}`, 's1', routerId, 'edge', `t-${routerId}`, T, T,
    ]);
    await tx.run('INSERT INTO identity_router_connections (identity_id, router_id, connected_at) VALUES (?, ?, ?)', ['i1', routerId, T]);
  });
}

const count = (sql: string, params: unknown[] = []) => store.value<number>(`SELECT COUNT(*) FROM ${sql}`, params);

describe('router connections per controller', () => {
  it('ok/lists a router connected to two controllers once, each controller preferring its own connection', async () => {
    await a.connected('r1', 'k-a', new Date(), version, []);
    await b.connected('r1', 'k-b', new Date(), version, []);
    assert.equal((await a.current()).get('r1')?.connectionId, 'k-a');
    assert.equal((await b.current()).get('r1')?.connectionId, 'k-b');
    assert.equal((await a.current()).size, 1);
    assert.deepEqual([...(await a.here()).keys()], ['r1']);
    await a.disconnected('r1', 'k-a');
    assert.equal((await a.current()).get('r1')?.controllerId, 'ctrl-b', 'still online, through the other controller');
    assert.equal((await a.here()).size, 0, 'not reachable from this one');
    await b.disconnected('r1', 'k-b');
  });

  it('ok/a newer connection to the same controller replaces the row; to another controller it adds one', async () => {
    await a.connected('r2', 'k1', new Date(), version, []);
    await a2.connected('r2', 'k2', new Date(), version, []);
    assert.equal(await count('router_connections WHERE router_id = ?', ['r2']), 1);
    assert.equal(await a.disconnected('r2', 'k1'), 'here', 'the older connection ends: the newer one is still here');
    await b.connected('r2', 'k3', new Date(), version, []);
    assert.equal(await count('router_connections WHERE router_id = ?', ['r2']), 2);
    assert.equal(await a2.disconnected('r2', 'k2'), 'elsewhere');
    assert.equal(await b.disconnected('r2', 'k3'), 'gone');
  });

  it("ok/a dead process's rows take only what routers connected to no other controller held", async () => {
    await a.connected('r1', 'k-a', new Date(), version, []);
    await b.connected('r1', 'k-b', new Date(), version, []);
    await a.connected('r3', 'k-a3', new Date(), version, []);
    await holds('r1');
    await holds('r3');
    await store.write(async (tx) => {
      await tx.run("INSERT INTO links (id, src_router_id, dst_router_id, owner, created_at, updated_at) VALUES ('l13', 'r1', 'r3', 'process-a', ?, ?)", [T, T]);
      await tx.run("INSERT INTO links (id, src_router_id, dst_router_id, owner, created_at, updated_at) VALUES ('l12', 'r1', 'r2', 'process-a', ?, ?)", [T, T]);
    });
    await clearLiveRoutersOf(store, 'process-a');
    assert.equal(await count('router_connections WHERE owner = ?', ['process-a']), 0);
    assert.equal(await count("terminators WHERE id = 't-r1'"), 1, 'r1 is still connected to ctrl-b');
    assert.equal(await count("identity_router_connections WHERE router_id = 'r1'"), 1);
    assert.equal(await count("terminators WHERE id = 't-r3'"), 0, 'r3 is connected nowhere now');
    assert.equal(await count("identity_router_connections WHERE router_id = 'r3'"), 0);
    assert.equal(await count("links WHERE id = 'l13'"), 0, 'its other end is gone');
    assert.equal(await store.value<string>("SELECT owner FROM links WHERE id = 'l12'"), 'process-b', 'kept, recorded by a process holding its dialer');
  });
});
