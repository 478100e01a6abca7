/**
 * Token enrollment (`POST /enroll/token` and `POST /enroll?method=token`): an external JWT creates an identity
 * with a network-issued certificate (CSR given) or for ext-jwt login (no CSR). Covers the identity built from
 * the claims (externalId, name, role attributes, auth policy), the certificate (openssl-verified, usable for
 * cert login), the `ziti-token-issuer-id` header, JWKS keys published just before enrolling, and every
 * refusal: invalid, expired, foreign or unsigned tokens, missing claims, disabled signers, modes the signer or
 * auth policy forbid (409), an identity already enrolled (409) and malformed CSRs.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpResponse } from '../../support/client.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertError, assertFieldError } from '../../support/assertions.ts';
import { claimsFor, createTestSigner, insertAuthPolicy, startJwksServer, type TestSigner } from '../../support/external-signer.ts';
import { csrPem, newKey, opensslVerify, pemBlocks, sha1Of } from '../../support/router-certs.ts';

const tc: TestController = await startTestController();
const jwks = await startJwksServer();
after(() => jwks.close());

const AUDIENCE = 'enroll-tests';
const certIdp = await createTestSigner('enroll-cert-idp');
const jwksIdp = await createTestSigner('enroll-jwks-idp');
const CERT_ISSUER = uniqueName('https://enroll-cert-idp.example.com');
const JWKS_ISSUER = uniqueName('https://enroll-jwks-idp.example.com');
jwks.setKeys([await jwksIdp.publicJwk('k1')]);

async function createSigner(body: Record<string, unknown>): Promise<string> {
  const res = await tc.mgmt.post('/external-jwt-signers', { name: uniqueName('signer'), audience: AUDIENCE, enabled: true, useExternalId: true, ...body });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

/** Both modes allowed; name from `/name`, role attributes from `/groups`. */
const certSignerId = await createSigner({
  issuer: CERT_ISSUER, certPem: certIdp.certPem, enrollToCertEnabled: true, enrollToTokenEnabled: true,
  enrollNameClaimsSelector: 'name', enrollAttributeClaimsSelector: '/groups',
});
/** Token mode only; default selectors (name = sub). */
const jwksSignerId = await createSigner({ issuer: JWKS_ISSUER, jwksEndpoint: jwks.url, enrollToTokenEnabled: true });

function certToken(sub: string, extra: Record<string, unknown> = {}, signer: TestSigner = certIdp, issuer = CERT_ISSUER): Promise<string> {
  return signer.sign(claimsFor(issuer, AUDIENCE, sub, { name: uniqueName('enrolled'), ...extra }));
}

function enrollToken(token: string | undefined, body: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<HttpResponse> {
  const h = { ...headers };
  if (token !== undefined) h.authorization = `Bearer ${token}`;
  return tc.http.post('/edge/client/v1/enroll/token', body, { headers: h });
}

function identityByExternalId(externalId: string): Promise<Record<string, any> | undefined> {
  return tc.controller.store.get<Record<string, any>>('SELECT id, name, auth_policy_id, role_attributes FROM identities WHERE external_id = ?', [externalId]);
}

async function identityDetail(id: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/identities/${id}`);
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

async function newCsr(cn = 'token-enrolled'): Promise<{ key: Awaited<ReturnType<typeof newKey>>; csr: string }> {
  const key = await newKey();
  return { key, csr: await csrPem(key, { subject: `CN=${cn}, O=Tests` }) };
}

describe('token enrollment to a certificate', () => {
  it('creates the identity with a network-issued certificate authenticator and answers {cert, ca}', async () => {
    const sub = uniqueName('user');
    const { key, csr } = await newCsr();
    const token = await certToken(sub, { name: `${sub}-name`, groups: ['sales', 'emea', 'sales'] });
    const res = await enrollToken(token, { clientCsr: csr });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers['content-type'], 'application/json');
    assertMatchesReference('client', 'POST', '/enroll/token', 200, res.body);
    const { cert, ca } = res.body.data;
    const chain = pemBlocks(cert);
    assert.equal(chain.length, 2, 'leaf and intermediate');
    assert.equal(pemBlocks(ca).length, 2, 'intermediate and root');
    opensslVerify(cert, tc.ca, 'sslclient');

    const stored = await identityByExternalId(sub);
    assert.ok(stored);
    assert.equal(stored.name, `${sub}-name`);
    assert.equal(stored.auth_policy_id, 'default');
    const d = await identityDetail(stored.id);
    assert.equal(d.externalId, sub);
    assert.deepEqual(d.roleAttributes, ['emea', 'sales']);
    assert.equal(d.authenticators.cert.fingerprint, sha1Of(chain[0]));
    const auths = await tc.mgmt.get(`/authenticators?filter=${encodeURIComponent(`identity = "${stored.id}"`)}`);
    assert.equal(auths.body.data.length, 1);
    assert.equal(auths.body.data[0].method, 'cert');
    assert.equal(auths.body.data[0].isIssuedByNetwork, true);

    // The access index knows the new identity's attributes.
    const roles = await tc.mgmt.get('/identity-role-attributes?limit=500');
    assert.equal(roles.status, 200, roles.text);
    assert.ok(roles.body.data.includes('emea'), roles.text);

    // The certificate logs in over mutual TLS.
    const certClient = createClient(`https://127.0.0.1:${tc.port}/edge/client/v1`, tc.ca, { cert: chain.join(''), key: key.keyPem });
    const login = await certClient.post('/authenticate?method=cert', {});
    assert.equal(login.status, 200, login.text);
    assert.equal(login.body.data.identityId, stored.id);
  });

  it('works through the generic route with the token issuer header naming the signer', async () => {
    const sub = uniqueName('generic');
    const { csr } = await newCsr();
    const res = await tc.http.post('/edge/client/v1/enroll?method=token', { clientCsr: csr }, {
      headers: { authorization: `Bearer ${await certToken(sub)}`, 'ziti-token-issuer-id': certSignerId },
    });
    assert.equal(res.status, 200, res.text);
    assert.ok(res.body.data.cert.includes('BEGIN CERTIFICATE'));
    assert.ok(await identityByExternalId(sub));
  });

  it('refuses a malformed CSR with COULD_NOT_PROCESS_CSR and creates nothing', async () => {
    const sub = uniqueName('badcsr');
    const res = await enrollToken(await certToken(sub), { clientCsr: '-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n' });
    assertError(res, 400, 'COULD_NOT_PROCESS_CSR');
    assert.equal(await identityByExternalId(sub), undefined);
  });
});

describe('token enrollment to a token', () => {
  it('creates only the identity, answers data {}, and the same token then logs in with ext-jwt', async () => {
    const sub = uniqueName('token-user');
    const token = await jwksIdp.sign(claimsFor(JWKS_ISSUER, AUDIENCE, sub), { kid: 'k1' });
    const res = await enrollToken(token);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { data: {}, meta: {} });
    const stored = await identityByExternalId(sub);
    assert.ok(stored);
    assert.equal(stored.name, sub);
    const d = await identityDetail(stored.id);
    assert.deepEqual(d.authenticators, {});
    assert.deepEqual(d.roleAttributes, []);

    const login = await tc.http.post('/edge/client/v1/authenticate?method=ext-jwt', {}, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(login.status, 200, login.text);
    assert.equal(login.body.data.identityId, stored.id);
    assert.equal(login.body.data.authenticatorId, `extJwtId:${jwksSignerId}`);
  });

  it('uses the signer enrollment auth policy for the new identity', async () => {
    const policy = await insertAuthPolicy(tc, { extJwt: { allowed: true, allowedSigners: [] } });
    const idp = await createTestSigner('policy-idp');
    const issuer = uniqueName('https://policy-idp.example.com');
    await createSigner({ issuer, certPem: idp.certPem, enrollToTokenEnabled: true, enrollAuthPolicyId: policy });
    const sub = uniqueName('policy-user');
    const res = await enrollToken(await idp.sign(claimsFor(issuer, AUDIENCE, sub)));
    assert.equal(res.status, 200, res.text);
    assert.equal((await identityByExternalId(sub))?.auth_policy_id, policy);
  });

  it('fetches the JWKS again for a key published just before enrolling', async () => {
    const rotated = await createTestSigner('rotated');
    const warm = await enrollToken(await jwksIdp.sign(claimsFor(JWKS_ISSUER, AUDIENCE, uniqueName('warm')), { kid: 'k1' }));
    assert.equal(warm.status, 200, warm.text);
    jwks.setKeys([await jwksIdp.publicJwk('k1'), await rotated.publicJwk('k2')]);
    const sub = uniqueName('rotated-user');
    const res = await enrollToken(await rotated.sign(claimsFor(JWKS_ISSUER, AUDIENCE, sub), { kid: 'k2' }));
    assert.equal(res.status, 200, res.text);
    assert.ok(await identityByExternalId(sub));
  });
});

describe('token enrollment refusals', () => {
  it('answers 409 ENROLLMENT_IDENTITY_ALREADY_ENROLLED for an externalId that already has an identity', async () => {
    const sub = uniqueName('twice');
    const token = await certToken(sub);
    assert.equal((await enrollToken(token)).status, 200);
    assertError(await enrollToken(token), 409, 'ENROLLMENT_IDENTITY_ALREADY_ENROLLED');
    const { csr } = await newCsr();
    assertError(await enrollToken(token, { clientCsr: csr }), 409, 'ENROLLMENT_IDENTITY_ALREADY_ENROLLED');
  });

  it('answers 409 INVALID_ENROLLMENT_NOT_ALLOWED for a mode the signer or the auth policy does not allow', async () => {
    const { csr } = await newCsr();
    // The JWKS signer allows token mode only.
    const sub = uniqueName('nocert');
    assertError(await enrollToken(await jwksIdp.sign(claimsFor(JWKS_ISSUER, AUDIENCE, sub), { kid: 'k1' }), { clientCsr: csr }), 409, 'INVALID_ENROLLMENT_NOT_ALLOWED');
    assert.equal(await identityByExternalId(sub), undefined);

    // A signer that allows neither mode.
    const idp = await createTestSigner('closed-idp');
    const issuer = uniqueName('https://closed-idp.example.com');
    await createSigner({ issuer, certPem: idp.certPem });
    assertError(await enrollToken(await idp.sign(claimsFor(issuer, AUDIENCE, uniqueName('x')))), 409, 'INVALID_ENROLLMENT_NOT_ALLOWED');

    // The enrollment policy restricts ext-jwt to another signer, and (changed later) forbids certificates.
    const policy = await insertAuthPolicy(tc, { extJwt: { allowed: true, allowedSigners: [certSignerId] } });
    const idp2 = await createTestSigner('restricted-idp');
    const issuer2 = uniqueName('https://restricted-idp.example.com');
    await createSigner({ issuer: issuer2, certPem: idp2.certPem, enrollToTokenEnabled: true, enrollToCertEnabled: true, enrollAuthPolicyId: policy });
    assertError(await enrollToken(await idp2.sign(claimsFor(issuer2, AUDIENCE, uniqueName('y')))), 409, 'INVALID_ENROLLMENT_NOT_ALLOWED');
    const row = (await tc.controller.store.get<{ primary_settings: string }>('SELECT CAST(primary_settings AS TEXT) AS primary_settings FROM auth_policies WHERE id = ?', [policy]))!;
    const primary = JSON.parse(row.primary_settings);
    primary.cert.allowed = false;
    await tc.controller.store.write((tx) => tx.run('UPDATE auth_policies SET primary_settings = ? WHERE id = ?', [JSON.stringify(primary), policy]));
    assertError(await enrollToken(await idp2.sign(claimsFor(issuer2, AUDIENCE, uniqueName('z'))), { clientCsr: csr }), 409, 'INVALID_ENROLLMENT_NOT_ALLOWED');
  });

  it('answers 400 INVALID_ENROLLMENT_TOKEN for missing, foreign, invalid and expired tokens', async () => {
    const sub = uniqueName('invalid');
    const now = Math.floor(Date.now() / 1000);
    const impostor = await createTestSigner('impostor');
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    // Without the header the request itself is invalid: the operation declares Authorization required.
    const missing = await enrollToken(undefined);
    assertFieldError(missing, 'Authorization');
    assert.equal(missing.body.error.cause.reason, 'Authorization in header is required');
    const cases: Array<[string, Promise<HttpResponse>]> = [
      ['not a bearer token', tc.http.post('/edge/client/v1/enroll/token', {}, { headers: { authorization: `Token ${await certToken(sub)}` } })],
      ['not a JWT', enrollToken('opaque-token-value')],
      ['unknown issuer', enrollToken(await certToken(sub, {}, certIdp, 'https://nobody.example.com'))],
      ['expired', enrollToken(await certToken(sub, { exp: now - 5 }))],
      ['not yet valid', enrollToken(await certToken(sub, { nbf: now + 600 }))],
      ['wrong audience', enrollToken(await certToken(sub, { aud: 'elsewhere' }))],
      ['wrong signature', enrollToken(await impostor.sign(claimsFor(CERT_ISSUER, AUDIENCE, sub, { name: 'n' }), { kid: certIdp.fingerprint }))],
      ['unknown kid', enrollToken(await jwksIdp.sign(claimsFor(JWKS_ISSUER, AUDIENCE, sub), { kid: 'never-published' }))],
      ['unsigned', enrollToken(`${b64({ alg: 'none', kid: certIdp.fingerprint })}.${b64(claimsFor(CERT_ISSUER, AUDIENCE, sub, { name: 'n' }))}.`)],
      ['name claim missing', enrollToken(await certIdp.sign(claimsFor(CERT_ISSUER, AUDIENCE, sub)))],
      ['attribute claim of the wrong type', enrollToken(await certToken(sub, { groups: { a: 1 } }))],
      ['empty subject', enrollToken(await certToken(''))],
      ['unknown token issuer id', enrollToken(await certToken(sub), {}, { 'ziti-token-issuer-id': 'nope' })],
      ['token issuer id of another signer', enrollToken(await certToken(sub), {}, { 'ziti-token-issuer-id': jwksSignerId })],
    ];
    for (const [label, pending] of cases) {
      const res = await pending;
      assert.equal(res.status, 400, `${label}: ${res.text}`);
      assert.equal(res.body.error.code, 'INVALID_ENROLLMENT_TOKEN', label);
    }
    assert.equal(await identityByExternalId(sub), undefined);
  });

  it('refuses tokens of a disabled signer, also when named by the token issuer header', async () => {
    const idp = await createTestSigner('disabled-enroll-idp');
    const issuer = uniqueName('https://disabled-enroll-idp.example.com');
    const signerId = await createSigner({ issuer, certPem: idp.certPem, enrollToTokenEnabled: true, enabled: false });
    const token = await idp.sign(claimsFor(issuer, AUDIENCE, uniqueName('d')));
    assertError(await enrollToken(token), 400, 'INVALID_ENROLLMENT_TOKEN');
    assertError(await enrollToken(token, {}, { 'ziti-token-issuer-id': signerId }), 400, 'INVALID_ENROLLMENT_TOKEN');
    assert.equal((await tc.mgmt.patch(`/external-jwt-signers/${signerId}`, { enabled: true })).status, 200);
    assert.equal((await enrollToken(token)).status, 200);
  });
});
