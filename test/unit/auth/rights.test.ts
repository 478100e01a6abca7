import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { covers, intersect, mayCreateIdentities, noRights, parseRights, rightsOf } from '../../../src/auth/rights.ts';

const admin = { isAdmin: true, permissions: [] };
const holding = (...permissions: string[]) => ({ isAdmin: false, permissions });

describe('rights between identities', () => {
  it('an admin covers everyone; only an admin covers an admin (the default admin included)', () => {
    assert.equal(covers(admin, holding('identity')), true);
    assert.equal(covers(admin, admin), true);
    assert.equal(covers(holding('identity', 'admin_readonly'), admin), false);
    assert.equal(covers(holding('identity'), { isAdmin: false, isDefaultAdmin: true, permissions: [] }), false);
    assert.equal(covers({ isAdmin: false, isDefaultAdmin: true, permissions: [] }, admin), true);
  });

  it('a value is covered by itself, by its resource, by all its parts, and reads by admin_readonly', () => {
    assert.equal(covers(holding(), holding()), true);
    assert.equal(covers(holding('identity'), holding('identity.update')), true);
    assert.equal(covers(holding('identity.update'), holding('identity')), false);
    assert.equal(covers(holding('identity.read', 'identity.create', 'identity.update', 'identity.delete'), holding('identity')), true);
    assert.equal(covers(holding('ops.read', 'ops.update', 'ops.delete'), holding('ops')), true);
    assert.equal(covers(holding('admin_readonly'), holding('service.read', 'ops.read')), true);
    assert.equal(covers(holding('admin_readonly'), holding('service.update')), false);
    assert.equal(covers(holding('service.read'), holding('admin_readonly')), false);
    assert.equal(covers(holding('identity'), holding('identity', 'service')), false);
  });

  it('intersects what two parties both hold', () => {
    assert.deepEqual(intersect(rightsOf(admin), holding('ca')), { isAdmin: false, permissions: ['ca'] });
    assert.deepEqual(intersect(holding('ca'), rightsOf(admin)), { isAdmin: false, permissions: ['ca'] });
    assert.deepEqual(intersect(rightsOf(admin), rightsOf(admin)), { isAdmin: true, permissions: [] });
    assert.deepEqual(intersect(holding('ca', 'identity.read'), holding('ca.update', 'identity')), { isAdmin: false, permissions: ['ca.update', 'identity.read'] });
    assert.deepEqual(intersect(holding('service'), holding('ca')), noRights);
  });

  it('reads stored rights and fails closed on anything else', () => {
    assert.deepEqual(parseRights('{"isAdmin":true,"permissions":["x"]}'), { isAdmin: true, permissions: [] });
    assert.deepEqual(parseRights({ isAdmin: false, permissions: ['ca'] }), { isAdmin: false, permissions: ['ca'] });
    for (const bad of [null, undefined, '', 'not json', '[]', '{"isAdmin":"yes"}', '{"permissions":[1]}', 42]) assert.deepEqual(parseRights(bad), noRights);
  });

  it('creating identities needs admin or identity.create', () => {
    assert.equal(mayCreateIdentities(rightsOf(admin)), true);
    assert.equal(mayCreateIdentities(holding('identity')), true);
    assert.equal(mayCreateIdentities(holding('identity.create')), true);
    assert.equal(mayCreateIdentities(holding('identity.update', 'ca')), false);
  });
});
