/**
 * The HTTPS listener: one server for both APIs, TLS 1.2+, client certificates requested but not required
 * (the controller verifies chains itself). Also the cross-cutting wire behaviour every route shares:
 * legacy path rewriting, JSON body parsing, CORS, 404/405 in the error envelope, and the response
 * headers upstream sends.
 */
import type { TLSSocket } from 'node:tls';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { createRequire } from 'node:module';
import { posix } from 'node:path';
import { ApiError } from '../errors.ts';
import { compileValidator } from './validation.ts';
import { AdaptiveLimiter, admissionClass, type AdmissionSettings } from './admission.ts';
import { errorHandler, sendError } from './error-handler.ts';
import { mountApi, type ApiDefinition } from './route.ts';
import type { BearerResolver } from './authenticate-request.ts';
import type { SessionResolver } from './authenticate-request.ts';

export interface TlsMaterial {
  key: string;
  cert: string;
}

export interface ServerOptions {
  tls: TlsMaterial;
  logLevel: string;
  apis: ApiDefinition[];
  /** Routes outside the API bases (`/`, `/version`, `/.well-known/est/cacerts`). */
  rootRoutes: ApiDefinition;
  resolveSession: SessionResolver;
  /** Resolves an OIDC access token (`Authorization: Bearer`) when a request has no zt-session. */
  resolveBearer?: BearerResolver;
  /** Routes with wire rules of their own (the OIDC provider under `/oidc`), registered as they are. */
  extraRoutes?: (app: FastifyInstance) => void;
  instanceId: string;
  serverHeader: string;
  /** Runs first for every request (the controller brings in-memory state up to date, adds worker headers). */
  onRequest?: (req: FastifyRequest, reply: FastifyReply) => void | Promise<unknown>;
  /**
   * Takes the TLS connections that negotiated ALPN `ziti-ctrl` (routers' control channels share the API
   * port, as upstream's do); every other connection is HTTP.
   */
  controlChannel?: (socket: TLSSocket) => void;
  /** Admission limits (src/http/admission.ts); none when absent. */
  admission?: AdmissionSettings;
  /** Bounds against slow and greedy clients; Node's defaults when absent. */
  limits?: ConnectionLimits;
  /**
   * What a request that may have written waits for before its answer goes out: the store's flush of what it
   * committed (src/store/wal-flush.ts); undefined when nothing needs flushing.
   */
  durable?: () => Promise<void> | undefined;
}

export interface ConnectionLimits {
  /** A client must send its request headers within this many milliseconds (slow clients are cut off). */
  headersTimeoutMs: number;
  /** A whole request (headers and body) must arrive within this many milliseconds. */
  requestTimeoutMs: number;
  /** Most open connections; further ones are refused until some close. */
  maxConnections: number;
}

/** The ALPN name routers ask for on the control channel. */
export const CONTROL_CHANNEL_ALPN = 'ziti-ctrl';

const bodyLimit = 1024 * 1024;
const clientBase = '/edge/client/v1';

/**
 * The request path as routes see it: repeated slashes count as one and `.` / `..` segments are resolved, as
 * upstream cleans paths (the admin console asks for `.../identities/<id>//`); requests that name no API are
 * the client API's (legacy SDKs call `/authenticate`, `/services`...), and `/edge/v1/...` is the older
 * client prefix.
 */
export function rewriteLegacyPath(url: string): string {
  const q = url.indexOf('?');
  const rawPath = q < 0 ? url : url.slice(0, q);
  const query = q < 0 ? '' : url.slice(q);
  const path = rawPath.includes('//') || rawPath.includes('/.') ? posix.normalize(rawPath) : rawPath;
  if (path !== rawPath) url = path + query;
  if (path === '/' || path === '/version' || path === '/.well-known/est/cacerts') return url;
  if (path === '/oidc' || path.startsWith('/oidc/')) return url;
  if (path.startsWith('/edge/v1/') || path === '/edge/v1') return clientBase + path.slice('/edge/v1'.length) + query;
  if (path.startsWith('/edge') || path.startsWith('/fabric') || path.startsWith('/.well-known')) return url;
  return clientBase + path + query;
}

const corsAllowedHeaders = new Set(['content-type', 'accept', 'authorization', 'zt-session']);
const corsAlwaysOk = new Set(['accept', 'accept-language', 'content-language', 'origin']);
const corsMethods = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);

function canonicalHeader(name: string): string {
  return name
    .split('-')
    .map((p) => (p ? p[0].toUpperCase() + p.slice(1).toLowerCase() : p))
    .join('-');
}

/** Method → compiled path patterns, to tell 405 (known path, other method) from 404. */
class RouteIndex {
  private readonly patterns: Array<{ method: string; re: RegExp }> = [];
  add(method: string | string[], url: string): void {
    const re = new RegExp('^' + url.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[^/]+/g, '[^/]+').replace(/\*/g, '.*') + '/?$');
    for (const m of Array.isArray(method) ? method : [method]) if (m !== 'OPTIONS' && m !== 'HEAD') this.patterns.push({ method: m, re });
  }
  methodsFor(path: string): string[] {
    return [...new Set(this.patterns.filter((p) => p.re.test(path)).map((p) => p.method))];
  }
}

function registerCors(app: FastifyInstance): void {
  app.options('*', async (req, reply) => {
    const origin = req.headers.origin;
    if (!origin) return reply.code(200).send();
    const method = req.headers['access-control-request-method'];
    if (!method) return reply.code(400).send();
    const m = String(method).toUpperCase();
    if (!corsMethods.has(m)) return reply.code(405).send();
    const requested = String(req.headers['access-control-request-headers'] ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean);
    if (requested.some((h) => !corsAllowedHeaders.has(h) && !corsAlwaysOk.has(h))) return reply.code(403).send();
    reply.header('access-control-allow-origin', '*').header('access-control-allow-credentials', 'true');
    const nonSimple = requested.filter((h) => !corsAlwaysOk.has(h));
    if (nonSimple.length) reply.header('access-control-allow-headers', nonSimple.map(canonicalHeader).join(','));
    if (m === 'PUT' || m === 'PATCH' || m === 'DELETE') reply.header('access-control-allow-methods', m);
    return reply.code(200).send();
  });
}

const maxJsonDepth = 64;

/** True when brackets outside strings nest deeper than `max`: deep documents would exhaust validator stacks. */
export function nestingDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) {
      if (++depth > max) return true;
    } else if (c === 93 || c === 125) depth--;
  }
  return false;
}

const NUL = '\u0000';

/** The path (`a.b[2]`) and value of the first string, or key, holding the NUL character; undefined when none does. */
export function firstNul(value: unknown, path = ''): { field: string; value: string } | undefined {
  if (typeof value === 'string') return value.includes(NUL) ? { field: path, value } : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = firstNul(value[i], `${path}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, member] of Object.entries(value)) {
      const field = path ? `${path}.${key}` : key;
      if (key.includes(NUL)) return { field, value: key };
      const found = firstNul(member, field);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * No stored text may hold U+0000: PostgreSQL can not keep it in text or jsonb, and no name, tag or setting
 * needs it. Refused the same way on both stores, so they give the same answers.
 */
function nulRefused(field: string, value: string): ApiError {
  return new ApiError('COULD_NOT_VALIDATE', { cause: { field, reason: 'must not contain the NUL character (U+0000)', value } });
}

function registerJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  // An empty JSON body is "no body" (authenticate?method=cert sends none); malformed JSON is a parse error.
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit }, (_req, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    if (nestingDepthExceeds(text, maxJsonDepth)) {
      return done(new ApiError('COULD_NOT_PARSE_BODY', { cause: { code: 'UNHANDLED', message: `JSON nesting deeper than ${maxJsonDepth}` } }), undefined);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      done(
        new ApiError('COULD_NOT_PARSE_BODY', {
          cause: { code: 'UNHANDLED', message: `parsing body body from "" failed, because ${(e as Error).message}` },
        }),
        undefined,
      );
      return;
    }
    // JSON can carry NUL only as the escape \u0000 (a raw control character is not JSON).
    const nul = text.includes('\\u0000') ? firstNul(parsed) : undefined;
    if (nul) return done(nulRefused(nul.field, nul.value), undefined);
    done(null, parsed);
  });
}

type RouteSerializer = (route: { method: string; url: string; httpStatus: string; schema?: unknown }) => (data: unknown) => string;
type SerializerFactory = (externalSchemas?: unknown, serializerOpts?: object) => RouteSerializer;

/** Fastify's own response serializer factory (fast-json-stringify), resolved from where Fastify resolves it. */
const defaultSerializers = createRequire(createRequire(import.meta.url).resolve('fastify'))('@fastify/fast-json-stringify-compiler') as () => SerializerFactory;

/**
 * Fastify's serializers, each built on the first response it serves instead of at start: a few hundred
 * routes × status codes would otherwise cost a large share of the controller's cold start.
 */
const lazySerializers: SerializerFactory = (externalSchemas, serializerOpts) => {
  const compile = defaultSerializers()(externalSchemas, serializerOpts);
  return (route) => {
    let serialize: ((data: unknown) => string) | undefined;
    return (data) => (serialize ??= compile(route))(data);
  };
};

/**
 * Puts a dispatcher in front of the HTTPS server's own connection handler: a connection that chose the control
 * channel's ALPN never reaches HTTP parsing (nor its timeouts); everything else goes on as before.
 */
function divertControlChannels(server: import('node:https').Server, take: (socket: TLSSocket) => void): void {
  const http = server.listeners('secureConnection') as Array<(socket: TLSSocket) => void>;
  server.removeAllListeners('secureConnection');
  server.on('secureConnection', (socket: TLSSocket) => {
    if (socket.alpnProtocol === CONTROL_CHANNEL_ALPN) take(socket);
    else for (const listener of http) listener.call(server, socket);
  });
}

export function buildServer(opts: ServerOptions): FastifyInstance {
  const app = Fastify({
    https: {
      key: opts.tls.key,
      cert: opts.tls.cert,
      requestCert: true,
      rejectUnauthorized: false,
      minVersion: 'TLSv1.2',
      ALPNProtocols: opts.controlChannel ? ['http/1.1', CONTROL_CHANNEL_ALPN] : ['http/1.1'],
      // How often header and request timeouts are enforced (Node checks every 30 s by default).
      connectionsCheckingInterval: 1000,
    },
    logger: { level: opts.logLevel, redact: ['req.headers["zt-session"]', 'req.headers.authorization'] },
    // Per-request log lines would cost time on every call and risk carrying tokens; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit,
    rewriteUrl: (req) => rewriteLegacyPath(req.url ?? '/'),
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: false, maxParamLength: 500 },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    ajv: undefined,
    schemaController: { compilersFactory: { buildSerializer: lazySerializers } },
  });
  if (opts.controlChannel) divertControlChannels(app.server as import('node:https').Server, opts.controlChannel);
  // A connection keeps the client certificate it presented: no renegotiation (so it may be read once per connection).
  app.server.on('secureConnection', (socket: TLSSocket) => socket.disableRenegotiation());
  if (opts.limits) {
    const server = app.server as import('node:https').Server;
    server.headersTimeout = opts.limits.headersTimeoutMs;
    server.requestTimeout = opts.limits.requestTimeoutMs;
    server.maxConnections = opts.limits.maxConnections;
  }
  app.setValidatorCompiler(compileValidator);
  app.setErrorHandler(errorHandler);
  registerJsonParser(app);
  // Legacy enroll requests carry a raw PEM CSR in these media types; routes that do not consume them still answer 415.
  app.addContentTypeParser(['application/x-pem-file', 'application/pkcs7'], { parseAs: 'string', bodyLimit }, (_req, body, done) => done(null, body));
  // HTML forms and OAuth clients (the OIDC routes); a field given twice becomes a list. Other routes still answer 415.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit }, (_req, body, done) => {
    const text = body as string;
    if (text.includes('%00') || text.includes('\0')) return done(nulRefused('body', text.slice(0, 64)), undefined);
    const out: Record<string, string | string[]> = {};
    for (const [key, value] of new URLSearchParams(text)) {
      const had = out[key];
      out[key] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value];
    }
    done(null, out);
  });

  const routes = new RouteIndex();
  app.addHook('onRoute', (r) => routes.add(r.method, r.url));

  const limiters = opts.admission ? { auth: new AdaptiveLimiter(opts.admission.auth), write: new AdaptiveLimiter(opts.admission.writes) } : undefined;

  app.addHook('onRequest', (req: FastifyRequest, reply, done) => {
    if (req.url.includes('%00')) {
      done(nulRefused('url', req.url));
      return;
    }
    if (limiters) {
      const kind = admissionClass(req.method, req.routeOptions.url ?? '');
      if (kind) {
        const release = limiters[kind].acquire();
        if (!release) {
          done(new ApiError(kind === 'auth' ? 'RATE_LIMITED' : 'SERVER_TOO_MANY_REQUESTS'));
          return;
        }
        reply.raw.once('close', () => release());
      }
    }
    try {
      const pending = opts.onRequest?.(req, reply);
      reply.header('server', opts.serverHeader).header('ziti-instance-id', opts.instanceId);
      if (req.headers.origin) reply.header('access-control-allow-origin', '*').header('access-control-allow-credentials', 'true');
      if (pending) {
        pending.then(() => done(), (err: unknown) => done(err as Error));
        return;
      }
    } catch (err) {
      done(err as Error);
      return;
    }
    done();
  });

  // JSON goes out as `application/json` with no charset parameter, as upstream sends it (JSON is UTF-8 by definition).
  // An answer to a request that may have written waits until what it committed is on disk.
  const durable = opts.durable;
  app.addHook('onSend', (req, reply, payload, done) => {
    if (reply.getHeader('content-type') === 'application/json; charset=utf-8') reply.header('content-type', 'application/json');
    const withhold = (err: unknown) => {
      req.log.error({ err: err instanceof Error ? err.message : String(err) }, 'the store could not flush a write to disk; the answer is withheld');
      reply.raw.destroy();
    };
    let flushed: Promise<void> | undefined;
    try {
      flushed = durable && req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'OPTIONS' ? durable() : undefined;
    } catch (err) {
      withhold(err);
      return;
    }
    if (!flushed) {
      done(null, payload);
      return;
    }
    flushed.then(() => done(null, payload), withhold);
  });

  registerCors(app);
  for (const api of [opts.rootRoutes, ...opts.apis]) mountApi(app, api, opts.resolveSession, opts.resolveBearer);
  opts.extraRoutes?.(app);

  app.setNotFoundHandler((req, reply) => {
    const path = (req.url ?? '/').split('?')[0];
    const methods = routes.methodsFor(path);
    if (methods.length > 0) {
      return sendError(
        reply,
        new ApiError('METHOD_NOT_ALLOWED', {
          cause: { code: 'UNHANDLED', message: `method ${req.method} is not allowed, but [${methods.join(',')}] are` },
        }),
      );
    }
    return sendError(reply, new ApiError('NOT_FOUND', { cause: { code: 'UNHANDLED', message: `path ${path} was not found` } }));
  });
  return app;
}
