/**
 * Every edge router, decoded once per process, in the two orders the client API pages them: by name (the
 * routers a session lists) and by id (the default order of `GET /current-identity/edge-routers`). Current
 * exactly while the change counters of `routers` and `router_connections` (migrations 0022, 0025) are
 * unchanged; any write to either table, by this process or another, rebuilds it at the next read.
 */
import type { Sql, Store } from '../../store/store.ts';

export interface CatalogEdgeRouter {
  id: string;
  isVerified: boolean;
  /** The stored row, as `SELECT *` reads it. */
  row: Readonly<Record<string, unknown>>;
  /** `describe(row)`, made once per catalogue (frozen: copy before changing). */
  props: Readonly<Record<string, unknown>>;
}

export interface EdgeRouterCatalogState {
  byName: readonly CatalogEdgeRouter[];
  byId: readonly CatalogEdgeRouter[];
}

/** `describe` turns a stored row into the properties the client API shows for every edge router. */
export function createEdgeRouterCatalog(store: Store, describe: (row: Readonly<Record<string, unknown>>) => Record<string, unknown>) {
  async function build(q: Sql): Promise<EdgeRouterCatalogState> {
    // A connected router shows what it reported on its control channel (src/fabric/live-routers.ts): on one of them
    // when it is connected to several controllers (the first by controller id), so it is listed once.
    const rows = await q.all(
      `SELECT r.*, CASE WHEN c.router_id IS NULL THEN 0 ELSE 1 END AS is_online,
         CASE WHEN c.router_id IS NULL THEN r.hostname ELSE c.hostname END AS hostname,
         CASE WHEN c.router_id IS NULL THEN r.supported_protocols ELSE c.supported_protocols END AS supported_protocols,
         CASE WHEN c.router_id IS NULL THEN r.version_info ELSE c.version_info END AS version_info,
         c.sync_status
       FROM routers r LEFT JOIN router_connections c ON c.router_id = r.id
         AND c.controller_id = (SELECT MIN(f.controller_id) FROM router_connections f WHERE f.router_id = r.id)
       WHERE r.is_edge = 1 ORDER BY r.name, r.id`,
    );
    const byName = rows.map((row) => ({ id: row.id as string, isVerified: row.is_verified === 1, row, props: Object.freeze(describe(row)) }));
    const byId = await q.column<string>('SELECT id FROM routers WHERE is_edge = 1 ORDER BY id');
    const of = new Map(byName.map((r) => [r.id, r]));
    return { byName, byId: byId.map((id) => of.get(id)!) };
  }

  /** The catalogue as the store holds it now (pass the transaction when reading inside a write). */
  const current = store.versioned(['routers', 'router_connections'], build);

  return { current };
}
