/**
 * RouteSpec: one operation of an API, declared with its schemas, its authentication mode and its
 * permission check. The API modules list these explicitly; `mountApi` registers them on Fastify under the
 * API's base path, and the OpenAPI generator reads the same list, so the served document can not drift
 * from what is served.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import type { TSchema } from '@sinclair/typebox';
import { ApiError } from '../errors.ts';
import { authenticateRequest, type BearerResolver, type SessionResolver } from './authenticate-request.ts';
import { authenticationOf, isAdmin, permits, type Access, type PermissionHolder } from '../auth/permissions.ts';
import { covers, refusedOver } from '../auth/rights.ts';

export interface RouteSpec {
  method: HTTPMethods;
  /** Path below the API base, Fastify style (`/identities/:id`). */
  url: string;
  operationId: string;
  tag: string;
  summary: string;
  /**
   * Who may call it (see `Access`): the session it needs, then the permission check run after validation;
   * a refusal answers 401 UNAUTHORIZED as upstream does.
   */
  access: Access;
  /**
   * The identities the operation acts on (changes, enrolls, resets, or reveals the secrets of), for callers
   * that are not admins: after the access rule passed, such a caller must also hold every right each of them
   * holds (`covers` in auth/rights.ts), or is refused with 401 naming `action`. Targets that do not exist are
   * left to the handler (404).
   */
  actsOn?: { action: string; targets: (req: FastifyRequest) => Iterable<PermissionHolder> | Promise<Iterable<PermissionHolder>> };
  body?: TSchema;
  /** Rewrites the parsed body before validation, for client quirks the operation accepts (rarely needed). */
  normalizeBody?: (body: unknown) => unknown;
  querystring?: TSchema;
  params?: TSchema;
  headers?: TSchema;
  /** Response body schemas by status. A `raw` entry means the handler writes its own bytes. */
  response: Record<number, TSchema | { raw: string }>;
  consumes?: string[];
  produces?: string[];
  handler: (req: FastifyRequest, reply: FastifyReply) => unknown;
}

export interface ApiDefinition {
  name: 'client' | 'management' | 'fabric';
  prefix: string;
  title: string;
  routes: RouteSpec[];
}

function isSchema(x: TSchema | { raw: string }): x is TSchema {
  return !('raw' in x && typeof (x as { raw: unknown }).raw === 'string' && Object.keys(x).length === 1);
}

function hasBody(req: FastifyRequest): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/** A body in a media type the operation does not consume answers 415, as upstream's framework does. */
function assertContentType(req: FastifyRequest, consumes: string[]): void {
  if (!hasBody(req)) return;
  const type = String(req.headers['content-type'] ?? 'application/octet-stream').split(';')[0].trim().toLowerCase();
  if (consumes.includes(type)) return;
  throw new ApiError('COULD_NOT_VALIDATE', {
    status: 415,
    cause: { field: 'Content-Type', reason: `unsupported media type "${type}", only [${consumes.join(' ')}] are allowed`, value: type },
  });
}

/** Whether an Accept header admits one of the media types an operation produces (no header admits all). */
export function acceptsAny(accept: string | undefined, produces: readonly string[]): boolean {
  // What nearly every client sends, answered without parsing.
  if (!accept || accept === 'application/json' || accept === '*/*' || !accept.trim()) return true;
  for (const range of accept.split(',')) {
    const [type, ...params] = range.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (q !== undefined && Number(q.slice(2)) === 0) continue;
    const [main, sub] = type.trim().split('/');
    for (const produced of produces) {
      const [pMain, pSub] = produced.split(';')[0].trim().toLowerCase().split('/');
      if ((main === '*' || main === pMain) && (sub === '*' || sub === pSub)) return true;
    }
  }
  return false;
}

/** 406 when the caller accepts none of the operation's media types, as upstream's content negotiation answers. */
function assertAcceptable(req: FastifyRequest, produces: readonly string[]): void {
  const accept = req.headers.accept;
  if (acceptsAny(accept, produces)) return;
  throw new ApiError('COULD_NOT_VALIDATE', {
    status: 406,
    cause: { field: 'Accept', reason: `unsupported media type requested, only [${produces.join(' ')}] are available`, value: String(accept) },
  });
}

/** Runs a hook step and reports to fastify's `done`: at once when it finished synchronously, else when its promise settles. */
function settle(step: () => void | Promise<void>, done: (err?: Error) => void): void {
  let pending: void | Promise<void>;
  try {
    pending = step();
  } catch (err) {
    done(err as Error);
    return;
  }
  if (pending) pending.then(() => done(), (err: unknown) => done(err as Error));
  else done();
}

export function mountApi(app: FastifyInstance, api: ApiDefinition, resolveSession: SessionResolver, resolveBearer?: BearerResolver): void {
  for (const route of api.routes) {
    const response: Record<number, TSchema> = {};
    for (const [status, s] of Object.entries(route.response)) if (isSchema(s)) response[Number(status)] = s;
    const schema = {
      ...(route.body ? { body: route.body } : {}),
      ...(route.querystring ? { querystring: route.querystring } : {}),
      ...(route.params ? { params: route.params } : {}),
      ...(route.headers ? { headers: route.headers } : {}),
      response,
    };
    const consumes = route.consumes ?? ['application/json'];
    const mode = authenticationOf(route.access);
    // JSON is always acceptable (errors are JSON; upstream serves its binary documents to JSON clients too).
    const produces = [...new Set([...(route.produces ?? []), 'application/json'])];
    app.route({
      method: route.method,
      url: api.prefix + route.url,
      schema,
      config: { operationId: route.operationId, api: api.name },
      // Callback-style hooks: most requests finish each step synchronously, without a promise per hook.
      onRequest: (req, _reply, done) =>
        settle(() => {
          assertAcceptable(req, produces);
          if (mode !== 'public') return authenticateRequest(req, resolveSession, mode, resolveBearer);
        }, done),
      preValidation: (req, _reply, done) =>
        settle(() => {
          assertContentType(req, consumes);
          if (route.normalizeBody && req.body !== undefined) req.body = route.normalizeBody(req.body);
        }, done),
      // The session hook already decided `partial` and `session`; every other rule checks the caller here.
      preHandler: mode === 'public' || (route.access === mode && !route.actsOn)
        ? undefined
        : (req, _reply, done) =>
            settle(() => {
              const caller = req.caller;
              if (!caller || !permits(route.access, caller.identity, caller.isPartial)) throw new ApiError('UNAUTHORIZED');
              if (!route.actsOn || isAdmin(caller.identity)) return;
              const action = route.actsOn.action;
              const check = (targets: Iterable<PermissionHolder>) => {
                for (const target of targets) if (!covers(caller.identity, target)) throw refusedOver(action, target);
              };
              const targets = route.actsOn.targets(req);
              if (targets instanceof Promise) return targets.then(check);
              check(targets);
            }, done),
      handler: async (req, reply) => route.handler(req, reply),
    });
  }
}
