/**
 * Identity types (read-only): `Default` and `Router` on a fresh controller, as upstream.
 */
import { Type } from '@sinclair/typebox';
import { defineResource } from '../define-resource.ts';

export const identityTypeResource = defineResource({
  entityType: 'identity-types',
  singular: 'identityType',
  permission: 'identity',
  table: 'identity_types',
  names: { detail: 'identityTypeDetail' },
  fields: {
    name: { schema: Type.String(), column: 'name', filter: 'string' },
  },
});
