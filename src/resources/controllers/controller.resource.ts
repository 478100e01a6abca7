/**
 * Controllers of the network (read-only over the API). Each instance writes its own record at start:
 * its server certificate, fingerprint and the API base URLs clients may use.
 */
import { Type } from '@sinclair/typebox';
import { defineResource } from '../define-resource.ts';

const ApiAddresses = Type.Record(Type.String(), Type.Array(Type.Object({ url: Type.String(), version: Type.String() })));

export const controllerResource = defineResource({
  entityType: 'controllers',
  singular: 'controller',
  permission: 'ops',
  table: 'controllers',
  names: { detail: 'controllerDetail' },
  fields: {
    name: { schema: Type.String(), column: 'name', filter: 'string' },
    certPem: { schema: Type.String(), column: 'cert_pem', filter: 'string', sortable: false },
    fingerprint: { schema: Type.String(), column: 'fingerprint', filter: 'string' },
    ctrlAddress: { schema: Type.Unsafe<string | null>({ type: ['string', 'null'] }), column: 'ctrl_address', filter: 'string' },
    apiAddresses: { schema: ApiAddresses, column: 'api_addresses', kind: 'json' },
    isOnline: { schema: Type.Boolean(), column: 'is_online', kind: 'bool', filter: 'bool' },
    lastJoinedAt: { schema: Type.String({ format: 'date-time' }), column: 'last_joined_at', kind: 'datetime', filter: 'datetime' },
    isPreferredLeader: { schema: Type.Boolean(), column: 'is_preferred_leader', kind: 'bool', filter: 'bool' },
  },
});
