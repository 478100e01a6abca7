/**
 * Management posture checks: create and read every type (OS, MAC, DOMAIN, PROCESS, PROCESS_MULTI, MFA),
 * the fields each type requires, the stored form of type-specific fields, the version counter, put and
 * patch, role attributes (with roleFilter and the role-attribute list), delete, unknown ids, permissions,
 * and the read-only posture check types.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import type { HttpResponse } from '../../support/client.ts';
import { createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertDecodeError, TIMESTAMP, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();

/** Stored string sets read back as null when empty (upstream's nil sets). */
/** Upstream sends null for an empty OS version list and for a PROCESS check's unset hashes; the reference does not allow it. */
const DETAIL_NULLS = { allowNullAt: ['/data/operatingSystems/*/versions', '/data/process/hashes'] };

function q(filter: string): string {
  return encodeURIComponent(filter);
}

async function create(b: Record<string, unknown>): Promise<string> {
  const res = await tc.mgmt.post('/posture-checks', { name: uniqueName('pc'), ...b });
  assert.equal(res.status, 201, res.text);
  assertMatchesReference('management', 'POST', '/posture-checks', 201, res.body);
  return res.body.data.id;
}

async function detail(id: string): Promise<Record<string, any>> {
  const res = await tc.mgmt.get(`/posture-checks/${id}`);
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('management', 'GET', '/posture-checks/{id}', 200, res.body, DETAIL_NULLS);
  return res.body.data;
}

async function count(): Promise<number> {
  const res = await tc.mgmt.get('/posture-checks?limit=1');
  assert.equal(res.status, 200, res.text);
  return res.body.meta.pagination.totalCount;
}

async function expectRejected(b: Record<string, unknown>, check: (res: HttpResponse) => void): Promise<void> {
  const before = await count();
  const res = await tc.mgmt.post('/posture-checks', { name: uniqueName('bad'), ...b });
  check(res);
  assert.equal(await count(), before, 'nothing was created');
}

/** The fields of a read model beside the base and common ones. */
function own(d: Record<string, unknown>): Record<string, unknown> {
  const { _links, createdAt, updatedAt, id, tags, name, typeId, version, roleAttributes, ...rest } = d;
  return rest;
}

describe('POST /posture-checks: every type', () => {
  it('creates a DOMAIN check with the common read model: version 1, role attributes, links', async () => {
    const name = uniqueName('domain');
    const id = await create({ name, typeId: 'DOMAIN', domains: ['b.example', 'a.example', 'b.example'], roleAttributes: ['#odd', 'x', 'x'], tags: { k: 'v' } });
    const d = await detail(id);
    assert.equal(d.name, name);
    assert.equal(d.typeId, 'DOMAIN');
    assert.equal(d.version, 1);
    assert.deepEqual(d.roleAttributes, ['#odd', 'x'], 'no prefix check for posture checks; a sorted set');
    assert.deepEqual(d.tags, { k: 'v' });
    assert.deepEqual(d._links, { self: { href: `./posture-checks/${id}` } });
    assert.match(d.createdAt, TIMESTAMP);
    assert.deepEqual(own(d), { domains: ['a.example', 'b.example'] });
  });

  it('creates MAC, OS, PROCESS, PROCESS_MULTI and MFA checks with their own fields', async () => {
    const mac = await detail(await create({ typeId: 'MAC', macAddresses: ['aabbccddeeff', '001122334455'] }));
    assert.deepEqual(own(mac), { macAddresses: ['001122334455', 'aabbccddeeff'] });

    const os = await detail(
      await create({
        typeId: 'OS',
        operatingSystems: [
          { type: 'Windows', versions: ['>=10.0.19041', '>=10.0.19041'] },
          { type: 'Linux', versions: [] },
          { type: 'Android', versions: ['>=11.0.0'] },
        ],
      }),
    );
    assert.deepEqual(own(os), {
      operatingSystems: [
        { type: 'Android', versions: ['>=11.0.0'] },
        { type: 'Linux', versions: null },
        { type: 'Windows', versions: ['>=10.0.19041'] },
      ],
    });

    const process = await detail(await create({ typeId: 'PROCESS', process: { osType: 'Linux', path: '/usr/bin/agent', hashes: ['bb', 'aa'] } }));
    assert.deepEqual(own(process), { process: { osType: 'Linux', path: '/usr/bin/agent', hashes: ['aa', 'bb'] } });
    const signed = await detail(await create({ typeId: 'PROCESS', process: { osType: 'Windows', path: 'C:\\agent.exe', signerFingerprint: 'ff00' } }));
    assert.deepEqual(own(signed), { process: { osType: 'Windows', path: 'C:\\agent.exe', signerFingerprint: 'ff00', hashes: null } });

    const multi = await detail(
      await create({
        typeId: 'PROCESS_MULTI',
        semantic: 'AnyOf',
        processes: [
          { osType: 'macOS', path: '/Applications/A.app', signerFingerprints: ['s1'] },
          { osType: 'Linux', path: '/bin/b' },
        ],
      }),
    );
    assert.deepEqual(own(multi), {
      processes: [
        { osType: 'macOS', path: '/Applications/A.app', hashes: [], signerFingerprints: ['s1'] },
        { osType: 'Linux', path: '/bin/b', hashes: [], signerFingerprints: [] },
      ],
      semantic: 'AnyOf',
    });

    const mfa = await detail(await create({ typeId: 'MFA', timeoutSeconds: 300, promptOnWake: true }));
    // As upstream, the MFA flags that are false are left out.
    assert.deepEqual(own(mfa), { timeoutSeconds: 300, promptOnWake: true });
    const noTimeout = await detail(await create({ typeId: 'MFA', timeoutSeconds: 0 }));
    assert.equal(noTimeout.timeoutSeconds, -1, 'a timeout of 0 or less means none (-1)');
    assert.equal((await detail(await create({ typeId: 'MFA' }))).timeoutSeconds, -1);
  });

  it('stores MAC addresses as upstream does: no separators, lower case, once each, sorted; refuses non-addresses', async () => {
    const mac = await detail(await create({ typeId: 'MAC', macAddresses: ['FF:FF:FF:00:00:01', '00:11:22:33:44:55', 'ff-ff-ff-00-00-01', '0011.2233.4455'] }));
    assert.deepEqual(own(mac), { macAddresses: ['001122334455', 'ffffff000001'] });
    await expectRejected({ typeId: 'MAC', macAddresses: ['not-a-mac'] }, (res) => assertFieldError(res, 'macAddresses'));
    const id = await create({ typeId: 'MAC', macAddresses: ['001122334455'] });
    assertEmptyOk(await tc.mgmt.patch(`/posture-checks/${id}`, { typeId: 'MAC', macAddresses: ['AA-BB-CC-DD-EE-FF'] }));
    assert.deepEqual(own(await detail(id)), { macAddresses: ['aabbccddeeff'] });
  });

  it('reads only the fields of the check\'s own type, as the admin console sends every type\'s fields', async () => {
    const consoleBody = {
      typeId: 'MFA', semantic: 'AllOf', roleAttributes: [], domains: [], macAddresses: [], operatingSystems: [],
      processes: [{ hashes: [], osType: '', path: '', signerFingerprints: [] }], process: { hashes: [], osType: '', path: '', signerFingerprint: '' },
      promptOnWake: false, promptOnUnlock: false, timeoutSeconds: 600, tags: {},
    };
    const d = await detail(await create(consoleBody));
    assert.deepEqual(own(d), { timeoutSeconds: 600 });
    const domain = await detail(await create({ ...consoleBody, typeId: 'DOMAIN', domains: ['example.com'] }));
    assert.deepEqual(own(domain), { domains: ['example.com'] });
    // The own type's fields are still validated.
    await expectRejected({ ...consoleBody, typeId: 'DOMAIN' }, (res) => assertFieldError(res, 'domains'));
  });

  it('reads the CLI\'s capitalised Type and Versions keys of OS entries (lower case wins), and nothing else', async () => {
    const os = await detail(
      await create({ typeId: 'OS', operatingSystems: [{ Type: 'Windows', Versions: ['>=10.0.19041'] }, { Type: 'Linux', Versions: [] }] }),
    );
    assert.deepEqual(own(os), { operatingSystems: [{ type: 'Linux', versions: null }, { type: 'Windows', versions: ['>=10.0.19041'] }] });
    const both = await detail(await create({ typeId: 'OS', operatingSystems: [{ type: 'macOS', Type: 'Windows', versions: ['>=13.0.0'], Versions: ['>=1.0.0'] }] }));
    assert.deepEqual(own(both), { operatingSystems: [{ type: 'macOS', versions: ['>=13.0.0'] }] });
    const id = await create({ typeId: 'OS', operatingSystems: [{ type: 'Linux', versions: [] }] });
    assertEmptyOk(await tc.mgmt.patch(`/posture-checks/${id}`, { typeId: 'OS', operatingSystems: [{ Type: 'Android', Versions: ['>=11.0.0'] }] }));
    assert.deepEqual(own(await detail(id)), { operatingSystems: [{ type: 'Android', versions: ['>=11.0.0'] }] });
    // Other keys and other capitalisations stay strict.
    await expectRejected({ typeId: 'OS', operatingSystems: [{ TYPE: 'Linux', versions: [] }] }, (res) => assert.equal(res.status, 400, res.text));
    await expectRejected({ typeId: 'OS', OperatingSystems: [{ type: 'Linux', versions: [] }] }, (res) => assertFieldError(res, 'operatingSystems'));
  });

  it('reads null optional process lists as unset, as generated Go clients send them', async () => {
    const process = await detail(await create({ typeId: 'PROCESS', process: { osType: 'Linux', path: '/usr/bin/agent', hashes: null } }));
    // Upstream reads the unset list back as null.
    assert.deepEqual(own(process), { process: { osType: 'Linux', path: '/usr/bin/agent', hashes: null } });
    const multi = await detail(
      await create({ typeId: 'PROCESS_MULTI', semantic: 'AllOf', processes: [{ osType: 'Windows', path: 'C:\\a.exe', hashes: null, signerFingerprints: null }] }),
    );
    assert.deepEqual(own(multi), { processes: [{ osType: 'Windows', path: 'C:\\a.exe', hashes: [], signerFingerprints: [] }], semantic: 'AllOf' });
    await expectRejected({ typeId: 'PROCESS', process: { osType: 'Linux', path: '/x', hashes: 'aa' } }, (res) => assertDecodeError(res, 'process.hashes'));
  });

  it('requires name and typeId, and the fields of the type', async () => {
    await expectRejected({ typeId: 'DOMAIN', domains: ['x'], name: undefined }, (res) => assertFieldError(res, 'name'));
    for (const typeId of [undefined, null, '']) {
      await expectRejected({ domains: ['x'], typeId, name: undefined }, (res) => {
        assertFieldError(res, 'typeId');
        assert.deepEqual(res.body.error.cause, { field: 'typeId', reason: 'typeId in body is required', value: '' });
      });
    }
    // A type upstream does not know makes the body undecodable: refused before any other field (name, tags).
    const unknownType = (typeId: string) => (res: HttpResponse) => {
      assertError(res, 400, 'COULD_NOT_PARSE_BODY');
      assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: `invalid typeId value: "${typeId}"` });
    };
    await expectRejected({ typeId: 'NOPE' }, unknownType('NOPE'));
    await expectRejected({ typeId: 'NOPE', name: undefined }, unknownType('NOPE'));
    await expectRejected({ typeId: 'NOPE', name: 5, tags: 5 }, unknownType('NOPE'));
    await expectRejected({ typeId: 'mfa' }, unknownType('mfa'));
    await expectRejected({ typeId: 'DOMAIN' }, (res) => {
      assertFieldError(res, 'domains');
      assert.equal(res.body.error.cause.reason, 'domains in body is required');
    });
    await expectRejected({ typeId: 'MAC', domains: ['x'] }, (res) => assertFieldError(res, 'macAddresses'));
    await expectRejected({ typeId: 'OS' }, (res) => assertFieldError(res, 'operatingSystems'));
    await expectRejected({ typeId: 'PROCESS' }, (res) => assertFieldError(res, 'process'));
    await expectRejected({ typeId: 'PROCESS_MULTI', semantic: 'AllOf' }, (res) => assertFieldError(res, 'processes'));
    await expectRejected({ typeId: 'PROCESS_MULTI', processes: [{ osType: 'Linux', path: '/x' }] }, (res) => assertFieldError(res, 'semantic'));
  });

  it('validates the shape of type fields', async () => {
    await expectRejected({ typeId: 'DOMAIN', domains: [] }, (res) => assertFieldError(res, 'domains'));
    await expectRejected({ typeId: 'OS', operatingSystems: [{ type: 'BeOS', versions: [] }] }, (res) => assertFieldError(res, 'operatingSystems.0.type'));
    await expectRejected({ typeId: 'OS', operatingSystems: [{ type: 'Linux' }] }, (res) => assertFieldError(res, 'operatingSystems.0.versions'));
    await expectRejected({ typeId: 'OS', operatingSystems: [{ type: 'Linux', versions: ['>=5.4.0', 'not a range'] }] }, (res) => {
      assertFieldError(res, 'operatingSystems');
      assert.equal(res.body.error.cause.value, 'not a range');
    });
    await expectRejected({ typeId: 'PROCESS', process: { osType: 'Linux' } }, (res) => assertFieldError(res, 'process.path'));
    await expectRejected({ typeId: 'PROCESS_MULTI', semantic: 'Both', processes: [{ osType: 'Linux', path: '/x' }] }, (res) => assertFieldError(res, 'semantic'));
    await expectRejected({ typeId: 'MFA', timeoutSeconds: 'soon' }, (res) => assertDecodeError(res, 'timeoutSeconds'));
  });

  it('refuses a duplicate name', async () => {
    const name = uniqueName('dup');
    await create({ name, typeId: 'MFA' });
    await expectRejected({ name, typeId: 'MFA' }, (res) => {
      assertFieldError(res, 'name');
      assert.equal(res.body.error.cause.reason, 'name must be unique');
    });
  });
});

describe('PUT and PATCH /posture-checks/{id}', () => {
  it('patch changes the supplied fields, keeps the others and increments the version', async () => {
    const id = await create({ typeId: 'MFA', timeoutSeconds: 60, promptOnWake: true, roleAttributes: ['a'] });
    assertEmptyOk(await tc.mgmt.patch(`/posture-checks/${id}`, { typeId: 'MFA', promptOnUnlock: true, timeoutSeconds: null }));
    let d = await detail(id);
    assert.equal(d.version, 2);
    assert.deepEqual(own(d), { timeoutSeconds: 60, promptOnWake: true, promptOnUnlock: true });
    assert.deepEqual(d.roleAttributes, ['a']);
    assertEmptyOk(await tc.mgmt.patch(`/posture-checks/${id}`, { typeId: 'MFA', roleAttributes: ['b', 'a'] }));
    d = await detail(id);
    assert.equal(d.version, 3);
    assert.deepEqual(d.roleAttributes, ['a', 'b']);
  });

  it('patch requires typeId and validates fields', async () => {
    const id = await create({ typeId: 'DOMAIN', domains: ['x'] });
    const before = await detail(id);
    assertFieldError(await tc.mgmt.patch(`/posture-checks/${id}`, { domains: ['y'] }), 'typeId');
    assertFieldError(await tc.mgmt.patch(`/posture-checks/${id}`, { typeId: 'DOMAIN', domains: [] }), 'domains');
    assertFieldError(await tc.mgmt.patch(`/posture-checks/${id}`, { typeId: 'MAC' }), 'macAddresses');
    assert.deepEqual(await detail(id), before);
  });

  it('put replaces every field; typeId is required (as upstream) and so are the fields of its type', async () => {
    const id = await create({ typeId: 'DOMAIN', domains: ['x'], roleAttributes: ['r'], tags: { a: 'b' } });
    const name = uniqueName('put');
    assertFieldError(await tc.mgmt.put(`/posture-checks/${id}`, { name, domains: ['z'] }), 'typeId');
    assertFieldError(await tc.mgmt.patch(`/posture-checks/${id}`, { name }), 'typeId');
    const unknown = await tc.mgmt.put(`/posture-checks/${id}`, { name, typeId: 'NOPE' });
    assertError(unknown, 400, 'COULD_NOT_PARSE_BODY');
    assert.deepEqual(unknown.body.error.cause, { code: 'UNHANDLED', message: 'invalid typeId value: "NOPE"' });
    assertFieldError(await tc.mgmt.put(`/posture-checks/${id}`, { name, typeId: 'DOMAIN' }), 'domains');
    assertFieldError(await tc.mgmt.put(`/posture-checks/${id}`, { typeId: 'DOMAIN', domains: ['z'] }), 'name');
    assertEmptyOk(await tc.mgmt.put(`/posture-checks/${id}`, { name, typeId: 'DOMAIN', domains: ['z'] }));
    const d = await detail(id);
    assert.equal(d.name, name);
    assert.equal(d.typeId, 'DOMAIN');
    assert.equal(d.version, 2);
    assert.deepEqual(d.roleAttributes, []);
    assert.deepEqual(d.tags, {});
    assert.deepEqual(own(d), { domains: ['z'] });
  });

  it('put may change the type when it carries the new type fields', async () => {
    const id = await create({ typeId: 'DOMAIN', domains: ['x'] });
    assertEmptyOk(await tc.mgmt.put(`/posture-checks/${id}`, { name: uniqueName('to-mac'), typeId: 'MAC', macAddresses: ['001122334455'] }));
    const d = await detail(id);
    assert.equal(d.typeId, 'MAC');
    assert.deepEqual(own(d), { macAddresses: ['001122334455'] });
  });
});

describe('service-update marks', () => {
  it('a change of a check marks the identities of the service policies that include it, and no one else', async () => {
    const store = tc.controller.store;
    const identity = async () => {
      const res = await tc.mgmt.post('/identities', { name: uniqueName('i'), type: 'User', isAdmin: false });
      assert.equal(res.status, 201, res.text);
      return res.body.data.id as string;
    };
    const included = await identity();
    const unrelated = await identity();
    const svc = await tc.mgmt.post('/services', { name: uniqueName('svc'), encryptionRequired: true });
    assert.equal(svc.status, 201, svc.text);
    const check = await create({ typeId: 'MFA' });
    const policy = await tc.mgmt.post('/service-policies', {
      name: uniqueName('sp'), type: 'Dial', semantic: 'AllOf',
      identityRoles: [`@${included}`], serviceRoles: [`@${svc.body.data.id}`], postureCheckRoles: [`@${check}`],
    });
    assert.equal(policy.status, 201, policy.text);
    const marked = async (id: string) => (await store.get('SELECT 1 FROM identity_service_marks WHERE identity_id = ?', [id])) !== undefined;
    const clear = () => store.write((tx) => tx.run('DELETE FROM identity_service_marks WHERE identity_id IN (?, ?)', [included, unrelated]));

    await clear();
    assertEmptyOk(await tc.mgmt.patch(`/posture-checks/${check}`, { typeId: 'MFA', timeoutSeconds: 60 }));
    assert.equal(await marked(included), true);
    assert.equal(await marked(unrelated), false);

    await clear();
    assertEmptyOk(await tc.mgmt.delete(`/posture-checks/${check}`));
    assert.equal(await marked(included), true);
    assert.equal(await marked(unrelated), false);
  });
});

describe('GET /posture-checks', () => {
  it('filters, sorts, pages and applies roleFilter/roleSemantic', async () => {
    const tag = uniqueName('L').replace(/-/g, '');
    const a = await create({ name: `${tag}-a`, typeId: 'MFA', roleAttributes: [`${tag}x`, `${tag}y`] });
    const b = await create({ name: `${tag}-b`, typeId: 'DOMAIN', domains: ['d'], roleAttributes: [`${tag}x`] });
    const c = await create({ name: `${tag}-c`, typeId: 'MAC', macAddresses: ['00:00:00:00:00:01'] });
    const names = async (query: string) => {
      const res = await tc.mgmt.get(`/posture-checks?${query}`);
      assert.equal(res.status, 200, res.text);
      assertMatchesReference('management', 'GET', '/posture-checks', 200, res.body);
      return res.body.data.map((p: { name: string }) => p.name);
    };
    const mine = `name contains "${tag}"`;
    assert.deepEqual(await names(`filter=${q(`${mine} sort by name desc`)}`), [`${tag}-c`, `${tag}-b`, `${tag}-a`]);
    assert.deepEqual(await names(`filter=${q(`${mine} and typeId = "MAC"`)}`), [`${tag}-c`]);
    assert.deepEqual(await names(`filter=${q(`${mine} and anyOf(roleAttributes) = "${tag}y"`)}`), [`${tag}-a`]);
    assert.deepEqual(await names(`filter=${q(`${mine} and version = 1 sort by name`)}&limit=1&offset=2`), [`${tag}-c`]);
    assert.deepEqual(await names(`filter=${q('sort by name')}&roleFilter=${q(`#${tag}x`)}&roleFilter=${q(`#${tag}y`)}`), [`${tag}-a`]);
    assert.deepEqual(
      await names(`filter=${q('sort by name')}&roleFilter=${q(`#${tag}x`)}&roleFilter=${q(`#${tag}y`)}&roleSemantic=AnyOf`),
      [`${tag}-a`, `${tag}-b`],
    );
    assert.deepEqual(await names(`filter=${q('sort by name')}&roleFilter=${q(`@${c}`)}`), [`${tag}-c`]);
    void a;
    void b;
  });

  it('lists the role attributes in use by posture checks', async () => {
    const attr = uniqueName('pcra').replace(/-/g, '');
    await create({ typeId: 'MFA', roleAttributes: [attr] });
    const res = await tc.mgmt.get(`/posture-check-role-attributes?filter=${q(`id = "${attr}"`)}`);
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/posture-check-role-attributes', 200, res.body);
    assert.deepEqual(res.body.data, [attr]);
  });
});

describe('DELETE /posture-checks/{id} and unknown ids', () => {
  it('deletes a check', async () => {
    const id = await create({ typeId: 'MFA' });
    assertEmptyOk(await tc.mgmt.delete(`/posture-checks/${id}`));
    assertError(await tc.mgmt.get(`/posture-checks/${id}`), 404, 'NOT_FOUND');
  });

  it('answers every operation on an unknown id with 404 NOT_FOUND', async () => {
    for (const res of [
      await tc.mgmt.get('/posture-checks/nope'),
      await tc.mgmt.put('/posture-checks/nope', { name: uniqueName('x'), typeId: 'MFA' }),
      await tc.mgmt.patch('/posture-checks/nope', { typeId: 'MFA' }),
      await tc.mgmt.delete('/posture-checks/nope'),
    ]) {
      assertError(res, 404, 'NOT_FOUND');
      assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: 'postureCheck with id nope not found' });
    }
  });
});

describe('GET /posture-check-types', () => {
  it('lists the five built-in types in id order with the upstream wire form', async () => {
    const res = await tc.mgmt.get('/posture-check-types');
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/posture-check-types', 200, res.body, {
      allowNullAt: ['/data/*/version', '/data/*/operatingSystems/*/versions'],
    });
    assert.deepEqual(res.body.data.map((t: { id: string }) => t.id), ['DOMAIN', 'MAC', 'OS', 'PROCESS', 'PROCESS_MULTI']);
    assert.equal(res.body.meta.pagination.totalCount, 5);
    const os = res.body.data.find((t: { id: string }) => t.id === 'OS');
    assert.equal(os.name, 'Operating System Check');
    assert.equal(os.version, null);
    assert.deepEqual(os.operatingSystems, [
      { type: 'Android', versions: ['10', '11', '9'] },
      { type: 'Linux', versions: ['4.14', '4.19', '5.4', '5.9'] },
      { type: 'Windows', versions: ['10', '2000', '7', '8', 'Vista'] },
      { type: 'iOS', versions: ['11', '12'] },
      { type: 'macOS', versions: ['10.15', '11.0'] },
    ]);
    const multi = res.body.data.find((t: { id: string }) => t.id === 'PROCESS_MULTI');
    assert.deepEqual(multi.operatingSystems, [
      { type: 'Linux', versions: null },
      { type: 'Windows', versions: null },
      { type: 'macOS', versions: null },
    ]);
    const names = Object.fromEntries(res.body.data.map((t: { id: string; name: string }) => [t.id, t.name]));
    assert.deepEqual(names, {
      DOMAIN: 'Windows Domain Check',
      MAC: 'MAC Address Check',
      OS: 'Operating System Check',
      PROCESS: 'Process Check',
      PROCESS_MULTI: 'Process Multi Check',
    });
  });

  it('shows one type, filters the list, and answers an unknown type with 404', async () => {
    const res = await tc.mgmt.get('/posture-check-types/MAC');
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/posture-check-types/{id}', 200, res.body, { allowNullAt: ['/data/version'] });
    assert.deepEqual(res.body.data.operatingSystems.map((o: { type: string }) => o.type), ['Android', 'Linux', 'Windows', 'macOS']);
    const filtered = await tc.mgmt.get(`/posture-check-types?filter=${q('name contains "Process" sort by name desc')}`);
    assert.deepEqual(filtered.body.data.map((t: { id: string }) => t.id), ['PROCESS_MULTI', 'PROCESS']);
    assertError(await tc.mgmt.get('/posture-check-types/MFA'), 404, 'NOT_FOUND');
  });

  it('keeps the types unchanged across a restart', async () => {
    const before = (await tc.mgmt.get('/posture-check-types')).body.data;
    await tc.restart();
    const token = await tc.login('admin', 'admin-password-for-tests');
    const res = await tc.mgmt.as({ token }).get('/posture-check-types');
    assert.deepEqual(res.body.data, before);
    tc.mgmt = tc.mgmt.as({ token });
  });
});

describe('posture check permissions', () => {
  it('refuses posture checks to a non-admin (as upstream) but lets any session read the posture check types', async () => {
    const id = await create({ typeId: 'MFA' });
    const user = await createUserWithPassword(tc);
    const asUser = tc.mgmt.as({ token: user.token });
    assertError(await asUser.get('/posture-checks'), 401, 'UNAUTHORIZED');
    assertError(await asUser.get(`/posture-checks/${id}`), 401, 'UNAUTHORIZED');
    assertError(await asUser.post('/posture-checks', { name: uniqueName('x'), typeId: 'MFA' }), 401, 'UNAUTHORIZED');
    assertError(await asUser.patch(`/posture-checks/${id}`, { typeId: 'MFA', promptOnWake: true }), 401, 'UNAUTHORIZED');
    assertError(await asUser.delete(`/posture-checks/${id}`), 401, 'UNAUTHORIZED');
    assert.equal((await asUser.get('/posture-check-types')).status, 200);
    const typeId = (await tc.mgmt.get('/posture-check-types')).body.data[0].id as string;
    assert.equal((await asUser.get(`/posture-check-types/${typeId}`)).status, 200);
    assertError(await asUser.get('/posture-check-role-attributes'), 401, 'UNAUTHORIZED');
  });

  it('lets the posture-check permission manage posture checks, and admin_readonly only read them', async () => {
    const id = await create({ typeId: 'MFA' });
    const auditor = tc.mgmt.as({ token: (await createUserWithPassword(tc, { permissions: ['admin_readonly'] })).token });
    assert.equal((await auditor.get(`/posture-checks/${id}`)).status, 200);
    assertError(await auditor.post('/posture-checks', { name: uniqueName('x'), typeId: 'MFA' }), 401, 'UNAUTHORIZED');
    const asUser = tc.mgmt.as({ token: (await createUserWithPassword(tc, { permissions: ['posture-check'] })).token });
    assert.equal((await asUser.get('/posture-checks')).status, 200);
    assertEmptyOk(await asUser.patch(`/posture-checks/${id}`, { typeId: 'MFA', promptOnWake: true }));
    assert.equal((await detail(id)).version, 2);
    const created = await asUser.post('/posture-checks', { name: uniqueName('x'), typeId: 'MFA' });
    assert.equal(created.status, 201, created.text);
    assertEmptyOk(await asUser.delete(`/posture-checks/${created.body.data.id}`));
    assert.equal((await asUser.get('/posture-check-role-attributes')).status, 200);
    assertError(await tc.http.get('/edge/management/v1/posture-checks'), 401, 'UNAUTHORIZED');
  });
});
