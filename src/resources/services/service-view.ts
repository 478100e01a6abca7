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

  function configMap(identityId: string, serviceId: string, configIds: readonly string[], wanted: WantedTypes): Record<string, unknown> {
    const isWanted = (typeId: string) => wanted === 'all' || wanted.has(typeId);
    const byType = new Map<string, unknown>();
    const configRow = prepare(db, 'SELECT config_type_id, data FROM configs WHERE id = ?');
    for (const id of configIds) {
      const row = configRow.get(id) as { config_type_id: string; data: string } | undefined;
      if (row && isWanted(row.config_type_id)) byType.set(row.config_type_id, JSON.parse(row.data));
    }
    const overrides = prepare(
      db,
      'SELECT o.config_type_id, c.data FROM identity_service_configs o JOIN configs c ON c.id = o.config_id WHERE o.identity_id = ? AND o.service_id = ?',
    ).all(identityId, serviceId) as Array<{ config_type_id: string; data: string }>;
    for (const o of overrides) if (isWanted(o.config_type_id)) byType.set(o.config_type_id, JSON.parse(o.data));
    const out: Record<string, unknown> = {};
    const typeName = prepare(db, 'SELECT name FROM config_types WHERE id = ?');
    for (const [typeId, data] of byType) {
      const row = typeName.get(typeId) as { name: string } | undefined;
      out[row?.name ?? typeId] = data;
    }
    return out;
  }

  /** Renders services for one caller view; posture existence is read once per call. */
  function present(items: Values[], opts: ServiceViewOptions): Array<Record<string, unknown>> {
    const postureQueries = posture.queryContext(opts.identityId, opts.apiSessionId);
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
      else out.config = configMap(opts.identityId, id, configs ?? [], opts.configTypes);
      out.postureQueries = postureQueries(id, permissions);
      return out;
    });
  }

  return { present, permissionsOf };
}

export type ServiceViews = ReturnType<typeof createServiceViews>;
