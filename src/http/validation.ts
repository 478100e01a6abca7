/**
 * Request validation with AJV, wired into Fastify as its validator compiler. Bodies are validated without
 * type coercion (a JSON number is not a name); query strings, params and headers are coerced the way a
 * query string must be. Failures become COULD_NOT_VALIDATE with upstream's go-openapi style
 * `{field, reason, value}` cause, naming the first offending field.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats';
import { ApiError, formatCauseValue } from '../errors.ts';

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
      return `${label} in ${where} should be one of [${(p.allowedValues as unknown[]).join(' ')}]`;
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
    validate ??= (part === 'body' ? bodyAjv : paramAjv).compile(schema);
    if (validate(data)) return { value: data };
    return { error: toValidationError(validate.errors ?? [], data, part) };
  };
}

/** Validates a value against a schema outside the request pipeline (e.g. config data). */
export function compileStandalone(schema: object): ValidateFunction {
  return bodyAjv.compile(schema);
}
