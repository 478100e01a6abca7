/**
 * Wire shapes of API-session certificates (currentApiSessionCertificateDetail, the create request and its
 * response) and the list's filter symbols.
 */
import { Type } from '@sinclair/typebox';
import { baseEntityProperties, CreateLocation } from '../common.schema.ts';
import type { SymbolTable } from '../../query/symbols.ts';
import { baseSymbols } from '../define-resource.ts';

export const apiSessionCertificateDetail = Type.Object({
  ...baseEntityProperties,
  certificate: Type.String(),
  fingerprint: Type.String(),
  subject: Type.String(),
  validFrom: Type.String({ format: 'date-time' }),
  validTo: Type.String({ format: 'date-time' }),
});

export const apiSessionCertificateCreate = Type.Object({ csr: Type.String() });

export const apiSessionCertificateCreated = Type.Object({
  ...CreateLocation.properties,
  cas: Type.String(),
  certificate: Type.String(),
});

export const apiSessionCertificateSymbols: SymbolTable = {
  idSql: 'e.id',
  symbols: {
    ...baseSymbols(),
    apiSession: { kind: 'scalar', type: 'string', sql: 'e.api_session_id' },
    subject: { kind: 'scalar', type: 'string', sql: 'e.subject' },
    fingerprint: { kind: 'scalar', type: 'string', sql: 'e.fingerprint' },
    validAfter: { kind: 'scalar', type: 'datetime', sql: 'e.valid_from', advertised: false },
    validBefore: { kind: 'scalar', type: 'datetime', sql: 'e.valid_to', advertised: false },
  },
};
