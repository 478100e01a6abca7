/**
 * OIDC logins under the rules of `POST /authenticate`: an external JWT as the login step, the lockout of an auth
 * policy counting failed OIDC password logins, posture data kept per JWT session, and a re-enrollment ending the JWT
 * sessions of the identity.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName } from '../../support/controller.ts';
import { createAuthPolicy, createIdentity, createRecord, createUserWithPassword } from '../../support/factories.ts';
import { claimsFor, createTestSigner } from '../../support/external-signer.ts';
import { authorize, bearer, claimsOf, loginStep, oidcLogin, tokenRequest } from '../../support/oidc.ts';

describe('OIDC logins under the rules of authenticate', async () => {
  const tc = await startTestController();
  const http = tc.http;

  it('logs in with an external JWT as the login step (ext-jwt), and refuses one of an unknown signer', async () => {
    const idp = await createTestSigner('oidc-idp');
    const issuer = uniqueName('https://oidc-idp.example.com');
    const signer = await tc.mgmt.post('/external-jwt-signers', { name: uniqueName('signer'), issuer, audience: 'oidc-tests', certPem: idp.certPem, enabled: true });
    assert.equal(signer.status, 201, signer.text);
    const identityId = await createIdentity(tc.mgmt);
    const jwt = await idp.sign(claimsFor(issuer, 'oidc-tests', identityId));
    const tokens = await oidcLogin(http, { jwt });
    const access = claimsOf(tokens.accessToken);
    assert.equal(access.sub, identityId);
    assert.deepEqual(access.amr, ['ext-jwt']);
    assert.equal((await http.get('/edge/client/v1/current-identity', bearer(tokens.accessToken))).status, 200);

    const stranger = await createTestSigner('stranger');
    const forged = await stranger.sign(claimsFor(issuer, 'oidc-tests', identityId));
    const started = await authorize(http, {}, { method: 'ext-jwt' });
    const refused = await loginStep(http, 'ext-jwt', started.id, { jwt: forged });
    assert.equal(refused.status, 401, refused.text);
    assert.equal(refused.body.code, 'UNAUTHORIZED');
  });

  it('counts failed OIDC password logins toward the lockout of the auth policy', async () => {
    const u = await createUserWithPassword(tc, { authPolicyId: await createAuthPolicy(tc.mgmt, { maxAttempts: 2, lockoutDurationMinutes: 5 }) });
    for (let i = 0; i < 2; i++) {
      const started = await authorize(http, {}, { method: 'password' });
      assert.equal((await loginStep(http, 'password', started.id, { username: u.username, password: 'wrong-password-1' })).status, 401);
    }
    const started = await authorize(http, {}, { method: 'password' });
    const locked = await loginStep(http, 'password', started.id, { username: u.username, password: u.password });
    assert.equal(locked.status, 401, `the right password is refused while locked out: ${locked.text}`);
    assert.equal(locked.headers.location, undefined);
    // zt-session logins see the same lockout.
    assert.equal((await http.post('/edge/client/v1/authenticate?method=password', { username: u.username, password: u.password })).status, 401);
  });

  it('keeps posture data per JWT session: a Dial session is refused until the posture response is sent with the Bearer token', async () => {
    await createRecord(tc.mgmt, '/edge-routers', { name: uniqueName('er'), roleAttributes: ['oidc-pe'] });
    await createRecord(tc.mgmt, '/edge-router-policies', { name: uniqueName('erp'), semantic: 'AnyOf', identityRoles: ['#all'], edgeRouterRoles: ['#oidc-pe'] });
    await createRecord(tc.mgmt, '/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AnyOf', serviceRoles: ['#all'], edgeRouterRoles: ['#oidc-pe'] });
    const u = await createUserWithPassword(tc);
    const serviceId = await createRecord(tc.mgmt, '/services', { name: uniqueName('svc'), encryptionRequired: true });
    const checkId = await createRecord(tc.mgmt, '/posture-checks', { name: uniqueName('pc'), typeId: 'OS', operatingSystems: [{ type: 'Linux', versions: ['>=5.0.0'] }] });
    await createRecord(tc.mgmt, '/service-policies', {
      name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${u.id}`], serviceRoles: [`@${serviceId}`], postureCheckRoles: [`@${checkId}`],
    });
    const tokens = await oidcLogin(http, { username: u.username, password: u.password });
    const auth = bearer(tokens.accessToken);
    const refused = await http.post('/edge/client/v1/sessions', { serviceId, type: 'Dial' }, auth);
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.error.code, 'INVALID_POSTURE');
    const response = await http.post('/edge/client/v1/posture-response', { id: checkId, typeId: 'OS', type: 'Linux', version: '6.1.0' }, auth);
    assert.equal(response.status, 201, response.text);
    const allowed = await http.post('/edge/client/v1/sessions', { serviceId, type: 'Dial' }, auth);
    assert.equal(allowed.status, 201, allowed.text);
    // A service session of a JWT API session: routers take it as such (z_leg false).
    assert.equal(claimsOf(allowed.body.data.token).z_leg, false);
    assert.equal(claimsOf(allowed.body.data.token).z_asid, claimsOf(tokens.accessToken).z_asid);
  });

  it('ends the JWT sessions of an identity whose authenticator is re-enrolled', async () => {
    const u = await createUserWithPassword(tc);
    const tokens = await oidcLogin(http, { username: u.username, password: u.password });
    const authenticators = await tc.mgmt.get(`/identities/${u.id}/authenticators`);
    const authenticatorId = authenticators.body.data[0].id as string;
    const reEnrolled = await tc.mgmt.post(`/authenticators/${authenticatorId}/re-enroll`, { expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
    assert.equal(reEnrolled.status, 201, reEnrolled.text);
    assert.equal((await http.get('/edge/client/v1/current-api-session', bearer(tokens.accessToken))).status, 401);
    const refresh = await tokenRequest(http, { grant_type: 'refresh_token', refresh_token: tokens.refreshToken }, 'native');
    assert.equal(refresh.body.error, 'invalid_grant');
  });
});
