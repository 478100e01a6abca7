/**
 * Edge router rules beyond generic CRUD (upstream model §3.5, §3.14): only `is_edge = 1` rows are edge
 * routers; create issues an `erott` enrollment; role attributes feed the access index; a tunneler-enabled
 * router owns a same-id `Router` identity and a system edge router policy, created, renamed and removed
 * with it; delete strips the router from policies and removes its tunneler records (enrollments and
 * terminators go by foreign key); re-enroll replaces the enrollment and clears the certificate.
 */
import type { LiveRouter } from '../../fabric/live-routers.ts';
import type { Values } from '../../store/entity-table.ts';
import type { Store, Tx } from '../../store/store.ts';
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

/** A constraint violation (SQLite's SQLITE_CONSTRAINT_*, PostgreSQL's SQLSTATE class 23). */
function isConstraintError(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('SQLITE_CONSTRAINT') || /^23[0-9A-Z]{3}$/.test(code));
}

/** The tunneler identity (same id and name as the router, type Router) and the router's system ERP. */
async function createTunnelerRecords(tx: Tx, access: AccessService, routerId: string, name: string, now: string): Promise<void> {
  try {
    await tx.run(
      `INSERT INTO identities (id, name, type_id, is_admin, is_default_admin, auth_policy_id, created_at, updated_at)
       VALUES (?, ?, 'Router', 0, 0, 'default', ?, ?)`,
      [routerId, name, now, now],
    );
  } catch (err) {
    if (isConstraintError(err)) throw fieldError('name', 'name must be unique', name);
    throw err;
  }
  await access.entityChanged(tx, 'identity', routerId, []);
  const roles = [`@${routerId}`];
  await tx.run(
    `INSERT INTO edge_router_policies (id, name, semantic, identity_roles, edge_router_roles, created_at, updated_at, tags, is_system)
     VALUES (?, ?, 'AnyOf', ?, ?, ?, ?, '{}', 1)`,
    [routerId, systemEdgeRouterPolicyName(routerId), JSON.stringify(roles), JSON.stringify(roles), now, now],
  );
  await access.policyChanged(tx, { id: routerId, kind: 'edgeRouterPolicy', semantic: 'AnyOf', roles: { identityRoles: roles, edgeRouterRoles: roles } });
}

/** Removes the router's system ERP and its Router-type identity, when present. */
async function removeTunnelerRecords(tx: Tx, access: AccessService, routerId: string): Promise<void> {
  if (await tx.get('SELECT 1 FROM edge_router_policies WHERE id = ? AND is_system = 1', [routerId])) {
    await access.policyRemoved(tx, routerId);
    await tx.run('DELETE FROM edge_router_policies WHERE id = ?', [routerId]);
  }
  if (await tx.get("SELECT 1 FROM identities WHERE id = ? AND type_id = 'Router'", [routerId])) {
    await access.entityRemoved(tx, 'identity', routerId);
    await tx.run('DELETE FROM identities WHERE id = ?', [routerId]);
  }
}

/**
 * Everything an edge router's delete removes besides its row (shared with `/routers` deletes): tunneler
 * records, `@id` references in policies, the index entry. Enrollments and terminators cascade by FK.
 */
export async function cleanupEdgeRouter(tx: Tx, access: AccessService, routerId: string): Promise<void> {
  await removeTunnelerRecords(tx, access, routerId);
  await access.entityRemoved(tx, 'edgeRouter', routerId);
}

export interface EdgeRouterServiceDeps {
  store: Store;
  access: AccessService;
  enrollments: RouterEnrollments;
  /** Connected routers, by id (what they reported on their control channels). */
  liveRouters: () => ReadonlyMap<string, LiveRouter> | Promise<ReadonlyMap<string, LiveRouter>>;
  clock?: Clock;
}

export function createEdgeRouterService({ store, access, enrollments, liveRouters, clock = systemClock }: EdgeRouterServiceDeps) {
  function assertEdge(existing: Values): void {
    if (!existing.isEdge) throw new ApiError('NOT_FOUND', { cause: { code: 'UNHANDLED', message: `edgeRouter with id ${String(existing.id)} not found` } });
  }

  const entities = createEntityService(
    edgeRouterResource,
    store,
    {
      newId: () => newShortId(),
      beforeCreate(_tx, values) {
        values.roleAttributes = normalizeRoleAttributes(values.roleAttributes as string[], { checkPrefix: true });
      },
      async afterCreate(tx, values) {
        const id = values.id as string;
        await access.entityChanged(tx, 'edgeRouter', id, values.roleAttributes as string[]);
        if (values.isTunnelerEnabled) await createTunnelerRecords(tx, access, id, values.name as string, values.createdAt as string);
      },
      beforeUpdate(_tx, existing, changes) {
        assertEdge(existing);
        if (changes.roleAttributes !== undefined) changes.roleAttributes = normalizeRoleAttributes(changes.roleAttributes as string[], { checkPrefix: true });
      },
      async afterUpdate(tx, existing, changes) {
        const id = existing.id as string;
        if (changes.roleAttributes !== undefined) await access.entityChanged(tx, 'edgeRouter', id, changes.roleAttributes as string[]);
        const wasTunneler = existing.isTunnelerEnabled === true;
        const isTunneler = changes.isTunnelerEnabled === undefined ? wasTunneler : changes.isTunnelerEnabled === true;
        const name = (changes.name ?? existing.name) as string;
        if (!wasTunneler && isTunneler) await createTunnelerRecords(tx, access, id, name, isoNow(clock));
        else if (wasTunneler && !isTunneler) await removeTunnelerRecords(tx, access, id);
        else if (isTunneler && name !== existing.name) {
          try {
            await tx.run("UPDATE identities SET name = ?, updated_at = ? WHERE id = ? AND type_id = 'Router'", [name, isoNow(clock), id]);
          } catch (err) {
            if (isConstraintError(err)) throw fieldError('name', 'name must be unique', name);
            throw err;
          }
        }
      },
      async beforeDelete(tx, existing) {
        assertEdge(existing);
        await cleanupEdgeRouter(tx, access, existing.id as string);
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
    return list(req, idSetCondition('e.id', ids, store.dialect));
  }

  async function find(id: string): Promise<Values | undefined> {
    const v = await entities.find(id);
    return v && v.isEdge ? v : undefined;
  }

  async function get(id: string): Promise<Values> {
    return assertFound(await find(id), 'edgeRouter', id);
  }

  async function create(body: Record<string, unknown>): Promise<string> {
    const id = newShortId();
    const enrollment = await enrollments.prepare(id, 'erott');
    // The router id is the one its signed enrollment names; the enrollment is stored in the same transaction.
    return entities.create(body, { isEdge: true }, { id, within: (tx) => enrollments.insert(tx, enrollment) });
  }

  /** POST /edge-routers/{id}/re-enroll: one fresh erott enrollment, certificate and verification cleared. */
  async function reEnroll(id: string): Promise<void> {
    await get(id);
    let enrollment: PendingRouterEnrollment;
    try {
      enrollment = await enrollments.prepare(id, 'erott');
      await store.write(async (tx) => {
        const exists = await tx.get('SELECT 1 FROM routers WHERE id = ? AND is_edge = 1', [id]);
        if (!exists) throw new ApiError('NOT_FOUND', { cause: { code: 'UNHANDLED', message: `edgeRouter with id ${id} not found` } });
        await enrollments.removeAll(tx, id);
        await enrollments.insert(tx, enrollment);
        await tx.run('UPDATE routers SET fingerprint = NULL, cert_pem = NULL, is_verified = 0, updated_at = ? WHERE id = ?', [isoNow(clock), id]);
      });
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw new ApiError('FAILED_ER_REENROLLMENT', { cause: { code: 'UNHANDLED', message: err instanceof Error ? err.message : String(err) } });
    }
  }

  /** The edge router read model (edgeRouterDetail). */
  async function present(values: Values): Promise<Record<string, unknown>> {
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
    const live = (await liveRouters()).get(values.id as string);
    detail.hostname = live ? live.hostname : (values.hostname ?? '');
    detail.supportedProtocols = live ? { ...live.supportedProtocols } : (values.supportedProtocols ?? {});
    detail.versionInfo = live ? { ...live.versionInfo } : (values.versionInfo ?? { ...EMPTY_VERSION_INFO });
    detail.isOnline = live !== undefined;
    detail.syncStatus = live ? live.syncStatus : 'SYNC_UNKNOWN';
    detail.interfaces = null;
    if (!values.isVerified) {
      Object.assign(detail, await enrollmentFieldsOf(store, values.id as string));
    }
    return detail;
  }

  return { ...entities, list, listAmong, find, get, create, reEnroll, present };
}

export type EdgeRouterService = ReturnType<typeof createEdgeRouterService>;
