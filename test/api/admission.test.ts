/**
 * Admission control over HTTPS (`--auth-limit`, `--write-limit`): a login flood and a write flood beyond the
 * limits get 429 in upstream's envelope (`RATE_LIMITED`, `SERVER_TOO_MANY_REQUESTS`) and change nothing, while
 * admitted requests succeed and reads of authenticated clients keep working; failed logins still lock an
 * identity out under the flood; with the limits off nothing is refused.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';
import { startTestController, uniqueName } from '../support/controller.ts';
import { createUserWithPassword } from '../support/factories.ts';
import { assertError } from '../support/assertions.ts';

const tc = await startTestController({ extraArgs: ['--auth-limit', '2', '--write-limit', '3'] });
const CLIENT = '/edge/client/v1';

/**
 * A POST sent with its headers and the first byte of its body only (`sent` once they are on the wire);
 * `finish` sends the rest and resolves with the status.
 */
function heldPost(path: string, body: unknown): { sent: Promise<void>; finish(): Promise<number> } {
  const payload = Buffer.from(JSON.stringify(body));
  const req = httpsRequest({
    hostname: '127.0.0.1', port: tc.port, path, method: 'POST', ca: tc.ca, agent: false,
    headers: { 'content-type': 'application/json', 'content-length': String(payload.length), 'zt-session': tc.adminToken },
  });
  const status = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
  const sent = new Promise<void>((resolve) => req.write(payload.subarray(0, 1), () => resolve()));
  return {
    sent,
    finish() {
      req.end(payload.subarray(1));
      return status;
    },
  };
}

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
    const identity = (i: number | string) => ({ name: `${prefix}-${i}`, type: 'User', isAdmin: false });
    // Three writes whose bodies are held back fill the write window (--write-limit 3): admission happens when
    // the headers arrive, so the window stays full until the bodies are sent.
    const held = [0, 1, 2].map((i) => heldPost('/edge/management/v1/identities', identity(`held-${i}`)));
    await Promise.all(held.map((h) => h.sent));
    // Wait until the server has admitted them: the first refused write says so.
    const probes = [];
    for (let i = 0; i < 50; i++) {
      const probe = await tc.mgmt.post('/identities', identity(`probe-${i}`));
      probes.push(probe);
      if (probe.status === 429) break;
    }
    assert.equal(probes.at(-1)?.status, 429, 'the held writes fill the window');
    const answers = [
      ...probes,
      ...(await Promise.all(Array.from({ length: 30 }, (_, i) => tc.mgmt.post('/identities', identity(i))))),
    ];
    const created = answers.filter((r) => r.status === 201).length;
    const limited = answers.filter((r) => r.status === 429);
    assert.ok(limited.length >= 31, `the flood is shed while the window is full (${limited.length} refused)`);
    assert.equal(created + limited.length, answers.length, JSON.stringify([...new Set(answers.map((r) => r.status))]));
    for (const r of limited) assertError(r, 429, 'SERVER_TOO_MANY_REQUESTS');

    const heldStatuses = await Promise.all(held.map((h) => h.finish()));
    assert.deepEqual(heldStatuses, [201, 201, 201], 'the admitted writes complete');
    assert.equal((await tc.mgmt.post('/identities', identity('after'))).status, 201, 'a write after the flood is admitted');
    const listed = await tc.mgmt.get(`/identities?limit=100&filter=${encodeURIComponent(`name contains "${prefix}"`)}`);
    assert.equal(listed.body.meta.pagination.totalCount, created + 3 + 1, 'exactly the admitted writes happened');
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
