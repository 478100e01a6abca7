/**
 * Certificate extension by the identity itself, on both APIs: an identity enrolled with ott (so its
 * certificate is network-issued and its sessions extendable) submits a CSR over mutual TLS, receives a new
 * certificate chain and the CA bundle (verified with openssl), keeps using the old certificate until it
 * confirms the new one with extend-verify, after which only the new one logs in. Covers key roll and
 * same-key extension, the request-extend flags being cleared, and every refusal of both operations.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertEmptyOk, assertError } from '../../support/assertions.ts';
import { csrPem, newKey, opensslVerify, pemBlocks, sha1Of, type TestKey } from '../../support/router-certs.ts';
import { issueTestCert, trustedCa } from '../../support/third-party-ca.ts';
import type { HttpResponse } from '../../support/client.ts';

const tc: TestController = await startTestController();
type Api = 'client' | 'management';

interface Enrolled {
  identityId: string;
  authenticatorId: string;
  chainPem: string;
  key: TestKey;
  token: string;
}

/** An identity enrolled through ott (network-issued certificate) and logged in with it. */
async function enrolledIdentity(): Promise<Enrolled> {
  const created = await tc.mgmt.post('/identities', { name: uniqueName('extender'), type: 'User', isAdmin: false, enrollment: { ott: true } });
  assert.equal(created.status, 201, created.text);
  const identityId = created.body.data.id as string;
  const detail = await tc.mgmt.get(`/identities/${identityId}`);
  const token = detail.body.data.enrollment.ott.token as string;
  const key = await newKey();
  const enroll = await tc.http.post(`/edge/client/v1/enroll?method=ott&token=${token}`, undefined, {
    rawBody: await csrPem(key, { subject: `CN=${identityId}` }), contentType: 'application/x-pem-file',
  });
  assert.equal(enroll.status, 200, enroll.text);
  const chainPem = enroll.body.data.cert as string;
  const login = await certLogin(chainPem, key);
  assert.equal(login.status, 200, login.text);
  assert.equal(login.body.data.isCertExtendable, true);
  return { identityId, authenticatorId: login.body.data.authenticatorId, chainPem, key, token: login.body.data.token };
}

function certLogin(chainPem: string, key: TestKey, api: Api = 'client'): Promise<HttpResponse> {
  return tc.http.post(`/edge/${api}/v1/authenticate?method=cert`, undefined, { cert: chainPem, key: key.keyPem });
}

function extend(e: Enrolled, body: unknown, api: Api = 'client', id = e.authenticatorId, tls: { cert?: string; key?: string } = { cert: e.chainPem, key: e.key.keyPem }) {
  return tc.http.post(`/edge/${api}/v1/current-identity/authenticators/${id}/extend`, body, { token: e.token, ...tls });
}

function extendVerify(e: Enrolled, clientCert: unknown, api: Api = 'client', id = e.authenticatorId) {
  return tc.http.post(`/edge/${api}/v1/current-identity/authenticators/${id}/extend-verify`, { clientCert }, { token: e.token });
}

async function authenticator(id: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/authenticators/${id}`);
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

for (const api of ['client', 'management'] as const) {
  describe(`extension on the ${api} API`, () => {
    it('issues a new certificate, keeps the old one until extend-verify, then swaps them (new key)', async () => {
      const e = await enrolledIdentity();
      const oldPrint = sha1Of(e.chainPem);
      const newKeyPair = await newKey();
      const res = await extend(e, { clientCertCsr: await csrPem(newKeyPair, { subject: `CN=${e.identityId}, O=Extended` }) }, api);
      assert.equal(res.status, 200, res.text);
      assertMatchesReference(api, 'POST', '/current-identity/authenticators/{id}/extend', 200, res.body);
      const { clientCert, ca } = res.body.data as { clientCert: string; ca: string };
      assert.equal(pemBlocks(clientCert).length, 2);
      assert.equal(pemBlocks(ca).length, 2);
      assert.match(opensslVerify(clientCert, tc.controller.pki.rootCertPem, 'sslclient'), /OK/);
      assert.match(opensslVerify(clientCert, ca, 'sslclient'), /OK/);

      // pending: the old certificate still works, the new one does not yet
      assert.equal((await authenticator(e.authenticatorId)).fingerprint, oldPrint);
      assert.equal((await certLogin(e.chainPem, e.key, api)).status, 200);
      assertError(await certLogin(clientCert, newKeyPair, api), 401, 'INVALID_AUTH');

      const verified = await extendVerify(e, clientCert, api);
      assertEmptyOk(verified);
      assertMatchesReference(api, 'POST', '/current-identity/authenticators/{id}/extend-verify', 200, verified.body);
      const after = await authenticator(e.authenticatorId);
      assert.equal(after.fingerprint, sha1Of(clientCert));
      assert.equal(after.lastExtendRolledKeys, true);
      assert.equal(after.isIssuedByNetwork, true);
      const login = await certLogin(clientCert, newKeyPair, api);
      assert.equal(login.status, 200, login.text);
      assert.equal(login.body.data.identityId, e.identityId);
      assert.equal(login.body.data.isCertExtendable, true);
      assertError(await certLogin(e.chainPem, e.key, api), 401, 'INVALID_AUTH');
      // nothing is pending any more
      assertError(await extendVerify(e, clientCert, api), 409, 'CAN_NOT_UPDATE_AUTHENTICATOR');
    });
  });
}

describe('extension details', () => {
  it('extends with the same key, and clears a pending request-extend flag', async () => {
    const e = await enrolledIdentity();
    // As upstream, a fresh certificate authenticator shows only the flags that are true, and no username.
    const fresh = await authenticator(e.authenticatorId);
    for (const key of ['isExtendRequested', 'isKeyRollRequested', 'lastExtendRolledKeys', 'extendRequestedAt', 'username']) {
      assert.equal(key in fresh, false, key);
    }
    assert.equal(fresh.isIssuedByNetwork, true);
    if ('lastAuthResolvedToRoot' in fresh) assert.equal(fresh.lastAuthResolvedToRoot, true);
    const flagged = await tc.mgmt.post(`/authenticators/${e.authenticatorId}/request-extend`, { rollKeys: true });
    assert.equal(flagged.status, 200, flagged.text);
    const requested = await authenticator(e.authenticatorId);
    assert.equal(requested.isExtendRequested, true);
    assert.equal(requested.isKeyRollRequested, true);
    assert.match(requested.extendRequestedAt, /^\d{4}-/);
    // a login while flagged carries the flags and announces them in a header
    const flaggedLogin = await certLogin(e.chainPem, e.key);
    assert.equal(flaggedLogin.status, 200, flaggedLogin.text);
    assert.equal(flaggedLogin.headers['ziti-authenticator-extend-requested'], 'true');
    assert.equal(flaggedLogin.body.data.isCertExtendRequested, true);
    assert.equal(flaggedLogin.body.data.isCertKeyRollRequested, true);
    assertMatchesReference('client', 'POST', '/authenticate', 200, flaggedLogin.body);
    const flaggedSession = flaggedLogin.body.data.token as string;
    const res = await extend(e, { clientCertCsr: await csrPem(e.key, { subject: `CN=${e.identityId}` }) });
    assert.equal(res.status, 200, res.text);
    assertEmptyOk(await extendVerify(e, res.body.data.clientCert));
    const after = await authenticator(e.authenticatorId);
    // As upstream, flags that are false are left out of the read model.
    assert.equal(after.lastExtendRolledKeys, undefined);
    assert.equal(after.isExtendRequested, undefined);
    assert.equal(after.isKeyRollRequested, undefined);
    const session = await tc.client.as({ token: flaggedSession }).get('/current-api-session');
    assert.equal(session.status, 200, session.text);
    assert.equal('isCertExtendRequested' in session.body.data, false);
    assert.equal('isCertKeyRollRequested' in session.body.data, false);
    const plainLogin = await certLogin(res.body.data.clientCert, e.key);
    assert.equal(plainLogin.headers['ziti-authenticator-extend-requested'], undefined);
    assert.equal((await certLogin(res.body.data.clientCert, e.key)).status, 200);
  });

  it('refuses extension without a client certificate, with another certificate, and with a bad CSR', async () => {
    const e = await enrolledIdentity();
    const other = await enrolledIdentity();
    const csr = await csrPem(e.key, { subject: `CN=${e.identityId}` });
    const bare = await extend(e, { clientCertCsr: csr }, 'client', e.authenticatorId, {});
    assertError(bare, 401, 'UNAUTHORIZED');
    assert.equal(bare.body.error.cause, undefined, 'without a cause, as upstream');
    assertError(await extend(e, { clientCertCsr: csr }, 'client', e.authenticatorId, { cert: other.chainPem, key: other.key.keyPem }), 401, 'UNAUTHORIZED');
    assertError(await extend(e, { clientCertCsr: 'not a csr' }), 400, 'COULD_NOT_PROCESS_CSR');
    assertError(await extend(e, {}), 400, 'COULD_NOT_VALIDATE');
    assertError(await tc.http.post(`/edge/client/v1/current-identity/authenticators/${e.authenticatorId}/extend`, { clientCertCsr: csr }, {
      cert: e.chainPem, key: e.key.keyPem,
    }), 401, 'UNAUTHORIZED');
    // nothing became pending
    assertError(await extendVerify(e, e.chainPem), 409, 'CAN_NOT_UPDATE_AUTHENTICATOR');
  });

  it('refuses other identities\' authenticators, unknown ids, password and third-party authenticators', async () => {
    const e = await enrolledIdentity();
    const other = await enrolledIdentity();
    const csr = await csrPem(e.key, { subject: `CN=${e.identityId}` });
    assertError(await extend(e, { clientCertCsr: csr }, 'client', other.authenticatorId), 401, 'UNAUTHORIZED');
    assertError(await extendVerify(e, e.chainPem, 'client', other.authenticatorId), 401, 'UNAUTHORIZED');
    assertError(await extend(e, { clientCertCsr: csr }, 'client', 'no-such-authenticator'), 404, 'NOT_FOUND');
    assertError(await extendVerify(e, e.chainPem, 'client', 'no-such-authenticator'), 404, 'NOT_FOUND');

    // a password authenticator
    const user = await createUserWithPassword(tc);
    const own = await tc.client.as({ token: user.token }).get('/current-identity/authenticators');
    const updbId = own.body.data[0].id as string;
    const asUser = { ...e, token: user.token };
    assertError(await extend(asUser, { clientCertCsr: csr }, 'client', updbId), 409, 'CAN_NOT_UPDATE_AUTHENTICATOR');
    assertError(await extendVerify(asUser, e.chainPem, 'client', updbId), 409, 'CAN_NOT_UPDATE_AUTHENTICATOR');

    // a certificate from a third-party CA (auto-enrolled) is not the network's to extend
    const { ca } = await trustedCa(tc.mgmt, { identityNameFormat: '[commonName]' });
    const leaf = await issueTestCert(ca, { subject: `CN=${uniqueName('third-party')}` });
    assert.equal((await tc.http.post('/edge/client/v1/enroll?method=ca', {}, { cert: leaf.certPem, key: leaf.keyPem })).status, 200);
    const login = await tc.http.post('/edge/client/v1/authenticate?method=cert', undefined, { cert: leaf.certPem, key: leaf.keyPem });
    assert.equal(login.status, 200, login.text);
    assert.equal(login.body.data.isCertExtendable, false);
    const thirdParty = await tc.http.post(`/edge/client/v1/current-identity/authenticators/${login.body.data.authenticatorId}/extend`, { clientCertCsr: csr }, {
      token: login.body.data.token, cert: leaf.certPem, key: leaf.keyPem,
    });
    assertError(thirdParty, 409, 'CAN_NOT_UPDATE_AUTHENTICATOR');
  });

  it('refuses extend-verify with a certificate other than the pending one', async () => {
    const e = await enrolledIdentity();
    const res = await extend(e, { clientCertCsr: await csrPem(await newKey(), { subject: `CN=${e.identityId}` }) });
    assert.equal(res.status, 200, res.text);
    assertError(await extendVerify(e, e.chainPem), 400, 'INVALID_CLIENT_CERT');
    assertError(await extendVerify(e, 'garbage'), 400, 'INVALID_CLIENT_CERT');
    assertError(await tc.http.post(`/edge/client/v1/current-identity/authenticators/${e.authenticatorId}/extend-verify`, {}, { token: e.token }), 400, 'COULD_NOT_VALIDATE');
    // still pending: the right certificate completes it
    assertEmptyOk(await extendVerify(e, res.body.data.clientCert));
  });
});
