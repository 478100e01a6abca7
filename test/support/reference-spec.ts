/**
 * Test oracle over the upstream Edge API reference specs (swagger 2.0, edge-api v0.27.0): lists the operations
 * each API declares and asserts that a response body matches the schema the reference declares for it. The
 * specs live outside the repository (`<repo>/../shared/reference/edge-api-v0.27.0/{client,management}.yml`) and
 * are read only by tests; product code never imports this module. Swagger 2.0 is not JSON Schema, so each spec is
 * translated once into a draft-07 document that Ajv understands: `x-nullable: true` admits null, vendor
 * extensions and examples are dropped, formats other than date-time/uuid/uri are ignored (upstream's `uri` is
 * checked as a URI reference, because links are relative such as `./identities/x`), a map value declared as a
 * bare `type: object` accepts any value (go-swagger reads it as Go `interface{}`), and a swagger
 * `discriminator` dispatches to the subtype whose `x-class` (or definition name) equals the discriminating
 * property. Compiled validators are cached per API and schema.
 */

import { AssertionError } from 'node:assert';
import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import { parse as parseYaml } from 'yaml';

export type ApiName = 'client' | 'management';

export interface ReferenceOperation {
  /** Upper-case HTTP method, e.g. `GET`. */
  method: string;
  /** Path template relative to the API's basePath, e.g. `/identities/{id}`. */
  path: string;
  /**
   * The spec's operationId. One operation per API (`DELETE /current-api-session`) declares none; it gets an id
   * derived from method and path (`deleteCurrentApiSession`), which collides with no declared id.
   */
  operationId: string;
}

export interface MatchOptions {
  /**
   * JSON Pointers into the body (`*` matches any array index or map key) where `null` is tolerated although the
   * reference does not declare the field nullable. For documented upstream wire quirks only, e.g. `/meta` on
   * `GET /current-identity` (upstream sends `"meta": null`). A pointer the schema cannot reach is a test bug and throws.
   */
  allowNullAt?: readonly string[];
}

type Schema = Record<string, unknown>;

interface SwaggerOperation {
  operationId?: string;
  responses?: Record<string, { schema?: Schema }>;
}

interface SwaggerDocument {
  basePath: string;
  paths: Record<string, Record<string, SwaggerOperation>>;
  definitions: Record<string, Schema>;
}

interface LoadedApi {
  document: SwaggerDocument;
  /** Absolute `$id` under which the translated definitions are registered with Ajv. */
  documentId: string;
  definitions: Record<string, Schema>;
  validators: Map<string, ValidateFunction>;
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'patch', 'delete', 'head', 'options']);
/** Formats Ajv checks; every other swagger format (int64, byte, url, custom, empty) is dropped as an annotation. */
const CHECKED_FORMATS = new Set(['date-time', 'uuid', 'uri']);
/** Keywords that carry no validation meaning in swagger 2.0 schemas and would only confuse Ajv. */
const DROPPED_KEYWORDS = new Set(['discriminator', 'example', 'xml', 'externalDocs']);
/** Suffix of the plain (non-dispatching) copy of a discriminated base definition; subtypes `allOf` it. */
const BASE_SUFFIX = '__base';

const referenceDir = new URL('../shared/reference/edge-api-v0.27.0/', new URL('../../', import.meta.url));
const ajv = createAjv();
const loadedApis = new Map<ApiName, LoadedApi>();

/** Every operation the reference declares for `api`, in spec order (59 client, 196 management). */
export function referenceOperations(api: ApiName): ReferenceOperation[] {
  const { document } = loadApi(api);
  const operations: ReferenceOperation[] = [];
  for (const [path, pathItem] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(pathItem)) {
      if (!HTTP_METHODS.has(method)) continue;
      operations.push({ method: method.toUpperCase(), path, operationId: operation.operationId ?? deriveOperationId(method, path) });
    }
  }
  return operations;
}

/**
 * The translated draft-07 schema the reference declares for a response, or `undefined` when the response exists
 * but declares no body (e.g. the MFA QR-code PNG). Throws when the operation or status is not declared.
 */
export function responseSchemaFor(api: ApiName, method: string, pathTemplate: string, status: number): Schema | undefined {
  const loaded = loadApi(api);
  const operation = findOperation(loaded.document, method, pathTemplate);
  const response = operation.responses?.[String(status)];
  if (!response) {
    const declared = Object.keys(operation.responses ?? {}).join(', ');
    throw new Error(`${api} reference declares no ${status} response for ${method.toUpperCase()} ${pathTemplate} (declared: ${declared})`);
  }
  return response.schema === undefined ? undefined : translateSchema(response.schema, loaded.documentId);
}

/**
 * Throws an AssertionError listing every Ajv error when `body` does not match the schema the reference declares for
 * (method, path template, status). The template may carry the basePath and any parameter names. Throws a plain
 * Error when the reference declares no such operation/response or no body schema for it.
 */
export function assertMatchesReference(
  api: ApiName, method: string, pathTemplate: string, status: number, body: unknown, options: MatchOptions = {},
): void {
  const subject = `${api} ${method.toUpperCase()} ${pathTemplate} → ${status}`;
  const validate = cachedValidator(api, `response ${subject}`, options, () => {
    const schema = responseSchemaFor(api, method, pathTemplate, status);
    if (schema === undefined) throw new Error(`${subject}: the reference declares no response body schema`);
    return schema;
  });
  assertValid(validate, body, subject);
}

/** As assertMatchesReference, selecting the schema by definition name, e.g. ('management', 'identityDetail'). */
export function assertMatchesDefinition(api: ApiName, definition: string, value: unknown, options: MatchOptions = {}): void {
  const loaded = loadApi(api);
  if (!(definition in loaded.document.definitions)) throw new Error(`${api} reference has no definition "${definition}"`);
  const validate = cachedValidator(api, `definition ${definition}`, options, () => definitionRef(loaded, definition));
  assertValid(validate, value, `${api} definition ${definition}`);
}

// ---------------------------------------------------------------------------------------------------------------
// Loading and translation

function createAjv(): Ajv {
  const instance = new Ajv({ strict: false, allErrors: true, validateFormats: true });
  addFormats.default(instance, ['date-time', 'uuid']);
  instance.addFormat('uri', fullFormats['uri-reference']);
  return instance;
}

function loadApi(api: ApiName): LoadedApi {
  const cached = loadedApis.get(api);
  if (cached) return cached;
  const document = readSwagger(new URL(`${api}.yml`, referenceDir));
  const documentId = `https://portcullis.invalid/reference/${api}.json`;
  const definitions = translateDefinitions(document.definitions, documentId);
  ajv.addSchema({ $id: documentId, definitions });
  const loaded: LoadedApi = { document, documentId, definitions, validators: new Map() };
  loadedApis.set(api, loaded);
  return loaded;
}

/** The specs write some numbers as `!!float 1`, which YAML 1.2's core schema leaves as the string "1". */
function readSwagger(file: URL): SwaggerDocument {
  const floatTag = { tag: 'tag:yaml.org,2002:float', resolve: (text: string) => Number(text) };
  return parseYaml(readFileSync(file, 'utf8'), { customTags: (tags) => [floatTag, ...tags] }) as SwaggerDocument;
}

/**
 * Members a definition declares required that the upstream controller never sends (read from its answers): left
 * out of `required`, so a body shaped as upstream's matches. Declared nowhere else.
 */
const NEVER_SENT: Record<string, readonly string[]> = {
  apiSessionDetail: ['cachedUpdatedAt'],
  enrollmentDetail: ['details'],
};

function withoutRequired(schema: Schema, members: readonly string[]): Schema {
  const out: Schema = { ...schema };
  if (Array.isArray(out.required)) out.required = (out.required as string[]).filter((m) => !members.includes(m));
  if (Array.isArray(out.allOf)) out.allOf = (out.allOf as Schema[]).map((part) => withoutRequired(part, members));
  return out;
}

function translateDefinitions(raw: Record<string, Schema>, documentId: string): Record<string, Schema> {
  const definitions: Record<string, Schema> = {};
  for (const [name, schema] of Object.entries(raw)) {
    const translated = translateSchema(schema, documentId);
    definitions[name] = NEVER_SENT[name] ? withoutRequired(translated, NEVER_SENT[name]) : translated;
  }
  for (const [baseName, base] of Object.entries(raw)) {
    if (typeof base.discriminator !== 'string') continue;
    const subtypes = findSubtypes(raw, baseName);
    if (subtypes.length === 0) continue;
    definitions[baseName + BASE_SUFFIX] = definitions[baseName];
    for (const subtype of subtypes) definitions[subtype.name] = pointAllOfAtBase(definitions[subtype.name], documentId, baseName);
    definitions[baseName] = dispatchingBase(documentId, baseName, base.discriminator, subtypes);
  }
  return definitions;
}

/**
 * Swagger 2.0 schema → draft-07 schema. Property maps are walked by key so a property named `example` survives.
 * A keyword whose value is null (management `controllerSettingsList.items: null`) is treated as absent.
 */
function translateSchema(schema: Schema, documentId: string): Schema {
  if (typeof schema.$ref === 'string') return nullableIf(schema, { $ref: absoluteRef(schema.$ref, documentId) });
  const out: Schema = {};
  for (const [keyword, value] of Object.entries(schema)) {
    if (value === null || keyword.startsWith('x-') || DROPPED_KEYWORDS.has(keyword)) continue;
    if (keyword === 'format' && !CHECKED_FORMATS.has(String(value))) continue;
    out[keyword] = translateKeyword(keyword, value, documentId);
  }
  return nullableIf(schema, out);
}

function translateKeyword(keyword: string, value: unknown, documentId: string): unknown {
  const child = (s: unknown) => translateSchema(s as Schema, documentId);
  switch (keyword) {
    case 'properties':
      return Object.fromEntries(Object.entries(value as Record<string, Schema>).map(([k, s]) => [k, child(s)]));
    case 'additionalProperties':
      if (isBareObject(value)) return {};
      return isSchemaObject(value) ? child(value) : value;
    case 'items':
      return isSchemaObject(value) ? child(value) : value;
    case 'allOf':
      return (value as Schema[]).map(child);
    default:
      return value;
  }
}

/**
 * go-swagger reads a map value declared as a bare `type: object` as Go `interface{}`, and upstream puts scalars
 * there (tag values such as `"prod"`, service config values), so such a value is translated to "anything".
 */
function isBareObject(value: unknown): boolean {
  if (!isSchemaObject(value) || value.type !== 'object') return false;
  return Object.keys(value).every((k) => k === 'type' || k === 'description' || k === 'example' || k.startsWith('x-'));
}

function nullableIf(source: Schema, translated: Schema): Schema {
  return source['x-nullable'] === true ? admitNull(translated) : translated;
}

/** Widens a translated schema to also accept null; a plain typed schema keeps flat, readable errors. */
function admitNull(schema: Schema): Schema {
  if (typeof schema.type === 'string' && schema.$ref === undefined && schema.allOf === undefined) {
    const widened: Schema = { ...schema, type: [schema.type, 'null'] };
    if (Array.isArray(schema.enum)) widened.enum = [...schema.enum, null];
    return widened;
  }
  return { anyOf: [{ type: 'null' }, schema] };
}

function absoluteRef(ref: string, documentId: string): string {
  if (!ref.startsWith('#/definitions/')) throw new Error(`unsupported $ref ${ref} in ${documentId}`);
  return documentId + ref;
}

interface Subtype { name: string; value: string }

/** Definitions that extend `baseName` through `allOf`; their discriminator value is `x-class`, else their name. */
function findSubtypes(raw: Record<string, Schema>, baseName: string): Subtype[] {
  const baseRef = `#/definitions/${baseName}`;
  return Object.entries(raw)
    .filter(([, schema]) => Array.isArray(schema.allOf) && (schema.allOf as Schema[]).some((part) => part.$ref === baseRef))
    .map(([name, schema]) => ({ name, value: typeof schema['x-class'] === 'string' ? schema['x-class'] : name }));
}

/** Subtypes must extend the plain base, not the dispatching one, or validation would recurse forever. */
function pointAllOfAtBase(subtype: Schema, documentId: string, baseName: string): Schema {
  if (!Array.isArray(subtype.allOf)) throw new Error(`subtype of ${baseName} is not a plain allOf; cannot dispatch`);
  const baseRef = `${documentId}#/definitions/${baseName}`;
  const allOf = (subtype.allOf as Schema[]).map((part) =>
    part.$ref === baseRef ? { $ref: baseRef + BASE_SUFFIX } : part);
  return { ...subtype, allOf };
}

/** The base as referenced from elsewhere: its own rules, a known discriminator value, and that subtype's rules. */
function dispatchingBase(documentId: string, baseName: string, property: string, subtypes: Subtype[]): Schema {
  const ref = (name: string) => ({ $ref: `${documentId}#/definitions/${name}` });
  return {
    allOf: [
      ref(baseName + BASE_SUFFIX),
      { properties: { [property]: { enum: subtypes.map((s) => s.value) } } },
      ...subtypes.map((s) => ({
        if: { properties: { [property]: { const: s.value } }, required: [property] },
        then: ref(s.name),
      })),
    ],
  };
}

function definitionRef(loaded: LoadedApi, definition: string): Schema {
  return { $ref: `${loaded.documentId}#/definitions/${definition}` };
}

function findOperation(document: SwaggerDocument, method: string, pathTemplate: string): SwaggerOperation {
  const wanted = normalizeTemplate(stripBasePath(pathTemplate, document.basePath));
  const pathItem = Object.entries(document.paths).find(([path]) => normalizeTemplate(path) === wanted)?.[1];
  const operation = pathItem?.[method.toLowerCase()];
  if (!operation || !HTTP_METHODS.has(method.toLowerCase())) {
    throw new Error(`reference (basePath ${document.basePath}) declares no operation ${method.toUpperCase()} ${pathTemplate}`);
  }
  return operation;
}

function stripBasePath(path: string, basePath: string): string {
  return path.startsWith(basePath + '/') ? path.slice(basePath.length) : path;
}

/** Parameter names do not matter for matching: `/identities/{identityId}` finds `/identities/{id}`. */
function normalizeTemplate(path: string): string {
  return path.replace(/\{[^}]*\}/g, '{}');
}

function deriveOperationId(method: string, path: string): string {
  const words = path.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return method.toLowerCase() + words.map((w) => w[0].toUpperCase() + w.slice(1)).join('');
}

// ---------------------------------------------------------------------------------------------------------------
// Null tolerance for documented wire quirks (MatchOptions.allowNullAt)

function withNullAllowed(loaded: LoadedApi, schema: Schema, pointers: readonly string[]): Schema {
  let patched = schema;
  for (const pointer of pointers) {
    const result = admitNullAlong(loaded, patched, parsePointer(pointer));
    if (!result.found) throw new Error(`allowNullAt: ${pointer} is not reachable in the reference schema`);
    patched = result.schema;
  }
  return patched;
}

function parsePointer(pointer: string): string[] {
  if (!pointer.startsWith('/')) throw new Error(`allowNullAt: "${pointer}" is not a JSON Pointer`);
  return pointer.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/**
 * Copies the schema along one instance path (inlining the `$ref`s on the way, leaving all others shared) and
 * widens the schema found at its end to admit null. Composite keywords are searched branch by branch.
 */
function admitNullAlong(loaded: LoadedApi, schema: Schema, segments: string[]): { schema: Schema; found: boolean } {
  if (typeof schema.$ref === 'string') return admitNullAlong(loaded, resolveRef(loaded, schema.$ref), segments);
  if (segments.length === 0) return { schema: { anyOf: [{ type: 'null' }, schema] }, found: true };
  const [segment, ...rest] = segments;
  const copy: Schema = { ...schema };
  let found = false;
  const visit = (child: Schema, remaining: string[]): Schema => {
    const result = admitNullAlong(loaded, child, remaining);
    found ||= result.found;
    return result.schema;
  };
  const properties = schema.properties as Record<string, Schema> | undefined;
  if (properties && segment in properties) {
    copy.properties = { ...properties, [segment]: visit(properties[segment], rest) };
  } else if (isSchemaObject(schema.additionalProperties)) {
    copy.additionalProperties = visit(schema.additionalProperties, rest);
  }
  if ((segment === '*' || /^\d+$/.test(segment)) && isSchemaObject(schema.items)) copy.items = visit(schema.items, rest);
  for (const keyword of ['allOf', 'anyOf', 'oneOf'] as const) {
    const branches = schema[keyword];
    if (Array.isArray(branches)) copy[keyword] = (branches as Schema[]).map((branch) => visit(branch, segments));
  }
  for (const keyword of ['then', 'else'] as const) {
    const branch = schema[keyword];
    if (isSchemaObject(branch)) copy[keyword] = visit(branch, segments);
  }
  return { schema: copy, found };
}

function resolveRef(loaded: LoadedApi, ref: string): Schema {
  const prefix = `${loaded.documentId}#/definitions/`;
  const resolved = ref.startsWith(prefix) ? loaded.definitions[ref.slice(prefix.length)] : undefined;
  if (!resolved) throw new Error(`cannot resolve ${ref}`);
  return resolved;
}

function isSchemaObject(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------------------------------
// Validation and reporting

function cachedValidator(api: ApiName, key: string, options: MatchOptions, schemaOf: () => Schema): ValidateFunction {
  const loaded = loadApi(api);
  const allowNullAt = options.allowNullAt ?? [];
  const cacheKey = `${key} null@${allowNullAt.join(',')}`;
  let validate = loaded.validators.get(cacheKey);
  if (!validate) {
    const schema = allowNullAt.length ? withNullAllowed(loaded, schemaOf(), allowNullAt) : schemaOf();
    validate = ajv.compile(schema);
    loaded.validators.set(cacheKey, validate);
  }
  return validate;
}

function assertValid(validate: ValidateFunction, value: unknown, subject: string): void {
  if (validate(value)) return;
  const lines = (validate.errors ?? []).map(describeError);
  throw new AssertionError({
    message: `body does not match the reference schema for ${subject}:\n  ${[...new Set(lines)].join('\n  ')}`,
    actual: value,
    operator: 'matchesReference',
  });
}

function describeError(error: ErrorObject): string {
  const where = error.instancePath || '(root)';
  const params = error.params as Record<string, unknown>;
  const detail =
    error.keyword === 'additionalProperties' ? ` "${String(params.additionalProperty)}"`
    : error.keyword === 'enum' ? ` ${JSON.stringify(params.allowedValues)}`
    : '';
  return `${where} ${error.message ?? error.keyword}${detail} [schema ${error.schemaPath}]`;
}
