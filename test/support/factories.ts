/**
 * Factories for test data with unique names, built through the public API like a real operator would.
 */
import assert from 'node:assert/strict';
import type { HttpClient } from './client.ts';
import { uniqueName, type TestController } from './controller.ts';

export async function createIdentity(mgmt: HttpClient, overrides: Record<string, unknown> = {}): Promise<string> {
  const res = await mgmt.post('/identities', { name: uniqueName('identity'), type: 'User', isAdmin: false, ...overrides });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

/** An identity with a password authenticator, logged in; returns its id, credentials and session token. */
export async function createUserWithPassword(
  tc: TestController,
  overrides: Record<string, unknown> = {},
): Promise<{ id: string; username: string; password: string; token: string }> {
  const id = await createIdentity(tc.mgmt, overrides);
  const username = uniqueName('user');
  const password = 'Secret-pass-123';
  const res = await tc.mgmt.post('/authenticators', { method: 'updb', identityId: id, username, password });
  assert.equal(res.status, 201, res.text);
  const token = await tc.login(username, password);
  return { id, username, password, token };
}
