/**
 * The fabric API as a whole: who may call each served operation (upstream's rules, kept here as test data:
 * routers, services and terminators for admins only — `permissions.IsAdmin()` in upstream's fabric_*_router.go
 * — links and circuits for admins, `admin_readonly`, `ops` and `ops.read` — `permissions.DefaultOpsAccess()`
 * with the ops read context in link_router.go and circuit_router.go; the link patch for admins, `ops` and
 * `ops.update`, the ops update context), the answers to operations it does not serve (upstream's other writes,
 * inspections, database and cluster operations: 404/405 in the error envelope), and
 * how the API is advertised: `/version`, the controller record, the spec list and its own OpenAPI document.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Secret, TOTP } from 'otpauth';
import { startTestController, testStore, type TestController } from '../../support/controller.ts';
import { createClient, type HttpClient, type HttpResponse } from '../../support/client.ts';
import { createUserWithPassword } from '../../support/factories.ts';
import { assertError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();
const base = `https://127.0.0.1:${tc.port}/fabric/v1`;

type Rule = 'admin' | 'ops.read' | 'ops.update';

/** Every operation served, with upstream's rule (GET unless named). */
const OPERATIONS: Array<[string, Rule, string?]> = [
  ['/routers', 'admin'],
  ['/routers/x', 'admin'],
  ['/routers/x/terminators', 'admin'],
  ['/services', 'admin'],
  ['/services/x', 'admin'],
  ['/services/x/terminators', 'admin'],
  ['/terminators', 'admin'],
  ['/terminators/x', 'admin'],
  ['/links', 'ops.read'],
  ['/links/x', 'ops.read'],
  ['/links/x', 'ops.update', 'PATCH'],
  ['/circuits', 'ops.read'],
  ['/circuits/x', 'ops.read'],
];

interface Profile {
  name: string;
  admin?: boolean;
  partial?: boolean;
  permissions: string[];
}

function allowed(rule: Rule, who: Profile): boolean {
  if (who.partial) return false;
  if (who.admin) return true;
  if (rule === 'admin') return false;
  if (rule === 'ops.update') return who.permissions.some((p) => ['ops', 'ops.update'].includes(p));
  return who.permissions.some((p) => ['admin_readonly', 'ops', 'ops.read'].includes(p));
}

async function sessionOf(who: Profile): Promise<HttpClient> {
  const user = await createUserWithPassword(tc, { permissions: who.permissions, isAdmin: who.admin === true });
  if (!who.partial) return createClient(base, tc.ca, { token: user.token });
  // Enroll and verify TOTP MFA, then log in again: the new session is partial until the code is sent.
  const full = tc.http.as({ token: user.token });
  assert.equal((await full.post('/edge/client/v1/current-identity/mfa')).status, 201);
  const detail = await full.get('/edge/client/v1/current-identity/mfa');
  const secret = new URL(detail.body.data.provisioningUrl).searchParams.get('secret') as string;
  const code = new TOTP({ secret: Secret.fromBase32(secret) }).generate();
  assert.equal((await full.post('/edge/client/v1/current-identity/mfa/verify', { code })).status, 200);
  const login = await tc.http.post('/edge/client/v1/authenticate?method=password', { username: user.username, password: user.password });
  assert.equal(login.status, 200, login.text);
  assert.ok(login.body.data.authQueries?.length > 0, 'the session is partial');
  return createClient(base, tc.ca, { token: login.body.data.token as string });
}

function isRefusal(res: HttpResponse): boolean {
  return res.status === 401 && res.body?.error?.code === 'UNAUTHORIZED' && res.body?.meta?.apiVersion === '0.0.1';
}

describe('who may call the fabric API', () => {
  it('refuses every operation without a session: 401 UNAUTHORIZED with the "missing" challenge', async () => {
    const anonymous = createClient(base, tc.ca);
    for (const [path, , method = 'GET'] of OPERATIONS) {
      const res = await anonymous.request(method, path, method === 'GET' ? {} : { body: {} });
      assert.ok(isRefusal(res), `${path}: ${res.status} ${res.text}`);
      assert.match(String(res.headers['www-authenticate']), /error="missing"/, path);
    }
    assertError(await createClient(base, tc.ca, { token: 'not-a-session' }).get('/routers'), 401, 'UNAUTHORIZED');
  });

  const profiles: Profile[] = [
    { name: 'an admin', admin: true, permissions: [] },
    { name: 'a non-admin without permissions', permissions: [] },
    { name: 'admin_readonly', permissions: ['admin_readonly'] },
    { name: 'ops', permissions: ['ops'] },
    { name: 'ops.read', permissions: ['ops.read'] },
    { name: 'ops.update', permissions: ['ops.update'] },
    { name: 'ops.delete', permissions: ['ops.delete'] },
    { name: 'router, service and terminator', permissions: ['router', 'service', 'terminator'] },
    { name: 'router.read, service.read and terminator.read', permissions: ['router.read', 'service.read', 'terminator.read'] },
    { name: 'a partial session of an admin (MFA pending)', admin: true, partial: true, permissions: [] },
  ];
  for (const who of profiles) {
    it(`${who.name}: exactly upstream's answers`, async () => {
      const client = await sessionOf(who);
      const problems: string[] = [];
      for (const [path, rule, method = 'GET'] of OPERATIONS) {
        const res = await client.request(method, path, method === 'GET' ? {} : { body: {} });
        const expected = allowed(rule, who);
        if (expected && (res.status === 401 || res.status === 403)) problems.push(`${path} [${rule}] should be allowed, got ${res.status}`);
        if (!expected && !isRefusal(res)) problems.push(`${path} [${rule}] should be refused with 401, got ${res.status} ${res.text.slice(0, 120)}`);
      }
      assert.deepEqual(problems, []);
    });
  }
});

describe('operations the fabric API does not serve', () => {
  const admin = () => createClient(base, tc.ca, { token: tc.adminToken });

  it('answers writes on served paths with 405 METHOD_NOT_ALLOWED', async () => {
    const calls: Array<[string, string]> = [
      ['POST', '/routers'], ['PUT', '/routers/x'], ['PATCH', '/routers/x'], ['DELETE', '/routers/x'],
      ['POST', '/services'], ['PUT', '/services/x'], ['PATCH', '/services/x'], ['DELETE', '/services/x'],
      ['POST', '/terminators'], ['PUT', '/terminators/x'], ['PATCH', '/terminators/x'], ['DELETE', '/terminators/x'],
      ['DELETE', '/links/x'], ['DELETE', '/circuits/x'],
    ];
    for (const [method, path] of calls) {
      const res = await admin().request(method, path, { body: {} });
      assertError(res, 405, 'METHOD_NOT_ALLOWED');
      const served = path === '/links/x' ? 'GET,PATCH' : 'GET';
      assert.equal(res.body.error.cause.message, `method ${method} is not allowed, but [${served}] are`, `${method} ${path}`);
    }
  });

  it('answers inspections, database and cluster operations and the bare base with 404 NOT_FOUND', async () => {
    const calls: Array<[string, string]> = [
      ['POST', '/inspections'], ['POST', '/database/snapshot'], ['POST', '/database/check-data-integrity'],
      ['POST', '/database/fix-data-integrity'], ['GET', '/database/data-integrity-results'], ['GET', '/cluster/list-members'],
      ['POST', '/cluster/add-member'], ['GET', '/'], ['GET', '/version'], ['GET', '/no-such-collection'],
    ];
    for (const [method, path] of calls) {
      const res = await admin().request(method, path, method === 'POST' ? { body: {} } : {});
      assertError(res, 404, 'NOT_FOUND');
      assert.match(res.body.error.cause.message, /^path \/fabric\/v1.* was not found$/, `${method} ${path}`);
    }
  });
});

describe('how the fabric API is advertised', () => {
  it('lists it in /version as upstream does: its path, and base URLs without the path', async () => {
    for (const path of ['/version', '/edge/management/v1/version', '/edge/client/v1/version']) {
      const res = await tc.http.get(path);
      assert.deepEqual(res.body.data.apiVersions.fabric, { v1: { apiBaseUrls: [`https://localhost:${tc.port}`], path: '/fabric/v1' } }, path);
    }
  });

  it('lists its address on the controller record', { skip: testStore() === 'sqlite' && 'SQLite lists no controller' }, async () => {
    const res = await tc.mgmt.get('/controllers');
    assert.deepEqual(res.body.data[0].apiAddresses.fabric, [{ url: `https://localhost:${tc.port}/fabric/v1`, version: 'v1' }]);
    const client = await tc.client.get('/controllers');
    assert.ok(!('fabric' in client.body.data[0].apiAddresses), 'the client API shows only client addresses');
  });

  it('serves its own OpenAPI document, generated from the routes it mounts', async () => {
    const specs = await tc.mgmt.get('/specs');
    assert.ok(specs.body.data.some((s: { id: string }) => s.id === 'fabric'));
    const json = await tc.http.get('/edge/management/v1/specs/fabric/spec', { headers: { accept: 'application/json' } });
    assert.equal(json.status, 200, json.text);
    assert.equal(json.body.basePath, '/fabric/v1');
    const operations = Object.entries(json.body.paths as Record<string, Record<string, { operationId: string }>>).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => `${method.toUpperCase()} ${path} ${op.operationId}`),
    );
    assert.deepEqual(operations.sort(), [
      'GET /circuits listCircuits', 'GET /circuits/{id} detailCircuit', 'GET /links listLinks', 'GET /links/{id} detailLink',
      'GET /routers listRouters', 'GET /routers/{id} detailRouter', 'GET /routers/{id}/terminators listRouterTerminators',
      'GET /services listServices', 'GET /services/{id} detailService', 'GET /services/{id}/terminators listServiceTerminators',
      'GET /terminators listTerminators', 'GET /terminators/{id} detailTerminator', 'PATCH /links/{id} patchLink',
    ]);
    // Also at the fabric root, without credentials (upstream serves an API document there too).
    const root = await tc.http.get('/fabric');
    assert.equal(root.status, 200, root.text);
    assert.match(String(root.headers['content-type']), /^application\/json/);
    assert.deepEqual(root.body, json.body);
    // The client API lists only its own document.
    assert.equal((await tc.http.get('/edge/client/v1/specs/fabric/spec')).status, 404);
  });
});
