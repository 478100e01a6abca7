/**
 * Posture responses (auth.md §5.2): `POST /posture-response` and `/posture-response-bulk` with a full
 * session, for OS, MAC, DOMAIN, PROCESS and ENDPOINT_STATE; 201 `{services}`; every validation failure
 * (discriminator, required and typed fields, non-object bodies, content type), bulk atomicity, JSON keys
 * matched case-insensitively; the effects (stored data, the service-update mark, sessions whose service
 * stopped passing deleted); and the MFA services a wake/unlock event reports.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName } from '../../support/controller.ts';
import { createClientUser, createRecord, type ClientUser } from '../../support/factories.ts';
import { assertDecodeError, assertError, assertFieldError } from '../../support/assertions.ts';
import { assertMatchesDefinition, assertMatchesReference } from '../../support/reference-spec.ts';

const tc = await startTestController();

type User = ClientUser;
const create = (path: string, body: Record<string, unknown>) => createRecord(tc.mgmt, path, body);

const clientUser = () => createClientUser(tc);

/** The stored rows; JSON columns read as their text (CAST: JSONB on PostgreSQL). */
async function stored(identityId: string): Promise<{ responses: Array<Record<string, unknown>>; processes: Array<Record<string, unknown>> }> {
  const store = tc.controller.store;
  return {
    responses: await store.all('SELECT type_id, posture_check_id, CAST(data AS TEXT) AS data FROM posture_responses WHERE identity_id = ? ORDER BY type_id', [
      identityId,
    ]),
    processes: await store.all(
      'SELECT posture_check_id, path, is_running, binary_hash, CAST(signer_fingerprints AS TEXT) AS signer_fingerprints FROM posture_processes WHERE identity_id = ?',
      [identityId],
    ),
  };
}

await create('/edge-routers', { name: uniqueName('er'), roleAttributes: ['pr-er'] });
await create('/edge-router-policies', { name: uniqueName('erp'), semantic: 'AnyOf', identityRoles: ['#all'], edgeRouterRoles: ['#pr-er'] });
await create('/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AnyOf', serviceRoles: ['#all'], edgeRouterRoles: ['#pr-er'] });

describe('POST /posture-response', () => {
  it('accepts each response type with 201 {services: []} and stores it', async () => {
    const user = await clientUser();
    const bodies = [
      { id: 'os-check', typeId: 'OS', type: 'Linux', version: '5.15.0', build: '42' },
      { id: 'mac-check', typeId: 'MAC', macAddresses: ['AA:BB:CC:DD:EE:FF', '00-11-22-33-44-55'] },
      { id: 'domain-check', typeId: 'DOMAIN', domain: 'Corp.Example' },
      { id: 'proc-check', typeId: 'PROCESS', path: '/bin/agent', isRunning: true, hash: 'AB:CD', signerFingerprints: ['EF 01'] },
      { id: 'anything', typeId: 'ENDPOINT_STATE', woken: true, unlocked: false },
    ];
    for (const body of bodies) {
      const res = await user.client.post('/posture-response', body);
      assert.equal(res.status, 201, res.text);
      assertMatchesReference('client', 'POST', '/posture-response', 201, res.body);
      assert.deepEqual(res.body, { data: { services: [] }, meta: {} });
    }
    const s = await stored(user.id);
    assert.deepEqual(
      s.responses.map((r) => [r.type_id, r.posture_check_id, JSON.parse(r.data as string)]),
      [
        ['DOMAIN', 'domain-check', { domain: 'Corp.Example' }],
        ['MAC', 'mac-check', { addresses: ['aabbccddeeff', '001122334455'] }],
        ['OS', 'os-check', { type: 'Linux', version: '5.15.0', build: '42' }],
      ],
    );
    assert.deepEqual(s.processes, [
      { posture_check_id: 'proc-check', path: '/bin/agent', is_running: 1, binary_hash: 'abcd', signer_fingerprints: '["ef01"]' },
    ]);
    const state = (await tc.controller.store.get<{ woken_at: string | null; unlocked_at: string | null }>(
      'SELECT woken_at, unlocked_at FROM posture_endpoint_states WHERE api_session_id = ?',
      [user.apiSessionId],
    ))!;
    assert.ok(state.woken_at);
    assert.equal(state.unlocked_at, null);
  });

  it('matches JSON keys case-insensitively and replaces the previous response of a type', async () => {
    const user = await clientUser();
    let res = await user.client.post('/posture-response', { ID: 'm1', TypeId: 'MAC', macaddresses: ['01:02:03:04:05:06'] });
    assert.equal(res.status, 201, res.text);
    res = await user.client.post('/posture-response', { id: 'm2', typeId: 'MAC', macAddresses: ['0a0b0c0d0e0f'] });
    assert.equal(res.status, 201, res.text);
    const s = await stored(user.id);
    assert.deepEqual(s.responses.map((r) => [r.posture_check_id, JSON.parse(r.data as string)]), [['m2', { addresses: ['0a0b0c0d0e0f'] }]]);
  });

  it('refuses invalid responses with 400 COULD_NOT_VALIDATE naming the field, storing nothing', async () => {
    const user = await clientUser();
    // As upstream: the type is decoded first; one it does not know leaves the body undecodable, before `id`.
    for (const typeId of ['MFA', 'PROCESS_MULTI', 'FOO']) {
      for (const body of [{ id: 'x', typeId, path: '/a' }, { typeId }]) {
        const res = await user.client.post('/posture-response', body);
        assertError(res, 400, 'COULD_NOT_PARSE_BODY');
        assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: `invalid typeId value: "${typeId}"` });
      }
    }
    const numeric = await user.client.post('/posture-response', { id: 'x', typeId: 7 });
    assertError(numeric, 400, 'COULD_NOT_PARSE_BODY');
    assert.deepEqual(numeric.body.error.cause, { code: 'UNHANDLED', message: 'json: cannot unmarshal number into Go struct field .typeId of type string' });
    for (const typeId of [undefined, '']) {
      const missing = await user.client.post('/posture-response', { id: 'x', typeId });
      assert.deepEqual(missing.body.error.cause, { field: 'typeId', reason: 'typeId in body is required', value: '' }, missing.text);
    }
    const cases: Array<[unknown, string]> = [
      [{ typeId: 'DOMAIN', domain: 'a' }, 'id'],
      [{ id: 3, typeId: 'DOMAIN', domain: 'a' }, 'id'],
      [{ id: 'x', typeId: 'OS', version: '1.0.0' }, 'type'],
      [{ id: 'x', typeId: 'OS', type: 'Linux' }, 'version'],
      [{ id: 'x', typeId: 'OS', type: 'Linux', version: 10 }, 'version'],
      [{ id: 'x', typeId: 'OS', type: 'Linux', version: '1.0.0', build: false }, 'build'],
      [{ id: 'x', typeId: 'MAC' }, 'macAddresses'],
      [{ id: 'x', typeId: 'MAC', macAddresses: 'aabbccddeeff' }, 'macAddresses'],
      [{ id: 'x', typeId: 'MAC', macAddresses: ['aa', 1] }, 'macAddresses.1'],
      [{ id: 'x', typeId: 'DOMAIN' }, 'domain'],
      [{ id: 'x', typeId: 'DOMAIN', domain: ['a'] }, 'domain'],
      [{ id: 'x', typeId: 'PROCESS', path: '/a', isRunning: 'yes' }, 'isRunning'],
      [{ id: 'x', typeId: 'PROCESS', path: 7 }, 'path'],
      [{ id: 'x', typeId: 'PROCESS', hash: {} }, 'hash'],
      [{ id: 'x', typeId: 'PROCESS', signerFingerprints: 'ab' }, 'signerFingerprints'],
      [{ id: 'x', typeId: 'ENDPOINT_STATE', woken: 1 }, 'woken'],
      [{ id: 'x', typeId: 'ENDPOINT_STATE', unlocked: 'true' }, 'unlocked'],
    ];
    for (const [body, field] of cases) {
      const res = await user.client.post('/posture-response', body);
      assertError(res, 400, 'COULD_NOT_VALIDATE');
      assertFieldError(res, field);
    }
    // The response types differ per typeId, so the body is read as any object and checked per type.
    assertFieldError(await user.client.post('/posture-response', [{ id: 'x', typeId: 'DOMAIN', domain: 'a' }]), 'body');
    assertFieldError(await user.client.post('/posture-response', 'text'), 'body');
    assertError(await user.client.post('/posture-response', null), 400, 'COULD_NOT_VALIDATE');
    const raw = await user.client.request('POST', '/posture-response', { rawBody: '{"id":', contentType: 'application/json' });
    assert.equal(raw.status, 400, raw.text);
    const xml = await user.client.request('POST', '/posture-response', { rawBody: '<x/>', contentType: 'application/xml' });
    assertError(xml, 415, 'COULD_NOT_VALIDATE');
    assert.deepEqual(await stored(user.id), { responses: [], processes: [] });
  });

  it('needs a full session', async () => {
    const body = { id: 'x', typeId: 'DOMAIN', domain: 'a' };
    assertError(await tc.http.post('/edge/client/v1/posture-response', body), 401, 'UNAUTHORIZED');
    assertError(await tc.http.post('/edge/client/v1/posture-response', body, { token: 'not-a-token' }), 401, 'UNAUTHORIZED');
    assertError(await tc.http.post('/edge/client/v1/posture-response-bulk', [body]), 401, 'UNAUTHORIZED');
  });
});

describe('POST /posture-response-bulk', () => {
  it('stores every item of the array (201 {services}); an empty array is fine', async () => {
    const user = await clientUser();
    const res = await user.client.post('/posture-response-bulk', [
      { id: 'os', typeId: 'OS', type: 'Windows', version: '10.0.19041' },
      { id: 'multi', typeId: 'PROCESS', path: '/a', isRunning: true },
      { id: 'multi', typeId: 'PROCESS', path: '/b', isRunning: false },
    ]);
    assert.equal(res.status, 201, res.text);
    // The reference declares the bulk body (postureResponseEnvelope) under 200; upstream answers 201.
    assertMatchesDefinition('client', 'postureResponseEnvelope', res.body);
    assert.deepEqual(res.body.data, { services: [] });
    const s = await stored(user.id);
    assert.equal(s.responses.length, 1);
    assert.deepEqual(s.processes.map((p) => [p.posture_check_id, p.path, p.is_running]).sort(), [['multi', '/a', 1], ['multi', '/b', 0]]);
    const empty = await user.client.post('/posture-response-bulk', []);
    assert.equal(empty.status, 201, empty.text);
    assert.deepEqual(empty.body.data, { services: [] });
  });

  it('refuses the whole array when one item is invalid (field named by index) or the body is not an array', async () => {
    const user = await clientUser();
    const res = await user.client.post('/posture-response-bulk', [
      { id: 'ok', typeId: 'DOMAIN', domain: 'a' },
      { id: 'bad', typeId: 'OS', type: 'Linux' },
    ]);
    assertError(res, 400, 'COULD_NOT_VALIDATE');
    assertFieldError(res, '1.version');
    const unknown = await user.client.post('/posture-response-bulk', [{ id: 'x', typeId: 'DOMAIN', domain: 'a' }, { id: 'x', typeId: 'MFA' }]);
    assertError(unknown, 400, 'COULD_NOT_PARSE_BODY');
    assert.deepEqual(unknown.body.error.cause, { code: 'UNHANDLED', message: 'invalid typeId value: "MFA"' });
    assertFieldError(await user.client.post('/posture-response-bulk', ['x']), '0');
    assertDecodeError(await user.client.post('/posture-response-bulk', { id: 'x', typeId: 'DOMAIN', domain: 'a' }), '');
    assert.deepEqual(await stored(user.id), { responses: [], processes: [] });
  });
});

describe('effects of a submission', () => {
  it('bumps the service-update mark and deletes sessions whose service no longer passes', async () => {
    const user = await clientUser();
    const serviceId = await create('/services', { name: uniqueName('svc'), encryptionRequired: true });
    const openServiceId = await create('/services', { name: uniqueName('svc'), encryptionRequired: true });
    const checkId = await create('/posture-checks', { name: uniqueName('pc'), typeId: 'OS', operatingSystems: [{ type: 'Linux', versions: ['>=5.0.0'] }] });
    await create('/service-policies', {
      name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${user.id}`], serviceRoles: [`@${serviceId}`], postureCheckRoles: [`@${checkId}`],
    });
    await create('/service-policies', { name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${user.id}`], serviceRoles: [`@${openServiceId}`] });

    assertError(await user.client.post('/sessions', { serviceId }), 409, 'INVALID_POSTURE');
    assert.equal((await user.client.post('/posture-response', { id: checkId, typeId: 'OS', type: 'Linux', version: '5.4.0' })).status, 201);
    const guarded = await user.client.post('/sessions', { serviceId });
    assert.equal(guarded.status, 201, guarded.text);
    const open = await user.client.post('/sessions', { serviceId: openServiceId });
    assert.equal(open.status, 201, open.text);

    await tc.controller.store.write((tx) => tx.run('UPDATE identity_service_marks SET changed_at = ? WHERE identity_id = ?', ['2001-01-01T00:00:00.000Z', user.id]));
    assert.equal((await user.client.get('/current-api-session/service-updates')).body.data.lastChangeAt, '2001-01-01T00:00:00.000Z');
    const res = await user.client.post('/posture-response', { id: checkId, typeId: 'OS', type: 'Linux', version: '4.19.0' });
    assert.equal(res.status, 201, res.text);
    const mark = (await user.client.get('/current-api-session/service-updates')).body.data.lastChangeAt as string;
    assert.notEqual(mark, '2001-01-01T00:00:00.000Z');
    assert.ok(Date.now() - Date.parse(mark) < 60_000);

    assertError(await user.client.get(`/sessions/${guarded.body.data.id}`), 404, 'NOT_FOUND');
    assert.equal((await user.client.get(`/sessions/${open.body.data.id}`)).status, 200);
  });
});

describe('wake and unlock events', () => {
  it('list the services of MFA checks prompting on the event, once the API session passed MFA', async () => {
    const user = await clientUser();
    const wakeService = await create('/services', { name: uniqueName('svc-wake'), encryptionRequired: true });
    const unlockService = await create('/services', { name: uniqueName('svc-unlock'), encryptionRequired: true });
    const shortService = await create('/services', { name: uniqueName('svc-short'), encryptionRequired: true });
    const wake = await create('/posture-checks', { name: uniqueName('pc'), typeId: 'MFA', timeoutSeconds: 3600, promptOnWake: true });
    const unlock = await create('/posture-checks', { name: uniqueName('pc'), typeId: 'MFA', promptOnUnlock: true });
    // Less than the 5 minute grace period left: not altered.
    const short = await create('/posture-checks', { name: uniqueName('pc'), typeId: 'MFA', timeoutSeconds: 400, promptOnWake: true });
    const policy = (serviceId: string, checkId: string) =>
      create('/service-policies', {
        name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${user.id}`], serviceRoles: [`@${serviceId}`], postureCheckRoles: [`@${checkId}`],
      });
    await policy(wakeService, wake);
    await policy(unlockService, unlock);
    await policy(shortService, short);

    // No MFA pass yet: nothing is reported.
    let res = await user.client.post('/posture-response', { id: 'state', typeId: 'ENDPOINT_STATE', woken: true, unlocked: true });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.data.services, []);

    // The MFA pass `POST /authenticate/mfa` records, written directly.
    await tc.controller.store.write((tx) => tx.run('UPDATE api_sessions SET mfa_passed_at = ? WHERE id = ?', [new Date(Date.now() - 200_000).toISOString(), user.apiSessionId]));
    res = await user.client.post('/posture-response', { id: 'state', typeId: 'ENDPOINT_STATE', woken: true });
    assert.equal(res.status, 201, res.text);
    assertMatchesReference('client', 'POST', '/posture-response', 201, res.body);
    const names = new Map<string, string>();
    for (const id of [wakeService, unlockService]) names.set(id, (await tc.mgmt.get(`/services/${id}`)).body.data.name);
    assert.deepEqual(res.body.data.services, [
      { id: wakeService, name: names.get(wakeService), postureQueryType: 'MFA', timeout: 3600, timeoutRemaining: 300 },
    ]);

    res = await user.client.post('/posture-response-bulk', [
      { id: 'state', typeId: 'ENDPOINT_STATE', unlocked: true },
      { id: 'x', typeId: 'DOMAIN', domain: 'd' },
    ]);
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.data.services, [
      { id: unlockService, name: names.get(unlockService), postureQueryType: 'MFA', timeout: -1, timeoutRemaining: 300 },
    ]);
    res = await user.client.post('/posture-response', { id: 'state', typeId: 'ENDPOINT_STATE', woken: false, unlocked: false });
    assert.deepEqual(res.body.data.services, []);
  });
});
