/**
 * JSON Schema handling for config types and config data, with the semantics upstream's validator has
 * (model.md §4.1): draft-04/06/07 keywords, only the formats it checks are enforced (`idn-hostname` and
 * every other unknown format are accepted), and a failed validation reports one error rendered the way
 * upstream does: field path `(root)` / `a.b.0`, reason `<field> is invalid: <field>: <description>`.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule, { type FormatsPlugin, type FormatName } from 'ajv-formats';
import { fieldError, type ApiError } from '../../errors.ts';

// CJS interop: under NodeNext the plugin function sits on `default` of the imported namespace.
const addFormats = ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin;

/** The formats upstream's validator checks; any other format is an annotation only. */
const CHECKED_FORMATS: FormatName[] = [
  'date',
  'time',
  'date-time',
  'hostname',
  'email',
  'ipv4',
  'ipv6',
  'uri',
  'uri-reference',
  'uri-template',
  'uuid',
  'regex',
  'json-pointer',
  'relative-json-pointer',
];

function makeAjv(): Ajv {
  // strictSchema off: unknown keywords and formats are ignored (and not logged), as upstream does.
  const ajv = new Ajv({ allErrors: true, strict: false, strictSchema: false, logger: false, addUsedSchema: false, validateFormats: true });
  addFormats(ajv, CHECKED_FORMATS);
  const formats = ajv.formats as Record<string, unknown>;
  ajv.addFormat('idn-email', formats.email as never);
  ajv.addFormat('iri', formats.uri as never);
  ajv.addFormat('iri-reference', formats['uri-reference'] as never);
  return ajv;
}

const ajv = makeAjv();
const cache = new Map<string, ValidateFunction>();
const CACHE_LIMIT = 500;

const KNOWN_META_SCHEMAS = /^https?:\/\/json-schema\.org\/(draft-0[467]\/)?schema#?$/;

/** Compiles a schema (cached by its text); throws the error text when it does not compile. */
function compile(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  let fn = cache.get(key);
  if (fn) return fn;
  const copy: Record<string, unknown> = { ...schema };
  // Draft-04/06 meta-schema references would make the compiler look up an unregistered meta-schema.
  if (typeof copy.$schema === 'string' && KNOWN_META_SCHEMAS.test(copy.$schema)) delete copy.$schema;
  fn = ajv.compile(copy);
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  cache.set(key, fn);
  return fn;
}

/**
 * Checks a config type schema: it must compile and its root must be typed `object`. Returns the field
 * error upstream gives, or undefined when the schema is acceptable.
 */
export function checkConfigTypeSchema(schema: Record<string, unknown>): ApiError | undefined {
  try {
    compile(schema);
  } catch (err) {
    return fieldError('schema', `invalid schema ${(err as Error).message.replace(/^schema is invalid: /, '')}`, schema);
  }
  if (schema.type !== 'object') return fieldError('schema', 'invalid config type schema, root type must be object', schema);
  return undefined;
}

// ---- error rendering --------------------------------------------------------------------------------

function segments(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function valueAt(data: unknown, pointer: string): unknown {
  let cur = data;
  for (const seg of segments(pointer)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[seg];
  }
  return cur;
}

function fieldPath(pointer: string): string {
  const parts = segments(pointer);
  return parts.length === 0 ? '(root)' : parts.join('.');
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function listOf(values: unknown[]): string {
  return values.map((v) => JSON.stringify(v)).join(', ');
}

/** Upstream's description text for one error (its default English locale, written from its behaviour). */
function describe(err: ErrorObject, field: string, value: unknown): string {
  const p = err.params as Record<string, unknown>;
  switch (err.keyword) {
    case 'type': {
      const types = String(p.type).split(',');
      const expected = types.length > 1 ? `[${types.join(',')}]` : types[0];
      return `Invalid type. Expected: ${expected}, given: ${jsonType(value)}`;
    }
    case 'required':
      return `${String(p.missingProperty)} is required`;
    case 'additionalProperties':
      return `Additional property ${String(p.additionalProperty)} is not allowed`;
    case 'enum':
      return `${field} must be one of the following: ${listOf(p.allowedValues as unknown[])}`;
    case 'const':
      return `${field} does not match: ${JSON.stringify(p.allowedValue)}`;
    case 'minimum':
      return `Must be greater than or equal to ${String(p.limit)}`;
    case 'exclusiveMinimum':
      return `Must be greater than ${String(p.limit)}`;
    case 'maximum':
      return `Must be less than or equal to ${String(p.limit)}`;
    case 'exclusiveMaximum':
      return `Must be less than ${String(p.limit)}`;
    case 'multipleOf':
      return `Must be a multiple of ${String(p.multipleOf)}`;
    case 'minLength':
      return `String length must be greater than or equal to ${String(p.limit)}`;
    case 'maxLength':
      return `String length must be less than or equal to ${String(p.limit)}`;
    case 'pattern':
      return `Does not match pattern '${String(p.pattern)}'`;
    case 'format':
      return `Does not match format '${String(p.format)}'`;
    case 'minItems':
      return `Array must have at least ${String(p.limit)} items`;
    case 'maxItems':
      return `Array must have at most ${String(p.limit)} items`;
    case 'uniqueItems': {
      const [a, b] = [Number(p.i), Number(p.j)].sort((x, y) => x - y);
      return `array items[${a},${b}] must be unique`;
    }
    case 'minProperties':
      return `Must have at least ${String(p.limit)} properties`;
    case 'maxProperties':
      return `Must have at most ${String(p.limit)} properties`;
    case 'anyOf':
      return 'Must validate at least one schema (anyOf)';
    case 'oneOf':
      return 'Must validate one and only one schema (oneOf)';
    case 'not':
      return 'Must not validate the schema (not)';
    case 'if':
      return p.failingKeyword === 'else' ? 'Must validate "else" as "if" was not valid' : 'Must validate "then" as "if" was valid';
    case 'contains':
      return 'At least one of the items must match';
    case 'false schema':
      return 'False always fails validation';
    case 'dependencies':
    case 'dependentRequired':
      return `Has a dependency on ${String(p.missingProperty ?? p.deps)}`;
    case 'additionalItems':
      return 'No additional items allowed on array';
    case 'propertyNames':
      return `Property "${String(p.propertyName)}" does not match the schema`;
    default:
      return err.message ?? 'is invalid';
  }
}

/**
 * Upstream checks a node's type first, then its combinators (anyOf, oneOf, if...), then object keywords
 * (required before additionalProperties), then value keywords, and only then its children. Its first
 * error is therefore the shallowest one, in that keyword order.
 */
const keywordRank: Record<string, number> = {
  type: 0,
  anyOf: 1,
  oneOf: 1,
  not: 1,
  if: 1,
  dependencies: 2,
  maxProperties: 3,
  minProperties: 3,
  required: 4,
  additionalProperties: 5,
  propertyNames: 6,
};

function depth(err: ErrorObject): number {
  return segments(err.instancePath).length;
}

function firstError(errors: ErrorObject[]): ErrorObject {
  let best = errors[0]!;
  for (const e of errors.slice(1)) {
    const d = depth(e) - depth(best);
    if (d < 0 || (d === 0 && (keywordRank[e.keyword] ?? 7) < (keywordRank[best.keyword] ?? 7))) best = e;
  }
  return best;
}

/**
 * Validates config data against its type's schema (null schema: anything goes). Throws 400
 * COULD_NOT_VALIDATE built from the first error.
 */
export function validateConfigData(schema: Record<string, unknown> | null | undefined, data: unknown): void {
  if (!schema) return;
  let validate: ValidateFunction;
  try {
    validate = compile(schema);
  } catch (err) {
    // A stored schema that no longer compiles (should not happen: it was checked when saved).
    throw fieldError('schema', `invalid schema ${(err as Error).message}`, schema);
  }
  if (validate(data)) return;
  const err = firstError(validate.errors ?? []);
  const field = fieldPath(err.instancePath);
  const nodeValue = valueAt(data, err.instancePath);
  const value =
    err.keyword === 'additionalProperties' && nodeValue && typeof nodeValue === 'object'
      ? (nodeValue as Record<string, unknown>)[String((err.params as { additionalProperty: string }).additionalProperty)]
      : nodeValue;
  const description = describe(err, field, value);
  throw fieldError(field, `${field} is invalid: ${field}: ${description}`, value);
}
