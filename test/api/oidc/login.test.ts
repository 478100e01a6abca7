/**
 * The OIDC login under /oidc as upstream v2 clients drive it: discovery and keys, authorize with PKCE, the password,
 * certificate and TOTP login steps, the callback, the token endpoint's three grants, and the tokens' claims. Bad
 * input gets OAuth error bodies and never a token.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compactVerify, importJWK } from 'jose';
import { ADMIN_PASSWORD, ADMIN_USER, startTestController } from '../../support/controller.ts';
import { createAuthPolicy, createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { csrPem, newKey, sha1Of } from '../../support/router-certs.ts';
import { parseCsr } from '../../../src/pki/csr.ts';
import {
  SDK_REDIRECT,
  authorize,
  bearer,
  callbackCode,
  claimsOf,
  form,
  headerOf,
  loginStep,
  oidcLogin,
  tokenRequest,
  enrollVerifiedMfa,
  totpFor,
} from '../../support/oidc.ts';

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const REFRESH_TYPE = 'urn:ietf:params:oauth:token-type:refresh_token';
const ACCESS_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const ID_TYPE = 'urn:ietf:params:oauth:token-type:id_token';


function assertOAuthError(res: { status: number; body: any; text: string }, status: number, error: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.error, error, res.text);
  assert.equal(typeof res.body.error_description, 'string');
  assert.equal(res.body.access_token, undefined);
}

describe('OIDC provider', async () => {
  const tc = await startTestController();
  const http = tc.http;

  it('serves discovery and a key set that verifies the tokens it issues', async () => {
    const d = await http.get('/oidc/.well-known/openid-configuration');
    assert.equal(d.status, 200, d.text);
    const issuer = `https://127.0.0.1:${tc.port}/oidc`;
    assert.equal(d.body.issuer, issuer);
    assert.equal(d.body.authorization_endpoint, `${issuer}/authorize`);
    assert.equal(d.body.token_endpoint, `${issuer}/oauth/token`);
    assert.deepEqual(d.body.code_challenge_methods_supported, ['S256']);
    assert.ok(d.body.grant_types_supported.includes(EXCHANGE));
    const keys = await http.get('/oidc/keys');
    assert.equal(keys.status, 200);
    const u = await createUserWithPassword(tc);
    const tokens = await oidcLogin(http, { username: u.username, password: u.password });
    const kid = headerOf(tokens.accessToken).kid;
    const jwk = keys.body.keys.find((k: { kid: string }) => k.kid === kid);
    assert.ok(jwk, 'the access token names a key of the key set');
    await compactVerify(tokens.accessToken, await importJWK(jwk, jwk.alg));
    assert.equal(kid, tc.controller.pki.serverCertFingerprint);
  });

  it('logs in with a password: access, refresh and ID token with upstream claims; Bearer works on both APIs', async () => {
    const u = await createUserWithPassword(tc);
    const started = await authorize(http, {}, { method: 'password' });
    const page = await http.get(`/oidc/login/username?authRequestID=${started.id}`, { headers: { accept: '*/*' } });
    assert.equal(page.status, 200);
    assert.equal(page.headers['auth-request-id'], started.id);
    const step = await loginStep(http, 'password', started.id, { username: u.username, password: u.password }, { envOs: 'linux', sdkAppID: 'app-1', sdkVersion: 'v1.7.0' });
    assert.equal(step.status, 302, step.text);
    assert.match(String(step.headers.location), /\/oidc\/authorize\/callback\?id=/);
    const code = await callbackCode(http, started.id, started.state);
    const res = await tokenRequest(http, { grant_type: 'authorization_code', client_id: 'native', code_verifier: started.pkce.verifier, code, redirect_uri: SDK_REDIRECT });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.token_type, 'Bearer');
    assert.equal(res.body.expires_in, 1800);
    assert.equal(res.body.scope, 'openid offline_access');
    assert.equal(res.headers['cache-control'], 'no-store');
    const access = claimsOf(res.body.access_token);
    assert.equal(access.z_t, 'a');
    assert.equal(access.sub, u.id);
    assert.deepEqual(access.aud, ['native']);
    assert.equal(access.exp - access.iat, 1800);
    assert.deepEqual(access.amr, ['password']);
    assert.equal(typeof access.z_asid, 'string');
    assert.equal(access.z_aid, 'native');
    assert.equal(access.z_cfs, null);
    assert.deepEqual(access.z_sdk, { appId: 'app-1', version: 'v1.7.0' });
    assert.deepEqual(access.z_env, { os: 'linux' });
    assert.equal(access.z_ia, undefined);
    const refresh = claimsOf(res.body.refresh_token);
    assert.equal(refresh.z_t, 'r');
    assert.equal(refresh.exp - refresh.iat, 24 * 3600);
    assert.equal(refresh.z_asid, access.z_asid);
    const id = claimsOf(res.body.id_token);
    assert.equal(id.nonce, started.nonce);
    assert.equal(id.sid, access.z_asid);
    assert.equal(id.sub, u.id);
    assert.equal(typeof id.name, 'string');

    const current = await http.get('/edge/client/v1/current-api-session', bearer(res.body.access_token));
    assert.equal(current.status, 200, current.text);
    assert.equal(current.body.data.id, access.z_asid);
    assert.equal(current.body.data.identityId, u.id);
    assert.equal(current.body.data.token, res.body.access_token);
    const services = await http.get('/edge/client/v1/services', bearer(res.body.access_token));
    assert.equal(services.status, 200, services.text);
    // A non-admin is refused on the management API, as with a zt-session; the session is listed there for admins.
    assert.equal((await http.get('/edge/management/v1/identities', bearer(res.body.access_token))).status, 401);
    const listed = await tc.mgmt.get(`/api-sessions/${access.z_asid}`);
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body.data.identityId, u.id);
  });

  it('gives an admin the management API with a Bearer token', async () => {
    const t = await oidcLogin(http, { username: ADMIN_USER, password: ADMIN_PASSWORD });
    assert.equal(claimsOf(t.accessToken).z_ia, true);
    const res = await http.get('/edge/management/v1/identities?limit=1', bearer(t.accessToken));
    assert.equal(res.status, 200, res.text);
  });

  it('logs in with a client certificate; z_cfs holds its fingerprint', async () => {
    const identityId = await createIdentity(tc.mgmt);
    const key = await newKey();
    const csr = await parseCsr(await csrPem(key, { subject: `CN=${identityId}` }));
    const issued = await tc.controller.pki.issuer.issueClientCertificate(csr);
    assert.equal((await tc.mgmt.post('/authenticators', { method: 'cert', identityId, certPem: issued.certPem })).status, 201);
    const tokens = await oidcLogin(http, { cert: issued.certPem, key: key.keyPem });
    const access = claimsOf(tokens.accessToken);
    assert.deepEqual(access.amr, ['cert']);
    assert.equal(access.sub, identityId);
    // The leaf first, then the chain the connection presented.
    assert.equal(access.z_cfs[0], sha1Of(issued.certPem));
    assert.equal((await http.get('/edge/client/v1/current-identity', bearer(tokens.accessToken))).status, 200);
  });

  it('refreshes with the refresh grant and with token exchange (the subject stays usable for the ID token)', async () => {
    const u = await createUserWithPassword(tc);
    const t = await oidcLogin(http, { username: u.username, password: u.password });
    const r1 = await tokenRequest(http, { grant_type: 'refresh_token', refresh_token: t.refreshToken }, 'native');
    assert.equal(r1.status, 200, r1.text);
    assert.equal(claimsOf(r1.body.access_token).z_asid, claimsOf(t.accessToken).z_asid);
    // The Go SDK's two exchanges with one refresh token.
    const fields = { grant_type: EXCHANGE, subject_token: r1.body.refresh_token, subject_token_type: REFRESH_TYPE, actor_token: '', actor_token_type: '', scope: '' };
    const x1 = await tokenRequest(http, { ...fields, requested_token_type: REFRESH_TYPE }, 'native');
    assert.equal(x1.status, 200, x1.text);
    assert.equal(x1.body.issued_token_type, REFRESH_TYPE);
    assert.equal(x1.body.token_type, 'Bearer');
    assert.equal(claimsOf(x1.body.access_token).z_t, 'a');
    assert.equal(claimsOf(x1.body.refresh_token).z_t, 'r');
    const x2 = await tokenRequest(http, { ...fields, requested_token_type: ID_TYPE }, 'native');
    assert.equal(x2.status, 200, x2.text);
    assert.equal(x2.body.token_type, 'N_A');
    assert.equal(claimsOf(x2.body.access_token).sub, u.id);
    const x3 = await tokenRequest(http, { grant_type: EXCHANGE, subject_token: x1.body.access_token, subject_token_type: ACCESS_TYPE, requested_token_type: ACCESS_TYPE }, 'native');
    assert.equal(x3.status, 200, x3.text);
    assert.equal((await http.get('/edge/client/v1/current-api-session', bearer(x3.body.access_token))).status, 200);
    // An access token can not become a refresh token.
    assertOAuthError(await tokenRequest(http, { grant_type: EXCHANGE, subject_token: x1.body.access_token, subject_token_type: ACCESS_TYPE }, 'native'), 400, 'invalid_request');
  });

  it('asks for TOTP when the identity has MFA, and finishes the login with a code', async () => {
    const u = await createUserWithPassword(tc);
    const secret = await enrollVerifiedMfa(tc.http, u.token);

    const started = await authorize(http, {}, { method: 'password' });
    const step = await loginStep(http, 'password', started.id, { username: u.username, password: u.password });
    assert.equal(step.status, 200, step.text);
    assert.equal(step.headers['totp-required'], 'true');
    const query = step.body.authQueries[0];
    assert.equal(query.typeId, 'TOTP');
    assert.equal(query.httpUrl, './oidc/login/totp');
    assert.equal(query.isTotpEnrolled, true);
    // The callback refuses while TOTP is pending.
    const early = await http.get(`/oidc/authorize/callback?id=${started.id}`);
    assert.equal(early.status, 302);
    assert.equal(new URL(String(early.headers.location)).searchParams.get('error'), 'interaction_required');
    const wrong = await http.post('/oidc/login/totp', { id: started.id, code: '000000' === totpFor(secret) ? '000001' : '000000' });
    assert.equal(wrong.status, 400, wrong.text);
    assert.equal(wrong.body.code, 'INVALID TOTP CODE');
    const queries = await http.get(`/oidc/login/auth-queries?id=${started.id}`);
    assert.equal(queries.status, 200);
    assert.equal(queries.body.authQueries.length, 1);
    const right = await http.post('/oidc/login/totp', { id: started.id, code: totpFor(secret) });
    assert.equal(right.status, 302, right.text);
    const code = await callbackCode(http, started.id, started.state);
    const res = await tokenRequest(http, { grant_type: 'authorization_code', client_id: 'native', code_verifier: started.pkce.verifier, code, redirect_uri: SDK_REDIRECT });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(claimsOf(res.body.access_token).amr, ['password', 'totp']);
    const current = await http.get('/edge/client/v1/current-api-session', bearer(res.body.access_token));
    assert.equal(current.status, 200);
    assert.equal(current.body.data.isMfaComplete, true);
    assert.deepEqual(current.body.data.authQueries, []);
  });

  it('enrolls TOTP during a login that a policy requires it for', async () => {
    const u = await createUserWithPassword(tc, { authPolicyId: await createAuthPolicy(tc.mgmt, { requireTotp: true }) });
    const started = await authorize(http, {}, { method: 'password' });
    const step = await loginStep(http, 'password', started.id, { username: u.username, password: u.password });
    assert.equal(step.status, 200, step.text);
    assert.equal(step.body.authQueries[0].isTotpEnrolled, false);
    const enroll = await http.post('/oidc/login/totp/enroll', { id: started.id });
    assert.equal(enroll.status, 201, enroll.text);
    assert.equal(enroll.body.isVerified, false);
    const secret = new URL(enroll.body.provisioningUrl).searchParams.get('secret')!;
    const verified = await http.post('/oidc/login/totp/enroll/verify', { id: started.id, code: totpFor(secret) });
    assert.equal(verified.status, 302, verified.text);
    await callbackCode(http, started.id, started.state);
  });

  it('refuses bad input with OAuth errors and never gives a token', async () => {
    const u = await createUserWithPassword(tc);
    const q = (o: Record<string, string>) =>
      form({ client_id: 'native', response_type: 'code', scope: 'openid', state: 's', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256', redirect_uri: SDK_REDIRECT, ...o });
    assertOAuthError(await http.get(`/oidc/authorize?${q({ client_id: 'nobody' })}`), 400, 'invalid_client');
    assertOAuthError(await http.get(`/oidc/authorize?${q({ redirect_uri: 'https://evil.example/cb' })}`), 400, 'invalid_request');
    const noPkce = await http.get(`/oidc/authorize?${q({ code_challenge: '' })}`);
    assert.equal(noPkce.status, 302);
    assert.equal(new URL(String(noPkce.headers.location)).searchParams.get('error'), 'invalid_request');
    const plain = await http.get(`/oidc/authorize?${q({ code_challenge_method: 'plain' })}`);
    assert.equal(new URL(String(plain.headers.location)).searchParams.get('error'), 'invalid_request');
    // Any loopback port is fine for a loopback redirect.
    assert.equal((await http.get(`/oidc/authorize?${q({ redirect_uri: 'http://127.0.0.1:20314/auth/callback' })}`)).status, 302);

    // Wrong password: a bare Edge error, 401.
    const started = await authorize(http, {}, { method: 'password' });
    const bad = await loginStep(http, 'password', started.id, { username: u.username, password: 'wrong-password-1' });
    assert.equal(bad.status, 401, bad.text);
    assert.equal(bad.body.code, 'INVALID_AUTH');
    // Unknown auth request.
    assert.equal((await loginStep(http, 'password', 'no-such-request', { username: u.username, password: u.password })).status, 401);

    // Wrong verifier, then the code is spent.
    const s2 = await authorize(http, {}, { method: 'password' });
    assert.equal((await loginStep(http, 'password', s2.id, { username: u.username, password: u.password })).status, 302);
    const code = await callbackCode(http, s2.id, s2.state);
    const base = { grant_type: 'authorization_code', client_id: 'native', code, redirect_uri: SDK_REDIRECT };
    assertOAuthError(await tokenRequest(http, { ...base, code_verifier: 'not-the-verifier-' + 'x'.repeat(30) }), 400, 'invalid_grant');
    assertOAuthError(await tokenRequest(http, { ...base, code_verifier: s2.pkce.verifier }), 400, 'invalid_grant');

    // Code used twice; redirect URI changed; other client.
    const s3 = await authorize(http, {}, { method: 'password' });
    assert.equal((await loginStep(http, 'password', s3.id, { username: u.username, password: u.password })).status, 302);
    const code3 = await callbackCode(http, s3.id, s3.state);
    assertOAuthError(await tokenRequest(http, { grant_type: 'authorization_code', client_id: 'native', code: code3, code_verifier: s3.pkce.verifier, redirect_uri: 'http://localhost:9999/auth/callback' }), 400, 'invalid_grant');
    const s4 = await authorize(http, {}, { method: 'password' });
    assert.equal((await loginStep(http, 'password', s4.id, { username: u.username, password: u.password })).status, 302);
    const code4 = await callbackCode(http, s4.id, s4.state);
    const ok = await tokenRequest(http, { grant_type: 'authorization_code', client_id: 'native', code: code4, code_verifier: s4.pkce.verifier, redirect_uri: SDK_REDIRECT });
    assert.equal(ok.status, 200, ok.text);
    assertOAuthError(await tokenRequest(http, { grant_type: 'authorization_code', client_id: 'native', code: code4, code_verifier: s4.pkce.verifier, redirect_uri: SDK_REDIRECT }), 400, 'invalid_grant');

    // Unknown client, a secret for a public client, unknown grant.
    assertOAuthError(await tokenRequest(http, { grant_type: 'refresh_token', refresh_token: ok.body.refresh_token, client_id: 'other' }), 401, 'invalid_client');
    const withSecret = await http.post('/oidc/oauth/token', undefined, {
      rawBody: form({ grant_type: 'refresh_token', refresh_token: ok.body.refresh_token }),
      contentType: 'application/x-www-form-urlencoded',
      headers: { authorization: `Basic ${Buffer.from('native:secret').toString('base64')}` },
    });
    assertOAuthError(withSecret, 401, 'invalid_client');
    assertOAuthError(await tokenRequest(http, { grant_type: 'password', client_id: 'native' }), 400, 'unsupported_grant_type');

    // Tampered, alg none and HS256 tokens.
    const [h, p, s] = ok.body.refresh_token.split('.');
    const claims = claimsOf(ok.body.refresh_token);
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...claims, sub: 'someone-else' })).toString('base64url')}.${s}`;
    assertOAuthError(await tokenRequest(http, { grant_type: 'refresh_token', refresh_token: tampered }, 'native'), 400, 'invalid_grant');
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${p}.`;
    assertOAuthError(await tokenRequest(http, { grant_type: 'refresh_token', refresh_token: none }, 'native'), 400, 'invalid_grant');
    const { SignJWT } = await import('jose');
    const hs = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: headerOf(ok.body.access_token).kid }).sign(new TextEncoder().encode('x'.repeat(32)));
    assertOAuthError(await tokenRequest(http, { grant_type: 'refresh_token', refresh_token: hs }, 'native'), 400, 'invalid_grant');
    for (const token of [tampered, none, hs]) {
      const res = await http.get('/edge/client/v1/current-api-session', bearer(token.replace(/"z_t":"r"/, '"z_t":"a"')));
      assert.equal(res.status, 401);
    }
    // An access token is not a refresh token.
    assertOAuthError(await tokenRequest(http, { grant_type: 'refresh_token', refresh_token: ok.body.access_token }, 'native'), 400, 'invalid_grant');
  });
});
