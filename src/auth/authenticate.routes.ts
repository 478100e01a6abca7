/**
 * Authentication and the caller's own session and identity, offered identically on both APIs:
 * `POST /authenticate`, `GET|DELETE /current-api-session`, `GET /current-identity`, and the caller's own
 * authenticators (list, get, patch and put with the current password).
 */
import type { Values } from '../store/entity-table.ts';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { RouteSpec } from '../http/route.ts';
import { callerOf, peerCertificates } from '../http/caller.ts';
import { headerValue } from '../http/header-value.ts';
import { detailEnvelope, empty, emptyEnvelope, list, listEnvelope, ok, okNullMeta } from '../http/envelope.ts';
import { IdParams, ListQuery, listRequest } from '../http/list-params.ts';
import { notFound } from '../errors.ts';
import { FreeObject, Nullable, Password, TagsNullable, Username } from '../resources/common.schema.ts';
import type { AuthenticationService } from './authentication.service.ts';
import { goTimeString } from './authentication.service.ts';
import type { IdentityService } from '../resources/identities/identity.service.ts';
import type { AuthenticatorService } from '../resources/authenticators/authenticator.service.ts';
import { authenticatorResource } from '../resources/authenticators/authenticator.resource.ts';
import { identityResource } from '../resources/identities/identity.resource.ts';
import { currentApiSessionDetail } from '../resources/api-sessions/api-session.resource.ts';

const AuthenticateQuery = Type.Object({
  method: Type.Unsafe<string>({ type: 'string', enum: ['password', 'cert', 'ext-jwt'] }),
});

const AuthenticateBody = Type.Unsafe<Record<string, unknown> | undefined>({
  type: ['object', 'null'],
  properties: {
    username: Username,
    password: Password,
    configTypes: { type: 'array', items: { type: 'string' } },
    envInfo: FreeObject,
    sdkInfo: FreeObject,
  },
});

/**
 * Upstream's generated validation passes over an empty user name or password (a zero value), so the password
 * method answers that both are required instead of a length error: an empty one is dropped before validation.
 */
function withoutEmptyCredentials(body: unknown): unknown {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return body;
  const out = { ...(body as Record<string, unknown>) };
  for (const field of ['username', 'password']) if (out[field] === '') delete out[field];
  return out;
}

const OwnAuthenticatorPatch = Type.Object({
  currentPassword: Password,
  password: Type.Optional(Nullable(Password)),
  username: Type.Optional(Nullable(Username)),
  tags: Type.Optional(TagsNullable),
});
const OwnAuthenticatorPut = Type.Object({
  currentPassword: Password,
  password: Password,
  username: Username,
  tags: Type.Optional(TagsNullable),
});

function clientIp(req: FastifyRequest): string {
  const ip = req.raw.socket.remoteAddress ?? '';
  return ip.startsWith('::ffff:') ? ip.slice(7) : ip;
}

export function authenticationRoutes(deps: {
  auth: AuthenticationService;
  identities: IdentityService;
  authenticators: AuthenticatorService;
}): RouteSpec[] {
  const { auth, identities, authenticators } = deps;
  const tag = 'Authentication';
  const ownAuthenticator = async (req: FastifyRequest) => {
    const caller = callerOf(req);
    const id = (req.params as { id: string }).id;
    const found = await authenticators.find(id);
    if (!found || found.identityId !== caller.identity.id) throw notFound('authenticator', id);
    return found;
  };
  /** The caller's own authenticator links to where the caller may reach it. */
  const presentOwn = async (values: Values) => ({
    ...(await authenticators.present(values)),
    _links: { self: { href: `./current-identity/authenticators/${String(values.id)}` } },
  });
  return [
    {
      method: 'POST', url: '/authenticate', operationId: 'authenticate', tag, summary: 'Authenticate and create an API session',
      access: 'public', querystring: AuthenticateQuery, body: AuthenticateBody, normalizeBody: withoutEmptyCredentials,
      response: { 200: detailEnvelope(currentApiSessionDetail) },
      handler: async (req, reply) => {
        const { method } = req.query as { method: string };
        const { record, token, authQueries, challenge } = await auth.authenticate(method, {
          body: (req.body ?? {}) as Record<string, unknown>,
          ipAddress: clientIp(req),
          peerCertificates: peerCertificates(req),
          headers: req.headers,
        });
        const detail = await auth.presentCurrent(record, token, authQueries);
        reply
          .header('zt-session', token)
          .header('expiration-seconds', String(detail.expirationSeconds))
          .header('expires-at', goTimeString(new Date(detail.expiresAt as string)));
        // A certificate flagged for early extension is announced at login too (auth.md §1.2).
        if (record.isCertExtendRequested) reply.header('ziti-authenticator-extend-requested', 'true');
        // A required secondary JWT that was not presented (or did not verify) is announced once, here.
        if (challenge) reply.header('WWW-Authenticate', headerValue(challenge));
        return ok(detail);
      },
    },
    {
      method: 'GET', url: '/current-api-session', operationId: 'getCurrentAPISession', tag: 'Current API Session',
      summary: 'The API session of the caller', access: 'partial',
      response: { 200: detailEnvelope(currentApiSessionDetail) },
      handler: async (req) => {
        const caller = callerOf(req);
        return ok(await auth.presentCurrent(caller.apiSession, caller.token, caller.authQueries, caller.jwt?.expiresAt));
      },
    },
    {
      method: 'DELETE', url: '/current-api-session', operationId: 'deleteCurrentApiSession', tag: 'Current API Session',
      summary: 'Log out: end the API session of the caller', access: 'partial', response: { 200: emptyEnvelope },
      handler: async (req) => {
        await auth.logout(callerOf(req));
        return empty();
      },
    },
    {
      method: 'GET', url: '/current-identity', operationId: 'getCurrentIdentity', tag: 'Current Identity',
      summary: 'The identity of the caller', access: 'session',
      response: { 200: detailEnvelope(identityResource.schemas.detail, 'null') },
      handler: async (req) => {
        const id = callerOf(req).identity.id;
        const values = await identities.currentValues(id);
        if (!values) throw notFound('identity', id);
        const detail = await identities.present(values);
        // The caller's own identity links to the caller-relative paths, not to ./identities/<id>.
        detail._links = { self: { href: './current-identity' }, mfa: { href: './current-identity/mfa' } };
        return okNullMeta(detail);
      },
    },
    {
      method: 'GET', url: '/current-identity/authenticators', operationId: 'listCurrentIdentityAuthenticators', tag: 'Current API Session',
      summary: "List the caller's authenticators", access: 'session', querystring: ListQuery,
      response: { 200: listEnvelope(authenticatorResource.schemas.detail) },
      handler: async (req) => {
        const r = await authenticators.listForIdentity(callerOf(req).identity.id, listRequest(req));
        const items: Array<Record<string, unknown>> = [];
        for (const item of r.items) items.push(await presentOwn(item));
        return list(items, r.page, r.filterableFields);
      },
    },
    {
      method: 'GET', url: '/current-identity/authenticators/:id', operationId: 'detailCurrentIdentityAuthenticator', tag: 'Current API Session',
      summary: "Retrieve one of the caller's authenticators", access: 'session', params: IdParams,
      response: { 200: detailEnvelope(authenticatorResource.schemas.detail) },
      handler: async (req) => ok(await presentOwn(await ownAuthenticator(req))),
    },
    ...(['patch', 'put'] as const).map(
      (mode): RouteSpec => ({
        method: mode === 'patch' ? 'PATCH' : 'PUT', url: '/current-identity/authenticators/:id',
        operationId: mode === 'patch' ? 'patchCurrentIdentityAuthenticator' : 'updateCurrentIdentityAuthenticator',
        tag: 'Current API Session', summary: "Change the caller's user name or password", access: 'session',
        params: IdParams, body: mode === 'patch' ? OwnAuthenticatorPatch : OwnAuthenticatorPut, response: { 200: emptyEnvelope },
        handler: async (req) => {
          const caller = callerOf(req);
          await authenticators.updateOwn(caller.identity.id, (req.params as { id: string }).id, req.body as Record<string, unknown>, mode);
          return empty();
        },
      }),
    ),
  ];
}
