/**
 * CA auto enrollment (`method=ca`): a client presenting a certificate from a verified, auto-enrollment
 * CA gets a new identity (name from the CA's format with upstream's placeholders, collision counter, role
 * attributes from identityRoles, externalId from the claim) and, without a claim, a cert authenticator.
 * Covers the generic route in its JSON and empty legacy forms, the specific route, the URL derived from the
 * CA's JWT, login afterwards, and every refusal.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertError } from '../../support/assertions.ts';
import { sha1Of } from '../../support/router-certs.ts';
import { createTestCa, issueTestCert, registerCa, trustedCa, SERVER_AUTH, type IssuedTestCert } from '../../support/third-party-ca.ts';
import type { HttpResponse } from '../../support/client.ts';

const tc: TestController = await startTestController();
const DAY = 86400_000;

/** The Go SDK's request: generic path, JSON body with an optional requested name, the certificate over TLS. */
function enrollCa(cert: IssuedTestCert | undefined, body?: Record<string, unknown>, chainPem?: string): Promise<HttpResponse> {
  return tc.http.post('/edge/client/v1/enroll?method=ca', body ?? {}, { cert: chainPem ?? cert?.certPem, key: cert?.keyPem });
}

async function identityNamed(name: string): Promise<Record<string, any> | undefined> {
  const res = await tc.mgmt.get(`/identities?filter=${encodeURIComponent(`name = "${name}"`)}`);
  assert.equal(res.status, 200, res.text);
  return res.body.data[0];
}

async function caName(id: string): Promise<string> {
  return (await tc.mgmt.get(`/cas/${id}`)).body.data.name;
}

describe('without any CA', () => {
  it('answers ENROLLMENT_NO_VALID_CAS', async () => {
    const ca = await createTestCa();
    assertError(await enrollCa(await issueTestCert(ca)), 400, 'ENROLLMENT_NO_VALID_CAS');
  });
});

describe('CA auto enrollment', () => {
  it('creates an identity named by the default format, with the CA roles and a cert authenticator', async () => {
    const { ca, id } = await trustedCa(tc.mgmt, { identityRoles: ['devices', 'auto'] });
    const cn = uniqueName('device');
    const leaf = await issueTestCert(ca, { subject: `CN=${cn}, O=Example` });
    const res = await enrollCa(leaf, { name: 'ignored-by-the-default-format' });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.deepEqual(res.body, { data: {}, meta: {} });
    assertMatchesReference('client', 'POST', '/enroll/ca', 200, res.body);

    const identity = await identityNamed(`${await caName(id)}-${cn}`);
    assert.ok(identity, 'identity created');
    assert.deepEqual(identity.roleAttributes, ['auto', 'devices']);
    assert.equal(identity.isAdmin, false);
    assert.equal(identity.typeId, 'Default');
    assert.equal(identity.authPolicyId, 'default');
    assert.equal(identity.externalId, null);
    assert.equal(identity.authenticators.cert.fingerprint, sha1Of(leaf.certPem));
    const auth = await tc.mgmt.get(`/authenticators/${identity.authenticators.cert.id}`);
    assert.equal(auth.body.data.isIssuedByNetwork, undefined, 'left out when false, as upstream');
    assert.equal(auth.body.data.certPem, leaf.certPem);

    // the role attributes feed the access model like any identity's
    const roles = await tc.mgmt.get(`/identity-role-attributes?filter=${encodeURIComponent('id = "devices"')}`);
    assert.equal(roles.body.data.length, 1);

    const login = await tc.http.post('/edge/client/v1/authenticate?method=cert', undefined, { cert: leaf.certPem, key: leaf.keyPem });
    assert.equal(login.status, 200, login.text);
    assert.equal(login.body.data.identityId, identity.id);

    assertError(await enrollCa(leaf), 409, 'CERT_IN_USE');
  });

  it('expands every placeholder and appends a counter on name collisions', async () => {
    const format = '[caName]|[caId]|[commonName]|[requestedName]';
    const { ca, id } = await trustedCa(tc.mgmt, { identityNameFormat: format });
    const name = await caName(id);
    const first = await enrollCa(await issueTestCert(ca, { subject: 'CN=twin' }), { name: 'req' });
    assert.equal(first.status, 200, first.text);
    const base = `${name}|${id}|twin|req`;
    assert.ok(await identityNamed(base));
    assert.equal((await enrollCa(await issueTestCert(ca, { subject: 'CN=twin' }), { name: 'req' })).status, 200);
    assert.ok(await identityNamed(`${base}000001`));
    assert.equal((await enrollCa(await issueTestCert(ca, { subject: 'CN=twin' }), { name: 'req' })).status, 200);
    assert.ok(await identityNamed(`${base}000002`));
  });

  it('defaults the requested name to the new identity id, which [identityId] also names', async () => {
    const { ca } = await trustedCa(tc.mgmt, { identityNameFormat: 'x-[requestedName]-[identityId]' });
    const leaf = await issueTestCert(ca);
    // legacy form: no Content-Type and no body
    const res = await tc.http.post('/edge/client/v1/enroll?method=ca', undefined, { cert: leaf.certPem, key: leaf.keyPem });
    assert.equal(res.status, 200, res.text);
    const auth = await tc.mgmt.get(`/authenticators?filter=${encodeURIComponent(`fingerprint = "${sha1Of(leaf.certPem)}"`)}`);
    assert.equal(auth.body.data.length, 1, auth.text);
    const identity = (await tc.mgmt.get(`/identities/${auth.body.data[0].identityId}`)).body.data;
    assert.equal(identity.name, `x-${identity.id}-${identity.id}`);
  });

  it('enrolls through the specific path and through the URL the CA JWT names', async () => {
    const { ca, id } = await trustedCa(tc.mgmt, { identityNameFormat: '[commonName]' });
    const specific = await issueTestCert(ca, { subject: `CN=${uniqueName('specific')}` });
    const res = await tc.http.post('/edge/client/v1/enroll/ca', undefined, { cert: specific.certPem, key: specific.keyPem });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { data: {}, meta: {} });

    const jwt = (await tc.mgmt.get(`/cas/${id}/jwt`)).text;
    const claims = decodeJwt(jwt);
    assert.equal(claims.em, 'ca');
    const cn = uniqueName('via-jwt');
    const leaf = await issueTestCert(ca, { subject: `CN=${cn}` });
    const url = new URL('edge/client/v1/enroll?method=ca', claims.iss).toString();
    const viaJwt = await tc.http.post(url, {}, { cert: leaf.certPem, key: leaf.keyPem });
    assert.equal(viaJwt.status, 200, viaJwt.text);
    assert.ok(await identityNamed(cn));
  });

  it('takes the externalId from the CA claim and creates no authenticator; logins match by externalId', async () => {
    const claim = { location: 'COMMON_NAME', matcher: 'PREFIX', matcherCriteria: 'user-', parser: 'SPLIT', parserCriteria: '.', index: 1 };
    const { ca } = await trustedCa(tc.mgmt, { externalIdClaim: claim, identityNameFormat: '[commonName]' });
    const externalId = uniqueName('ext');
    const cn = `user-team.${externalId}`;
    const leaf = await issueTestCert(ca, { subject: `CN=${cn}` });
    assert.equal((await enrollCa(leaf)).status, 200);
    const identity = await identityNamed(cn);
    assert.ok(identity);
    assert.equal(identity.externalId, externalId);
    assert.deepEqual(identity.authenticators, {});
    const login = await tc.http.post('/edge/client/v1/authenticate?method=cert', undefined, { cert: leaf.certPem, key: leaf.keyPem });
    assert.equal(login.status, 200, login.text);
    assert.equal(login.body.data.identityId, identity.id);
    assert.equal(login.body.data.authenticatorId, 'internal');

    assertError(await enrollCa(await issueTestCert(ca, { subject: 'CN=no-claim-here' })), 400, 'MISSING_CERT_CLAIM');
    assertError(await enrollCa(await issueTestCert(ca, { subject: `CN=${cn}` })), 409, 'ENROLLMENT_IDENTITY_ALREADY_ENROLLED');
  });

  it('takes a whole URI SAN of a scheme as the externalId', async () => {
    const claim = { location: 'SAN_URI', matcher: 'SCHEME', matcherCriteria: 'spiffe', parser: 'NONE', parserCriteria: '', index: 0 };
    const { ca } = await trustedCa(tc.mgmt, { externalIdClaim: claim, identityNameFormat: '[commonName]' });
    const cn = uniqueName('workload');
    const uri = `spiffe://example.test/workload/${cn}`;
    const leaf = await issueTestCert(ca, { subject: `CN=${cn}`, uris: ['https://example.test/not-this-one', uri] });
    assert.equal((await enrollCa(leaf)).status, 200);
    assert.equal((await identityNamed(cn))?.externalId, uri);
    const noUri = await issueTestCert(ca, { subject: `CN=${uniqueName('workload')}`, uris: ['https://example.test/x'] });
    assertError(await enrollCa(noUri), 400, 'MISSING_CERT_CLAIM');
  });

  it('refuses missing, foreign, expired and server-only certificates, and CAs that are unverified or not auto-enabled', async () => {
    const { ca } = await trustedCa(tc.mgmt);
    assertError(await enrollCa(undefined), 400, 'CERT_FAILED_VALIDATION');
    assertError(await enrollCa(await issueTestCert(await createTestCa())), 400, 'CERT_FAILED_VALIDATION');
    const expired = await issueTestCert(ca, { notBefore: new Date(Date.now() - 10 * DAY), notAfter: new Date(Date.now() - DAY) });
    assertError(await enrollCa(expired), 400, 'CERT_FAILED_VALIDATION');
    assertError(await enrollCa(await issueTestCert(ca, { usages: [SERVER_AUTH] })), 400, 'CERT_FAILED_VALIDATION');

    const unverified = await createTestCa();
    await registerCa(tc.mgmt, unverified, { isAutoCaEnrollmentEnabled: true });
    assertError(await enrollCa(await issueTestCert(unverified)), 400, 'CERT_FAILED_VALIDATION');
    const manual = await trustedCa(tc.mgmt, { isAutoCaEnrollmentEnabled: false });
    assertError(await enrollCa(await issueTestCert(manual.ca)), 400, 'CERT_FAILED_VALIDATION');
  });
});
