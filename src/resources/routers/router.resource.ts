/**
 * The router record as `/routers` and `/transit-routers` show it (management seeds §2.9, upstream model
 * §3.6): every row of `routers`, transit and edge alike. Links point at `./transit-routers/<id>` on both
 * paths, as upstream's shared handlers do.
 */
import { Type } from '@sinclair/typebox';
import { defineResource, nameField } from '../define-resource.ts';
import { Nullable, TerminatorCost } from '../common.schema.ts';
import { CtrlChanListeners, NullInterfaces } from '../edge-routers/edge-router.resource.ts';

const NullableString = Nullable(Type.String());
const NullableDateTime = Type.Unsafe<string | null>({ type: ['string', 'null'], format: 'date-time' });

export const routerResource = defineResource({
  entityType: 'transit-routers',
  singular: 'router',
  permission: 'router',
  table: 'routers',
  names: { create: 'routerCreate', update: 'routerUpdate', patch: 'routerPatch', detail: 'routerDetail' },
  fields: {
    name: nameField(),
    isEdge: { schema: Type.Boolean(), read: false, column: 'is_edge', kind: 'bool' },
    cost: { schema: TerminatorCost, column: 'cost', kind: 'int', create: 'optional', put: 'optional', patch: true, nullable: true, default: 0, filter: 'int' },
    noTraversal: { schema: Type.Boolean(), column: 'no_traversal', kind: 'bool', create: 'optional', put: 'optional', patch: true, nullable: true, default: false, filter: 'bool' },
    disabled: { schema: Type.Boolean(), column: 'disabled', kind: 'bool', create: 'optional', put: 'optional', patch: true, nullable: true, default: false, filter: 'bool' },
    ctrlChanListeners: { schema: CtrlChanListeners, column: 'ctrl_chan_listeners', kind: 'json', create: 'optional', put: 'optional', patch: true, nullable: true },
    isVerified: { schema: Type.Boolean(), column: 'is_verified', kind: 'bool', filter: 'bool', advertised: false },
    fingerprint: { schema: NullableString, column: 'fingerprint', filter: 'string' },
    unverifiedFingerprint: { schema: NullableString, column: 'unverified_fingerprint' },
    unverifiedCertPem: { schema: NullableString, column: 'unverified_cert_pem' },
  },
  computed: {
    isOnline: Type.Boolean(),
    enrollmentJwt: NullableString,
    enrollmentToken: NullableString,
    enrollmentCreatedAt: NullableDateTime,
    enrollmentExpiresAt: NullableDateTime,
    interfaces: NullInterfaces,
  },
});
