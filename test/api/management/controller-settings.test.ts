/**
 * Controller settings: the `global` record, per-controller records (create, list, detail, patch, put, delete,
 * on both the spec's `/{id}/effective` write paths and `/{id}`), the effective settings (instance overlaid on
 * global, list by list), each bad input, unknown ids and permissions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, type TestController } from '../../support/controller.ts';
import { createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertDecodeError, TIMESTAMP, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';
import type { HttpResponse } from '../../support/client.ts';

const tc: TestController = await startTestController();
const store = tc.controller.store;
const controllerId = (await store.value<string>("SELECT value FROM controller_facts WHERE key = 'instance-id'"))!;

/** A second controller record, as another member of the cluster would register itself. */
async function addController(id: string): Promise<void> {
  const now = new Date().toISOString();
  await store.write((tx) =>
    tx.run(
      `INSERT INTO controllers (id, name, cert_pem, fingerprint, api_addresses, is_online, last_joined_at, created_at, updated_at)
       VALUES (?, ?, 'pem', 'fp', '{}', 0, ?, ?, ?)`,
      [id, `ctrl-${id}`, now, now, now],
    ),
  );
}

async function detail(id: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/controller-settings/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/controller-settings/{id}', 200, res.body);
  return res.body.data;
}

async function effective(id: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/controller-settings/${id}/effective`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/controller-settings/{id}/effective', 200, res.body);
  return res.body.data;
}

function assertNotFound(res: HttpResponse, singular: string, id: string): void {
  assertError(res, 404, 'NOT_FOUND');
  assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: `${singular} with id ${id} not found` });
}

const ALL_EMPTY = { oidc: { postLogoutUris: [], redirectUris: [] } };

describe('global controller settings', () => {
  it('exist from the start, without oidc, and are listed', async () => {
    const global = await detail('global');
    assert.equal(global.id, 'global');
    assert.equal(global.controllerId, null);
    assert.equal(global.oidc, undefined);
    assert.match(global.createdAt, TIMESTAMP);
    assert.deepEqual(global._links, { self: { href: './controller-settings/global' } });
    const list = await tc.mgmt.get('/controller-settings');
    assert.equal(list.status, 200, list.text);
    assertMatchesReference('management', 'GET', '/controller-settings', 200, list.body);
    assert.deepEqual(list.body.data.map((s: { id: string }) => s.id), ['global']);
    assert.equal(list.body.meta.pagination.totalCount, 1);
  });

  it('effective settings of a controller without its own record come from global (empty lists when unset)', async () => {
    const e = await effective(controllerId);
    assert.equal(e.id, controllerId);
    assert.deepEqual(e.instance, {});
    assert.deepEqual(e.effective, ALL_EMPTY);
    assert.deepEqual(e._links, { self: { href: `./controller-settings/${controllerId}/effective` } });
  });

  it('can be patched and put but not deleted', async () => {
    assertEmptyOk(await tc.mgmt.patch('/controller-settings/global', { oidc: { redirectUris: ['https://global.example/cb'] } }));
    assert.deepEqual((await detail('global')).oidc, { redirectUris: ['https://global.example/cb'] });
    assertEmptyOk(await tc.mgmt.put('/controller-settings/global/effective', { oidc: { redirectUris: ['https://global.example/cb'], postLogoutUris: ['https://global.example/bye'] }, tags: { scope: 'all' } }));
    const global = await detail('global');
    assert.deepEqual(global.oidc, { postLogoutUris: ['https://global.example/bye'], redirectUris: ['https://global.example/cb'] });
    assert.deepEqual(global.tags, { scope: 'all' });
    for (const path of ['/controller-settings/global', '/controller-settings/global/effective']) {
      const res = await tc.mgmt.delete(path);
      assertError(res, 400, 'ENTITY_CAN_NOT_BE_DELETED');
    }
    assert.equal((await detail('global')).id, 'global');
    const e = await effective('global');
    assert.deepEqual(e.instance, { oidc: global.oidc });
    assert.deepEqual(e.effective, { oidc: global.oidc });
  });
});

describe('per-controller settings', () => {
  it('are created for an existing controller, under its id, and override global list by list', async () => {
    const res = await tc.mgmt.post('/controller-settings', { controllerId, oidc: { redirectUris: ['openziti://auth/callback', 'http://localhost:*/auth/callback'] }, tags: { a: 'b' } });
    assert.equal(res.status, 201, res.text);
    assertMatchesReference('management', 'POST', '/controller-settings', 201, res.body);
    assert.deepEqual(res.body.data, { _links: { self: { href: `./controller-settings/${controllerId}` } }, id: controllerId });

    const own = await detail(controllerId);
    assert.equal(own.controllerId, controllerId);
    assert.deepEqual(own.oidc, { redirectUris: ['openziti://auth/callback', 'http://localhost:*/auth/callback'] });
    assert.deepEqual(own.tags, { a: 'b' });

    // redirectUris from the instance; postLogoutUris unset there, so global's.
    const e = await effective(controllerId);
    assert.deepEqual(e.instance, { oidc: own.oidc });
    assert.deepEqual(e.effective, {
      oidc: { postLogoutUris: ['https://global.example/bye'], redirectUris: ['openziti://auth/callback', 'http://localhost:*/auth/callback'] },
    });
    assert.deepEqual(e.tags, { a: 'b' });

    const list = await tc.mgmt.get('/controller-settings?filter=' + encodeURIComponent(`controllerId = "${controllerId}"`));
    assert.equal(list.status, 200, list.text);
    assertMatchesReference('management', 'GET', '/controller-settings', 200, list.body);
    assert.deepEqual(list.body.data.map((s: { id: string }) => s.id), [controllerId]);
    const all = await tc.mgmt.get('/controller-settings?limit=1&offset=1');
    assert.equal(all.body.meta.pagination.totalCount, 2);
    assert.equal(all.body.data.length, 1);
  });

  it('an empty list overrides global; patch changes only what is sent; put replaces everything', async () => {
    assertEmptyOk(await tc.mgmt.patch(`/controller-settings/${controllerId}/effective`, { oidc: { postLogoutUris: [] } }));
    let e = await effective(controllerId);
    assert.deepEqual(e.instance, { oidc: { postLogoutUris: [] } }, 'the oidc object is replaced as a whole');
    assert.deepEqual(e.effective, { oidc: { postLogoutUris: [], redirectUris: ['https://global.example/cb'] } });

    // Patch without oidc (or with null) leaves it as it is.
    assertEmptyOk(await tc.mgmt.patch(`/controller-settings/${controllerId}`, { oidc: null, tags: { x: true } }));
    const own = await detail(controllerId);
    assert.deepEqual(own.oidc, { postLogoutUris: [] });
    assert.deepEqual(own.tags, { x: true });

    // Duplicates are dropped, order kept.
    assertEmptyOk(await tc.mgmt.put(`/controller-settings/${controllerId}`, { oidc: { redirectUris: ['https://b.example/cb', 'https://a.example/cb', 'https://b.example/cb'] } }));
    assert.deepEqual((await detail(controllerId)).oidc, { redirectUris: ['https://b.example/cb', 'https://a.example/cb'] });

    // Put without oidc clears it: everything inherited again.
    assertEmptyOk(await tc.mgmt.put(`/controller-settings/${controllerId}/effective`, {}));
    const cleared = await detail(controllerId);
    assert.equal(cleared.oidc, undefined);
    assert.deepEqual(cleared.tags, {});
    e = await effective(controllerId);
    assert.deepEqual(e.instance, {});
    assert.deepEqual(e.effective, { oidc: { postLogoutUris: ['https://global.example/bye'], redirectUris: ['https://global.example/cb'] } });
  });

  it('are deleted on both paths, after which global applies again', async () => {
    await addController('ctrl-two');
    const created = await tc.mgmt.post('/controller-settings', { controllerId: 'ctrl-two', oidc: { postLogoutUris: ['https://two.example/bye'] } });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual((await effective('ctrl-two')).effective.oidc.postLogoutUris, ['https://two.example/bye']);

    const del = await tc.mgmt.delete('/controller-settings/ctrl-two/effective');
    assertEmptyOk(del);
    assertMatchesReference('management', 'DELETE', '/controller-settings/{id}/effective', 200, del.body);
    assertNotFound(await tc.mgmt.get('/controller-settings/ctrl-two'), 'controller setting', 'ctrl-two');
    assert.deepEqual((await effective('ctrl-two')).effective.oidc.postLogoutUris, ['https://global.example/bye']);

    assertEmptyOk(await tc.mgmt.delete(`/controller-settings/${controllerId}`));
    assertNotFound(await tc.mgmt.delete(`/controller-settings/${controllerId}`), 'controller setting', controllerId);
    assert.deepEqual((await tc.mgmt.get('/controller-settings')).body.data.map((s: { id: string }) => s.id), ['global']);
  });
});

describe('controller settings bad input and unknown ids', () => {
  it('rejects each invalid create and creates nothing', async () => {
    await addController('ctrl-three');
    const cases: Array<[Record<string, unknown>, string | RegExp]> = [
      [{}, 'controllerId'],
      [{ controllerId: '' }, 'controllerId'],
      [{ controllerId: 'global' }, 'controllerId'],
      [{ controllerId: 'ctrl-three', oidc: { postLogoutUris: ['not a uri'] } }, 'oidc.postLogoutUris[0]'],
      [{ controllerId: 'ctrl-three', oidc: { redirectUris: ['https://ok.example', '/relative'] } }, 'oidc.redirectUris[1]'],
      [{ controllerId: 'ctrl-three', tags: { a: 1 } }, /^tags/],
    ];
    for (const [body, field] of cases) {
      const res = await tc.mgmt.post('/controller-settings', body);
      assertFieldError(res, field);
      assertMatchesReference('management', 'POST', '/controller-settings', 400, res.body);
    }
    for (const [body, field] of [
      [{ controllerId: 7 }, 'controllerId'],
      [{ controllerId: 'ctrl-three', oidc: 'x' }, 'oidc'],
      [{ controllerId: 'ctrl-three', oidc: { redirectUris: 'https://a.example' } }, 'oidc.redirectUris'],
      [{ controllerId: 'ctrl-three', oidc: { redirectUris: [3] } }, 'oidc.redirectUris'],
    ] as const) {
      assertDecodeError(await tc.mgmt.post('/controller-settings', body), field);
    }
    assertNotFound(await tc.mgmt.post('/controller-settings', { controllerId: 'no-such-controller' }), 'controller', 'no-such-controller');
    const wrongType = await tc.mgmt.post('/controller-settings', undefined, { rawBody: 'controllerId=x', contentType: 'text/plain' });
    assert.equal(wrongType.status, 415, wrongType.text);
    assert.deepEqual((await tc.mgmt.get('/controller-settings')).body.data.map((s: { id: string }) => s.id), ['global']);

    assert.equal((await tc.mgmt.post('/controller-settings', { controllerId: 'ctrl-three' })).status, 201);
    const duplicate = await tc.mgmt.post('/controller-settings', { controllerId: 'ctrl-three' });
    assertFieldError(duplicate, 'controllerId');
    assert.match(duplicate.body.error.cause.reason, /duplicate value 'ctrl-three'/);
  });

  it('rejects invalid updates and leaves the record unchanged', async () => {
    const before = await detail('ctrl-three');
    for (const [method, path] of [
      ['PATCH', '/controller-settings/ctrl-three'],
      ['PUT', '/controller-settings/ctrl-three/effective'],
    ] as const) {
      assertFieldError(await tc.mgmt.request(method, path, { body: { oidc: { redirectUris: ['nope'] } } }), 'oidc.redirectUris[0]');
      assertDecodeError(await tc.mgmt.request(method, path, { body: { oidc: [] } }), 'oidc');
    }
    assert.deepEqual(await detail('ctrl-three'), before);
  });

  it('answers 404 for unknown ids', async () => {
    assertNotFound(await tc.mgmt.get('/controller-settings/nope'), 'controller setting', 'nope');
    assertNotFound(await tc.mgmt.get('/controller-settings/nope/effective'), 'controller', 'nope');
    for (const path of ['/controller-settings/nope', '/controller-settings/nope/effective']) {
      assertNotFound(await tc.mgmt.patch(path, {}), 'controller setting', 'nope');
      assertNotFound(await tc.mgmt.put(path, {}), 'controller setting', 'nope');
      assertNotFound(await tc.mgmt.delete(path), 'controller setting', 'nope');
    }
  });
});

describe('controller settings permissions', () => {
  it('are for admins; admin_readonly may read', async () => {
    const user = await createUserWithPassword(tc, { permissions: ['ops'] });
    const auditor = await createUserWithPassword(tc, { permissions: ['admin_readonly'] });
    const reads: Array<[string, string]> = [
      ['GET', '/controller-settings'],
      ['GET', '/controller-settings/global'],
      ['GET', '/controller-settings/global/effective'],
    ];
    const writes: Array<[string, string, unknown]> = [
      ['POST', '/controller-settings', { controllerId: 'ctrl-three' }],
      ['PATCH', '/controller-settings/ctrl-three', {}],
      ['PUT', '/controller-settings/ctrl-three', {}],
      ['DELETE', '/controller-settings/ctrl-three', undefined],
      ['PATCH', '/controller-settings/ctrl-three/effective', {}],
      ['PUT', '/controller-settings/ctrl-three/effective', {}],
      ['DELETE', '/controller-settings/ctrl-three/effective', undefined],
    ];
    for (const [method, path] of reads) {
      assertError(await tc.mgmt.as({ token: user.token }).request(method, path), 401, 'UNAUTHORIZED');
      assertError(await tc.http.request(method, `/edge/management/v1${path}`), 401, 'UNAUTHORIZED');
      const ok = await tc.mgmt.as({ token: auditor.token }).request(method, path);
      assert.equal(ok.status, 200, ok.text);
    }
    for (const [method, path, body] of writes) {
      for (const token of [user.token, auditor.token]) {
        assertError(await tc.mgmt.as({ token }).request(method, path, body === undefined ? {} : { body }), 401, 'UNAUTHORIZED');
      }
    }
    assert.equal((await detail('ctrl-three')).id, 'ctrl-three', 'nothing changed');
  });
});
