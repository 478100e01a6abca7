/**
 * Config types: a name and the JSON Schema that configs of the type are validated against. The
 * built-in types (fixed ids) are created at first start.
 */
import { Type } from '@sinclair/typebox';
import { defineResource } from '../define-resource.ts';
import { FreeObject, FreeObjectNullable } from '../common.schema.ts';

export const configTypeResource = defineResource({
  entityType: 'config-types',
  singular: 'configType',
  permission: 'config-type',
  table: 'config_types',
  names: { create: 'configTypeCreate', update: 'configTypeUpdate', patch: 'configTypePatch', detail: 'configTypeDetail' },
  fields: {
    name: { schema: Type.String(), column: 'name', create: 'required', put: 'required', patch: true, filter: 'string' },
    schema: { schema: FreeObject, read: FreeObjectNullable, column: 'schema', kind: 'json', create: 'optional', put: 'optional', patch: true, nullable: true, default: null },
  },
});
