/**
 * The per-caller parts of the service read model (model.md §2.3, §2.4; auth.md §5.4):
 * - `permissions`: `Bind` then `Dial` as the identity holds them, `["Invalid"]` when neither;
 * - `config`: the service's configs of the wanted types overlaid with the identity's overrides, keyed by
 *   config type name (`{}` when no type is wanted on lists, null on a detail);
 * - `postureQueries`: one entry per service policy linking identity and service, with its posture checks
 *   evaluated for the caller's API session (src/posture); pseudo entries, one per permission, when no
 *   posture check exists or no policy links the pair.
 */
import type { Db } from '../../store/database.ts';
import { prepare, type Values } from '../../store/entity-table.ts';
import type { AccessService } from '../../access/access.service.ts';
import type { Clock } from '../entity-service.ts';
import { serviceResource } from './service.resource.ts';
import { createPostureEvaluator } from '../../posture/posture-evaluator.ts';

/** Config types asked for: every type, or a set of type ids. */
export type WantedTypes = 'all' | ReadonlySet<string>;

/** Names or ids (and `all`) to type ids; unknown entries are dropped (model.md §2.3). */
export function resolveWantedTypes(db: Db, requested: readonly string[]): WantedTypes {
  if (requested.includes('all')) return 'all';
  const out = new Set<string>();
  const byIdOrName = prepare(db, 'SELECT id FROM config_types WHERE id = ? OR name = ?');
  for (const entry of requested) {
    const row = byIdOrName.get(entry, entry) as { id: string } | undefined;
    if (row) out.add(row.id);
  }
  return out;
}

/** Config types stored on an API session at authentication (ids, or `["all"]`). */
export function sessionWantedTypes(stored: readonly string[]): WantedTypes {
  return stored.includes('all') ? 'all' : new Set(stored);
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

export function createServiceViews(db: Db, access: AccessService, clock: Clock) {
  const posture = createPostureEvaluator({ db, access, clock });
  function permissionsOf(identityId: string, serviceId: string): string[] {
    const p = access.index.permissions(identityId, serviceId);
    const out: string[] = [];
    if (p.bind) out.push('Bind');
    if (p.dial) out.push('Dial');
    return out.length ? out : ['Invalid'];
  }

  /**
   * Parsed config data by config id, reused while the stored text is unchanged (the text is read on every
   * call, so a write by any process is seen at once; the cache only saves the parse).
   */
  const parsedConfigs = new Map<string, { text: string; value: unknown }>();
  const MAX_PARSED_CONFIGS = 10_000;
  function parsedConfig(id: string, text: string): unknown {
    const hit = parsedConfigs.get(id);
    if (hit && hit.text === text) return hit.value;
    if (parsedConfigs.size >= MAX_PARSED_CONFIGS) parsedConfigs.clear();
    const value = JSON.parse(text) as unknown;
    parsedConfigs.set(id, { text, value });
    return value;
  }

  /**
   * The configs one page needs, read with three queries for the whole page: the services' configs, the
   * identity's overrides for those services (in key order, as per pair before) and the type names.
   */
  function pageConfigs(identityId: string, items: readonly Values[]) {
    const configIds = new Set<string>();
    const serviceIds: string[] = [];
    for (const values of items) {
      serviceIds.push(values.id as string);
      for (const id of (values.configs as string[] | null) ?? []) configIds.add(id);
    }
    const configs = new Map<string, { typeId: string; value: unknown }>();
    if (configIds.size > 0) {
      const rows = prepare(db, 'SELECT id, config_type_id, data FROM configs WHERE id IN (SELECT value FROM json_each(?))').all(JSON.stringify([...configIds])) as Array<{
        id: string;
        config_type_id: string;
        data: string;
      }>;
      for (const r of rows) configs.set(r.id, { typeId: r.config_type_id, value: parsedConfig(r.id, r.data) });
    }
    const overrides = new Map<string, Array<{ typeId: string; value: unknown }>>();
    const overrideRows = prepare(
      db,
      `SELECT o.service_id, o.config_type_id, o.config_id, c.data FROM identity_service_configs o JOIN configs c ON c.id = o.config_id
       WHERE o.identity_id = ? AND o.service_id IN (SELECT value FROM json_each(?)) ORDER BY o.service_id, o.config_type_id`,
    ).all(identityId, JSON.stringify(serviceIds)) as Array<{ service_id: string; config_type_id: string; config_id: string; data: string }>;
    for (const o of overrideRows) {
      let list = overrides.get(o.service_id);
      if (!list) overrides.set(o.service_id, (list = []));
      list.push({ typeId: o.config_type_id, value: parsedConfig(o.config_id, o.data) });
    }
    const typeIds = new Set<string>();
    for (const c of configs.values()) typeIds.add(c.typeId);
    for (const list of overrides.values()) for (const o of list) typeIds.add(o.typeId);
    const typeNames = new Map<string, string>();
    if (typeIds.size > 0) {
      const rows = prepare(db, 'SELECT id, name FROM config_types WHERE id IN (SELECT value FROM json_each(?))').all(JSON.stringify([...typeIds])) as Array<{ id: string; name: string }>;
      for (const r of rows) typeNames.set(r.id, r.name);
    }
    return { configs, overrides, typeNames };
  }

  function configMap(page: ReturnType<typeof pageConfigs>, serviceId: string, configIds: readonly string[], wanted: WantedTypes): Record<string, unknown> {
    const isWanted = (typeId: string) => wanted === 'all' || wanted.has(typeId);
    const byType = new Map<string, unknown>();
    for (const id of configIds) {
      const c = page.configs.get(id);
      if (c && isWanted(c.typeId)) byType.set(c.typeId, c.value);
    }
    for (const o of page.overrides.get(serviceId) ?? []) if (isWanted(o.typeId)) byType.set(o.typeId, o.value);
    const out: Record<string, unknown> = {};
    for (const [typeId, data] of byType) out[page.typeNames.get(typeId) ?? typeId] = data;
    return out;
  }

  /** Renders services for one caller view; posture existence is read once per call. */
  function present(items: Values[], opts: ServiceViewOptions): Array<Record<string, unknown>> {
    const postureQueries = posture.queryContext(opts.identityId, opts.apiSessionId);
    const wanted = opts.configTypes;
    const merging = wanted !== undefined && (wanted === 'all' || wanted.size > 0);
    const page = merging ? pageConfigs(opts.identityId, items) : undefined;
    return items.map((values) => {
      const out = serviceResource.presentStored(values);
      const id = values.id as string;
      const attrs = values.roleAttributes as string[] | null;
      const configs = values.configs as string[] | null;
      out.roleAttributes = attrs && attrs.length ? attrs : null;
      out.configs = configs && configs.length ? configs : null;
      const permissions = opts.permissions ? permissionsOf(opts.identityId, id) : null;
      out.permissions = permissions;
      if (opts.configTypes === undefined) out.config = null;
      else if (opts.configTypes !== 'all' && opts.configTypes.size === 0) out.config = opts.emptyConfig === 'object' ? {} : null;
      else out.config = configMap(page!, id, configs ?? [], opts.configTypes);
      out.postureQueries = postureQueries(id, permissions);
      return out;
    });
  }

  return { present, permissionsOf };
}

export type ServiceViews = ReturnType<typeof createServiceViews>;
