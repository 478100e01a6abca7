/**
 * Coverage of the reference specs: every operation of the client and management specs must be served.
 * Each is probed with an admin session, placeholder ids and bodies that satisfy the declared schema; it
 * fails when the answer is the router's own 404 for an unknown path (cause message starting with "path "),
 * 405 (known path, other method) or 501, and when the operation fails with a server error (500 or any other
 * 5xx). A NOT_FOUND for the placeholder id, a validation error or any other answer shows the operation exists.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, type TestController } from '../support/controller.ts';
import { createUserWithPassword } from '../support/factories.ts';
import type { HttpClient, HttpResponse } from '../support/client.ts';
import { basePath, operationProbes, type OperationProbe } from '../support/operation-probes.ts';
import type { ApiName } from '../support/reference-spec.ts';

const tc: TestController = await startTestController();

function isMissing(res: HttpResponse): boolean {
  if (res.status === 405 || res.status === 501) return true;
  return res.status === 404 && String(res.body?.error?.cause?.message ?? '').startsWith('path ');
}

async function probe(client: HttpClient, p: OperationProbe): Promise<HttpResponse> {
  return client.request(p.method, basePath(p.api) + p.url, {
    headers: p.headers,
    ...(p.rawBody !== undefined ? { rawBody: p.rawBody, contentType: p.contentType } : p.body !== undefined ? { body: p.body } : {}),
  });
}

/** A server error: the operation exists but broke on the probe. */
function isServerError(res: HttpResponse): boolean {
  return res.status >= 500 && res.status !== 501;
}

/** Operations that are not served or that answer with a server error, each with its status. */
async function failingOperations(api: ApiName): Promise<string[]> {
  // A fresh admin session per API: logging out (probed last) ends it.
  const admin = await createUserWithPassword(tc, { isAdmin: true });
  const client = tc.http.as({ token: admin.token });
  const probes = operationProbes(api);
  const isLogout = (p: OperationProbe) => p.method === 'DELETE' && p.path === '/current-api-session';
  const ordered = [...probes.filter((p) => !isLogout(p)), ...probes.filter(isLogout)];
  const failing: string[] = [];
  for (const p of ordered) {
    const res = await probe(client, p);
    if (isMissing(res)) failing.push(`${p.method} ${p.path} (${p.operationId}) → ${res.status}: not served`);
    else if (isServerError(res)) failing.push(`${p.method} ${p.path} (${p.operationId}) → ${res.status}: ${res.text.slice(0, 200)}`);
  }
  return failing;
}

describe('every operation of the reference specs is served without a server error', () => {
  for (const api of ['client', 'management'] as const) {
    it(`${api} API`, async () => {
      const probes = operationProbes(api);
      assert.ok(probes.length >= (api === 'client' ? 59 : 196), `${api}: only ${probes.length} operations in the spec`);
      assert.deepEqual(await failingOperations(api), []);
    });
  }

  it('tells an unknown path from an unknown id', async () => {
    const unknownPath = await tc.mgmt.get('/no-such-collection');
    assert.equal(isMissing(unknownPath), true, unknownPath.text);
    const unknownId = await tc.mgmt.get('/identities/no-such-id');
    assert.equal(unknownId.status, 404);
    assert.equal(isMissing(unknownId), false, unknownId.text);
  });

  it('counts a 500 as a failure, and a 4xx answer as served', () => {
    const answer = (status: number) => ({ status, headers: {}, text: '', body: {} });
    assert.equal(isServerError(answer(500)), true);
    assert.equal(isServerError(answer(503)), true);
    assert.equal(isServerError(answer(501)), false, '501 is reported as not served');
    assert.equal(isServerError(answer(400)) || isMissing(answer(400)), false);
    assert.equal(isServerError(answer(404)) || isMissing(answer(404)), false);
  });
});
