/**
 * The access service against a real (in-memory) store: the index is rebuilt from the tables at load, a
 * rolled-back write leaves the index as the store is, entity deletes strip `@id` from stored policy role
 * lists, and the change marks record exactly the affected identities.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openSqliteStore } from '../../../src/store/sqlite-store.ts';
import { migrate } from '../../../src/store/migrate.ts';
import type { Store } from '../../../src/store/store.ts';
import { createAccessService } from '../../../src/access/access.service.ts';
import { bootstrapRecords } from '../../../src/system/bootstrap.ts';
import type { ApiError } from '../../../src/errors.ts';

const T0 = '2026-01-01T00:00:00.000Z';
let tick = 0;
const clock = { now: () => new Date(Date.parse(T0) + ++tick * 1000) };

async function openStore(): Promise<Store> {
  const store = openSqliteStore(':memory:');
  migrate(store.db);
  await bootstrapRecords(store, { username: 'admin', password: 'admin-password' });
  return store;
}

async function addIdentity(store: Store, id: string, attrs: string[]): Promise<void> {
  await store.write(async (tx) => {
    await tx.run("INSERT INTO identities (id, name, type_id, created_at, updated_at) VALUES (?, ?, 'Default', ?, ?)", [id, id, T0, T0]);
    for (const a of attrs) await tx.run('INSERT INTO identity_role_attributes (identity_id, attribute) VALUES (?, ?)', [id, a]);
  });
}

async function addService(store: Store, id: string, attrs: string[]): Promise<void> {
  await store.write(async (tx) => {
    await tx.run('INSERT INTO services (id, name, role_attributes, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [id, id, JSON.stringify(attrs), T0, T0]);
    for (const a of attrs) await tx.run('INSERT INTO service_role_attributes (service_id, attribute) VALUES (?, ?)', [id, a]);
  });
}

async function addDialPolicy(store: Store, id: string, identityRoles: string[], serviceRoles: string[]): Promise<void> {
  await store.write(async (tx) => {
    await tx.run("INSERT INTO service_policies (id, name, policy_type, semantic, identity_roles, service_roles, created_at, updated_at) VALUES (?, ?, 'Dial', 'AllOf', ?, ?, ?, ?)", [
      id,
      id,
      JSON.stringify(identityRoles),
      JSON.stringify(serviceRoles),
      T0,
      T0,
    ]);
    for (const r of identityRoles) await tx.run("INSERT INTO policy_roles (policy_id, field, role) VALUES (?, 'identityRoles', ?)", [id, r]);
    for (const r of serviceRoles) await tx.run("INSERT INTO policy_roles (policy_id, field, role) VALUES (?, 'serviceRoles', ?)", [id, r]);
  });
}

test('load builds the index from the stored entities and policies', async () => {
  const store = await openStore();
  await addIdentity(store, 'i1', ['a']);
  await addIdentity(store, 'i2', ['b']);
  await addService(store, 's1', ['x']);
  await addDialPolicy(store, 'p1', ['#a'], ['#x']);
  const access = createAccessService(store, clock);
  await access.load();
  assert.deepEqual([...access.index.servicesOfIdentity('i1')], ['s1']);
  assert.deepEqual([...access.index.servicesOfIdentity('i2')], []);
  assert.deepEqual(access.index.permissions('i1', 's1'), { dial: true, bind: false });
});

test('a rolled-back write restores the index from the store', async () => {
  const store = await openStore();
  await addIdentity(store, 'i1', ['a']);
  await addService(store, 's1', ['x']);
  await addDialPolicy(store, 'p1', ['#b'], ['#x']);
  const access = createAccessService(store, clock);
  await access.load();
  await assert.rejects(
    store.write(async (tx) => {
      await access.entityChanged(tx, 'identity', 'i1', ['b']);
      // The transaction sees its change (the committed index, what other requests see, does not yet).
      assert.deepEqual(access.withIndex(tx, (ix) => [...ix.servicesOfIdentity('i1')]), ['s1']);
      assert.deepEqual([...access.index.servicesOfIdentity('i1')], []);
      throw new Error('the write fails after the index was changed');
    }),
    /the write fails after the index was changed/,
  );
  assert.deepEqual([...access.index.servicesOfIdentity('i1')], []);
  assert.equal(await access.lastChangeAt('i1'), undefined);
});

test('removing an entity strips its @id from stored policies and marks the identities that lost access', async () => {
  const store = await openStore();
  await addIdentity(store, 'i1', []);
  await addIdentity(store, 'i2', []);
  await addService(store, 's1', []);
  await addDialPolicy(store, 'p1', ['@i1', '@i2'], ['@s1']);
  const access = createAccessService(store, clock);
  await access.load();
  await store.write((tx) => access.entityRemoved(tx, 'service', 's1'));
  const row = (await store.get<{ service_roles: string }>('SELECT service_roles FROM service_policies WHERE id = ?', ['p1']))!;
  assert.deepEqual(JSON.parse(row.service_roles), []);
  assert.equal((await store.get<{ n: number }>("SELECT count(*) AS n FROM policy_roles WHERE policy_id = 'p1' AND field = 'serviceRoles'"))!.n, 0);
  assert.ok(await access.lastChangeAt('i1'));
  assert.ok(await access.lastChangeAt('i2'));
  assert.deepEqual([...access.index.servicesOfIdentity('i1')], []);
});

test('a policy write marks only the identities whose services changed', async () => {
  const store = await openStore();
  await addIdentity(store, 'i1', ['a']);
  await addIdentity(store, 'i2', ['b']);
  await addService(store, 's1', ['x']);
  const access = createAccessService(store, clock);
  await access.load();
  await store.write((tx) =>
    access.policyChanged(tx, { id: 'p1', kind: 'servicePolicy', semantic: 'AllOf', type: 'Dial', roles: { identityRoles: ['#a'], serviceRoles: ['#x'] } }),
  );
  assert.ok(await access.lastChangeAt('i1'));
  assert.equal(await access.lastChangeAt('i2'), undefined);
  const rows = await store.all("SELECT field, role FROM policy_roles WHERE policy_id = 'p1' ORDER BY field");
  assert.deepEqual(rows, [
    { field: 'identityRoles', role: '#a' },
    { field: 'serviceRoles', role: '#x' },
  ]);
  // An edge router policy never changes which services anyone sees.
  const before = await access.lastChangeAt('i1');
  await store.write((tx) =>
    access.policyChanged(tx, { id: 'p2', kind: 'edgeRouterPolicy', semantic: 'AllOf', roles: { identityRoles: ['#all'], edgeRouterRoles: ['#all'] } }),
  );
  assert.equal(await access.lastChangeAt('i1'), before);
});

test('role validation: prefixes, #all alone, existing ids, sorted unique result', async () => {
  const store = await openStore();
  await addIdentity(store, 'i1', []);
  const access = createAccessService(store, clock);
  await access.load();
  await store.write(async (tx) => {
    assert.deepEqual(await access.validateRoles(tx, 'identityRoles', ['#b', '@i1', '#a', '#b']), ['#a', '#b', '@i1']);
    const fieldFailure = (field: string, reason: RegExp, value: string) => (err: unknown) => {
      const e = err as ApiError;
      const cause = e.cause as { field: string; reason: string; value: string };
      return e.code === 'COULD_NOT_VALIDATE' && cause.field === field && reason.test(cause.reason) && cause.value === value;
    };
    await assert.rejects(access.validateRoles(tx, 'identityRoles', ['a', '#b']), fieldFailure('identityRoles', /prefixed with #/, '[a]'));
    await assert.rejects(access.validateRoles(tx, 'identityRoles', ['#all', '#a']), fieldFailure('identityRoles', /only role/, '[#a #all]'));
    await assert.rejects(access.validateRoles(tx, 'serviceRoles', ['@i1']), fieldFailure('serviceRoles', /no services found/, '[i1]'));
  });
  assert.deepEqual(await access.rolesDisplay('identityRoles', ['#a', '@i1', '@gone']), [
    { role: '#a', name: '#a' },
    { role: '@i1', name: '@i1' },
  ]);
});
