/**
 * The per-caller parts of the service read model (model.md §2.3, §2.4; auth.md §5.4):
 * - `permissions`: `Bind` then `Dial` as the identity holds them, `["Invalid"]` when neither;
 * - `config`: the service's configs of the wanted types overlaid with the identity's overrides, keyed by
 *   config type name (`{}` when no type is wanted on lists, null on a detail);
 * - `postureQueries`: one entry per service policy linking identity and service, with its posture checks
 *   (no posture data exists, so every check fails and a policy passes only without checks); pseudo entries,
 *   one per permission, when no posture check exists or no policy links the pair.
 */
import type { Db } from '../../store/database.ts';
import { prepare, type Values } from '../../store/entity-table.ts';
import type { AccessService } from '../../access/access.service.ts';
import type { Clock } from '../entity-service.ts';
import { serviceResource } from './service.resource.ts';

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
  /** Compute `permissions` for the identity; false renders null (management sub-lists, roleFilter). */
  permissions: boolean;
  /** Config types for `config`; undefined renders null without merging. */
  configTypes?: WantedTypes;
  /** `config` when no type is wanted: `{}` on lists, null on a detail. */
  emptyConfig: 'object' | 'null';
}

const NO_CHECKS = 'no posture checks defined';

export function createServiceViews(db: Db, access: AccessService, clock: Clock) {
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

  function postureQuery(checkId: string, now: Date): Record<string, unknown> | undefined {
    const row = prepare(db, 'SELECT id, type_id, details, created_at, updated_at, tags FROM posture_checks WHERE id = ?').get(checkId) as
      | { id: string; type_id: string; details: string; created_at: string; updated_at: string; tags: string }
      | undefined;
    if (!row) return undefined;
    const details = JSON.parse(row.details || '{}') as Record<string, unknown>;
    const q: Record<string, unknown> = {
      _links: { self: { href: `./posture-checks/${row.id}` } },
      createdAt: row.created_at,
      id: row.id,
      tags: JSON.parse(row.tags || '{}'),
      updatedAt: row.updated_at,
      isPassing: false,
      queryType: row.type_id,
      timeout: -1,
      timeoutRemaining: -1,
    };
    const ref = (p: unknown) => {
      const proc = (p ?? {}) as Record<string, unknown>;
      return { osType: proc.osType, path: proc.path };
    };
    if (row.type_id === 'PROCESS') q.process = ref(details.process);
    if (row.type_id === 'PROCESS_MULTI') q.processes = ((details.processes as unknown[]) ?? []).map(ref);
    if (row.type_id === 'MFA') {
      const seconds = typeof details.timeoutSeconds === 'number' && details.timeoutSeconds > 0 ? details.timeoutSeconds : -1;
      q.timeout = seconds;
      // No MFA pass is recorded in posture data yet: nothing remains of a timed check.
      q.timeoutRemaining = seconds === -1 ? -1 : 0;
      if (seconds !== -1) q.timeoutAt = now.toISOString();
      q.promptOnWake = details.promptOnWake === true;
      q.promptOnUnlock = details.promptOnUnlock === true;
    }
    return q;
  }

  function anyPostureCheck(): boolean {
    return prepare(db, 'SELECT 1 FROM posture_checks LIMIT 1').get() !== undefined;
  }

  function postureQueries(identityId: string, serviceId: string, permissions: readonly string[] | null, checksExist: boolean): unknown[] {
    const entries: Array<Record<string, unknown>> = [];
    if (checksExist) {
      const now = clock.now();
      const policies = [...access.index.linkingServicePolicies(identityId, serviceId)].sort();
      for (const policyId of policies) {
        const queries: unknown[] = [];
        for (const checkId of [...access.index.membersOf(policyId, 'postureCheckRoles')].sort()) {
          const q = postureQuery(checkId, now);
          if (q) queries.push(q);
        }
        entries.push({ isPassing: queries.length === 0, policyId, policyType: access.index.policyType(policyId) ?? 'Dial', postureQueries: queries });
      }
    }
    if (entries.length > 0) return entries;
    return (permissions ?? []).map((perm) => ({
      isPassing: true,
      policyId: `dummy ${perm.toLowerCase()} policy: ${NO_CHECKS}`,
      policyType: perm,
      postureQueries: [],
    }));
  }

  /** Renders services for one caller view; posture existence is read once per call. */
  function present(items: Values[], opts: ServiceViewOptions): Array<Record<string, unknown>> {
    const checksExist = anyPostureCheck();
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
      out.postureQueries = postureQueries(opts.identityId, id, permissions, checksExist);
      return out;
    });
  }

  return { present, permissionsOf };
}

export type ServiceViews = ReturnType<typeof createServiceViews>;
