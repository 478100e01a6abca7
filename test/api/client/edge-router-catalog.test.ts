/**
 * `GET /current-identity/edge-routers` in its default order (no filter, no sort) is paged from the edge router
 * catalogue; with `sort=id` it is paged by the store. Both must agree (items and meta) for a user and an admin,
 * before and after router writes made through the API and directly in the store (a second store, as another
 * process would). The routers listed in a session come from the same catalogue in name order: renames reorder
 * them at once.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openSecondStore, startTestController, uniqueName } from '../../support/controller.ts';
import { createClientUser, createRecord } from '../../support/factories.ts';
import type { HttpClient } from '../../support/client.ts';

const tc = await startTestController();

async function compare(client: HttpClient, label: string): Promise<number> {
  let total = -1;
  for (const [limit, offset] of [[25, 0], [3, 2], [500, 0], [2, 100], [-1, 0]] as const) {
    const a = await client.get(`/current-identity/edge-routers?limit=${limit}&offset=${offset}`);
    const b = await client.get(`/current-identity/edge-routers?limit=${limit}&offset=${offset}&sort=id`);
    assert.equal(a.status, 200, a.text);
    assert.equal(b.status, 200, b.text);
    assert.deepEqual(a.body, b.body, `${label}: limit ${limit} offset ${offset}`);
    total = a.body.meta.pagination.totalCount as number;
  }
  return total;
}

describe('edge router catalogue', () => {
  it('pages like the store and follows writes from this and another connection', async () => {
    const tag = uniqueName('erc').replace(/[^a-z0-9-]/gi, '');
    const user = await createClientUser(tc, { roleAttributes: [`${tag}-team`] });
    const routers: string[] = [];
    for (let i = 0; i < 10; i++) {
      routers.push(await createRecord(tc.mgmt, '/edge-routers', { name: `${tag}-r${9 - i}`, roleAttributes: i % 2 ? [`${tag}-edge`] : [] }));
    }
    const other = await openSecondStore(tc);
    try {
      const verify = (id: string) => other.write((tx) => tx.run('UPDATE routers SET is_verified = 1 WHERE id = ?', [id]));
      for (const id of routers.slice(0, 8)) await verify(id);
      await createRecord(tc.mgmt, '/edge-router-policies', { name: `${tag}-erp`, semantic: 'AnyOf', identityRoles: [`#${tag}-team`], edgeRouterRoles: [`#${tag}-edge`] });
      assert.equal(await compare(user.client, 'user'), 4);
      const adminTotal = await compare(tc.client, 'admin');

      // Another connection verifies a router; the API renames one and deletes another.
      await verify(routers[9]);
      assert.equal((await tc.mgmt.patch(`/edge-routers/${routers[1]}`, { name: `${tag}-a-first` })).status, 200);
      assert.equal((await tc.mgmt.delete(`/edge-routers/${routers[3]}`)).status, 200);
      assert.equal(await compare(user.client, 'user after writes'), 4);
      assert.equal(await compare(tc.client, 'admin after writes'), adminTotal);

      // A session lists its routers by name: the renamed router comes first.
      const service = await createRecord(tc.mgmt, '/services', { name: `${tag}-svc`, encryptionRequired: true });
      await createRecord(tc.mgmt, '/service-policies', { name: `${tag}-sp`, type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${user.id}`], serviceRoles: [`@${service}`] });
      await createRecord(tc.mgmt, '/service-edge-router-policies', { name: `${tag}-serp`, semantic: 'AnyOf', serviceRoles: [`@${service}`], edgeRouterRoles: [`#${tag}-edge`] });
      const session = await user.client.post('/sessions', { serviceId: service, type: 'Dial' });
      assert.equal(session.status, 201, session.text);
      const names = (session.body.data.edgeRouters as Array<{ name: string }>).map((r) => r.name);
      assert.deepEqual(names, [`${tag}-a-first`, `${tag}-r0`, `${tag}-r2`, `${tag}-r4`]);
      await other.write((tx) => tx.run('UPDATE routers SET name = ? WHERE id = ?', [`${tag}-z-last`, routers[1]]));
      // On PostgreSQL a client-API read may lag another process's commit by the change feed's delay.
      const expected = [`${tag}-r0`, `${tag}-r2`, `${tag}-r4`, `${tag}-z-last`];
      const routerNames = async () => {
        const res = await user.client.get(`/services/${service}/edge-routers`);
        assert.equal(res.status, 200, res.text);
        return (res.body.data.edgeRouters as Array<{ name: string }>).map((r) => r.name);
      };
      const deadline = Date.now() + (tc.databaseUrl ? 2000 : 0);
      let got = await routerNames();
      while (JSON.stringify(got) !== JSON.stringify(expected) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 5));
        got = await routerNames();
      }
      assert.deepEqual(got, expected);
    } finally {
      await other.close();
    }
  });
});
