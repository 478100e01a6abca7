/**
 * JWT API sessions after the login: what the Edge APIs show of them, and everything that ends them — logout with
 * the Bearer token, an administrator deleting the API session, disabling or deleting the identity, revoking a
 * token, end session — refusing the access token at the next request and the refresh token at the next refresh.
 * Also the TOTP token of JWT sessions, the expired-token challenge, and `/version`'s OIDC_AUTH switch.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController } from '../../support/controller.ts';
import { createAuthPolicy, createUserWithPassword } from '../../support/factories.ts';
import { manualClock } from '../../support/manual-clock.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { SDK_REDIRECT, authorize, bearer, callbackCode, claimsOf, form, loginStep, oidcLogin, tokenRequest, type OidcTokens, enrollVerifiedMfa, totpFor } from '../../support/oidc.ts';


describe('JWT API sessions', async () => {
  const tc = await startTestController();
  const http = tc.http;

  async function user(): Promise<{ id: string; tokens: OidcTokens }> {
    const u = await createUserWithPassword(tc);
    return { id: u.id, tokens: await oidcLogin(http, { username: u.username, password: u.password }) };
  }

  async function assertEnded(tokens: OidcTokens): Promise<void> {
    const res = await http.get('/edge/client/v1/current-api-session', bearer(tokens.accessToken));
    assert.equal(res.status, 401, res.text);
    assert.match(String(res.headers['www-authenticate']), /^Bearer realm="openziti-oidc" error="invalid"/);
    const refresh = await tokenRequest(http, { grant_type: 'refresh_token', refresh_token: tokens.refreshToken }, 'native');
    assert.equal(refresh.status, 400, refresh.text);
    assert.equal(refresh.body.error, 'invalid_grant');
    assert.equal(refresh.body.access_token, undefined);
  }

  it('shows the session as the reference schema describes it, on both APIs', async () => {
    const { tokens } = await user();
    for (const api of ['client', 'management'] as const) {
      const res = await http.get(`/edge/${api}/v1/current-api-session`, bearer(tokens.accessToken));
      assert.equal(res.status, 200, res.text);
      assertMatchesReference(api, 'GET', '/current-api-session', 200, res.body);
      assert.equal(res.body.data.expiresAt, new Date(claimsOf(tokens.accessToken).exp * 1000).toISOString());
    }
  });

  it('ends with DELETE /current-api-session sent with the Bearer token', async () => {
    const { tokens } = await user();
    const res = await http.delete('/edge/client/v1/current-api-session', bearer(tokens.accessToken));
    assert.equal(res.status, 200, res.text);
    await assertEnded(tokens);
  });

  it('ends when an administrator deletes the API session', async () => {
    const { tokens } = await user();
    const res = await tc.mgmt.delete(`/api-sessions/${claimsOf(tokens.accessToken).z_asid}`);
    assert.equal(res.status, 200, res.text);
    await assertEnded(tokens);
  });

  it('ends when the identity is disabled, and when it is deleted', async () => {
    const a = await user();
    assert.equal((await tc.mgmt.post(`/identities/${a.id}/disable`, { durationMinutes: 0 })).status, 200);
    await assertEnded(a.tokens);
    const b = await user();
    assert.equal((await tc.mgmt.delete(`/identities/${b.id}`)).status, 200);
    await assertEnded(b.tokens);
  });

  it('ends when a token of the login is revoked, and at end_session', async () => {
    const a = await user();
    const revoked = await http.post('/oidc/revoke', undefined, { rawBody: form({ token: a.tokens.refreshToken, client_id: 'native' }), contentType: 'application/x-www-form-urlencoded' });
    assert.equal(revoked.status, 200, revoked.text);
    await assertEnded(a.tokens);
    // An unknown token is not an error (RFC 7009).
    const unknown = await http.post('/oidc/revoke', undefined, { rawBody: form({ token: 'nothing', client_id: 'native' }), contentType: 'application/x-www-form-urlencoded' });
    assert.equal(unknown.status, 200);

    const b = await user();
    const out = await http.get(`/oidc/end_session?${form({ id_token_hint: b.tokens.idToken, post_logout_redirect_uri: 'http://127.0.0.1:4455/auth/logout', state: 'st' })}`);
    assert.equal(out.status, 302, out.text);
    assert.equal(String(out.headers.location), 'http://127.0.0.1:4455/auth/logout?state=st');
    await assertEnded(b.tokens);
    const elsewhere = await http.get(`/oidc/end_session?${form({ post_logout_redirect_uri: 'https://evil.example/out' })}`);
    assert.equal(String(elsewhere.headers.location), '/oidc/logged-out');
  });

  it('follows a changed auth policy: a policy that now requires TOTP makes the session partial, as a zt-session', async () => {
    const { id, tokens } = await user();
    const policyId = await createAuthPolicy(tc.mgmt, { requireTotp: true });
    assert.equal((await http.get('/edge/client/v1/services', bearer(tokens.accessToken))).status, 200);
    assert.equal((await tc.mgmt.patch(`/identities/${id}`, { authPolicyId: policyId })).status, 200);
    assert.equal((await http.get('/edge/client/v1/services', bearer(tokens.accessToken))).status, 401);
    const current = await http.get('/edge/client/v1/current-api-session', bearer(tokens.accessToken));
    assert.equal(current.status, 200);
    assert.equal(current.body.data.authQueries[0].typeId, 'MFA');
    const refresh = await tokenRequest(http, { grant_type: 'refresh_token', refresh_token: tokens.refreshToken }, 'native');
    assert.equal(refresh.body.error, 'invalid_grant', 'no new tokens while a factor is pending');
  });

  it('issues TOTP tokens to JWT sessions only', async () => {
    const u = await createUserWithPassword(tc);
    const zt = tc.http.as({ token: u.token });
    const secret = await enrollVerifiedMfa(tc.http, u.token);
    const legacy = await zt.post('/edge/client/v1/current-api-session/totp-token', { code: totpFor(secret) });
    assert.equal(legacy.status, 400, legacy.text);
    assert.equal(legacy.body.error.code, 'INVALID_BACKING_TOKEN_TYPE');

    // The JWT login asks for TOTP (the identity has MFA) and finishes with it.
    const { authorize, loginStep, callbackCode, SDK_REDIRECT } = await import('../../support/oidc.ts');
    const started = await authorize(http, {}, { method: 'password' });
    assert.equal((await loginStep(http, 'password', started.id, { username: u.username, password: u.password })).status, 200);
    assert.equal((await http.post('/oidc/login/totp', { id: started.id, code: totpFor(secret) })).status, 302);
    const code = await callbackCode(http, started.id, started.state);
    const t = await tokenRequest(http, { grant_type: 'authorization_code', client_id: 'native', code, code_verifier: started.pkce.verifier, redirect_uri: SDK_REDIRECT });
    assert.equal(t.status, 200, t.text);
    const res = await http.post('/edge/client/v1/current-api-session/totp-token', { code: totpFor(secret) }, bearer(t.body.access_token));
    assert.equal(res.status, 200, res.text);
    const claims = claimsOf(res.body.data.token);
    assert.equal(claims.z_t, 't');
    assert.equal(claims.z_asid, claimsOf(t.body.access_token).z_asid);
    assert.equal(claims.sub, u.id);
    const wrong = await http.post('/edge/client/v1/current-api-session/totp-token', { code: totpFor(secret) === '000000' ? '000001' : '000000' }, bearer(t.body.access_token));
    assert.equal(wrong.status, 400, wrong.text);
  });

  it('refuses an access token that is no access token of ours', async () => {
    const { tokens } = await user();
    for (const token of [tokens.refreshToken, tokens.idToken, 'not-a-jwt']) {
      const res = await http.get('/edge/client/v1/current-api-session', bearer(token));
      assert.equal(res.status, 401, token);
    }
  });
});

describe('JWT API session expiry', async () => {
  const clock = manualClock();
  const tc = await startTestController({ start: { clock }, env: { PORTCULLIS_OIDC_ACCESS_TOKEN_SECONDS: '60', PORTCULLIS_OIDC_REFRESH_TOKEN_SECONDS: '120' } });

  it('answers an expired access token with the expired challenge, and refreshes until the refresh token expires', async () => {
    const u = await createUserWithPassword(tc);
    const tokens = await oidcLogin(tc.http, { username: u.username, password: u.password });
    assert.equal(tokens.expiresIn, 60);
    clock.advance(61_000);
    const res = await tc.http.get('/edge/client/v1/current-api-session', bearer(tokens.accessToken));
    assert.equal(res.status, 401);
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="openziti-oidc" error="expired" error_description="token expired"');
    const refreshed = await tokenRequest(tc.http, { grant_type: 'refresh_token', refresh_token: tokens.refreshToken }, 'native');
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.equal((await tc.http.get('/edge/client/v1/current-api-session', bearer(refreshed.body.access_token))).status, 200);
    clock.advance(121_000);
    const late = await tokenRequest(tc.http, { grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token }, 'native');
    assert.equal(late.status, 400);
    assert.equal(late.body.error, 'invalid_grant');
  });

  it('refuses a code redeemed after its auth request expired (ten minutes)', async () => {
    const u = await createUserWithPassword(tc);
    const started = await authorize(tc.http, {}, { method: 'password' });
    assert.equal((await loginStep(tc.http, 'password', started.id, { username: u.username, password: u.password })).status, 302);
    const code = await callbackCode(tc.http, started.id, started.state);
    clock.advance(10 * 60_000 + 1000);
    const res = await tokenRequest(tc.http, { grant_type: 'authorization_code', client_id: 'native', code, code_verifier: started.pkce.verifier, redirect_uri: SDK_REDIRECT });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error, 'invalid_grant');
    assert.equal(res.body.access_token, undefined);
  });
});

describe('OIDC_AUTH in /version', async () => {
  it('is listed unless switched off', async () => {
    const off = await startTestController({ env: { PORTCULLIS_OIDC_AUTH: 'false' } });
    assert.deepEqual((await off.http.get('/version')).body.data.capabilities, []);
    assert.equal((await off.http.get('/version')).body.data.apiVersions['edge-oidc'], undefined);
    const on = await startTestController();
    const v = await on.http.get('/edge/client/v1/version');
    assert.deepEqual(v.body.data.capabilities, ['OIDC_AUTH']);
    assert.equal(v.body.data.apiVersions['edge-oidc'].v1.path, '/oidc');
    await off.stop();
    await on.stop();
  });
});
