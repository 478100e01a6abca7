/**
 * defineResource(): the single declaration of a record type. From its field list come the create, put and
 * patch request schemas, the read model schema (which also drives response serialization), the store's
 * column map, the filter compiler's symbol table and `meta.filterableFields`, the `_links`, and the
 * permission stem. Resource-specific rules live in the resource's service, not here.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import type { ColumnKind, EntityTableDecl, Values } from '../store/entity-table.ts';
import type { FieldSymbol, ScalarType, SymbolTable } from '../query/symbols.ts';
import { baseEntityProperties, Nullable, TagsNullable, Attributes, AttributesRead, type Links } from './common.schema.ts';

export type Mode = 'required' | 'optional';

export interface FieldSpec {
  /** Wire schema of the value in requests (without null; see `nullable`). */
  schema: TSchema;
  /** Schema in the read model; `false` keeps the field out of the read model. Defaults to `schema`. */
  read?: TSchema | false;
  /** Storage column; absent when the service stores the field itself. */
  column?: string;
  kind?: ColumnKind;
  create?: Mode;
  put?: Mode;
  patch?: boolean;
  /** Create/put accept null for this field (patch always does: null there means "not supplied"). */
  nullable?: boolean;
  /** Value written when a create or put omits the field. */
  default?: unknown;
  /** Filter type; present means the field is a public filter symbol. */
  filter?: ScalarType;
  /** `false`: the filter symbol works but is not listed in `meta.filterableFields` (see SymbolCommon). */
  advertised?: boolean;
  sortable?: boolean;
  /** The column is `NOT NULL UNIQUE` (lets a sort by it skip the id tie-breaker; see ScalarSymbol.unique). */
  unique?: boolean;
  /**
   * How the read model shows the field when it is empty (`false`, `''`, `[]` or null), as upstream renders it:
   * `'omit'` leaves it out (a Go `omitempty` field), `'null'` sends null (a nil list). Unset: as stored.
   */
  empty?: 'omit' | 'null';
}

export interface ResourceSpec {
  /** URL segment and link base, e.g. `identities`. */
  entityType: string;
  /** Singular name for messages, e.g. `identity`. */
  singular: string;
  /** Permission stem, e.g. `identity` (values `identity`, `identity.read`...). */
  permission: string;
  table: string;
  /** Upstream definition names, used for the OpenAPI document. */
  names: { create?: string; update?: string; patch?: string; detail: string };
  fields: Record<string, FieldSpec>;
  /** Role attributes kept in a side table (field must also be declared in `fields`). */
  attributes?: { field: string; table: string; ownerColumn: string; valueColumn: string };
  /** Read-only properties the service computes for the read model. */
  computed?: Record<string, TSchema>;
  /** Nested links beside `self`, e.g. `['authenticators', 'enrollments']`. */
  nestedLinks?: string[];
  /** Extra filter symbols that are not plain columns (e.g. foreign-key fields). */
  extraSymbols?: Record<string, FieldSymbol>;
}

export interface Resource extends ResourceSpec {
  decl: EntityTableDecl;
  symbols: SymbolTable;
  schemas: { create?: TSchema; update?: TSchema; patch?: TSchema; detail: TSchema };
  links(id: string, values?: Values): Links;
  /** Base fields plus every stored field declared readable, as the read model expects them. */
  presentStored(values: Values): Record<string, unknown>;
}

function sortedEntries<T>(record: Record<string, T>): Array<[string, T]> {
  return Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

const upperFirst = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);

function requestSchema(spec: ResourceSpec, mode: 'create' | 'put' | 'patch'): TSchema | undefined {
  const props: Record<string, TSchema> = {};
  const required: string[] = [];
  for (const [name, f] of sortedEntries(spec.fields)) {
    const m = mode === 'patch' ? (f.patch ? 'optional' : undefined) : f[mode];
    if (!m) continue;
    props[name] = mode === 'patch' || f.nullable ? nullableOf(f.schema) : f.schema;
    if (m === 'required') required.push(name);
  }
  if (Object.keys(props).length === 0) return undefined;
  props.tags = TagsNullable;
  // The title names the model in decode errors (`IdentityCreate`), as upstream's do.
  const model = spec.names[mode === 'put' ? 'update' : mode];
  return Type.Unsafe({ type: 'object', ...(model ? { title: upperFirst(model) } : {}), properties: props, ...(required.length ? { required } : {}) });
}

function nullableOf(schema: TSchema): TSchema {
  const type = (schema as { type?: unknown }).type;
  if (Array.isArray(type)) return type.includes('null') ? schema : Type.Unsafe({ ...schema, type: [...type, 'null'] });
  if (typeof type === 'string') return Nullable(schema);
  return Type.Unsafe({ anyOf: [schema, { type: 'null' }] });
}

function detailSchema(spec: ResourceSpec): TSchema {
  const props: Record<string, TSchema> = {};
  for (const [name, f] of Object.entries(spec.fields)) {
    if (f.read === false) continue;
    const read = f.read ?? f.schema;
    props[name] = f.empty === 'null' ? nullableOf(read) : read;
  }
  Object.assign(props, spec.computed ?? {});
  const ordered: Record<string, TSchema> = { ...baseEntityProperties };
  for (const [name, s] of sortedEntries(props)) ordered[name] = s;
  return Type.Unsafe({ type: 'object', properties: ordered, required: ['id', 'createdAt', 'updatedAt', '_links', 'tags'] });
}

/** The filter symbols every stored record has (upstream's public base fields). */
export function baseSymbols(): Record<string, FieldSymbol> {
  return {
    id: { kind: 'scalar', type: 'string', sql: 'e.id' },
    createdAt: { kind: 'scalar', type: 'datetime', sql: 'e.created_at' },
    updatedAt: { kind: 'scalar', type: 'datetime', sql: 'e.updated_at' },
    tags: { kind: 'map', sql: 'e.tags' },
    isSystem: { kind: 'scalar', type: 'bool', sql: 'e.is_system' },
  };
}

function symbolTable(spec: ResourceSpec): SymbolTable {
  const symbols = baseSymbols();
  for (const [name, f] of Object.entries(spec.fields)) {
    if (f.filter && f.column) symbols[name] = { kind: 'scalar', type: f.filter, sql: `e.${f.column}`, sortable: f.sortable ?? true, ...(f.unique ? { unique: true } : {}), ...(f.advertised === false ? { advertised: false } : {}) };
  }
  if (spec.attributes) {
    const a = spec.attributes;
    symbols[a.field] = { kind: 'set', elementType: 'string', table: a.table, ownerColumn: a.ownerColumn, valueColumn: a.valueColumn };
  }
  Object.assign(symbols, spec.extraSymbols ?? {});
  return { idSql: 'e.id', symbols };
}

function storeDecl(spec: ResourceSpec): EntityTableDecl {
  const columns: EntityTableDecl['columns'] = {};
  for (const [name, f] of Object.entries(spec.fields)) {
    if (f.column) columns[name] = { column: f.column, kind: f.kind ?? 'text' };
  }
  return { table: spec.table, singular: spec.singular, entityType: spec.entityType, columns, attributes: spec.attributes };
}

function isEmptyValue(value: unknown): boolean {
  return value === undefined || value === null || value === false || value === '' || (Array.isArray(value) && value.length === 0);
}

/** A stored value as the read model shows it (the field's `empty` rule applied); undefined: left out. */
export function readModelValue(field: FieldSpec | undefined, value: unknown): unknown {
  if (field?.empty === undefined || !isEmptyValue(value)) return value;
  return field.empty === 'null' ? null : undefined;
}

export function defineResource(spec: ResourceSpec): Resource {
  const decl = storeDecl(spec);
  const readable = Object.entries(spec.fields).filter(([, f]) => f.read !== false && f.column).map(([n]) => n);
  const links = (id: string): Links => {
    const self = `./${spec.entityType}/${id}`;
    const out: Links = { self: { href: self } };
    for (const nested of spec.nestedLinks ?? []) out[nested] = { href: `${self}/${nested}` };
    return out;
  };
  return {
    ...spec,
    decl,
    symbols: symbolTable(spec),
    schemas: {
      create: requestSchema(spec, 'create'),
      update: requestSchema(spec, 'put'),
      patch: requestSchema(spec, 'patch'),
      detail: detailSchema(spec),
    },
    links,
    presentStored(values: Values) {
      const out: Record<string, unknown> = {
        _links: links(values.id as string),
        createdAt: values.createdAt,
        id: values.id,
        tags: values.tags ?? {},
        updatedAt: values.updatedAt,
      };
      for (const name of readable) {
        const value = readModelValue(spec.fields[name], values[name]);
        if (value !== undefined) out[name] = value;
      }
      return out;
    },
  };
}

/** The role-attribute field every attributed resource declares the same way. */
export function roleAttributesField(): FieldSpec {
  return { schema: Attributes, read: AttributesRead, column: 'role_attributes', kind: 'json', create: 'optional', put: 'optional', patch: true, default: [] };
}

/** The unique, required, filterable `name` most records declare the same way. */
export function nameField(): FieldSpec {
  return { schema: Type.String(), column: 'name', create: 'required', put: 'required', patch: true, filter: 'string' };
}
