/**
 * External JWT signers: management CRUD (list with filter and paging, create, detail, put, patch, delete),
 * the derived certificate fields, every validation rule (certPem xor jwksEndpoint, a single parsable
 * certificate, unique name/issuer/kid/certificate, URLs, enums, JSON pointers, the enrollment auth policy),
 * delete refused while an auth policy references the signer, unknown ids, permissions, and the public
 * client list of enabled signers.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpResponse } from '../../support/client.ts';
import { createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertDecodeError, TIMESTAMP, assertEmptyOk, assertError, assertFieldError, assertInvalidField } from '../../support/assertions.ts';
import { createTestSigner, insertAuthPolicy, type TestSigner } from '../../support/external-signer.ts';

const tc: TestController = await startTestController();

/**
 * Upstream renders unset optional strings as null although the reference declares them non-nullable
 * (auth.md §1.5: pointer fields of the signer model).
 */
/** Fields upstream sends as null although the reference does not mark them nullable (`scopes` when unset). */
const NULLABLE = ['audience', 'clientId', 'externalAuthUrl', 'kid', 'fingerprint', 'scopes'];
const DETAIL_NULLS = { allowNullAt: NULLABLE.map((f) => `/data/${f}`) };
const LIST_NULLS = { allowNullAt: NULLABLE.map((f) => `/data/*/${f}`) };
const CLIENT_NULLS = { allowNullAt: ['/data/*/externalAuthUrl', '/data/*/scopes'] };

const ZERO_TIME = '0001-01-01T00:00:00.000Z';

function certBody(signer: TestSigner, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: uniqueName('signer'), issuer: uniqueName('https://idp.example.com/'), audience: 'portcullis', enabled: true, certPem: signer.certPem, ...extra };
}

function jwksBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: uniqueName('jwks-signer'), issuer: uniqueName('https://jwks.example.com/'), audience: 'portcullis', enabled: true,
    jwksEndpoint: 'https://jwks.example.com/.well-known/jwks.json', ...extra,
  };
}

async function create(body: Record<string, unknown>): Promise<string> {
  const res = await tc.mgmt.post('/external-jwt-signers', body);
  assert.equal(res.status, 201, res.text);
  assertMatchesReference('management', 'POST', '/external-jwt-signers', 201, res.body);
  assert.equal(res.body.data._links.self.href, `./external-jwt-signers/${res.body.data.id}`);
  return res.body.data.id as string;
}

async function detail(id: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/external-jwt-signers/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/external-jwt-signers/{id}', 200, res.body, DETAIL_NULLS);
  return res.body.data;
}

async function count(): Promise<number> {
  const res = await tc.mgmt.get('/external-jwt-signers?limit=1');
  assert.equal(res.status, 200, res.text);
  return res.body.meta.pagination.totalCount as number;
}

/** The create is refused as `check` says and nothing is stored. */
async function expectCreateRejected(body: Record<string, unknown>, check: (res: any) => void): Promise<void> {
  const before = await count();
  const res = await tc.mgmt.post('/external-jwt-signers', body);
  check(res);
  assert.equal(await count(), before);
}

describe('external JWT signers: create and read', () => {
  it('creates a certificate signer; the read model derives fingerprint, common name and validity and fills defaults', async () => {
    const signer = await createTestSigner('Corporate IdP');
    const body = certBody(signer, { tags: { team: 'blue' } });
    const id = await create(body);
    const d = await detail(id);
    assert.equal(d.id, id);
    assert.match(d.createdAt, TIMESTAMP);
    assert.match(d.updatedAt, TIMESTAMP);
    assert.deepEqual(d.tags, { team: 'blue' });
    assert.equal(d.name, body.name);
    assert.equal(d.issuer, body.issuer);
    assert.equal(d.audience, 'portcullis');
    assert.equal(d.enabled, true);
    assert.equal(d.certPem, signer.certPem);
    assert.equal(d.jwksEndpoint, null);
    assert.equal(d.fingerprint, signer.fingerprint);
    assert.equal(d.commonName, 'Corporate IdP');
    assert.match(d.notBefore, TIMESTAMP);
    assert.match(d.notAfter, TIMESTAMP);
    assert.ok(new Date(d.notAfter) > new Date(d.notBefore));
    assert.equal(d.kid, null);
    assert.equal(d.claimsProperty, '/sub');
    assert.equal(d.useExternalId, false);
    assert.equal(d.externalAuthUrl, null);
    assert.equal(d.clientId, null);
    // As upstream: unset scopes are null; disabled enrollment flags and an unset attribute selector are left out.
    assert.ok('scopes' in d);
    assert.equal(d.scopes, null);
    assert.equal(d.targetToken, 'ACCESS');
    assert.equal('enrollToCertEnabled' in d, false);
    assert.equal('enrollToTokenEnabled' in d, false);
    assert.equal(d.enrollNameClaimsSelector, '/sub');
    assert.equal('enrollAttributeClaimsSelector' in d, false);
    assert.equal(d.enrollAuthPolicyId, 'default');
    assert.deepEqual(d._links, { self: { href: `./external-jwt-signers/${id}` } });
  });

  it('creates a JWKS signer with every optional field; certificate fields are empty', async () => {
    const body = jwksBody({
      kid: uniqueName('kid'), claimsProperty: 'email', useExternalId: true, externalAuthUrl: 'https://idp.example.com/authorize',
      clientId: 'portcullis-client', scopes: ['openid', 'email'], targetToken: 'ID', enrollToCertEnabled: true, enrollToTokenEnabled: true,
      enrollNameClaimsSelector: '/preferred_username', enrollAttributeClaimsSelector: '/groups', enrollAuthPolicyId: 'default',
    });
    const id = await create(body);
    const d = await detail(id);
    assert.equal(d.certPem, null);
    assert.equal(d.jwksEndpoint, body.jwksEndpoint);
    assert.equal(d.fingerprint, null);
    assert.equal(d.commonName, '');
    assert.equal(d.notBefore, ZERO_TIME);
    assert.equal(d.notAfter, ZERO_TIME);
    for (const field of ['kid', 'claimsProperty', 'useExternalId', 'externalAuthUrl', 'clientId', 'scopes', 'targetToken', 'enrollToCertEnabled',
      'enrollToTokenEnabled', 'enrollNameClaimsSelector', 'enrollAttributeClaimsSelector', 'enrollAuthPolicyId']) {
      assert.deepEqual(d[field], body[field], field);
    }
  });

  it('treats empty strings as unset: blank URLs become null, blank selectors and policy take their defaults', async () => {
    const id = await create(jwksBody({ externalAuthUrl: '', claimsProperty: '', enrollNameClaimsSelector: '', enrollAuthPolicyId: '' }));
    const d = await detail(id);
    assert.equal(d.externalAuthUrl, null);
    assert.equal(d.claimsProperty, '/sub');
    assert.equal(d.enrollNameClaimsSelector, '/sub');
    assert.equal(d.enrollAuthPolicyId, 'default');
  });

  it('lists with filter, sort and paging and reports the filterable fields', async () => {
    const tag = uniqueName('listing');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await create(jwksBody({ name: `${tag}-${i}` })));
    const res = await tc.mgmt.get(`/external-jwt-signers?filter=${encodeURIComponent(`name contains "${tag}"`)}&sort=${encodeURIComponent('name desc')}&limit=2`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/external-jwt-signers', 200, res.body, LIST_NULLS);
    assert.deepEqual(res.body.data.map((s: any) => s.name), [`${tag}-2`, `${tag}-1`]);
    assert.deepEqual(res.body.meta.pagination, { limit: 2, offset: 0, totalCount: 3 });
    for (const field of ['name', 'issuer', 'enabled', 'fingerprint', 'kid']) assert.ok(res.body.meta.filterableFields.includes(field), field);
    const page2 = await tc.mgmt.get(`/external-jwt-signers?filter=${encodeURIComponent(`name contains "${tag}"`)}&sort=name&offset=2`);
    assert.deepEqual(page2.body.data.map((s: any) => s.id), [ids[2]]);
  });
});

describe('external JWT signers: validation', () => {
  it('requires name, issuer, audience and enabled', async () => {
    const signer = await createTestSigner();
    for (const field of ['name', 'issuer', 'audience', 'enabled']) {
      const body = certBody(signer);
      delete body[field];
      await expectCreateRejected(body, (res) => assertFieldError(res, field));
    }
    await expectCreateRejected(certBody(signer, { issuer: '  ' }), (res) => assertFieldError(res, 'issuer'));
    // null is no audience (upstream: "audience in body is required"); found by the fuzz suite (test/interop/fuzz)
    await expectCreateRejected(certBody(signer, { audience: null }), (res) => assertFieldError(res, 'audience'));
    await expectCreateRejected(certBody(signer, { enabled: 'yes' }), (res) => assertDecodeError(res, 'enabled'));
  });

  it('requires exactly one of certPem and jwksEndpoint with upstream\'s 400 INVALID_FIELD, before the issuer, after reading the certificate', async () => {
    const signer = await createTestSigner();
    const neither = (res: HttpResponse) => assertInvalidField(res, 'certPem', '<nil>', 'jwksEndpoint or certPem is required');
    await expectCreateRejected(jwksBody({ jwksEndpoint: undefined }), neither);
    await expectCreateRejected(jwksBody({ jwksEndpoint: null, certPem: null }), neither);
    await expectCreateRejected(jwksBody({ jwksEndpoint: null, issuer: '' }), neither);
    await expectCreateRejected(jwksBody({ certPem: signer.certPem }), (res) => assertInvalidField(res, 'jwksEndpoint', 'https://jwks.example.com/.well-known/jwks.json', 'only one of jwksEndpoint or certPem may be defined'));
    await expectCreateRejected(jwksBody({ certPem: 'not a pem' }), (res) => assertError(res, 400, 'INVALID_CERT_PEM'));
  });

  it('refuses a certPem that is not exactly one parsable certificate with INVALID_CERT_PEM', async () => {
    const a = await createTestSigner();
    const b = await createTestSigner();
    const garbage = '-----BEGIN CERTIFICATE-----\nTUlJQm9ndXM=\n-----END CERTIFICATE-----\n';
    for (const certPem of ['not a pem at all', garbage, a.certPem + b.certPem, '-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n']) {
      await expectCreateRejected(certBody(a, { certPem }), (res) => assertError(res, 400, 'INVALID_CERT_PEM'));
    }
  });

  it('validates URLs, the target token enum, scopes and the claim selectors', async () => {
    await expectCreateRejected(jwksBody({ jwksEndpoint: 'not a uri' }), (res) => assertFieldError(res, 'jwksEndpoint'));
    await expectCreateRejected(jwksBody({ jwksEndpoint: 'ftp://example.com/keys' }), (res) => assertFieldError(res, 'jwksEndpoint'));
    await expectCreateRejected(jwksBody({ externalAuthUrl: 'nowhere' }), (res) => assertFieldError(res, 'externalAuthUrl'));
    await expectCreateRejected(jwksBody({ targetToken: 'REFRESH' }), (res) => assertFieldError(res, 'targetToken'));
    await expectCreateRejected(jwksBody({ scopes: 'openid' }), (res) => assertDecodeError(res, 'scopes'));
    await expectCreateRejected(jwksBody({ enrollAttributeClaimsSelector: '/groups~2' }), (res) => assertFieldError(res, 'enrollAttributeClaimsSelector'));
    await expectCreateRejected(jwksBody({ claimsProperty: 'a~' }), (res) => assertFieldError(res, 'claimsProperty'));
  });

  it('refuses JWKS endpoints on link-local and cloud metadata addresses, in any spelling', async () => {
    const refused = [
      'http://169.254.169.254/latest/meta-data/',
      'http://0xa9.0xfe.0xa9.0xfe/jwks',
      'http://2852039166/jwks',
      'http://[::ffff:169.254.169.254]/jwks',
      'https://[fe80::1]:8443/jwks',
      'http://[fd00:ec2::254]/jwks',
      'file:///etc/passwd',
    ];
    for (const jwksEndpoint of refused) {
      await expectCreateRejected(jwksBody({ jwksEndpoint }), (res) => {
        assertFieldError(res, 'jwksEndpoint');
        assert.equal(res.body.error.cause.value, jwksEndpoint);
        assert.match(res.body.error.cause.reason, /link-local or cloud metadata|http or https URL/);
      });
    }
    // Loopback and private addresses stay allowed (self-hosted identity providers).
    await create(jwksBody({ jwksEndpoint: 'http://127.0.0.1:8080/jwks' }));
    await create(jwksBody({ jwksEndpoint: 'http://10.0.0.7/jwks' }));
    await create(jwksBody({ jwksEndpoint: 'https://[::1]/jwks' }));
  });

  it('requires the enrollment auth policy to exist and to allow what enrollment is enabled for', async () => {
    await expectCreateRejected(jwksBody({ enrollAuthPolicyId: 'no-such-policy' }), (res) => assertFieldError(res, 'enrollAuthPolicyId'));
    const noExtJwt = await insertAuthPolicy(tc, { extJwt: { allowed: false } });
    const noCert = await insertAuthPolicy(tc, { cert: { allowed: false } });
    await expectCreateRejected(jwksBody({ enrollAuthPolicyId: noExtJwt, enrollToTokenEnabled: true }), (res) => assertFieldError(res, 'enrollAuthPolicyId'));
    await expectCreateRejected(jwksBody({ enrollAuthPolicyId: noCert, enrollToCertEnabled: true }), (res) => assertFieldError(res, 'enrollAuthPolicyId'));
    // Without the matching enrollment mode the same policies are fine.
    await create(jwksBody({ enrollAuthPolicyId: noExtJwt, enrollToCertEnabled: true }));
    await create(jwksBody({ enrollAuthPolicyId: noCert, enrollToTokenEnabled: true }));
  });

  it('keeps name, issuer, kid and certificate unique', async () => {
    const signer = await createTestSigner();
    const first = certBody(signer, { kid: uniqueName('kid') });
    await create(first);
    await expectCreateRejected(jwksBody({ name: first.name }), (res) => assertFieldError(res, 'name'));
    await expectCreateRejected(jwksBody({ issuer: first.issuer }), (res) => assertFieldError(res, 'issuer'));
    await expectCreateRejected(jwksBody({ kid: first.kid }), (res) => assertFieldError(res, 'kid'));
    await expectCreateRejected(certBody(signer), (res) => assertFieldError(res, 'fingerprint'));
  });
});

describe('external JWT signers: update and delete', () => {
  it('patches only the supplied fields', async () => {
    const signer = await createTestSigner();
    const body = certBody(signer, { clientId: 'abc', scopes: ['openid'] });
    const id = await create(body);
    const before = await detail(id);
    const res = await tc.mgmt.patch(`/external-jwt-signers/${id}`, { enabled: false, name: `${body.name}-renamed`, audience: null });
    assertEmptyOk(res);
    const d = await detail(id);
    assert.equal(d.enabled, false);
    assert.equal(d.name, `${body.name}-renamed`);
    assert.equal(d.audience, 'portcullis');
    assert.equal(d.clientId, 'abc');
    assert.deepEqual(d.scopes, ['openid']);
    assert.equal(d.fingerprint, signer.fingerprint);
    assert.equal(d.createdAt, before.createdAt);
  });

  it('put replaces every field; switching from a certificate to a JWKS endpoint clears the fingerprint', async () => {
    const signer = await createTestSigner();
    const id = await create(certBody(signer, { clientId: 'abc', scopes: ['openid'], targetToken: 'ID' }));
    const replacement = jwksBody();
    assertEmptyOk(await tc.mgmt.put(`/external-jwt-signers/${id}`, replacement));
    const d = await detail(id);
    assert.equal(d.name, replacement.name);
    assert.equal(d.certPem, null);
    assert.equal(d.jwksEndpoint, replacement.jwksEndpoint);
    assert.equal(d.fingerprint, null);
    assert.equal(d.clientId, null);
    assert.equal(d.scopes, null);
    assert.equal(d.targetToken, 'ACCESS');
    // and back: the certificate's fingerprint returns
    assertEmptyOk(await tc.mgmt.put(`/external-jwt-signers/${id}`, { ...replacement, jwksEndpoint: null, certPem: signer.certPem }));
    assert.equal((await detail(id)).fingerprint, signer.fingerprint);
  });

  it('validates updates against the resulting record and changes nothing on failure', async () => {
    const signer = await createTestSigner();
    const id = await create(certBody(signer));
    const before = await detail(id);
    assertInvalidField(
      await tc.mgmt.patch(`/external-jwt-signers/${id}`, { jwksEndpoint: 'https://x.example.com/jwks' }), 'jwksEndpoint', 'https://x.example.com/jwks',
      'only one of jwksEndpoint or certPem may be defined',
    );
    assertInvalidField(await tc.mgmt.put(`/external-jwt-signers/${id}`, { name: 'x', issuer: 'y', audience: 'z', enabled: true }), 'certPem', '<nil>', 'jwksEndpoint or certPem is required');
    assertFieldError(await tc.mgmt.put(`/external-jwt-signers/${id}`, { name: 'x', enabled: true, audience: 'z', certPem: signer.certPem }), 'issuer');
    assertFieldError(await tc.mgmt.put(`/external-jwt-signers/${id}`, { name: 'x', issuer: 'y', audience: null, enabled: true, certPem: signer.certPem }), 'audience');
    assertError(await tc.mgmt.patch(`/external-jwt-signers/${id}`, { certPem: 'junk' }), 400, 'INVALID_CERT_PEM');
    assertFieldError(await tc.mgmt.patch(`/external-jwt-signers/${id}`, { enrollAuthPolicyId: 'missing' }), 'enrollAuthPolicyId');
    assert.deepEqual(await detail(id), before);
  });

  it('refuses a PUT or PATCH to a link-local or cloud metadata JWKS endpoint and changes nothing', async () => {
    const id = await create(jwksBody());
    const before = await detail(id);
    const patch = await tc.mgmt.patch(`/external-jwt-signers/${id}`, { jwksEndpoint: 'http://169.254.169.254/jwks' });
    assertFieldError(patch, 'jwksEndpoint');
    assert.match(patch.body.error.cause.reason, /link-local or cloud metadata/);
    assertFieldError(await tc.mgmt.patch(`/external-jwt-signers/${id}`, { jwksEndpoint: 'http://[::ffff:a9fe:a9fe]/' }), 'jwksEndpoint');
    assertFieldError(await tc.mgmt.put(`/external-jwt-signers/${id}`, jwksBody({ jwksEndpoint: 'http://[fe80::a:b]/jwks' })), 'jwksEndpoint');
    assertFieldError(await tc.mgmt.put(`/external-jwt-signers/${id}`, jwksBody({ jwksEndpoint: 'http://0251.0376.0251.0376/jwks' })), 'jwksEndpoint');
    assert.deepEqual(await detail(id), before);
  });

  it('answers unknown ids with 404 NOT_FOUND', async () => {
    const signer = await createTestSigner();
    assertError(await tc.mgmt.get('/external-jwt-signers/nope'), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.patch('/external-jwt-signers/nope', { enabled: false }), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.put('/external-jwt-signers/nope', certBody(signer)), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.delete('/external-jwt-signers/nope'), 404, 'NOT_FOUND');
  });

  it('deletes a signer; one referenced by an auth policy (primary or secondary) is refused with 409', async () => {
    const plain = await create(jwksBody());
    assertEmptyOk(await tc.mgmt.delete(`/external-jwt-signers/${plain}`));
    assertError(await tc.mgmt.get(`/external-jwt-signers/${plain}`), 404, 'NOT_FOUND');

    const primaryRef = await create(jwksBody());
    const secondaryRef = await create(jwksBody());
    const p1 = await insertAuthPolicy(tc, { extJwt: { allowed: true, allowedSigners: [primaryRef] } });
    const p2 = await insertAuthPolicy(tc, {}, { requireExtJwtSigner: secondaryRef });
    const r1 = await tc.mgmt.delete(`/external-jwt-signers/${primaryRef}`);
    assertError(r1, 409, 'CAN_NOT_DELETE_REFERENCED_ENTITY');
    assert.match(r1.body.error.cause.message, new RegExp(p1));
    assertError(await tc.mgmt.delete(`/external-jwt-signers/${secondaryRef}`), 409, 'CAN_NOT_DELETE_REFERENCED_ENTITY');
    await detail(primaryRef);
    await detail(secondaryRef);
    // Once the policies let go, the signers can be deleted.
    await tc.controller.store.write((tx) => tx.run('DELETE FROM auth_policies WHERE id IN (?, ?)', [p1, p2]));
    assertEmptyOk(await tc.mgmt.delete(`/external-jwt-signers/${primaryRef}`));
    assertEmptyOk(await tc.mgmt.delete(`/external-jwt-signers/${secondaryRef}`));
  });
});

describe('external JWT signers: permissions', () => {
  it('refuses callers without a session and non-admins with 401; the external-jwt-signer.read permission may list but not write', async () => {
    const id = await create(jwksBody());
    const anonymous = createClient(tc.mgmt.baseUrl, tc.ca);
    assertError(await anonymous.get('/external-jwt-signers'), 401, 'UNAUTHORIZED');
    assertError(await anonymous.post('/external-jwt-signers', jwksBody()), 401, 'UNAUTHORIZED');

    const plain = await createUserWithPassword(tc);
    const user = tc.mgmt.as({ token: plain.token });
    assertError(await user.get('/external-jwt-signers'), 401, 'UNAUTHORIZED');
    assertError(await user.get(`/external-jwt-signers/${id}`), 401, 'UNAUTHORIZED');
    assertError(await user.post('/external-jwt-signers', jwksBody()), 401, 'UNAUTHORIZED');
    assertError(await user.patch(`/external-jwt-signers/${id}`, { enabled: false }), 401, 'UNAUTHORIZED');
    assertError(await user.delete(`/external-jwt-signers/${id}`), 401, 'UNAUTHORIZED');

    const reader = await createUserWithPassword(tc, { permissions: ['external-jwt-signer.read'] });
    const readerClient = tc.mgmt.as({ token: reader.token });
    assert.equal((await readerClient.get('/external-jwt-signers')).status, 200);
    assert.equal((await readerClient.get(`/external-jwt-signers/${id}`)).status, 200);
    assertError(await readerClient.post('/external-jwt-signers', jwksBody()), 401, 'UNAUTHORIZED');
    assertError(await readerClient.delete(`/external-jwt-signers/${id}`), 401, 'UNAUTHORIZED');
  });
});

describe('client API: GET /external-jwt-signers', () => {
  it('is public and lists only enabled signers in the client read model', async () => {
    const tag = uniqueName('client-list');
    const enabled = await create(jwksBody({
      name: `${tag}-on`, clientId: 'spa', scopes: ['openid', 'profile'], externalAuthUrl: 'https://idp.example.com/auth', targetToken: 'ID',
      enrollToTokenEnabled: true,
    }));
    await create(jwksBody({ name: `${tag}-off`, enabled: false }));
    const anonymous = createClient(`${tc.client.baseUrl}`, tc.ca);
    const res = await anonymous.get(`/external-jwt-signers?filter=${encodeURIComponent(`name contains "${tag}"`)}`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('client', 'GET', '/external-jwt-signers', 200, res.body, CLIENT_NULLS);
    assert.equal(res.body.data.length, 1);
    const s = res.body.data[0];
    assert.deepEqual(Object.keys(s).sort(), [
      '_links', 'audience', 'clientId', 'createdAt', 'enrollToTokenEnabled', 'externalAuthUrl', 'id', 'name',
      'scopes', 'tags', 'targetToken', 'updatedAt',
    ]);
    assert.equal(s.id, enabled);
    assert.equal(s.clientId, 'spa');
    assert.deepEqual(s.scopes, ['openid', 'profile']);
    assert.equal(s.externalAuthUrl, 'https://idp.example.com/auth');
    assert.equal(s.targetToken, 'ID');
    assert.equal(s.audience, 'portcullis');
    assert.equal(s.enrollToTokenEnabled, true);
    assert.equal(s.enrollToCertEnabled, undefined, 'left out when false');
    assert.equal(res.body.meta.pagination.totalCount, 1);
  });

  it('leaves out an unset clientId and disabled enrollment flags and sends unset scopes as null, as upstream', async () => {
    const tag = uniqueName('client-bare');
    const id = await create(jwksBody({ name: tag }));
    const res = await createClient(`${tc.client.baseUrl}`, tc.ca).get(`/external-jwt-signers?filter=${encodeURIComponent(`name = "${tag}"`)}`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('client', 'GET', '/external-jwt-signers', 200, res.body, CLIENT_NULLS);
    const s = res.body.data[0];
    assert.equal(s.id, id);
    assert.deepEqual(Object.keys(s).sort(), ['_links', 'audience', 'createdAt', 'externalAuthUrl', 'id', 'name', 'scopes', 'tags', 'targetToken', 'updatedAt']);
    assert.equal(s.scopes, null);
    assert.equal(s.externalAuthUrl, null);
  });
});
