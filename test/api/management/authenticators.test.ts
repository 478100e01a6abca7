/**
 * Management authenticators: create (updb), list across identities, detail, patch, put and delete, with
 * the effect of each on password login, every validation failure, unknown ids and permissions. Passwords
 * are write-only: no response ever carries a password or its hash.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { identityRef } from '../../support/refs.ts';
import { ADMIN_USER, startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import type { HttpResponse } from '../../support/client.ts';
import { createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { ERROR_META, TIMESTAMP, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();

const PASSWORD = 'Initial-pass-1';

/** No password, hash or salt in a response, whatever its shape. */
function assertNoSecrets(res: HttpResponse, ...passwords: string[]): void {
  for (const p of passwords) assert.ok(!res.text.includes(p), `response shows a password: ${res.text}`);
  assert.doesNotMatch(res.text, /"password"|"passwordHash"|"salt"|\$argon2/i, res.text);
}

async function login(username: string, password: string): Promise<HttpResponse> {
  return tc.http.post('/edge/management/v1/authenticate?method=password', { username, password });
}

async function assertLoginWorks(username: string, password: string): Promise<void> {
  const res = await login(username, password);
  assert.equal(res.status, 200, `login of ${username}: ${res.text}`);
}

async function assertLoginFails(username: string, password: string): Promise<void> {
  const res = await login(username, password);
  assertError(res, 401, 'INVALID_AUTH');
}

async function authenticatorCount(): Promise<number> {
  const res = await tc.mgmt.get('/authenticators?limit=1');
  assert.equal(res.status, 200, res.text);
  return res.body.meta.pagination.totalCount as number;
}

/** An identity with an updb authenticator created through POST /authenticators. */
async function createUpdb(): Promise<{ identityId: string; id: string; username: string; password: string }> {
  const identityId = await createIdentity(tc.mgmt);
  const username = uniqueName('user');
  const res = await tc.mgmt.post('/authenticators', { method: 'updb', identityId, username, password: PASSWORD });
  assert.equal(res.status, 201, res.text);
  return { identityId, id: res.body.data.id, username, password: PASSWORD };
}

async function detail(id: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/authenticators/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/authenticators/{id}', 200, res.body);
  assertNoSecrets(res, PASSWORD);
  return res.body.data;
}

async function expectCreateRejected(body: Record<string, unknown>, check: (res: HttpResponse) => void): Promise<void> {
  const before = await authenticatorCount();
  const res = await tc.mgmt.post('/authenticators', body);
  check(res);
  if (res.status === 400 || res.status === 401) assertMatchesReference('management', 'POST', '/authenticators', res.status, res.body);
  assert.equal(await authenticatorCount(), before, 'no authenticator was created');
}

function assertAuthenticatorNotFound(res: HttpResponse, id: string): void {
  assertError(res, 404, 'NOT_FOUND');
  assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: `authenticator with id ${id} not found` });
}

describe('POST /authenticators', () => {
  it('creates a password authenticator and answers 201 with its id and self link; the identity can then log in', async () => {
    const identityId = await createIdentity(tc.mgmt);
    const username = uniqueName('user');
    const res = await tc.mgmt.post('/authenticators', { method: 'updb', identityId, username, password: PASSWORD, tags: { source: 'test' } });
    assert.equal(res.status, 201, res.text);
    assertMatchesReference('management', 'POST', '/authenticators', 201, res.body);
    const id = res.body.data.id;
    assert.deepEqual(res.body, { data: { id, _links: { self: { href: `./authenticators/${id}` } } }, meta: {} });
    assertNoSecrets(res, PASSWORD);
    const loggedIn = await login(username, PASSWORD);
    assert.equal(loggedIn.status, 200, loggedIn.text);
    assert.equal(loggedIn.body.data.identityId, identityId);
    assert.equal(loggedIn.body.data.authenticatorId, id);
  });

  it('rejects a username shorter than 4 characters with COULD_NOT_VALIDATE naming the field', async () => {
    const identityId = await createIdentity(tc.mgmt);
    await expectCreateRejected({ method: 'updb', identityId, username: 'abc', password: PASSWORD }, (res) => assertFieldError(res, 'username'));
  });

  it('rejects a password shorter than 5 characters with COULD_NOT_VALIDATE naming the field', async () => {
    const identityId = await createIdentity(tc.mgmt);
    await expectCreateRejected({ method: 'updb', identityId, username: uniqueName('user'), password: 'abcd' }, (res) => assertFieldError(res, 'password'));
  });

  it('rejects a username or password longer than 100 characters with COULD_NOT_VALIDATE naming the field', async () => {
    const identityId = await createIdentity(tc.mgmt);
    await expectCreateRejected({ method: 'updb', identityId, username: 'u'.repeat(101), password: PASSWORD }, (res) => assertFieldError(res, 'username'));
    await expectCreateRejected({ method: 'updb', identityId, username: uniqueName('user'), password: 'p'.repeat(101) }, (res) => assertFieldError(res, 'password'));
  });

  it('rejects a missing identityId with COULD_NOT_VALIDATE naming the field', async () => {
    await expectCreateRejected({ method: 'updb', username: uniqueName('user'), password: PASSWORD }, (res) => assertFieldError(res, 'identityId'));
  });

  it('rejects a missing method with COULD_NOT_VALIDATE naming the field', async () => {
    const identityId = await createIdentity(tc.mgmt);
    await expectCreateRejected({ identityId, username: uniqueName('user'), password: PASSWORD }, (res) => assertFieldError(res, 'method'));
  });

  it('answers an identityId that does not exist with 404 NOT_FOUND', async () => {
    await expectCreateRejected({ method: 'updb', identityId: 'noSuchIdentity', username: uniqueName('user'), password: PASSWORD }, (res) =>
      assertError(res, 404, 'NOT_FOUND'),
    );
  });

  it('rejects an unknown method with 400', async () => {
    const identityId = await createIdentity(tc.mgmt);
    await expectCreateRejected({ method: 'foo', identityId, username: uniqueName('user'), password: PASSWORD }, (res) => {
      assert.equal(res.status, 400, res.text);
      assert.equal(typeof res.body.error?.code, 'string');
      assert.deepEqual(res.body.meta, ERROR_META);
    });
  });

  it('rejects a cert authenticator whose certPem is not a certificate with 400 and creates nothing', async () => {
    const identityId = await createIdentity(tc.mgmt);
    const notACertificate = '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n';
    for (const certPem of [notACertificate, 'plain text', '']) {
      await expectCreateRejected({ method: 'cert', identityId, certPem }, (res) => {
        assert.equal(res.status, 400, res.text);
        assert.equal(typeof res.body.error?.code, 'string');
        assert.deepEqual(res.body.meta, ERROR_META);
      });
    }
    assert.deepEqual((await tc.mgmt.get(`/identities/${identityId}`)).body.data.authenticators, {});
  });

  it('rejects password fields on a cert authenticator with 400 INVALID_AUTHENTICATOR_PROPERTIES', async () => {
    const identityId = await createIdentity(tc.mgmt);
    await expectCreateRejected({ method: 'cert', identityId, username: uniqueName('user'), password: PASSWORD, certPem: 'x' }, (res) =>
      assertError(res, 400, 'INVALID_AUTHENTICATOR_PROPERTIES'),
    );
  });

  it('refuses a second password authenticator for the same identity with 409 MAX_AUTHENTICATOR_METHODS_REACHED', async () => {
    const first = await createUpdb();
    await expectCreateRejected({ method: 'updb', identityId: first.identityId, username: uniqueName('user'), password: PASSWORD }, (res) => {
      assertError(res, 409, 'MAX_AUTHENTICATOR_METHODS_REACHED');
      assert.equal(res.body.error.cause, undefined, 'without a cause, as upstream');
    });
    await assertLoginWorks(first.username, first.password);
  });

  it('rejects a username another authenticator already uses with COULD_NOT_VALIDATE naming the field', async () => {
    const first = await createUpdb();
    const identityId = await createIdentity(tc.mgmt);
    await expectCreateRejected({ method: 'updb', identityId, username: first.username, password: 'Other-pass-2' }, (res) =>
      assertFieldError(res, 'username'),
    );
    await assertLoginWorks(first.username, first.password);
    await assertLoginFails(first.username, 'Other-pass-2');
  });
});

describe('GET /authenticators', () => {
  it('lists the authenticators of every identity, including the default admin', async () => {
    const mine = await createUpdb();
    const other = await createUpdb();
    const res = await tc.mgmt.get('/authenticators?limit=500');
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/authenticators', 200, res.body);
    assertNoSecrets(res, PASSWORD);
    const byId = new Map<string, any>(res.body.data.map((a: { id: string }) => [a.id, a]));
    assert.equal(byId.get(mine.id)?.identityId, mine.identityId);
    assert.equal(byId.get(other.id)?.identityId, other.identityId);
    assert.ok(res.body.data.some((a: { username?: string }) => a.username === ADMIN_USER), 'lists the admin authenticator');
    assert.equal(res.body.meta.pagination.totalCount, res.body.data.length);
  });

  it('filters authenticators by username', async () => {
    const mine = await createUpdb();
    const res = await tc.mgmt.get(`/authenticators?filter=${encodeURIComponent(`username = "${mine.username}"`)}`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.data.map((a: { id: string }) => a.id), [mine.id]);
  });
});

describe('GET /authenticators/{id}', () => {
  it('shows the method, username, identity id and identity ref, and never a password or hash', async () => {
    const a = await createUpdb();
    const identityName = (await tc.mgmt.get(`/identities/${a.identityId}`)).body.data.name;
    const d = await detail(a.id);
    assert.equal(d.id, a.id);
    assert.equal(d.method, 'updb');
    assert.equal(d.username, a.username);
    assert.equal(d.identityId, a.identityId);
    assert.deepEqual(d.identity, identityRef(a.identityId, identityName));
    // As upstream, an authenticator links to its identity.
    assert.deepEqual(d._links, { self: { href: `./authenticators/${a.id}` }, identities: { href: `./identities/${a.identityId}` } });
    assert.match(d.createdAt, TIMESTAMP);
    assert.match(d.updatedAt, TIMESTAMP);
    assert.deepEqual(d.tags, {});
    assert.ok(!('password' in d) && !('passwordHash' in d) && !('salt' in d));
  });

  it('leaves out the certificate fields and flags a password authenticator does not have, as upstream', async () => {
    const a = await createUpdb();
    const d = await detail(a.id);
    assert.deepEqual(Object.keys(d).sort(), ['_links', 'createdAt', 'id', 'identity', 'identityId', 'method', 'tags', 'updatedAt', 'username']);
    const listed = await tc.mgmt.get(`/identities/${a.identityId}/authenticators`);
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(Object.keys(listed.body.data[0]).sort(), Object.keys(d).sort());
  });

  it('shows the authenticator in the identity read model, without its password', async () => {
    const a = await createUpdb();
    const res = await tc.mgmt.get(`/identities/${a.identityId}`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.data.authenticators, { updb: { id: a.id, username: a.username } });
    assertNoSecrets(res, PASSWORD);
  });

  it('answers an unknown id with 404 NOT_FOUND naming the authenticator', async () => {
    const res = await tc.mgmt.get('/authenticators/doesNotExist');
    assertAuthenticatorNotFound(res, 'doesNotExist');
    assertMatchesReference('management', 'GET', '/authenticators/{id}', 404, res.body);
  });
});

describe('PATCH /authenticators/{id}', () => {
  it('changes the username: the new one logs in, the old one no longer does', async () => {
    const a = await createUpdb();
    const username = uniqueName('renamed');
    const res = await tc.mgmt.patch(`/authenticators/${a.id}`, { username });
    assertEmptyOk(res);
    assertMatchesReference('management', 'PATCH', '/authenticators/{id}', 200, res.body);
    assert.equal((await detail(a.id)).username, username);
    await assertLoginWorks(username, a.password);
    await assertLoginFails(a.username, a.password);
  });

  it('changes the password: the old one answers 401 INVALID_AUTH, the new one logs in', async () => {
    const a = await createUpdb();
    const newPassword = 'Changed-pass-9';
    assertEmptyOk(await tc.mgmt.patch(`/authenticators/${a.id}`, { password: newPassword }));
    await assertLoginFails(a.username, a.password);
    await assertLoginWorks(a.username, newPassword);
    assert.equal((await detail(a.id)).username, a.username);
  });

  it('ignores null values', async () => {
    const a = await createUpdb();
    assertEmptyOk(await tc.mgmt.patch(`/authenticators/${a.id}`, { username: null, password: null }));
    assert.equal((await detail(a.id)).username, a.username);
    await assertLoginWorks(a.username, a.password);
  });

  it('rejects a username of 3 or a password of 4 characters with COULD_NOT_VALIDATE naming the field, changing nothing', async () => {
    const a = await createUpdb();
    assertFieldError(await tc.mgmt.patch(`/authenticators/${a.id}`, { username: 'abc' }), 'username');
    assertFieldError(await tc.mgmt.patch(`/authenticators/${a.id}`, { password: 'abcd' }), 'password');
    assert.equal((await detail(a.id)).username, a.username);
    await assertLoginWorks(a.username, a.password);
  });

  it('answers an unknown id with 404 NOT_FOUND naming the authenticator', async () => {
    const res = await tc.mgmt.patch('/authenticators/doesNotExist', { username: uniqueName('ghost') });
    assertAuthenticatorNotFound(res, 'doesNotExist');
    assertMatchesReference('management', 'PATCH', '/authenticators/{id}', 404, res.body);
  });
});

describe('PUT /authenticators/{id}', () => {
  it('replaces username and password', async () => {
    const a = await createUpdb();
    const username = uniqueName('put');
    const password = 'Put-pass-77';
    const res = await tc.mgmt.put(`/authenticators/${a.id}`, { username, password });
    assertEmptyOk(res);
    assertMatchesReference('management', 'PUT', '/authenticators/{id}', 200, res.body);
    assert.equal((await detail(a.id)).username, username);
    await assertLoginWorks(username, password);
    await assertLoginFails(a.username, a.password);
    await assertLoginFails(username, a.password);
  });

  it('requires both username and password, naming the missing one, and changes nothing', async () => {
    const a = await createUpdb();
    const onlyUsername = await tc.mgmt.put(`/authenticators/${a.id}`, { username: uniqueName('put') });
    assertFieldError(onlyUsername, 'password');
    assertMatchesReference('management', 'PUT', '/authenticators/{id}', 400, onlyUsername.body);
    assertFieldError(await tc.mgmt.put(`/authenticators/${a.id}`, { password: 'Only-pass-1' }), 'username');
    assertFieldError(await tc.mgmt.put(`/authenticators/${a.id}`, { username: 'abc', password: 'Short-ok-1' }), 'username');
    assertFieldError(await tc.mgmt.put(`/authenticators/${a.id}`, { username: uniqueName('put'), password: 'abcd' }), 'password');
    assert.equal((await detail(a.id)).username, a.username);
    await assertLoginWorks(a.username, a.password);
  });

  it('answers an unknown id with 404 NOT_FOUND naming the authenticator', async () => {
    const res = await tc.mgmt.put('/authenticators/doesNotExist', { username: uniqueName('ghost'), password: 'Ghost-pass-1' });
    assertAuthenticatorNotFound(res, 'doesNotExist');
    assertMatchesReference('management', 'PUT', '/authenticators/{id}', 404, res.body);
  });
});

describe('DELETE /authenticators/{id}', () => {
  it('deletes the authenticator, after which its identity can no longer log in', async () => {
    const a = await createUpdb();
    await assertLoginWorks(a.username, a.password);
    const res = await tc.mgmt.delete(`/authenticators/${a.id}`);
    assertEmptyOk(res);
    assertMatchesReference('management', 'DELETE', '/authenticators/{id}', 200, res.body);
    await assertLoginFails(a.username, a.password);
    assertAuthenticatorNotFound(await tc.mgmt.get(`/authenticators/${a.id}`), a.id);
    assert.deepEqual((await tc.mgmt.get(`/identities/${a.identityId}`)).body.data.authenticators, {});
    assert.equal((await tc.mgmt.get(`/identities/${a.identityId}`)).status, 200, 'the identity stays');
  });

  it('lets the identity get a new password authenticator afterwards', async () => {
    const a = await createUpdb();
    assertEmptyOk(await tc.mgmt.delete(`/authenticators/${a.id}`));
    const username = uniqueName('again');
    const res = await tc.mgmt.post('/authenticators', { method: 'updb', identityId: a.identityId, username, password: 'Again-pass-1' });
    assert.equal(res.status, 201, res.text);
    await assertLoginWorks(username, 'Again-pass-1');
  });

  it('answers an unknown id with 404 NOT_FOUND naming the authenticator', async () => {
    const res = await tc.mgmt.delete('/authenticators/doesNotExist');
    assertAuthenticatorNotFound(res, 'doesNotExist');
    assertMatchesReference('management', 'DELETE', '/authenticators/{id}', 404, res.body);
  });
});

describe('authenticator operations: authorization', () => {
  function operations(targetId: string, identityId: string) {
    return [
      { method: 'GET', path: '/authenticators' },
      { method: 'POST', path: '/authenticators', body: { method: 'updb', identityId, username: uniqueName('user'), password: PASSWORD } },
      { method: 'GET', path: `/authenticators/${targetId}` },
      { method: 'PATCH', path: `/authenticators/${targetId}`, body: { username: uniqueName('user') } },
      { method: 'PUT', path: `/authenticators/${targetId}`, body: { username: uniqueName('user'), password: 'Hijack-pass-1' } },
      { method: 'DELETE', path: `/authenticators/${targetId}` },
    ];
  }

  it('answers every operation of a non-admin identity with 401 UNAUTHORIZED and changes nothing', async () => {
    const user = await createUserWithPassword(tc);
    const asUser = tc.mgmt.as({ token: user.token });
    const target = await createUpdb();
    const spare = await createIdentity(tc.mgmt);
    const before = await authenticatorCount();
    for (const op of operations(target.id, spare)) {
      const res = await asUser.request(op.method, op.path, op.body === undefined ? {} : { body: op.body });
      assertError(res, 401, 'UNAUTHORIZED');
      assert.equal(res.headers['www-authenticate'], undefined, `${op.method} ${op.path}`);
    }
    assert.equal(await authenticatorCount(), before);
    assert.equal((await detail(target.id)).username, target.username);
    await assertLoginWorks(target.username, target.password);
  });

  it('answers every operation without a token with 401 UNAUTHORIZED', async () => {
    const target = await createUpdb();
    const spare = await createIdentity(tc.mgmt);
    for (const op of operations(target.id, spare)) {
      const res = await tc.http.request(op.method, `/edge/management/v1${op.path}`, op.body === undefined ? {} : { body: op.body });
      assertError(res, 401, 'UNAUTHORIZED');
      assert.match(String(res.headers['www-authenticate']), /^zt-session realm="zt-session" error="missing"/);
    }
    await assertLoginWorks(target.username, target.password);
  });
});
