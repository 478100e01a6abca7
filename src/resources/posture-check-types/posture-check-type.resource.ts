/**
 * Posture check types (`/posture-check-types`, read-only): the five records seeded at first start
 * (upstream model §3.11). `version` is never set upstream, so it reads as null.
 */
import { Type } from '@sinclair/typebox';
import { defineResource } from '../define-resource.ts';

const OperatingSystemRead = Type.Object({
  type: Type.String(),
  versions: Type.Unsafe<string[] | null>({ type: ['array', 'null'], items: { type: 'string' } }),
});

export const postureCheckTypeResource = defineResource({
  entityType: 'posture-check-types',
  singular: 'postureCheckType',
  permission: 'posture-check',
  table: 'posture_check_types',
  names: { detail: 'postureCheckTypeDetail' },
  fields: {
    name: { schema: Type.String(), column: 'name', filter: 'string' },
    operatingSystems: { schema: Type.Array(OperatingSystemRead), column: 'operating_systems', kind: 'json' },
  },
  computed: { version: Type.Unsafe<string | null>({ type: ['string', 'null'] }) },
});
