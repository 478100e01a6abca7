/**
 * Authorization matrix over EVERY management operation of the reference spec: each is called with no
 * session, as a non-admin without permissions, as `admin_readonly`, with single scoped permissions and as
 * an admin, using placeholder ids and bodies that satisfy the declared schema (so a refusal is not hidden
 * behind a validation error). Refusals must be upstream's 401 UNAUTHORIZED error (with the "missing"
 * challenge when no session was sent); allowed calls may answer anything but 401/403 (a 404 for the
 * placeholder id counts as allowed).
 *
 * Which operations any authenticated caller may use follows the management seed §4 rule 2 (posture checks
 * and their types, config type delete, list controllers, the listed identity and edge router sub-lists,
 * terminators of a service) plus §4.2 (summary: Session, not admin), and the caller's own session and
 * identity operations. Everything else needs admin, `admin_readonly` for reads, or a matching permission.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, type TestController } from '../support/controller.ts';
import { createUserWithPassword } from '../support/factories.ts';
import { createClient, type HttpClient, type HttpResponse } from '../support/client.ts';
import { basePath, operationProbes, type OperationProbe } from '../support/operation-probes.ts';

const tc: TestController = await startTestController();
const BASE = basePath('management');

/** Operations of the caller's own session and identity: any session may use them. */
const SELF = /^\/(current-identity|current-api-session|authenticate)(\/|$)/;

/** Seeds management §4 rule 2 and §4.2: authenticated, but no admin or permission needed. */
const OPEN_TO_ANY_SESSION = new Set([
  'GET /posture-checks',
  'POST /posture-checks',
  'GET /posture-checks/{id}',
  'PUT /posture-checks/{id}',
  'PATCH /posture-checks/{id}',
  'DELETE /posture-checks/{id}',
  'GET /posture-check-types',
  'GET /posture-check-types/{id}',
  'DELETE /config-types/{id}',
  'GET /controllers',
  'GET /identities/{id}/authenticators',
  'GET /identities/{id}/enrollments',
  'GET /identities/{id}/failed-service-requests',
  'GET /identities/{id}/edge-router-policies',
  'GET /identities/{id}/service-policies',
  'GET /edge-routers/{id}/edge-router-policies',
  'GET /edge-routers/{id}/service-edge-router-policies',
  'GET /services/{id}/terminators',
  'GET /summary',
]);

/** Operations that need the caller's client certificate over mutual TLS: without one they answer 401 with a cause. */
const NEEDS_CLIENT_CERTIFICATE = new Set(['POST /current-identity/authenticators/{id}/extend']);

/** Permission resource of each record group's plain CRUD paths (`/<group>` and `/<group>/{id}`). */
const RESOURCE_OF: Record<string, string> = {
  'auth-policies': 'auth-policy',
  cas: 'ca',
  configs: 'config',
  'config-types': 'config-type',
  'edge-router-policies': 'edge-router-policy',
  'edge-routers': 'router',
  'transit-routers': 'router',
  routers: 'router',
  enrollments: 'enrollment',
  'external-jwt-signers': 'external-jwt-signer',
  identities: 'identity',
  'posture-checks': 'posture-check',
  'service-edge-router-policies': 'service-edge-router-policy',
  'service-policies': 'service-policy',
  services: 'service',
  terminators: 'terminator',
  'api-sessions': 'ops',
  sessions: 'ops',
};

const ACTION_OF: Record<string, string> = { GET: 'read', POST: 'create', PUT: 'update', PATCH: 'update', DELETE: 'delete' };

const key = (p: OperationProbe) => `${p.method} ${p.path}`;
const isOpen = (p: OperationProbe) => p.isPublic || SELF.test(p.path) || OPEN_TO_ANY_SESSION.has(key(p));

/** `resource` and `action` of a plain CRUD operation, else undefined. */
function crudTarget(p: OperationProbe): { resource: string; action: string } | undefined {
  const m = /^\/([a-z-]+)(\/\{id\})?$/.exec(p.path);
  const resource = m ? RESOURCE_OF[m[1]] : undefined;
  return resource ? { resource, action: ACTION_OF[p.method] } : undefined;
}

const probes = operationProbes('management');
// Logging out ends the caller's session, so it goes last.
probes.sort((a, b) => Number(key(a) === 'DELETE /current-api-session') - Number(key(b) === 'DELETE /current-api-session'));

async function call(client: HttpClient, p: OperationProbe): Promise<HttpResponse> {
  return client.request(p.method, p.url, {
    headers: p.headers,
    ...(p.rawBody !== undefined ? { rawBody: p.rawBody, contentType: p.contentType } : p.body !== undefined ? { body: p.body } : {}),
  });
}

/** Calls every probe (in parallel batches; logout last) and returns the answers by operation. */
async function callAll(client: HttpClient): Promise<Map<string, HttpResponse>> {
  const answers = new Map<string, HttpResponse>();
  const last = probes.filter((p) => key(p) === 'DELETE /current-api-session');
  const rest = probes.filter((p) => !last.includes(p));
  for (let i = 0; i < rest.length; i += 16) {
    const batch = rest.slice(i, i + 16);
    const results = await Promise.all(batch.map((p) => call(client, p)));
    batch.forEach((p, j) => answers.set(key(p), results[j]));
  }
  for (const p of last) answers.set(key(p), await call(client, p));
  return answers;
}

function describeAnswer(res: HttpResponse): string {
  return `${res.status} ${res.text.slice(0, 200)}`;
}

function isPermissionRefusal(res: HttpResponse): boolean {
  return res.status === 401 && res.body?.error?.code === 'UNAUTHORIZED';
}

function isAllowed(p: OperationProbe, res: HttpResponse): boolean {
  if (res.status === 403) return false;
  if (res.status !== 401) return true;
  // Needing a client certificate is not a permission refusal.
  return NEEDS_CLIENT_CERTIFICATE.has(key(p)) && /certificate/i.test(String(res.body?.error?.cause?.message));
}

/** Collects every mismatch so one run shows the whole matrix's failures. */
function check(
  answers: Map<string, HttpResponse>,
  expectAllowed: (p: OperationProbe) => boolean | undefined,
): string[] {
  const problems: string[] = [];
  for (const p of probes) {
    const res = answers.get(key(p))!;
    const allowed = expectAllowed(p);
    if (allowed === undefined) continue;
    if (allowed && !isAllowed(p, res)) problems.push(`${key(p)} should be allowed, got ${describeAnswer(res)}`);
    if (!allowed) {
      if (!isPermissionRefusal(res)) problems.push(`${key(p)} should be refused with 401 UNAUTHORIZED, got ${describeAnswer(res)}`);
      else if (res.body?.meta?.apiVersion !== '0.0.1') problems.push(`${key(p)} refusal lacks the error meta`);
    }
  }
  return problems;
}

async function sessionWith(permissions: string[], isAdmin = false): Promise<HttpClient> {
  const user = await createUserWithPassword(tc, { permissions, isAdmin });
  return tc.mgmt.as({ token: user.token });
}

describe('authorization matrix over every management operation', () => {
  it('covers the whole reference spec', () => {
    assert.ok(probes.length >= 190, `only ${probes.length} operations`);
  });

  it('no session: 401 UNAUTHORIZED with the "missing" challenge, except for public operations', async () => {
    const answers = await callAll(createClient(tc.http.baseUrl + BASE, tc.ca));
    const problems = check(answers, (p) => p.isPublic);
    for (const p of probes) {
      const res = answers.get(key(p))!;
      if (p.isPublic || p.path === '/authenticate/mfa') continue;
      if (isPermissionRefusal(res) && !/error="missing"/.test(String(res.headers['www-authenticate']))) {
        problems.push(`${key(p)} refusal lacks the "missing" challenge`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('a non-admin without permissions may use only the open and self operations', async () => {
    const answers = await callAll(await sessionWith([]));
    assert.deepEqual(check(answers, isOpen), []);
  });

  it('admin_readonly may read everything and change nothing that needs admin', async () => {
    const answers = await callAll(await sessionWith(['admin_readonly']));
    assert.deepEqual(check(answers, (p) => isOpen(p) || p.method === 'GET'), []);
  });

  for (const permission of ['service.read', 'service', 'ops.read', 'identity', 'edge-router-policy.delete', 'terminator.create', 'config-type.update']) {
    it(`a session with only "${permission}" may use exactly that part of the CRUD operations`, async () => {
      const [resource, action] = permission.split('.');
      const answers = await callAll(await sessionWith([permission]));
      const problems = check(answers, (p) => {
        if (isOpen(p)) return true;
        const target = crudTarget(p);
        // Operations outside the plain CRUD groups are checked by the admin/no-permission cases.
        if (!target) return undefined;
        return target.resource === resource && (action === undefined || target.action === action);
      });
      assert.deepEqual(problems, []);
    });
  }

  it('an admin is never refused', async () => {
    const answers = await callAll(await sessionWith([], true));
    assert.deepEqual(check(answers, () => true), []);
  });
});
