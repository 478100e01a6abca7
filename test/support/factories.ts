/**
 * Factories for test data with unique names, built through the public API like a real operator would.
 */
import assert from 'node:assert/strict';
import { createClient, type HttpClient } from './client.ts';
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

/** Creates a record through the management API and returns its id (fails the test on anything but 201). */
export async function createRecord(mgmt: HttpClient, path: string, body: Record<string, unknown>): Promise<string> {
  const res = await mgmt.post(path, body);
  assert.equal(res.status, 201, `${path}: ${res.text}`);
  return res.body.data.id as string;
}

export interface ClientUser {
  id: string;
  /** Client API client carrying the user's own session token. */
  client: HttpClient;
  apiSessionId: string;
  /** The user's client API session token. */
  token: string;
}

/** A new identity with a password, logged in on the client API. */
export async function createClientUser(tc: TestController, overrides: Record<string, unknown> = {}): Promise<ClientUser> {
  const u = await createUserWithPassword(tc, overrides);
  const res = await tc.http.post('/edge/client/v1/authenticate?method=password', { username: u.username, password: u.password });
  assert.equal(res.status, 200, res.text);
  const token = res.body.data.token as string;
  return { id: u.id, client: createClient(`https://127.0.0.1:${tc.port}/edge/client/v1`, tc.ca, { token }), apiSessionId: res.body.data.id, token };
}

/** An auth policy allowing every primary method, with the secondary TOTP requirement and updb lockout given; returns its id. */
export async function createAuthPolicy(mgmt: HttpClient, opts: { requireTotp?: boolean; maxAttempts?: number; lockoutDurationMinutes?: number } = {}): Promise<string> {
  return createRecord(mgmt, '/auth-policies', {
    name: uniqueName('auth-policy'),
    primary: {
      cert: { allowed: true, allowExpiredCerts: false },
      extJwt: { allowed: false, allowedSigners: [] },
      updb: {
        allowed: true,
        lockoutDurationMinutes: opts.lockoutDurationMinutes ?? 0,
        maxAttempts: opts.maxAttempts ?? 5,
        minPasswordLength: 5,
        requireMixedCase: false,
        requireNumberChar: false,
        requireSpecialChar: false,
      },
    },
    secondary: { requireTotp: opts.requireTotp ?? false },
  });
}
