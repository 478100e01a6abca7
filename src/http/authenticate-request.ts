/**
 * onRequest hook of secured routes: resolves the `zt-session` header, or else an OIDC access token in
 * `Authorization: Bearer`, to a Caller, or answers 401 UNAUTHORIZED with upstream's `WWW-Authenticate` challenges
 * (missing vs invalid token). Runs before body validation, so an unauthenticated request with a bad body gets 401,
 * as upstream. With a zt-session every bearer token is a secondary one (an external JWT), as upstream.
 */
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';
import type { Caller } from './caller.ts';

export type SessionResolver = (token: string, req: FastifyRequest) => Caller | undefined | Promise<Caller | undefined>;

/** Resolves the OIDC access token among a request's bearer tokens; undefined when there is none. */
export type BearerResolver = (req: FastifyRequest) => Promise<Caller> | undefined;

const missingChallenge =
  'zt-session realm="zt-session" error="missing" error_description="no matching token was provided",' +
  'Bearer realm="openziti-oidc" error="missing" error_description="no matching token was provided"';
const invalidChallenge = 'zt-session realm="zt-session" error="invalid" error_description="token is invalid"';
const invalidBearerChallenge = 'Bearer realm="openziti-oidc" error="invalid" error_description="token is invalid"';

function sessionToken(req: FastifyRequest): string | undefined {
  const raw = req.headers['zt-session'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  const token = value?.trim();
  return token ? token : undefined;
}

function hasBearer(req: FastifyRequest): boolean {
  const raw = req.headers.authorization;
  const values = Array.isArray(raw) ? raw : raw ? [raw] : [];
  return values.some((v) => v.trim().startsWith('Bearer '));
}

/** Resolves the caller; synchronous unless the resolver itself has to wait (a promise is returned then). */
export function authenticateRequest(req: FastifyRequest, resolve: SessionResolver, mode: 'session' | 'partial', bearer?: BearerResolver): void | Promise<void> {
  const token = sessionToken(req);
  if (!token) {
    if (hasBearer(req)) {
      const pending = bearer?.(req);
      if (pending) return pending.then((c) => accept(req, c, mode));
      // No bearer token of ours (an external JWT alone names no API session).
      throw new ApiError('UNAUTHORIZED', { headers: { 'www-authenticate': invalidBearerChallenge } });
    }
    throw new ApiError('UNAUTHORIZED', {
      cause: { code: 'UNHANDLED', message: 'unauthenticated for invalid credentials' },
      headers: { 'www-authenticate': missingChallenge },
    });
  }
  const caller = resolve(token, req);
  if (caller instanceof Promise) return caller.then((c) => accept(req, c, mode));
  accept(req, caller, mode);
}

function accept(req: FastifyRequest, caller: Caller | undefined, mode: 'session' | 'partial'): void {
  if (!caller) throw new ApiError('UNAUTHORIZED', { headers: { 'www-authenticate': invalidChallenge } });
  if (caller.isPartial && mode !== 'partial') throw new ApiError('UNAUTHORIZED');
  req.caller = caller;
}
