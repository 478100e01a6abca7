/**
 * Generates the OpenAPI (swagger 2.0, like the upstream documents clients know) description of one API
 * from the same RouteSpec list that is mounted, so the served document always matches what is served.
 * Nullable type arrays become `x-nullable`, Fastify `:param` paths become `{param}`.
 */
import type { TSchema } from '@sinclair/typebox';
import type { ApiDefinition, RouteSpec } from './route.ts';

type Json = Record<string, unknown>;

/** Converts our JSON Schema (draft-07 style) into the swagger 2.0 subset. */
export function toSwaggerSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(toSwaggerSchema);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema as Json)) {
    if (key === 'type' && Array.isArray(value)) {
      const types = value.filter((t) => t !== 'null');
      if (types.length === 1) out.type = types[0];
      if (value.includes('null')) out['x-nullable'] = true;
      continue;
    }
    if (key === 'anyOf' && Array.isArray(value) && value.some((v) => (v as Json)?.type === 'null')) {
      const rest = value.filter((v) => (v as Json)?.type !== 'null');
      Object.assign(out, toSwaggerSchema(rest.length === 1 ? rest[0] : { anyOf: rest }) as Json, { 'x-nullable': true });
      continue;
    }
    if (key === 'const') {
      out.enum = [value];
      continue;
    }
    out[key] = typeof value === 'object' ? toSwaggerSchema(value) : value;
  }
  return out;
}

function swaggerPath(url: string): string {
  return url.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
}

function objectParams(schema: TSchema | undefined, location: 'query' | 'path' | 'header'): Json[] {
  if (!schema) return [];
  const props = ((schema as Json).properties ?? {}) as Record<string, Json>;
  const required = new Set(((schema as Json).required ?? []) as string[]);
  return Object.entries(props).map(([name, s]) => {
    const sw = toSwaggerSchema(s) as Json;
    const p: Json = { name, in: location, required: location === 'path' || required.has(name), type: sw.type ?? 'string' };
    if (sw.items) {
      p.items = sw.items;
      p.collectionFormat = 'multi';
    }
    if (sw.enum) p.enum = sw.enum;
    return p;
  });
}

function operation(route: RouteSpec): Json {
  const parameters = [
    ...objectParams(route.params, 'path'),
    ...objectParams(route.querystring, 'query'),
    ...objectParams(route.headers, 'header'),
  ];
  if (route.body) parameters.push({ name: 'body', in: 'body', required: true, schema: toSwaggerSchema(route.body) });
  const responses: Json = {};
  for (const [status, s] of Object.entries(route.response)) {
    const raw = (s as { raw?: string }).raw;
    responses[status] = raw ? { description: raw } : { description: 'success', schema: toSwaggerSchema(s) };
  }
  responses['400'] = { description: 'invalid input (COULD_NOT_VALIDATE, INVALID_FILTER...)' };
  if (route.access !== 'public') responses['401'] = { description: 'no valid session, or not permitted' };
  const op: Json = { operationId: route.operationId, tags: [route.tag], summary: route.summary, parameters, responses };
  if (route.access !== 'public') op.security = [{ ztSession: [] }];
  if (route.consumes) op.consumes = route.consumes;
  if (route.produces) op.produces = route.produces;
  return op;
}

export function buildOpenApiDocument(api: ApiDefinition, version: string, host: string): Json {
  const paths: Record<string, Json> = {};
  for (const route of api.routes) {
    const path = swaggerPath(route.url);
    paths[path] ??= {};
    paths[path][route.method.toString().toLowerCase()] = operation(route);
  }
  return {
    swagger: '2.0',
    info: { title: api.title, version },
    host,
    basePath: api.prefix,
    schemes: ['https'],
    consumes: ['application/json'],
    produces: ['application/json'],
    securityDefinitions: { ztSession: { type: 'apiKey', in: 'header', name: 'zt-session' } },
    paths,
  };
}
