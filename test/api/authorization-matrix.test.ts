/**
 * Authorization matrix over EVERY operation of both reference specs: each is called with no session, with a
 * partial session (MFA pending), as a plain non-admin, as `admin_readonly`, with each fine-grained permission
 * value on its own, and as an admin, using placeholder ids and bodies that satisfy the declared schema (so a
 * refusal is not hidden behind a validation error). The expected answer of each call comes from upstream's
 * route declarations (`test/support/upstream-access.ts`), never from the project's own: refusals must be
 * upstream's 401 UNAUTHORIZED error (with the "missing" challenge when no session was sent); allowed calls may
 * answer anything but 401/403 (a 404 for the placeholder id counts as allowed).
 *
 * The matrix's escalation section, what a permission value can do to identities with more rights than its
 * holder once an operation let it through, is `authorization-escalation.test.ts`.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Secret, TOTP } from 'otpauth';
import { startTestController, type TestController } from '../support/controller.ts';
import { createUserWithPassword } from '../support/factories.ts';
import { createClient, type HttpClient, type HttpResponse } from '../support/client.ts';
import { basePath, operationProbes, type OperationProbe } from '../support/operation-probes.ts';
import { expectedAllowed, PERMISSION_VALUES, upstreamAccess, type AccessProfile } from '../support/upstream-access.ts';
import type { ApiName } from '../support/reference-spec.ts';

const tc: TestController = await startTestController();

/**
 * Operations that authenticate by the client certificate presented over mutual TLS: without one they answer
 * 401, which is not a permission refusal (the pattern must match the cause when there is one; upstream gives none
 * for either).
 */
const NEEDS_CLIENT_CERTIFICATE = new Map<string, RegExp | undefined>([
  ['POST /current-identity/authenticators/{id}/extend', undefined],
  ['POST /enroll/extend/router', undefined],
]);

/**
 * Refusals upstream makes in the handler, after the route's rule let a non-admin through: the cause says why.
 * (The other handler checks on identities depend on the record or body and have tests of their own.)
 */
const NON_ADMIN_HANDLER_REFUSALS = new Map([['PUT /identities/{id}', /non-admins may not use the PUT method/]]);

type Profile = AccessProfile;

const key = (p: OperationProbe) => `${p.method} ${p.path}`;
const isLogout = (p: OperationProbe) => key(p) === 'DELETE /current-api-session';

const probes: OperationProbe[] = (['client', 'management'] as ApiName[]).flatMap((api) => operationProbes(api));
// Logging out ends the caller's session, so it goes last.
probes.sort((a, b) => Number(isLogout(a)) - Number(isLogout(b)));
const ruleOf = (p: OperationProbe) => upstreamAccess[p.api][key(p)];

async function call(client: HttpClient, p: OperationProbe): Promise<HttpResponse> {
  return client.request(p.method, basePath(p.api) + p.url, {
    headers: p.headers,
    ...(p.rawBody !== undefined ? { rawBody: p.rawBody, contentType: p.contentType } : p.body !== undefined ? { body: p.body } : {}),
  });
}

function isPermissionRefusal(res: HttpResponse): boolean {
  return res.status === 401 && res.body?.error?.code === 'UNAUTHORIZED';
}

function isAllowed(p: OperationProbe, res: HttpResponse): boolean {
  if (res.status === 403) return false;
  if (res.status !== 401) return true;
  if (!NEEDS_CLIENT_CERTIFICATE.has(key(p))) return false;
  const cause = NEEDS_CLIENT_CERTIFICATE.get(key(p));
  return cause === undefined || cause.test(String(res.body?.error?.cause?.message));
}

/**
 * Calls the selected operations as `who` (in parallel batches) and returns every mismatch with the expected
 * answer, so one run shows the whole matrix's failures. Each logout gets a session of its own.
 */
async function mismatches(session: () => Promise<HttpClient>, who: Profile | undefined, select: (p: OperationProbe) => boolean = () => true): Promise<string[]> {
  const chosen = probes.filter(select);
  const client = await session();
  const problems: string[] = [];
  const check = (p: OperationProbe, res: HttpResponse) => {
    const allowed = expectedAllowed(ruleOf(p), who);
    const at = `${p.api} ${key(p)} [${ruleOf(p)}]`;
    const handlerRefusal = p.api === 'management' && who && !who.admin ? NON_ADMIN_HANDLER_REFUSALS.get(key(p)) : undefined;
    if (allowed && handlerRefusal) {
      if (!isPermissionRefusal(res) || !handlerRefusal.test(String(res.body?.error?.cause?.message))) problems.push(`${at} should be refused by the handler (${handlerRefusal}), got ${res.status} ${res.text.slice(0, 160)}`);
      return;
    }
    if (allowed && !isAllowed(p, res)) problems.push(`${at} should be allowed, got ${res.status} ${res.text.slice(0, 160)}`);
    if (!allowed) {
      if (!isPermissionRefusal(res)) problems.push(`${at} should be refused with 401 UNAUTHORIZED, got ${res.status} ${res.text.slice(0, 160)}`);
      else if (res.body?.meta?.apiVersion !== '0.0.1') problems.push(`${at} refusal lacks the error meta`);
    }
  };
  const last = chosen.filter(isLogout);
  const rest = chosen.filter((p) => !isLogout(p));
  for (let i = 0; i < rest.length; i += 16) {
    const batch = rest.slice(i, i + 16);
    const results = await Promise.all(batch.map((p) => call(client, p)));
    batch.forEach((p, j) => check(p, results[j]));
  }
  for (const p of last) check(p, await call(await session(), p));
  return problems;
}

async function sessionOf(who: Profile): Promise<HttpClient> {
  const user = await createUserWithPassword(tc, { permissions: who.permissions, isAdmin: who.admin === true });
  if (!who.partial) return tc.http.as({ token: user.token });
  // Enroll and verify TOTP MFA, then log in again: the new session is partial until the code is sent.
  const full = tc.http.as({ token: user.token });
  assert.equal((await full.post('/edge/client/v1/current-identity/mfa')).status, 201);
  const detail = await full.get('/edge/client/v1/current-identity/mfa');
  const secret = new URL(detail.body.data.provisioningUrl).searchParams.get('secret') as string;
  const code = new TOTP({ secret: Secret.fromBase32(secret) }).generate();
  assert.equal((await full.post('/edge/client/v1/current-identity/mfa/verify', { code })).status, 200);
  const login = await tc.http.post('/edge/client/v1/authenticate?method=password', { username: user.username, password: user.password });
  assert.equal(login.status, 200, login.text);
  assert.ok(Array.isArray(login.body.data.authQueries) && login.body.data.authQueries.length > 0, 'the session is partial');
  return tc.http.as({ token: login.body.data.token as string });
}

describe('authorization matrix over every operation of both APIs', () => {
  it('has upstream\'s rule for every operation of the reference specs', () => {
    assert.ok(probes.length >= 255, `only ${probes.length} operations`);
    const unknown = probes.filter((p) => ruleOf(p) === undefined).map((p) => `${p.api} ${key(p)}`);
    assert.deepEqual(unknown, []);
  });

  it('no session: 401 UNAUTHORIZED with the "missing" challenge, except for public operations', async () => {
    const client = createClient(tc.http.baseUrl, tc.ca);
    const problems = await mismatches(async () => client, undefined);
    for (const p of probes.filter((q) => ruleOf(q) !== 'public' && q.path !== '/authenticate/mfa')) {
      const res = await call(client, p);
      if (isPermissionRefusal(res) && !/error="missing"/.test(String(res.headers['www-authenticate']))) {
        problems.push(`${p.api} ${key(p)} refusal lacks the "missing" challenge`);
      }
    }
    assert.deepEqual(problems, []);
  });

  const profiles: Profile[] = [
    { name: 'a partial session (MFA pending)', partial: true, permissions: [] },
    { name: 'a partial session of an admin', partial: true, admin: true, permissions: [] },
    { name: 'a non-admin without permissions', permissions: [] },
    { name: 'admin_readonly', permissions: ['admin_readonly'] },
    { name: 'an admin', admin: true, permissions: [] },
  ];
  for (const who of profiles) {
    it(`${who.name}: exactly upstream's answers`, async () => {
      assert.deepEqual(await mismatches(() => sessionOf(who), who, (p) => ruleOf(p) !== 'public'), []);
    });
  }

  it('each fine-grained permission value alone opens exactly its own operations', async () => {
    const problems: string[] = [];
    for (const value of PERMISSION_VALUES) {
      const who: Profile = { name: value, permissions: [value] };
      // Every operation that is not open to any session: a value must not open one of another resource.
      const found = await mismatches(() => sessionOf(who), who, (p) => !['public', 'partial', 'session'].includes(ruleOf(p)) && !isLogout(p));
      problems.push(...found.map((f) => `with "${value}": ${f}`));
    }
    assert.deepEqual(problems, []);
  });

  it('permission values combine: a sub-list needs read access to the listed type', async () => {
    const who: Profile = { name: 'policy readers', permissions: ['service-policy.read', 'edge-router-policy.read', 'service-edge-router-policy.read', 'config.read'] };
    const subLists = (p: OperationProbe) => p.method === 'GET' && /\/\{id\}\/[a-z-]+$/.test(p.path) && ruleOf(p) !== 'session';
    assert.deepEqual(await mismatches(() => sessionOf(who), who, subLists), []);
  });
});
