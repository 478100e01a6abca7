/**
 * Client sessions: `POST /sessions` (the rules in upstream's order: visible service, requested
 * permission, posture, a shared edge router), the session JWT and its claims, de-duplication per
 * (API session, service, type) with `jti` = id, the edge routers of a session, and list, detail and
 * delete scoped to the caller. Sessions end with their API session (logout) and their service.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { apiSessionRef, serviceRef } from '../../support/refs.ts';
import { X509Certificate } from 'node:crypto';
import { jwtVerify } from 'jose';
import { startTestController, uniqueName } from '../../support/controller.ts';
import { createClient, type HttpClient } from '../../support/client.ts';
import { createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertDecodeError, TIMESTAMP, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';

const tc = await startTestController();
const root = `https://127.0.0.1:${tc.port}`;

interface User {
  id: string;
  username: string;
  password: string;
  client: HttpClient;
  apiSessionId: string;
}

async function clientUser(overrides: Record<string, unknown> = {}): Promise<User> {
  const u = await createUserWithPassword(tc, overrides);
  return { ...u, ...(await clientLogin(u.username, u.password)) };
}

async function clientLogin(username: string, password: string): Promise<{ client: HttpClient; apiSessionId: string }> {
  const res = await tc.http.post('/edge/client/v1/authenticate?method=password', { username, password });
  assert.equal(res.status, 200, res.text);
  return { client: createClient(`${root}/edge/client/v1`, tc.ca, { token: res.body.data.token }), apiSessionId: res.body.data.id };
}

async function create(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await tc.mgmt.post(path, body);
  assert.equal(res.status, 201, `${path}: ${res.text}`);
  return res.body.data.id as string;
}

async function service(roleAttributes: string[] = []): Promise<{ id: string; name: string }> {
  const name = uniqueName('svc');
  return { id: await create('/services', { name, encryptionRequired: true, roleAttributes }), name };
}

function decodeJwt(token: string): { header: Record<string, unknown>; claims: Record<string, unknown> } {
  const [h, p] = token.split('.');
  return {
    header: JSON.parse(Buffer.from(h!, 'base64url').toString('utf8')),
    claims: JSON.parse(Buffer.from(p!, 'base64url').toString('utf8')),
  };
}

// ---- the network ------------------------------------------------------------------------------------
const alice = await clientUser({ roleAttributes: ['sess-alice'] });
const bob = await clientUser();
const erName = uniqueName('er');
const er = await create('/edge-routers', { name: erName, roleAttributes: ['sess-er'], cost: 7, noTraversal: true });
await create('/edge-routers', { name: uniqueName('er-unused'), roleAttributes: ['sess-er-unused'] });
await create('/edge-router-policies', { name: uniqueName('erp'), semantic: 'AnyOf', identityRoles: [`@${alice.id}`, `@${bob.id}`], edgeRouterRoles: ['#sess-er'] });

const dialable = await service(['sess-dial']);
const both = await service(['sess-both']);
const hidden = await service(['sess-hidden']);
const noRouter = await service(['sess-norouter']);
await create('/service-edge-router-policies', {
  name: uniqueName('serp'), semantic: 'AnyOf', serviceRoles: ['#sess-dial', '#sess-both', '#sess-hidden'], edgeRouterRoles: ['#sess-er'],
});
const dialPolicy = await create('/service-policies', {
  name: uniqueName('sp-dial'), type: 'Dial', semantic: 'AnyOf', identityRoles: ['#sess-alice'], serviceRoles: ['#sess-dial', '#sess-both', '#sess-norouter'],
});
await create('/service-policies', { name: uniqueName('sp-bind'), type: 'Bind', semantic: 'AnyOf', identityRoles: ['#sess-alice'], serviceRoles: ['#sess-both'] });

describe('POST /sessions', () => {
  let firstId = '';

  it('creates a Dial session with a signed JWT and the shared edge routers', async () => {
    const res = await alice.client.post('/sessions', { serviceId: dialable.id, tags: { purpose: 'test' } });
    assert.equal(res.status, 201, res.text);
    assertMatchesReference('client', 'POST', '/sessions', 201, res.body);
    const s = res.body.data;
    firstId = s.id;
    assert.match(s.id, /^c[0-9a-z]{24}$/);
    assert.equal(s.type, 'Dial');
    assert.equal(s.serviceId, dialable.id);
    assert.equal(s.identityId, alice.id);
    assert.equal(s.apiSessionId, alice.apiSessionId);
    assert.deepEqual(s.service, serviceRef(dialable.id, dialable.name));
    assert.deepEqual(s.apiSession, apiSessionRef(alice.apiSessionId));
    assert.deepEqual(s.tags, { purpose: 'test' });
    assert.match(s.createdAt, TIMESTAMP);
    assert.deepEqual(s.edgeRouters, [
      { cost: 7, disabled: false, hostname: '', isOnline: false, name: erName, noTraversal: true, supportedProtocols: {}, syncStatus: 'SYNC_UNKNOWN', urls: {} },
    ]);

    const { header, claims } = decodeJwt(s.token);
    assert.equal(header.kid, tc.controller.pki.serverCertFingerprint);
    assert.equal(header.typ, 'JWT');
    const key = new X509Certificate(tc.controller.pki.serverCertPem).publicKey;
    const verified = await jwtVerify(s.token, key);
    assert.equal(verified.payload.jti, s.id);
    assert.equal(claims.sub, dialable.id);
    assert.deepEqual(claims.aud, ['openziti']);
    assert.equal(claims.z_asid, alice.apiSessionId);
    assert.equal(claims.z_iid, alice.id);
    assert.equal(claims.z_t, 's');
    assert.equal(claims.z_st, 'Dial');
    assert.equal(claims.z_leg, true);
    assert.match(String(claims.iss), /^https:\/\//);
    const year = 365 * 24 * 3600;
    assert.ok((claims.exp as number) - (claims.iat as number) >= year, 'expires a year after issue');

    // Without any posture check in the store no policy is recorded as the passing one.
    const detail = await alice.client.get(`/sessions/${s.id}`);
    assert.deepEqual(detail.body.data.servicePolicies, []);
  });

  it('reuses the session of the same API session, service and type; the JWT names it', async () => {
    const res = await alice.client.post('/sessions', { serviceId: dialable.id, type: 'Dial' });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.data.id, firstId);
    assert.equal(decodeJwt(res.body.data.token).claims.jti, firstId);
    // Another API session of the same identity gets its own session.
    const other = await clientLogin(alice.username, alice.password);
    const res2 = await other.client.post('/sessions', { serviceId: dialable.id });
    assert.equal(res2.status, 201, res2.text);
    assert.notEqual(res2.body.data.id, firstId);
    assert.equal(res2.body.data.apiSessionId, other.apiSessionId);
  });

  it('matches body keys case-insensitively, as Go clients expect', async () => {
    const res = await alice.client.post('/sessions', { ServiceID: dialable.id, Type: 'Dial' });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.data.id, firstId);
  });

  it('creates a Bind session where a Bind policy grants it', async () => {
    const dial = await alice.client.post('/sessions', { serviceId: both.id, type: 'Dial' });
    const bind = await alice.client.post('/sessions', { serviceId: both.id, type: 'Bind' });
    assert.equal(bind.status, 201, bind.text);
    assert.equal(bind.body.data.type, 'Bind');
    assert.equal(decodeJwt(bind.body.data.token).claims.z_st, 'Bind');
    assert.notEqual(bind.body.data.id, dial.body.data.id);
  });

  it('answers 404 for a service the caller can not see, an unknown or a missing service id', async () => {
    assertError(await alice.client.post('/sessions', { serviceId: hidden.id }), 404, 'NOT_FOUND');
    assertError(await alice.client.post('/sessions', { serviceId: 'no-such-service' }), 404, 'NOT_FOUND');
    assertError(await alice.client.post('/sessions', {}), 404, 'NOT_FOUND');
    assertError(await bob.client.post('/sessions', { serviceId: dialable.id }), 404, 'NOT_FOUND');
  });

  it('refuses a type the caller holds no permission for (400 ServiceId)', async () => {
    const res = await alice.client.post('/sessions', { serviceId: dialable.id, type: 'Bind' });
    assertFieldError(res, 'ServiceId');
    assert.equal(res.body.error.cause.reason, 'service not found');
    assert.equal(res.body.error.cause.value, dialable.id);
    assertFieldError(await alice.client.post('/sessions', { serviceId: dialable.id, type: 'Invalid' }), 'ServiceId');
  });

  it('validates the body', async () => {
    assertFieldError(await alice.client.post('/sessions', { serviceId: dialable.id, type: 'dial' }), 'type');
    assertDecodeError(await alice.client.post('/sessions', { serviceId: 42 }), 'serviceId');
    assertFieldError(await alice.client.post('/sessions', { serviceId: dialable.id, tags: { a: 1 } }), /^tags/);
  });

  it('answers 400 NO_EDGE_ROUTERS_AVAILABLE when no edge router serves both identity and service', async () => {
    assertError(await alice.client.post('/sessions', { serviceId: noRouter.id }), 400, 'NO_EDGE_ROUTERS_AVAILABLE');
  });

  it('needs a session', async () => {
    assertError(await tc.http.post('/edge/client/v1/sessions', { serviceId: dialable.id }), 401, 'UNAUTHORIZED');
    assertError(await tc.http.get('/edge/client/v1/sessions'), 401, 'UNAUTHORIZED');
  });
});

describe('posture checks gate session creation', () => {
  it('fails with 409 INVALID_POSTURE while the only linking policy has checks, passes once a policy has none', async () => {
    const user = await clientUser({ roleAttributes: ['posture-user'] });
    await create('/edge-router-policies', { name: uniqueName('erp'), semantic: 'AnyOf', identityRoles: [`@${user.id}`], edgeRouterRoles: ['#sess-er'] });
    const svc = await service(['sess-dial']);
    const check = await create('/posture-checks', { name: uniqueName('mac'), typeId: 'MAC', macAddresses: ['aabbccddeeff'], roleAttributes: ['pc-mac'] });
    const guarded = await create('/service-policies', {
      name: uniqueName('sp-posture'), type: 'Dial', semantic: 'AnyOf', identityRoles: ['#posture-user'], serviceRoles: [`@${svc.id}`], postureCheckRoles: ['#pc-mac'],
    });

    const res = await user.client.post('/sessions', { serviceId: svc.id });
    assertError(res, 409, 'INVALID_POSTURE');
    assert.deepEqual(res.body.error.cause, {
      message: `Failed to pass posture checks for service policies: [${guarded}]`,
      data: { [guarded]: [{ id: check, typeId: 'MAC', isPassing: false }] },
    });
    // A Bind session is not gated by Dial policies: there is no Bind permission at all.
    assertFieldError(await user.client.post('/sessions', { serviceId: svc.id, type: 'Bind' }), 'ServiceId');

    const open = await create('/service-policies', {
      name: uniqueName('sp-open'), type: 'Dial', semantic: 'AnyOf', identityRoles: ['#posture-user'], serviceRoles: [`@${svc.id}`],
    });
    const ok = await user.client.post('/sessions', { serviceId: svc.id });
    assert.equal(ok.status, 201, ok.text);
    // The management view lists the policies that let the session pass.
    const detail = await tc.mgmt.get(`/sessions/${ok.body.data.id}`);
    assert.equal(detail.status, 200, detail.text);
    assert.deepEqual(detail.body.data.servicePolicies.map((p: { id: string }) => p.id), [open]);
    assert.equal(detail.body.data.servicePolicies[0].entity, 'service-policies');
  });

  it('once posture checks exist, a session lists the passing policies of its type', async () => {
    const svc = await service(['sess-dial']);
    const res = await alice.client.post('/sessions', { serviceId: svc.id });
    assert.equal(res.status, 201, res.text);
    const detail = await alice.client.get(`/sessions/${res.body.data.id}`);
    assert.deepEqual(detail.body.data.servicePolicies.map((p: { id: string }) => p.id), [dialPolicy]);
  });
});

describe('GET /sessions, GET/DELETE /sessions/{id}', () => {
  it("lists the caller's own sessions with filter, sort and paging", async () => {
    const res = await alice.client.get('/sessions');
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('client', 'GET', '/sessions', 200, res.body);
    assert.ok(res.body.data.length >= 3);
    for (const s of res.body.data) {
      assert.equal(s.identityId, alice.id);
      assert.equal(s.token, s.id, 'the listed token is the stored internal token');
      assert.deepEqual(Object.keys(s._links).sort(), ['route-path', 'self']);
    }
    assert.ok(res.body.meta.filterableFields.includes('type'));

    const binds = await alice.client.get(`/sessions?filter=${encodeURIComponent('type = "Bind"')}`);
    assert.deepEqual([...new Set(binds.body.data.map((s: { type: string }) => s.type))], ['Bind']);
    const forService = await alice.client.get(`/sessions?filter=${encodeURIComponent(`service = "${both.id}"`)}`);
    assert.equal(forService.body.data.length, 2);

    const sorted = await alice.client.get(`/sessions?filter=${encodeURIComponent('true sort by createdAt desc')}`);
    const times = sorted.body.data.map((s: { createdAt: string }) => s.createdAt);
    assert.deepEqual(times, [...times].sort().reverse());

    const page = await alice.client.get('/sessions?limit=1&offset=1');
    assert.equal(page.body.data.length, 1);
    assert.deepEqual(page.body.meta.pagination, { limit: 1, offset: 1, totalCount: res.body.meta.pagination.totalCount });

    const none = await bob.client.get('/sessions');
    assert.equal(none.body.data.length, 0);
    assertError(await alice.client.get(`/sessions?filter=${encodeURIComponent('nope = 1')}`), 400, 'INVALID_FILTER');
  });

  it('admins list every session', async () => {
    const res = await tc.client.get(`/sessions?filter=${encodeURIComponent(`identity = "${alice.id}"`)}`);
    assert.equal(res.status, 200, res.text);
    assert.ok(res.body.data.length >= 3);
  });

  it('detail and delete work on own sessions only (admins included); others get 404', async () => {
    const created = await alice.client.post('/sessions', { serviceId: both.id, type: 'Dial' });
    const id = created.body.data.id as string;
    const detail = await alice.client.get(`/sessions/${id}`);
    assert.equal(detail.status, 200, detail.text);
    assertMatchesReference('client', 'GET', '/sessions/{id}', 200, detail.body);
    assert.equal(detail.body.data.token, id);
    assert.equal(detail.body.data.edgeRouters.length, 1);

    assertError(await bob.client.get(`/sessions/${id}`), 404, 'NOT_FOUND');
    assertError(await tc.client.get(`/sessions/${id}`), 404, 'NOT_FOUND');
    assertError(await bob.client.delete(`/sessions/${id}`), 404, 'NOT_FOUND');
    assertError(await alice.client.get('/sessions/no-such-session'), 404, 'NOT_FOUND');

    assertEmptyOk(await alice.client.delete(`/sessions/${id}`));
    assertError(await alice.client.get(`/sessions/${id}`), 404, 'NOT_FOUND');
    assertError(await alice.client.delete(`/sessions/${id}`), 404, 'NOT_FOUND');
    // A new request creates a fresh session.
    const again = await alice.client.post('/sessions', { serviceId: both.id, type: 'Dial' });
    assert.notEqual(again.body.data.id, id);
  });
});

describe('sessions end with their API session and their service', () => {
  it('logout removes the sessions of that API session only', async () => {
    const other = await clientLogin(alice.username, alice.password);
    const mine = await other.client.post('/sessions', { serviceId: dialable.id });
    assert.equal(mine.status, 201, mine.text);
    const kept = await alice.client.post('/sessions', { serviceId: dialable.id });
    assertEmptyOk(await other.client.delete('/current-api-session'));
    assertError(await tc.mgmt.get(`/sessions/${mine.body.data.id}`), 404, 'NOT_FOUND');
    assert.equal((await tc.mgmt.get(`/sessions/${kept.body.data.id}`)).status, 200);
  });

  it('deleting the service removes its sessions', async () => {
    const svc = await service(['sess-dial']);
    const s = await alice.client.post('/sessions', { serviceId: svc.id });
    assert.equal(s.status, 201, s.text);
    assertEmptyOk(await tc.mgmt.delete(`/services/${svc.id}`));
    assertError(await alice.client.get(`/sessions/${s.body.data.id}`), 404, 'NOT_FOUND');
  });
});

void er;
