/**
 * Third-party certificate authorities (management `/cas`): a CA an operator trusts for ottca and auto
 * enrollment and for certificate login, once it is verified by proof of possession of its key (a
 * certificate it signed whose CN is the verification token). `certPem` and `isVerified` never change
 * through create/update; the service derives `fingerprint`, `verificationToken` and the default name
 * format. The `verify` link exists while unverified, the `jwt` link while auto enrollment is enabled.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { defineResource, nameField } from '../define-resource.ts';
import { RightsSchema } from '../../auth/rights.ts';
import { Roles, type Links } from '../common.schema.ts';

const nullableEnum = (values: string[]) => Type.Unsafe<string | null>({ type: ['string', 'null'], enum: [...values, null] });

const claimProperties = {
  index: Type.Unsafe<number | null>({ type: ['integer', 'null'] }),
  location: nullableEnum(['COMMON_NAME', 'SAN_URI', 'SAN_EMAIL']),
  matcher: nullableEnum(['ALL', 'PREFIX', 'SUFFIX', 'SCHEME']),
  matcherCriteria: Type.Unsafe<string | null>({ type: ['string', 'null'] }),
  parser: nullableEnum(['NONE', 'SPLIT']),
  parserCriteria: Type.Unsafe<string | null>({ type: ['string', 'null'] }),
};

/** externalIdClaim on create and put: spec 0.27.0 requires all six members (each may be null). */
export const ExternalIdClaimSchema = Type.Unsafe<Record<string, unknown>>({
  type: 'object',
  properties: claimProperties,
  required: ['location', 'matcher', 'matcherCriteria', 'parser', 'parserCriteria', 'index'],
});

/** externalIdClaim on patch: any subset, merged over the stored claim. */
export const ExternalIdClaimPatchSchema = Type.Unsafe<Record<string, unknown> | null>({
  type: ['object', 'null'],
  properties: claimProperties,
});

const RolesRead = Type.Array(Type.String());

export const DEFAULT_IDENTITY_NAME_FORMAT = '[caName]-[commonName]';

/** A CA's `_links`, in its detail and in every reference to it: `verify` until verified, `jwt` while auto enrollment is on. */
export function caLinks(id: string, state: { isVerified?: unknown; isAutoCaEnrollmentEnabled?: unknown }): Links {
  const links: Links = { self: { href: `./cas/${id}` } };
  if (!state.isVerified) links.verify = { href: `./cas/${id}/verify` };
  if (state.isAutoCaEnrollmentEnabled) links.jwt = { href: `./cas/${id}/jwt` };
  return links;
}

export const caResource = defineResource({
  entityType: 'cas',
  singular: 'ca',
  permission: 'ca',
  table: 'cas',
  names: { create: 'caCreate', update: 'caUpdate', patch: 'caPatch', detail: 'caDetail' },
  fields: {
    name: nameField(),
    certPem: { schema: Type.String(), column: 'cert_pem', create: 'required' },
    fingerprint: { schema: Type.String(), column: 'fingerprint', filter: 'string' },
    isVerified: { schema: Type.Boolean(), column: 'is_verified', kind: 'bool', filter: 'bool' },
    verificationToken: { schema: Type.String(), column: 'verification_token', filter: 'string' },
    isAutoCaEnrollmentEnabled: {
      schema: Type.Boolean(), column: 'is_auto_ca_enrollment_enabled', kind: 'bool', create: 'required', put: 'required', patch: true, filter: 'bool',
    },
    isOttCaEnrollmentEnabled: {
      schema: Type.Boolean(), column: 'is_ott_ca_enrollment_enabled', kind: 'bool', create: 'required', put: 'required', patch: true, filter: 'bool',
    },
    isAuthEnabled: { schema: Type.Boolean(), column: 'is_auth_enabled', kind: 'bool', create: 'required', put: 'required', patch: true, filter: 'bool' },
    identityRoles: {
      schema: Roles, read: RolesRead, column: 'identity_roles', kind: 'json', create: 'required', put: 'required', patch: true, default: [], empty: 'null',
    },
    identityNameFormat: {
      schema: Type.String(), column: 'identity_name_format', create: 'optional', put: 'required', patch: true, default: '', filter: 'string', advertised: false,
    },
    externalIdClaim: {
      schema: ExternalIdClaimSchema, read: Type.Unsafe({ type: 'object', properties: claimProperties }), column: 'external_id_claim', kind: 'json',
      create: 'optional', put: 'optional', patch: true, nullable: true, default: null,
    },    // Who last set what the record authenticates (auth/rights.ts); never read or written by clients.
    trustRights: { schema: RightsSchema, read: false, column: 'trust_rights', kind: 'json' },
  },
});

// The generic patch schema would reuse the create/put claim schema, which requires every member.
const patchSchema = caResource.schemas.patch as unknown as { properties: Record<string, TSchema> };
caResource.schemas.patch = Type.Unsafe({ ...patchSchema, properties: { ...patchSchema.properties, externalIdClaim: ExternalIdClaimPatchSchema } });
