/**
 * Edge router rules beyond generic CRUD (upstream model §3.5, §3.14): only `is_edge = 1` rows are edge
 * routers; create issues an `erott` enrollment; role attributes feed the access index; a tunneler-enabled
 * router owns a same-id `Router` identity and a system edge router policy, created, renamed and removed
 * with it; delete strips the router from policies and removes its tunneler records (enrollments and
 * terminators go by foreign key); re-enroll replaces the enrollment and clears the certificate.
 */
import type { LiveRouter } from '../../fabric/live-routers.ts';
import type { Db } from '../../store/database.ts';
import { prepare, type Values } from '../../store/entity-table.ts';
import { withTransaction, type Tx } from '../../store/transaction.ts';
import { ApiError, assertFound, fieldError } from '../../errors.ts';
import { newShortId } from '../../ids.ts';
import { idSetCondition } from '../../query/dialect.ts';
import { createEntityService, isoNow, systemClock, type Clock, type ListRequest } from '../entity-service.ts';
import { normalizeRoleAttributes, type AccessService } from '../../access/access.service.ts';
import { enrollmentFieldsOf, type PendingRouterEnrollment, type RouterEnrollments } from '../routers/router-enrollment.ts';
import { edgeRouterResource } from './edge-router.resource.ts';

const EDGE_ONLY = { sql: 'e.is_edge = 1', params: [] as unknown[] };

export const EMPTY_VERSION_INFO = { arch: '', buildDate: '', os: '', revision: '', version: '' };

export function systemEdgeRouterPolicyName(routerId: string): string {
  return `edge-router-${routerId}-system`;
}

/** The tunneler identity (same id and name as the router, type Router) and the router's system ERP. */
function createTunnelerRecords(tx: Tx, access: AccessService, routerId: string, name: string, now: string): void {
  try {
    prepare(
      tx.db,
      `INSERT INTO identities (id, name, type_id, is_admin, is_default_admin, auth_policy_id, created_at, updated_at)
       VALUES (?, ?, 'Router', 0, 0, 'default', ?, ?)`,
    ).run(routerId, name, now, now);
  } catch (err) {
    if ((err as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT')) throw fieldError('name', 'name must be unique', name);
    throw err;
  }
  access.entityChanged(tx, 'identity', routerId, []);
  const roles = [`@${routerId}`];
  prepare(
    tx.db,
    `INSERT INTO edge_router_policies (id, name, semantic, identity_roles, edge_router_roles, created_at, updated_at, tags, is_system)
     VALUES (?, ?, 'AnyOf', ?, ?, ?, ?, '{}', 1)`,
  ).run(routerId, systemEdgeRouterPolicyName(routerId), JSON.stringify(roles), JSON.stringify(roles), now, now);
  access.policyChanged(tx, { id: routerId, kind: 'edgeRouterPolicy', semantic: 'AnyOf', roles: { identityRoles: roles, edgeRouterRoles: roles } });
}

/** Removes the router's system ERP and its Router-type identity, when present. */
function removeTunnelerRecords(tx: Tx, access: AccessService, routerId: string): void {
  if (prepare(tx.db, 'SELECT 1 FROM edge_router_policies WHERE id = ? AND is_system = 1').get(routerId)) {
    access.policyRemoved(tx, routerId);
    prepare(tx.db, 'DELETE FROM edge_router_policies WHERE id = ?').run(routerId);
  }
  if (prepare(tx.db, "SELECT 1 FROM identities WHERE id = ? AND type_id = 'Router'").get(routerId)) {
    access.entityRemoved(tx, 'identity', routerId);
    prepare(tx.db, 'DELETE FROM identities WHERE id = ?').run(routerId);
  }
}

/**
 * Everything an edge router's delete removes besides its row (shared with `/routers` deletes): tunneler
 * records, `@id` references in policies, the index entry. Enrollments and terminators cascade by FK.
 */
export function cleanupEdgeRouter(tx: Tx, access: AccessService, routerId: string): void {
  removeTunnelerRecords(tx, access, routerId);
  access.entityRemoved(tx, 'edgeRouter', routerId);
}

export interface EdgeRouterServiceDeps {
  db: Db;
  access: AccessService;
  enrollments: RouterEnrollments;
  /** Connected routers, by id (what they reported on their control channels). */
  liveRouters: () => ReadonlyMap<string, LiveRouter>;
  clock?: Clock;
}

export function createEdgeRouterService({ db, access, enrollments, liveRouters, clock = systemClock }: EdgeRouterServiceDeps) {
  // Set for the duration of one synchronous create: the id and enrollment prepared before it.
  let pending: PendingRouterEnrollment | undefined;

  function assertEdge(existing: Values): void {
    if (!existing.isEdge) throw new ApiError('NOT_FOUND', { cause: { code: 'UNHANDLED', message: `edgeRouter with id ${String(existing.id)} not found` } });
  }

  const entities = createEntityService(
    edgeRouterResource,
    db,
    {
      newId: () => pending?.routerId ?? newShortId(),
      beforeCreate(_tx, values) {
        values.roleAttributes = normalizeRoleAttributes(values.roleAttributes as string[], { checkPrefix: true });
      },
      afterCreate(tx, values) {
        const id = values.id as string;
        if (pending) enrollments.insert(tx, pending);
        access.entityChanged(tx, 'edgeRouter', id, values.roleAttributes as string[]);
        if (values.isTunnelerEnabled) createTunnelerRecords(tx, access, id, values.name as string, values.createdAt as string);
      },
      beforeUpdate(_tx, existing, changes) {
        assertEdge(existing);
        if (changes.roleAttributes !== undefined) changes.roleAttributes = normalizeRoleAttributes(changes.roleAttributes as string[], { checkPrefix: true });
      },
      afterUpdate(tx, existing, changes) {
        const id = existing.id as string;
        if (changes.roleAttributes !== undefined) access.entityChanged(tx, 'edgeRouter', id, changes.roleAttributes as string[]);
        const wasTunneler = existing.isTunnelerEnabled === true;
        const isTunneler = changes.isTunnelerEnabled === undefined ? wasTunneler : changes.isTunnelerEnabled === true;
        const name = (changes.name ?? existing.name) as string;
        if (!wasTunneler && isTunneler) createTunnelerRecords(tx, access, id, name, isoNow(clock));
        else if (wasTunneler && !isTunneler) removeTunnelerRecords(tx, access, id);
        else if (isTunneler && name !== existing.name) {
          try {
            prepare(tx.db, "UPDATE identities SET name = ?, updated_at = ? WHERE id = ? AND type_id = 'Router'").run(name, isoNow(clock), id);
          } catch (err) {
            if ((err as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT')) throw fieldError('name', 'name must be unique', name);
            throw err;
          }
        }
      },
      beforeDelete(tx, existing) {
        assertEdge(existing);
        cleanupEdgeRouter(tx, access, existing.id as string);
      },
    },
    clock,
  );

  function combine(extra?: { sql: string; params: unknown[] }) {
    return extra ? { sql: `${EDGE_ONLY.sql} AND (${extra.sql})`, params: [...extra.params] } : EDGE_ONLY;
  }

  function list(req: ListRequest, extraWhere?: { sql: string; params: unknown[] }) {
    return entities.list(req, combine(extraWhere));
  }

  /** A page of the edge routers among `ids`, with the caller's filter, sort and paging. */
  function listAmong(req: ListRequest, ids: Iterable<string>) {
    return list(req, idSetCondition('e.id', ids));
  }

  function find(id: string): Values | undefined {
    const v = entities.find(id);
    return v && v.isEdge ? v : undefined;
  }

  function get(id: string): Values {
    return assertFound(find(id), 'edgeRouter', id);
  }

  async function create(body: Record<string, unknown>): Promise<string> {
    const id = newShortId();
    const enrollment = await enrollments.prepare(id, 'erott');
    pending = enrollment;
    try {
      return entities.create(body, { isEdge: true });
    } finally {
      pending = undefined;
    }
  }

  /** POST /edge-routers/{id}/re-enroll: one fresh erott enrollment, certificate and verification cleared. */
  async function reEnroll(id: string): Promise<void> {
    get(id);
    let enrollment: PendingRouterEnrollment;
    try {
      enrollment = await enrollments.prepare(id, 'erott');
      withTransaction(db, (tx) => {
        const exists = prepare(tx.db, 'SELECT 1 FROM routers WHERE id = ? AND is_edge = 1').get(id);
        if (!exists) throw new ApiError('NOT_FOUND', { cause: { code: 'UNHANDLED', message: `edgeRouter with id ${id} not found` } });
        enrollments.removeAll(tx, id);
        enrollments.insert(tx, enrollment);
        prepare(tx.db, 'UPDATE routers SET fingerprint = NULL, cert_pem = NULL, is_verified = 0, updated_at = ? WHERE id = ?').run(isoNow(clock), id);
      });
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw new ApiError('FAILED_ER_REENROLLMENT', { cause: { code: 'UNHANDLED', message: err instanceof Error ? err.message : String(err) } });
    }
  }

  /** The edge router read model (edgeRouterDetail). */
  function present(values: Values): Record<string, unknown> {
    const detail = edgeRouterResource.presentStored(values);
    const attrs = values.roleAttributes as string[] | null;
    detail.roleAttributes = attrs && attrs.length > 0 ? attrs : null;
    detail.appData = values.appData ?? {};
    const listeners = values.ctrlChanListeners as Record<string, unknown> | null;
    if (!listeners || Object.keys(listeners).length === 0) delete detail.ctrlChanListeners;
    if (values.fingerprint == null) delete detail.fingerprint;
    detail.certPem = values.certPem ?? null;
    detail.unverifiedFingerprint = values.unverifiedFingerprint ?? null;
    detail.unverifiedCertPem = values.unverifiedCertPem ?? null;
    const live = liveRouters().get(values.id as string);
    detail.hostname = live ? live.hostname : (values.hostname ?? '');
    detail.supportedProtocols = live ? { ...live.supportedProtocols } : (values.supportedProtocols ?? {});
    detail.versionInfo = live ? { ...live.versionInfo } : (values.versionInfo ?? { ...EMPTY_VERSION_INFO });
    detail.isOnline = live !== undefined;
    detail.syncStatus = live ? live.syncStatus : 'SYNC_UNKNOWN';
    detail.interfaces = null;
    if (!values.isVerified) {
      Object.assign(detail, enrollmentFieldsOf(db, values.id as string));
    }
    return detail;
  }

  return { ...entities, list, listAmong, find, get, create, reEnroll, present };
}

export type EdgeRouterService = ReturnType<typeof createEdgeRouterService>;
