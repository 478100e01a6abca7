/**
 * Management CA operations: create (read model, verification token, fingerprint, defaults), each
 * validation failure, list/filter, put and patch (externalIdClaim replace and merge), verification with
 * every failure mode, the static auto-enrollment JWT, delete effects on certificate authenticators, unknown
 * ids and permissions. CAs and certificates are generated in the test with real keys.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey } from 'node:crypto';
import { jwtVerify, decodeProtectedHeader } from 'jose';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertDecodeError, TIMESTAMP, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';
import { sha1Of } from '../../support/router-certs.ts';
import { createTestCa, issueTestCert, registerCa, verifyCa, type TestCa } from '../../support/third-party-ca.ts';

const tc: TestController = await startTestController();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const CLAIM = { location: 'COMMON_NAME', matcher: 'PREFIX', matcherCriteria: 'user-', parser: 'NONE', parserCriteria: '', index: 0 };

/** Upstream renders a CA without identity roles with `identityRoles: null`; the reference does not mark it nullable. */
const DETAIL_NULLS = { allowNullAt: ['/data/identityRoles'] };
const LIST_NULLS = { allowNullAt: ['/data/*/identityRoles'] };

async function detail(id: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/cas/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/cas/{id}', 200, res.body, DETAIL_NULLS);
  return res.body.data;
}

function createBody(ca: TestCa, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: uniqueName('ca'),
    certPem: ca.certPem,
    isAuthEnabled: true,
    isAutoCaEnrollmentEnabled: false,
    isOttCaEnrollmentEnabled: true,
    identityRoles: ['b', 'a'],
    ...overrides,
  };
}

async function caCount(): Promise<number> {
  const res = await tc.mgmt.get('/cas?limit=1');
  assert.equal(res.status, 200, res.text);
  return res.body.meta.pagination.totalCount as number;
}

describe('POST /cas', () => {
  it('creates an unverified CA with a verification token, the fingerprint and the default name format', async () => {
    const ca = await createTestCa();
    const body = createBody(ca, { tags: { team: 'x' } });
    const res = await tc.mgmt.post('/cas', body);
    assert.equal(res.status, 201, res.text);
    assertMatchesReference('management', 'POST', '/cas', 201, res.body);
    const id = res.body.data.id as string;
    assert.deepEqual(res.body.data._links.self, { href: `./cas/${id}` });
    const d = await detail(id);
    assert.equal(d.name, body.name);
    assert.equal(d.certPem, ca.certPem);
    assert.equal(d.fingerprint, sha1Of(ca.certPem));
    assert.equal(d.isVerified, false);
    assert.match(d.verificationToken, UUID);
    assert.equal(d.isAuthEnabled, true);
    assert.equal(d.isAutoCaEnrollmentEnabled, false);
    assert.equal(d.isOttCaEnrollmentEnabled, true);
    assert.deepEqual(d.identityRoles, ['a', 'b']);
    assert.equal(d.identityNameFormat, '[caName]-[commonName]');
    assert.equal('externalIdClaim' in d, false);
    assert.deepEqual(d.tags, { team: 'x' });
    assert.match(d.createdAt, TIMESTAMP);
    // verify while unverified; no jwt link while auto enrollment is off
    assert.deepEqual(d._links, { self: { href: `./cas/${id}` }, verify: { href: `./cas/${id}/verify` } });
  });

  it('stores an externalIdClaim and a custom name format; the jwt link follows auto enrollment', async () => {
    const ca = await createTestCa();
    const res = await tc.mgmt.post('/cas', createBody(ca, { externalIdClaim: CLAIM, identityNameFormat: '[requestedName]', isAutoCaEnrollmentEnabled: true }));
    assert.equal(res.status, 201, res.text);
    const d = await detail(res.body.data.id);
    assert.deepEqual(d.externalIdClaim, CLAIM);
    assert.equal(d.identityNameFormat, '[requestedName]');
    assert.deepEqual(d._links.jwt, { href: `./cas/${d.id}/jwt` });
  });

  it('accepts a bundle whose first certificate is a CA', async () => {
    const root = await createTestCa();
    const intermediate = await createTestCa({ parent: root });
    const res = await tc.mgmt.post('/cas', createBody(intermediate, { certPem: intermediate.certPem + root.certPem }));
    assert.equal(res.status, 201, res.text);
    assert.equal((await detail(res.body.data.id)).fingerprint, sha1Of(intermediate.certPem));
  });

  it('refuses invalid documents and changes nothing', async () => {
    const ca = await createTestCa();
    const leaf = await issueTestCert(ca);
    const before = await caCount();
    for (const field of ['name', 'certPem', 'isAuthEnabled', 'isAutoCaEnrollmentEnabled', 'isOttCaEnrollmentEnabled', 'identityRoles']) {
      const body = createBody(ca);
      delete body[field];
      assertError(await tc.mgmt.post('/cas', body), 400, 'COULD_NOT_VALIDATE');
    }
    assertDecodeError(await tc.mgmt.post('/cas', createBody(ca, { isAuthEnabled: 'yes' })), 'isAuthEnabled');
    assertFieldError(await tc.mgmt.post('/cas', createBody(ca, { certPem: 'not a certificate' })), 'certPem');
    assertFieldError(await tc.mgmt.post('/cas', createBody(ca, { certPem: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' })), 'certPem');
    assertError(await tc.mgmt.post('/cas', createBody(ca, { certPem: leaf.certPem })), 400, 'CERTIFICATE_IS_NOT_CA');
    assertFieldError(await tc.mgmt.post('/cas', createBody(ca, { identityRoles: ['#all'] })), 'identityRoles');
    assertFieldError(await tc.mgmt.post('/cas', createBody(ca, { name: '' })), 'name');
    // externalIdClaim: every member is required by the schema; unworkable combinations are refused
    const { index: _index, ...withoutIndex } = CLAIM;
    assertError(await tc.mgmt.post('/cas', createBody(ca, { externalIdClaim: withoutIndex })), 400, 'COULD_NOT_VALIDATE');
    assertError(await tc.mgmt.post('/cas', createBody(ca, { externalIdClaim: { ...CLAIM, location: 'ELSEWHERE' } })), 400, 'COULD_NOT_VALIDATE');
    assertFieldError(await tc.mgmt.post('/cas', createBody(ca, { externalIdClaim: { ...CLAIM, matcher: 'SCHEME' } })), 'externalIdClaim.matcher');
    assertFieldError(await tc.mgmt.post('/cas', createBody(ca, { externalIdClaim: { ...CLAIM, matcherCriteria: null } })), 'externalIdClaim.matcherCriteria');
    assertFieldError(await tc.mgmt.post('/cas', createBody(ca, { externalIdClaim: { ...CLAIM, parser: 'SPLIT' } })), 'externalIdClaim.parserCriteria');
    assertFieldError(await tc.mgmt.post('/cas', createBody(ca, { externalIdClaim: { ...CLAIM, index: -1 } })), 'externalIdClaim.index');
    assertFieldError(await tc.mgmt.post('/cas', createBody(ca, { externalIdClaim: { ...CLAIM, location: null } })), 'externalIdClaim.location');
    // Upstream requires every member, none null, and names the first missing in the order index, location,
    // matcher, matcherCriteria, parser, parserCriteria; enum refusals list the values without null.
    const allNull = await tc.mgmt.post('/cas', createBody(ca, { externalIdClaim: { index: null, location: null, matcher: null, matcherCriteria: null, parser: null, parserCriteria: null } }));
    assertError(allNull, 400, 'COULD_NOT_VALIDATE');
    assert.deepEqual(allNull.body.error.cause, { field: 'externalIdClaim.index', reason: 'externalIdClaim.index in body is required', value: '<nil>' });
    const noParts = await tc.mgmt.post('/cas', createBody(ca, { externalIdClaim: { ...CLAIM, location: null, matcher: null } }));
    assert.equal(noParts.body.error.cause.reason, 'externalIdClaim.location in body is required');
    assertFieldError(await tc.mgmt.post('/cas', createBody(ca, { externalIdClaim: { ...CLAIM, parserCriteria: null } })), 'externalIdClaim.parserCriteria');
    const badLocation = await tc.mgmt.post('/cas', createBody(ca, { externalIdClaim: { ...CLAIM, location: 'NOPE', matcher: 'NOPE' } }));
    assert.equal(badLocation.body.error.cause.reason, 'externalIdClaim.location in body should be one of [COMMON_NAME SAN_URI SAN_EMAIL]');
    assert.equal(await caCount(), before);
  });

  it('refuses a certificate that is already a CA, and a duplicate name', async () => {
    const ca = await createTestCa();
    const first = createBody(ca);
    assert.equal((await tc.mgmt.post('/cas', first)).status, 201);
    const again = await tc.mgmt.post('/cas', createBody(ca));
    assertFieldError(again, 'certPem');
    assert.match(again.body.error.cause.reason, /already used as CA/);
    assertFieldError(await tc.mgmt.post('/cas', createBody(await createTestCa(), { name: first.name })), 'name');
  });
});

describe('GET /cas', () => {
  it('lists CAs with filters, paging and the reference shape', async () => {
    const ca = await createTestCa();
    const name = uniqueName('listed-ca');
    const id = await registerCa(tc.mgmt, ca, { name, isAuthEnabled: false });
    const res = await tc.mgmt.get(`/cas?filter=${encodeURIComponent(`name = "${name}"`)}`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/cas', 200, res.body, LIST_NULLS);
    assert.deepEqual(res.body.data.map((c: { id: string }) => c.id), [id]);
    const byPrint = await tc.mgmt.get(`/cas?filter=${encodeURIComponent(`fingerprint = "${sha1Of(ca.certPem)}"`)}`);
    assert.equal(byPrint.body.data.length, 1);
    const unverified = await tc.mgmt.get(`/cas?filter=${encodeURIComponent('isVerified = false and isAuthEnabled = false')}&limit=500`);
    assert.ok(unverified.body.data.some((c: { id: string }) => c.id === id));
    assert.ok(res.body.meta.filterableFields.includes('isVerified'));
    const page = await tc.mgmt.get('/cas?limit=1&offset=0');
    assert.equal(page.body.data.length, 1);
    assert.equal(page.body.meta.pagination.limit, 1);
  });
});

describe('PUT and PATCH /cas/{id}', () => {
  it('put replaces the editable fields; certPem and isVerified never change; an omitted claim is cleared', async () => {
    const ca = await createTestCa();
    const id = await registerCa(tc.mgmt, ca, { externalIdClaim: CLAIM });
    const name = uniqueName('renamed-ca');
    const res = await tc.mgmt.put(`/cas/${id}`, {
      name, isAuthEnabled: false, isAutoCaEnrollmentEnabled: true, isOttCaEnrollmentEnabled: false, identityRoles: ['x'], identityNameFormat: '',
      certPem: (await createTestCa()).certPem, isVerified: true,
    });
    assertEmptyOk(res);
    const d = await detail(id);
    assert.equal(d.name, name);
    assert.equal(d.isAuthEnabled, false);
    assert.equal(d.isAutoCaEnrollmentEnabled, true);
    assert.equal(d.isOttCaEnrollmentEnabled, false);
    assert.deepEqual(d.identityRoles, ['x']);
    assert.equal(d.identityNameFormat, '[caName]-[commonName]');
    assert.equal(d.certPem, ca.certPem);
    assert.equal(d.isVerified, false);
    assert.equal('externalIdClaim' in d, false);
    // put requires every required field
    assertError(await tc.mgmt.put(`/cas/${id}`, { name }), 400, 'COULD_NOT_VALIDATE');
  });

  it('reads empty identity roles as null after create, put and patch, and refuses a put whose roles are null', async () => {
    const ca = await createTestCa();
    const name = uniqueName('roles-ca');
    const id = await registerCa(tc.mgmt, ca, { name, identityRoles: [] });
    assert.equal((await detail(id)).identityRoles, null);
    const body = { name, isAuthEnabled: true, isAutoCaEnrollmentEnabled: true, isOttCaEnrollmentEnabled: true, identityNameFormat: '[caName]-[commonName]' };
    assertEmptyOk(await tc.mgmt.put(`/cas/${id}`, { ...body, identityRoles: ['b'] }));
    assert.deepEqual((await detail(id)).identityRoles, ['b']);
    assertEmptyOk(await tc.mgmt.put(`/cas/${id}`, { ...body, identityRoles: [] }));
    assert.equal((await detail(id)).identityRoles, null);
    assertEmptyOk(await tc.mgmt.patch(`/cas/${id}`, { identityRoles: ['c'] }));
    assertEmptyOk(await tc.mgmt.patch(`/cas/${id}`, { identityRoles: null }));
    assert.deepEqual((await detail(id)).identityRoles, ['c'], 'a null in a patch keeps the roles');
    assertEmptyOk(await tc.mgmt.patch(`/cas/${id}`, { identityRoles: [] }));
    assert.equal((await detail(id)).identityRoles, null);
    const refused = await tc.mgmt.put(`/cas/${id}`, { ...body, identityRoles: null });
    assertFieldError(refused, 'identityRoles');
    assert.equal(refused.body.error.cause.reason, 'identityRoles in body is required');
    assertMatchesReference('management', 'PUT', '/cas/{id}', 400, refused.body);
    const listed = await tc.mgmt.get(`/cas?filter=${encodeURIComponent(`id = "${id}"`)}`);
    assertMatchesReference('management', 'GET', '/cas', 200, listed.body, LIST_NULLS);
    assert.equal(listed.body.data[0].identityRoles, null);
  });

  it('patch changes only the supplied fields and merges externalIdClaim members over the stored claim', async () => {
    const ca = await createTestCa();
    const id = await registerCa(tc.mgmt, ca, { externalIdClaim: CLAIM, identityRoles: ['keep'] });
    assertEmptyOk(await tc.mgmt.patch(`/cas/${id}`, { isAuthEnabled: false, name: null }));
    let d = await detail(id);
    assert.equal(d.isAuthEnabled, false);
    assert.deepEqual(d.identityRoles, ['keep']);
    assert.deepEqual(d.externalIdClaim, CLAIM);
    assertEmptyOk(await tc.mgmt.patch(`/cas/${id}`, { externalIdClaim: { matcher: 'SUFFIX', matcherCriteria: '@corp' } }));
    d = await detail(id);
    assert.deepEqual(d.externalIdClaim, { ...CLAIM, matcher: 'SUFFIX', matcherCriteria: '@corp' });
    // a merged claim that can not work is refused
    assertFieldError(await tc.mgmt.patch(`/cas/${id}`, { externalIdClaim: { matcher: 'SCHEME' } }), 'externalIdClaim.matcher');
    assertFieldError(await tc.mgmt.patch(`/cas/${id}`, { identityRoles: ['@id'] }), 'identityRoles');
    assertDecodeError(await tc.mgmt.patch(`/cas/${id}`, { isOttCaEnrollmentEnabled: 'no' }), 'isOttCaEnrollmentEnabled');
    assert.deepEqual((await detail(id)).externalIdClaim, { ...CLAIM, matcher: 'SUFFIX', matcherCriteria: '@corp' });
  });
});

describe('POST /cas/{id}/verify', () => {
  it('verifies with a certificate the CA signed whose CN is the token; then refuses a second verification', async () => {
    const ca = await createTestCa();
    const id = await registerCa(tc.mgmt, ca);
    const token = (await detail(id)).verificationToken as string;
    const proof = await issueTestCert(ca, { subject: `CN=${token}`, usages: [] });
    const res = await tc.mgmt.post(`/cas/${id}/verify`, undefined, { rawBody: proof.certPem, contentType: 'text/plain' });
    assertEmptyOk(res);
    assertMatchesReference('management', 'POST', '/cas/{id}/verify', 200, res.body);
    const d = await detail(id);
    assert.equal(d.isVerified, true);
    assert.equal(d._links.verify, undefined);
    const again = await tc.mgmt.post(`/cas/${id}/verify`, undefined, { rawBody: proof.certPem, contentType: 'text/plain' });
    assertError(again, 409, 'CA_ALREADY_VERIFIED');
  });

  it('refuses wrong common names, wrong signers, expired proofs, malformed bodies and other media types', async () => {
    const ca = await createTestCa();
    const other = await createTestCa();
    const id = await registerCa(tc.mgmt, ca);
    const token = (await detail(id)).verificationToken as string;
    const send = (body: string, contentType = 'text/plain') => tc.mgmt.post(`/cas/${id}/verify`, undefined, { rawBody: body, contentType });

    // Upstream's causes: none for a wrong common name or an unreadable body, the x509 reason for a wrong signer.
    const wrongName = await send((await issueTestCert(ca, { subject: 'CN=not-the-token' })).certPem);
    assertError(wrongName, 400, 'INVALID_COMMON_NAME');
    assert.equal(wrongName.body.error.cause, undefined);
    const wrongSigner = await send((await issueTestCert(other, { subject: `CN=${token}` })).certPem);
    assertError(wrongSigner, 400, 'CERTIFICATE_FAILED_VALIDATION');
    assert.deepEqual(wrongSigner.body.error.cause, { code: 'UNHANDLED', message: 'x509: certificate signed by unknown authority' });
    const expired = await issueTestCert(ca, { subject: `CN=${token}`, notBefore: new Date(Date.now() - 10 * 86400_000), notAfter: new Date(Date.now() - 86400_000) });
    assertError(await send(expired.certPem), 400, 'CERTIFICATE_FAILED_VALIDATION');
    assertError(await tc.mgmt.post(`/cas/${id}/verify`, undefined, { rawBody: '', contentType: 'text/plain' }), 400, 'COULD_NOT_PARSE_BODY');
    const unreadable = await send('hello');
    assertError(unreadable, 400, 'COULD_NOT_PARSE_BODY');
    assert.equal(unreadable.body.error.cause, undefined);
    assertError(await send('-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n'), 400, 'COULD_NOT_PARSE_BODY');
    assertError(await send('-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n'), 400, 'EXPECTED_PEM_CERTIFICATE');
    assertError(await send('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'), 400, 'COULD_NOT_PARSE_DER_BLOCK');
    const proof = await issueTestCert(ca, { subject: `CN=${token}` });
    assert.equal((await send(JSON.stringify({ cert: proof.certPem }), 'application/json')).status, 415);
    assert.equal((await detail(id)).isVerified, false);
    assertEmptyOk(await send(proof.certPem));
  });
});

describe('GET /cas/{id}/jwt', () => {
  it('answers the static CA enrollment JWT as application/jwt, signed by the TLS server key', async () => {
    const ca = await createTestCa();
    const id = await registerCa(tc.mgmt, ca, { isAutoCaEnrollmentEnabled: true });
    const res = await tc.mgmt.get(`/cas/${id}/jwt`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers['content-type'], 'application/jwt');
    const jwt = res.text;
    const header = decodeProtectedHeader(jwt);
    assert.deepEqual(header, { alg: 'ES256', kid: tc.controller.pki.serverCertFingerprint, typ: 'JWT' });
    const { payload } = await jwtVerify(jwt, createPublicKey(tc.controller.pki.serverCertPem));
    assert.deepEqual(payload, {
      iss: `https://localhost:${tc.port}/`, sub: id, aud: ['openziti-enroller'], jti: id, em: 'ca', ctrls: null,
    });
    assert.deepEqual(Object.keys(payload), ['iss', 'sub', 'aud', 'jti', 'em', 'ctrls']);
  });
});

describe('DELETE /cas/{id}', () => {
  it('deletes the CA and the certificate authenticators of certificates it issued', async () => {
    const ca = await createTestCa();
    const id = await registerCa(tc.mgmt, ca);
    await verifyCa(tc.mgmt, id, ca);
    const identityId = await createIdentity(tc.mgmt);
    const leaf = await issueTestCert(ca);
    const auth = await tc.mgmt.post('/authenticators', { method: 'cert', identityId, certPem: leaf.certPem });
    assert.equal(auth.status, 201, auth.text);
    // an authenticator for a certificate of another CA stays
    const otherIdentity = await createIdentity(tc.mgmt);
    const otherLeaf = await issueTestCert(await createTestCa());
    const kept = await tc.mgmt.post('/authenticators', { method: 'cert', identityId: otherIdentity, certPem: otherLeaf.certPem });
    assert.equal(kept.status, 201, kept.text);

    assertEmptyOk(await tc.mgmt.delete(`/cas/${id}`));
    assertError(await tc.mgmt.get(`/cas/${id}`), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.get(`/authenticators/${auth.body.data.id}`), 404, 'NOT_FOUND');
    assert.equal((await tc.mgmt.get(`/authenticators/${kept.body.data.id}`)).status, 200);
    // the identity itself remains and still displays
    assert.equal((await tc.mgmt.get(`/identities/${identityId}`)).status, 200);
  });
});

describe('unknown ids and permissions', () => {
  it('answers 404 for every operation on an unknown CA', async () => {
    const missing = 'no-such-ca';
    assertError(await tc.mgmt.get(`/cas/${missing}`), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.delete(`/cas/${missing}`), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.patch(`/cas/${missing}`, { isAuthEnabled: true }), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.put(`/cas/${missing}`, {
      name: 'x', isAuthEnabled: true, isAutoCaEnrollmentEnabled: true, isOttCaEnrollmentEnabled: true, identityRoles: [], identityNameFormat: 'x',
    }), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.get(`/cas/${missing}/jwt`), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.post(`/cas/${missing}/verify`, undefined, { rawBody: 'x', contentType: 'text/plain' }), 404, 'NOT_FOUND');
  });

  it('refuses callers without the ca permission and without a session', async () => {
    const ca = await createTestCa();
    const id = await registerCa(tc.mgmt, ca);
    const user = await createUserWithPassword(tc);
    const asUser = tc.mgmt.as({ token: user.token });
    assertError(await asUser.get('/cas'), 401, 'UNAUTHORIZED');
    assertError(await asUser.get(`/cas/${id}`), 401, 'UNAUTHORIZED');
    assertError(await asUser.get(`/cas/${id}/jwt`), 401, 'UNAUTHORIZED');
    assertError(await asUser.post('/cas', createBody(await createTestCa())), 401, 'UNAUTHORIZED');
    assertError(await asUser.post(`/cas/${id}/verify`, undefined, { rawBody: 'x', contentType: 'text/plain' }), 401, 'UNAUTHORIZED');
    assertError(await asUser.delete(`/cas/${id}`), 401, 'UNAUTHORIZED');
    const anonymous = tc.mgmt.as({ token: 'not-a-session' });
    assertError(await anonymous.get('/cas'), 401, 'UNAUTHORIZED');
    // read-only permission reads but does not write
    const reader = await createUserWithPassword(tc, { permissions: ['ca.read'] });
    const asReader = tc.mgmt.as({ token: reader.token });
    assert.equal((await asReader.get(`/cas/${id}`)).status, 200);
    assertError(await asReader.patch(`/cas/${id}`, { isAuthEnabled: false }), 401, 'UNAUTHORIZED');
  });
});
