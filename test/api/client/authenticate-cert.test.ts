/**
 * `POST /authenticate?method=cert` over mutual TLS on both APIs: certificates issued by the controller's
 * intermediate (with and without the intermediate presented, which sets improperClientCertChain), by
 * verified auth-enabled third-party CAs (fingerprint and externalId matching, chains through an
 * intermediate CA), and every refusal: no certificate, unknown, untrusted, unverified or auth-disabled CA,
 * deleted CA, expired certificate under a strict auth policy, certificates not allowed, disabled identity.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createIdentity } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertError } from '../../support/assertions.ts';
import { csrPem, newKey, sha1Of } from '../../support/router-certs.ts';
import { createTestCa, issueTestCert, registerCa, trustedCa, verifyCa } from '../../support/third-party-ca.ts';
import { parseCsr } from '../../../src/pki/csr.ts';
import { createClient, type HttpResponse } from '../../support/client.ts';

const tc: TestController = await startTestController();
const DAY = 86400_000;

interface FirstPartyCert {
  identityId: string;
  authenticatorId: string;
  leafPem: string;
  chainPem: string;
  keyPem: string;
}

/** A certificate issued by the controller's intermediate, registered as the identity's cert authenticator. */
async function firstPartyCert(options: { identityId?: string; now?: Date; notAfter?: Date } = {}): Promise<FirstPartyCert> {
  const identityId = options.identityId ?? (await createIdentity(tc.mgmt));
  const key = await newKey();
  const csr = await parseCsr(await csrPem(key, { subject: `CN=${identityId}` }));
  const issued = await tc.controller.pki.issuer.issueClientCertificate(csr, { now: options.now, notAfter: options.notAfter });
  const res = await tc.mgmt.post('/authenticators', { method: 'cert', identityId, certPem: issued.certPem });
  assert.equal(res.status, 201, res.text);
  return { identityId, authenticatorId: res.body.data.id, leafPem: issued.certPem, chainPem: issued.chainPem, keyPem: key.keyPem };
}

function login(cert: string | undefined, key: string | undefined, api: 'client' | 'management' = 'client', body?: unknown): Promise<HttpResponse> {
  return tc.http.post(`/edge/${api}/v1/authenticate?method=cert`, body, { cert, key });
}

function assertSession(res: HttpResponse, api: 'client' | 'management', identityId: string, authenticatorId: string): void {
  assert.equal(res.status, 200, res.text);
  assertMatchesReference(api, 'POST', '/authenticate', 200, res.body);
  assert.equal(res.body.data.identityId, identityId);
  assert.equal(res.body.data.authenticatorId, authenticatorId);
  assert.equal(res.headers['zt-session'], res.body.data.token);
}

async function strictPolicy(primaryCert: { allowed: boolean; allowExpiredCerts: boolean }): Promise<string> {
  const id = uniqueName('policy');
  const primary = {
    cert: primaryCert,
    extJwt: { allowed: true, allowedSigners: [] },
    updb: { allowed: true, lockoutDurationMinutes: 0, maxAttempts: 0, minPasswordLength: 5, requireMixedCase: false, requireNumberChar: false, requireSpecialChar: false },
  };
  const now = new Date().toISOString();
  // Auth policies are read-only over the API in this build, so the test stores one directly.
  await tc.controller.store.write((tx) =>
    tx.run('INSERT INTO auth_policies (id, name, primary_settings, secondary_settings, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)', [
      id,
      id,
      JSON.stringify(primary),
      JSON.stringify({ requireTotp: false, requireExtJwtSigner: null }),
      now,
      now,
    ]),
  );
  return id;
}

describe('controller-issued certificates', () => {
  it('logs in with leaf and intermediate on both APIs; the session works and is not extendable', async () => {
    const cert = await firstPartyCert();
    for (const api of ['client', 'management'] as const) {
      const res = await login(cert.chainPem, cert.keyPem, api);
      assertSession(res, api, cert.identityId, cert.authenticatorId);
      assert.equal(res.body.data.isCertExtendable, false);
      assert.equal('improperClientCertChain' in res.body.data, false);
      const me = await tc.http.get(`/edge/${api}/v1/current-identity`, { token: res.body.data.token });
      assert.equal(me.status, 200, me.text);
      assert.equal(me.body.data.id, cert.identityId);
    }
    // an empty JSON body is accepted too (SDKs send {})
    assertSession(await login(cert.chainPem, cert.keyPem, 'client', {}), 'client', cert.identityId, cert.authenticatorId);
    // the legacy unprefixed path
    const legacy = await tc.http.post('/authenticate?method=cert', undefined, { cert: cert.chainPem, key: cert.keyPem });
    assert.equal(legacy.status, 200, legacy.text);
  });

  it('reports improperClientCertChain when the client leaves out its intermediate', async () => {
    const cert = await firstPartyCert();
    // A client that trusts only the root can not complete its own chain from its trust store (OpenSSL would
    // otherwise send the intermediate on its own), so only the leaf goes out.
    const rootOnly = createClient(`https://127.0.0.1:${tc.port}`, tc.controller.pki.rootCertPem);
    const res = await rootOnly.post('/edge/client/v1/authenticate?method=cert', undefined, { cert: cert.leafPem, key: cert.keyPem });
    assertSession(res, 'client', cert.identityId, cert.authenticatorId);
    assert.equal(res.body.data.improperClientCertChain, true);
    const current = await tc.client.as({ token: res.body.data.token }).get('/current-api-session');
    assert.equal(current.body.data.improperClientCertChain, true, current.text);
    // with the intermediate presented the chain is proper
    const proper = await rootOnly.post('/edge/client/v1/authenticate?method=cert', undefined, { cert: cert.chainPem, key: cert.keyPem });
    assert.equal(proper.status, 200, proper.text);
    assert.equal('improperClientCertChain' in proper.body.data, false);
  });

  it('refuses no certificate, an unknown certificate and an untrusted self-made one', async () => {
    assertError(await login(undefined, undefined), 401, 'INVALID_AUTH');
    assertError(await login(undefined, undefined, 'management', {}), 401, 'INVALID_AUTH');
    const key = await newKey();
    const unknown = await tc.controller.pki.issuer.issueClientCertificate(await parseCsr(await csrPem(key, { subject: 'CN=nobody' })));
    assertError(await login(unknown.chainPem, key.keyPem), 401, 'INVALID_AUTH');
    // registered as an authenticator, but issued by a CA nobody trusts
    const rogueCa = await createTestCa();
    const rogue = await issueTestCert(rogueCa);
    const identityId = await createIdentity(tc.mgmt);
    assert.equal((await tc.mgmt.post('/authenticators', { method: 'cert', identityId, certPem: rogue.certPem })).status, 201);
    assertError(await login(rogue.certPem + rogueCa.certPem, rogue.keyPem), 401, 'INVALID_AUTH');
  });

  it('accepts an expired certificate under the default policy and refuses it when the policy forbids expired ones', async () => {
    const past = new Date(Date.now() - 400 * DAY);
    const cert = await firstPartyCert({ now: past, notAfter: new Date(past.getTime() + 30 * DAY) });
    assertSession(await login(cert.chainPem, cert.keyPem), 'client', cert.identityId, cert.authenticatorId);
    const policy = await strictPolicy({ allowed: true, allowExpiredCerts: false });
    assert.equal((await tc.mgmt.patch(`/identities/${cert.identityId}`, { authPolicyId: policy })).status, 200);
    assertError(await login(cert.chainPem, cert.keyPem), 401, 'INVALID_AUTH');
    // a current certificate of an identity under the same policy still logs in
    const current = await firstPartyCert({ identityId: await createIdentity(tc.mgmt, { authPolicyId: policy }) });
    assertSession(await login(current.chainPem, current.keyPem), 'client', current.identityId, current.authenticatorId);
  });

  it('refuses identities whose policy disallows certificates, and disabled identities', async () => {
    const noCerts = await strictPolicy({ allowed: false, allowExpiredCerts: true });
    const cert = await firstPartyCert({ identityId: await createIdentity(tc.mgmt, { authPolicyId: noCerts }) });
    assertError(await login(cert.chainPem, cert.keyPem), 401, 'INVALID_AUTH');
    const disabled = await firstPartyCert();
    await tc.controller.store.write((tx) => tx.run('UPDATE identities SET disabled_at = ? WHERE id = ?', [new Date().toISOString(), disabled.identityId]));
    assertError(await login(disabled.chainPem, disabled.keyPem), 401, 'INVALID_AUTH');
  });
});

describe('third-party CA certificates', () => {
  it('logs in with a certificate of a verified auth-enabled CA, matched by fingerprint', async () => {
    const { ca } = await trustedCa(tc.mgmt);
    const leaf = await issueTestCert(ca);
    const identityId = await createIdentity(tc.mgmt);
    const auth = await tc.mgmt.post('/authenticators', { method: 'cert', identityId, certPem: leaf.certPem });
    assert.equal(auth.status, 201, auth.text);
    for (const api of ['client', 'management'] as const) {
      const res = await login(leaf.certPem, leaf.keyPem, api);
      assertSession(res, api, identityId, auth.body.data.id);
      assert.equal(res.body.data.isCertExtendable, false);
      assert.equal('improperClientCertChain' in res.body.data, false);
    }
    const stored = await tc.mgmt.get(`/authenticators/${auth.body.data.id}`);
    assert.equal(stored.body.data.fingerprint, sha1Of(leaf.certPem));
  });

  it('builds chains through intermediates the client presents', async () => {
    const root = await createTestCa();
    const intermediate = await createTestCa({ parent: root });
    const caId = await registerCa(tc.mgmt, root);
    await verifyCa(tc.mgmt, caId, root);
    const leaf = await issueTestCert(intermediate);
    const identityId = await createIdentity(tc.mgmt);
    const auth = await tc.mgmt.post('/authenticators', { method: 'cert', identityId, certPem: leaf.certPem });
    assertSession(await login(leaf.certPem + intermediate.certPem, leaf.keyPem), 'client', identityId, auth.body.data.id);
    assertError(await login(leaf.certPem, leaf.keyPem), 401, 'INVALID_AUTH');
  });

  it('refuses certificates of unverified, auth-disabled and deleted CAs', async () => {
    const ca = await createTestCa();
    const caId = await registerCa(tc.mgmt, ca, { isAuthEnabled: true });
    const leaf = await issueTestCert(ca);
    const identityId = await createIdentity(tc.mgmt);
    const auth = await tc.mgmt.post('/authenticators', { method: 'cert', identityId, certPem: leaf.certPem });
    assert.equal(auth.status, 201, auth.text);
    assertError(await login(leaf.certPem, leaf.keyPem), 401, 'INVALID_AUTH');
    await verifyCa(tc.mgmt, caId, ca);
    assertSession(await login(leaf.certPem, leaf.keyPem), 'client', identityId, auth.body.data.id);
    assert.equal((await tc.mgmt.patch(`/cas/${caId}`, { isAuthEnabled: false })).status, 200);
    assertError(await login(leaf.certPem, leaf.keyPem), 401, 'INVALID_AUTH');
    assert.equal((await tc.mgmt.patch(`/cas/${caId}`, { isAuthEnabled: true })).status, 200);
    assert.equal((await login(leaf.certPem, leaf.keyPem)).status, 200);
    assert.equal((await tc.mgmt.delete(`/cas/${caId}`)).status, 200);
    assertError(await login(leaf.certPem, leaf.keyPem), 401, 'INVALID_AUTH');
  });

  it('matches identities by externalId when the CA has a claim, and falls back to the fingerprint when it yields nothing', async () => {
    const claim = { location: 'SAN_EMAIL', matcher: 'SUFFIX', matcherCriteria: '@example.test', parser: 'NONE', parserCriteria: '', index: 0 };
    const { ca } = await trustedCa(tc.mgmt, { externalIdClaim: claim });
    const externalId = uniqueName('alice');
    const identityId = await createIdentity(tc.mgmt, { externalId });
    const leaf = await issueTestCert(ca, { emails: [`${externalId}@example.test`] });
    const res = await login(leaf.certPem, leaf.keyPem);
    assertSession(res, 'client', identityId, 'internal');
    assert.equal(res.body.data.isCertExtendable, false);

    const stranger = await issueTestCert(ca, { emails: [`${uniqueName('nobody')}@example.test`] });
    assertError(await login(stranger.certPem, stranger.keyPem), 401, 'INVALID_AUTH');

    const noClaim = await issueTestCert(ca, { emails: ['bob@elsewhere.test'] });
    assertError(await login(noClaim.certPem, noClaim.keyPem), 401, 'INVALID_AUTH');
    const bob = await createIdentity(tc.mgmt);
    const auth = await tc.mgmt.post('/authenticators', { method: 'cert', identityId: bob, certPem: noClaim.certPem });
    assertSession(await login(noClaim.certPem, noClaim.keyPem), 'client', bob, auth.body.data.id);
  });
});
