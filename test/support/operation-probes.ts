/**
 * Probes for every operation the reference specs declare: the request to send (URL with placeholder path
 * ids, required query and header parameters, and a body that satisfies the declared body schema) and
 * whether the operation asks for credentials. Used by the authorization matrix and the coverage test, so
 * both stay generic: an operation added to the spec is probed without touching them.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { ApiName } from './reference-spec.ts';

type Schema = Record<string, any>;

export interface OperationProbe {
  api: ApiName;
  method: string;
  /** Path template as the spec writes it, e.g. `/identities/{id}`. */
  path: string;
  operationId: string;
  /** Path below the API base with every path parameter replaced by a placeholder id, plus required query. */
  url: string;
  /** True when the operation lists no credential (security absent or empty). */
  isPublic: boolean;
  headers: Record<string, string>;
  /** A JSON body, or a raw text body with its content type, or nothing. */
  body?: unknown;
  rawBody?: string;
  contentType?: string;
}

export const PLACEHOLDER_ID = 'no-such-id-0000';

const referenceDir = new URL('../shared/reference/edge-api-v0.27.0/', new URL('../../', import.meta.url));
const documents = new Map<ApiName, Schema>();

function loadDocument(api: ApiName): Schema {
  let doc = documents.get(api);
  if (!doc) {
    const floatTag = { tag: 'tag:yaml.org,2002:float', resolve: (text: string) => Number(text) };
    doc = parseYaml(readFileSync(new URL(`${api}.yml`, referenceDir), 'utf8'), { customTags: (tags) => [floatTag, ...tags] }) as Schema;
    documents.set(api, doc);
  }
  return doc;
}

function resolve(doc: Schema, schema: Schema): Schema {
  let s = schema;
  while (s && typeof s.$ref === 'string') s = doc.definitions[s.$ref.replace('#/definitions/', '')];
  return s ?? {};
}

/** Definitions that extend a discriminated base; the first one found stands in for the base. */
function firstSubtype(doc: Schema, baseName: string): string | undefined {
  const ref = `#/definitions/${baseName}`;
  return Object.entries(doc.definitions as Record<string, Schema>).find(
    ([, def]) => Array.isArray(def.allOf) && def.allOf.some((part: Schema) => part.$ref === ref),
  )?.[0];
}

/** A value that satisfies the schema: required members only, the first enum value, minimal sizes. */
export function sampleValue(doc: Schema, schema: Schema, depth = 0): unknown {
  if (depth > 12) return undefined;
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.replace('#/definitions/', '');
    const def = doc.definitions[name] as Schema;
    if (typeof def.discriminator === 'string') {
      const sub = firstSubtype(doc, name);
      if (sub) {
        const value = sampleValue(doc, { $ref: `#/definitions/${sub}` }, depth + 1) as Record<string, unknown>;
        const subDef = doc.definitions[sub] as Schema;
        return { ...value, [def.discriminator]: subDef['x-class'] ?? sub };
      }
    }
    return sampleValue(doc, def, depth + 1);
  }
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if (Array.isArray(schema.allOf)) {
    const merged: Record<string, unknown> = {};
    for (const part of schema.allOf as Schema[]) {
      // A part that names the discriminated base contributes the base's own members, not another subtype.
      const value = sampleValue(doc, resolve(doc, part), depth + 1);
      if (value && typeof value === 'object' && !Array.isArray(value)) Object.assign(merged, value);
    }
    return merged;
  }
  const type = schema.type ?? (schema.properties ? 'object' : undefined);
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const name of (schema.required as string[] | undefined) ?? []) {
        const prop = (schema.properties ?? {})[name] as Schema | undefined;
        out[name] = prop ? sampleValue(doc, prop, depth + 1) : 'x';
      }
      return out;
    }
    case 'array': {
      const count = Number(schema.minItems ?? 0);
      return Array.from({ length: count }, () => sampleValue(doc, resolve(doc, schema.items ?? {}), depth + 1));
    }
    case 'integer':
    case 'number':
      return Number(schema.minimum ?? 1);
    case 'boolean':
      return false;
    case 'string': {
      if (schema.format === 'date-time') return new Date(Date.now() + 3_600_000).toISOString();
      const min = Number(schema.minLength ?? 1);
      return 'sample-value'.padEnd(min, 'x').slice(0, Math.max(min, Number(schema.maxLength ?? 12)));
    }
    default:
      return {};
  }
}

/** A probe per operation of `api`, in spec order. */
export function operationProbes(api: ApiName): OperationProbe[] {
  const doc = loadDocument(api);
  const probes: OperationProbe[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Schema>)) {
    for (const [method, op] of Object.entries(item)) {
      if (method === 'parameters' || typeof op !== 'object') continue;
      const params = [...((item.parameters as Schema[]) ?? []), ...((op.parameters as Schema[]) ?? [])];
      const query = new URLSearchParams();
      const headers: Record<string, string> = {};
      let body: unknown;
      let rawBody: string | undefined;
      let contentType: string | undefined;
      for (const p of params) {
        if (!p.required) continue;
        const value = Array.isArray(p.enum) ? String(p.enum[0]) : 'sample-value';
        if (p.in === 'query') query.set(p.name, p.name === 'method' && path === '/authenticate' ? 'password' : value);
        else if (p.in === 'header') headers[p.name] = value;
      }
      const bodyParam = params.find((p) => p.in === 'body');
      const consumes = (op.consumes as string[] | undefined) ?? (doc.consumes as string[] | undefined) ?? ['application/json'];
      if (bodyParam) {
        const schema = resolve(doc, bodyParam.schema ?? {});
        if (schema.type === 'string' && !consumes.includes('application/json')) {
          rawBody = 'sample-value';
          contentType = consumes[0];
        } else {
          body = sampleValue(doc, bodyParam.schema ?? {});
        }
      }
      const security = op.security ?? doc.security;
      const qs = query.toString();
      probes.push({
        api,
        method: method.toUpperCase(),
        path,
        operationId: op.operationId ?? `${method}${path}`,
        url: path.replace(/\{[^}]+\}/g, PLACEHOLDER_ID) + (qs ? `?${qs}` : ''),
        isPublic: !Array.isArray(security) || security.length === 0,
        headers,
        body,
        rawBody,
        contentType,
      });
    }
  }
  return probes;
}

/** The base path of an API (`/edge/management/v1`). */
export function basePath(api: ApiName): string {
  return loadDocument(api).basePath as string;
}
