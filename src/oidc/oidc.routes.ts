/**
 * The OpenID provider under `/oidc`, as upstream clients drive it (the Go SDK, the `ziti` CLI, the C SDK): discovery
 * and keys, the authorization-code flow with PKCE (authorize, a login step per method, TOTP, the callback), the token
 * endpoint (code, refresh token, token exchange), revocation, userinfo and end session. It is a small flow of our
 * own over `jose` (through pki/): see src/oidc/README.md for why no provider library, and for the upstream quirks
 * kept and fixed.
 *
 * Wire rules differ from the Edge APIs': OAuth errors are `{error, error_description}` (RFC 6749 §5.2), login errors
 * a bare Edge error object `{code, message}`, and no envelope anywhere. These routes therefore have an error
 * handler of their own.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';
import { peerCertificates } from '../http/caller.ts';
import { sha1Fingerprint } from '../pki/fingerprint.ts';
import { networkJwks, type JwksSource } from '../pki/jwks.ts';
import type { JwtSigningKey } from '../pki/enrollment-jwt.ts';
import { createJwtKeyring } from '../pki/jwt-keyring.ts';
import type { Membership } from '../cluster/membership.ts';
import { subjectAltNamesCover, subjectAltNamesFromExtensions, type SubjectAltNames } from '../pki/subject-alt-names.ts';
import { x509 } from '../pki/x509-library.ts';
import type { Clock } from '../resources/entity-service.ts';
import type { Store } from '../store/store.ts';
import type { AuthenticationService } from '../auth/authentication.service.ts';
import type { ApiSessionService } from '../auth/api-session.service.ts';
import type { MfaService } from '../resources/mfa/mfa.service.ts';
import type { Caller } from '../http/caller.ts';
import type { AuthRequestData, AuthRequests, StoredAuthRequest } from './auth-requests.ts';
import { DEFAULT_POST_LOGOUT_URIS, DEFAULT_REDIRECT_URIS, isOidcClient, redirectUriAllowed } from './clients.ts';
import { TokenRefused, verifyOidcToken, type IdentityFacts, type OidcTokens, type SessionClaims } from './tokens.ts';

export const OIDC_PATH = '/oidc';

const GRANT_CODE = 'authorization_code';
const GRANT_REFRESH = 'refresh_token';
const GRANT_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const TYPE_ACCESS = 'urn:ietf:params:oauth:token-type:access_token';
const TYPE_REFRESH = 'urn:ietf:params:oauth:token-type:refresh_token';
const TYPE_ID = 'urn:ietf:params:oauth:token-type:id_token';
const KNOWN_SCOPES = new Set(['openid', 'offline_access']);

/** Which login page the authorize step sends a client to, by the `method` it asked for. */
const LOGIN_PAGES = { password: 'username', cert: 'cert', 'ext-jwt': 'ext-jwt' } as const;
/** The Edge authentication method behind each login path (`username` is an alias of `password`). */
const LOGIN_METHODS: Record<string, 'password' | 'cert' | 'ext-jwt'> = { username: 'password', password: 'password', cert: 'cert', 'ext-jwt': 'ext-jwt' };

export interface OidcDeps {
  store: Store;
  clock: Clock;
  /** This controller's signing key: it signs every token issued here. */
  key: JwtSigningKey & JwksSource;
  /**
   * The network's controllers: tokens any live one signed are accepted (refresh, exchange, end session, revoke,
   * userinfo) and `/keys` lists their keys. Absent: this controller alone.
   */
  membership?: Pick<Membership, 'known'>;
  /** The server certificate: the hosts it names are the issuers the provider answers as. */
  serverCertPem: string;
  /** The advertised `host:port`, the issuer of a request that names no host. */
  advertisedHost: string;
  auth: AuthenticationService;
  apiSessions: ApiSessionService;
  mfa: MfaService;
  authRequests: AuthRequests;
  tokens: OidcTokens;
}

/** An OAuth error answer (RFC 6749 §5.2). */
class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description);
  }
}

type Params = Record<string, string | string[] | undefined>;

/** The first value of a parameter (a repeated one keeps its first), trimmed of nothing, or ''. */
function one(p: Params, name: string): string {
  const v = p[name];
  const s = Array.isArray(v) ? v[0] : v;
  return typeof s === 'string' ? s : '';
}

function many(p: Params, name: string): string[] {
  const v = p[name];
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string' && x !== '');
}

/** Query and body together (body wins), as upstream's provider reads authorize and login requests. */
function paramsOf(req: FastifyRequest): Params {
  const out: Params = {};
  const query = (req.query ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(query)) if (typeof v === 'string' || Array.isArray(v)) out[k] = v as string | string[];
  const body = req.body;
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
      if (typeof v === 'string') out[k] = v;
      else if (Array.isArray(v) && v.every((x) => typeof x === 'string')) out[k] = v as string[];
      else if (typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
    }
  }
  return out;
}

function bodyObject(req: FastifyRequest): Record<string, unknown> {
  const body = req.body;
  return body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
}

function clientIp(req: FastifyRequest): string {
  const ip = req.raw.socket.remoteAddress ?? '';
  return ip.startsWith('::ffff:') ? ip.slice(7) : ip;
}

function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function withQuery(uri: string, params: Record<string, string>): string {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== '')).toString();
  return uri + (uri.includes('?') ? '&' : '?') + query;
}

/** A body's media type must be a form or JSON (upstream's login parser); none is fine. */
function assertFormOrJson(req: FastifyRequest): void {
  const length = req.headers['content-length'];
  const hasBody = (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
  if (!hasBody) return;
  const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json' || type === 'application/x-www-form-urlencoded') return;
  throw new ApiError('COULD_NOT_VALIDATE', { status: 415, message: `unsupported media type "${type}": send a form or JSON` });
}

function sendOAuthError(reply: FastifyReply, err: OAuthError): FastifyReply {
  return reply.code(err.status).header('cache-control', 'no-store').header('content-type', 'application/json').send(JSON.stringify({ error: err.error, error_description: err.description }));
}

/** A bare Edge error object, as upstream's login endpoints answer. */
function sendApiError(reply: FastifyReply, err: ApiError): FastifyReply {
  for (const [name, value] of Object.entries(err.headers ?? {})) reply.header(name, value);
  const body: Record<string, unknown> = { code: err.code, message: err.message };
  if (err.cause) body.cause = err.cause;
  return reply.code(err.status).header('content-type', 'application/json').send(JSON.stringify(body));
}

export function oidcRoutes(deps: OidcDeps): (app: FastifyInstance) => void {
  const { auth, apiSessions, mfa, authRequests, tokens, clock, key, store } = deps;
  const keyring = createJwtKeyring(key, () => deps.membership?.known() ?? []);
  const sans: SubjectAltNames = subjectAltNamesFromExtensions(new x509.X509Certificate(deps.serverCertPem).extensions);

  /** `https://<host>/oidc` for the Host the client used, when the server certificate names that host. */
  function issuerOf(req: FastifyRequest): string | undefined {
    const host = String(req.headers.host ?? deps.advertisedHost);
    let hostname: string;
    try {
      hostname = new URL(`https://${host}/`).hostname;
    } catch {
      return undefined;
    }
    return subjectAltNamesCover(sans, hostname) ? `https://${host}${OIDC_PATH}` : undefined;
  }

  function issuerOrThrow(req: FastifyRequest): string {
    const issuer = issuerOf(req);
    if (!issuer) throw new OAuthError('invalid_request', `no issuer is served for host ${String(req.headers.host ?? '')}`, 404);
    return issuer;
  }

  async function identityFacts(identityId: string): Promise<IdentityFacts | undefined> {
    const row = await store.get<{ name: string; is_admin: number; external_id: string | null }>('SELECT name, is_admin, external_id FROM identities WHERE id = ?', [identityId]);
    return row && { name: row.name, isAdmin: row.is_admin === 1, externalId: row.external_id ?? '' };
  }

  /** The session's caller now (undefined when it ended, or its identity is gone or disabled). */
  function sessionCaller(apiSessionId: string, headers: Record<string, string | string[] | undefined> = {}): Promise<Caller | undefined> {
    return auth.resolveOidcCaller(apiSessionId, '', headers);
  }

  /** Pending secondary factors in the shape the OIDC login endpoints give them. */
  async function loginQueries(caller: Caller): Promise<Record<string, unknown>[]> {
    const queries = caller.authQueries ?? [];
    if (queries.length === 0) return [];
    const enrolled = await mfa.isEnabled(caller.identity.id);
    return queries.map((q) =>
      q.typeId === 'MFA'
        ? { typeId: 'TOTP', provider: 'ziti', format: 'numeric', httpMethod: 'POST', httpUrl: './oidc/login/totp', minLength: 6, maxLength: 8, isTotpEnrolled: enrolled }
        : q,
    );
  }

  /** Where a login step goes next: the callback when nothing is pending, else 200 with the pending queries. */
  async function nextStep(reply: FastifyReply, stored: StoredAuthRequest, headers: Record<string, string | string[] | undefined>): Promise<FastifyReply> {
    const caller = await sessionCaller(stored.data.apiSessionId!, headers);
    if (!caller) throw new ApiError('UNAUTHORIZED', { message: 'the API session of this login has ended' });
    const queries = await loginQueries(caller);
    if (queries.length === 0) return reply.code(302).header('location', `${stored.data.issuer}/authorize/callback?id=${encodeURIComponent(stored.id)}`).send();
    if (queries.some((q) => q.typeId === 'TOTP')) reply.header('totp-required', 'true');
    return reply.code(200).header('content-type', 'application/json').send(JSON.stringify({ authQueries: queries }));
  }

  /** The live auth request a login step names (`id` in the body, else `authRequestID` or `id` in the query). */
  async function loginRequest(req: FastifyRequest, authenticated: boolean): Promise<StoredAuthRequest> {
    const body = bodyObject(req);
    const query = (req.query ?? {}) as Record<string, unknown>;
    const id = [body.id, query.authRequestID, query.id].find((v): v is string => typeof v === 'string' && v !== '') ?? '';
    if (id.length > 40) throw new ApiError('UNAUTHORIZED', { message: 'unknown or expired auth request' });
    const stored = await authRequests.find(id);
    if (!stored) throw new ApiError('UNAUTHORIZED', { message: 'unknown or expired auth request' });
    if (authenticated && !stored.data.apiSessionId) throw new ApiError('UNAUTHORIZED', { message: 'primary authentication has not passed for this auth request' });
    return stored;
  }

  function codeParam(req: FastifyRequest): string {
    const code = bodyObject(req).code;
    const text = typeof code === 'string' ? code.trim() : typeof code === 'number' ? String(code) : '';
    return text.length > 13 ? '' : text;
  }

  // ---- authorize -------------------------------------------------------------------------------------------

  async function authorize(req: FastifyRequest, reply: FastifyReply) {
    const issuer = issuerOrThrow(req);
    const p = paramsOf(req);
    const clientId = one(p, 'client_id');
    if (!isOidcClient(clientId)) throw new OAuthError('invalid_client', clientId === '' ? 'client_id is required' : `unknown client ${clientId}`);
    const redirectUri = one(p, 'redirect_uri');
    if (!redirectUriAllowed(redirectUri, DEFAULT_REDIRECT_URIS)) {
      throw new OAuthError('invalid_request', redirectUri === '' ? 'redirect_uri is required' : 'the redirect_uri is not registered for this client');
    }
    const state = one(p, 'state');
    // From here on errors go back to the client's redirect URI (RFC 6749 §4.1.2.1).
    const refuse = (error: string, description: string) => reply.code(302).header('location', withQuery(redirectUri, { error, error_description: description, state })).send();
    if (one(p, 'response_type') !== 'code') return refuse('unsupported_response_type', 'only the response type code is supported');
    const scopes = one(p, 'scope').split(' ').filter(Boolean);
    if (!scopes.includes('openid')) return refuse('invalid_scope', 'the scope must include openid');
    const challenge = one(p, 'code_challenge');
    if (challenge === '' || challenge.length > 128) return refuse('invalid_request', 'code_challenge is required (PKCE)');
    if (one(p, 'code_challenge_method') !== 'S256') return refuse('invalid_request', 'code_challenge_method must be S256');
    if (one(p, 'prompt').split(' ').includes('none')) return refuse('login_required', 'a login is required');
    const certs = peerCertificates(req);
    const method = one(p, 'method');
    const page = method === 'ext-jwt' ? LOGIN_PAGES['ext-jwt'] : method === 'cert' || certs.length > 0 ? LOGIN_PAGES.cert : LOGIN_PAGES.password;
    const data: AuthRequestData = {
      clientId,
      redirectUri,
      state: state.slice(0, 512),
      nonce: one(p, 'nonce').slice(0, 512),
      scopes: scopes.filter((s) => KNOWN_SCOPES.has(s)),
      codeChallenge: challenge,
      codeChallengeMethod: 'S256',
      issuer,
      configTypes: many(p, 'configTypes').slice(0, 100),
      certFingerprints: certs.map((c) => sha1Fingerprint(new Uint8Array(c.raw))),
      remoteAddress: `${clientIp(req)}:${req.raw.socket.remotePort ?? 0}`,
      amr: [],
    };
    const id = randomUUID();
    await authRequests.create(id, data);
    return reply.code(302).header('location', `${OIDC_PATH}/login/${page}?authRequestID=${id}`).send();
  }

  // ---- login ----------------------------------------------------------------------------------------------

  function loginPage(req: FastifyRequest, reply: FastifyReply, page: string) {
    const query = (req.query ?? {}) as Record<string, unknown>;
    const id = typeof query.authRequestID === 'string' ? query.authRequestID : '';
    return authRequests.find(id).then((stored) => {
      if (!stored) throw new ApiError('UNAUTHORIZED', { message: 'unknown or expired auth request' });
      reply.header('auth-request-id', stored.id);
      if (page === 'cert' || page === 'ext-jwt') return reply.code(200).header('content-type', 'text/plain; charset=utf-8').send('please POST to this URL\n');
      const escaped = stored.id.replace(/[^0-9a-f-]/gi, '');
      return reply
        .code(200)
        .header('content-type', 'text/html; charset=utf-8')
        .send(
          `<!DOCTYPE html><html><head><meta charset="utf-8"><title>Sign in</title></head><body>` +
            `<form method="post" action="${OIDC_PATH}/login/password"><input type="hidden" name="id" value="${escaped}">` +
            `<label>User name <input name="username" autocomplete="username"></label> ` +
            `<label>Password <input name="password" type="password" autocomplete="current-password"></label> ` +
            `<button type="submit">Sign in</button></form></body></html>`,
        );
    });
  }

  /** envInfo / sdkInfo as objects (JSON bodies) or as upstream's flat form fields. */
  function infoOf(body: Record<string, unknown>, p: Params, key: 'envInfo' | 'sdkInfo'): unknown {
    if (body[key] && typeof body[key] === 'object') return body[key];
    const fields =
      key === 'envInfo'
        ? { arch: 'envArch', os: 'envOs', osRelease: 'envOsRelease', osVersion: 'envOsVersion' }
        : { appId: 'sdkAppId', appVersion: 'sdkAppVersion', branch: 'sdkBranch', revision: 'sdkRevision', type: 'sdkType', version: 'sdkVersion' };
    const out: Record<string, string> = {};
    for (const [name, field] of Object.entries(fields)) {
      // The Go SDK spells the app id's field `sdkAppID`.
      const value = one(p, field) || (field === 'sdkAppId' ? one(p, 'sdkAppID') : '');
      if (value !== '') out[name] = value;
    }
    return out;
  }

  async function login(req: FastifyRequest, reply: FastifyReply, path: string) {
    assertFormOrJson(req);
    const stored = await loginRequest(req, false);
    if (stored.data.apiSessionId) throw new ApiError('INVALID_AUTH', { message: 'this auth request has authenticated already' });
    const method = LOGIN_METHODS[path]!;
    const body = bodyObject(req);
    const p = paramsOf(req);
    const configTypes = [...stored.data.configTypes, ...many(p, 'configTypes')];
    const certs = peerCertificates(req);
    const expiresAt = new Date(clock.now().getTime() + tokens.lifetimes.refreshTokenSeconds * 1000).toISOString();
    const result = await auth.authenticate(
      method,
      {
        body: { username: one(p, 'username') || undefined, password: one(p, 'password') || undefined, configTypes, envInfo: infoOf(body, p, 'envInfo'), sdkInfo: infoOf(body, p, 'sdkInfo') },
        ipAddress: clientIp(req),
        peerCertificates: certs,
        headers: req.headers,
      },
      { clientId: stored.data.clientId, expiresAt },
    );
    const data: AuthRequestData = {
      ...stored.data,
      apiSessionId: result.record.id,
      identityId: result.record.identityId,
      amr: [method],
      authTime: Math.floor(clock.now().getTime() / 1000),
      certFingerprints: stored.data.certFingerprints.length > 0 ? stored.data.certFingerprints : certs.map((c) => sha1Fingerprint(new Uint8Array(c.raw))),
      ...(result.sdkInfo && Object.keys(result.sdkInfo).length > 0 ? { sdkInfo: result.sdkInfo } : {}),
      ...(result.envInfo && Object.keys(result.envInfo).length > 0 ? { envInfo: result.envInfo } : {}),
    };
    if (!(await authRequests.update(stored.id, data))) {
      await store.write((tx) => apiSessions.remove(tx, result.record.id));
      throw new ApiError('UNAUTHORIZED', { message: 'unknown or expired auth request' });
    }
    return nextStep(reply, { ...stored, data }, req.headers);
  }

  async function addTotp(stored: StoredAuthRequest): Promise<StoredAuthRequest> {
    const data = { ...stored.data, amr: [...new Set([...stored.data.amr, 'totp'])] };
    if (!(await authRequests.update(stored.id, data))) throw new ApiError('UNAUTHORIZED', { message: 'unknown or expired auth request' });
    return { ...stored, data };
  }

  /**
   * A TOTP step of a login (`check` takes the code: a login's code, or the one that verifies an enrollment): a wrong
   * code answers upstream's 400 body, a right one moves the login on.
   */
  async function totpStep(req: FastifyRequest, reply: FastifyReply, check: (identityId: string, apiSessionId: string, code: string) => Promise<void>) {
    assertFormOrJson(req);
    const stored = await loginRequest(req, true);
    try {
      await check(stored.data.identityId!, stored.data.apiSessionId!, codeParam(req));
    } catch (err) {
      if (err instanceof ApiError && err.code === 'MFA_INVALID_TOKEN') {
        return reply.code(400).header('content-type', 'application/json').send(JSON.stringify({ code: 'INVALID TOTP CODE', message: 'an invalid TOTP code was supplied' }));
      }
      throw err;
    }
    return nextStep(reply, await addTotp(stored), req.headers);
  }

  async function enrollTotp(req: FastifyRequest, reply: FastifyReply) {
    assertFormOrJson(req);
    const stored = await loginRequest(req, true);
    const identityId = stored.data.identityId!;
    await mfa.enroll(identityId);
    const facts = await identityFacts(identityId);
    const record = await mfa.recordOf(identityId);
    return reply.code(201).header('content-type', 'application/json').send(JSON.stringify(mfa.present(record, facts?.name ?? '')));
  }

  async function unenrollTotp(req: FastifyRequest, reply: FastifyReply) {
    assertFormOrJson(req);
    const stored = await loginRequest(req, true);
    await mfa.removeOwn(stored.data.identityId!, codeParam(req));
    return reply.code(200).header('content-type', 'application/json').send('{}');
  }


  async function authQueries(req: FastifyRequest, reply: FastifyReply) {
    const stored = await loginRequest(req, true);
    const caller = await sessionCaller(stored.data.apiSessionId!, req.headers);
    if (!caller) throw new ApiError('UNAUTHORIZED', { message: 'the API session of this login has ended' });
    const queries = await loginQueries(caller);
    if (queries.some((q) => q.typeId === 'TOTP')) reply.header('totp-required', 'true');
    return reply.code(200).header('content-type', 'application/json').send(JSON.stringify({ authQueries: queries }));
  }

  async function callback(req: FastifyRequest, reply: FastifyReply) {
    const query = (req.query ?? {}) as Record<string, unknown>;
    const id = typeof query.id === 'string' ? query.id : '';
    const stored = await authRequests.find(id);
    if (!stored) throw new OAuthError('invalid_request', 'unknown or expired auth request');
    const { redirectUri, state } = stored.data;
    const caller = stored.data.apiSessionId ? await sessionCaller(stored.data.apiSessionId, req.headers) : undefined;
    if (!caller || caller.isPartial) {
      return reply.code(302).header('location', withQuery(redirectUri, { error: 'interaction_required', error_description: 'the login is not complete', state })).send();
    }
    const code = await authRequests.issueCode(stored.id);
    if (!code) throw new OAuthError('invalid_request', 'a code was issued for this auth request already');
    return reply.code(302).header('location', withQuery(redirectUri, { code, state })).send();
  }

  // ---- token endpoint --------------------------------------------------------------------------------------

  /** The client of a token request: HTTP Basic with an empty secret (what both SDKs send) or `client_id`. */
  function clientOf(req: FastifyRequest, p: Params): string {
    const header = String(req.headers.authorization ?? '');
    let fromBasic: string | undefined;
    if (header.toLowerCase().startsWith('basic ')) {
      const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      let id: string;
      try {
        id = decodeURIComponent(colon < 0 ? decoded : decoded.slice(0, colon));
      } catch {
        throw new OAuthError('invalid_client', 'the client id in the Authorization header is malformed', 401);
      }
      const secret = colon < 0 ? '' : decoded.slice(colon + 1);
      // Public clients have no secret: one given is wrong.
      if (secret !== '') throw new OAuthError('invalid_client', 'the client has no secret', 401);
      fromBasic = id;
    }
    const fromForm = one(p, 'client_id');
    if (fromBasic !== undefined && fromForm !== '' && fromBasic !== fromForm) throw new OAuthError('invalid_client', 'client_id does not match the client authenticated', 401);
    const clientId = fromBasic ?? fromForm;
    if (!isOidcClient(clientId)) throw new OAuthError('invalid_client', clientId === '' ? 'client authentication is required' : `unknown client ${clientId}`, 401);
    return clientId;
  }

  async function verifySubject(token: string, type: 'a' | 'r'): Promise<SessionClaims> {
    try {
      return (await verifyOidcToken(token, keyring, type, clock.now())).session;
    } catch (err) {
      const what = type === 'r' ? 'refresh token' : 'access token';
      throw new OAuthError('invalid_grant', err instanceof TokenRefused && err.reason === 'expired' ? `the ${what} has expired` : `invalid ${what}`);
    }
  }

  /** The session claims re-read for a token issued now: the session must live, its identity's facts are current. */
  async function currentClaims(s: SessionClaims, issuer: string): Promise<{ claims: SessionClaims; facts: IdentityFacts }> {
    const caller = await sessionCaller(s.apiSessionId);
    if (!caller || caller.identity.id !== s.sub || caller.isPartial) throw new OAuthError('invalid_grant', 'the API session of this token has ended');
    const facts = await identityFacts(s.sub);
    if (!facts) throw new OAuthError('invalid_grant', 'the identity of this token is gone');
    return { claims: { ...s, iss: issuer, isAdmin: facts.isAdmin, externalId: facts.externalId, configTypes: caller.apiSession.configTypes }, facts };
  }

  async function extendSession(apiSessionId: string, refreshExpiresAt: number): Promise<void> {
    await apiSessions.extend(apiSessionId, new Date(refreshExpiresAt * 1000));
  }

  async function codeGrant(req: FastifyRequest, p: Params, clientId: string, issuer: string) {
    const stored = await authRequests.redeem(one(p, 'code'));
    if (!stored) throw new OAuthError('invalid_grant', 'invalid code');
    const data = stored.data;
    if (data.clientId !== clientId) throw new OAuthError('invalid_grant', 'the code was issued to another client');
    if (one(p, 'redirect_uri') !== data.redirectUri) throw new OAuthError('invalid_grant', 'redirect_uri does not match the authorization request');
    const verifier = one(p, 'code_verifier');
    if (verifier === '') throw new OAuthError('invalid_request', 'code_verifier required');
    if (!sameText(s256(verifier), data.codeChallenge)) throw new OAuthError('invalid_grant', 'invalid code_verifier');
    const caller = await sessionCaller(data.apiSessionId!, req.headers);
    if (!caller || caller.isPartial) throw new OAuthError('invalid_grant', 'the login is not complete');
    const facts = await identityFacts(caller.identity.id);
    if (!facts) throw new OAuthError('invalid_grant', 'the identity is gone');
    const session = caller.apiSession;
    const claims: SessionClaims = {
      iss: issuer,
      sub: caller.identity.id,
      clientId,
      apiSessionId: session.id,
      amr: data.amr,
      authTime: data.authTime ?? Math.floor(clock.now().getTime() / 1000),
      scopes: data.scopes,
      configTypes: session.configTypes,
      certFingerprints: data.certFingerprints,
      remoteAddress: data.remoteAddress,
      authenticatorId: session.authenticatorId,
      isAdmin: facts.isAdmin,
      externalId: facts.externalId,
      sdkInfo: data.sdkInfo ?? null,
      envInfo: data.envInfo ?? null,
      certFlags: {
        extendable: session.isCertExtendable,
        extendRequested: session.isCertExtendRequested,
        keyRollRequested: session.isCertKeyRollRequested,
        improperChain: session.improperClientCertChain,
      },
    };
    const issued = await tokens.issue(claims, facts, data.nonce);
    await extendSession(session.id, issued.refreshExpiresAt);
    return {
      access_token: issued.accessToken,
      token_type: 'Bearer',
      ...(claims.scopes.includes('offline_access') ? { refresh_token: issued.refreshToken } : {}),
      expires_in: issued.expiresIn,
      id_token: issued.idToken,
      scope: claims.scopes.join(' '),
    };
  }

  async function refreshGrant(p: Params, clientId: string, issuer: string) {
    const subject = await verifySubject(one(p, 'refresh_token'), 'r');
    if (subject.clientId !== clientId) throw new OAuthError('invalid_grant', 'the refresh token was issued to another client');
    const { claims, facts } = await currentClaims(subject, issuer);
    const issued = await tokens.issue(claims, facts, '');
    await extendSession(claims.apiSessionId, issued.refreshExpiresAt);
    return { access_token: issued.accessToken, token_type: 'Bearer', refresh_token: issued.refreshToken, expires_in: issued.expiresIn, id_token: issued.idToken, scope: claims.scopes.join(' ') };
  }

  async function exchangeGrant(p: Params, clientId: string, issuer: string) {
    const subjectType = one(p, 'subject_token_type');
    if (subjectType !== TYPE_REFRESH && subjectType !== TYPE_ACCESS) throw new OAuthError('invalid_request', 'subject_token_type must be a refresh or an access token');
    const requested = one(p, 'requested_token_type') || TYPE_REFRESH;
    if (![TYPE_REFRESH, TYPE_ACCESS, TYPE_ID].includes(requested)) throw new OAuthError('invalid_request', 'unsupported requested_token_type');
    if (subjectType === TYPE_ACCESS && requested !== TYPE_ACCESS) throw new OAuthError('invalid_request', 'an access token can only be exchanged for an access token');
    for (const audience of many(p, 'audience')) if (!isOidcClient(audience)) throw new OAuthError('invalid_target', `unknown audience ${audience}`);
    for (const scope of one(p, 'scope').split(' ').filter(Boolean)) if (!KNOWN_SCOPES.has(scope)) throw new OAuthError('invalid_scope', `unknown scope ${scope}`);
    // The subject token is not spent: the Go SDK exchanges one refresh token twice (for new tokens, then an ID token).
    const subject = await verifySubject(one(p, 'subject_token'), subjectType === TYPE_REFRESH ? 'r' : 'a');
    const { claims, facts } = await currentClaims({ ...subject, clientId: many(p, 'audience')[0] ?? clientId }, issuer);
    const scope = claims.scopes.join(' ');
    if (requested === TYPE_ID) {
      return { access_token: await tokens.id(claims, facts, ''), issued_token_type: TYPE_ID, token_type: 'N_A', scope };
    }
    if (requested === TYPE_ACCESS) {
      return { access_token: await tokens.access(claims), issued_token_type: TYPE_ACCESS, token_type: 'Bearer', expires_in: tokens.lifetimes.accessTokenSeconds, scope };
    }
    const issued = await tokens.issue(claims, facts, '', false);
    await extendSession(claims.apiSessionId, issued.refreshExpiresAt);
    return { access_token: issued.accessToken, issued_token_type: TYPE_REFRESH, token_type: 'Bearer', expires_in: issued.expiresIn, scope, refresh_token: issued.refreshToken };
  }

  async function token(req: FastifyRequest, reply: FastifyReply) {
    const issuer = issuerOrThrow(req);
    const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded') throw new OAuthError('invalid_request', 'the token request must be a form (application/x-www-form-urlencoded)');
    const p = paramsOf(req);
    const clientId = clientOf(req, p);
    const grant = one(p, 'grant_type');
    const body =
      grant === GRANT_CODE
        ? await codeGrant(req, p, clientId, issuer)
        : grant === GRANT_REFRESH
          ? await refreshGrant(p, clientId, issuer)
          : grant === GRANT_EXCHANGE
            ? await exchangeGrant(p, clientId, issuer)
            : (() => {
                throw new OAuthError('unsupported_grant_type', grant === '' ? 'grant_type is required' : `unsupported grant type ${grant}`);
              })();
    return reply.code(200).header('cache-control', 'no-store').header('pragma', 'no-cache').header('content-type', 'application/json').send(JSON.stringify(body));
  }

  // ---- revoke, end session, userinfo -----------------------------------------------------------------------

  /** The API session a token of ours names (any type, expiry ignored), or undefined. */
  async function sessionOfToken(token: string): Promise<{ apiSessionId: string; sub: string } | undefined> {
    if (token === '' || token.length > 16_384) return undefined;
    try {
      // A token past its expiry still says which session to end: its signature is checked as of its own issue time.
      const iat = (JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { iat?: unknown }).iat;
      if (typeof iat !== 'number') return undefined;
      const claims = await keyring.verify(token, { currentDate: new Date(iat * 1000) });
      const sid = typeof claims.z_asid === 'string' ? claims.z_asid : typeof claims.sid === 'string' ? claims.sid : undefined;
      return sid && typeof claims.sub === 'string' ? { apiSessionId: sid, sub: claims.sub } : undefined;
    } catch {
      return undefined;
    }
  }

  async function endSessionOf(token: string): Promise<void> {
    const named = await sessionOfToken(token);
    if (!named) return;
    await store.write(async (tx) => {
      const row = await tx.get<{ identity_id: string; oidc_client_id: string | null }>('SELECT identity_id, oidc_client_id FROM api_sessions WHERE id = ?', [named.apiSessionId]);
      if (row && row.oidc_client_id !== null && row.identity_id === named.sub) await apiSessions.remove(tx, named.apiSessionId);
    });
  }

  async function revoke(req: FastifyRequest, reply: FastifyReply) {
    const p = paramsOf(req);
    clientOf(req, p);
    // Revoking any token of a login ends the login's API session, and with it every token it issued (RFC 7009 §2.1
    // lets a server revoke more than the token named). An unknown token is not an error (§2.2).
    await endSessionOf(one(p, 'token'));
    return reply.code(200).header('cache-control', 'no-store').send();
  }

  async function endSession(req: FastifyRequest, reply: FastifyReply) {
    const p = paramsOf(req);
    await endSessionOf(one(p, 'id_token_hint'));
    const target = one(p, 'post_logout_redirect_uri');
    if (target !== '' && redirectUriAllowed(target, DEFAULT_POST_LOGOUT_URIS)) {
      return reply.code(302).header('location', withQuery(target, { state: one(p, 'state') })).send();
    }
    return reply.code(302).header('location', `${OIDC_PATH}/logged-out`).send();
  }

  async function userinfo(req: FastifyRequest, reply: FastifyReply) {
    const header = String(req.headers.authorization ?? '');
    const token = header.startsWith('Bearer ') ? header.slice(7).trim() : '';
    let session: SessionClaims;
    try {
      session = (await verifyOidcToken(token, keyring, 'a', clock.now())).session;
    } catch {
      return reply.code(401).header('www-authenticate', 'Bearer error="invalid_token"').header('content-type', 'application/json').send(JSON.stringify({ error: 'invalid_token', error_description: 'the access token is invalid' }));
    }
    const caller = await sessionCaller(session.apiSessionId, req.headers);
    const facts = caller && (await identityFacts(caller.identity.id));
    if (!caller || !facts) {
      return reply.code(401).header('www-authenticate', 'Bearer error="invalid_token"').header('content-type', 'application/json').send(JSON.stringify({ error: 'invalid_token', error_description: 'the API session of this token has ended' }));
    }
    return reply.code(200).header('content-type', 'application/json').send(JSON.stringify({ sub: caller.identity.id, name: facts.name, ...(facts.isAdmin ? { z_ia: true } : {}), ...(facts.externalId ? { z_eid: facts.externalId } : {}) }));
  }

  // ---- discovery and keys ----------------------------------------------------------------------------------

  function discovery(req: FastifyRequest, reply: FastifyReply) {
    const issuer = issuerOrThrow(req);
    const body = {
      issuer,
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      userinfo_endpoint: `${issuer}/userinfo`,
      revocation_endpoint: `${issuer}/revoke`,
      end_session_endpoint: `${issuer}/end_session`,
      jwks_uri: `${issuer}/keys`,
      scopes_supported: ['openid', 'offline_access'],
      response_types_supported: ['code'],
      grant_types_supported: [GRANT_CODE, GRANT_REFRESH, GRANT_EXCHANGE],
      subject_types_supported: ['public'],
      // This controller signs its ID tokens with its own key; other controllers' may differ in type.
      id_token_signing_alg_values_supported: [...new Set(keyring.keys().map((k) => k.algorithm))],
      token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
      revocation_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
      code_challenge_methods_supported: ['S256'],
      claims_supported: ['iss', 'sub', 'aud', 'exp', 'iat', 'auth_time', 'amr', 'nonce', 'sid', 'name', 'z_ia', 'z_eid'],
      request_parameter_supported: false,
      ui_locales_supported: ['en'],
    };
    return reply.code(200).header('content-type', 'application/json').send(JSON.stringify(body));
  }

  return (app) => {
    void app.register(async (scope) => {
      scope.setErrorHandler((err, req, reply) => {
        if (err instanceof OAuthError) return sendOAuthError(reply, err);
        if (err instanceof ApiError) return sendApiError(reply, err);
        const status = (err as { statusCode?: number }).statusCode;
        if (typeof status === 'number' && status >= 400 && status < 500) {
          // A body the parsers refused (too large, malformed JSON or form).
          return sendOAuthError(reply, new OAuthError('invalid_request', (err as Error).message, status));
        }
        req.log.error({ err: (err as Error).message }, 'OIDC request failed');
        return sendOAuthError(reply, new OAuthError('server_error', 'the request could not be handled', 500));
      });
      const o = OIDC_PATH;
      scope.route({ method: ['GET', 'POST'], url: `${o}/authorize`, handler: authorize });
      scope.get(`${o}/authorize/callback`, callback);
      for (const page of ['username', 'password', 'cert', 'ext-jwt']) {
        scope.get(`${o}/login/${page}`, (req, reply) => loginPage(req, reply, page));
        scope.post(`${o}/login/${page}`, (req, reply) => login(req, reply, page));
      }
      scope.post(`${o}/login/totp`, (req, reply) => totpStep(req, reply, mfa.authenticate));
      scope.post(`${o}/login/totp/enroll`, enrollTotp);
      scope.delete(`${o}/login/totp/enroll`, unenrollTotp);
      scope.post(`${o}/login/totp/enroll/verify`, (req, reply) => totpStep(req, reply, mfa.verify));
      scope.get(`${o}/login/auth-queries`, authQueries);
      scope.post(`${o}/oauth/token`, token);
      scope.post(`${o}/revoke`, revoke);
      scope.route({ method: ['GET', 'POST'], url: `${o}/end_session`, handler: endSession });
      scope.get(`${o}/logged-out`, (_req, reply) => reply.code(200).header('content-type', 'text/plain; charset=utf-8').send('signed out successfully\n'));
      scope.route({ method: ['GET', 'POST'], url: `${o}/userinfo`, handler: userinfo });
      scope.get(`${o}/keys`, async (_req, reply) => reply.code(200).header('content-type', 'application/json').send(JSON.stringify(await networkJwks(key, keyring))));
      scope.get(`${o}/.well-known/openid-configuration`, discovery);
    });
  };
}
