/**
 * Authenticators: how an identity proves itself (updb = username and password, cert = a client
 * certificate). The password is write-only; only its argon2id hash is stored.
 */
import { Type } from '@sinclair/typebox';
import { defineResource } from '../define-resource.ts';
import { EntityRef, Password, Username } from '../common.schema.ts';

const DateTimeNullable = Type.Unsafe<string | null>({ type: ['string', 'null'], format: 'date-time' });

export const authenticatorResource = defineResource({
  entityType: 'authenticators',
  singular: 'authenticator',
  permission: 'identity',
  table: 'authenticators',
  names: { create: 'authenticatorCreate', update: 'authenticatorUpdate', patch: 'authenticatorPatch', detail: 'authenticatorDetail' },
  fields: {
    identityId: { schema: Type.String(), column: 'identity_id', create: 'required', filter: 'string', advertised: false },
    method: { schema: Type.String(), column: 'method', create: 'required', filter: 'string' },
    certPem: { schema: Type.String(), column: 'cert_pem', create: 'optional', empty: 'omit' },
    username: { schema: Username, column: 'username', create: 'optional', put: 'required', patch: true, filter: 'string', advertised: false, empty: 'omit' },
    password: { schema: Password, read: false, create: 'optional', put: 'required', patch: true },
    passwordHash: { schema: Type.String(), read: false, column: 'password_hash' },
    fingerprint: { schema: Type.String(), column: 'fingerprint', filter: 'string', advertised: false, empty: 'omit' },
    isIssuedByNetwork: { schema: Type.Boolean(), column: 'is_issued_by_network', kind: 'bool', filter: 'bool', empty: 'omit' },
    isExtendRequested: { schema: Type.Boolean(), column: 'is_extend_requested', kind: 'bool', filter: 'bool', empty: 'omit' },
    isKeyRollRequested: { schema: Type.Boolean(), column: 'is_key_roll_requested', kind: 'bool', filter: 'bool', empty: 'omit' },
    extendRequestedAt: { schema: DateTimeNullable, column: 'extend_requested_at', kind: 'datetime', empty: 'omit' },
    lastAuthResolvedToRoot: { schema: Type.Boolean(), column: 'last_auth_resolved_to_root', kind: 'bool', empty: 'omit' },
    lastExtendRolledKeys: { schema: Type.Boolean(), column: 'last_extend_rolled_keys', kind: 'bool', empty: 'omit' },
    // Written with certPem (cert-facts.ts `publicKeyPrint`), for the filter below; not in the read model.
    publicKeyPrint: { schema: Type.String(), read: false, column: 'public_key_print' },
  },
  computed: { identity: EntityRef },
  // Upstream's store names as well; the password hash and salt are never filterable.
  extraSymbols: {
    identity: { kind: 'scalar', type: 'string', sql: 'e.identity_id' },
    certFingerprint: { kind: 'scalar', type: 'string', sql: 'e.fingerprint' },
    certPem: { kind: 'scalar', type: 'string', sql: 'e.cert_pem' },
    updbUsername: { kind: 'scalar', type: 'string', sql: 'e.username' },
    extendRequestedAt: { kind: 'scalar', type: 'datetime', sql: 'e.extend_requested_at' },
    lastAuthResolvedToRoot: { kind: 'scalar', type: 'bool', sql: 'e.last_auth_resolved_to_root' },
    lastExtendRolledKeys: { kind: 'scalar', type: 'bool', sql: 'e.last_extend_rolled_keys' },
    // SHA-256 of the certificate's public key (SubjectPublicKeyInfo), hex, as upstream computes it.
    publicKeyPrint: { kind: 'scalar', type: 'string', sql: 'e.public_key_print', sortable: false },
  },
});
