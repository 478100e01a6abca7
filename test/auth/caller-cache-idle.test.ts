/**
 * Idle expiry with the caller cache warm: a 2 s API session timeout on a clock the test moves (it stands still
 * otherwise), so expiry and the half-timeout write of the activity time happen at known instants. The cached
 * session must still expire once 2 s pass without use, stay alive while used, and show the stored activity
 * time the store holds.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { openSecondStore, startTestController, uniqueName, ADMIN_USER, ADMIN_PASSWORD, type TestController } from '../support/controller.ts';
import { createClient, type HttpClient } from '../support/client.ts';
import { createUserWithPassword } from '../support/factories.ts';
import { manualClock } from '../support/manual-clock.ts';

const clock = manualClock({ frozen: true });
const tc: TestController = await startTestController({ env: { PORTCULLIS_API_SESSION_TIMEOUT_SECONDS: '2' }, start: { clock } });
const outside = await openSecondStore(tc);
after(() => outside.close());

async function newUser(): Promise<{ client: HttpClient; apiSessionId: string; storedAt: () => Promise<string> }> {
  // The harness's admin session expires too: log in afresh.
  const mgmt = tc.mgmt.as({ token: await tc.login(ADMIN_USER, ADMIN_PASSWORD) });
  const u = await createUserWithPassword({ ...tc, mgmt }, { name: uniqueName('idle-user') });
  const client = createClient(`https://127.0.0.1:${tc.port}/edge/client/v1`, tc.ca, { token: u.token });
  const res = await client.get('/current-api-session');
  assert.equal(res.status, 200, res.text);
  const apiSessionId = res.body.data.id as string;
  const storedAt = async () => (await outside.value<string>('SELECT last_activity_at FROM api_sessions WHERE id = ?', [apiSessionId]))!;
  return { client, apiSessionId, storedAt };
}

describe('caller cache and idle expiry', () => {
  it('a warm session unused for the timeout is refused, one used just before is not', async () => {
    const u = await newUser();
    assert.equal((await u.client.get('/current-identity')).status, 200);
    assert.equal((await u.client.get('/current-identity')).status, 200);
    clock.advance(1999);
    assert.equal((await u.client.get('/current-identity')).status, 200, 'alive 1 ms before the timeout');
    clock.advance(2000);
    assert.equal((await u.client.get('/current-identity')).status, 401, 'refused once the timeout has passed');
  });

  it('a session in use outlives the timeout, its stored activity time advances and is what it shows', async () => {
    const u = await newUser();
    const initial = await u.storedAt();
    for (let elapsed = 400; elapsed <= 3600; elapsed += 400) {
      clock.advance(400);
      assert.equal((await u.client.get('/current-identity')).status, 200, `alive after ${elapsed} ms`);
    }
    const stored = await u.storedAt();
    assert.ok(stored > initial, `stored activity time advanced (${initial} → ${stored})`);
    clock.advance(400);
    const res = await u.client.get('/current-api-session');
    assert.equal(res.status, 200, res.text);
    const shown = res.body.data.lastActivityAt as string;
    const storedNow = await u.storedAt();
    assert.ok(stored <= shown && shown <= storedNow, `shows the stored activity time as of this request (${stored} ≤ ${shown} ≤ ${storedNow})`);
  });
});
