/**
 * The access service against a real (in-memory) store: the index is rebuilt from the tables at load, a
 * rolled-back write leaves the index as the store is, entity deletes strip `@id` from stored policy role
 * lists, and the change marks record exactly the affected identities.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase } from '../../../src/store/database.ts';
import { migrate } from '../../../src/store/migrate.ts';
import { withTransaction } from '../../../src/store/transaction.ts';
import { createAccessService } from '../../../src/access/access.service.ts';
import { bootstrapRecords } from '../../../src/system/bootstrap.ts';
import type { ApiError } from '../../../src/errors.ts';

const T0 = '2026-01-01T00:00:00.000Z';
let tick = 0;
const clock = { now: () => new Date(Date.parse(T0) + ++tick * 1000) };

async function store() {
  const db = openDatabase(':memory:');
  migrate(db);
  await bootstrapRecords(db, { username: 'admin', password: 'admin-password' });
  return db;
}

function addIdentity(db: ReturnType<typeof openDatabase>, id: string, attrs: string[]) {
  db.prepare("INSERT INTO identities (id, name, type_id, created_at, updated_at) VALUES (?, ?, 'Default', ?, ?)").run(id, id, T0, T0);
  for (const a of attrs) db.prepare('INSERT INTO identity_role_attributes (identity_id, attribute) VALUES (?, ?)').run(id, a);
}

function addService(db: ReturnType<typeof openDatabase>, id: string, attrs: string[]) {
  db.prepare('INSERT INTO services (id, name, role_attributes, created_at, updated_at) VALUES (?, ?, ?, ?, ?)').run(id, id, JSON.stringify(attrs), T0, T0);
  for (const a of attrs) db.prepare('INSERT INTO service_role_attributes (service_id, attribute) VALUES (?, ?)').run(id, a);
}

function addDialPolicy(db: ReturnType<typeof openDatabase>, id: string, identityRoles: string[], serviceRoles: string[]) {
  db.prepare("INSERT INTO service_policies (id, name, policy_type, semantic, identity_roles, service_roles, created_at, updated_at) VALUES (?, ?, 'Dial', 'AllOf', ?, ?, ?, ?)").run(
    id,
    id,
    JSON.stringify(identityRoles),
    JSON.stringify(serviceRoles),
    T0,
    T0,
  );
  for (const r of identityRoles) db.prepare("INSERT INTO policy_roles (policy_id, field, role) VALUES (?, 'identityRoles', ?)").run(id, r);
  for (const r of serviceRoles) db.prepare("INSERT INTO policy_roles (policy_id, field, role) VALUES (?, 'serviceRoles', ?)").run(id, r);
}

test('load builds the index from the stored entities and policies', async () => {
  const db = await store();
  addIdentity(db, 'i1', ['a']);
  addIdentity(db, 'i2', ['b']);
  addService(db, 's1', ['x']);
  addDialPolicy(db, 'p1', ['#a'], ['#x']);
  const access = createAccessService(db, clock);
  access.load();
  assert.deepEqual([...access.index.servicesOfIdentity('i1')], ['s1']);
  assert.deepEqual([...access.index.servicesOfIdentity('i2')], []);
  assert.deepEqual(access.index.permissions('i1', 's1'), { dial: true, bind: false });
});

test('a rolled-back write restores the index from the store', async () => {
  const db = await store();
  addIdentity(db, 'i1', ['a']);
  addService(db, 's1', ['x']);
  addDialPolicy(db, 'p1', ['#b'], ['#x']);
  const access = createAccessService(db, clock);
  access.load();
  assert.throws(() =>
    withTransaction(db, (tx) => {
      access.entityChanged(tx, 'identity', 'i1', ['b']);
      assert.deepEqual([...access.index.servicesOfIdentity('i1')], ['s1']);
      throw new Error('the write fails after the index was changed');
    }),
  );
  assert.deepEqual([...access.index.servicesOfIdentity('i1')], []);
  assert.equal(access.lastChangeAt('i1'), undefined);
});

test('removing an entity strips its @id from stored policies and marks the identities that lost access', async () => {
  const db = await store();
  addIdentity(db, 'i1', []);
  addIdentity(db, 'i2', []);
  addService(db, 's1', []);
  addDialPolicy(db, 'p1', ['@i1', '@i2'], ['@s1']);
  const access = createAccessService(db, clock);
  access.load();
  withTransaction(db, (tx) => access.entityRemoved(tx, 'service', 's1'));
  const row = db.prepare('SELECT service_roles FROM service_policies WHERE id = ?').get('p1') as { service_roles: string };
  assert.deepEqual(JSON.parse(row.service_roles), []);
  assert.equal((db.prepare("SELECT count(*) AS n FROM policy_roles WHERE policy_id = 'p1' AND field = 'serviceRoles'").get() as { n: number }).n, 0);
  assert.ok(access.lastChangeAt('i1'));
  assert.ok(access.lastChangeAt('i2'));
  assert.deepEqual([...access.index.servicesOfIdentity('i1')], []);
});

test('a policy write marks only the identities whose services changed', async () => {
  const db = await store();
  addIdentity(db, 'i1', ['a']);
  addIdentity(db, 'i2', ['b']);
  addService(db, 's1', ['x']);
  const access = createAccessService(db, clock);
  access.load();
  withTransaction(db, (tx) =>
    access.policyChanged(tx, { id: 'p1', kind: 'servicePolicy', semantic: 'AllOf', type: 'Dial', roles: { identityRoles: ['#a'], serviceRoles: ['#x'] } }),
  );
  assert.ok(access.lastChangeAt('i1'));
  assert.equal(access.lastChangeAt('i2'), undefined);
  const rows = db.prepare("SELECT field, role FROM policy_roles WHERE policy_id = 'p1' ORDER BY field").all();
  assert.deepEqual(rows, [
    { field: 'identityRoles', role: '#a' },
    { field: 'serviceRoles', role: '#x' },
  ]);
  // An edge router policy never changes which services anyone sees.
  const before = access.lastChangeAt('i1');
  withTransaction(db, (tx) =>
    access.policyChanged(tx, { id: 'p2', kind: 'edgeRouterPolicy', semantic: 'AllOf', roles: { identityRoles: ['#all'], edgeRouterRoles: ['#all'] } }),
  );
  assert.equal(access.lastChangeAt('i1'), before);
});

test('role validation: prefixes, #all alone, existing ids, sorted unique result', async () => {
  const db = await store();
  addIdentity(db, 'i1', []);
  const access = createAccessService(db, clock);
  access.load();
  withTransaction(db, (tx) => {
    assert.deepEqual(access.validateRoles(tx, 'identityRoles', ['#b', '@i1', '#a', '#b']), ['#a', '#b', '@i1']);
    const fieldFailure = (field: string, reason: RegExp, value: string) => (err: unknown) => {
      const e = err as ApiError;
      const cause = e.cause as { field: string; reason: string; value: string };
      return e.code === 'COULD_NOT_VALIDATE' && cause.field === field && reason.test(cause.reason) && cause.value === value;
    };
    assert.throws(() => access.validateRoles(tx, 'identityRoles', ['a', '#b']), fieldFailure('identityRoles', /prefixed with #/, '[a]'));
    assert.throws(() => access.validateRoles(tx, 'identityRoles', ['#all', '#a']), fieldFailure('identityRoles', /only role/, '[#a #all]'));
    assert.throws(() => access.validateRoles(tx, 'serviceRoles', ['@i1']), fieldFailure('serviceRoles', /no services found/, '[i1]'));
  });
  assert.deepEqual(access.rolesDisplay('identityRoles', ['#a', '@i1', '@gone']), [
    { role: '#a', name: '#a' },
    { role: '@i1', name: '@i1' },
  ]);
});
