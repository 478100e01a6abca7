/**
 * Coverage of the reference specs: every operation of the client and management specs must be served.
 * Each is probed with an admin session, placeholder ids and bodies that satisfy the declared schema; it
 * fails when the answer is the router's own 404 for an unknown path (cause message starting with "path "),
 * 405 (known path, other method) or 501. A NOT_FOUND for the placeholder id, a validation error or any
 * other answer shows the operation exists.
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

async function missingOperations(api: ApiName): Promise<string[]> {
  // A fresh admin session per API: logging out (probed last) ends it.
  const admin = await createUserWithPassword(tc, { isAdmin: true });
  const client = tc.http.as({ token: admin.token });
  const probes = operationProbes(api);
  const isLogout = (p: OperationProbe) => p.method === 'DELETE' && p.path === '/current-api-session';
  const ordered = [...probes.filter((p) => !isLogout(p)), ...probes.filter(isLogout)];
  const missing: string[] = [];
  for (const p of ordered) {
    const res = await probe(client, p);
    if (isMissing(res)) missing.push(`${p.method} ${p.path} (${p.operationId}) → ${res.status}`);
  }
  return missing;
}

describe('every operation of the reference specs is served', () => {
  for (const api of ['client', 'management'] as const) {
    it(`${api} API`, async () => {
      const probes = operationProbes(api);
      assert.ok(probes.length >= (api === 'client' ? 59 : 196), `${api}: only ${probes.length} operations in the spec`);
      assert.deepEqual(await missingOperations(api), []);
    });
  }

  it('tells an unknown path from an unknown id', async () => {
    const unknownPath = await tc.mgmt.get('/no-such-collection');
    assert.equal(isMissing(unknownPath), true, unknownPath.text);
    const unknownId = await tc.mgmt.get('/identities/no-such-id');
    assert.equal(unknownId.status, 404);
    assert.equal(isMissing(unknownId), false, unknownId.text);
  });
});
