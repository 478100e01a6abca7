/**
 * The per-caller parts of the service read model (model.md §2.3, §2.4; auth.md §5.4):
 * - `permissions`: `Bind` then `Dial` as the identity holds them, `["Invalid"]` when neither;
 * - `config`: the service's configs of the wanted types overlaid with the identity's overrides, keyed by
 *   config type name (`{}` when no type is wanted on lists, null on a detail);
 * - `postureQueries`: one entry per service policy linking identity and service, with its posture checks
 *   evaluated for the caller's API session (src/posture); pseudo entries, one per permission, when no
 *   posture check exists or no policy links the pair.
 */
import type { Values } from '../../store/entity-table.ts';
import type { Sql, Store } from '../../store/store.ts';
import { versionedLookup } from '../../store/versioned-lookup.ts';
import type { AccessService } from '../../access/access.service.ts';
import type { Clock, Page } from '../entity-service.ts';
import { createPostureEvaluator, placeholderQueries } from '../../posture/posture-evaluator.ts';
import { createServiceCatalog, storedReadModel, type CatalogService, type ServiceCatalogState } from './service-catalog.ts';
import { MAX_INT64_TEXT } from '../../query/index.ts';

/** Config types asked for: every type, or a set of type ids. */
export type WantedTypes = 'all' | ReadonlySet<string>;

/** Names or ids (and `all`) to type ids; unknown entries are dropped (model.md §2.3). */
export async function resolveWantedTypes(q: Sql, requested: readonly string[]): Promise<WantedTypes> {
  if (requested.includes('all')) return 'all';
  const out = new Set<string>();
  const byIdOrName = 'SELECT id FROM config_types WHERE id = ? OR name = ?';
  for (const entry of requested) {
    const row = await q.get<{ id: string }>(byIdOrName, [entry, entry]);
    if (row) out.add(row.id);
  }
  return out;
}

/** Config types stored on an API session at authentication (ids, or `["all"]`). */
export function sessionWantedTypes(stored: readonly string[]): WantedTypes {
  return stored.includes('all') ? 'all' : new Set(stored);
}

/** A page taken from one catalogue state. */
export interface CatalogPage {
  catalog: ServiceCatalogState;
  entries: CatalogService[];
  totalCount: number;
}

export interface ServiceViewOptions {
  /** Identity whose permissions and posture queries are shown. */
  identityId: string;
  /** API session whose posture (MFA, endpoint state) the queries are evaluated for; MFA fails without one. */
  apiSessionId?: string;
  /** Compute `permissions` for the identity; false renders null (management sub-lists, roleFilter). */
  permissions: boolean;
  /** Config types for `config`; undefined renders null without merging. */
  configTypes?: WantedTypes;
  /** `config` when no type is wanted: `{}` on lists, null on a detail. */
  emptyConfig: 'object' | 'null';
}

/** JSON text of the posture placeholders by permission set (a handful of entries). */
const placeholderJson = new Map<string, string>();

export function createServiceViews(store: Store, access: AccessService, clock: Clock) {
  const posture = createPostureEvaluator({ store, access, clock });
  const services = createServiceCatalog(store);
  /** An identity's config overrides, kept while none changed (a client's service list with configs reads them). */
  const overridesOf = versionedLookup(store, ['identity_service_configs'], (identityId: string) =>
    store.all<{ service_id: string; config_type_id: string; config_id: string }>(
      'SELECT service_id, config_type_id, config_id FROM identity_service_configs WHERE identity_id = ? ORDER BY service_id, config_type_id',
      [identityId],
    ),
  );
  function permissionNames(p: { dial: boolean; bind: boolean }): string[] {
    const out: string[] = [];
    if (p.bind) out.push('Bind');
    if (p.dial) out.push('Dial');
    return out.length ? out : ['Invalid'];
  }

  /**
   * The identity's overrides for the page's services (in key order, as stored per pair), with the values
   * taken from the catalogue.
   */
  async function pageOverrides(catalog: ServiceCatalogState, identityId: string, items: readonly Values[]) {
    const overrides = new Map<string, Array<{ typeId: string; value: unknown }>>();
    const rows = (await overridesOf(identityId))!;
    if (rows.length === 0) return overrides;
    const onPage = new Set(items.map((v) => v.id as string));
    for (const o of rows) {
      const config = catalog.configs.get(o.config_id);
      if (!config || !onPage.has(o.service_id)) continue;
      let list = overrides.get(o.service_id);
      if (!list) overrides.set(o.service_id, (list = []));
      list.push({ typeId: o.config_type_id, value: config.value });
    }
    return overrides;
  }

  function configMap(
    catalog: ServiceCatalogState,
    overrides: ReadonlyMap<string, Array<{ typeId: string; value: unknown }>>,
    serviceId: string,
    configIds: readonly string[],
    wanted: WantedTypes,
  ): Record<string, unknown> {
    const isWanted = (typeId: string) => wanted === 'all' || wanted.has(typeId);
    const byType = new Map<string, unknown>();
    for (const id of configIds) {
      const c = catalog.configs.get(id);
      if (c && isWanted(c.typeId)) byType.set(c.typeId, c.value);
    }
    for (const o of overrides.get(serviceId) ?? []) if (isWanted(o.typeId)) byType.set(o.typeId, o.value);
    const out: Record<string, unknown> = {};
    for (const [typeId, data] of byType) out[catalog.typeNames.get(typeId) ?? typeId] = data;
    return out;
  }

  /** The stored read model of a service: the catalogue's copy when `values` came from it, else built. */
  function base(catalog: ServiceCatalogState, values: Values): Record<string, unknown> {
    const position = catalog.positionOf.get(values.id as string);
    const entry = position === undefined ? undefined : catalog.ordered[position];
    return entry && entry.values === values ? { ...entry.base } : storedReadModel(values);
  }

  /** What rendering a page for one caller needs, read once per page. */
  async function callerContext(catalog: ServiceCatalogState, items: readonly Values[], opts: ServiceViewOptions) {
    const mine = access.index.identityServices(opts.identityId);
    const wanted = opts.configTypes;
    const merging = wanted !== undefined && (wanted === 'all' || wanted.size > 0);
    const overrides = merging ? await pageOverrides(catalog, opts.identityId, items) : undefined;
    const postureQueries = await posture.queryContext(opts.identityId, opts.apiSessionId);
    return {
      permissions: (id: string) => (opts.permissions ? permissionNames(mine.permissions(id)) : null),
      /** `postureQueries` as JSON text (the placeholders' text is made once per permission set). */
      postureQueriesJson: async (id: string, permissions: readonly string[] | null): Promise<string> => {
        if (!postureQueries.placeholdersOnly) return JSON.stringify(await postureQueries(id, permissions));
        const key = permissions ? permissions.join(',') : '';
        let json = placeholderJson.get(key);
        if (json === undefined) placeholderJson.set(key, (json = JSON.stringify(placeholderQueries(permissions))));
        return json;
      },
      /** The merged config map, or null / `{}` when none is wanted (`undefined`: the caller renders the empty form). */
      config: (id: string, values: Values): Record<string, unknown> | null | undefined => {
        if (wanted === undefined) return null;
        if (!merging) return undefined;
        return configMap(catalog, overrides!, id, (values.configs as string[] | null) ?? [], wanted);
      },
      postureQueries,
    };
  }

  /** Renders services for one caller view; the identity's policies and posture data are read once per call. */
  async function present(items: Values[], opts: ServiceViewOptions): Promise<Array<Record<string, unknown>>> {
    const catalog = await services.current();
    const ctx = await callerContext(catalog, items, opts);
    const rendered: Array<Record<string, unknown>> = [];
    for (const values of items) {
      const out = base(catalog, values);
      const id = values.id as string;
      const permissions = ctx.permissions(id);
      out.permissions = permissions;
      const config = ctx.config(id, values);
      out.config = config === undefined ? (opts.emptyConfig === 'object' ? {} : null) : config;
      out.postureQueries = await ctx.postureQueries(id, permissions);
      rendered.push(out);
    }
    return rendered;
  }

  /**
   * `{data, meta}` of a list page as JSON text, for items taken from the catalogue (`defaultPage`): the same
   * document `present` and the route's response serializer make (a test holds the two paths equal), built from
   * each service's stored JSON plus its per-caller fields, without copying or re-serializing the stored part.
   */
  async function presentPageJson(page: CatalogPage, opts: ServiceViewOptions, paging: Page, filterableFieldsJson: string): Promise<string> {
    const { catalog, entries } = page;
    const ctx = await callerContext(catalog, entries.map((e) => e.values), opts);
    const emptyConfig = opts.emptyConfig === 'object' ? '{}' : 'null';
    const parts: string[] = [];
    for (const { values, jsonHead } of entries) {
      const id = values.id as string;
      const permissions = ctx.permissions(id);
      const config = ctx.config(id, values);
      const configJson = config === undefined ? emptyConfig : JSON.stringify(config);
      parts.push(`${jsonHead},"permissions":${JSON.stringify(permissions)},"config":${configJson},"postureQueries":${await ctx.postureQueriesJson(id, permissions)}}`);
    }
    const limit = paging.unlimited ? MAX_INT64_TEXT : String(paging.limit);
    return `{"data":[${parts.join(',')}],"meta":{${filterableFieldsJson ? `"filterableFields":${filterableFieldsJson},` : ''}"pagination":{"limit":${limit},"offset":${paging.offset},"totalCount":${paging.totalCount}}}}`;
  }

  /**
   * One page of the services an identity may dial or bind, in the list's default order (id ascending), from
   * the catalogue: the same page and count as the store's `ORDER BY id LIMIT/OFFSET`.
   */
  async function defaultPage(identityId: string, limit: number, offset: number): Promise<CatalogPage> {
    const catalog = await services.current();
    const mine = access.index.identityServices(identityId);
    const positions = mine.memo(catalog, () => {
      const found: number[] = [];
      mine.forEachService((serviceId) => {
        const p = catalog.positionOf.get(serviceId);
        if (p !== undefined) found.push(p);
      });
      return Int32Array.from(found).sort();
    });
    const end = limit < 0 ? positions.length : Math.min(positions.length, offset + limit);
    const entries: CatalogService[] = [];
    for (let i = offset; i < end; i++) entries.push(catalog.ordered[positions[i]!]!);
    return { catalog, entries, totalCount: positions.length };
  }

  return { present, presentPageJson, defaultPage };
}

export type ServiceViews = ReturnType<typeof createServiceViews>;
