/**
 * `/auth-policies` on the management API: list and detail (with the default system policy), create, put,
 * patch and delete, the normalisation on save, signer references that must exist, delete refused while
 * identities reference a policy (and always for `default`), bad input and permissions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { createClient } from '../../support/client.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertDecodeError, assertEmptyOk, assertError, assertFieldError, TIMESTAMP } from '../../support/assertions.ts';
import { createTestSigner } from '../../support/external-signer.ts';

const tc: TestController = await startTestController();
const signer = await createTestSigner('policy-idp');

function primary(overrides: { cert?: object; updb?: object; extJwt?: object } = {}) {
  return {
    cert: { allowed: true, allowExpiredCerts: false, ...overrides.cert },
    updb: {
      allowed: true,
      minPasswordLength: 8,
      requireSpecialChar: true,
      requireNumberChar: false,
      requireMixedCase: true,
      maxAttempts: 4,
      lockoutDurationMinutes: 10,
      ...overrides.updb,
    },
    extJwt: { allowed: false, allowedSigners: [], ...overrides.extJwt },
  };
}

async function createPolicy(body: Record<string, unknown> = {}): Promise<string> {
  const res = await tc.mgmt.post('/auth-policies', { name: uniqueName('policy'), primary: primary(), secondary: { requireTotp: false }, ...body });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

async function detail(id: string) {
  const res = await tc.mgmt.get(`/auth-policies/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/auth-policies/{id}', 200, res.body);
  return res.body.data;
}

const signerId = await (async () => {
  const res = await tc.mgmt.post('/external-jwt-signers', {
    name: uniqueName('signer'), issuer: `https://${uniqueName('issuer')}.example`, audience: 'portcullis', enabled: true, certPem: signer.certPem,
  });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
})();

describe('auth policy list and detail', () => {
  it('lists the default system policy with its read model', async () => {
    const res = await tc.mgmt.get('/auth-policies?filter=' + encodeURIComponent('name = "Default"'));
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/auth-policies', 200, res.body);
    assert.equal(res.body.data.length, 1);
    const d = res.body.data[0];
    assert.equal(d.id, 'default');
    assert.deepEqual(d.primary, {
      cert: { allowed: true, allowExpiredCerts: true },
      extJwt: { allowed: true, allowedSigners: [] },
      updb: { allowed: true, lockoutDurationMinutes: 0, maxAttempts: 0, minPasswordLength: 5, requireMixedCase: false, requireNumberChar: false, requireSpecialChar: false },
    });
    assert.deepEqual(d.secondary, { requireTotp: false });
    assert.equal(d._links.self.href, './auth-policies/default');
    assert.match(d.createdAt, TIMESTAMP);
    assertError(await tc.mgmt.get('/auth-policies/no-such-policy'), 404, 'NOT_FOUND');
  });
});

describe('auth policy create', () => {
  it('creates a policy and normalises limits on save', async () => {
    const name = uniqueName('policy');
    const res = await tc.mgmt.post('/auth-policies', {
      name,
      primary: primary({ updb: { minPasswordLength: 3, maxAttempts: -1, lockoutDurationMinutes: -7 }, extJwt: { allowed: true, allowedSigners: [signerId] } }),
      secondary: { requireTotp: true, requireExtJwtSigner: signerId },
      tags: { team: 'blue' },
    });
    assert.equal(res.status, 201, res.text);
    assertMatchesReference('management', 'POST', '/auth-policies', 201, res.body);
    const id = res.body.data.id as string;
    assert.equal(res.body.data._links.self.href, `./auth-policies/${id}`);
    const d = await detail(id);
    assert.equal(d.name, name);
    assert.deepEqual(d.tags, { team: 'blue' });
    assert.equal(d.primary.updb.minPasswordLength, 5);
    assert.equal(d.primary.updb.maxAttempts, 0);
    assert.equal(d.primary.updb.lockoutDurationMinutes, 0);
    assert.deepEqual(d.primary.extJwt, { allowed: true, allowedSigners: [signerId] });
    assert.deepEqual(d.secondary, { requireTotp: true, requireExtJwtSigner: signerId });
  });

  it('refuses bad input', async () => {
    const good = { name: uniqueName('policy'), primary: primary(), secondary: { requireTotp: false } };
    const { name: _n, ...noName } = good;
    assertError(await tc.mgmt.post('/auth-policies', noName), 400, 'COULD_NOT_VALIDATE');
    const { primary: _p, ...noPrimary } = good;
    assertError(await tc.mgmt.post('/auth-policies', noPrimary), 400, 'COULD_NOT_VALIDATE');
    const { secondary: _s, ...noSecondary } = good;
    assertError(await tc.mgmt.post('/auth-policies', noSecondary), 400, 'COULD_NOT_VALIDATE');
    const p = primary();
    const { allowed: _a, ...updbNoAllowed } = p.updb;
    assertError(await tc.mgmt.post('/auth-policies', { ...good, primary: { ...p, updb: updbNoAllowed } }), 400, 'COULD_NOT_VALIDATE');
    assertError(await tc.mgmt.post('/auth-policies', { ...good, primary: { cert: p.cert, updb: p.updb } }), 400, 'COULD_NOT_VALIDATE');
    assertDecodeError(await tc.mgmt.post('/auth-policies', { ...good, primary: primary({ updb: { maxAttempts: 'three' } }) }), 'primary.updb.maxAttempts');
    assertError(await tc.mgmt.post('/auth-policies', { ...good, secondary: {} }), 400, 'COULD_NOT_VALIDATE');
    assertDecodeError(await tc.mgmt.post('/auth-policies', { ...good, secondary: { requireTotp: 'yes' } }), 'secondary.requireTotp');
    assertFieldError(await tc.mgmt.post('/auth-policies', { ...good, name: '' }), 'name');
    assertError(await tc.mgmt.post('/auth-policies', { ...good, name: 'Default' }), 400, 'COULD_NOT_VALIDATE');
    const wrongType = await tc.mgmt.post('/auth-policies', undefined, { rawBody: 'name=x', contentType: 'text/plain' });
    assert.equal(wrongType.status, 415, wrongType.text);

    const unknownAllowed = await tc.mgmt.post('/auth-policies', { ...good, primary: primary({ extJwt: { allowed: true, allowedSigners: ['nope'] } }) });
    assertError(unknownAllowed, 404, 'NOT_FOUND');
    assert.equal(unknownAllowed.body.error.cause.field, 'primary.extJwt.allowedSigners');
    const unknownRequired = await tc.mgmt.post('/auth-policies', { ...good, secondary: { requireTotp: false, requireExtJwtSigner: 'nope' } });
    assertError(unknownRequired, 404, 'NOT_FOUND');
    assert.equal(unknownRequired.body.error.cause.field, 'secondary.requireExtJwtSigner');
  });
});

describe('auth policy update', () => {
  it('put replaces every field', async () => {
    const id = await createPolicy({ secondary: { requireTotp: true, requireExtJwtSigner: signerId } });
    const name = uniqueName('renamed');
    assertEmptyOk(await tc.mgmt.put(`/auth-policies/${id}`, { name, primary: primary({ cert: { allowed: false } }), secondary: { requireTotp: false } }));
    const d = await detail(id);
    assert.equal(d.name, name);
    assert.equal(d.primary.cert.allowed, false);
    assert.deepEqual(d.secondary, { requireTotp: false });
    assertError(await tc.mgmt.put(`/auth-policies/${id}`, { name }), 400, 'COULD_NOT_VALIDATE');
    assertError(await tc.mgmt.put('/auth-policies/no-such-policy', { name, primary: primary(), secondary: { requireTotp: false } }), 404, 'NOT_FOUND');
    const unknown = await tc.mgmt.put(`/auth-policies/${id}`, { name, primary: primary(), secondary: { requireTotp: false, requireExtJwtSigner: 'nope' } });
    assertError(unknown, 404, 'NOT_FOUND');
  });

  it('patch changes only the supplied members', async () => {
    const id = await createPolicy({ secondary: { requireTotp: true, requireExtJwtSigner: signerId } });
    const before = await detail(id);
    assertEmptyOk(await tc.mgmt.patch(`/auth-policies/${id}`, { primary: { updb: { maxAttempts: 9, requireNumberChar: null }, cert: null } }));
    const after = await detail(id);
    assert.equal(after.name, before.name);
    assert.deepEqual(after.primary.cert, before.primary.cert);
    assert.deepEqual(after.primary.updb, { ...before.primary.updb, maxAttempts: 9 });
    assert.deepEqual(after.secondary, before.secondary);

    assertEmptyOk(await tc.mgmt.patch(`/auth-policies/${id}`, { name: null, secondary: { requireTotp: false } }));
    const third = await detail(id);
    assert.equal(third.name, before.name);
    assert.deepEqual(third.secondary, { requireTotp: false, requireExtJwtSigner: signerId });
    // An explicit null clears the required signer.
    assertEmptyOk(await tc.mgmt.patch(`/auth-policies/${id}`, { secondary: { requireExtJwtSigner: null } }));
    assert.deepEqual((await detail(id)).secondary, { requireTotp: false });
    assertEmptyOk(await tc.mgmt.patch(`/auth-policies/${id}`, { primary: { updb: { minPasswordLength: 1 } } }));
    assert.equal((await detail(id)).primary.updb.minPasswordLength, 5);

    assertDecodeError(await tc.mgmt.patch(`/auth-policies/${id}`, { primary: { updb: { maxAttempts: 'x' } } }), 'primary.updb.maxAttempts');
    assertError(await tc.mgmt.patch(`/auth-policies/${id}`, { primary: { extJwt: { allowedSigners: ['nope'] } } }), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.patch('/auth-policies/no-such-policy', { name: 'x' }), 404, 'NOT_FOUND');
  });

  it('the default policy can be updated', async () => {
    const d = await detail('default');
    assertEmptyOk(await tc.mgmt.patch('/auth-policies/default', { primary: { updb: { maxAttempts: 0 } }, tags: { note: 'kept' } }));
    const after = await detail('default');
    assert.deepEqual(after.primary, d.primary);
    assert.deepEqual(after.tags, { note: 'kept' });
  });
});

describe('auth policy delete', () => {
  it('refuses while an identity references the policy, then deletes', async () => {
    const id = await createPolicy();
    const identityId = await createIdentity(tc.mgmt, { authPolicyId: id });
    const refused = await tc.mgmt.delete(`/auth-policies/${id}`);
    assertError(refused, 409, 'CAN_NOT_DELETE_REFERENCED_ENTITY');
    assert.match(refused.body.error.cause.message, new RegExp(identityId));
    assertEmptyOk(await tc.mgmt.patch(`/identities/${identityId}`, { authPolicyId: 'default' }));
    const res = await tc.mgmt.delete(`/auth-policies/${id}`);
    assertEmptyOk(res);
    assertMatchesReference('management', 'DELETE', '/auth-policies/{id}', 200, res.body);
    assertError(await tc.mgmt.get(`/auth-policies/${id}`), 404, 'NOT_FOUND');
    assertError(await tc.mgmt.delete(`/auth-policies/${id}`), 404, 'NOT_FOUND');
  });

  it('refuses while an external JWT signer enrolls into the policy', async () => {
    const id = await createPolicy({ primary: primary({ extJwt: { allowed: true, allowedSigners: [] } }) });
    const res = await tc.mgmt.post('/external-jwt-signers', {
      name: uniqueName('enroller'), issuer: `https://${uniqueName('iss')}.example`, audience: 'a', enabled: true,
      certPem: (await createTestSigner('enroller')).certPem, enrollToTokenEnabled: true, enrollAuthPolicyId: id,
    });
    assert.equal(res.status, 201, res.text);
    assertError(await tc.mgmt.delete(`/auth-policies/${id}`), 409, 'CAN_NOT_DELETE_REFERENCED_ENTITY');
  });

  it('never deletes the default policy', async () => {
    const res = await tc.mgmt.delete('/auth-policies/default');
    assert.ok(res.status === 409 || res.status === 400, res.text);
    assert.ok(['CAN_NOT_DELETE_REFERENCED_ENTITY', 'ENTITY_CAN_NOT_BE_DELETED'].includes(res.body.error.code), res.text);
    assert.equal((await tc.mgmt.get('/auth-policies/default')).status, 200);
  });
});

describe('auth policy permissions', () => {
  it('needs auth-policy permissions', async () => {
    const plain = await createUserWithPassword(tc);
    const reader = await createUserWithPassword(tc, { permissions: ['auth-policy.read'] });
    const base = `https://127.0.0.1:${tc.port}/edge/management/v1`;
    const asPlain = createClient(base, tc.ca, { token: plain.token });
    const asReader = createClient(base, tc.ca, { token: reader.token });
    const body = { name: uniqueName('policy'), primary: primary(), secondary: { requireTotp: false } };
    assertError(await asPlain.get('/auth-policies'), 401, 'UNAUTHORIZED');
    assertError(await asPlain.post('/auth-policies', body), 401, 'UNAUTHORIZED');
    assert.equal((await asReader.get('/auth-policies')).status, 200);
    assert.equal((await asReader.get('/auth-policies/default')).status, 200);
    assertError(await asReader.post('/auth-policies', body), 401, 'UNAUTHORIZED');
    assertError(await asReader.patch('/auth-policies/default', { name: 'x' }), 401, 'UNAUTHORIZED');
    assertError(await asReader.delete('/auth-policies/default'), 401, 'UNAUTHORIZED');
    assertError(await tc.http.get('/edge/management/v1/auth-policies'), 401, 'UNAUTHORIZED');
  });
});
