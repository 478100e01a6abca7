/**
 * The service as the fabric API shows it (`/fabric/v1/services`, upstream's fabric serviceDetail): every row of
 * `services` with only the fields the fabric layer knows (name, terminator strategy, idle timeout), read-only
 * here. Filters see what upstream's base service store makes public: the base fields, name and
 * terminatorStrategy (the edge fields such as roleAttributes or configs are the management API's).
 */
import { Type } from '@sinclair/typebox';
import { defineResource } from '../define-resource.ts';

export const fabricServiceResource = defineResource({
  entityType: 'services',
  singular: 'service',
  permission: 'service',
  table: 'services',
  names: { detail: 'serviceDetail' },
  fields: {
    name: { schema: Type.String(), column: 'name', filter: 'string', unique: true },
    terminatorStrategy: { schema: Type.String(), column: 'terminator_strategy', filter: 'string' },
    maxIdleTimeMillis: { schema: Type.Integer(), column: 'max_idle_time_millis', kind: 'int' },
  },
  nestedLinks: ['terminators'],
});
