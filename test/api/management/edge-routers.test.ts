/**
 * Management edge router operations: create (with its erott enrollment JWT), detail, list (filter, sort,
 * paging, roleFilter), put, patch, delete and its cascades, re-enroll, the tunneler identity and system
 * edge router policy, the role-attribute list, the association lists returning edge routers, unknown ids
 * and permissions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_PASSWORD, ADMIN_USER, startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import type { HttpClient, HttpResponse } from '../../support/client.ts';
import { createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertEmptyList, assertDecodeError, TIMESTAMP, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';
import { verifyJwt } from '../../../src/pki/enrollment-jwt.ts';

const tc: TestController = await startTestController();

/**
 * The reference's edgeRouterDetail lists the versionInfo members (os, version, arch, buildDate, revision) in
 * its top-level `required` although it declares no such properties; upstream never sends them there. The
 * oracle therefore validates a copy with those five keys filled in, and every other rule of the schema as is.
 */
function withSpecQuirk(router: Record<string, unknown>): Record<string, unknown> {
  return { ...router, os: '', version: '', arch: '', buildDate: '', revision: '' };
}
const DETAIL_NULLS = { allowNullAt: ['/data/interfaces'] };
const LIST_NULLS = { allowNullAt: ['/data/*/interfaces'] };

function assertDetailBody(path: string, body: any): void {
  assertMatchesReference('management', 'GET', path, 200, { ...body, data: withSpecQuirk(body.data) }, DETAIL_NULLS);
}
function assertListBody(path: string, body: any): void {
  assertMatchesReference('management', 'GET', path, 200, { ...body, data: body.data.map(withSpecQuirk) }, LIST_NULLS);
}

function q(filter: string): string {
  return encodeURIComponent(filter);
}

async function createRouter(body: Record<string, unknown> = {}): Promise<string> {
  const res = await tc.mgmt.post('/edge-routers', { name: uniqueName('er'), ...body });
  assert.equal(res.status, 201, res.text);
  assertMatchesReference('management', 'POST', '/edge-routers', 201, res.body);
  return res.body.data.id as string;
}

async function detail(id: string, client: HttpClient = tc.mgmt): Promise<Record<string, any>> {
  const res = await client.get(`/edge-routers/${id}`);
  assert.equal(res.status, 200, res.text);
  assertDetailBody('/edge-routers/{id}', res.body);
  return res.body.data;
}

async function list(query: string, path = '/edge-routers'): Promise<HttpResponse> {
  const res = await tc.mgmt.get(`${path}?${query}`);
  assert.equal(res.status, 200, res.text);
  assertListBody(path.replace(/\/[^/]+\/(?=[a-z-]+$)/, '/{id}/'), res.body);
  return res;
}

async function namesFor(filter: string): Promise<string[]> {
  const res = await list(`filter=${q(filter)}&limit=500`);
  return res.body.data.map((r: { name: string }) => r.name);
}

async function routerCount(): Promise<number> {
  const res = await tc.mgmt.get('/edge-routers?limit=1');
  return res.body.meta.pagination.totalCount as number;
}

function decodeJwt(jwt: string): { header: Record<string, unknown>; claims: Record<string, unknown> } {
  const [h, c] = jwt.split('.');
  return { header: JSON.parse(Buffer.from(h, 'base64url').toString()), claims: JSON.parse(Buffer.from(c, 'base64url').toString()) };
}

function enrollmentRows(routerId: string): Promise<Array<Record<string, unknown>>> {
  return tc.controller.store.all('SELECT * FROM enrollments WHERE router_id = ?', [routerId]);
}

function assertEdgeRouterNotFound(res: HttpResponse, id: string): void {
  assertError(res, 404, 'NOT_FOUND');
  assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: `edgeRouter with id ${id} not found` });
}

async function createTransitRouter(): Promise<string> {
  const res = await tc.mgmt.post('/transit-routers', { name: uniqueName('tr') });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

async function createErp(body: Record<string, unknown>): Promise<string> {
  const res = await tc.mgmt.post('/edge-router-policies', { name: uniqueName('erp'), semantic: 'AllOf', identityRoles: [], edgeRouterRoles: [], ...body });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

describe('POST /edge-routers', () => {
  it('creates an edge router with a short id and answers with its self link', async () => {
    const res = await tc.mgmt.post('/edge-routers', { name: uniqueName('er') });
    assert.equal(res.status, 201, res.text);
    assertMatchesReference('management', 'POST', '/edge-routers', 201, res.body);
    const id = res.body.data.id;
    assert.match(id, /^[0-9A-Za-z][0-9A-Za-z.-]{8}$/);
    assert.deepEqual(res.body, { data: { id, _links: { self: { href: `./edge-routers/${id}` } } }, meta: {} });
  });

  it('reads back the never-connected, unenrolled read model with defaults', async () => {
    const name = uniqueName('defaults');
    const id = await createRouter({ name });
    const d = await detail(id);
    assert.equal(d.id, id);
    assert.equal(d.name, name);
    assert.match(d.createdAt, TIMESTAMP);
    assert.deepEqual(d._links, { self: { href: `./edge-routers/${id}` }, 'edge-router-policies': { href: `./edge-routers/${id}/edge-router-policies` } });
    assert.deepEqual(d.tags, {});
    assert.equal(d.isOnline, false);
    assert.equal(d.syncStatus, 'SYNC_UNKNOWN');
    assert.equal(d.isVerified, false);
    assert.equal('fingerprint' in d, false, 'fingerprint omitted before enrollment');
    assert.equal(d.certPem, null);
    assert.equal(d.unverifiedCertPem, null);
    assert.equal(d.unverifiedFingerprint, null);
    assert.equal(d.hostname, '');
    assert.deepEqual(d.supportedProtocols, {});
    assert.deepEqual(d.versionInfo, { arch: '', buildDate: '', os: '', revision: '', version: '' });
    assert.equal(d.roleAttributes, null);
    assert.deepEqual(d.appData, {});
    assert.equal(d.cost, 0);
    assert.equal(d.noTraversal, false);
    assert.equal(d.disabled, false);
    assert.equal(d.isTunnelerEnabled, false);
    assert.equal(d.interfaces, null);
    assert.equal('ctrlChanListeners' in d, false);
    assert.equal(typeof d.enrollmentJwt, 'string');
    assert.match(d.enrollmentToken, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.match(d.enrollmentCreatedAt, TIMESTAMP);
    assert.match(d.enrollmentExpiresAt, TIMESTAMP);
  });

  it('issues an erott enrollment JWT signed by the controller, valid for 180 minutes', async () => {
    const id = await createRouter();
    const d = await detail(id);
    const { header, claims } = decodeJwt(d.enrollmentJwt);
    assert.deepEqual(Object.keys(header), ['alg', 'kid', 'typ']);
    assert.equal(header.kid, tc.controller.pki.serverCertFingerprint);
    assert.equal(header.typ, 'JWT');
    assert.deepEqual(Object.keys(claims), ['iss', 'sub', 'aud', 'exp', 'jti', 'em', 'ctrls']);
    assert.equal(claims.iss, `https://localhost:${tc.port}`);
    assert.equal(claims.sub, id);
    assert.deepEqual(claims.aud, ['']);
    assert.equal(claims.em, 'erott');
    assert.equal(claims.jti, d.enrollmentToken);
    assert.deepEqual(claims.ctrls, [`tls:localhost:${tc.port}`], "the control channel is on the API port");
    assert.equal(claims.exp, Math.floor(Date.parse(d.enrollmentExpiresAt) / 1000));
    assert.equal(Date.parse(d.enrollmentExpiresAt) - Date.parse(d.enrollmentCreatedAt), 180 * 60_000);
    const verified = await verifyJwt(d.enrollmentJwt, tc.controller.pki);
    assert.equal(verified.sub, id);
    const rows = await enrollmentRows(id);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].method, 'erott');
    assert.equal(rows[0].token, d.enrollmentToken);
    assert.equal(rows[0].identity_id, null);
  });

  it('stores every optional field, normalizing role attributes to a sorted set', async () => {
    const id = await createRouter({
      roleAttributes: ['west', 'east', 'west'],
      cost: 65535,
      noTraversal: true,
      disabled: true,
      appData: { region: 'eu', weight: 3, on: true, none: null },
      ctrlChanListeners: { 'tls:ctrl:6262': ['default'] },
      tags: { owner: 'ops', flag: true },
    });
    const d = await detail(id);
    assert.deepEqual(d.roleAttributes, ['east', 'west']);
    assert.equal(d.cost, 65535);
    assert.equal(d.noTraversal, true);
    assert.equal(d.disabled, true);
    assert.deepEqual(d.appData, { region: 'eu', weight: 3, on: true, none: null });
    assert.deepEqual(d.ctrlChanListeners, { 'tls:ctrl:6262': ['default'] });
    assert.deepEqual(d.tags, { owner: 'ops', flag: true });
  });

  it('treats null optional fields as their defaults', async () => {
    const id = await createRouter({ cost: null, noTraversal: null, disabled: null, appData: null, roleAttributes: null, ctrlChanListeners: null, tags: null });
    const d = await detail(id);
    assert.equal(d.cost, 0);
    assert.equal(d.noTraversal, false);
    assert.equal(d.disabled, false);
    assert.deepEqual(d.appData, {});
    assert.equal(d.roleAttributes, null);
    assert.deepEqual(d.tags, {});
  });

  it('rejects invalid bodies with COULD_NOT_VALIDATE naming the field, creating nothing', async () => {
    const taken = uniqueName('taken');
    await createRouter({ name: taken });
    const transitName = uniqueName('transit');
    assert.equal((await tc.mgmt.post('/transit-routers', { name: transitName })).status, 201);
    const cases: Array<[Record<string, unknown>, string | RegExp, string?]> = [
      [{}, 'name'],
      [{ name: '' }, 'name', 'name is required'],
      [{ name: '   ' }, 'name'],
      [{ name: taken }, 'name', 'name must be unique'],
      [{ name: transitName }, 'name', 'name must be unique'],
      [{ name: uniqueName('x'), cost: 65536 }, 'cost'],
      [{ name: uniqueName('x'), cost: -1 }, 'cost'],
      [{ name: uniqueName('x'), roleAttributes: ['#sales'] }, 'roleAttributes', 'role attributes may not be prefixed with #'],
      [{ name: uniqueName('x'), roleAttributes: ['ok', '@id'] }, 'roleAttributes', 'role attributes may not be prefixed with @'],
      [{ name: uniqueName('x'), appData: { nested: { a: 1 } } }, /^appData/],
      [{ name: uniqueName('x'), appData: { list: [1] } }, /^appData/],
      [{ name: uniqueName('x'), ctrlChanListeners: { a: 'b' } }, /^ctrlChanListeners/],
      [{ name: uniqueName('x'), tags: { nested: { a: 1 } } }, /^tags/],
    ];
    for (const [body, field, reason] of cases) {
      const before = await routerCount();
      const res = await tc.mgmt.post('/edge-routers', body);
      assertFieldError(res, field);
      assertMatchesReference('management', 'POST', '/edge-routers', 400, res.body);
      if (reason) assert.equal(res.body.error.cause.reason, reason, JSON.stringify(body));
      assert.equal(await routerCount(), before, JSON.stringify(body));
    }
    // Values of the wrong JSON kind can not be decoded at all.
    const decodeCases: Array<[Record<string, unknown>, string]> = [
      [{ name: 7 }, 'name'],
      [{ name: uniqueName('x'), cost: 1.5 }, 'cost'],
      [{ name: uniqueName('x'), roleAttributes: 'sales' }, 'roleAttributes'],
      [{ name: uniqueName('x'), isTunnelerEnabled: 'yes' }, 'isTunnelerEnabled'],
      [{ name: uniqueName('x'), noTraversal: 1 }, 'noTraversal'],
    ];
    for (const [body, field] of decodeCases) {
      const before = await routerCount();
      assertDecodeError(await tc.mgmt.post('/edge-routers', body), field);
      assert.equal(await routerCount(), before, JSON.stringify(body));
    }
  });
});

describe('GET /edge-routers', () => {
  const prefix = uniqueName('lst');
  const ids: Record<string, string> = {};

  it('lists only edge routers, with filterable fields and paging', async () => {
    ids.a = await createRouter({ name: `${prefix}-a`, roleAttributes: ['sales', 'east'], cost: 10 });
    ids.b = await createRouter({ name: `${prefix}-b`, roleAttributes: ['sales'], cost: 20, isTunnelerEnabled: true });
    ids.c = await createRouter({ name: `${prefix}-c`, roleAttributes: ['east'], cost: 30, disabled: true });
    const transit = await createTransitRouter();
    const res = await list('limit=500');
    const listed = res.body.data.map((r: { id: string }) => r.id);
    assert.ok(listed.includes(ids.a) && listed.includes(ids.b) && listed.includes(ids.c));
    assert.ok(!listed.includes(transit), 'transit routers are not edge routers');
    for (const field of ['id', 'name', 'roleAttributes', 'cost', 'isVerified', 'isTunnelerEnabled', 'online', 'connected', 'tags']) {
      assert.ok(res.body.meta.filterableFields.includes(field), field);
    }
    const page = await list(`filter=${q(`name contains "${prefix}"`)}&limit=2&offset=1&sort=${q('name desc')}`);
    assert.deepEqual(page.body.meta.pagination, { limit: 2, offset: 1, totalCount: 3 });
    assert.deepEqual(page.body.data.map((r: { name: string }) => r.name), [`${prefix}-b`, `${prefix}-a`]);
  });

  it('filters on stored, set and live-state fields', async () => {
    const scoped = (f: string) => namesFor(`name contains "${prefix}" and (${f})`);
    assert.deepEqual((await scoped('anyOf(roleAttributes) = "east"')).sort(), [`${prefix}-a`, `${prefix}-c`]);
    assert.deepEqual((await scoped('cost >= 20')).sort(), [`${prefix}-b`, `${prefix}-c`]);
    assert.deepEqual(await scoped('isTunnelerEnabled = true'), [`${prefix}-b`]);
    assert.deepEqual(await scoped('disabled'), [`${prefix}-c`]);
    assert.deepEqual((await scoped('online = false and not connected and isVerified = false')).length, 3);
    assert.deepEqual(await scoped('online = true'), []);
    assert.deepEqual(await scoped(`id = "${ids.b}"`), [`${prefix}-b`]);
    const bad = await tc.mgmt.get(`/edge-routers?filter=${q('nope = 1')}`);
    assertError(bad, 400, 'INVALID_FILTER');
  });

  it('pre-selects by roleFilter (AllOf default, AnyOf, and @ids unioned)', async () => {
    const names = async (query: string) => {
      const res = await list(`${query}&filter=${q(`name contains "${prefix}"`)}&sort=name`);
      return res.body.data.map((r: { name: string }) => r.name);
    };
    assert.deepEqual(await names('roleFilter=%23sales&roleFilter=%23east'), [`${prefix}-a`]);
    assert.deepEqual(await names('roleFilter=%23sales&roleFilter=%23east&roleSemantic=AnyOf'), [`${prefix}-a`, `${prefix}-b`, `${prefix}-c`]);
    assert.deepEqual(await names(`roleFilter=%23nothing&roleFilter=%40${ids.c}`), [`${prefix}-c`]);
    assertFieldError(await tc.mgmt.get('/edge-routers?roleFilter=%23sales&roleSemantic=OneOf'), 'semantic');
  });
});

describe('GET /edge-routers/{id}', () => {
  it('answers 404 for an unknown id and for a transit router id', async () => {
    assertEdgeRouterNotFound(await tc.mgmt.get('/edge-routers/nope'), 'nope');
    const transit = await createTransitRouter();
    assertEdgeRouterNotFound(await tc.mgmt.get(`/edge-routers/${transit}`), transit);
  });
});

describe('PUT /edge-routers/{id}', () => {
  it('replaces every updatable field; omitted ones reset', async () => {
    const id = await createRouter({ roleAttributes: ['a'], cost: 5, noTraversal: true, appData: { k: 'v' }, tags: { t: 'x' }, ctrlChanListeners: { l: ['g'] } });
    const name = uniqueName('put');
    assertEmptyOk(await tc.mgmt.put(`/edge-routers/${id}`, { name, disabled: true }));
    const d = await detail(id);
    assert.equal(d.name, name);
    assert.equal(d.disabled, true);
    assert.equal(d.cost, 0);
    assert.equal(d.noTraversal, false);
    assert.equal(d.roleAttributes, null);
    assert.deepEqual(d.appData, {});
    assert.deepEqual(d.tags, {});
    assert.equal('ctrlChanListeners' in d, false);
    assert.ok(d.updatedAt >= d.createdAt);
  });

  it('validates like create and answers 404 for unknown or non-edge ids', async () => {
    const id = await createRouter();
    const before = await detail(id);
    assertFieldError(await tc.mgmt.put(`/edge-routers/${id}`, {}), 'name');
    assertFieldError(await tc.mgmt.put(`/edge-routers/${id}`, { name: uniqueName('x'), cost: 70000 }), 'cost');
    assertFieldError(await tc.mgmt.put(`/edge-routers/${id}`, { name: uniqueName('x'), roleAttributes: ['#x'] }), 'roleAttributes');
    assert.deepEqual(await detail(id), before);
    assertEdgeRouterNotFound(await tc.mgmt.put('/edge-routers/nope', { name: uniqueName('x') }), 'nope');
    const transit = await createTransitRouter();
    assertEdgeRouterNotFound(await tc.mgmt.put(`/edge-routers/${transit}`, { name: uniqueName('x') }), transit);
  });
});

describe('PATCH /edge-routers/{id}', () => {
  it('changes only the supplied fields; null means unchanged and [] clears', async () => {
    const name = uniqueName('patch');
    const id = await createRouter({ name, roleAttributes: ['a', 'b'], cost: 5, appData: { k: 'v' } });
    assertEmptyOk(await tc.mgmt.patch(`/edge-routers/${id}`, { cost: 7, name: null, appData: null }));
    let d = await detail(id);
    assert.equal(d.cost, 7);
    assert.equal(d.name, name);
    assert.deepEqual(d.roleAttributes, ['a', 'b']);
    assert.deepEqual(d.appData, { k: 'v' });
    assertEmptyOk(await tc.mgmt.patch(`/edge-routers/${id}`, { roleAttributes: [], appData: { z: true } }));
    d = await detail(id);
    assert.equal(d.roleAttributes, null);
    assert.deepEqual(d.appData, { z: true }, 'a supplied map replaces the whole map');
  });

  it('validates supplied fields and answers 404 for unknown ids', async () => {
    const id = await createRouter();
    assertFieldError(await tc.mgmt.patch(`/edge-routers/${id}`, { name: '' }), 'name');
    assertFieldError(await tc.mgmt.patch(`/edge-routers/${id}`, { cost: -5 }), 'cost');
    assertFieldError(await tc.mgmt.patch(`/edge-routers/${id}`, { roleAttributes: ['@x'] }), 'roleAttributes');
    const other = uniqueName('other');
    await createRouter({ name: other });
    assertFieldError(await tc.mgmt.patch(`/edge-routers/${id}`, { name: other }), 'name');
    assertEdgeRouterNotFound(await tc.mgmt.patch('/edge-routers/nope', { cost: 1 }), 'nope');
  });
});

describe('tunneler-enabled edge routers', () => {
  async function identity(id: string): Promise<HttpResponse> {
    return tc.mgmt.get(`/identities/${id}`);
  }
  async function systemErp(id: string): Promise<HttpResponse> {
    return tc.mgmt.get(`/edge-router-policies/${id}`);
  }

  it('creates a same-id Router identity and a system edge router policy', async () => {
    const name = uniqueName('tun');
    const id = await createRouter({ name, isTunnelerEnabled: true });
    const ident = await identity(id);
    assert.equal(ident.status, 200, ident.text);
    assert.equal(ident.body.data.name, name);
    assert.equal(ident.body.data.typeId, 'Router');
    assert.equal(ident.body.data.isAdmin, false);
    const erp = await systemErp(id);
    assert.equal(erp.status, 200, erp.text);
    assert.equal(erp.body.data.name, `edge-router-${id}-system`);
    assert.equal(erp.body.data.isSystem, true);
    assert.equal(erp.body.data.semantic, 'AnyOf');
    assert.deepEqual(erp.body.data.identityRoles, [`@${id}`]);
    assert.deepEqual(erp.body.data.edgeRouterRoles, [`@${id}`]);
    const routers = await list('', `/identities/${id}/edge-routers`);
    assert.deepEqual(routers.body.data.map((r: { id: string }) => r.id), [id]);
  });

  it('renames the identity with the router, and removes and re-creates both when toggled', async () => {
    const id = await createRouter({ isTunnelerEnabled: true });
    const renamed = uniqueName('renamed');
    assertEmptyOk(await tc.mgmt.patch(`/edge-routers/${id}`, { name: renamed }));
    assert.equal((await identity(id)).body.data.name, renamed);
    assertEmptyOk(await tc.mgmt.patch(`/edge-routers/${id}`, { isTunnelerEnabled: false }));
    assertError(await identity(id), 404, 'NOT_FOUND');
    assertError(await systemErp(id), 404, 'NOT_FOUND');
    assertEmptyOk(await tc.mgmt.patch(`/edge-routers/${id}`, { isTunnelerEnabled: true }));
    assert.equal((await identity(id)).body.data.name, renamed);
    assert.equal((await systemErp(id)).status, 200);
    // PUT without the flag resets it to false, which removes both again.
    assertEmptyOk(await tc.mgmt.put(`/edge-routers/${id}`, { name: renamed }));
    assertError(await identity(id), 404, 'NOT_FOUND');
  });

  it('refuses to rename the router identity (it carries the router\'s name); renaming the router renames both', async () => {
    const name = uniqueName('named');
    const id = await createRouter({ name, isTunnelerEnabled: true });
    for (const res of [
      await tc.mgmt.patch(`/identities/${id}`, { name: uniqueName('renamed') }),
      await tc.mgmt.put(`/identities/${id}`, { name: uniqueName('renamed'), type: 'Router', isAdmin: false }),
    ]) {
      assertFieldError(res, 'name');
      assert.equal(res.body.error.cause.reason, 'may not change name of router identities');
    }
    assertEmptyOk(await tc.mgmt.patch(`/identities/${id}`, { name, tags: { k: 'v' } }));
    assert.equal((await identity(id)).body.data.name, name);
    const renamed = uniqueName('router');
    assertEmptyOk(await tc.mgmt.patch(`/edge-routers/${id}`, { name: renamed }));
    assert.equal((await identity(id)).body.data.name, renamed);
  });

  it('refuses to delete the router identity while the router exists; deleting the router removes it', async () => {
    const id = await createRouter({ isTunnelerEnabled: true });
    const res = await tc.mgmt.delete(`/identities/${id}`);
    assertError(res, 400, 'ENTITY_CAN_NOT_BE_DELETED');
    assert.equal((await identity(id)).status, 200);
    assertEmptyOk(await tc.mgmt.delete(`/edge-routers/${id}`));
    assertError(await identity(id), 404, 'NOT_FOUND');
    assertError(await systemErp(id), 404, 'NOT_FOUND');
  });
});

describe('DELETE /edge-routers/{id}', () => {
  it('deletes the router, its enrollments and its @id references in policies', async () => {
    const id = await createRouter({ roleAttributes: ['gone'] });
    const keep = await createRouter();
    const erp = await createErp({ edgeRouterRoles: [`@${id}`, `@${keep}`] });
    assert.equal((await enrollmentRows(id)).length, 1);
    assertEmptyOk(await tc.mgmt.delete(`/edge-routers/${id}`));
    assertEdgeRouterNotFound(await tc.mgmt.get(`/edge-routers/${id}`), id);
    assert.equal((await enrollmentRows(id)).length, 0);
    const policy = await tc.mgmt.get(`/edge-router-policies/${erp}`);
    assert.deepEqual(policy.body.data.edgeRouterRoles, [`@${keep}`]);
    const attrs = await tc.mgmt.get(`/edge-router-role-attributes?filter=${q('id = "gone"')}`);
    assert.deepEqual(attrs.body.data, []);
  });

  it('answers 404 for unknown ids and transit router ids', async () => {
    assertEdgeRouterNotFound(await tc.mgmt.delete('/edge-routers/nope'), 'nope');
    const transit = await createTransitRouter();
    assertEdgeRouterNotFound(await tc.mgmt.delete(`/edge-routers/${transit}`), transit);
    assert.equal((await tc.mgmt.get(`/transit-routers/${transit}`)).status, 200);
  });
});

describe('POST /edge-routers/{id}/re-enroll', () => {
  it('replaces the enrollment and clears the certificate and verification', async () => {
    const id = await createRouter();
    const first = await detail(id);
    await tc.controller.store.write(async (tx) => {
      await tx.run("UPDATE routers SET is_verified = 1, fingerprint = 'abc', cert_pem = 'PEM' WHERE id = ?", [id]);
      await tx.run('DELETE FROM enrollments WHERE router_id = ?', [id]);
    });
    const enrolled = await detail(id);
    assert.equal(enrolled.isVerified, true);
    assert.equal(enrolled.fingerprint, 'abc');
    assert.equal(enrolled.certPem, 'PEM');
    assert.equal('enrollmentJwt' in enrolled, false, 'no enrollment fields once verified');

    const res = await tc.mgmt.post(`/edge-routers/${id}/re-enroll`);
    assertEmptyOk(res);
    assertMatchesReference('management', 'POST', '/edge-routers/{id}/re-enroll', 200, res.body);
    const d = await detail(id);
    assert.equal(d.isVerified, false);
    assert.equal('fingerprint' in d, false);
    assert.equal(d.certPem, null);
    assert.notEqual(d.enrollmentToken, first.enrollmentToken);
    assert.equal(decodeJwt(d.enrollmentJwt).claims.jti, d.enrollmentToken);
    assertEmptyOk(await tc.mgmt.post(`/edge-routers/${id}/re-enroll`));
    const rows = await enrollmentRows(id);
    assert.equal(rows.length, 1, 'repeating leaves exactly one enrollment');
    assert.equal(rows[0].method, 'erott');
    assert.notEqual(rows[0].token, d.enrollmentToken, 'the previous token is no longer valid');
  });

  it('answers 404 for unknown ids and transit router ids', async () => {
    assertEdgeRouterNotFound(await tc.mgmt.post('/edge-routers/nope/re-enroll'), 'nope');
    const transit = await createTransitRouter();
    assertEdgeRouterNotFound(await tc.mgmt.post(`/edge-routers/${transit}/re-enroll`), transit);
  });
});

describe('GET /edge-router-role-attributes', () => {
  it('lists the distinct attributes of edge routers, filterable', async () => {
    const tag = uniqueName('attr').replace(/-/g, '');
    await createRouter({ roleAttributes: [`${tag}1`, `${tag}2`] });
    await createRouter({ roleAttributes: [`${tag}2`] });
    const res = await tc.mgmt.get(`/edge-router-role-attributes?filter=${q(`id contains "${tag}"`)}`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/edge-router-role-attributes', 200, res.body);
    assert.deepEqual(res.body.data, [`${tag}1`, `${tag}2`]);
  });
});

describe('association lists returning edge routers', () => {
  it('lists the edge routers of an identity through edge router policies, filterable and paged', async () => {
    const attr = uniqueName('grp').replace(/-/g, '');
    const identityId = await createIdentity(tc.mgmt, { roleAttributes: [attr] });
    const r1 = await createRouter({ roleAttributes: [attr] });
    const r2 = await createRouter({ roleAttributes: [attr] });
    await createRouter({ roleAttributes: ['unrelated'] });
    await createErp({ identityRoles: [`#${attr}`], edgeRouterRoles: [`#${attr}`] });
    const res = await list('limit=500', `/identities/${identityId}/edge-routers`);
    assert.deepEqual(res.body.data.map((r: { id: string }) => r.id).sort(), [r1, r2].sort());
    const one = await list(`filter=${q(`id = "${r2}"`)}`, `/identities/${identityId}/edge-routers`);
    assert.deepEqual(one.body.data.map((r: { id: string }) => r.id), [r2]);
    const paged = await list('limit=1&offset=1', `/identities/${identityId}/edge-routers`);
    assert.deepEqual(paged.body.meta.pagination, { limit: 1, offset: 1, totalCount: 2 });
    const none = await list('', `/identities/${await createIdentity(tc.mgmt)}/edge-routers`);
    assert.deepEqual(none.body.data, []);
    assertEmptyList(await tc.mgmt.get('/identities/nope/edge-routers'));
  });

  it('lists the edge routers an edge router policy and a service edge router policy select', async () => {
    const attr = uniqueName('pol').replace(/-/g, '');
    const r1 = await createRouter({ roleAttributes: [attr] });
    const r2 = await createRouter();
    const erp = await createErp({ edgeRouterRoles: [`#${attr}`, `@${r2}`], semantic: 'AnyOf' });
    const res = await list('', `/edge-router-policies/${erp}/edge-routers`);
    assert.deepEqual(res.body.data.map((r: { id: string }) => r.id).sort(), [r1, r2].sort());
    assertEmptyList(await tc.mgmt.get('/edge-router-policies/nope/edge-routers'));
    // A record of another type is no parent either.
    assertEmptyList(await tc.mgmt.get(`/service-edge-router-policies/${erp}/edge-routers`));

    const serp = await tc.mgmt.post('/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AllOf', serviceRoles: [], edgeRouterRoles: [`#${attr}`] });
    assert.equal(serp.status, 201, serp.text);
    const viaSerp = await list('', `/service-edge-router-policies/${serp.body.data.id}/edge-routers`);
    assert.deepEqual(viaSerp.body.data.map((r: { id: string }) => r.id), [r1]);
    assertEmptyList(await tc.mgmt.get('/service-edge-router-policies/nope/edge-routers'));
  });

  it('lists the edge routers of a service through service edge router policies', async () => {
    const attr = uniqueName('svc').replace(/-/g, '');
    const svc = await tc.mgmt.post('/services', { name: uniqueName('svc'), encryptionRequired: true, roleAttributes: [attr] });
    assert.equal(svc.status, 201, svc.text);
    const serviceId = svc.body.data.id as string;
    const r1 = await createRouter({ roleAttributes: [attr] });
    const r2 = await createRouter({ roleAttributes: [attr] });
    await createRouter();
    const serp = await tc.mgmt.post('/service-edge-router-policies', { name: uniqueName('serp'), semantic: 'AllOf', serviceRoles: [`#${attr}`], edgeRouterRoles: [`#${attr}`] });
    assert.equal(serp.status, 201, serp.text);
    const res = await list('limit=500', `/services/${serviceId}/edge-routers`);
    assert.deepEqual(res.body.data.map((r: { id: string }) => r.id).sort(), [r1, r2].sort());
    const filtered = await list(`filter=${q(`id = "${r1}"`)}`, `/services/${serviceId}/edge-routers`);
    assert.deepEqual(filtered.body.data.map((r: { id: string }) => r.id), [r1]);
    assertEmptyOk(await tc.mgmt.delete(`/edge-routers/${r2}`));
    const after = await list('', `/services/${serviceId}/edge-routers`);
    assert.deepEqual(after.body.data.map((r: { id: string }) => r.id), [r1]);
    assertEmptyList(await tc.mgmt.get('/services/nope/edge-routers'));
  });
});

describe('edge router operations: authorization', () => {
  it('answers every operation of a non-admin identity with 401 UNAUTHORIZED and changes nothing', async () => {
    const user = await createUserWithPassword(tc);
    const asUser = tc.mgmt.as({ token: user.token });
    const id = await createRouter();
    const before = await detail(id);
    const ops: Array<[string, string, unknown?]> = [
      ['GET', '/edge-routers'],
      ['POST', '/edge-routers', { name: uniqueName('x') }],
      ['GET', `/edge-routers/${id}`],
      ['PUT', `/edge-routers/${id}`, { name: uniqueName('x') }],
      ['PATCH', `/edge-routers/${id}`, { cost: 9 }],
      ['DELETE', `/edge-routers/${id}`],
      ['POST', `/edge-routers/${id}/re-enroll`],
      ['GET', '/edge-router-role-attributes'],
      ['GET', `/identities/${user.id}/edge-routers`],
    ];
    for (const [method, path, body] of ops) {
      const res = await asUser.request(method, path, body === undefined ? {} : { body });
      assertError(res, 401, 'UNAUTHORIZED');
    }
    assert.deepEqual(await detail(id), before);
  });

  it('lets router.read list and read but not write', async () => {
    const reader = await createUserWithPassword(tc, { permissions: ['router.read'] });
    const asReader = tc.mgmt.as({ token: reader.token });
    const id = await createRouter();
    const res = await asReader.get('/edge-routers');
    assert.equal(res.status, 200);
    assertListBody('/edge-routers', res.body);
    await detail(id, asReader);
    assertError(await asReader.post('/edge-routers', { name: uniqueName('x') }), 401, 'UNAUTHORIZED');
    assertError(await asReader.delete(`/edge-routers/${id}`), 401, 'UNAUTHORIZED');
    assertError(await asReader.post(`/edge-routers/${id}/re-enroll`), 401, 'UNAUTHORIZED');
  });
});

describe('edge routers across a restart', () => {
  it('keep their records, enrollment and tunneler policy', async () => {
    const id = await createRouter({ isTunnelerEnabled: true, roleAttributes: ['persist'] });
    const before = await detail(id);
    await tc.restart();
    tc.mgmt = tc.mgmt.as({ token: await tc.login(ADMIN_USER, ADMIN_PASSWORD) });
    assert.deepEqual(await detail(id), before);
    const routers = await list('', `/identities/${id}/edge-routers`);
    assert.deepEqual(routers.body.data.map((r: { id: string }) => r.id), [id]);
  });
});
