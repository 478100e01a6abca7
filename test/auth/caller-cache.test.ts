/**
 * The per-process caller cache never answers with stale state: after a request has warmed it, each change
 * that decides who the caller is or whether the session is full (logout, an API session deleted by an
 * administrator, the identity deleted, disabled, made admin or not, MFA required or completed, the stored
 * activity time) shows on the very next request (on PostgreSQL, a client-API request after another process's
 * commit may lag it by the change feed's delay, a NOTIFY away; those checks repeat the request for up to two seconds). Changes are made through the API of the same controller,
 * through a second controller on the same data directory (and database), and through a second store writing
 * directly (as another process or an operator's tool would).
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  startTestController,
  dropTestDatabase,
  freePort,
  openSecondStore,
  uniqueName,
  ADMIN_USER,
  ADMIN_PASSWORD,
  type TestController,
} from '../support/controller.ts';
import { createClient, type HttpClient } from '../support/client.ts';
import { createUserWithPassword } from '../support/factories.ts';
import { assertEmptyOk } from '../support/assertions.ts';
import { startController } from '../../src/controller.ts';
import { loadConfig } from '../../src/config.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'portcullis-caller-cache-'));
const tc: TestController = await startTestController({ dataDir });
// A second controller on the same data directory (its own store connection and caches).
const otherPort = await freePort();
const other = await startController(
  loadConfig(['--data-dir', dataDir, ...(tc.databaseUrl ? ['--database-url', tc.databaseUrl] : []), '--address', '127.0.0.1', '--port',
    String(otherPort), '--admin-user', ADMIN_USER, '--admin-password', ADMIN_PASSWORD, '--log-level', 'silent'], {}),
  { firstStart: false },
);
// A plain second store, writing as an outside process would.
const outside = await openSecondStore(tc);
after(async () => {
  await outside.close();
  await other.stop();
  rmSync(dataDir, { recursive: true, force: true });
  await dropTestDatabase(dataDir);
});
/** One statement written by the outside store. */
const write = (sql: string, params: unknown[]) => outside.write((tx) => tx.run(sql, params));

const otherRoot = `https://127.0.0.1:${otherPort}`;
const otherAdminToken = (await createClient(otherRoot, tc.ca).post('/edge/management/v1/authenticate?method=password', {
  username: ADMIN_USER,
  password: ADMIN_PASSWORD,
})).body.data.token as string;
const otherMgmt = createClient(`${otherRoot}/edge/management/v1`, tc.ca, { token: otherAdminToken });

interface User {
  id: string;
  token: string;
  client: HttpClient;
  mgmtApi: HttpClient;
  apiSessionId: string;
}

async function newUser(overrides: Record<string, unknown> = {}): Promise<User> {
  const u = await createUserWithPassword(tc, { name: uniqueName('cache-user'), ...overrides });
  const client = createClient(`https://127.0.0.1:${tc.port}/edge/client/v1`, tc.ca, { token: u.token });
  const mgmtApi = createClient(`https://127.0.0.1:${tc.port}/edge/management/v1`, tc.ca, { token: u.token });
  const current = await client.get('/current-api-session');
  assert.equal(current.status, 200, current.text);
  return { id: u.id, token: u.token, client, mgmtApi, apiSessionId: current.body.data.id as string };
}

/** Two authenticated requests, so the second is served from a warm cache entry. */
async function warm(client: HttpClient, path = '/current-identity'): Promise<void> {
  for (let i = 0; i < 2; i++) {
    const res = await client.get(path);
    assert.equal(res.status, 200, res.text);
  }
}

async function status(client: HttpClient, path = '/current-identity'): Promise<number> {
  return (await client.get(path)).status;
}

/**
 * The status of a client-API request made after another process's commit. On SQLite the next request sees the
 * commit; on PostgreSQL the client API's hot reads may lag it by the change feed's delay (a NOTIFY away), so
 * the request is repeated until the expected status shows or two seconds pass.
 */
async function statusAfterOtherCommit(client: HttpClient, expected: number, path = '/current-identity'): Promise<number> {
  const deadline = Date.now() + (tc.databaseUrl ? 2000 : 0);
  for (;;) {
    const got = await status(client, path);
    if (got === expected || Date.now() >= deadline) return got;
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function createPolicy(requireTotp: boolean): Promise<string> {
  const res = await tc.mgmt.post('/auth-policies', {
    name: uniqueName('cache-policy'),
    primary: {
      cert: { allowed: true, allowExpiredCerts: true },
      updb: { allowed: true, minPasswordLength: 5, requireSpecialChar: false, requireNumberChar: false, requireMixedCase: false, maxAttempts: 0, lockoutDurationMinutes: 0 },
      extJwt: { allowed: true, allowedSigners: [] },
    },
    secondary: { requireTotp },
  });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

describe('caller cache: changes through the same controller', () => {
  it('logout ends the session on the next request', async () => {
    const u = await newUser();
    await warm(u.client);
    assertEmptyOk(await u.client.delete('/current-api-session'));
    assert.equal(await status(u.client), 401);
  });

  it('an administrator deleting the API session ends it on the next request', async () => {
    const u = await newUser();
    await warm(u.client);
    assertEmptyOk(await tc.mgmt.delete(`/api-sessions/${u.apiSessionId}`));
    assert.equal(await status(u.client), 401);
  });

  it('deleting the identity ends its session on the next request', async () => {
    const u = await newUser();
    await warm(u.client);
    assertEmptyOk(await tc.mgmt.delete(`/identities/${u.id}`));
    assert.equal(await status(u.client), 401);
  });

  it('disabling the identity refuses the next request', async () => {
    const u = await newUser();
    await warm(u.client);
    assertEmptyOk(await tc.mgmt.post(`/identities/${u.id}/disable`, { durationMinutes: 0 }));
    assert.equal(await status(u.client), 401);
  });

  it('granting and revoking isAdmin changes what the next request may do', async () => {
    const u = await newUser();
    await warm(u.client);
    assert.equal(await status(u.mgmtApi, '/identities?limit=1'), 401, 'not an admin yet');
    assertEmptyOk(await tc.mgmt.patch(`/identities/${u.id}`, { isAdmin: true }));
    assert.equal(await status(u.mgmtApi, '/identities?limit=1'), 200, 'admin on the next request');
    assertEmptyOk(await tc.mgmt.patch(`/identities/${u.id}`, { isAdmin: false }));
    assert.equal(await status(u.mgmtApi, '/identities?limit=1'), 401, 'admin no more on the next request');
  });

  it("a policy requiring TOTP makes the session partial on the next request, and full again when lifted", async () => {
    const policyId = await createPolicy(false);
    const u = await newUser({ authPolicyId: policyId });
    await warm(u.client);
    assertEmptyOk(await tc.mgmt.patch(`/auth-policies/${policyId}`, { secondary: { requireTotp: true } }));
    assert.equal(await status(u.client), 401, 'partial sessions may not read the current identity');
    const partial = await u.client.get('/current-api-session');
    assert.equal(partial.status, 200, partial.text);
    assert.equal(partial.body.data.authQueries.length, 1);
    assert.equal(partial.body.data.authQueries[0].typeId, 'MFA');
    assertEmptyOk(await tc.mgmt.patch(`/auth-policies/${policyId}`, { secondary: { requireTotp: false } }));
    assert.equal(await status(u.client), 200);
  });

  it("moving the identity to a policy requiring TOTP makes the session partial on the next request", async () => {
    const policyId = await createPolicy(true);
    const u = await newUser();
    await warm(u.client);
    assertEmptyOk(await tc.mgmt.patch(`/identities/${u.id}`, { authPolicyId: policyId }));
    assert.equal(await status(u.client), 401);
    assertEmptyOk(await tc.mgmt.patch(`/identities/${u.id}`, { authPolicyId: 'default' }));
    assert.equal(await status(u.client), 200);
  });
});

describe('caller cache: changes made by another process', () => {
  it('a second controller deleting the API session ends it on the next request here', async () => {
    const u = await newUser();
    await warm(u.client);
    assertEmptyOk(await otherMgmt.delete(`/api-sessions/${u.apiSessionId}`));
    assert.equal(await statusAfterOtherCommit(u.client, 401), 401);
  });

  it('a second controller granting isAdmin is seen on the next request here', async () => {
    const u = await newUser();
    await warm(u.mgmtApi, '/current-identity');
    assert.equal(await status(u.mgmtApi, '/identities?limit=1'), 401);
    assertEmptyOk(await otherMgmt.patch(`/identities/${u.id}`, { isAdmin: true }));
    assert.equal(await status(u.mgmtApi, '/identities?limit=1'), 200);
  });

  it('a session logged out on the second controller is refused here', async () => {
    const u = await newUser();
    await warm(u.client);
    const there = createClient(`${otherRoot}/edge/client/v1`, tc.ca, { token: u.token });
    await warm(there);
    assertEmptyOk(await there.delete('/current-api-session'));
    assert.equal(await statusAfterOtherCommit(u.client, 401), 401);
  });

  it('direct writes of another connection: identity disabled, enabled, admin flag, deleted', async () => {
    const u = await newUser();
    await warm(u.mgmtApi);
    await write('UPDATE identities SET disabled_at = ? WHERE id = ?', [new Date().toISOString(), u.id]);
    assert.equal(await status(u.mgmtApi), 401, 'disabled');
    await write('UPDATE identities SET disabled_at = NULL WHERE id = ?', [u.id]);
    assert.equal(await status(u.mgmtApi), 200, 'enabled again');
    await write('UPDATE identities SET is_admin = 1 WHERE id = ?', [u.id]);
    assert.equal(await status(u.mgmtApi, '/identities?limit=1'), 200, 'admin');
    await write('UPDATE identities SET is_admin = 0 WHERE id = ?', [u.id]);
    assert.equal(await status(u.mgmtApi, '/identities?limit=1'), 401, 'not admin');
    await write('DELETE FROM identities WHERE id = ?', [u.id]);
    assert.equal(await status(u.mgmtApi), 401, 'deleted');
  });

  it('direct writes of another connection: MFA required, then completed', async () => {
    const u = await newUser();
    await warm(u.client);
    await write('UPDATE api_sessions SET is_mfa_required = 1 WHERE id = ?', [u.apiSessionId]);
    assert.equal(await statusAfterOtherCommit(u.client, 401), 401, 'MFA pending');
    const partial = await u.client.get('/current-api-session');
    assert.equal(partial.status, 200, partial.text);
    assert.equal(partial.body.data.isMfaRequired, true);
    assert.equal(partial.body.data.authQueries.length, 1);
    await write('UPDATE api_sessions SET is_mfa_complete = 1 WHERE id = ?', [u.apiSessionId]);
    assert.equal(await statusAfterOtherCommit(u.client, 200), 200, 'MFA passed');
  });

  it("direct writes of another connection: the auth policy's TOTP requirement", async () => {
    const policyId = await createPolicy(false);
    const u = await newUser({ authPolicyId: policyId });
    await warm(u.client);
    await write('UPDATE auth_policies SET secondary_settings = ? WHERE id = ?', [JSON.stringify({ requireTotp: true }), policyId]);
    assert.equal(await statusAfterOtherCommit(u.client, 401), 401);
    await write('UPDATE auth_policies SET secondary_settings = ? WHERE id = ?', [JSON.stringify({ requireTotp: false }), policyId]);
    assert.equal(await statusAfterOtherCommit(u.client, 200), 200);
  });

  it('direct writes of another connection: the session deleted, and its stored activity time', async () => {
    const u = await newUser();
    await warm(u.client, '/current-api-session');
    const at = new Date(Date.now() + 1000).toISOString();
    await write('UPDATE api_sessions SET last_activity_at = ? WHERE id = ?', [at, u.apiSessionId]);
    const deadline = Date.now() + (tc.databaseUrl ? 2000 : 0);
    let res = await u.client.get('/current-api-session');
    while (res.status === 200 && res.body.data.lastActivityAt !== at && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 5));
      res = await u.client.get('/current-api-session');
    }
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.lastActivityAt, at, 'the stored activity time, as written by the other connection');
    await write('DELETE FROM api_sessions WHERE id = ?', [u.apiSessionId]);
    assert.equal(await statusAfterOtherCommit(u.client, 401), 401);
  });

  it('an identity disabled until a time is refused until then and accepted after, with no write in between', async () => {
    const u = await newUser();
    await warm(u.client);
    const now = Date.now();
    await write('UPDATE identities SET disabled_at = ?, disabled_until = ? WHERE id = ?', [
      new Date(now).toISOString(), new Date(now + 1500).toISOString(), u.id]);
    assert.equal(await statusAfterOtherCommit(u.client, 401), 401);
    assert.equal(await status(u.client), 401, 'still disabled on a repeated request');
    await new Promise((r) => setTimeout(r, Math.max(0, now + 1600 - Date.now())));
    assert.equal(await status(u.client), 200, 'the lockout ran out');
  });
});
