/**
 * Reads and writes of the `enrollments` table that more than one module needs: the token lookup of the
 * enroll routes, the atomic consumption of an enrollment by an enroll method, and the identity read
 * model's `enrollment` summary. Creation, refresh and deletion live in enrollment.service.ts.
 */
import { caRef } from '../resources/entity-ref.ts';
import { ApiError } from '../errors.ts';
import type { Sql, Tx } from '../store/store.ts';
import { insertEntity } from '../store/entity-table.ts';
import { newEntityId } from '../ids.ts';
import { authenticatorResource } from '../resources/authenticators/authenticator.resource.ts';
import type { EnrollmentRow } from './enroll-method.ts';

interface StoredRow {
  id: string;
  method: string;
  identity_id: string | null;
  router_id: string | null;
  ca_id: string | null;
  username: string | null;
  token: string;
  jwt: string;
  issued_at: string;
  expires_at: string;
}

function toRow(r: StoredRow): EnrollmentRow {
  return {
    id: r.id,
    method: r.method,
    identityId: r.identity_id,
    routerId: r.router_id,
    caId: r.ca_id,
    username: r.username,
    token: r.token,
    jwt: r.jwt,
    issuedAt: r.issued_at,
    expiresAt: r.expires_at,
  };
}

const COLUMNS = 'id, method, identity_id, router_id, ca_id, username, token, jwt, issued_at, expires_at';

/** The outstanding enrollment a token names (exact match on the unique index), if any. */
export async function findEnrollmentByToken(q: Sql, token: string): Promise<EnrollmentRow | undefined> {
  const row = await q.get<StoredRow>(`SELECT ${COLUMNS} FROM enrollments WHERE token = ?`, [token]);
  return row ? toRow(row) : undefined;
}

export async function findEnrollmentById(q: Sql, id: string): Promise<EnrollmentRow | undefined> {
  const row = await q.get<StoredRow>(`SELECT ${COLUMNS} FROM enrollments WHERE id = ?`, [id]);
  return row ? toRow(row) : undefined;
}

/** Whether the enrollment's window has closed at `now`. */
export function isEnrollmentExpired(enrollment: EnrollmentRow, now: Date): boolean {
  return Date.parse(enrollment.expiresAt) <= now.getTime();
}

/**
 * Deletes the enrollment inside the caller's write transaction. When it is already gone (or its token was
 * refreshed meanwhile) another request used or replaced the token first: INVALID_ENROLLMENT_TOKEN.
 */
export async function consumeEnrollment(tx: Tx, enrollment: EnrollmentRow): Promise<void> {
  const deleted = await tx.run('DELETE FROM enrollments WHERE id = ? AND token = ?', [enrollment.id, enrollment.token]);
  if (deleted.changes !== 1) throw new ApiError('INVALID_ENROLLMENT_TOKEN');
}

/**
 * The identity read model's `enrollment` object: one entry per outstanding method (`ott`, `ottca`,
 * `updb`), absent methods omitted; `ottca` also names its CA.
 */
export async function identityEnrollmentSummary(q: Sql, identityId: string): Promise<Record<string, unknown>> {
  const rows = await q.all<StoredRow>(`SELECT ${COLUMNS} FROM enrollments WHERE identity_id = ? ORDER BY created_at, id`, [identityId]);
  const out: Record<string, unknown> = {};
  for (const r of rows) {
    if (out[r.method] !== undefined) continue;
    const base = { id: r.id, jwt: r.jwt, token: r.token, expiresAt: r.expires_at };
    if (r.method === 'ott' || r.method === 'updb') out[r.method] = base;
    else if (r.method === 'ottca') {
      const ca = r.ca_id
        ? await q.get<{ name: string; is_verified: number; is_auto_ca_enrollment_enabled: number }>(
            'SELECT name, is_verified, is_auto_ca_enrollment_enabled FROM cas WHERE id = ?',
            [r.ca_id],
          )
        : undefined;
      const ref = ca && r.ca_id ? caRef(r.ca_id, ca.name, { isVerified: ca.is_verified, isAutoCaEnrollmentEnabled: ca.is_auto_ca_enrollment_enabled }) : undefined;
      out.ottca = { id: r.id, ...(ref ? { ca: ref } : {}), caId: r.ca_id ?? '', jwt: r.jwt, token: r.token, expiresAt: r.expires_at };
    }
  }
  return out;
}

/** An identity holds at most one authenticator per method: enrolling another one is a conflict. */
export async function assertNoAuthenticator(q: Sql, identityId: string, method: 'cert' | 'updb'): Promise<void> {
  if (await q.get('SELECT 1 FROM authenticators WHERE identity_id = ? AND method = ?', [identityId, method])) {
    throw new ApiError('MAX_AUTHENTICATOR_METHODS_REACHED', {
      cause: { code: 'UNHANDLED', message: `identity ${identityId} already has an authenticator of method ${method}` },
    });
  }
}

/** Stores the certificate authenticator of a certificate the network just issued to the identity. */
export async function insertIssuedCertAuthenticator(tx: Tx, identityId: string, issued: { chainPem: string; fingerprint: string }, now: string): Promise<void> {
  await insertEntity(tx, authenticatorResource.decl, {
    id: newEntityId(),
    identityId,
    method: 'cert',
    certPem: issued.chainPem,
    fingerprint: issued.fingerprint,
    isIssuedByNetwork: true,
    createdAt: now,
    updatedAt: now,
    tags: {},
  });
}
