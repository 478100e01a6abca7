/**
 * TOTP MFA on both APIs (auth.md §4): enrollment (create, detail, QR code, verify), partial API sessions and
 * what they may call, `POST /authenticate/mfa` with TOTP and single-use recovery codes, recovery code view and
 * regeneration, removal by the caller (with a code) and by an administrator, `totp-token`, and the identity's
 * `isMfaEnabled`. Codes are computed in the test with otpauth from the provisioning URL's secret.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';
import { Secret, TOTP } from 'otpauth';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpClient } from '../../support/client.ts';
import { createIdentity } from '../../support/factories.ts';
import { assertMatchesReference, type ApiName } from '../../support/reference-spec.ts';
import { assertEmptyOk, assertError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();
const APIS: ApiName[] = ['client', 'management'];
const SCOPES_NULL = ['/data/authQueries/*/scopes'];
const TOTP_QUERY = {
  typeId: 'MFA',
  provider: 'ziti',
  format: 'alphaNumeric',
  httpMethod: 'POST',
  httpUrl: './authenticate/mfa',
  minLength: 4,
  maxLength: 6,
  scopes: null,
};

interface User {
  id: string;
  name: string;
  username: string;
  password: string;
}

function apiClient(api: ApiName, token?: string): HttpClient {
  return createClient(`https://127.0.0.1:${tc.port}/edge/${api}/v1`, tc.ca, token ? { token } : {});
}

async function newUser(): Promise<User> {
  const name = uniqueName('mfa-user');
  const id = await createIdentity(tc.mgmt, { name });
  const username = uniqueName('mfa-login');
  const password = 'Mfa-pass-123';
  const res = await tc.mgmt.post('/authenticators', { method: 'updb', identityId: id, username, password });
  assert.equal(res.status, 201, res.text);
  return { id, name, username, password };
}

async function login(user: User, api: ApiName = 'client'): Promise<{ client: HttpClient; body: any }> {
  const res = await tc.http.post(`/edge/${api}/v1/authenticate?method=password`, { username: user.username, password: user.password });
  assert.equal(res.status, 200, res.text);
  return { client: apiClient(api, res.body.data.token as string), body: res.body };
}

function totpFor(secret: string, offsetSteps = 0): string {
  return new TOTP({ secret: Secret.fromBase32(secret) }).generate({ timestamp: Date.now() + offsetSteps * 30_000 });
}

/** A six-digit code that is none of the codes valid within ±3 steps of now. */
function wrongCode(secret: string): string {
  const valid = new Set([-3, -2, -1, 0, 1, 2, 3].map((o) => totpFor(secret, o)));
  for (let n = 123456; ; n++) if (!valid.has(String(n))) return String(n);
}

/** Enrolls MFA for a logged-in client; returns the secret and the initial recovery codes. */
async function enroll(client: HttpClient): Promise<{ secret: string; recoveryCodes: string[] }> {
  const created = await client.post('/current-identity/mfa');
  assert.equal(created.status, 201, created.text);
  const detail = await client.get('/current-identity/mfa');
  assert.equal(detail.status, 200, detail.text);
  const secret = new URL(detail.body.data.provisioningUrl).searchParams.get('secret') as string;
  return { secret, recoveryCodes: detail.body.data.recoveryCodes };
}

async function enrollAndVerify(client: HttpClient): Promise<{ secret: string; recoveryCodes: string[] }> {
  const out = await enroll(client);
  assertEmptyOk(await client.post('/current-identity/mfa/verify', { code: totpFor(out.secret) }));
  return out;
}

/** GET returning the raw bytes (the JSON client decodes bodies as text). */
function getBytes(path: string, token: string): Promise<{ status: number; type: string; bytes: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`https://127.0.0.1:${tc.port}${path}`, { method: 'GET', ca: tc.ca, headers: { 'zt-session': token }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), bytes: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

function tokenOf(client: HttpClient): Promise<string> {
  return client.get('/current-api-session').then((r) => r.body.data.token as string);
}

describe('MFA enrollment', () => {
  for (const api of APIS) {
    it(`${api}: create, detail, QR code and verify`, async () => {
      const user = await newUser();
      const { client } = await login(user, api);
      assertError(await client.get('/current-identity/mfa'), 404, 'NOT_FOUND');
      assertError(await client.get('/current-identity/mfa/qr-code'), 404, 'NOT_FOUND');
      assertError(await client.post('/current-identity/mfa/verify', { code: '123456' }), 404, 'NOT_FOUND');

      const created = await client.post('/current-identity/mfa');
      assert.equal(created.status, 201, created.text);
      assertMatchesReference(api, 'POST', '/current-identity/mfa', 201, created.body);
      assert.deepEqual(created.body.data._links, { self: { href: './current-identity/mfa' } });
      assertError(await client.post('/current-identity/mfa'), 409, 'MFA_EXISTS');

      const detail = await client.get('/current-identity/mfa');
      assert.equal(detail.status, 200, detail.text);
      assertMatchesReference(api, 'GET', '/current-identity/mfa', 200, detail.body);
      const data = detail.body.data;
      assert.equal(data.id, created.body.data.id);
      assert.equal(data.isVerified, false);
      const escaped = user.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      assert.match(data.provisioningUrl, new RegExp(`^otpauth://totp/openziti\\.io:${escaped}\\?issuer=openziti\\.io&secret=[A-Z2-7]{16}$`));
      assert.equal(data.recoveryCodes.length, 20);
      for (const code of data.recoveryCodes) assert.match(code, /^[A-Z2-7]{6}$/);
      assert.deepEqual(data.recoveryCodes, [...data.recoveryCodes].sort(), 'listed in sorted order, as upstream');
      assert.deepEqual(Object.keys(data._links).sort(), ['current-identity', 'qr', 'self', 'verify']);
      const secret = new URL(data.provisioningUrl).searchParams.get('secret') as string;

      const qr = await getBytes(`/edge/${api}/v1/current-identity/mfa/qr-code`, await tokenOf(client));
      assert.equal(qr.status, 200);
      assert.equal(qr.type, 'image/png');
      assert.deepEqual([...qr.bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      assert.equal(qr.bytes.subarray(12, 16).toString('latin1'), 'IHDR');
      assert.equal(qr.bytes.readUInt32BE(16), 256);
      assert.equal(qr.bytes.readUInt32BE(20), 256);

      // An unverified enrollment does not make logins partial.
      const other = await login(user, api);
      assert.deepEqual(other.body.data.authQueries, []);
      assert.equal(other.body.data.isMfaRequired, false);

      assertError(await client.post('/current-identity/mfa/verify', {}), 400, 'COULD_NOT_VALIDATE');
      assertError(await client.post('/current-identity/mfa/verify', { code: '' }), 400, 'MFA_INVALID_TOKEN');
      assertError(await client.post('/current-identity/mfa/verify', { code: wrongCode(secret) }), 400, 'MFA_INVALID_TOKEN');
      assertError(await client.post('/current-identity/mfa/verify', { code: data.recoveryCodes[0] }), 400, 'MFA_INVALID_TOKEN');
      assertError(await client.post('/current-identity/mfa/verify', { code: '12345678' }), 400, 'MFA_INVALID_TOKEN');
      const identityBefore = await tc.mgmt.get(`/identities/${user.id}`);
      assert.equal(identityBefore.body.data.isMfaEnabled, false);

      // A code from two steps ago is still inside the window.
      assertEmptyOk(await client.post('/current-identity/mfa/verify', { code: totpFor(secret, -2) }));
      const session = await client.get('/current-api-session');
      assert.equal(session.body.data.isMfaRequired, true);
      assert.equal(session.body.data.isMfaComplete, true);
      assert.deepEqual(session.body.data.authQueries, []);

      // Upstream answers a verified enrollment with `recoveryCodes: null` and no provisioning URL.
      const verified = await client.get('/current-identity/mfa');
      assertMatchesReference(api, 'GET', '/current-identity/mfa', 200, verified.body, { allowNullAt: ['/data/recoveryCodes'] });
      assert.equal(verified.body.data.isVerified, true);
      assert.equal(verified.body.data.provisioningUrl, undefined);
      assert.ok('recoveryCodes' in verified.body.data);
      assert.equal(verified.body.data.recoveryCodes, null);
      assert.deepEqual(Object.keys(verified.body.data._links).sort(), ['current-identity', 'recovery-codes', 'self']);
      assertError(await client.get('/current-identity/mfa/qr-code'), 404, 'NOT_FOUND');
      assertError(await client.post('/current-identity/mfa/verify', { code: totpFor(secret) }), 404, 'NOT_FOUND');
      assertError(await client.post('/current-identity/mfa'), 409, 'MFA_EXISTS');
      const identityAfter = await tc.mgmt.get(`/identities/${user.id}`);
      assert.equal(identityAfter.body.data.isMfaEnabled, true);
    });
  }

  it('every MFA operation needs a session', async () => {
    const anon = apiClient('client');
    for (const [method, path] of [
      ['GET', '/current-identity/mfa'],
      ['POST', '/current-identity/mfa'],
      ['DELETE', '/current-identity/mfa'],
      ['GET', '/current-identity/mfa/qr-code'],
      ['GET', '/current-identity/mfa/recovery-codes'],
      ['POST', '/current-identity/mfa/recovery-codes'],
      ['POST', '/current-identity/mfa/verify'],
      ['POST', '/authenticate/mfa'],
      ['POST', '/current-api-session/totp-token'],
    ] as const) {
      const res = await anon.request(method, path, method === 'POST' ? { body: { code: '123456' } } : {});
      assertError(res, 401, 'UNAUTHORIZED');
    }
  });
});

describe('partial sessions and POST /authenticate/mfa', () => {
  it('a login of an identity with verified MFA is partial and lists the TOTP query', async () => {
    const user = await newUser();
    const { client } = await login(user);
    const { secret } = await enrollAndVerify(client);
    for (const api of APIS) {
      const { client: partial, body } = await login(user, api);
      assertMatchesReference(api, 'POST', '/authenticate', 200, body, { allowNullAt: SCOPES_NULL });
      assert.deepEqual(body.data.authQueries, [TOTP_QUERY]);
      assert.equal(body.data.isMfaRequired, true);
      assert.equal(body.data.isMfaComplete, false);

      // Allowed while partial (auth.md §4.6).
      const current = await partial.get('/current-api-session');
      assert.equal(current.status, 200, current.text);
      assertMatchesReference(api, 'GET', '/current-api-session', 200, current.body, { allowNullAt: SCOPES_NULL });
      assert.deepEqual(current.body.data.authQueries, [TOTP_QUERY]);
      assert.equal((await partial.get('/current-identity/mfa')).status, 200);
      assertError(await partial.post('/current-identity/mfa'), 409, 'MFA_EXISTS');
      assertError(await partial.get('/current-identity/mfa/qr-code'), 404, 'NOT_FOUND');
      assertError(await partial.post('/current-identity/mfa/verify', { code: totpFor(secret) }), 404, 'NOT_FOUND');

      // Refused while partial.
      const refused: Array<[string, string, unknown?]> = [
        ['GET', '/current-identity'],
        ['GET', '/current-identity/authenticators'],
        ['DELETE', '/current-identity/mfa'],
        ['GET', '/current-identity/mfa/recovery-codes'],
        ['POST', '/current-identity/mfa/recovery-codes', { code: totpFor(secret) }],
        ['POST', '/current-api-session/totp-token', { code: totpFor(secret) }],
        api === 'client' ? ['GET', '/services'] : ['GET', '/identities'],
        api === 'client' ? ['POST', '/sessions', { serviceId: 'x', type: 'Dial' }] : ['GET', '/auth-policies'],
      ];
      for (const [method, path, body] of refused) {
        const res = await partial.request(method, path, body === undefined ? {} : { body });
        assertError(res, 401, 'UNAUTHORIZED');
      }

      assertError(await partial.post('/authenticate/mfa', {}), 400, 'COULD_NOT_VALIDATE');
      assertError(await partial.post('/authenticate/mfa', { code: '' }), 400, 'MFA_INVALID_TOKEN');
      assertError(await partial.post('/authenticate/mfa', { code: wrongCode(secret) }), 400, 'MFA_INVALID_TOKEN');
      assertEmptyOk(await partial.post('/authenticate/mfa', { code: totpFor(secret) }));
      const full = await partial.get('/current-api-session');
      assert.deepEqual(full.body.data.authQueries, []);
      assert.equal(full.body.data.isMfaRequired, true);
      assert.equal(full.body.data.isMfaComplete, true);
      assert.equal(full.body.data.token, body.data.token, 'the token does not change');
      assert.equal((await partial.get('/current-identity')).status, 200);
      const row = (await tc.controller.store.get<{ mfa_passed_at: string | null }>('SELECT mfa_passed_at FROM api_sessions WHERE id = ?', [body.data.id]))!;
      assert.ok(row.mfa_passed_at && Math.abs(Date.parse(row.mfa_passed_at) - Date.now()) < 60_000, String(row.mfa_passed_at));

      // Logout is allowed while partial, too.
      const again = await login(user, api);
      assertEmptyOk(await again.client.delete('/current-api-session'));
      assertError(await again.client.get('/current-api-session'), 401, 'UNAUTHORIZED');
    }
  });

  it('a recovery code completes a partial session once', async () => {
    const user = await newUser();
    const { client } = await login(user);
    const { recoveryCodes } = await enrollAndVerify(client);
    const first = await login(user);
    assertEmptyOk(await first.client.post('/authenticate/mfa', { code: recoveryCodes[3] }));
    assert.equal((await first.client.get('/current-identity')).status, 200);
    const second = await login(user);
    assertError(await second.client.post('/authenticate/mfa', { code: recoveryCodes[3] }), 400, 'MFA_INVALID_TOKEN');
    assertError(await second.client.post('/authenticate/mfa', { code: recoveryCodes[4].toLowerCase() }), 400, 'MFA_INVALID_TOKEN');
    assertEmptyOk(await second.client.post('/authenticate/mfa', { code: recoveryCodes[4] }));
  });

  it('authenticate/mfa without a verified enrollment answers 409 MFA_NOT_ENROLLED', async () => {
    const user = await newUser();
    const { client } = await login(user);
    assertError(await client.post('/authenticate/mfa', { code: '123456' }), 409, 'MFA_NOT_ENROLLED');
    await enroll(client);
    assertError(await client.post('/authenticate/mfa', { code: '123456' }), 409, 'MFA_NOT_ENROLLED');
  });

  it('totp-token answers INVALID_BACKING_TOKEN_TYPE for zt-session sessions', async () => {
    const user = await newUser();
    const { client } = await login(user);
    const { secret } = await enrollAndVerify(client);
    for (const api of APIS) {
      const c = apiClient(api, await tokenOf(client));
      assertError(await c.post('/current-api-session/totp-token', { code: totpFor(secret) }), 400, 'INVALID_BACKING_TOKEN_TYPE');
      assertError(await c.post('/current-api-session/totp-token', {}), 400, 'COULD_NOT_VALIDATE');
    }
  });
});

describe('recovery codes', () => {
  it('view with a TOTP code (header or body), regenerate with TOTP or a recovery code', async () => {
    const user = await newUser();
    const { client } = await login(user);
    assertError(await client.get('/current-identity/mfa/recovery-codes', { headers: { 'mfa-validation-code': '123456' } }), 404, 'NOT_FOUND');
    const { secret, recoveryCodes } = await enroll(client);
    assertError(await client.get('/current-identity/mfa/recovery-codes', { headers: { 'mfa-validation-code': totpFor(secret) } }), 404, 'NOT_FOUND');
    assertError(await client.post('/current-identity/mfa/recovery-codes', { code: totpFor(secret) }), 404, 'NOT_FOUND');
    assertEmptyOk(await client.post('/current-identity/mfa/verify', { code: totpFor(secret) }));

    assertError(await client.get('/current-identity/mfa/recovery-codes'), 400, 'MFA_INVALID_TOKEN');
    assertError(await client.get('/current-identity/mfa/recovery-codes', { headers: { 'mfa-validation-code': wrongCode(secret) } }), 400, 'MFA_INVALID_TOKEN');
    // Viewing takes TOTP codes only.
    assertError(await client.get('/current-identity/mfa/recovery-codes', { headers: { 'mfa-validation-code': recoveryCodes[0] } }), 400, 'MFA_INVALID_TOKEN');
    for (const api of APIS) {
      const c = apiClient(api, await tokenOf(client));
      const viaHeader = await c.get('/current-identity/mfa/recovery-codes', { headers: { 'mfa-validation-code': totpFor(secret) } });
      assert.equal(viaHeader.status, 200, viaHeader.text);
      assertMatchesReference(api, 'GET', '/current-identity/mfa/recovery-codes', 200, viaHeader.body);
      assert.deepEqual(viaHeader.body.data.recoveryCodes, recoveryCodes);
    }
    const viaBody = await client.request('GET', '/current-identity/mfa/recovery-codes', { body: { code: totpFor(secret) } });
    assert.equal(viaBody.status, 200, viaBody.text);
    assert.deepEqual(viaBody.body.data.recoveryCodes, recoveryCodes);

    assertError(await client.post('/current-identity/mfa/recovery-codes', {}), 400, 'COULD_NOT_VALIDATE');
    assertError(await client.post('/current-identity/mfa/recovery-codes', { code: wrongCode(secret) }), 400, 'MFA_INVALID_TOKEN');
    assertEmptyOk(await client.post('/current-identity/mfa/recovery-codes', { code: totpFor(secret) }));
    const regenerated = await client.get('/current-identity/mfa/recovery-codes', { headers: { 'mfa-validation-code': totpFor(secret) } });
    const fresh = regenerated.body.data.recoveryCodes as string[];
    assert.equal(fresh.length, 20);
    assert.ok(fresh.every((c) => /^[A-Z2-7]{6}$/.test(c)));
    assert.notDeepEqual(fresh, recoveryCodes);
    // The old codes are gone; a new one regenerates again (it is consumed by the replacement anyway).
    const partial = await login(user);
    const oldOnly = recoveryCodes.find((c) => !fresh.includes(c)) as string;
    assertError(await partial.client.post('/authenticate/mfa', { code: oldOnly }), 400, 'MFA_INVALID_TOKEN');
    assertEmptyOk(await client.post('/current-identity/mfa/recovery-codes', { code: fresh[0] }));
    const third = await client.get('/current-identity/mfa/recovery-codes', { headers: { 'mfa-validation-code': totpFor(secret) } });
    assert.equal(third.body.data.recoveryCodes.length, 20);
    assert.notDeepEqual(third.body.data.recoveryCodes, fresh);
    assertError(await partial.client.post('/authenticate/mfa', { code: fresh[0] }), 400, 'MFA_INVALID_TOKEN');
    assertEmptyOk(await partial.client.post('/authenticate/mfa', { code: third.body.data.recoveryCodes[0] }));
  });
});

describe('removing MFA', () => {
  it('the caller removes a verified enrollment with a code; sessions lose their MFA pass', async () => {
    const user = await newUser();
    const { client } = await login(user);
    assertError(await client.delete('/current-identity/mfa'), 404, 'NOT_FOUND');
    const { secret, recoveryCodes } = await enrollAndVerify(client);
    assertError(await client.delete('/current-identity/mfa'), 400, 'MFA_INVALID_TOKEN');
    assertError(await client.delete('/current-identity/mfa', { headers: { 'mfa-validation-code': wrongCode(secret) } }), 400, 'MFA_INVALID_TOKEN');
    assertEmptyOk(await client.delete('/current-identity/mfa', { headers: { 'mfa-validation-code': totpFor(secret) } }));
    assertError(await client.get('/current-identity/mfa'), 404, 'NOT_FOUND');
    assert.equal((await tc.mgmt.get(`/identities/${user.id}`)).body.data.isMfaEnabled, false);
    const rows = await tc.controller.store.all<{ mfa_passed_at: string | null }>('SELECT mfa_passed_at FROM api_sessions WHERE identity_id = ?', [user.id]);
    assert.ok(rows.length > 0 && rows.every((r) => r.mfa_passed_at === null));
    const next = await login(user);
    assert.deepEqual(next.body.data.authQueries, []);

    // A recovery code also removes a verified enrollment.
    const second = await enrollAndVerify(client);
    assert.notDeepEqual(second.recoveryCodes, recoveryCodes);
    assertEmptyOk(await client.delete('/current-identity/mfa', { headers: { 'mfa-validation-code': second.recoveryCodes[0] } }));
  });

  it('an unverified enrollment is removed with a blank code', async () => {
    const user = await newUser();
    const { client } = await login(user, 'management');
    await enroll(client);
    assertEmptyOk(await client.delete('/current-identity/mfa', { headers: { 'mfa-validation-code': '' } }));
    assertError(await client.get('/current-identity/mfa'), 404, 'NOT_FOUND');
  });

  it('an administrator removes any enrollment; others may not', async () => {
    const user = await newUser();
    const { client } = await login(user);
    await enrollAndVerify(client);
    const otherUser = await newUser();
    const other = await login(otherUser, 'management');
    assertError(await other.client.delete(`/identities/${user.id}/mfa`), 401, 'UNAUTHORIZED');
    assertError(await tc.mgmt.delete('/identities/no-such-identity/mfa'), 404, 'NOT_FOUND');
    const res = await tc.mgmt.delete(`/identities/${user.id}/mfa`);
    assertEmptyOk(res);
    assertMatchesReference('management', 'DELETE', '/identities/{id}/mfa', 200, res.body);
    // Existing sessions are untouched; new logins are full.
    assert.equal((await client.get('/current-identity')).status, 200);
    assertError(await client.get('/current-identity/mfa'), 404, 'NOT_FOUND');
    assert.deepEqual((await login(user)).body.data.authQueries, []);
    // Unverified enrollments are removed too.
    await enroll(client);
    assertEmptyOk(await tc.mgmt.delete(`/identities/${user.id}/mfa`));
    assertError(await client.get('/current-identity/mfa'), 404, 'NOT_FOUND');
  });
});
