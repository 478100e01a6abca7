/**
 * API session read models (apiSessionDetail for management listings, currentApiSessionDetail for the
 * session's own caller) and the management listing's filter symbols. Sessions are written by the
 * authentication code, never through a create route.
 */
import { Type } from '@sinclair/typebox';
import { EntityRef, baseEntityProperties } from '../common.schema.ts';
import type { SymbolTable } from '../../query/symbols.ts';
import { baseSymbols } from '../define-resource.ts';

const AuthQuery = Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true });

const apiSessionProps = {
  ...baseEntityProperties,
  authQueries: Type.Array(AuthQuery),
  authenticatorId: Type.String(),
  cachedLastActivityAt: Type.String({ format: 'date-time' }),
  configTypes: Type.Array(Type.String()),
  identity: EntityRef,
  identityId: Type.String(),
  improperClientCertChain: Type.Optional(Type.Boolean()),
  ipAddress: Type.String(),
  isCertExtendRequested: Type.Optional(Type.Boolean()),
  isCertExtendable: Type.Boolean(),
  isCertKeyRollRequested: Type.Optional(Type.Boolean()),
  isMfaComplete: Type.Boolean(),
  isMfaRequired: Type.Boolean(),
  lastActivityAt: Type.String({ format: 'date-time' }),
  token: Type.String(),
};

export const apiSessionDetail = Type.Object(apiSessionProps);
export const currentApiSessionDetail = Type.Object({
  ...apiSessionProps,
  expirationSeconds: Type.Integer(),
  expiresAt: Type.String({ format: 'date-time' }),
});

export const apiSessionSymbols: SymbolTable = {
  idSql: 'e.id',
  symbols: {
    ...baseSymbols(),
    identity: { kind: 'scalar', type: 'string', sql: 'e.identity_id' },
    ipAddress: { kind: 'scalar', type: 'string', sql: 'e.ip_address' },
    authenticator: { kind: 'scalar', type: 'string', sql: 'e.authenticator_id' },
    lastActivityAt: { kind: 'scalar', type: 'datetime', sql: 'e.last_activity_at' },
    mfaComplete: { kind: 'scalar', type: 'bool', sql: 'e.is_mfa_complete' },
    mfaRequired: { kind: 'scalar', type: 'bool', sql: 'e.is_mfa_required' },
    improperClientCertChain: { kind: 'scalar', type: 'bool', sql: 'e.improper_client_cert_chain' },
    // Only the token's hash is stored (and listed as `token`): a filter on `token` compares hashes.
    token: { kind: 'scalar', type: 'string', sql: 'e.token_hash' },
  },
};
