/**
 * Controller records: registering this instance at start, and the per-API read model (the client API
 * shows only the client-facing API addresses, as upstream).
 */
import type { Store } from '../../store/store.ts';
import type { Values } from '../../store/entity-table.ts';
import { createEntityService } from '../entity-service.ts';
import { controllerResource } from './controller.resource.ts';
import { bumpVersion } from '../../cluster/network.ts';
import type { ListRequest } from '../entity-service.ts';

export interface ControllerRegistration {
  id: string;
  /** `tls:<host>:<port>`: where routers reach its control channel. */
  ctrlAddress: string;
  certPem: string;
  fingerprint: string;
  apiAddresses: Record<string, Array<{ url: string; version: string }>>;
}

const clientApiKeys = new Set(['edge-client', 'edge-oidc']);

export function createControllerService(store: Store) {
  const entities = createEntityService(controllerResource, store);

  /** Inserts or refreshes this instance's record and marks it online. */
  async function register(self: ControllerRegistration, now = new Date().toISOString()): Promise<void> {
    await store.write(async (tx) => {
      await tx.run(
        `INSERT INTO controllers (id, name, cert_pem, fingerprint, ctrl_address, api_addresses, is_online, last_joined_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET cert_pem = excluded.cert_pem, fingerprint = excluded.fingerprint, ctrl_address = excluded.ctrl_address,
           api_addresses = excluded.api_addresses, is_online = 1, last_joined_at = excluded.last_joined_at, updated_at = excluded.updated_at`,
        [self.id, self.id, self.certPem, self.fingerprint, self.ctrlAddress, JSON.stringify(self.apiAddresses), now, now, now],
      );
      await bumpVersion(tx);
    });
  }

  /** Marks the instance offline (when it stops: call it before the store is closed). */
  async function markOffline(id: string): Promise<void> {
    await store.write(async (tx) => {
      if ((await tx.run('UPDATE controllers SET is_online = 0 WHERE id = ? AND is_online = 1', [id])).changes > 0) await bumpVersion(tx);
    });
  }

  function presentFor(api: 'client' | 'management') {
    return (values: Values): Record<string, unknown> => {
      const detail = controllerResource.presentStored(values);
      if (api === 'client') {
        const all = (values.apiAddresses ?? {}) as Record<string, unknown>;
        detail.apiAddresses = Object.fromEntries(Object.entries(all).filter(([k]) => clientApiKeys.has(k)));
        delete detail.ctrlAddress;
      }
      return detail;
    };
  }

  /**
   * The live controllers. Alone on the embedded store a controller lists none, as upstream's standalone controller;
   * on a shared store, those online (the leader takes a controller offline once its lock is gone, src/cluster/network.ts).
   */
  function list(req: ListRequest) {
    return entities.list(req, { sql: store.kind === 'postgres' ? 'e.is_online = 1' : '1 = 0', params: [] });
  }

  return { ...entities, list, register, markOffline, presentFor };
}

export type ControllerService = ReturnType<typeof createControllerService>;
