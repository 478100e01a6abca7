/**
 * The OIDC login as upstream's Go SDK drives it (authorize with PKCE, a login step, the callback, the code for
 * tokens), step by step over real HTTPS, for tests that need JWT API sessions or that check one step's answer.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { HttpClient, HttpResponse } from './client.ts';

export const SDK_REDIRECT = 'http://localhost:8080/auth/callback';

export interface PkcePair {
  verifier: string;
  challenge: string;
}

export function pkce(): PkcePair {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export function form(fields: Record<string, string | string[]>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) for (const value of Array.isArray(v) ? v : [v]) p.append(k, value);
  return p.toString();
}

export interface Credentials {
  username?: string;
  password?: string;
  cert?: string;
  key?: string;
  /** An external JWT (ext-jwt login), sent as `Authorization: Bearer`. */
  jwt?: string;
}

export interface AuthorizeOptions {
  clientId?: string;
  redirectUri?: string;
  scope?: string;
  method?: 'password' | 'cert' | 'ext-jwt';
  configTypes?: string[];
  state?: string;
  nonce?: string;
}

/** GET /oidc/authorize; returns the auth request id from the redirect and the PKCE pair. */
export async function authorize(http: HttpClient, creds: Credentials = {}, o: AuthorizeOptions = {}): Promise<{ id: string; pkce: PkcePair; state: string; nonce: string; res: HttpResponse }> {
  const pair = pkce();
  const state = o.state ?? randomBytes(16).toString('base64url');
  const nonce = o.nonce ?? randomBytes(32).toString('base64url');
  const query = form({
    client_id: o.clientId ?? 'native',
    response_type: 'code',
    scope: o.scope ?? 'openid offline_access',
    state,
    nonce,
    code_challenge: pair.challenge,
    code_challenge_method: 'S256',
    redirect_uri: o.redirectUri ?? SDK_REDIRECT,
    ...(o.method ? { method: o.method } : {}),
    ...(o.configTypes ? { configTypes: o.configTypes } : {}),
  });
  const res = await http.get(`/oidc/authorize?${query}`, { cert: creds.cert, key: creds.key });
  assert.equal(res.status, 302, `authorize: ${res.status} ${res.text}`);
  const location = String(res.headers.location);
  const id = new URL(location, 'https://x').searchParams.get('authRequestID');
  assert.ok(id, `authorize redirect names an auth request: ${location}`);
  return { id, pkce: pair, state, nonce, res };
}

/** POST /oidc/login/<path> as the Go SDK does (a form, no Accept). */
export function loginStep(http: HttpClient, path: string, id: string, creds: Credentials, extra: Record<string, string> = {}): Promise<HttpResponse> {
  const fields: Record<string, string> = { id, ...extra };
  if (creds.username !== undefined) fields.username = creds.username;
  if (creds.password !== undefined) fields.password = creds.password;
  return http.post(`/oidc/login/${path}`, undefined, {
    rawBody: form(fields),
    contentType: 'application/x-www-form-urlencoded',
    cert: creds.cert,
    key: creds.key,
    headers: { accept: '*/*', ...(creds.jwt ? { authorization: `Bearer ${creds.jwt}` } : {}) },
  });
}

/** Follows the callback of a finished login; returns the code (state checked). */
export async function callbackCode(http: HttpClient, id: string, state: string): Promise<string> {
  const res = await http.get(`/oidc/authorize/callback?id=${encodeURIComponent(id)}`);
  assert.equal(res.status, 302, `callback: ${res.status} ${res.text}`);
  const target = new URL(String(res.headers.location));
  assert.equal(target.origin + target.pathname, SDK_REDIRECT);
  assert.equal(target.searchParams.get('state'), state);
  const code = target.searchParams.get('code');
  assert.ok(code, `callback gives a code: ${target}`);
  return code;
}

export function tokenRequest(http: HttpClient, fields: Record<string, string>, basicClient?: string): Promise<HttpResponse> {
  return http.post('/oidc/oauth/token', undefined, {
    rawBody: form(fields),
    contentType: 'application/x-www-form-urlencoded',
    headers: basicClient !== undefined ? { authorization: `Basic ${Buffer.from(`${basicClient}:`).toString('base64')}` } : {},
  });
}

export interface OidcTokens {
  accessToken: string;
  refreshToken: string;
  idToken: string;
  expiresIn: number;
  body: Record<string, unknown>;
}

/** The whole login: authorize, the login step for the credentials, callback, code for tokens. */
export async function oidcLogin(http: HttpClient, creds: Credentials, o: AuthorizeOptions = {}): Promise<OidcTokens> {
  const method = o.method ?? (creds.jwt ? 'ext-jwt' : creds.username !== undefined ? 'password' : 'cert');
  const started = await authorize(http, creds, { ...o, method });
  const step = await loginStep(http, method === 'password' ? 'password' : method, started.id, creds);
  assert.equal(step.status, 302, `login: ${step.status} ${step.text}`);
  const code = await callbackCode(http, started.id, started.state);
  const res = await tokenRequest(http, {
    grant_type: 'authorization_code',
    client_id: o.clientId ?? 'native',
    code_verifier: started.pkce.verifier,
    code,
    redirect_uri: o.redirectUri ?? SDK_REDIRECT,
  });
  assert.equal(res.status, 200, `token: ${res.status} ${res.text}`);
  return { accessToken: res.body.access_token, refreshToken: res.body.refresh_token, idToken: res.body.id_token, expiresIn: res.body.expires_in, body: res.body };
}

/** The unverified claims of a JWT. */
export function claimsOf(jwt: string): Record<string, any> {
  return JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8'));
}

export function headerOf(jwt: string): Record<string, any> {
  return JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString('utf8'));
}

export function bearer(token: string): { headers: Record<string, string> } {
  return { headers: { authorization: `Bearer ${token}` } };
}

/** The current TOTP code of a base32 secret. */
export function totpFor(secret: string): string {
  return new TOTP({ secret: Secret.fromBase32(secret) }).generate({ timestamp: Date.now() });
}

/** Enrolls and verifies MFA for a user through its zt-session (`client` on the server root); returns the secret. */
export async function enrollVerifiedMfa(root: HttpClient, ztSession: string): Promise<string> {
  const zt = root.as({ token: ztSession });
  assert.equal((await zt.post('/edge/client/v1/current-identity/mfa')).status, 201);
  const detail = await zt.get('/edge/client/v1/current-identity/mfa');
  const secret = new URL(detail.body.data.provisioningUrl).searchParams.get('secret')!;
  assert.equal((await zt.post('/edge/client/v1/current-identity/mfa/verify', { code: totpFor(secret) })).status, 200);
  return secret;
}
