/**
 * `GET /current-api-session/service-updates`: `lastChangeAt` starts at the later of the API session's
 * creation and the controller start, moves when a write changes the services an identity sees (policy
 * granting a service, the service itself changing), and does not move for unrelated identities.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName } from '../../support/controller.ts';
import { createClient, type HttpClient } from '../../support/client.ts';
import { createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { TIMESTAMP, assertError } from '../../support/assertions.ts';

const tc = await startTestController();
const root = `https://127.0.0.1:${tc.port}`;

const credentials = new Map<string, { username: string; password: string }>();

async function credentialsOf(id: string): Promise<{ username: string; password: string }> {
  return credentials.get(id)!;
}

interface User {
  id: string;
  client: HttpClient;
  apiSessionCreatedAt: string;
}

async function clientUser(roleAttributes: string[]): Promise<User> {
  const u = await createUserWithPassword(tc, { roleAttributes });
  credentials.set(u.id, { username: u.username, password: u.password });
  const res = await tc.http.post('/edge/client/v1/authenticate?method=password', { username: u.username, password: u.password });
  assert.equal(res.status, 200, res.text);
  return { id: u.id, client: createClient(`${root}/edge/client/v1`, tc.ca, { token: res.body.data.token }), apiSessionCreatedAt: res.body.data.createdAt };
}

async function lastChangeAt(u: User): Promise<string> {
  const res = await u.client.get('/current-api-session/service-updates');
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('client', 'GET', '/current-api-session/service-updates', 200, res.body);
  assert.deepEqual(Object.keys(res.body.data), ['lastChangeAt']);
  assert.deepEqual(res.body.meta, {});
  assert.match(res.body.data.lastChangeAt, TIMESTAMP);
  return res.body.data.lastChangeAt as string;
}

async function create(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await tc.mgmt.post(path, body);
  assert.equal(res.status, 201, `${path}: ${res.text}`);
  return res.body.data.id as string;
}

const granted = await clientUser(['su-granted']);
const unrelated = await clientUser(['su-unrelated']);
const svc = await create('/services', { name: uniqueName('svc'), encryptionRequired: true, roleAttributes: ['su-svc'] });

describe('GET /current-api-session/service-updates', () => {
  it('starts at the API session creation (sessions made after the controller started)', async () => {
    assert.equal(await lastChangeAt(granted), granted.apiSessionCreatedAt);
    assert.equal(await lastChangeAt(unrelated), unrelated.apiSessionCreatedAt);
  });

  it('moves for an identity that gains a service, and only for it', async () => {
    const grantedBefore = await lastChangeAt(granted);
    const unrelatedBefore = await lastChangeAt(unrelated);
    const requestedAt = new Date().toISOString();
    const policy = await create('/service-policies', {
      name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: ['#su-granted'], serviceRoles: ['#su-svc'],
    });
    const grantedAfter = await lastChangeAt(granted);
    assert.ok(grantedAfter >= requestedAt, `${grantedAfter} should not precede the policy write at ${requestedAt}`);
    assert.ok(grantedAfter > grantedBefore);
    assert.equal(await lastChangeAt(unrelated), unrelatedBefore);

    // Losing the service moves it again.
    const beforeDelete = new Date().toISOString();
    const del = await tc.mgmt.delete(`/service-policies/${policy}`);
    assert.equal(del.status, 200, del.text);
    assert.ok((await lastChangeAt(granted)) >= beforeDelete);
    assert.equal(await lastChangeAt(unrelated), unrelatedBefore);
  });

  it("is the identity's mark for every API session once a change is recorded", async () => {
    const current = await lastChangeAt(granted);
    const again = await tc.http.post('/edge/client/v1/authenticate?method=password', await credentialsOf(granted.id));
    assert.equal(again.status, 200, again.text);
    const second: User = { id: granted.id, client: createClient(`${root}/edge/client/v1`, tc.ca, { token: again.body.data.token }), apiSessionCreatedAt: again.body.data.createdAt };
    assert.equal(await lastChangeAt(second), current);
  });

  it('needs a session', async () => {
    assertError(await tc.http.get('/edge/client/v1/current-api-session/service-updates'), 401, 'UNAUTHORIZED');
  });
});
