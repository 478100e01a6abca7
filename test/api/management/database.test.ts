/**
 * Database operations: data-integrity check and fix runs (background, one at a time, results with their
 * before-any-run values), each kind of corruption the scan looks for (made directly in the store), the fix
 * repairing it after a snapshot and the access index reloaded, snapshots (a valid SQLite copy named like
 * upstream, at most one per minute; SQLite only: PostgreSQL refuses them, and its fix runs without one) and
 * permissions.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { startTestController, testStore, uniqueName, type TestController } from '../../support/controller.ts';
import { createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesDefinition, assertMatchesReference } from '../../support/reference-spec.ts';
import { assertEmptyOk, assertError, sleep } from '../../support/assertions.ts';
import { integrityRunHooks } from '../../../src/resources/database/database-ops.ts';
import type { SqliteStore } from '../../../src/store/sqlite-store.ts';
import type { Tx } from '../../../src/store/store.ts';

const tc: TestController = await startTestController();
const store = tc.controller.store;
/** Snapshots are copies of the SQLite file next to it. */
const sqliteSnapshots = testStore() === 'sqlite';

/** One statement written directly in the store. */
function write(sql: string, params: unknown[] = []): Promise<unknown> {
  return store.write((tx) => tx.run(sql, params));
}

/**
 * Writes with foreign keys not enforced, as a crash or a bug could leave the store: SQLite's pragma (outside a
 * transaction, on the write connection), PostgreSQL's replica mode for the transaction (its foreign keys are
 * triggers that do not fire then; needs a superuser, as the test cluster's is).
 */
async function withoutForeignKeys(work: (tx: Tx) => Promise<void>): Promise<void> {
  if (store.kind === 'postgres') {
    await store.write(async (tx) => {
      await tx.run('SET LOCAL session_replication_role = replica');
      await work(tx);
    });
    return;
  }
  const { db } = store as SqliteStore;
  db.pragma('foreign_keys = OFF');
  try {
    await store.write(work);
  } finally {
    db.pragma('foreign_keys = ON');
  }
}

/** Upstream sends these as null although the reference does not declare them nullable (model.md §8.1). */
const BEFORE_RUN_NULLS = { allowNullAt: ['/data/startTime', '/data/endTime', '/data/error', '/data/results'] };
/** Upstream renders a run without findings with `results: null`; the reference does not mark it nullable. */
const AFTER_RUN_NULLS = { allowNullAt: ['/data/error', '/data/results'] };
/** RFC 3339 with the controller's local offset (or Z). */
const LOCAL_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}(Z|[+-]\d{2}:\d{2})$/;

interface Results {
  inProgress: boolean;
  fixingErrors: boolean;
  tooManyErrors: boolean;
  startTime: string | null;
  endTime: string | null;
  error: string | null;
  results: Array<{ description: string; fixed: boolean }> | null;
}

async function results(): Promise<Results> {
  const res = await tc.mgmt.get('/database/data-integrity-results');
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.body.meta, { pagination: { limit: -1, offset: 0, totalCount: res.body.data.results?.length ?? 0 } });
  return res.body.data as Results;
}

/** Starts a run and waits (by polling, no timing assertions) until it has ended. */
async function run(kind: 'check' | 'fix', tooMany = false): Promise<Results> {
  const res = await tc.mgmt.post(`/database/${kind}-data-integrity`);
  assert.equal(res.status, 202, res.text);
  assert.deepEqual(res.body, { data: {}, meta: {} });
  assertMatchesReference('management', 'POST', `/database/${kind}-data-integrity`, 202, res.body);
  for (let i = 0; i < 2000; i++) {
    const r = await tc.mgmt.get('/database/data-integrity-results');
    if (!r.body.data.inProgress) {
      assertMatchesReference('management', 'GET', '/database/data-integrity-results', 200, r.body, AFTER_RUN_NULLS);
      const data = r.body.data as Results;
      assert.equal(data.error, null, `run failed: ${data.error}`);
      assert.equal(data.fixingErrors, kind === 'fix');
      assert.equal(data.tooManyErrors, tooMany);
      assert.match(String(data.startTime), LOCAL_TIME);
      assert.match(String(data.endTime), LOCAL_TIME);
      return data;
    }
    await sleep(5);
  }
  throw new Error('the integrity run did not end');
}

function descriptions(r: Results): string[] {
  return (r.results ?? []).map((x) => x.description);
}

function assertReported(r: Results, pattern: RegExp, fixed: boolean): void {
  const hit = (r.results ?? []).find((x) => pattern.test(x.description));
  assert.ok(hit, `expected a result matching ${pattern}, got:\n${descriptions(r).join('\n')}`);
  assert.equal(hit.fixed, fixed, hit.description);
}

async function post(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await tc.mgmt.post(path, body);
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

async function dialableServices(identityId: string): Promise<string[]> {
  const res = await tc.mgmt.get(`/identities/${identityId}/services?policyType=dial`);
  assert.equal(res.status, 200, res.text);
  return (res.body.data as Array<{ id: string }>).map((s) => s.id).sort();
}

function snapshotFiles(): string[] {
  return readdirSync(tc.dataDir).filter((f) => /^portcullis\.db-\d{8}-\d{6}(-\d+)?$/.test(f)).sort();
}

/** A small network: identity with #a #<b>, service with #svc and a config, a Dial policy #<b> → @service. */
async function network() {
  const b = uniqueName('b');
  const identity = await createIdentity(tc.mgmt, { roleAttributes: ['a', b] });
  const configType = await post('/config-types', { name: uniqueName('ct') });
  const config = await post('/configs', { name: uniqueName('cfg'), configTypeId: configType, data: {} });
  const service = await post('/services', { name: uniqueName('svc'), encryptionRequired: true, roleAttributes: ['svc'], configs: [config] });
  const policy = await post('/service-policies', { name: uniqueName('sp'), type: 'Dial', semantic: 'AllOf', identityRoles: [`#${b}`], serviceRoles: [`@${service}`] });
  return { b, identity, configType, config, service, policy };
}

describe('data integrity results before any run', () => {
  it('are null and false, with an empty unlimited page', async () => {
    const res = await tc.mgmt.get('/database/data-integrity-results');
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/database/data-integrity-results', 200, res.body, BEFORE_RUN_NULLS);
    assert.deepEqual(res.body, {
      data: { endTime: null, error: null, fixingErrors: false, inProgress: false, results: null, startTime: null, tooManyErrors: false },
      meta: { pagination: { limit: -1, offset: 0, totalCount: 0 } },
    });
  });
});

describe('data integrity check and fix', () => {
  it('finds nothing on a healthy store, posture checks of every type included (MFA has no catalogue entry)', async () => {
    await network();
    for (const body of [
      { typeId: 'MFA', timeoutSeconds: 300 },
      { typeId: 'MAC', macAddresses: ['00:11:22:33:44:55'] },
      { typeId: 'DOMAIN', domains: ['example.com'] },
      { typeId: 'OS', operatingSystems: [{ type: 'Linux', versions: [] }] },
    ]) {
      const res = await tc.mgmt.post('/posture-checks', { name: uniqueName('pc'), ...body });
      assert.equal(res.status, 201, res.text);
    }
    const r = await run('check');
    assert.deepEqual(r.results, null);
  });

  it('reports each corruption, fixes it after a snapshot, and is clean afterwards', async () => {
    const n = await network();
    assert.deepEqual(await dialableServices(n.identity), [n.service]);
    // 1. A role attribute side-table row goes missing (the store now disagrees with the live index as well).
    await write('DELETE FROM identity_role_attributes WHERE identity_id = ? AND attribute = ?', [n.identity, n.b]);
    // 2. A policy_roles row of a policy that does not exist, and one its policy does not list.
    await write("INSERT INTO policy_roles (policy_id, field, role) VALUES ('no-such-policy', 'identityRoles', '#x')");
    await write("INSERT INTO policy_roles (policy_id, field, role) VALUES (?, 'serviceRoles', '#stale')", [n.policy]);
    // 3. A role attribute row is broken (its value no longer matches the record).
    await write("UPDATE service_role_attributes SET attribute = 'broken' WHERE service_id = ? AND attribute = 'svc'", [n.service]);
    // 4. A policy names an identity that does not exist.
    await write('UPDATE service_policies SET identity_roles = ? WHERE id = ?', [JSON.stringify([`#${n.b}`, '@ghost-identity']), n.policy]);
    await write("INSERT INTO policy_roles (policy_id, field, role) VALUES (?, 'identityRoles', '@ghost-identity')", [n.policy]);
    // 5. A service's config link row goes missing.
    await write('DELETE FROM service_configs WHERE service_id = ?', [n.service]);
    // 6. A real foreign key is violated (written with enforcement off, as a crash or a bug could leave it).
    await withoutForeignKeys(async (tx) => {
      await tx.run("INSERT INTO identity_service_marks (identity_id, changed_at) VALUES ('ghost-mark', '2024-01-01T00:00:00.000Z')");
    });

    const expectations: RegExp[] = [
      new RegExp(`^identities ${n.identity} role attribute '${n.b}' is missing from identity_role_attributes$`),
      /^policy_roles holds 1 role row\(s\) of policy 'no-such-policy', which does not exist$/,
      new RegExp(`^policy_roles holds serviceRoles role '#stale' for service_policies ${n.policy}`),
      new RegExp(`^services ${n.service} role attribute 'svc' is missing from service_role_attributes$`),
      new RegExp(`^service_role_attributes holds role attribute 'broken' for services ${n.service}`),
      new RegExp(`^service_policies ${n.policy} identityRoles references missing identity 'ghost-identity'$`),
      new RegExp(`^services ${n.service} config '${n.config}' is missing from service_configs$`),
      /^identity_service_marks\.identity_id 'ghost-mark' references a missing identities record$/,
    ];

    const checked = await run('check');
    for (const e of expectations) assertReported(checked, e, false);
    // The side tables now disagree with the live index too. The fix rewrites them from the records, which the
    // live index followed all along, so after the repairs the index agrees with the store again.
    const indexDiffers = new RegExp(`^access index answers differ from the store for identity ${n.identity}: services it may dial$`);
    assertReported(checked, indexDiffers, false);
    // A check changes nothing.
    assert.equal(Number(await store.value("SELECT COUNT(*) AS n FROM policy_roles WHERE policy_id = 'no-such-policy'")), 1);

    const before = snapshotFiles();
    const fixed = await run('fix');
    for (const e of expectations) assertReported(fixed, e, true);
    assert.ok(!descriptions(fixed).some((d) => indexDiffers.test(d)), descriptions(fixed).join('\n'));
    if (sqliteSnapshots) {
      const after = snapshotFiles();
      assert.equal(after.length, before.length + 1, 'the fix wrote a snapshot first');

      // The snapshot holds the corrupt state, the store the repaired one.
      const snap = new BetterSqlite3(join(tc.dataDir, after.find((f) => !before.includes(f))!), { readonly: true });
      try {
        assert.equal((snap.prepare("SELECT COUNT(*) AS n FROM policy_roles WHERE policy_id = 'no-such-policy'").get() as { n: number }).n, 1);
      } finally {
        snap.close();
      }
    }
    assert.deepEqual(await store.all('SELECT attribute FROM identity_role_attributes WHERE identity_id = ? ORDER BY attribute', [n.identity]), [
      { attribute: 'a' },
      { attribute: n.b },
    ]);
    assert.deepEqual(await store.all('SELECT attribute FROM service_role_attributes WHERE service_id = ?', [n.service]), [{ attribute: 'svc' }]);
    assert.deepEqual(await store.all('SELECT field, role FROM policy_roles WHERE policy_id = ? ORDER BY field, role', [n.policy]), [
      { field: 'identityRoles', role: `#${n.b}` },
      { field: 'serviceRoles', role: `@${n.service}` },
    ]);
    assert.deepEqual(await store.all('SELECT config_id FROM service_configs WHERE service_id = ?', [n.service]), [{ config_id: n.config }]);
    assert.equal(Number(await store.value("SELECT COUNT(*) AS n FROM identity_service_marks WHERE identity_id = 'ghost-mark'")), 0);
    const policy = await tc.mgmt.get(`/service-policies/${n.policy}`);
    assert.deepEqual(policy.body.data.identityRoles, [`#${n.b}`]);
    assert.deepEqual(await dialableServices(n.identity), [n.service]);

    const clean = await run('check');
    assert.deepEqual(clean.results, null, descriptions(clean).join('\n'));
  });

  it('compares the live access index with the store and reloads it when fixing', async () => {
    const n = await network();
    const outsider = await createIdentity(tc.mgmt, { roleAttributes: ['a'] });
    assert.deepEqual(await dialableServices(outsider), []);
    // The store gains the policy's attribute consistently (JSON and side table), bypassing the live index.
    await write('UPDATE identities SET role_attributes = ? WHERE id = ?', [JSON.stringify(['a', n.b]), outsider]);
    await write('INSERT INTO identity_role_attributes (identity_id, attribute) VALUES (?, ?)', [outsider, n.b]);

    const checked = await run('check');
    assert.ok(checked.results!.length > 0);
    for (const r of checked.results!) assert.match(r.description, /^access index /, r.description);
    assertReported(checked, new RegExp(`^access index answers differ from the store for identity ${outsider}: services it may dial$`), false);
    assertReported(checked, new RegExp(`^access index answers differ from the store for servicePolicy ${n.policy}: the identityRoles it matches$`), false);
    assert.deepEqual(await dialableServices(outsider), [], 'a check does not reload the index');

    const fixed = await run('fix');
    assertReported(fixed, new RegExp(`identity ${outsider}: services it may dial$`), true);
    assert.deepEqual(await dialableServices(outsider), [n.service]);
    assert.deepEqual((await run('check')).results, null);
  });

  it('checks references without a foreign key: override config types, enrollment CAs, sessions', async () => {
    const n = await network();
    const otherType = await post('/config-types', { name: uniqueName('ct') });
    const otherConfig = await post('/configs', { name: uniqueName('cfg'), configTypeId: otherType, data: {} });
    const other = await createIdentity(tc.mgmt);
    const now = new Date().toISOString();
    // An override filed under a config type that is not its config's type.
    await write('INSERT INTO identity_service_configs (identity_id, service_id, config_type_id, config_id) VALUES (?, ?, ?, ?)', [
      n.identity, n.service, n.configType, otherConfig,
    ]);
    // An enrollment naming a CA that is gone.
    const enrollment = uniqueName('enr');
    await write(
      `INSERT INTO enrollments (id, method, identity_id, ca_id, token, jwt, issued_at, expires_at, created_at, updated_at)
       VALUES (?, 'ottca', ?, 'ghost-ca', ?, 'jwt', ?, ?, ?, ?)`,
      [enrollment, other, uniqueName('token'), now, now, now, now],
    );
    // A session whose identity is not its API session's, and one no policy allows (the identity may only dial).
    const apiSession = uniqueName('as');
    await write(
      'INSERT INTO api_sessions (id, token_hash, identity_id, authenticator_id, last_activity_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      [apiSession, uniqueName('hash'), other, 'none', now, now, now],
    );
    const ownApiSession = uniqueName('as');
    await write(
      'INSERT INTO api_sessions (id, token_hash, identity_id, authenticator_id, last_activity_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      [ownApiSession, uniqueName('hash'), n.identity, 'none', now, now, now],
    );
    const insertSession =
      'INSERT INTO sessions (id, token, session_type, api_session_id, identity_id, service_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)';
    const foreign = uniqueName('s');
    const bind = uniqueName('s');
    const dial = uniqueName('s');
    await write(insertSession, [foreign, uniqueName('t'), 'Dial', apiSession, n.identity, n.service, now, now]);
    await write(insertSession, [bind, uniqueName('t'), 'Bind', ownApiSession, n.identity, n.service, now, now]);
    await write(insertSession, [dial, uniqueName('t'), 'Dial', ownApiSession, n.identity, n.service, now, now]);

    const expectations = [
      new RegExp(`^identity_service_configs of identity ${n.identity} and service ${n.service} files config ${otherConfig} under config type ${n.configType}, but its type is ${otherType}$`),
      new RegExp(`^enrollments ${enrollment} references missing CA 'ghost-ca'$`),
      new RegExp(`^sessions ${foreign} belongs to identity ${n.identity} but its API session to identity ${other}$`),
      new RegExp(`^sessions ${bind} lets identity ${n.identity} bind service ${n.service}, which no policy allows$`),
    ];
    const checked = await run('check');
    for (const e of expectations) assertReported(checked, e, false);
    assert.equal(checked.results!.length, expectations.length, descriptions(checked).join('\n'));
    const fixed = await run('fix');
    for (const e of expectations) assertReported(fixed, e, true);
    assert.deepEqual(await store.all('SELECT id FROM sessions WHERE identity_id = ?', [n.identity]), [{ id: dial }], 'the allowed session stays');
    assert.equal(await store.get('SELECT id FROM enrollments WHERE id = ?', [enrollment]), undefined);
    assert.deepEqual(await store.all('SELECT * FROM identity_service_configs WHERE identity_id = ?', [n.identity]), []);
    assert.deepEqual((await run('check')).results, null);
  });

  it('keeps at most 1000 results and flags tooManyErrors', async () => {
    const insert = "INSERT INTO policy_roles (policy_id, field, role) VALUES (?, 'identityRoles', '#all')";
    await store.write(async (tx) => {
      for (let i = 0; i < 1005; i++) await tx.run(insert, [`ghost-policy-${i}`]);
    });
    const checked = await run('check', true);
    assert.equal(checked.results!.length, 1000);
    const res = await tc.mgmt.get('/database/data-integrity-results');
    assert.equal(res.body.meta.pagination.totalCount, 1000);
    const fixed = await run('fix', true);
    assert.ok(fixed.results!.every((r) => r.fixed));
    assert.equal(Number(await store.value("SELECT COUNT(*) AS n FROM policy_roles WHERE policy_id LIKE 'ghost-policy-%'")), 0, 'everything was fixed');
    assert.deepEqual((await run('check')).results, null);
  });

  it('reports what it can not fix as not fixed', async () => {
    const n = await network();
    const checkId = uniqueName('pc');
    const typeless = uniqueName('id');
    await withoutForeignKeys(async (tx) => {
      await tx.run(
        "INSERT INTO posture_checks (id, name, type_id, created_at, updated_at) VALUES (?, ?, 'NO_SUCH_TYPE', '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z')",
        [checkId, checkId],
      );
      // A record whose required reference dangles is reported, never deleted (its parent does not own it).
      await tx.run(
        "INSERT INTO identities (id, name, type_id, created_at, updated_at) VALUES (?, ?, 'NoSuchType', '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z')",
        [typeless, typeless],
      );
    });
    // A service can hold at most one config per config type.
    const second = await post('/configs', { name: uniqueName('cfg'), configTypeId: n.configType, data: {} });
    await write('UPDATE services SET configs = ? WHERE id = ?', [JSON.stringify([n.config, second].sort()), n.service]);
    await write('INSERT INTO service_configs (service_id, config_id) VALUES (?, ?)', [n.service, second]);

    const fixed = await run('fix');
    assertReported(fixed, new RegExp(`^posture_checks ${checkId} has unknown posture check type 'NO_SUCH_TYPE'$`), false);
    assertReported(fixed, new RegExp(`^services ${n.service} lists 2 configs of config type ${n.configType}`), false);
    assertReported(fixed, /^identities\.type_id 'NoSuchType' references a missing identity_types record$/, false);
    assert.ok(await store.get('SELECT id FROM identities WHERE id = ?', [typeless]), 'the identity was kept');
    const again = await run('check');
    assert.equal(again.results!.length, 3, descriptions(again).join('\n'));
    assertEmptyOk(await tc.mgmt.delete(`/identities/${typeless}`));
    assertEmptyOk(await tc.mgmt.delete(`/posture-checks/${checkId}`));
    const patch = await tc.mgmt.patch(`/services/${n.service}`, { configs: [n.config] });
    assert.equal(patch.status, 200, patch.text);
    assert.deepEqual((await run('check')).results, null);
  });
});

describe('one integrity run at a time', () => {
  it('refuses a second check or fix while a run is in progress', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    integrityRunHooks.beforeScan = () => gate;
    after(() => {
      release();
      integrityRunHooks.beforeScan = undefined;
    });

    const first = await tc.mgmt.post('/database/check-data-integrity');
    assert.equal(first.status, 202, first.text);
    const during = await results();
    assert.equal(during.inProgress, true);
    assert.equal(during.fixingErrors, false);
    assert.equal(during.endTime, null);
    assert.deepEqual(during.results, null);
    assert.match(String(during.startTime), LOCAL_TIME);

    for (const kind of ['check', 'fix']) {
      const second = await tc.mgmt.post(`/database/${kind}-data-integrity`);
      assertError(second, 429, 'RATE_LIMITED');
      assertMatchesReference('management', 'POST', `/database/${kind}-data-integrity`, 429, second.body);
    }
    release();
    integrityRunHooks.beforeScan = undefined;
    for (let i = 0; i < 2000 && (await results()).inProgress; i++) await sleep(5);
    const done = await results();
    assert.equal(done.inProgress, false);
    assert.deepEqual(done.results, null);
    // A new run may start once the previous one ended.
    assert.deepEqual((await run('check')).results, null);
  });
});

describe('database snapshot', { skip: !sqliteSnapshots && 'SQLite only: the snapshot is a copy of the SQLite file' }, () => {
  it('writes a valid copy named <db file>-YYYYMMDD-HHMMSS, at most once per minute', async () => {
    const identity = await createIdentity(tc.mgmt);
    const before = snapshotFiles();
    const res = await tc.mgmt.post('/database/snapshot');
    assertEmptyOk(res);
    assertMatchesReference('management', 'POST', '/database/snapshot', 200, res.body);
    const added = snapshotFiles().filter((f) => !before.includes(f));
    assert.equal(added.length, 1);
    assert.match(added[0]!, /^portcullis\.db-\d{8}-\d{6}(-\d+)?$/);

    const snap = new BetterSqlite3(join(tc.dataDir, added[0]!), { readonly: true });
    try {
      assert.deepEqual(snap.pragma('integrity_check'), [{ integrity_check: 'ok' }]);
      assert.deepEqual(snap.prepare('SELECT id FROM identities WHERE id = ?').get(identity), { id: identity });
    } finally {
      snap.close();
    }

    const again = await tc.mgmt.post('/database/snapshot');
    assertError(again, 429, 'RATE_LIMITED');
    assert.equal(again.body.error.cause, undefined, 'the rate-limit answer carries no cause');
    assertMatchesReference('management', 'POST', '/database/snapshot', 429, again.body);
    assert.equal(snapshotFiles().length, before.length + 1);
  });
});

describe('database snapshot on PostgreSQL', { skip: sqliteSnapshots && 'PostgreSQL only: a store without a file to copy' }, () => {
  it('refuses with 409 SNAPSHOT_NOT_SUPPORTED each time (a refusal does not count against the per-minute limit), writing nothing', async () => {
    const before = snapshotFiles();
    for (let i = 0; i < 2; i++) {
      const res = await tc.mgmt.post('/database/snapshot');
      assertError(res, 409, 'SNAPSHOT_NOT_SUPPORTED');
      assert.match(res.body.error.message, /PostgreSQL's own tools/);
      assertMatchesDefinition('management', 'apiErrorEnvelope', res.body);
    }
    assert.deepEqual(snapshotFiles(), before);
    assert.equal(await store.value('SELECT last_snapshot_at FROM database_ops_state WHERE id = 1'), null);
  });
});

describe('database operation permissions', () => {
  it('refuses every caller but an admin, as upstream: ops and admin_readonly rights do not open them', async () => {
    const user = await createUserWithPassword(tc);
    const ops = await createUserWithPassword(tc, { permissions: ['ops', 'admin_readonly'] });
    const as = (token: string) => tc.mgmt.as({ token });
    for (const client of [as(user.token), as(ops.token), tc.http]) {
      const base = client === tc.http ? '/edge/management/v1' : '';
      for (const [method, path] of [
        ['POST', '/database/check-data-integrity'],
        ['POST', '/database/fix-data-integrity'],
        ['GET', '/database/data-integrity-results'],
        ['POST', '/database/snapshot'],
      ] as const) {
        const res = await client.request(method, base + path);
        assertError(res, 401, 'UNAUTHORIZED');
      }
    }
    const admin = await createUserWithPassword(tc, { isAdmin: true });
    const started = await as(admin.token).post('/database/check-data-integrity');
    assert.equal(started.status, 202, started.text);
    for (let i = 0; i < 2000 && (await results()).inProgress; i++) await sleep(5);
    assert.deepEqual((await results()).results, null);
  });
});
