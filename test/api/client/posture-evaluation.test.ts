/**
 * Posture evaluation (auth.md §5.1, §5.3, §5.4): for each check type a session request refused with 409
 * INVALID_POSTURE becomes allowed once the right posture response is submitted; OS version ranges, MAC
 * normalisation, case-insensitive domains, PROCESS by check id, PROCESS_MULTI AllOf/AnyOf by path, MFA with
 * timeouts and wake/unlock prompts. MFA passes are written to `api_sessions.mfa_passed_at` directly (what
 * `POST /authenticate/mfa` records) and timeouts are produced by back-dating stored times, never by sleeping.
 * Also the services' `postureQueries` and the periodic enforcement that removes sessions that stopped passing.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName } from '../../support/controller.ts';
import { createClientUser, createRecord, type ClientUser } from '../../support/factories.ts';
import { assertError } from '../../support/assertions.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';

const tc = await startTestController();

type User = ClientUser;
const create = (path: string, body: Record<string, unknown>) => createRecord(tc.mgmt, path, body);

const clientUser = () => createClientUser(tc);

// Every identity may use the one edge router for every service: only posture decides.
await create('/edge-routers', { name: uniqueName('er'), roleAttributes: ['pe-er'] });
await create('/edge-router-policies', { name: uniqueName('erp'), semantic: 'AnyOf', identityRoles: ['#all'], edgeRouterRoles: ['#pe-er'] });
await create('/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AnyOf', serviceRoles: ['#all'], edgeRouterRoles: ['#pe-er'] });

interface Scenario {
  user: User;
  serviceId: string;
  checkId: string;
  policyId: string;
}

/** A user, a service and a Dial policy granting it under one posture check. */
async function scenario(check: Record<string, unknown>, type: 'Dial' | 'Bind' = 'Dial'): Promise<Scenario> {
  const user = await clientUser();
  const serviceId = await create('/services', { name: uniqueName('svc'), encryptionRequired: true });
  const checkId = await create('/posture-checks', { name: uniqueName('pc'), ...check });
  const policyId = await create('/service-policies', {
    name: uniqueName('sp'), type, semantic: 'AnyOf', identityRoles: [`@${user.id}`], serviceRoles: [`@${serviceId}`], postureCheckRoles: [`@${checkId}`],
  });
  return { user, serviceId, checkId, policyId };
}

async function respond(user: User, body: unknown): Promise<void> {
  const res = await user.client.post('/posture-response', body);
  assert.equal(res.status, 201, res.text);
}

async function refused(s: Scenario, type: 'Dial' | 'Bind' = 'Dial'): Promise<void> {
  const res = await s.user.client.post('/sessions', { serviceId: s.serviceId, type });
  assertError(res, 409, 'INVALID_POSTURE');
}

async function allowed(s: Scenario, type: 'Dial' | 'Bind' = 'Dial'): Promise<string> {
  const res = await s.user.client.post('/sessions', { serviceId: s.serviceId, type });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

async function setMfaPassedAt(apiSessionId: string, at: Date | null): Promise<void> {
  await tc.controller.store.write((tx) => tx.run('UPDATE api_sessions SET mfa_passed_at = ? WHERE id = ?', [at ? at.toISOString() : null, apiSessionId]));
}

async function setEndpointState(apiSessionId: string, column: 'woken_at' | 'unlocked_at', at: Date): Promise<void> {
  await tc.controller.store.write((tx) => tx.run(`UPDATE posture_endpoint_states SET ${column} = ? WHERE api_session_id = ?`, [at.toISOString(), apiSessionId]));
}

const ago = (seconds: number) => new Date(Date.now() - seconds * 1000);

async function serviceDetail(user: User, serviceId: string): Promise<Record<string, any>> {
  const res = await user.client.get(`/services/${serviceId}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('client', 'GET', '/services/{id}', 200, res.body, {
    allowNullAt: ['/data/config', '/data/configs', '/data/roleAttributes', '/data/postureQueries/*/postureQueries/*/processes'],
  });
  return res.body.data;
}

describe('OS checks', () => {
  it('needs the OS type (case-insensitive) and a strict semver version inside one of the ranges', async () => {
    const s = await scenario({
      typeId: 'OS',
      operatingSystems: [{ type: 'Windows', versions: ['>=10.0.19041 <11.0.0', '12.x'] }, { type: 'Linux', versions: [] }],
    });
    await refused(s);
    const res = await s.user.client.post('/sessions', { serviceId: s.serviceId });
    assert.deepEqual(res.body.error.cause, {
      message: `Failed to pass posture checks for service policies: [${s.policyId}]`,
      data: { [s.policyId]: [{ id: s.checkId, typeId: 'OS', isPassing: false }] },
    });
    await respond(s.user, { id: s.checkId, typeId: 'OS', type: 'Windows', version: '10.0.18363' });
    await refused(s);
    await respond(s.user, { id: s.checkId, typeId: 'OS', type: 'Windows', version: '10.0' });
    await refused(s); // not strict semver
    await respond(s.user, { id: s.checkId, typeId: 'OS', type: 'macOS', version: '10.0.19041' });
    await refused(s);
    await respond(s.user, { id: s.checkId, typeId: 'OS', type: 'windows', version: '10.0.19041', build: '1' });
    await allowed(s);
  });

  it('matches x wildcards, || alternatives, and passes any version of a type without ranges', async () => {
    const s = await scenario({
      typeId: 'OS',
      operatingSystems: [{ type: 'Windows', versions: ['12.x || 1.2.x'] }, { type: 'Linux', versions: [] }],
    });
    for (const [type, version, ok] of [
      ['Windows', '12.4.1', true],
      ['Windows', '13.0.0', false],
      ['Windows', '1.2.9', true],
      ['Windows', '1.3.0', false],
      ['Linux', '5.15.0-rc1', true],
      ['Linux', 'not-a-version', true],
      ['Android', '12.0.0', false],
    ] as const) {
      await respond(s.user, { id: s.checkId, typeId: 'OS', type, version });
      if (ok) await allowed(s);
      else await refused(s);
    }
  });
});

describe('MAC checks', () => {
  it('normalises reported addresses (lower-case hex digits only) and needs one to match', async () => {
    const s = await scenario({ typeId: 'MAC', macAddresses: ['aabbccddeeff', '001122334455'] });
    await refused(s);
    await respond(s.user, { id: s.checkId, typeId: 'MAC', macAddresses: ['66:77:88:99:AA:BB'] });
    await refused(s);
    await respond(s.user, { id: s.checkId, typeId: 'MAC', macAddresses: ['66:77:88:99:AA:BB', 'AA-BB-CC-DD-EE-FF'] });
    await allowed(s);
  });
});

describe('DOMAIN checks', () => {
  it('compares the reported domain case-insensitively', async () => {
    const s = await scenario({ typeId: 'DOMAIN', domains: ['Corp.Example'] });
    await refused(s);
    await respond(s.user, { id: s.checkId, typeId: 'DOMAIN', domain: 'other.example' });
    await refused(s);
    await respond(s.user, { id: s.checkId, typeId: 'DOMAIN', domain: 'CORP.example' });
    await allowed(s);
  });
});

describe('PROCESS checks', () => {
  it('reads the response sent with the check id: running, a listed hash and the signer', async () => {
    const s = await scenario({
      typeId: 'PROCESS',
      process: { osType: 'Windows', path: 'C:\\agent.exe', hashes: ['abc123'], signerFingerprint: 'ff00ee' },
    });
    const base = { id: s.checkId, typeId: 'PROCESS', path: 'C:\\agent.exe', hash: 'ABC123', signerFingerprints: ['FF:00:EE'] };
    await respond(s.user, { ...base, isRunning: false });
    await refused(s);
    await respond(s.user, { ...base, isRunning: true, hash: 'abc124' });
    await refused(s);
    await respond(s.user, { ...base, isRunning: true, signerFingerprints: ['00'] });
    await refused(s);
    // The same process reported under another check id does not count.
    await respond(s.user, { ...base, id: 'other-check', isRunning: true });
    await refused(s);
    await respond(s.user, { ...base, isRunning: true });
    await allowed(s);
  });
});

describe('PROCESS_MULTI checks', () => {
  const processes = [
    { osType: 'Linux', path: '/usr/bin/a', hashes: ['aa'] },
    { osType: 'Linux', path: '/usr/bin/b', signerFingerprints: ['bb'] },
  ];

  it('AllOf needs every path running and matching (newest response per path, any check id)', async () => {
    const s = await scenario({ typeId: 'PROCESS_MULTI', semantic: 'AllOf', processes });
    await respond(s.user, { id: s.checkId, typeId: 'PROCESS', path: '/usr/bin/a', isRunning: true, hash: 'AA' });
    await refused(s);
    await respond(s.user, { id: 'any-id', typeId: 'PROCESS', path: '/usr/bin/b', isRunning: true, signerFingerprints: ['cc'] });
    await refused(s);
    const bulk = await s.user.client.post('/posture-response-bulk', [
      { id: s.checkId, typeId: 'PROCESS', path: '/usr/bin/b', isRunning: true, signerFingerprints: ['dd', 'BB'] },
    ]);
    assert.equal(bulk.status, 201, bulk.text);
    await allowed(s);
  });

  it('AnyOf needs one of the paths', async () => {
    const s = await scenario({ typeId: 'PROCESS_MULTI', semantic: 'AnyOf', processes });
    await refused(s);
    await respond(s.user, { id: s.checkId, typeId: 'PROCESS', path: '/usr/bin/a', isRunning: false, hash: 'aa' });
    await refused(s);
    await respond(s.user, { id: s.checkId, typeId: 'PROCESS', path: '/usr/bin/b', isRunning: true, signerFingerprints: ['bb'] });
    await allowed(s);
  });
});

describe('MFA checks', () => {
  it('need an MFA pass of this API session, and fail once the pass is older than the timeout', async () => {
    const s = await scenario({ typeId: 'MFA', timeoutSeconds: 600 });
    await refused(s);
    let q = (await serviceDetail(s.user, s.serviceId)).postureQueries[0];
    assert.equal(q.isPassing, false);
    assert.equal(q.postureQueries[0].timeout, 600);
    assert.equal(q.postureQueries[0].timeoutRemaining, 0);

    await setMfaPassedAt(s.user.apiSessionId, ago(60));
    await allowed(s);
    q = (await serviceDetail(s.user, s.serviceId)).postureQueries[0];
    assert.equal(q.isPassing, true);
    const query = q.postureQueries[0];
    assert.equal(query.timeout, 600);
    assert.ok(query.timeoutRemaining > 530 && query.timeoutRemaining <= 540, String(query.timeoutRemaining));
    const at = Date.parse(query.timeoutAt);
    assert.ok(Math.abs(at - (Date.now() + query.timeoutRemaining * 1000)) < 5000, query.timeoutAt);

    await setMfaPassedAt(s.user.apiSessionId, ago(601));
    await refused(s);
    q = (await serviceDetail(s.user, s.serviceId)).postureQueries[0];
    assert.equal(q.isPassing, false);
    assert.equal(q.postureQueries[0].timeoutRemaining, 0);
  });

  it('without a timeout pass for as long as the API session passed MFA', async () => {
    const s = await scenario({ typeId: 'MFA', timeoutSeconds: 0 });
    await refused(s);
    await setMfaPassedAt(s.user.apiSessionId, ago(86400 * 30));
    await allowed(s);
    const query = (await serviceDetail(s.user, s.serviceId)).postureQueries[0].postureQueries[0];
    assert.equal(query.timeout, -1);
    assert.equal(query.timeoutRemaining, -1);
    assert.ok(!('timeoutAt' in query));
  });

  it('with promptOnWake fail once a wake after the pass is more than 5 minutes old', async () => {
    const s = await scenario({ typeId: 'MFA', timeoutSeconds: 3600, promptOnWake: true });
    await setMfaPassedAt(s.user.apiSessionId, ago(1200));
    await allowed(s);
    // An unlock does not matter to a check that prompts on wake only.
    await respond(s.user, { id: 'state', typeId: 'ENDPOINT_STATE', unlocked: true });
    await setEndpointState(s.user.apiSessionId, 'unlocked_at', ago(900));
    await allowed(s);

    await respond(s.user, { id: 'state', typeId: 'ENDPOINT_STATE', woken: true });
    await allowed(s); // inside the grace period
    let q = (await serviceDetail(s.user, s.serviceId)).postureQueries[0].postureQueries[0];
    assert.ok(q.timeoutRemaining <= 300 && q.timeoutRemaining > 280, String(q.timeoutRemaining));
    assert.equal(q.promptOnWake, true);
    assert.equal(q.promptOnUnlock, undefined, 'left out when not set, as upstream');
    const wokenAt = (await tc.controller.store.get<{ woken_at: string }>('SELECT woken_at FROM posture_endpoint_states WHERE api_session_id = ?', [s.user.apiSessionId]))!;
    assert.equal(q.updatedAt, wokenAt.woken_at);

    await setEndpointState(s.user.apiSessionId, 'woken_at', ago(301));
    await refused(s);
    q = (await serviceDetail(s.user, s.serviceId)).postureQueries[0].postureQueries[0];
    assert.equal(q.timeoutRemaining, 0);

    // Passing MFA again (after the wake) clears the prompt.
    await setMfaPassedAt(s.user.apiSessionId, ago(10));
    await allowed(s);
  });

  it('with promptOnUnlock fail once an unlock after the pass is more than 5 minutes old', async () => {
    const s = await scenario({ typeId: 'MFA', promptOnUnlock: true });
    await setMfaPassedAt(s.user.apiSessionId, ago(1200));
    await respond(s.user, { id: 'state', typeId: 'ENDPOINT_STATE', unlocked: true });
    await allowed(s);
    await setEndpointState(s.user.apiSessionId, 'unlocked_at', ago(400));
    await refused(s);
  });
});

describe('policy semantics of session requests', () => {
  it('passes when any policy of the requested type passes, and Bind is judged by Bind policies only', async () => {
    const s = await scenario({ typeId: 'DOMAIN', domains: ['a.example'] });
    const other = await create('/posture-checks', { name: uniqueName('pc'), typeId: 'DOMAIN', domains: ['b.example'] });
    const second = await create('/service-policies', {
      name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${s.user.id}`], serviceRoles: [`@${s.serviceId}`], postureCheckRoles: [`@${other}`],
    });
    const bind = await create('/service-policies', {
      name: uniqueName('sp'), type: 'Bind', semantic: 'AnyOf', identityRoles: [`@${s.user.id}`], serviceRoles: [`@${s.serviceId}`], postureCheckRoles: [`@${s.checkId}`],
    });
    const res = await s.user.client.post('/sessions', { serviceId: s.serviceId });
    assertError(res, 409, 'INVALID_POSTURE');
    const ids = [s.policyId, second].sort();
    assert.equal(res.body.error.cause.message, `Failed to pass posture checks for service policies: [${ids.join(' ')}]`);
    assert.deepEqual(Object.keys(res.body.error.cause.data).sort(), ids);
    await refused(s, 'Bind');

    await respond(s.user, { id: other, typeId: 'DOMAIN', domain: 'b.example' });
    const sessionId = await allowed(s);
    await refused(s, 'Bind');
    const detail = await s.user.client.get(`/sessions/${sessionId}`);
    assert.deepEqual(detail.body.data.servicePolicies.map((p: { id: string }) => p.id), [second]);

    // postureQueries list every linking policy, whatever its type.
    const queries = (await serviceDetail(s.user, s.serviceId)).postureQueries as Array<Record<string, any>>;
    const byPolicy = Object.fromEntries(queries.map((q) => [q.policyId, q]));
    assert.deepEqual(Object.keys(byPolicy).sort(), [s.policyId, second, bind].sort());
    assert.equal(byPolicy[second].isPassing, true);
    assert.equal(byPolicy[s.policyId].isPassing, false);
    assert.equal(byPolicy[bind].policyType, 'Bind');
    assert.equal(byPolicy[bind].postureQueries[0].queryType, 'DOMAIN');
    assert.equal(byPolicy[bind].postureQueries[0].timeout, -1);
    assert.equal(byPolicy[bind].postureQueries[0].timeoutRemaining, -1);

    await respond(s.user, { id: s.checkId, typeId: 'DOMAIN', domain: 'A.example' });
    await allowed(s, 'Bind');
  });

  it('renders process and processes references in postureQueries', async () => {
    const p = await scenario({ typeId: 'PROCESS', process: { osType: 'Linux', path: '/bin/p' } });
    const q = (await serviceDetail(p.user, p.serviceId)).postureQueries[0].postureQueries[0];
    assert.deepEqual(q.process, { osType: 'Linux', path: '/bin/p' });
    assert.equal(q.processes, null, 'null unless PROCESS_MULTI, as upstream');
    assert.equal(q._links.self.href, `./posture-checks/${p.checkId}`);
    const m = await scenario({ typeId: 'PROCESS_MULTI', semantic: 'AnyOf', processes: [{ osType: 'Linux', path: '/bin/m' }] });
    const mq = (await serviceDetail(m.user, m.serviceId)).postureQueries[0].postureQueries[0];
    assert.deepEqual(mq.processes, [{ osType: 'Linux', path: '/bin/m' }]);
  });
});

describe('enforcement of existing sessions', () => {
  it('removes a session whose MFA pass timed out on the next periodic pass (every 5 s)', async () => {
    const s = await scenario({ typeId: 'MFA', timeoutSeconds: 600 });
    await setMfaPassedAt(s.user.apiSessionId, ago(10));
    const sessionId = await allowed(s);
    const before = (await s.user.client.get('/current-api-session/service-updates')).body.data.lastChangeAt as string;
    await setMfaPassedAt(s.user.apiSessionId, ago(700));
    const deadline = Date.now() + 20_000;
    let status = 200;
    while (status === 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      status = (await s.user.client.get(`/sessions/${sessionId}`)).status;
    }
    assert.equal(status, 404);
    const after = (await s.user.client.get('/current-api-session/service-updates')).body.data.lastChangeAt as string;
    assert.ok(Date.parse(after) >= Date.parse(before), `${after} >= ${before}`);
  });
});
