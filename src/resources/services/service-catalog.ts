/**
 * Every service, decoded once per process, with the configs and config type names the service view merges:
 * the client service list's default order (id ascending) is walked here instead of asking the store for the
 * caller's id set, and a page is rendered without reading or decoding a service row.
 *
 * Current exactly while the change counters of `services`, `configs` and `config_types` (migration 0022) are
 * unchanged: any write to them, by this process or another, rebuilds it at the next read.
 */
import { decodeRow, type Values } from '../../store/entity-table.ts';
import type { Sql, Store } from '../../store/store.ts';
import { serviceResource } from './service.resource.ts';

export interface CatalogService {
  values: Values;
  /** The stored read model (links, fields, roleAttributes/configs as null when empty); copy before adding to it. */
  base: Record<string, unknown>;
  /** `base` as JSON text without its closing brace, for appending the per-caller fields. */
  jsonHead: string;
}

export interface ServiceCatalogState {
  /** Services in id order (the store's order for `ORDER BY id`). */
  ordered: readonly CatalogService[];
  /** Service id → index in `ordered`. */
  positionOf: ReadonlyMap<string, number>;
  configs: ReadonlyMap<string, { typeId: string; value: unknown }>;
  typeNames: ReadonlyMap<string, string>;
}

/** The stored part of a service's read model: links and fields, with empty roleAttributes and configs as null. */
export function storedReadModel(values: Values): Record<string, unknown> {
  const out = serviceResource.presentStored(values);
  const attrs = values.roleAttributes as string[] | null;
  const configs = values.configs as string[] | null;
  out.roleAttributes = attrs && attrs.length ? attrs : null;
  out.configs = configs && configs.length ? configs : null;
  return out;
}

export function createServiceCatalog(store: Store) {
  async function build(q: Sql): Promise<ServiceCatalogState> {
    const ordered: CatalogService[] = [];
    const positionOf = new Map<string, number>();
    for (const row of await q.all('SELECT * FROM services ORDER BY id')) {
      const values = decodeRow(serviceResource.decl, row);
      const base = storedReadModel(values);
      positionOf.set(values.id as string, ordered.length);
      ordered.push({ values, base, jsonHead: JSON.stringify(base).slice(0, -1) });
    }
    const configs = new Map<string, { typeId: string; value: unknown }>();
    for (const r of await q.all<{ id: string; config_type_id: string; data: string }>('SELECT id, config_type_id, data FROM configs')) {
      configs.set(r.id, { typeId: r.config_type_id, value: JSON.parse(r.data) as unknown });
    }
    const typeNames = new Map<string, string>();
    for (const r of await q.all<{ id: string; name: string }>('SELECT id, name FROM config_types')) typeNames.set(r.id, r.name);
    return { ordered, positionOf, configs, typeNames };
  }

  /** The catalogue as the store holds it now (pass the transaction when reading inside a write). */
  const current = store.versioned(['services', 'configs', 'config_types'], build);

  return { current };
}

export type ServiceCatalog = ReturnType<typeof createServiceCatalog>;
