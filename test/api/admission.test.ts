/**
 * Admission control over HTTPS (`--auth-limit`, `--write-limit`): a login flood and a write flood beyond the
 * limits get 429 in upstream's envelope (`RATE_LIMITED`, `SERVER_TOO_MANY_REQUESTS`) and change nothing, while
 * admitted requests succeed and reads of authenticated clients keep working; failed logins still lock an
 * identity out under the flood; with the limits off nothing is refused.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName } from '../support/controller.ts';
import { createUserWithPassword } from '../support/factories.ts';
import { assertError } from '../support/assertions.ts';

const tc = await startTestController({ extraArgs: ['--auth-limit', '2', '--write-limit', '3'] });
const CLIENT = '/edge/client/v1';

function login(username: string, password: string) {
  return tc.http.post(`${CLIENT}/authenticate?method=password`, { username, password });
}

describe('admission control', () => {
  it('sheds a login flood with 429 RATE_LIMITED while reads go on', async () => {
    const user = await createUserWithPassword(tc);
    const [answers, reads] = await Promise.all([
      Promise.all(Array.from({ length: 24 }, () => login(user.username, user.password))),
      Promise.all(Array.from({ length: 12 }, () => tc.mgmt.get('/current-api-session'))),
    ]);
    const limited = answers.filter((r) => r.status === 429);
    assert.ok(limited.length > 0, 'some logins are shed');
    assert.ok(answers.some((r) => r.status === 200), 'admitted logins succeed');
    assert.deepEqual([...new Set(answers.map((r) => r.status))].sort(), [200, 429]);
    for (const r of limited) assertError(r, 429, 'RATE_LIMITED');
    assert.ok(reads.every((r) => r.status === 200), 'reads are never limited');
    assert.equal((await login(user.username, user.password)).status, 200, 'a login after the flood is admitted');
  });

  it('sheds a write flood with 429 SERVER_TOO_MANY_REQUESTS and a refused write changes nothing', async () => {
    const prefix = uniqueName('flood');
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => tc.mgmt.post('/identities', { name: `${prefix}-${i}`, type: 'User', isAdmin: false })),
    );
    const created = answers.filter((r) => r.status === 201).length;
    const limited = answers.filter((r) => r.status === 429);
    assert.equal(created + limited.length, 30, JSON.stringify([...new Set(answers.map((r) => r.status))]));
    for (const r of limited) assertError(r, 429, 'SERVER_TOO_MANY_REQUESTS');
    const listed = await tc.mgmt.get(`/identities?limit=100&filter=${encodeURIComponent(`name contains "${prefix}"`)}`);
    assert.equal(listed.body.meta.pagination.totalCount, created, 'exactly the admitted writes happened');
  });

  it('keeps counting failed logins under a flood: the identity locks', async () => {
    const policy = await tc.mgmt.post('/auth-policies', {
      name: uniqueName('lockout'),
      primary: {
        cert: { allowed: true, allowExpiredCerts: true },
        updb: { allowed: true, minPasswordLength: 5, requireSpecialChar: false, requireNumberChar: false, requireMixedCase: false, maxAttempts: 3, lockoutDurationMinutes: 5 },
        extJwt: { allowed: true, allowedSigners: [] },
      },
      secondary: { requireTotp: false },
    });
    assert.equal(policy.status, 201, policy.text);
    const user = await createUserWithPassword(tc, { authPolicyId: policy.body.data.id });
    // Waves of concurrent wrong passwords, past the limiter's window: whatever is admitted is counted.
    const statuses = new Set<number>();
    for (let wave = 0; wave < 20; wave++) {
      const answers = await Promise.all(Array.from({ length: 8 }, () => login(user.username, 'Wrong-pass-1')));
      for (const r of answers) statuses.add(r.status);
      if ((await tc.mgmt.get(`/identities/${user.id}`)).body.data.disabled === true) break;
    }
    assert.deepEqual([...statuses].filter((s) => s !== 401 && s !== 429), [], 'only refusals and sheds');
    assert.equal((await tc.mgmt.get(`/identities/${user.id}`)).body.data.disabled, true, 'locked out');
    assertError(await login(user.username, user.password), 401, 'INVALID_AUTH');
  });
});

describe('admission control off', async () => {
  const open = await startTestController({ extraArgs: ['--auth-limit', '0', '--write-limit', '0'] });
  it('refuses nothing', async () => {
    const user = await createUserWithPassword(open);
    const answers = await Promise.all(Array.from({ length: 16 }, () => open.http.post(`${CLIENT}/authenticate?method=password`, { username: user.username, password: user.password })));
    assert.ok(answers.every((r) => r.status === 200));
  });
});
