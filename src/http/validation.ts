/**
 * Request validation with AJV, wired into Fastify as its validator compiler. Bodies are validated without
 * type coercion (a JSON number is not a name); query strings, params and headers are coerced the way a
 * query string must be. Failures become COULD_NOT_VALIDATE with upstream's go-openapi style
 * `{field, reason, value}` cause, naming the first offending field.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats';
import { ApiError, formatCauseValue, jsonKind } from '../errors.ts';

// CJS interop: under NodeNext the plugin function sits on `default` of the imported namespace.
const addFormats = ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin;

function makeAjv(coerce: boolean) {
  const ajv = new Ajv({ allErrors: false, strict: false, coerceTypes: coerce ? 'array' : false, useDefaults: false });
  addFormats(ajv);
  return ajv;
}

const bodyAjv = makeAjv(false);
const paramAjv = makeAjv(true);

type HttpPart = 'body' | 'querystring' | 'params' | 'headers';

const partName: Record<HttpPart, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

function valueAt(data: unknown, pointer: string): unknown {
  let cur = data;
  for (const seg of pointer.split('/').slice(1)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[seg.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return cur;
}

function fieldName(err: ErrorObject): string {
  const path = err.instancePath.split('/').slice(1).join('.');
  if (err.keyword === 'required') {
    const missing = (err.params as { missingProperty: string }).missingProperty;
    return path ? `${path}.${missing}` : missing;
  }
  return path;
}

function reasonFor(err: ErrorObject, field: string, where: string, value: unknown): string {
  const p = err.params as Record<string, unknown>;
  const label = field || where;
  switch (err.keyword) {
    case 'required':
      return `${label} in ${where} is required`;
    case 'type': {
      const t = String(p.type).replace(',null', '');
      const goType = t === 'integer' ? 'int64' : t;
      return `${label} in ${where} must be of type ${goType}: ${JSON.stringify(formatCauseValue(value))}`;
    }
    case 'enum':
      return `${label} in ${where} should be one of [${(p.allowedValues as unknown[]).filter((v) => v !== null).join(' ')}]`;
    case 'minLength':
      return `${label} in ${where} should be at least ${String(p.limit)} chars long`;
    case 'maxLength':
      return `${label} in ${where} should be at most ${String(p.limit)} chars long`;
    case 'minimum':
      return `${label} in ${where} should be greater than or equal to ${String(p.limit)}`;
    case 'maximum':
      return `${label} in ${where} should be less than or equal to ${String(p.limit)}`;
    case 'minItems':
      return `${label} in ${where} should have at least ${String(p.limit)} items`;
    case 'maxItems':
      return `${label} in ${where} should have at most ${String(p.limit)} items`;
    case 'format':
      return `${label} in ${where} must be of type ${String(p.format)}: ${JSON.stringify(formatCauseValue(value))}`;
    case 'pattern':
      if (where === 'query') return `${label} in query must be of type int64: ${JSON.stringify(formatCauseValue(value))}`;
      return `${label} in ${where} should match '${String(p.pattern)}'`;
    default:
      return `${label} in ${where} ${err.message ?? 'is invalid'}`;
  }
}

/** Converts AJV's first error into the upstream validation error. */
export function toValidationError(errors: ErrorObject[], data: unknown, part: HttpPart): ApiError {
  // Report the most specific error: a type error on a nested value beats an anyOf summary.
  const err = errors.find((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf') ?? errors[0];
  const field = fieldName(err);
  const value = err.keyword === 'required' ? undefined : valueAt(data, err.instancePath);
  const where = partName[part];
  return new ApiError('COULD_NOT_VALIDATE', {
    cause: { field: field || where, reason: reasonFor(err, field, where, value), value: formatCauseValue(value) },
  });
}

// ---- JSON type mismatches: parse errors, as a typed decoder reports them ------------------------------------

type Schema = Record<string, unknown>;

function typesOf(schema: Schema): string[] | undefined {
  const t = schema.type;
  return typeof t === 'string' ? [t] : Array.isArray(t) ? (t as string[]) : undefined;
}

function isFreeForm(schema: Schema): boolean {
  return schema.properties === undefined && (schema.additionalProperties === undefined || schema.additionalProperties === true);
}

/** Whether a value's JSON kind fits the schema's declared type (enum, range and format are validation's job). */
function kindFits(schema: Schema, value: unknown): boolean {
  if (value === null) return true; // a typed decoder leaves the field unset
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Schema[]).some((s) => kindFits(s, value));
  const types = typesOf(schema);
  if (!types) return true;
  return types.some((t) => {
    switch (t) {
      case 'integer':
        return typeof value === 'number' && Number.isInteger(value);
      case 'number':
        return typeof value === 'number';
      case 'boolean':
        return typeof value === 'boolean';
      case 'string':
        return typeof value === 'string';
      case 'array':
        return Array.isArray(value);
      case 'object':
        // A free-form object (no declared members) decodes into an untyped value: validation judges it.
        return (typeof value === 'object' && !Array.isArray(value)) || isFreeForm(schema);
      case 'null':
        return false; // null itself fits every type (above)
      default:
        return true;
    }
  });
}

function goType(schema: Schema): string {
  const branch = Array.isArray(schema.anyOf) ? ((schema.anyOf as Schema[]).find((s) => s.type !== 'null') ?? {}) : schema;
  const t = (typesOf(branch) ?? []).find((x) => x !== 'null');
  switch (t) {
    case 'integer':
      return 'int64';
    case 'number':
      return 'float64';
    case 'boolean':
      return 'bool';
    case 'string':
      return 'string';
    case 'array':
      return `[]${goType((branch.items as Schema | undefined) ?? {})}`;
    case 'object':
      return typeof branch.title === 'string' ? `rest_model.${branch.title}` : 'map[string]interface {}';
    default:
      return 'interface {}';
  }
}

/** The first value, in document order, whose JSON kind does not fit the schema: where, what and the wanted type. */
function firstMismatch(schema: Schema, value: unknown, path: string[]): { path: string[]; kind: string; type: string } | undefined {
  if (!kindFits(schema, value)) return { path, kind: jsonKind(value), type: goType(schema) };
  if (value === null || typeof value !== 'object') return undefined;
  const fitting = Array.isArray(schema.anyOf) ? (schema.anyOf as Schema[]).find((s) => s.type !== 'null' && kindFits(s, value)) ?? schema : schema;
  if (Array.isArray(value)) {
    const items = fitting.items as Schema | undefined;
    if (!items) return undefined;
    for (const item of value) {
      const found = firstMismatch(items, item, path);
      if (found) return found;
    }
    return undefined;
  }
  const props = fitting.properties as Record<string, Schema> | undefined;
  if (!props) return undefined;
  for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
    const childSchema = props[key];
    if (!childSchema) continue;
    const found = firstMismatch(childSchema, child, [...path, key]);
    if (found) return found;
  }
  return undefined;
}

/**
 * A body whose JSON kinds do not fit the operation's model (a string for a boolean, an array for an object)
 * can not be decoded: COULD_NOT_PARSE_BODY naming the first such value in document order, as upstream does
 * before any validation. Undefined when every kind fits.
 */
export function bodyKindError(schema: object, body: unknown): ApiError | undefined {
  const found = firstMismatch(schema as Schema, body, []);
  if (!found) return undefined;
  const model = typeof (schema as Schema).title === 'string' ? String((schema as Schema).title) : 'Body';
  const target = found.path.length === 0 ? `Go value of type ${found.type.startsWith('rest_model.') ? found.type : `rest_model.${model}`}` : `Go struct field ${model}.${found.path.join('.')} of type ${found.type}`;
  return new ApiError('COULD_NOT_PARSE_BODY', {
    cause: { code: 'UNHANDLED', message: `parsing body body from "" failed, because json: cannot unmarshal ${found.kind} into ${target}` },
  });
}

/** A repeated query parameter that is not a list keeps its first value, as upstream reads it (`filter=a&filter=b`). */
function firstOfRepeated(schema: object, data: unknown): void {
  if (!data || typeof data !== 'object') return;
  const props = ((schema as Schema).properties ?? {}) as Record<string, Schema>;
  const query = data as Record<string, unknown>;
  for (const [key, value] of Object.entries(query)) {
    if (Array.isArray(value) && !(typesOf(props[key] ?? {}) ?? []).includes('array')) query[key] = value[0];
  }
}

function acceptsNull(schema: object): boolean {
  const type = (schema as { type?: unknown }).type;
  return Array.isArray(type) && type.includes('null');
}

/**
 * Fastify validator compiler. AJV compiles a route's schema on its first request, not at start: a few
 * hundred routes × parts would otherwise cost a large share of the controller's cold start.
 */
export function compileValidator({ schema, httpPart }: { schema: object; httpPart?: string }) {
  const part = (httpPart ?? 'body') as HttpPart;
  let validate: ValidateFunction | undefined;
  return (data: unknown) => {
    if (part === 'body' && (data === undefined || data === null) && !acceptsNull(schema)) {
      return { error: new ApiError('COULD_NOT_VALIDATE', { cause: { field: 'body', reason: 'body in body is required', value: '' } }) };
    }
    if (part === 'body') {
      const kindError = bodyKindError(schema, data);
      if (kindError) return { error: kindError };
    }
    if (part === 'querystring') firstOfRepeated(schema, data);
    validate ??= (part === 'body' ? bodyAjv : paramAjv).compile(schema);
    if (validate(data)) return { value: data };
    return { error: toValidationError(validate.errors ?? [], data, part) };
  };
}

/** Validates a value against a schema outside the request pipeline (e.g. config data). */
export function compileStandalone(schema: object): ValidateFunction {
  return bodyAjv.compile(schema);
}
