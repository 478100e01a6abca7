/**
 * Config types: a name and the JSON Schema that configs of the type are validated against. The
 * built-in types (fixed ids) are created at first start. A `schema` that is not a JSON object is not
 * refused: it is stored as "no schema", as upstream's model mapper does (model.md §4.1).
 */
import { Type } from '@sinclair/typebox';
import { defineResource, nameField } from '../define-resource.ts';
import { FreeObjectNullable } from '../common.schema.ts';

/** Any JSON value on input; the service keeps it only when it is an object. */
const AnySchemaValue = Type.Unsafe<unknown>({});

export const configTypeResource = defineResource({
  entityType: 'config-types',
  singular: 'configType',
  permission: 'config-type',
  table: 'config_types',
  names: { create: 'configTypeCreate', update: 'configTypeUpdate', patch: 'configTypePatch', detail: 'configTypeDetail' },
  fields: {
    name: nameField(),
    schema: { schema: AnySchemaValue, read: FreeObjectNullable, column: 'schema', kind: 'json', create: 'optional', put: 'optional', patch: true, nullable: true, default: null },
  },
});
