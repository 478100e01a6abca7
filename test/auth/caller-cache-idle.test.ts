/**
 * Idle expiry with the caller cache warm: a 2 s API session timeout, so expiry and the half-timeout write of
 * the activity time happen within the test. The cached session must still expire after 2 s without use,
 * stay alive while used, and show the stored activity time the store holds.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startTestController, uniqueName, ADMIN_USER, ADMIN_PASSWORD, type TestController } from '../support/controller.ts';
import { createClient, type HttpClient } from '../support/client.ts';
import { createUserWithPassword } from '../support/factories.ts';
import { openDatabase, closeDatabase } from '../../src/store/database.ts';

const tc: TestController = await startTestController({ env: { PORTCULLIS_API_SESSION_TIMEOUT_SECONDS: '2' } });
const outside = openDatabase(join(tc.dataDir, 'portcullis.db'));
after(() => closeDatabase(outside));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function newUser(): Promise<{ client: HttpClient; apiSessionId: string; storedAt: () => string }> {
  // The harness's admin session expires too: log in afresh.
  const mgmt = tc.mgmt.as({ token: await tc.login(ADMIN_USER, ADMIN_PASSWORD) });
  const u = await createUserWithPassword({ ...tc, mgmt }, { name: uniqueName('idle-user') });
  const client = createClient(`https://127.0.0.1:${tc.port}/edge/client/v1`, tc.ca, { token: u.token });
  const res = await client.get('/current-api-session');
  assert.equal(res.status, 200, res.text);
  const apiSessionId = res.body.data.id as string;
  const stored = outside.prepare('SELECT last_activity_at FROM api_sessions WHERE id = ?').pluck();
  return { client, apiSessionId, storedAt: () => stored.get(apiSessionId) as string };
}

describe('caller cache and idle expiry', () => {
  it('a warm session unused for longer than the timeout is refused', async () => {
    const u = await newUser();
    assert.equal((await u.client.get('/current-identity')).status, 200);
    assert.equal((await u.client.get('/current-identity')).status, 200);
    await sleep(2300);
    assert.equal((await u.client.get('/current-identity')).status, 401);
  });

  it('a session in use outlives the timeout, its stored activity time advances and is what it shows', async () => {
    const u = await newUser();
    const initial = u.storedAt();
    const started = Date.now();
    while (Date.now() - started < 3500) {
      assert.equal((await u.client.get('/current-identity')).status, 200, `alive after ${Date.now() - started} ms`);
      await sleep(400);
    }
    const stored = u.storedAt();
    assert.ok(stored > initial, `stored activity time advanced (${initial} → ${stored})`);
    const res = await u.client.get('/current-api-session');
    assert.equal(res.status, 200, res.text);
    const shown = res.body.data.lastActivityAt as string;
    assert.ok(stored <= shown && shown <= u.storedAt(), `shows the stored activity time as of this request (${stored} ≤ ${shown} ≤ ${u.storedAt()})`);
  });
});
