/**
 * Filter symbols as upstream declares them: every list of both APIs (sub-lists included) lists in
 * `meta.filterableFields` exactly the fields the upstream controller (v2.0.0-pre3) lists for that type, each of
 * which works in a filter; the further fields Portcullis filters on work without being listed, and the password
 * hash and salt (which upstream lists for authenticators) never do. The upstream sets were read from its list
 * answers.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, testStore, uniqueName, type TestController } from '../support/controller.ts';
import type { HttpClient } from '../support/client.ts';
import { createIdentity, createRecord } from '../support/factories.ts';
import { createTestSigner } from '../support/external-signer.ts';

const tc: TestController = await startTestController();

/** Upstream's filterable fields per list type, base fields (id, createdAt, updatedAt, tags, isSystem) left out. */
const UPSTREAM: Record<string, string[]> = {
  identities: ['roleAttributes', 'type', 'authPolicyId', 'isAdmin', 'name', 'externalId', 'isDefaultAdmin'],
  // Upstream also lists updbPassword and updbSalt; the password hash and salt are never filterable here.
  authenticators: [
    'identity', 'lastAuthResolvedToRoot', 'certFingerprint', 'method', 'isIssuedByNetwork', 'isKeyRollRequested', 'extendRequestedAt',
    'certPem', 'isExtendRequested', 'publicKeyPrint', 'lastExtendRolledKeys', 'updbUsername',
  ],
  apiSessions: ['identity', 'ipAddress', 'mfaRequired', 'token', 'lastActivityAt', 'authenticator', 'mfaComplete', 'improperClientCertChain'],
  apiSessionCertificates: ['apiSession', 'fingerprint', 'subject'],
  authPolicies: [
    'name', 'primary.cert.allowed', 'primary.cert.allowExpiredCerts', 'primary.extJwt.allowed', 'primary.updb.allowed',
    'primary.updb.minPasswordLength', 'primary.updb.requireSpecialChar', 'primary.updb.requireNumberChar', 'primary.updb.requireMixedCase',
    'primary.updb.maxAttempts', 'secondary.requireTotp', 'secondary.requireExtJwtSigner',
  ],
  cas: ['fingerprint', 'isVerified', 'verificationToken', 'isAutoCaEnrollmentEnabled', 'name', 'isOttCaEnrollmentEnabled', 'isAuthEnabled'],
  configs: ['name', 'type'],
  configTypes: ['name', 'schema'],
  edgeRouters: ['isTunnelerEnabled', 'disabled', 'noTraversal', 'cost', 'roleAttributes', 'isVerified', 'fingerprint', 'name', 'online', 'connected'],
  edgeRouterPolicies: ['semantic', 'identityRoles', 'edgeRouterRoles', 'name'],
  enrollments: ['token', 'edgeRouter', 'transitRouter', 'caId', 'identity'],
  externalJwtSigners: [
    'name', 'commonName', 'claimsProperty', 'audience', 'clientId', 'scopes', 'enrollToCertEnabled', 'enrollToTokenEnabled',
    'enrollAttributeClaimsSelector', 'enrollAuthPolicyId', 'fingerprint', 'kid', 'notAfter', 'useExternalId', 'enrollNameClaimsSelector',
    'issuer', 'certPem', 'notBefore', 'enabled', 'targetToken',
  ],
  identityTypes: ['name'],
  postureChecks: ['name', 'promptOnWake', 'roleAttributes', 'promptOnUnlock', 'typeId'],
  postureCheckTypes: ['name'],
  routers: ['name', 'noTraversal', 'fingerprint', 'disabled', 'cost'],
  services: ['roleAttributes', 'configs', 'terminatorStrategy', 'name'],
  servicePolicies: ['identityRoles', 'postureCheckRoles', 'identities', 'services', 'name', 'semantic', 'serviceRoles', 'type'],
  serviceEdgeRouterPolicies: ['name', 'edgeRouterRoles', 'semantic', 'serviceRoles'],
  sessions: ['token', 'service', 'apiSession', 'type'],
  terminators: ['instanceId', 'hostId', 'sourceCtrl', 'service', 'binding', 'address', 'router', 'service.name', 'router.name'],
  controllers: ['name', 'ctrlAddress', 'lastJoinedAt', 'certPem', 'fingerprint', 'isOnline', 'isPreferredLeader'],
};

const BASE = ['id', 'createdAt', 'updatedAt', 'tags', 'isSystem'];

/** Every list of both APIs that advertises fields, sub-lists included, with the list type it shows. */
const MANAGEMENT_LISTS: Record<string, keyof typeof UPSTREAM> = {
  '/identities': 'identities',
  '/identities/{identity}/authenticators': 'authenticators',
  '/identities/{identity}/edge-router-policies': 'edgeRouterPolicies',
  '/identities/{identity}/edge-routers': 'edgeRouters',
  '/identities/{identity}/enrollments': 'enrollments',
  '/identities/{identity}/service-policies': 'servicePolicies',
  '/identities/{identity}/services': 'services',
  '/identity-types': 'identityTypes',
  '/authenticators': 'authenticators',
  '/current-identity/authenticators': 'authenticators',
  '/api-sessions': 'apiSessions',
  '/auth-policies': 'authPolicies',
  '/cas': 'cas',
  '/configs': 'configs',
  '/configs/{config}/services': 'services',
  '/config-types': 'configTypes',
  '/config-types/{configType}/configs': 'configs',
  '/controllers': 'controllers',
  '/edge-routers': 'edgeRouters',
  '/edge-routers/{edgeRouter}/edge-router-policies': 'edgeRouterPolicies',
  '/edge-routers/{edgeRouter}/identities': 'identities',
  '/edge-routers/{edgeRouter}/service-edge-router-policies': 'serviceEdgeRouterPolicies',
  '/edge-routers/{edgeRouter}/services': 'services',
  '/edge-router-policies': 'edgeRouterPolicies',
  '/edge-router-policies/{edgeRouterPolicy}/edge-routers': 'edgeRouters',
  '/edge-router-policies/{edgeRouterPolicy}/identities': 'identities',
  '/enrollments': 'enrollments',
  '/external-jwt-signers': 'externalJwtSigners',
  '/posture-checks': 'postureChecks',
  '/posture-check-types': 'postureCheckTypes',
  '/routers': 'routers',
  '/transit-routers': 'routers',
  '/services': 'services',
  '/services/{service}/configs': 'configs',
  '/services/{service}/edge-routers': 'edgeRouters',
  '/services/{service}/identities': 'identities',
  '/services/{service}/service-edge-router-policies': 'serviceEdgeRouterPolicies',
  '/services/{service}/service-policies': 'servicePolicies',
  '/services/{service}/terminators': 'terminators',
  '/service-policies': 'servicePolicies',
  '/service-policies/{servicePolicy}/identities': 'identities',
  '/service-policies/{servicePolicy}/posture-checks': 'postureChecks',
  '/service-policies/{servicePolicy}/services': 'services',
  '/service-edge-router-policies': 'serviceEdgeRouterPolicies',
  '/service-edge-router-policies/{serviceEdgeRouterPolicy}/edge-routers': 'edgeRouters',
  '/service-edge-router-policies/{serviceEdgeRouterPolicy}/services': 'services',
  '/sessions': 'sessions',
  '/terminators': 'terminators',
};

const CLIENT_LISTS: Record<string, keyof typeof UPSTREAM> = {
  '/controllers': 'controllers',
  '/current-api-session/certificates': 'apiSessionCertificates',
  '/current-identity/authenticators': 'authenticators',
  '/current-identity/edge-routers': 'edgeRouters',
  '/external-jwt-signers': 'externalJwtSigners',
  '/services': 'services',
  '/services/{service}/terminators': 'terminators',
  '/sessions': 'sessions',
};

const SECRETS = ['updbPassword', 'updbSalt', 'password', 'passwordHash'];

/** A filter on the field that type-checks whatever its type: a null test for scalars and map keys, isEmpty for sets. */
async function filterWorks(client: HttpClient, path: string, field: string): Promise<string | undefined> {
  for (const filter of [`${field} = null`, `isEmpty(${field})`, `${field}.x = null`]) {
    const res = await client.get(`${path}?filter=${encodeURIComponent(filter)}`);
    if (res.status === 200) return undefined;
  }
  return `${path}: a filter on ${field} is refused`;
}

/** One record of each parent type, linked so that every sub-list has something to list. */
async function parents(): Promise<Record<string, string>> {
  const attr = uniqueName('ff').replace(/-/g, '');
  const identity = await createIdentity(tc.mgmt, { roleAttributes: [attr] });
  const configType = await createRecord(tc.mgmt, '/config-types', { name: uniqueName('ct') });
  const config = await createRecord(tc.mgmt, '/configs', { name: uniqueName('cfg'), configTypeId: configType, data: {} });
  const service = await createRecord(tc.mgmt, '/services', { name: uniqueName('svc'), encryptionRequired: true, configs: [config], roleAttributes: [attr] });
  const edgeRouter = await createRecord(tc.mgmt, '/edge-routers', { name: uniqueName('er'), roleAttributes: [attr] });
  const servicePolicy = await createRecord(tc.mgmt, '/service-policies', {
    name: uniqueName('sp'), type: 'Dial', semantic: 'AnyOf', identityRoles: [`#${attr}`], serviceRoles: [`#${attr}`], postureCheckRoles: [`#${attr}`],
  });
  const edgeRouterPolicy = await createRecord(tc.mgmt, '/edge-router-policies', {
    name: uniqueName('erp'), semantic: 'AnyOf', identityRoles: [`#${attr}`], edgeRouterRoles: [`#${attr}`],
  });
  const serviceEdgeRouterPolicy = await createRecord(tc.mgmt, '/service-edge-router-policies', {
    name: uniqueName('serp'), semantic: 'AnyOf', serviceRoles: [`#${attr}`], edgeRouterRoles: [`#${attr}`],
  });
  return { identity, configType, config, service, edgeRouter, servicePolicy, edgeRouterPolicy, serviceEdgeRouterPolicy };
}

describe('filterable fields as upstream declares them', () => {
  it('lists exactly upstream\'s fields on every list of both APIs, and each works in a filter', async () => {
    const ids = await parents();
    const problems: string[] = [];
    const lists = [
      ...Object.entries(MANAGEMENT_LISTS).map(([path, type]) => ({ client: tc.mgmt, path, type })),
      ...Object.entries(CLIENT_LISTS).map(([path, type]) => ({ client: tc.client, path, type })),
    ];
    for (const { client, path: template, type } of lists) {
      const path = template.replace(/\{(\w+)\}/g, (_, parent: string) => ids[parent]!);
      const res = await client.get(`${path}?limit=1`);
      assert.equal(res.status, 200, `${path}: ${res.text}`);
      const listed: string[] = res.body.meta.filterableFields;
      const expected = [...BASE, ...UPSTREAM[type]!];
      assert.deepEqual([...listed].sort(), [...expected].sort(), `${template}`);
      for (const field of listed) {
        const refused = await filterWorks(client, path, field);
        if (refused) problems.push(refused);
      }
      for (const secret of SECRETS) if (listed.includes(secret)) problems.push(`${path}: the secret ${secret} is listed`);
    }
    assert.deepEqual(problems, []);
  });

  it('still filters on the fields it accepts beyond the advertised ones', async () => {
    const unlisted: Record<string, string[]> = {
      '/identities': ['authPolicy', 'defaultHostingCost', 'defaultHostingPrecedence', 'disabledAt', 'disabledUntil'],
      '/authenticators': ['identityId', 'username', 'fingerprint'],
      '/cas': ['identityNameFormat'],
      '/configs': ['configTypeId'],
      '/enrollments': ['method', 'identityId', 'username', 'expiresAt', 'edgeRouterId', 'transitRouterId'],
      '/external-jwt-signers': ['externalAuthUrl'],
      '/posture-checks': ['version'],
      '/routers': ['isVerified'],
      '/services': ['encryptionRequired', 'maxIdleTimeMillis'],
      '/sessions': ['identity'],
    };
    const problems: string[] = [];
    for (const [path, fields] of Object.entries(unlisted)) {
      for (const field of fields) {
        const refused = await filterWorks(tc.mgmt, path, field);
        if (refused) problems.push(refused);
      }
    }
    const certificates = await tc.client.get(`/current-api-session/certificates?filter=${encodeURIComponent('validBefore > datetime(2000-01-01T00:00:00Z)')}`);
    assert.equal(certificates.status, 200, certificates.text);
    const configs = await tc.mgmt.get(`/configs?filter=${encodeURIComponent('data.x = 1')}`);
    assert.equal(configs.status, 200, configs.text);
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
    const controllerId = (await tc.mgmt.get('/version')).headers['ziti-instance-id'] as string;
    const service = await createRecord(tc.mgmt, '/services', { name: uniqueName('svc'), encryptionRequired: true });
    const router = await createRecord(tc.mgmt, '/transit-routers', { name: uniqueName('tr') });
    const terminator = await createRecord(tc.mgmt, '/terminators', { service, router, binding: 'transport', address: 'tcp:127.0.0.1:1' });
    const found = await tc.mgmt.get(`/terminators?filter=${encodeURIComponent(`sourceCtrl = "${controllerId}" and id = "${terminator}"`)}`);
    assert.deepEqual(found.body.data.map((t: { id: string }) => t.id), [terminator]);
    const controllers = await tc.mgmt.get(`/controllers?filter=${encodeURIComponent('isPreferredLeader = false')}`);
    assert.equal(controllers.status, 200);
    assert.equal(controllers.body.meta.pagination.totalCount, testStore() === 'postgres' ? 1 : 0);
  });
});
