/**
 * Router (`/routers`, `/transit-routers`) rules beyond generic CRUD (upstream model §3.6): create issues a
 * `trott` enrollment and takes name, cost, noTraversal, ctrlChanListeners and tags (`disabled` is ignored);
 * a duplicate name is reported as the shared router name index does; updates change only name, tags and
 * ctrlChanListeners, and edge routers can not be updated here (409); deleting an edge router here cleans
 * up exactly as an edge router delete does.
 */
import type { LiveRouter } from '../../fabric/live-routers.ts';
import type { Values } from '../../store/entity-table.ts';
import type { Store } from '../../store/store.ts';
import { ApiError, fieldError } from '../../errors.ts';
import { newShortId } from '../../ids.ts';
import { createEntityService, systemClock, type Clock } from '../entity-service.ts';
import type { AccessService } from '../../access/access.service.ts';
import { cleanupEdgeRouter } from '../edge-routers/edge-router.service.ts';
import { enrollmentFieldsOf, type PendingRouterEnrollment, type RouterEnrollments } from './router-enrollment.ts';
import { routerResource } from './router.resource.ts';

export interface RouterServiceDeps {
  store: Store;
  access: AccessService;
  enrollments: RouterEnrollments;
  /** Connected routers, by id (what they reported on their control channels). */
  liveRouters: () => ReadonlyMap<string, LiveRouter> | Promise<ReadonlyMap<string, LiveRouter>>;
  clock?: Clock;
}

/** Fields a router update may change; the rest of a PUT/PATCH body is ignored, as upstream. */
const updatable = new Set(['name', 'tags', 'ctrlChanListeners']);

export function createRouterService({ store, access, enrollments, liveRouters, clock = systemClock }: RouterServiceDeps) {
  const entities = createEntityService(
    routerResource,
    store,
    {
      newId: () => newShortId(),
      async beforeCreate(tx, values) {
        const name = values.name as string;
        if (await tx.get('SELECT 1 FROM routers WHERE name = ?', [name])) {
          throw fieldError('name', `duplicate value '${name}' in unique index on routers store`, name);
        }
        values.disabled = false;
      },
      beforeUpdate(_tx, existing, changes) {
        if (existing.isEdge) throw new ApiError('CAN_NOT_UPDATE_ROUTER');
        for (const field of Object.keys(changes)) if (!updatable.has(field)) delete changes[field];
      },
      async beforeDelete(tx, existing) {
        if (existing.isEdge) await cleanupEdgeRouter(tx, access, existing.id as string);
      },
    },
    clock,
  );

  async function create(body: Record<string, unknown>): Promise<string> {
    const id = newShortId();
    const enrollment = await enrollments.prepare(id, 'trott');
    // The router id is the one its signed enrollment names; the enrollment is stored in the same transaction.
    return entities.create(body, { isEdge: false }, { id: enrollment.routerId, within: (tx) => enrollments.insert(tx, enrollment) });
  }

  /** The router read model (routerDetail). Edge routers show as verified base routers, without enrollment. */
  async function present(values: Values): Promise<Record<string, unknown>> {
    const detail = routerResource.presentStored(values);
    const listeners = values.ctrlChanListeners as Record<string, unknown> | null;
    if (!listeners || Object.keys(listeners).length === 0) delete detail.ctrlChanListeners;
    detail.fingerprint = values.fingerprint ?? null;
    detail.unverifiedFingerprint = values.unverifiedFingerprint ?? null;
    detail.unverifiedCertPem = values.unverifiedCertPem ?? null;
    detail.isOnline = (await liveRouters()).has(values.id as string);
    detail.interfaces = null;
    if (values.isEdge) {
      detail.isVerified = true;
    } else if (!values.isVerified) {
      Object.assign(detail, await enrollmentFieldsOf(store, values.id as string));
    }
    return detail;
  }

  return { ...entities, create, present };
}

export type RouterService = ReturnType<typeof createRouterService>;
