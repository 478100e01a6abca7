/**
 * Identity enrollments (enrollment.md §1, §4.7, §6.2, §6.4; management seeds §2.10 and §3): creating an
 * outstanding one-time token with its signed enrollment JWT (explicitly, inline with an identity, or by
 * reverting an authenticator), refreshing it, deleting it, flagging certificate authenticators for
 * extension, and the enrollment read model.
 *
 * The JWT is signed with the TLS server key before the write transaction opens (signing is asynchronous);
 * every rule that depends on stored state (the identity and CA exist, no enrollment of the same method is
 * outstanding) is checked inside the transaction that writes the row.
 */
import { entityRef, identityRef } from '../resources/entity-ref.ts';
import { endApiSessionsOf } from '../auth/api-session.service.ts';
import { randomUUID } from 'node:crypto';
import { ApiError, fieldError, notFound } from '../errors.ts';
import { newEntityId, newShortId } from '../ids.ts';
import { signJwt, type JwtSigningKey } from '../pki/enrollment-jwt.ts';
import type { Store, Tx } from '../store/store.ts';
import { getEntity, insertEntity, updateEntity, type Values } from '../store/entity-table.ts';
import { createEntityService, isoNow, systemClock, type Clock, type ListRequest } from '../resources/entity-service.ts';
import { enrollmentResource } from '../resources/enrollments/enrollment.resource.ts';
import { authenticatorResource } from '../resources/authenticators/authenticator.resource.ts';
import { identityEnrollmentSummary } from './enrollment-store.ts';
import type { Membership } from '../cluster/membership.ts';

/** Upstream's default `edge.enrollment.edgeIdentity.duration` (enrollment.md §1.7). */
export const IDENTITY_ENROLLMENT_MINUTES = 180;

export type IdentityEnrollmentMethod = 'ott' | 'ottca' | 'updb';

/** A signed enrollment that is not stored yet. */
export interface PendingEnrollment {
  id: string;
  method: IdentityEnrollmentMethod;
  identityId: string;
  caId: string | null;
  username: string | null;
  token: string;
  jwt: string;
  issuedAt: string;
  expiresAt: string;
}

/** The `enrollment` object of an identity create request. */
export interface InlineEnrollmentRequest {
  ott?: boolean;
  ottca?: string;
  updb?: string;
}

export interface EnrollmentServiceOptions {
  store: Store;
  pki: JwtSigningKey;
  /** `https://<edge API host:port>`, no trailing slash: the JWT `iss`. */
  issuer: string;
  /** The controllers of the network: their control addresses (`tls:host:port`) are the JWT `ctrls` claim. */
  membership: Pick<Membership, 'live'>;
  clock?: Clock;
}

interface CallerLike {
  isAdmin: boolean;
  isDefaultAdmin?: boolean;
}

/** A request date-time as stored: RFC 3339 UTC with milliseconds. */
function requestedExpiry(value: unknown, field = 'expiresAt'): Date {
  const date = typeof value === 'string' ? new Date(value) : undefined;
  if (!date || Number.isNaN(date.getTime())) throw fieldError(field, `${field} in body must be of type date-time: "${String(value ?? '')}"`, value);
  return date;
}

export function createEnrollmentService(opts: EnrollmentServiceOptions) {
  const { store, pki, issuer } = opts;
  const clock = opts.clock ?? systemClock;
  const entities = createEntityService(enrollmentResource, store, {}, clock);

  /** The enrollment JWT (enrollment.md §1.2): registered claims, then `em` and `ctrls`, in that order. */
  function signEnrollmentJwt(subject: string, method: string, token: string, expires: Date): Promise<string> {
    const claims = {
      iss: issuer,
      sub: subject,
      aud: [''],
      exp: Math.floor(expires.getTime() / 1000),
      jti: token,
      em: method,
      ctrls: opts.membership.live().map((m) => m.ctrlAddress),
    };
    return signJwt(claims, pki);
  }

  async function prepareEnrollment(
    identityId: string,
    method: IdentityEnrollmentMethod,
    extra: { caId?: string | null; username?: string | null; expires?: Date; id?: string } = {},
  ): Promise<PendingEnrollment> {
    const now = clock.now();
    const expires = extra.expires ?? new Date(now.getTime() + IDENTITY_ENROLLMENT_MINUTES * 60_000);
    const token = randomUUID();
    return {
      id: extra.id ?? newEntityId(),
      method,
      identityId,
      caId: method === 'ottca' ? (extra.caId ?? null) : null,
      username: method === 'updb' ? (extra.username ?? null) : null,
      token,
      jwt: await signEnrollmentJwt(identityId, method, token, expires),
      issuedAt: now.toISOString(),
      expiresAt: expires.toISOString(),
    };
  }

  async function assertNoOutstanding(tx: Tx, identityId: string, method: string): Promise<void> {
    if (await tx.get('SELECT 1 FROM enrollments WHERE identity_id = ? AND method = ?', [identityId, method])) {
      throw new ApiError('ENROLLMENT_EXISTS', {
        cause: { code: 'UNHANDLED', message: `an enrollment of method ${method} is already outstanding for identity ${identityId}` },
      });
    }
  }

  async function caExists(tx: Tx, caId: string | null): Promise<boolean> {
    return caId !== null && (await tx.get('SELECT 1 FROM cas WHERE id = ?', [caId])) !== undefined;
  }

  async function insertPending(tx: Tx, p: PendingEnrollment, tags: unknown = {}): Promise<void> {
    await insertEntity(tx, enrollmentResource.decl, {
      id: p.id,
      method: p.method,
      identityId: p.identityId,
      caId: p.caId,
      username: p.username,
      token: p.token,
      jwt: p.jwt,
      issuedAt: p.issuedAt,
      expiresAt: p.expiresAt,
      createdAt: p.issuedAt,
      updatedAt: p.issuedAt,
      tags: tags ?? {},
    });
  }

  // --- inline enrollment of a new identity (POST /identities with `enrollment`) ---

  /** Signs the enrollment an identity create asks for (priority ott, ottca, updb); undefined when none. */
  async function prepareInline(identityId: string, request: InlineEnrollmentRequest | undefined): Promise<PendingEnrollment | undefined> {
    if (!request) return undefined;
    // Enrollments created with an identity get short ids, like the identity itself (upstream model §ids).
    if (request.ott === true) return prepareEnrollment(identityId, 'ott', { id: newShortId() });
    if (typeof request.ottca === 'string' && request.ottca !== '') return prepareEnrollment(identityId, 'ottca', { id: newShortId(), caId: request.ottca });
    if (typeof request.updb === 'string' && request.updb !== '') return prepareEnrollment(identityId, 'updb', { id: newShortId(), username: request.updb });
    return undefined;
  }

  /** Stores an inline enrollment in the identity's create transaction; an unknown CA is 404 with a caId cause. */
  async function insertInline(tx: Tx, p: PendingEnrollment): Promise<void> {
    if (p.method === 'ottca' && !(await caExists(tx, p.caId))) {
      throw new ApiError('NOT_FOUND', { cause: { field: 'caId', reason: 'no CA with this id exists', value: p.caId ?? '' } });
    }
    await insertPending(tx, p);
  }

  // --- explicit enrollments (POST /enrollments) ---

  async function create(body: Record<string, unknown>): Promise<string> {
    const method = body.method as IdentityEnrollmentMethod;
    const identityId = body.identityId as string;
    const expires = requestedExpiry(body.expiresAt);
    if (expires.getTime() <= clock.now().getTime()) throw fieldError('expiresAt', 'expiresAt must be in the future', body.expiresAt);
    const caId = typeof body.caId === 'string' && body.caId !== '' ? body.caId : null;
    const username = typeof body.username === 'string' && body.username !== '' ? body.username : null;
    if (method === 'ottca' && caId === null) throw fieldError('caId', 'caId is required for method ottca', body.caId ?? null);
    if (method === 'updb' && username === null) throw fieldError('username', 'username is required for method updb', body.username ?? null);
    const pending = await prepareEnrollment(identityId, method, { caId, username, expires });
    await store.write(async (tx) => {
      if (!(await tx.get('SELECT 1 FROM identities WHERE id = ?', [identityId]))) {
        throw fieldError('identityId', `identity with id ${identityId} not found`, identityId);
      }
      if (method === 'ottca' && !(await caExists(tx, caId))) throw fieldError('caId', `ca with id ${String(caId)} not found`, caId);
      await assertNoOutstanding(tx, identityId, method);
      await insertPending(tx, pending, body.tags);
    });
    return pending.id;
  }

  /**
   * A new token, JWT and expiry for an outstanding enrollment (enrollment.md §6.4); the old token stops
   * working. Router enrollments keep their router as the subject.
   */
  async function refresh(id: string, body: Record<string, unknown>): Promise<void> {
    const existing = await entities.get(id);
    const expires = requestedExpiry(body.expiresAt);
    if (expires.getTime() <= clock.now().getTime()) throw fieldError('expiresAt', 'expiresAt must be in the future', body.expiresAt);
    if (!existing.jwt) throw new ApiError('INVALID_ENROLL_METHOD');
    const subject = (existing.identityId ?? existing.routerId) as string;
    const token = randomUUID();
    const jwt = await signEnrollmentJwt(subject, existing.method as string, token, expires);
    const now = isoNow(clock);
    await store.write(async (tx) => {
      const changed = await updateEntity(tx, enrollmentResource.decl, id, { token, jwt, expiresAt: expires.toISOString(), issuedAt: now }, now);
      if (!changed) throw notFound('enrollment', id);
    });
  }

  function listForIdentity(identityId: string, req: ListRequest) {
    return entities.list(req, { sql: 'e.identity_id = ?', params: [identityId] });
  }

  /** enrollmentDetail: subject references by kind, `caId` only when set (upstream's fields, no `details`). */
  async function present(values: Values): Promise<Record<string, unknown>> {
    const detail = enrollmentResource.presentStored(values);
    const identityId = values.identityId as string | null;
    const routerId = values.routerId as string | null;
    if (identityId) {
      const identity = await store.get<{ name: string; auth_policy_id: string }>('SELECT name, auth_policy_id FROM identities WHERE id = ?', [identityId]);
      detail.identity = identityRef(identityId, identity?.name ?? '', identity?.auth_policy_id);
    } else delete detail.identityId;
    if (routerId) {
      const router = await store.get<{ name: string; is_edge: number }>('SELECT name, is_edge FROM routers WHERE id = ?', [routerId]);
      if (router?.is_edge === 1) {
        detail.edgeRouterId = routerId;
        detail.edgeRouter = entityRef('edge-routers', routerId, router.name);
      } else {
        detail.transitRouterId = routerId;
        detail.transitRouter = entityRef('transit-routers', routerId, router?.name ?? '');
      }
    }
    if (values.caId == null) delete detail.caId;
    return detail;
  }

  // --- authenticators (management §3: revert to enrollment, flag for extension) ---

  /**
   * Replaces an authenticator by an enrollment of the matching method (enrollment.md §6.2): updb becomes
   * updb with the same user name, a certificate from a third-party CA becomes ottca with that CA, any other
   * certificate becomes ott. One transaction deletes the authenticator, stores the enrollment and ends the
   * identity's API sessions: a credential being replaced must not keep its sessions.
   */
  async function reEnrollAuthenticator(authenticatorId: string, body: Record<string, unknown>): Promise<string> {
    const authenticator = await getEntity(store, authenticatorResource.decl, authenticatorId);
    if (!authenticator) throw notFound('authenticator', authenticatorId);
    const expires = requestedExpiry(body.expiresAt);
    if (expires.getTime() <= clock.now().getTime()) throw fieldError('expiresAt', 'expiresAt must be in the future', body.expiresAt);
    const caRow = await store.get<{ ca_id: string | null }>('SELECT ca_id FROM authenticators WHERE id = ?', [authenticatorId]);
    const caId = caRow?.ca_id ?? null;
    const method: IdentityEnrollmentMethod = authenticator.method === 'updb' ? 'updb' : caId ? 'ottca' : 'ott';
    const identityId = authenticator.identityId as string;
    const pending = await prepareEnrollment(identityId, method, { caId, username: (authenticator.username as string | null) ?? null, expires });
    await store.write(async (tx) => {
      const deleted = await tx.run('DELETE FROM authenticators WHERE id = ?', [authenticatorId]);
      if (deleted.changes !== 1) throw notFound('authenticator', authenticatorId);
      await assertNoOutstanding(tx, identityId, method);
      await insertPending(tx, pending);
      await endApiSessionsOf(tx, identityId);
    });
    return pending.id;
  }

  /**
   * Flags a certificate authenticator so that API sessions using it ask the client to extend its
   * certificate early (and, with `rollKeys`, to use a new key). Non-certificate authenticators: 403.
   */
  async function requestExtend(authenticatorId: string, body: Record<string, unknown>, caller: CallerLike): Promise<void> {
    const rollKeys = body.rollKeys === true;
    await store.write(async (tx) => {
      const row = await tx.get<{ method: string; is_admin: number; is_default_admin: number }>(
        'SELECT a.method, i.is_admin, i.is_default_admin FROM authenticators a JOIN identities i ON i.id = a.identity_id WHERE a.id = ?',
        [authenticatorId],
      );
      if (!row) throw notFound('authenticator', authenticatorId);
      if (row.method !== 'cert') {
        throw new ApiError('FORBIDDEN', { cause: { code: 'UNHANDLED', message: 'only certificate authenticators can be flagged for extension' } });
      }
      const callerIsAdmin = caller.isAdmin || caller.isDefaultAdmin === true;
      if ((row.is_admin === 1 || row.is_default_admin === 1) && !callerIsAdmin) {
        throw new ApiError('UNAUTHORIZED', { cause: { code: 'UNHANDLED', message: 'only administrators may modify the authenticators of an administrator' } });
      }
      const now = isoNow(clock);
      await tx.run('UPDATE authenticators SET is_extend_requested = 1, is_key_roll_requested = ?, extend_requested_at = ?, updated_at = ? WHERE id = ?', [
        rollKeys ? 1 : 0,
        now,
        now,
        authenticatorId,
      ]);
      await tx.run('UPDATE api_sessions SET is_cert_extend_requested = 1, is_cert_key_roll_requested = ? WHERE authenticator_id = ?', [
        rollKeys ? 1 : 0,
        authenticatorId,
      ]);
    });
  }

  /**
   * The network JWT (enrollment.md §1.6): lets a client that knows only the controller URL bootstrap trust.
   * Signed once per process with the TLS server key; `iss` and `sub` carry a trailing slash and no `exp`.
   */
  let networkJwt: Promise<string> | undefined;
  function networkJwts(): Promise<Array<{ name: string; token: string }>> {
    networkJwt ??= signJwt(
      { iss: `${issuer}/`, sub: `${issuer}/`, aud: ['openziti-enroller'], jti: randomUUID(), em: 'network', ctrls: null },
      pki,
    );
    return networkJwt.then((token) => [{ name: 'default', token }]);
  }

  return {
    resource: enrollmentResource,
    networkJwts,
    list: entities.list,
    get: entities.get,
    find: entities.find,
    remove: entities.remove,
    create,
    refresh,
    listForIdentity,
    present,
    prepareInline,
    insertInline,
    identitySummary: (identityId: string) => identityEnrollmentSummary(store, identityId),
    reEnrollAuthenticator,
    requestExtend,
  };
}

export type EnrollmentService = ReturnType<typeof createEnrollmentService>;
