/**
 * Every edge router, decoded once per process, in the two orders the client API pages them: by name (the
 * routers a session lists) and by id (the default order of `GET /current-identity/edge-routers`). Current
 * exactly while the `routers` change counter (migration 0022) is unchanged; any write to the table, by this
 * process or another, rebuilds it at the next read.
 */
import type { Db } from '../../store/database.ts';
import { prepare } from '../../store/entity-table.ts';
import { versionedValue } from '../../store/table-versions.ts';

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
export function createEdgeRouterCatalog(db: Db, describe: (row: Readonly<Record<string, unknown>>) => Record<string, unknown>) {
  function build(): EdgeRouterCatalogState {
    const rows = prepare(db, 'SELECT * FROM routers WHERE is_edge = 1 ORDER BY name, id').all() as Array<Record<string, unknown>>;
    const byName = rows.map((row) => ({ id: row.id as string, isVerified: row.is_verified === 1, row, props: Object.freeze(describe(row)) }));
    const byId = prepare(db, 'SELECT id FROM routers WHERE is_edge = 1 ORDER BY id').pluck().all() as string[];
    const of = new Map(byName.map((r) => [r.id, r]));
    return { byName, byId: byId.map((id) => of.get(id)!) };
  }

  /** The catalogue as the store holds it now. */
  const current = versionedValue(db, ['routers'], build);

  return { current };
}
