/**
 * The client service list in its default order (no filter, no sort) is paged from the service catalogue; the same
 * list asked with `sort=id` is paged by the store. Both must give the same items, totalCount and meta, for an
 * admin (every service) and a non-admin (the services it may use), at every limit/offset tried, before and after
 * writes that change services, configs, config types, policies and identity overrides.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName } from '../../support/controller.ts';
import { createClientUser, createRecord } from '../../support/factories.ts';
import type { HttpClient } from '../../support/client.ts';

const tc = await startTestController();

async function compare(client: HttpClient, label: string): Promise<number> {
  let total = -1;
  for (const [limit, offset] of [[25, 0], [7, 3], [500, 0], [10, 40], [-1, 0], [3, 1000], [1, 0]] as const) {
    const paging = `limit=${limit}&offset=${offset}&configTypes=all`;
    const fromCatalog = await client.get(`/services?${paging}`);
    const fromStore = await client.get(`/services?${paging}&sort=id`);
    assert.equal(fromCatalog.status, 200, fromCatalog.text);
    assert.equal(fromStore.status, 200, fromStore.text);
    assert.deepEqual(fromCatalog.body.data, fromStore.body.data, `${label}: items at limit ${limit} offset ${offset}`);
    assert.deepEqual(fromCatalog.body.meta, fromStore.body.meta, `${label}: meta at limit ${limit} offset ${offset}`);
    total = fromCatalog.body.meta.pagination.totalCount as number;
  }
  return total;
}

describe('client service list: catalogue pages equal store pages', () => {
  it('for an admin and a user, across writes', async () => {
    const tag = uniqueName('cat').replace(/[^a-z0-9-]/gi, '');
    const user = await createClientUser(tc, { roleAttributes: [`${tag}-team`] });
    const typeA = await createRecord(tc.mgmt, '/config-types', { name: `${tag}-a` });
    const typeB = await createRecord(tc.mgmt, '/config-types', { name: `${tag}-b` });
    const cfgA = await createRecord(tc.mgmt, '/configs', { name: `${tag}-ca`, configTypeId: typeA, data: { v: 1 } });
    const cfgB = await createRecord(tc.mgmt, '/configs', { name: `${tag}-cb`, configTypeId: typeB, data: { v: 2 } });
    const override = await createRecord(tc.mgmt, '/configs', { name: `${tag}-co`, configTypeId: typeA, data: { v: 'mine' } });
    const services: string[] = [];
    for (let i = 0; i < 30; i++) {
      const attrs = i % 3 === 0 ? [`${tag}-dial`] : i % 3 === 1 ? [`${tag}-bind`] : [];
      services.push(await createRecord(tc.mgmt, '/services', { name: `${tag}-svc-${i}`, encryptionRequired: true, roleAttributes: attrs, configs: i % 2 ? [cfgA] : [cfgA, cfgB] }));
    }
    await createRecord(tc.mgmt, '/service-policies', { name: `${tag}-d`, type: 'Dial', semantic: 'AnyOf', identityRoles: [`#${tag}-team`], serviceRoles: [`#${tag}-dial`] });
    const bind = await createRecord(tc.mgmt, '/service-policies', { name: `${tag}-b`, type: 'Bind', semantic: 'AnyOf', identityRoles: [`@${user.id}`], serviceRoles: [`#${tag}-bind`, `@${services[0]}`] });
    // The admin's identity dials the dial services and one more by id (admins see only what policies grant).
    const adminId = (await tc.client.get('/current-identity')).body.data.id as string;
    await createRecord(tc.mgmt, '/service-policies', { name: `${tag}-admin`, type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${adminId}`], serviceRoles: [`#${tag}-dial`, `@${services[1]}`] });
    const override0 = await tc.mgmt.post(`/identities/${user.id}/service-configs`, [{ serviceId: services[0], configId: override }]);
    assert.equal(override0.status, 200, override0.text);

    // No posture check exists yet: every service shows the placeholders.
    assert.equal(await compare(user.client, 'user, no posture checks'), 20);
    assert.equal(await compare(tc.client, 'admin, no posture checks'), 11);
    // A posture check on the bind policy: its services carry real postureQueries, the others the placeholders.
    const check = await createRecord(tc.mgmt, '/posture-checks', { name: `${tag}-os`, typeId: 'OS', roleAttributes: [`${tag}-pc`], operatingSystems: [{ type: 'Linux', versions: [] }] });
    assert.equal((await tc.mgmt.patch(`/service-policies/${bind}`, { postureCheckRoles: [`#${tag}-pc`] })).status, 200);
    const withChecks = (await user.client.get('/services?limit=500')).body.data as Array<Record<string, any>>;
    const guarded = withChecks.find((s) => s.id === services[1])!;
    assert.equal(guarded.postureQueries[0].postureQueries[0].id, check);

    assert.equal(await compare(user.client, 'user'), 20);
    const adminTotal = await compare(tc.client, 'admin');
    assert.equal(adminTotal, 11);

    // Writes to every table the catalogue holds, and to access.
    assert.equal((await tc.mgmt.patch(`/configs/${cfgB}`, { data: { v: 3 } })).status, 200);
    assert.equal((await tc.mgmt.patch(`/config-types/${typeB}`, { name: `${tag}-b2` })).status, 200);
    assert.equal((await tc.mgmt.patch(`/services/${services[3]}`, { name: `${tag}-renamed`, configs: [cfgB] })).status, 200);
    assert.equal((await tc.mgmt.delete(`/services/${services[6]}`)).status, 200);
    assert.equal((await tc.mgmt.patch(`/service-policies/${bind}`, { serviceRoles: [`#${tag}-bind`] })).status, 200);
    assert.equal(await compare(user.client, 'user after writes'), 19);
    assert.equal(await compare(tc.client, 'admin after writes'), adminTotal - 1);

    const seen = (await user.client.get('/services?limit=500&configTypes=all')).body.data as Array<Record<string, any>>;
    const renamed = seen.find((s) => s.id === services[3])!;
    assert.equal(renamed.name, `${tag}-renamed`);
    assert.deepEqual(renamed.config, { [`${tag}-b2`]: { v: 3 } });
    assert.deepEqual(renamed.permissions, ['Dial']);
    assert.ok(!seen.some((s) => s.id === services[6]));
  });

  it('rejects a bad limit the same way on both paths', async () => {
    for (const q of ['limit=abc', 'limit=99999999999999999999', 'offset=-']) {
      const a = await tc.client.get(`/services?${q}`);
      const b = await tc.client.get(`/services?${q}&sort=id`);
      assert.equal(a.status, 400, a.text);
      assert.equal(a.status, b.status);
      assert.equal(a.body.error.code, b.body.error.code);
    }
  });
});
