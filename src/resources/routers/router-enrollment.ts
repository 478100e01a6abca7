/**
 * Router enrollments: the one-time-token enrollment an edge router (`erott`) or a transit router (`trott`)
 * gets when it is created or re-enrolled (enrollment.md §1.1-1.2, §1.7, §6.3). The JWT is signed with the
 * controller's TLS server key before the write transaction opens (signing is asynchronous); the row is
 * written inside it. Expiry: 180 minutes, the upstream default router enrollment duration.
 */
import { randomUUID } from 'node:crypto';
import type { Sql, Tx } from '../../store/store.ts';
import { newEntityId } from '../../ids.ts';
import { signJwt, type JwtSigningKey } from '../../pki/enrollment-jwt.ts';
import type { Clock } from '../entity-service.ts';
import type { Membership } from '../../cluster/membership.ts';

export type RouterEnrollmentMethod = 'erott' | 'trott';

export const ROUTER_ENROLLMENT_MINUTES = 180;

export interface PendingRouterEnrollment {
  id: string;
  method: RouterEnrollmentMethod;
  routerId: string;
  token: string;
  jwt: string;
  issuedAt: string;
  expiresAt: string;
}

export interface RouterEnrollmentSummary {
  jwt: string;
  token: string;
  createdAt: string;
  expiresAt: string;
}

export interface RouterEnrollmentOptions {
  pki: JwtSigningKey;
  /** `https://<edge API host:port>`, no trailing slash. */
  issuer: string;
  /**
   * The controllers of the network: the control address (`tls:host:port`) of every live one goes into the JWT's
   * `ctrls` claim, read at each signing; an enrolling router saves them as its controller endpoints.
   */
  membership: Pick<Membership, 'live'>;
  clock: Clock;
}

export function createRouterEnrollments(opts: RouterEnrollmentOptions) {
  /** Signs a fresh enrollment for the router; nothing is stored yet. */
  async function prepareEnrollment(routerId: string, method: RouterEnrollmentMethod): Promise<PendingRouterEnrollment> {
    const now = opts.clock.now();
    const expires = new Date(now.getTime() + ROUTER_ENROLLMENT_MINUTES * 60_000);
    const token = randomUUID();
    // Claim order as upstream: registered claims, then `em` and `ctrls`.
    const claims = {
      iss: opts.issuer,
      sub: routerId,
      aud: [''],
      exp: Math.floor(expires.getTime() / 1000),
      jti: token,
      em: method,
      ctrls: opts.membership.live().map((m) => m.ctrlAddress),
    };
    const jwt = await signJwt(claims, opts.pki);
    return { id: newEntityId(), method, routerId, token, jwt, issuedAt: now.toISOString(), expiresAt: expires.toISOString() };
  }

  /** Writes a prepared enrollment inside the caller's transaction. */
  async function insert(tx: Tx, e: PendingRouterEnrollment): Promise<void> {
    await tx.run(
      `INSERT INTO enrollments (id, method, router_id, token, jwt, issued_at, expires_at, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [e.id, e.method, e.routerId, e.token, e.jwt, e.issuedAt, e.expiresAt, e.issuedAt, e.issuedAt],
    );
  }

  async function removeAll(tx: Tx, routerId: string): Promise<void> {
    await tx.run('DELETE FROM enrollments WHERE router_id = ?', [routerId]);
  }

  return { prepare: prepareEnrollment, insert, removeAll };
}

export type RouterEnrollments = ReturnType<typeof createRouterEnrollments>;

/** The router's first outstanding enrollment, for the enrollment fields of the read model. */
export async function routerEnrollmentOf(q: Sql, routerId: string): Promise<RouterEnrollmentSummary | undefined> {
  const row = await q.get<{ jwt: string; token: string; created_at: string; expires_at: string }>(
    'SELECT jwt, token, created_at, expires_at FROM enrollments WHERE router_id = ? ORDER BY created_at, id LIMIT 1',
    [routerId],
  );
  return row ? { jwt: row.jwt, token: row.token, createdAt: row.created_at, expiresAt: row.expires_at } : undefined;
}

/** The read model's enrollment fields of a router that is not verified yet (none once it is). */
export async function enrollmentFieldsOf(q: Sql, routerId: string): Promise<Record<string, string>> {
  const enrollment = await routerEnrollmentOf(q, routerId);
  if (!enrollment) return {};
  return {
    enrollmentJwt: enrollment.jwt,
    enrollmentToken: enrollment.token,
    enrollmentCreatedAt: enrollment.createdAt,
    enrollmentExpiresAt: enrollment.expiresAt,
  };
}
