/**
 * Config types: a name and the JSON Schema that configs of the type are validated against. The
 * built-in types (fixed ids) are created at first start. A `schema` must be a JSON object (or null); an
 * empty object means "no schema", as upstream.
 */
import { Type } from '@sinclair/typebox';
import { defineResource, nameField } from '../define-resource.ts';
import { FreeObjectNullable } from '../common.schema.ts';

/** A JSON Schema document: any JSON object. */
const SchemaDocument = Type.Unsafe<Record<string, unknown>>({ type: 'object' });

export const configTypeResource = defineResource({
  entityType: 'config-types',
  singular: 'configType',
  permission: 'config-type',
  table: 'config_types',
  names: { create: 'configTypeCreate', update: 'configTypeUpdate', patch: 'configTypePatch', detail: 'configTypeDetail' },
  // `schema` filters on the document's JSON text, as upstream lists it.
  extraSymbols: { schema: { kind: 'scalar', type: 'string', sql: 'e.schema', sortable: false } },
  fields: {
    name: nameField(),
    schema: { schema: SchemaDocument, read: FreeObjectNullable, column: 'schema', kind: 'json', create: 'optional', put: 'optional', patch: true, nullable: true, default: null },
  },
});
