/**
 * Management posture views (auth.md §5.5): `GET /identities/{id}/posture-data` (the identity's OS, MAC,
 * domain and processes; per API session the MFA pass and endpoint state) and
 * `GET /identities/{id}/failed-service-requests` (session requests refused for posture, each policy with
 * its failing checks, actual and expected values; the last 100 per identity). Unknown ids answer 404;
 * posture data needs identity read permission, the refused-request list too.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName } from '../../support/controller.ts';
import { createClient } from '../../support/client.ts';
import { createClientUser, createRecord, createUserWithPassword, type ClientUser } from '../../support/factories.ts';
import { TIMESTAMP, assertError } from '../../support/assertions.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';

const tc = await startTestController();
const root = `https://127.0.0.1:${tc.port}`;

type User = ClientUser;
const create = (path: string, body: Record<string, unknown>) => createRecord(tc.mgmt, path, body);

async function clientUser(overrides: Record<string, unknown> = {}): Promise<User> {
  const u = await createUserWithPassword(tc, overrides);
  const res = await tc.http.post('/edge/client/v1/authenticate?method=password', {
    username: u.username,
    password: u.password,
    sdkInfo: { type: 'ziti-sdk-c', version: '1.2.3', appId: 'posture-tests' },
  });
  assert.equal(res.status, 200, res.text);
  return { id: u.id, client: createClient(`${root}/edge/client/v1`, tc.ca, { token: res.body.data.token }), apiSessionId: res.body.data.id, token: res.body.data.token };
}

async function respond(user: User, body: unknown): Promise<void> {
  const res = await user.client.post('/posture-response-bulk', body);
  assert.equal(res.status, 201, res.text);
}

// Upstream sends null for times it does not have although the reference does not declare them nullable.
const POSTURE_DATA_NULLS = [
  '/data/os/lastUpdatedAt', '/data/mac/lastUpdatedAt', '/data/domain/lastUpdatedAt',
  // What was never reported is null, as upstream renders it.
  '/data/os/type', '/data/os/version', '/data/os/build', '/data/mac/addresses', '/data/domain/domain',
  '/data/apiSessionPostureData/*/mfa/passedAt', '/data/apiSessionPostureData/*/endpointState/wokenAt',
  '/data/apiSessionPostureData/*/endpointState/unlockedAt', '/data/apiSessionPostureData/*/mfa/passedOnWake',
  '/data/apiSessionPostureData/*/mfa/passedOnUnlock',
];

await create('/edge-routers', { name: uniqueName('er'), roleAttributes: ['pd-er'] });
await create('/edge-router-policies', { name: uniqueName('erp'), semantic: 'AnyOf', identityRoles: ['#all'], edgeRouterRoles: ['#pd-er'] });
await create('/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AnyOf', serviceRoles: ['#all'], edgeRouterRoles: ['#pd-er'] });

describe('GET /identities/{id}/posture-data', () => {
  it('is empty for an identity that reported nothing: the values it never reported are null, as upstream', async () => {
    const id = await create('/identities', { name: uniqueName('id'), type: 'User', isAdmin: false });
    const res = await tc.mgmt.get(`/identities/${id}/posture-data`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/identities/{id}/posture-data', 200, res.body, { allowNullAt: POSTURE_DATA_NULLS });
    assert.deepEqual(res.body, {
      data: {
        apiSessionPostureData: {},
        domain: { domain: null, lastUpdatedAt: null, postureCheckId: '', timedOut: false },
        mac: { addresses: null, lastUpdatedAt: null, postureCheckId: '', timedOut: false },
        os: { build: null, lastUpdatedAt: null, postureCheckId: '', timedOut: false, type: null, version: null },
        processes: [],
      },
      meta: {},
    });
  });

  it('shows what the identity reported and, per API session, the MFA pass and endpoint state', async () => {
    const user = await clientUser();
    await respond(user, [
      { id: 'os-1', typeId: 'OS', type: 'Windows', version: '10.0.19041', build: '19041' },
      { id: 'mac-1', typeId: 'MAC', macAddresses: ['AA:BB:CC:DD:EE:FF'] },
      { id: 'dom-1', typeId: 'DOMAIN', domain: 'corp.example' },
      { id: 'proc-1', typeId: 'PROCESS', path: 'C:\\a.exe', isRunning: true, hash: 'ABCD', signerFingerprints: ['01:02'] },
      { id: 'proc-1', typeId: 'PROCESS', path: 'C:\\b.exe', isRunning: false },
      { id: 'proc-2', typeId: 'PROCESS', path: 'C:\\c.exe', isRunning: true },
      { id: 'state', typeId: 'ENDPOINT_STATE', unlocked: true },
    ]);
    const passedAt = new Date(Date.now() - 30_000).toISOString();
    await tc.controller.store.write((tx) => tx.run('UPDATE api_sessions SET mfa_passed_at = ? WHERE id = ?', [passedAt, user.apiSessionId]));

    const res = await tc.mgmt.get(`/identities/${user.id}/posture-data`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/identities/{id}/posture-data', 200, res.body, { allowNullAt: POSTURE_DATA_NULLS });
    const d = res.body.data;
    assert.equal(d.os.postureCheckId, 'os-1');
    assert.match(d.os.lastUpdatedAt, TIMESTAMP);
    assert.deepEqual([d.os.type, d.os.version, d.os.build], ['Windows', '10.0.19041', '19041']);
    assert.deepEqual(d.mac.addresses, ['aabbccddeeff']);
    assert.equal(d.domain.domain, 'corp.example');
    // One entry per posture check id: the newest response sent with it.
    assert.deepEqual(
      d.processes.map((p: Record<string, unknown>) => [p.postureCheckId, p.isRunning, p.binaryHash, p.signerFingerprints]),
      [['proc-1', false, '', []], ['proc-2', true, '', []]],
    );
    const session = d.apiSessionPostureData[user.apiSessionId];
    // No wake event in this session: passedOnWake stays null.
    assert.deepEqual(session.mfa, { apiSessionId: user.apiSessionId, passedAt, passedMfa: true, passedOnUnlock: true, passedOnWake: null });
    assert.equal(session.endpointState.wokenAt, null);
    assert.match(session.endpointState.unlockedAt, TIMESTAMP);
    assert.equal(session.sdkInfo.type, 'ziti-sdk-c');
    assert.equal(session.sdkInfo.version, '1.2.3');

    // An unlock more than 5 minutes after the pass is an unanswered prompt.
    await tc.controller.store.write(async (tx) => {
      await tx.run('UPDATE api_sessions SET mfa_passed_at = ? WHERE id = ?', [new Date(Date.now() - 3_600_000).toISOString(), user.apiSessionId]);
      await tx.run('UPDATE posture_endpoint_states SET unlocked_at = ? WHERE api_session_id = ?', [new Date(Date.now() - 600_000).toISOString(), user.apiSessionId]);
    });
    const later = (await tc.mgmt.get(`/identities/${user.id}/posture-data`)).body.data.apiSessionPostureData[user.apiSessionId];
    assert.equal(later.mfa.passedOnUnlock, false);
    assert.equal(later.mfa.passedOnWake, null);
  });

  it('reads the MFA times and flags as null until their events happen, and sdkInfo as {} when none was sent (as upstream)', async () => {
    const u = await createUserWithPassword(tc);
    const login = await tc.http.post('/edge/client/v1/authenticate?method=password', { username: u.username, password: u.password });
    assert.equal(login.status, 200, login.text);
    const apiSessionId = login.body.data.id as string;
    const read = async () => {
      const res = await tc.mgmt.get(`/identities/${u.id}/posture-data`);
      assert.equal(res.status, 200, res.text);
      assertMatchesReference('management', 'GET', '/identities/{id}/posture-data', 200, res.body, { allowNullAt: POSTURE_DATA_NULLS });
      return res.body.data.apiSessionPostureData[apiSessionId];
    };
    assert.deepEqual(await read(), {
      endpointState: { unlockedAt: null, wokenAt: null },
      mfa: { apiSessionId, passedAt: null, passedMfa: false, passedOnUnlock: null, passedOnWake: null },
      sdkInfo: {},
    });
    const client = createClient(`${root}/edge/client/v1`, tc.ca, { token: login.body.data.token });
    assert.equal((await client.post('/posture-response', { id: 'state', typeId: 'ENDPOINT_STATE', woken: true })).status, 201);
    const woken = await read();
    assert.match(woken.endpointState.wokenAt, TIMESTAMP);
    assert.deepEqual(woken.mfa, { apiSessionId, passedAt: null, passedMfa: false, passedOnUnlock: null, passedOnWake: false });
  });

  it('answers 404 for an unknown identity, 401 without a session, and posture data needs identity read', async () => {
    assertError(await tc.mgmt.get('/identities/nope/posture-data'), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.get('/identities/nope/failed-service-requests'), 404, 'NOT_FOUND');
    const plain = await createUserWithPassword(tc);
    const asPlain = tc.mgmt.as({ token: plain.token });
    assertError(await asPlain.get(`/identities/${plain.id}/posture-data`), 401, 'UNAUTHORIZED');
    assertError(await asPlain.get(`/identities/${plain.id}/failed-service-requests`), 401, 'UNAUTHORIZED');
    assertError(await tc.http.get(`/edge/management/v1/identities/${plain.id}/failed-service-requests`), 401, 'UNAUTHORIZED');
    const reader = await createUserWithPassword(tc, { permissions: ['identity.read'] });
    const asReader = tc.mgmt.as({ token: reader.token });
    assert.equal((await asReader.get(`/identities/${plain.id}/posture-data`)).status, 200);
    assert.equal((await asReader.get(`/identities/${plain.id}/failed-service-requests`)).status, 200);
    assertError(await tc.http.get(`/edge/management/v1/identities/${plain.id}/posture-data`), 401, 'UNAUTHORIZED');
  });
});

describe('GET /identities/{id}/failed-service-requests', () => {
  it('records each refused session request with every failing check of every linking policy', async () => {
    const user = await clientUser();
    const serviceName = uniqueName('svc');
    const serviceId = await create('/services', { name: serviceName, encryptionRequired: true });
    const checks = {
      os: await create('/posture-checks', { name: uniqueName('os'), typeId: 'OS', operatingSystems: [{ type: 'Linux', versions: ['>=5.0.0'] }, { type: 'macOS', versions: [] }] }),
      mac: await create('/posture-checks', { name: uniqueName('mac'), typeId: 'MAC', macAddresses: ['aabbccddeeff'] }),
      domain: await create('/posture-checks', { name: uniqueName('dom'), typeId: 'DOMAIN', domains: ['corp.example'] }),
      process: await create('/posture-checks', { name: uniqueName('proc'), typeId: 'PROCESS', process: { osType: 'Linux', path: '/bin/p', hashes: ['aa'], signerFingerprint: 'bb' } }),
      multi: await create('/posture-checks', { name: uniqueName('multi'), typeId: 'PROCESS_MULTI', semantic: 'AllOf', processes: [{ osType: 'Linux', path: '/bin/m1' }, { osType: 'Linux', path: '/bin/m2', hashes: ['cc'] }] }),
      mfa: await create('/posture-checks', { name: uniqueName('mfa'), typeId: 'MFA', timeoutSeconds: 60, promptOnWake: true }),
    };
    const policyName = uniqueName('sp-all');
    const policyId = await create('/service-policies', {
      name: policyName, type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${user.id}`], serviceRoles: [`@${serviceId}`], postureCheckRoles: Object.values(checks).map((c) => `@${c}`),
    });
    // The MAC and domain checks pass; the others fail with reported data.
    await respond(user, [
      { id: checks.os, typeId: 'OS', type: 'Linux', version: '4.19.0' },
      { id: checks.mac, typeId: 'MAC', macAddresses: ['aa:bb:cc:dd:ee:ff'] },
      { id: checks.domain, typeId: 'DOMAIN', domain: 'corp.example' },
      { id: checks.process, typeId: 'PROCESS', path: '/bin/p', isRunning: true, hash: 'dd' },
      { id: checks.multi, typeId: 'PROCESS', path: '/bin/m2', isRunning: true, hash: 'ee' },
    ]);
    const empty = await tc.mgmt.get(`/identities/${user.id}/failed-service-requests`);
    assert.equal(empty.status, 200, empty.text);
    assert.deepEqual(empty.body, { data: [], meta: {} });

    assertError(await user.client.post('/sessions', { serviceId }), 409, 'INVALID_POSTURE');
    const res = await tc.mgmt.get(`/identities/${user.id}/failed-service-requests`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/identities/{id}/failed-service-requests', 200, res.body, {
      allowNullAt: ['/data/*/policyFailures/*/checks/*/criteria/passedMfaAt', '/data/*/policyFailures/*/checks/*/criteria/wokenAt', '/data/*/policyFailures/*/checks/*/criteria/unlockedAt'],
    });
    assert.equal(res.body.data.length, 1);
    const entry = res.body.data[0];
    assert.match(entry.when, TIMESTAMP);
    assert.deepEqual(
      { apiSessionId: entry.apiSessionId, serviceId: entry.serviceId, serviceName: entry.serviceName, sessionType: entry.sessionType },
      { apiSessionId: user.apiSessionId, serviceId, serviceName, sessionType: 'Dial' },
    );
    assert.equal(entry.policyFailures.length, 1);
    assert.equal(entry.policyFailures[0].policyId, policyId);
    assert.equal(entry.policyFailures[0].policyName, policyName);
    const byType = Object.fromEntries(entry.policyFailures[0].checks.map((c: Record<string, unknown>) => [c.postureCheckType, c]));
    assert.deepEqual(Object.keys(byType).sort(), ['MFA', 'OS', 'PROCESS', 'PROCESS_MULTI']);
    assert.deepEqual(byType.OS, {
      postureCheckId: checks.os, postureCheckName: byType.OS.postureCheckName, postureCheckType: 'OS',
      actualValue: { type: 'Linux', version: '4.19.0' },
      expectedValue: [{ type: 'Linux', versions: ['>=5.0.0'] }, { type: 'macOS', versions: [] }],
    });
    assert.deepEqual(byType.PROCESS.actualValue, { hash: 'dd', isRunning: true, signerFingerprints: [] });
    assert.deepEqual(byType.PROCESS.expectedValue, { osType: 'Linux', path: '/bin/p', hashes: ['aa'], signerFingerprint: 'bb' });
    assert.equal(byType.PROCESS_MULTI.semantic, 'AllOf');
    assert.deepEqual(byType.PROCESS_MULTI.actualValue, [{ hash: 'ee', isRunning: true, signerFingerprints: [], path: '/bin/m2' }]);
    assert.equal(byType.PROCESS_MULTI.expectedValue.length, 2);
    // A check that does not prompt on unlock counts as passed on unlock.
    assert.deepEqual(byType.MFA.actualValue, { passedMfa: false, passedOnUnlock: true, passedOnWake: false, timedOut: true });
    assert.deepEqual(byType.MFA.expectedValue, { passedMfa: true, passedOnUnlock: false, passedOnWake: true, timedOut: false });
    assert.deepEqual(byType.MFA.criteria, { passedMfaAt: null, timeoutRemainingSeconds: 0, timeoutSeconds: 60, unlockedAt: null, wokenAt: null });
  });

  it('shows MAC and DOMAIN failures with their actual and expected values', async () => {
    const user = await clientUser();
    const serviceId = await create('/services', { name: uniqueName('svc'), encryptionRequired: true });
    const mac = await create('/posture-checks', { name: uniqueName('mac'), typeId: 'MAC', macAddresses: ['aabbccddeeff'] });
    const domain = await create('/posture-checks', { name: uniqueName('dom'), typeId: 'DOMAIN', domains: ['corp.example'] });
    await create('/service-policies', {
      name: uniqueName('sp'), type: 'Bind', semantic: 'AnyOf', identityRoles: [`@${user.id}`], serviceRoles: [`@${serviceId}`], postureCheckRoles: [`@${mac}`, `@${domain}`],
    });
    await respond(user, [{ id: mac, typeId: 'MAC', macAddresses: ['11:22:33:44:55:66'] }]);
    assertError(await user.client.post('/sessions', { serviceId, type: 'Bind' }), 409, 'INVALID_POSTURE');
    const res = await tc.mgmt.get(`/identities/${user.id}/failed-service-requests`);
    assertMatchesReference('management', 'GET', '/identities/{id}/failed-service-requests', 200, res.body);
    const entry = res.body.data[0];
    assert.equal(entry.sessionType, 'Bind');
    const byType = Object.fromEntries(entry.policyFailures[0].checks.map((c: Record<string, unknown>) => [c.postureCheckType, c]));
    assert.deepEqual(byType.MAC.actualValue, ['112233445566']);
    assert.deepEqual(byType.MAC.expectedValue, ['aabbccddeeff']);
    assert.equal(byType.DOMAIN.actualValue, '');
    assert.deepEqual(byType.DOMAIN.expectedValue, ['corp.example']);
  });

  it('keeps the last 100 refusals of an identity, oldest first', async () => {
    const user = await clientUser();
    const serviceId = await create('/services', { name: uniqueName('svc'), encryptionRequired: true });
    const check = await create('/posture-checks', { name: uniqueName('dom'), typeId: 'DOMAIN', domains: ['x.example'] });
    await create('/service-policies', {
      name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${user.id}`], serviceRoles: [`@${serviceId}`], postureCheckRoles: [`@${check}`],
    });
    for (let i = 0; i < 104; i++) {
      await respond(user, [{ id: check, typeId: 'DOMAIN', domain: `d${i}.example` }]);
      assertError(await user.client.post('/sessions', { serviceId }), 409, 'INVALID_POSTURE');
    }
    const res = await tc.mgmt.get(`/identities/${user.id}/failed-service-requests`);
    assert.equal(res.body.data.length, 100);
    const actual = res.body.data.map((e: any) => e.policyFailures[0].checks[0].actualValue);
    assert.equal(actual[0], 'd4.example');
    assert.equal(actual[99], 'd103.example');
    // Another identity's list is separate.
    const other = await clientUser();
    assert.deepEqual((await tc.mgmt.get(`/identities/${other.id}/failed-service-requests`)).body.data, []);
  });
});
