/**
 * Filter symbols as upstream declares them: every field the upstream controller (v2.0.0-pre3) lists in
 * `meta.filterableFields` of a list is listed here too and works in a filter, while the password hash and salt
 * never do. The upstream sets were read from its list answers.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../support/controller.ts';
import type { HttpClient } from '../support/client.ts';
import { createIdentity, createRecord } from '../support/factories.ts';
import { createTestSigner } from '../support/external-signer.ts';

const tc: TestController = await startTestController();

/** Upstream's filterable fields per list (base fields id, createdAt, updatedAt, tags, isSystem left out). */
const UPSTREAM: Record<string, string[]> = {
  '/identities': ['roleAttributes', 'type', 'authPolicyId', 'isAdmin', 'name', 'externalId', 'isDefaultAdmin'],
  '/authenticators': [
    'identity', 'lastAuthResolvedToRoot', 'certFingerprint', 'method', 'isIssuedByNetwork', 'isKeyRollRequested', 'extendRequestedAt',
    'certPem', 'isExtendRequested', 'publicKeyPrint', 'lastExtendRolledKeys', 'updbUsername',
  ],
  '/api-sessions': ['identity', 'ipAddress', 'mfaRequired', 'token', 'lastActivityAt', 'authenticator', 'mfaComplete', 'improperClientCertChain'],
  '/auth-policies': [
    'name', 'primary.cert.allowed', 'primary.cert.allowExpiredCerts', 'primary.extJwt.allowed', 'primary.updb.allowed',
    'primary.updb.minPasswordLength', 'primary.updb.requireSpecialChar', 'primary.updb.requireNumberChar', 'primary.updb.requireMixedCase',
    'primary.updb.maxAttempts', 'secondary.requireTotp', 'secondary.requireExtJwtSigner',
  ],
  '/cas': ['fingerprint', 'isVerified', 'verificationToken', 'isAutoCaEnrollmentEnabled', 'name', 'isOttCaEnrollmentEnabled', 'isAuthEnabled'],
  '/configs': ['name', 'type'],
  '/config-types': ['name', 'schema'],
  '/edge-routers': ['isTunnelerEnabled', 'disabled', 'noTraversal', 'cost', 'roleAttributes', 'isVerified', 'fingerprint', 'name', 'online', 'connected'],
  '/edge-router-policies': ['semantic', 'identityRoles', 'edgeRouterRoles', 'name'],
  '/enrollments': ['token', 'edgeRouter', 'transitRouter', 'caId', 'identity'],
  '/external-jwt-signers': [
    'name', 'commonName', 'claimsProperty', 'audience', 'clientId', 'scopes', 'enrollToCertEnabled', 'enrollToTokenEnabled',
    'enrollAttributeClaimsSelector', 'enrollAuthPolicyId', 'fingerprint', 'kid', 'notAfter', 'useExternalId', 'enrollNameClaimsSelector',
    'issuer', 'certPem', 'notBefore', 'enabled', 'targetToken',
  ],
  '/posture-checks': ['name', 'promptOnWake', 'roleAttributes', 'promptOnUnlock', 'typeId'],
  '/routers': ['name', 'noTraversal', 'fingerprint', 'disabled', 'cost'],
  '/transit-routers': ['name', 'noTraversal', 'fingerprint', 'disabled', 'cost'],
  '/services': ['roleAttributes', 'configs', 'terminatorStrategy', 'name'],
  '/service-policies': ['identityRoles', 'postureCheckRoles', 'identities', 'services', 'name', 'semantic', 'serviceRoles', 'type'],
  '/service-edge-router-policies': ['name', 'edgeRouterRoles', 'semantic', 'serviceRoles'],
  '/sessions': ['token', 'service', 'apiSession', 'type'],
  '/terminators': ['instanceId', 'hostId', 'sourceCtrl', 'service', 'binding', 'address', 'router', 'service.name', 'router.name'],
  '/controllers': ['name', 'ctrlAddress', 'lastJoinedAt', 'certPem', 'fingerprint', 'isOnline', 'isPreferredLeader'],
};

/** Upstream fields not offered yet (none: the list stays to name any that a later upstream adds). */
const MISSING: Record<string, string[]> = {};

const SECRETS = ['updbPassword', 'updbSalt', 'password', 'passwordHash'];

/** A filter on the field that type-checks whatever its type: a null test for scalars, isEmpty for sets. */
async function filterWorks(client: HttpClient, path: string, field: string): Promise<string | undefined> {
  for (const filter of [`${field} = null`, `isEmpty(${field})`]) {
    const res = await client.get(`${path}?filter=${encodeURIComponent(filter)}`);
    if (res.status === 200) return undefined;
  }
  return `${path}: a filter on ${field} is refused`;
}

describe('filterable fields as upstream declares them', () => {
  it('lists every upstream field (but the named gaps) on each management list, and each works in a filter', async () => {
    const problems: string[] = [];
    for (const [path, fields] of Object.entries(UPSTREAM)) {
      const res = await tc.mgmt.get(`${path}?limit=1`);
      assert.equal(res.status, 200, `${path}: ${res.text}`);
      const listed: string[] = res.body.meta.filterableFields;
      for (const field of fields) {
        if (MISSING[path]?.includes(field)) {
          if (listed.includes(field)) problems.push(`${path}: ${field} is offered now; take it out of MISSING`);
          continue;
        }
        if (!listed.includes(field)) problems.push(`${path}: ${field} is not listed`);
        else {
          const refused = await filterWorks(tc.mgmt, path, field);
          if (refused) problems.push(refused);
        }
      }
      for (const secret of SECRETS) if (listed.includes(secret)) problems.push(`${path}: the secret ${secret} is listed`);
    }
    assert.deepEqual(problems, []);
  });

  it('keeps the password hash and salt out of every authenticator list and filter', async () => {
    for (const path of ['/authenticators', '/current-identity/authenticators']) {
      const res = await tc.mgmt.get(`${path}?limit=1`);
      for (const secret of SECRETS) {
        assert.ok(!res.body.meta.filterableFields.includes(secret), `${path} lists ${secret}`);
        const filtered = await tc.mgmt.get(`${path}?filter=${encodeURIComponent(`${secret} contains "a"`)}`);
        assert.equal(filtered.status, 400, `${path} ${secret}: ${filtered.text}`);
        assert.equal(filtered.body.error.code, 'INVALID_FILTER');
      }
    }
  });

  it('filters by the upstream names with the same answers as by Portcullis\' own', async () => {
    const me = (await tc.mgmt.get('/current-identity')).body.data;
    const byUpstream = await tc.mgmt.get(`/identities?filter=${encodeURIComponent(`authPolicyId = "default" and id = "${me.id}"`)}`);
    assert.deepEqual(byUpstream.body.data.map((i: { id: string }) => i.id), [me.id]);
    const authenticator = (await tc.mgmt.get(`/identities/${me.id}/authenticators`)).body.data[0];
    const byName = await tc.mgmt.get(`/authenticators?filter=${encodeURIComponent(`updbUsername = "${authenticator.username}"`)}`);
    assert.deepEqual(byName.body.data.map((a: { id: string }) => a.id), [authenticator.id]);
    const policies = await tc.mgmt.get(`/auth-policies?filter=${encodeURIComponent('primary.updb.allowed = true and secondary.requireTotp = false and primary.updb.maxAttempts >= 0')}`);
    assert.ok(policies.body.data.some((p: { id: string }) => p.id === 'default'), policies.text);
    const none = await tc.mgmt.get(`/auth-policies?filter=${encodeURIComponent('primary.updb.allowed = false and id = "default"')}`);
    assert.deepEqual(none.body.data, []);
  });

  it('filters on what a service policy matches now, from the access index', async () => {
    const attr = uniqueName('member').replace(/-/g, '');
    const member = await createIdentity(tc.mgmt, { roleAttributes: [attr] });
    const service = await createRecord(tc.mgmt, '/services', { name: uniqueName('svc'), encryptionRequired: true, roleAttributes: [attr] });
    const policy = await createRecord(tc.mgmt, '/service-policies', { name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`#${attr}`], serviceRoles: [`#${attr}`] });
    const ids = async (filter: string) => (await tc.mgmt.get(`/service-policies?filter=${encodeURIComponent(filter)}`)).body.data.map((p: { id: string }) => p.id);
    assert.deepEqual(await ids(`anyOf(identities) = "${member}"`), [policy]);
    assert.deepEqual(await ids(`anyOf(services) = "${service}"`), [policy]);
    assert.deepEqual(await ids(`id = "${policy}" and count(identities) = 1`), [policy]);
    assert.equal((await tc.mgmt.patch(`/identities/${member}`, { roleAttributes: [] })).status, 200);
    assert.deepEqual(await ids(`anyOf(identities) = "${member}"`), []);
  });

  it('filters on certificate facts and on the controller a terminator came through', async () => {
    const signer = await createTestSigner('filter-cn-idp');
    const id = await createRecord(tc.mgmt, '/external-jwt-signers', { name: uniqueName('signer'), issuer: uniqueName('https://idp.example.com/'), audience: 'a', enabled: true, certPem: signer.certPem });
    const detail = (await tc.mgmt.get(`/external-jwt-signers/${id}`)).body.data;
    const ids = async (filter: string) => (await tc.mgmt.get(`/external-jwt-signers?filter=${encodeURIComponent(filter)}`)).body.data.map((s: { id: string }) => s.id);
    assert.deepEqual(await ids(`commonName = "filter-cn-idp"`), [id]);
    assert.deepEqual(await ids(`id = "${id}" and notAfter = datetime(${detail.notAfter}) and notBefore < datetime(${detail.notAfter})`), [id]);
    const controllerId = (await tc.mgmt.get('/controllers')).body.data[0].id as string;
    const service = await createRecord(tc.mgmt, '/services', { name: uniqueName('svc'), encryptionRequired: true });
    const router = await createRecord(tc.mgmt, '/transit-routers', { name: uniqueName('tr') });
    const terminator = await createRecord(tc.mgmt, '/terminators', { service, router, binding: 'transport', address: 'tcp:127.0.0.1:1' });
    const found = await tc.mgmt.get(`/terminators?filter=${encodeURIComponent(`sourceCtrl = "${controllerId}" and id = "${terminator}"`)}`);
    assert.deepEqual(found.body.data.map((t: { id: string }) => t.id), [terminator]);
    const controllers = await tc.mgmt.get(`/controllers?filter=${encodeURIComponent('isPreferredLeader = false')}`);
    assert.equal(controllers.body.meta.pagination.totalCount, 1);
  });
});
