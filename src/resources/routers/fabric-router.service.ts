/**
 * Routers as the fabric API reads them: the stored record with the live state of its control channel, as the
 * process holding it recorded it (`router_connections`; of a router connected to several controllers, its channel
 * to this one, else another's): `connected` (to any controller), the version the router announced in its hello and
 * the link listeners it offered. A router nobody holds shows `connected: false`, no version and null listeners.
 */
import type { LiveRouter } from '../../fabric/live-routers.ts';
import type { Store } from '../../store/store.ts';
import type { Values } from '../../store/entity-table.ts';
import { createEntityService } from '../entity-service.ts';
import { fabricRouterResource } from './fabric-router.resource.ts';

export interface FabricRouterServiceDeps {
  store: Store;
  /** Connected routers, by id. */
  liveRouters: () => ReadonlyMap<string, LiveRouter> | Promise<ReadonlyMap<string, LiveRouter>>;
}

/** The version fields a router sent, without the empty ones (upstream omits them). */
function versionInfoOf(live: LiveRouter): Record<string, string> {
  return Object.fromEntries(Object.entries(live.versionInfo).filter(([, v]) => typeof v === 'string' && v !== ''));
}

export function createFabricRouterService({ store, liveRouters }: FabricRouterServiceDeps) {
  const entities = createEntityService(fabricRouterResource, store);

  async function present(values: Values): Promise<Record<string, unknown>> {
    const detail = fabricRouterResource.presentStored(values);
    const live = (await liveRouters()).get(values.id as string);
    detail.connected = live !== undefined;
    detail.listenerAddresses = live && live.listeners.length > 0 ? live.listeners.map((l) => ({ address: l.address, protocol: l.protocol })) : null;
    if (live) detail.versionInfo = versionInfoOf(live);
    detail.interfaces = null;
    return detail;
  }

  return { list: entities.list, get: entities.get, find: entities.find, present };
}

export type FabricRouterService = ReturnType<typeof createFabricRouterService>;
