/**
 * External JWT signers (management seeds §2.5): identity providers whose JWTs the controller accepts for
 * ext-jwt authentication and token enrollment. A signer's keys come either from one certificate
 * (`certPem`, whose fingerprint is stored) or from a JWKS endpoint, never both. The certificate's common
 * name and validity are computed for the read model.
 */
import { Type } from '@sinclair/typebox';
import { defineResource, nameField } from '../define-resource.ts';
import { RightsSchema } from '../../auth/rights.ts';
import { baseEntityProperties, Nullable } from '../common.schema.ts';

const NullableString = Nullable(Type.String());
const TargetToken = Type.Unsafe<'ACCESS' | 'ID'>({ type: 'string', enum: ['ACCESS', 'ID'] });
const Scopes = Type.Array(Type.String());
const DateTime = Type.String({ format: 'date-time' });

export const externalJwtSignerResource = defineResource({
  entityType: 'external-jwt-signers',
  singular: 'externalJwtSigner',
  permission: 'external-jwt-signer',
  table: 'external_jwt_signers',
  names: {
    create: 'externalJwtSignerCreate',
    update: 'externalJwtSignerUpdate',
    patch: 'externalJwtSignerPatch',
    detail: 'externalJwtSignerDetail',
  },
  fields: {
    name: nameField(),
    issuer: { schema: Type.String(), column: 'issuer', create: 'required', put: 'required', patch: true, filter: 'string' },
    // Required and never null on create and put ("audience in body is required" upstream); a patch's null keeps it.
    audience: { schema: Type.String(), read: NullableString, column: 'audience', create: 'required', put: 'required', patch: true, filter: 'string' },
    enabled: { schema: Type.Boolean(), column: 'enabled', kind: 'bool', create: 'required', put: 'required', patch: true, filter: 'bool' },
    certPem: { schema: Type.String(), read: NullableString, column: 'cert_pem', create: 'optional', put: 'optional', patch: true, nullable: true },
    jwksEndpoint: {
      schema: Type.String({ format: 'uri' }),
      read: Type.Unsafe<string | null>({ type: ['string', 'null'], format: 'uri' }),
      column: 'jwks_endpoint', create: 'optional', put: 'optional', patch: true, nullable: true,
    },
    kid: { schema: Type.String(), read: NullableString, column: 'kid', create: 'optional', put: 'optional', patch: true, nullable: true, filter: 'string' },
    claimsProperty: {
      schema: Type.String(), column: 'claims_property', create: 'optional', put: 'optional', patch: true, nullable: true, default: '/sub',
      filter: 'string',
    },
    useExternalId: {
      schema: Type.Boolean(), column: 'use_external_id', kind: 'bool', create: 'optional', put: 'optional', patch: true, nullable: true,
      default: false, filter: 'bool',
    },
    externalAuthUrl: {
      schema: Type.String(), read: NullableString, column: 'external_auth_url', create: 'optional', put: 'optional', patch: true,
      nullable: true, filter: 'string', advertised: false,
    },
    clientId: { schema: Type.String(), read: NullableString, column: 'client_id', create: 'optional', put: 'optional', patch: true, nullable: true, filter: 'string' },
    scopes: { schema: Scopes, column: 'scopes', kind: 'json', create: 'optional', put: 'optional', patch: true, nullable: true, default: [], empty: 'null' },
    targetToken: {
      schema: TargetToken, column: 'target_token', create: 'optional', put: 'optional', patch: true, nullable: true, default: 'ACCESS',
      filter: 'string',
    },
    enrollToCertEnabled: {
      schema: Type.Boolean(), column: 'enroll_to_cert_enabled', kind: 'bool', create: 'optional', put: 'optional', patch: true,
      nullable: true, default: false, filter: 'bool', empty: 'omit',
    },
    enrollToTokenEnabled: {
      schema: Type.Boolean(), column: 'enroll_to_token_enabled', kind: 'bool', create: 'optional', put: 'optional', patch: true,
      nullable: true, default: false, filter: 'bool', empty: 'omit',
    },
    enrollNameClaimsSelector: {
      schema: Type.String(), column: 'enroll_name_claims_selector', create: 'optional', put: 'optional', patch: true, nullable: true,
      default: '/sub',
    },
    enrollAttributeClaimsSelector: {
      schema: Type.String(), column: 'enroll_attribute_claims_selector', create: 'optional', put: 'optional', patch: true,
      nullable: true, default: '', empty: 'omit',
    },
    enrollAuthPolicyId: {
      schema: Type.String(), column: 'enroll_auth_policy_id', create: 'optional', put: 'optional', patch: true, nullable: true,
      default: 'default', filter: 'string',
    },
    fingerprint: { schema: Type.String(), read: NullableString, column: 'fingerprint', filter: 'string' },    // Who last set what the record authenticates (auth/rights.ts); never read or written by clients.
    trustRights: { schema: RightsSchema, read: false, column: 'trust_rights', kind: 'json' },
    // Facts of the certificate for filters, written with it (cert-facts.ts); the read model computes its own.
    certCommonName: { schema: Type.String(), read: false, column: 'cert_cn' },
    certNotBefore: { schema: DateTime, read: false, column: 'cert_not_before', kind: 'datetime' },
    certNotAfter: { schema: DateTime, read: false, column: 'cert_not_after', kind: 'datetime' },
  },
  extraSymbols: {
    certPem: { kind: 'scalar', type: 'string', sql: 'e.cert_pem', sortable: false },
    // What the read model shows of the certificate, stored beside it.
    commonName: { kind: 'scalar', type: 'string', sql: 'e.cert_cn', sortable: false },
    notBefore: { kind: 'scalar', type: 'datetime', sql: 'e.cert_not_before', sortable: false },
    notAfter: { kind: 'scalar', type: 'datetime', sql: 'e.cert_not_after', sortable: false },
    enrollNameClaimsSelector: { kind: 'scalar', type: 'string', sql: 'e.enroll_name_claims_selector' },
    enrollAttributeClaimsSelector: { kind: 'scalar', type: 'string', sql: 'e.enroll_attribute_claims_selector' },
    scopes: { kind: 'set', elementType: 'string', table: '(SELECT s.id AS owner, j.value AS scope FROM external_jwt_signers s, json_each(s.scopes) j)', postgresTable: '(SELECT s.id AS owner, j.value AS scope FROM external_jwt_signers s, jsonb_array_elements_text(s.scopes) j(value))', ownerColumn: 'owner', valueColumn: 'scope' },
  },
  computed: {
    commonName: Type.String(),
    notAfter: DateTime,
    notBefore: DateTime,
  },
});

/**
 * The client API's read model (clientExternalJwtSignerDetail): what an SDK needs to obtain a token. As upstream, an
 * unset `clientId` and disabled enrollment flags are left out, and unset `scopes` are null.
 */
export const clientExternalJwtSignerDetail = Type.Unsafe<Record<string, unknown>>({
  type: 'object',
  properties: {
    ...baseEntityProperties,
    audience: NullableString,
    clientId: Type.String(),
    enrollToCertEnabled: Type.Boolean(),
    enrollToTokenEnabled: Type.Boolean(),
    externalAuthUrl: NullableString,
    name: Type.String(),
    scopes: Nullable(Scopes),
    targetToken: TargetToken,
  },
  required: ['id', 'createdAt', 'updatedAt', '_links', 'tags', 'name', 'externalAuthUrl'],
});
