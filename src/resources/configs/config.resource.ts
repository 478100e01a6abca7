/**
 * Configs: named data of a config type, validated against the type's schema, attached to services
 * (`services.configs`) or to an identity's per-service overrides. The type is fixed at create.
 */
import { Type } from '@sinclair/typebox';
import { defineResource, nameField } from '../define-resource.ts';
import { EntityRef, FreeObject } from '../common.schema.ts';

/** Any JSON value on input: the service answers upstream's own error for a non-object. */
const AnyValue = Type.Unsafe<unknown>({});

export const configResource = defineResource({
  entityType: 'configs',
  singular: 'config',
  permission: 'config',
  table: 'configs',
  names: { create: 'configCreate', update: 'configUpdate', patch: 'configPatch', detail: 'configDetail' },
  fields: {
    name: nameField(),
    configTypeId: { schema: Type.String(), column: 'config_type_id', create: 'required', filter: 'string', advertised: false },
    data: { schema: AnyValue, read: FreeObject, column: 'data', kind: 'json', create: 'required', put: 'required', patch: true },
  },
  computed: {
    configType: EntityRef,
  },
  extraSymbols: {
    type: { kind: 'scalar', type: 'string', sql: 'e.config_type_id' },
    data: { kind: 'map', sql: 'e.data', advertised: false },
  },
});
