/**
 * Change-feed rows → the events of one router data model change set.
 *
 * The rows say what to re-read (src/cluster/change-feed.ts): the access service's rows for creates, deletes and
 * role changes of identities, services and posture checks and for every service policy write, and the rows of
 * migration 0029 for the rest (configs, config types, other identity/service/posture check fields, CAs). A batch
 * of rows is turned into events against the current store and access index: each entity named is read once
 * (Create when routers do not have it yet, Update when they do, Delete when it is gone), and membership is
 * compared with what routers were told (`TrackedModel`), so a ServicePolicyChange names exactly the members that
 * came or went. The work is proportional to what the rows name: one re-read per entity, and for an entity whose
 * roles changed one look at each service policy; for a policy, its old and new members in each role list whose
 * semantic or roles changed, and none at all when the write left them as they were (a rename of a policy over
 * 100k identities costs what renaming any other costs).
 *
 * Order inside a change set, so each event finds what it refers to on the router: creates and updates (config
 * types, configs, identities, services, posture checks, service policies), then membership removals and
 * additions, then deletes (service policies, posture checks, services, identities, configs, config types —
 * an entity's removal from policies comes before its delete, as upstream's routers expect), then CA keys, then the
 * revocations of ended JWT sessions.
 */
import type { Sql, Store } from '../../store/store.ts';
import { DataStateAction, PublicKeyFormat, PublicKeyUsage, ServicePolicyRelatedEntityType } from '../proto/edge-ctrl.ts';
import type { MemberField, ModelEvent, PolicyMembers, PolicyMembership, TrackedModel } from './full-state.ts';
import { readCaKey, readConfig, readConfigType, readIdentity, readPolicyRoleKeys, readPostureCheck, readRevocation, readService, readServicePolicy } from './model-store.ts';

export interface FeedRow {
  seq: number;
  kind: string;
  entityId: string;
  op: string;
}

/** Feed kinds that can change the router data model. */
export const MODEL_FEED_KINDS = [
  'all',
  'configType',
  'config',
  'identity',
  'identityData',
  'service',
  'serviceData',
  'postureCheck',
  'postureCheckData',
  'servicePolicy',
  'policy',
  'ca',
  'revocation',
] as const;

const MODEL_KINDS = new Set<string>(MODEL_FEED_KINDS);

export type BatchResult =
  | { kind: 'none' }
  /** Everything may have changed (a rebuild of the access index): routers need the full state again. */
  | { kind: 'reset' }
  /** The events of one change set; `firstSeq`..`lastSeq` are the seqs of the rows that caused them. */
  | { kind: 'changes'; changes: ModelEvent[]; firstSeq: number; lastSeq: number };

type EntityKind = 'identity' | 'service' | 'postureCheck';

const memberOf: Record<EntityKind, { members: 'services' | 'postureChecks' | 'identities'; field: MemberField; type: ServicePolicyRelatedEntityType }> = {
  service: { members: 'services', field: 'serviceRoles', type: ServicePolicyRelatedEntityType.RelatedService },
  postureCheck: { members: 'postureChecks', field: 'postureCheckRoles', type: ServicePolicyRelatedEntityType.RelatedPostureCheck },
  identity: { members: 'identities', field: 'identityRoles', type: ServicePolicyRelatedEntityType.RelatedIdentity },
};

const MEMBER_ORDER: EntityKind[] = ['service', 'postureCheck', 'identity'];

/** Membership changes of one batch: policy → kind → entity → added (true) or removed (false). */
class MembershipChanges {
  private readonly byPolicy = new Map<string, Record<EntityKind, Map<string, boolean>>>();

  note(policyId: string, kind: EntityKind, entityId: string, added: boolean): void {
    let entry = this.byPolicy.get(policyId);
    if (!entry) this.byPolicy.set(policyId, (entry = { service: new Map(), postureCheck: new Map(), identity: new Map() }));
    const map = entry[kind];
    // Removed then added again (or the reverse) inside one batch: the router keeps what it had.
    if (map.has(entityId) && map.get(entityId) !== added) map.delete(entityId);
    else map.set(entityId, added);
  }

  /** Removals then additions per policy, for the policies routers still have. */
  events(policies: ReadonlyMap<string, PolicyMembers>): ModelEvent[] {
    const out: ModelEvent[] = [];
    for (const [policyId, entry] of this.byPolicy) {
      if (!policies.has(policyId)) continue;
      for (const add of [false, true]) {
        for (const kind of MEMBER_ORDER) {
          const ids = [...entry[kind]].filter(([, a]) => a === add).map(([id]) => id);
          if (ids.length === 0) continue;
          out.push({ action: DataStateAction.Create, servicePolicyChange: { policyId, relatedEntityIds: ids, relatedEntityType: memberOf[kind].type, add } });
        }
      }
    }
    return out;
  }
}

export interface ChangeSetBuilderOptions {
  /** Where entities are read when `apply` is given no snapshot of its own. */
  store: Store;
  /** The access index, already brought up to the rows being applied. */
  membership: () => PolicyMembership | Promise<PolicyMembership>;
  /** What routers have; updated as batches are applied. */
  tracked: TrackedModel;
  now?: () => Date;
}

export function createChangeSetBuilder(options: ChangeSetBuilderOptions) {
  const { store, tracked } = options;
  const now = options.now ?? (() => new Date());

  /** Turns one batch of feed rows (any kinds, seq order) into the events of one change set, reading through `q`. */
  async function apply(rows: readonly FeedRow[], q: Sql = store): Promise<BatchResult> {
    const relevant = rows.filter((r) => MODEL_KINDS.has(r.kind));
    if (relevant.length === 0) return { kind: 'none' };
    if (relevant.some((r) => r.kind === 'all' || r.op === 'reload')) return { kind: 'reset' };

    const configTypes = new Set<string>();
    const configs = new Set<string>();
    /** Entity id → whether its policy membership may have changed (its roles, or it came or went). */
    const entities: Record<EntityKind, Map<string, boolean>> = { identity: new Map(), service: new Map(), postureCheck: new Map() };
    const policies = new Set<string>();
    const cas = new Set<string>();
    const revocations = new Set<string>();
    for (const r of relevant) {
      switch (r.kind) {
        case 'configType':
          configTypes.add(r.entityId);
          break;
        case 'config':
          configs.add(r.entityId);
          break;
        case 'identity':
        case 'service':
        case 'postureCheck':
          entities[r.kind].set(r.entityId, true);
          break;
        case 'identityData':
        case 'serviceData':
        case 'postureCheckData': {
          const kind = r.kind.slice(0, -4) as EntityKind;
          if (!entities[kind].has(r.entityId)) entities[kind].set(r.entityId, false);
          break;
        }
        case 'servicePolicy':
          policies.add(r.entityId);
          break;
        case 'policy':
          // The removal of a policy whose kind its writer did not know: ours only if routers have it.
          if (tracked.policies.has(r.entityId)) policies.add(r.entityId);
          break;
        case 'ca':
          cas.add(r.entityId);
          break;
        case 'revocation':
          revocations.add(r.entityId);
          break;
      }
    }

    const upserts: ModelEvent[] = [];
    const deletes: ModelEvent[] = [];
    const keys: ModelEvent[] = [];
    const membershipChanges = new MembershipChanges();
    const membership = await options.membership();
    const at = now();

    const action = (known: Set<string>, id: string) => (known.has(id) ? DataStateAction.Update : DataStateAction.Create);

    for (const id of configTypes) {
      const configType = await readConfigType(q, id);
      if (configType) {
        upserts.push({ action: action(tracked.configTypes, id), configType });
        tracked.configTypes.add(id);
      } else if (tracked.configTypes.delete(id)) deletes.push({ action: DataStateAction.Delete, configType: { id } });
    }
    for (const id of configs) {
      const config = await readConfig(q, id);
      if (config) {
        upserts.push({ action: action(tracked.configs, id), config });
        tracked.configs.add(id);
      } else if (tracked.configs.delete(id)) deletes.push({ action: DataStateAction.Delete, config: { id } });
    }

    /** Compares one entity's membership in every service policy with what routers were told. */
    const checkMembership = (kind: EntityKind, id: string, exists: boolean): void => {
      const { members, field } = memberOf[kind];
      for (const [policyId, policyMembers] of tracked.policies) {
        const set = policyMembers[members];
        const was = set.has(id);
        const is = exists && membership.membersOf(policyId, field).has(id);
        if (was === is) continue;
        if (is) set.add(id);
        else set.delete(id);
        membershipChanges.note(policyId, kind, id, is);
      }
    };

    const readers = {
      identity: (id: string) => readIdentity(q, id, at),
      service: (id: string) => readService(q, id),
      postureCheck: (id: string) => readPostureCheck(q, id),
    };
    const knownOf: Record<EntityKind, Set<string>> = { identity: tracked.identities, service: tracked.services, postureCheck: tracked.postureChecks };
    const entityDeletes: Record<EntityKind, ModelEvent[]> = { identity: [], service: [], postureCheck: [] };
    for (const kind of ['identity', 'service', 'postureCheck'] as const) {
      const known = knownOf[kind];
      for (const [id, rolesChanged] of entities[kind]) {
        const model = await readers[kind](id);
        if (model) {
          const isNew = !known.has(id);
          upserts.push({ action: isNew ? DataStateAction.Create : DataStateAction.Update, [kind]: model });
          known.add(id);
          if (rolesChanged || isNew) checkMembership(kind, id, true);
        } else if (known.delete(id)) {
          checkMembership(kind, id, false);
          entityDeletes[kind].push({ action: DataStateAction.Delete, [kind]: { id } });
        }
      }
    }

    const policyDeletes: ModelEvent[] = [];
    for (const id of policies) {
      const servicePolicy = await readServicePolicy(q, id);
      if (!servicePolicy) {
        if (tracked.policies.delete(id)) policyDeletes.push({ action: DataStateAction.Delete, servicePolicy: { id } });
        continue;
      }
      let members = tracked.policies.get(id);
      upserts.push({ action: members ? DataStateAction.Update : DataStateAction.Create, servicePolicy });
      if (!members) tracked.policies.set(id, (members = { services: new Set(), postureChecks: new Set(), identities: new Set() }));
      const roleKeys = await readPolicyRoleKeys(q, id);
      for (const kind of MEMBER_ORDER) {
        const { members: key, field } = memberOf[kind];
        // Same semantic and roles as when the members were last compared: entities named in this batch are
        // compared above; no other member can have come or gone.
        if (roleKeys && members.roleKeys && roleKeys[field] === members.roleKeys[field]) continue;
        const before = members[key];
        const after = membership.membersOf(id, field);
        const left: string[] = [];
        const joined: string[] = [];
        for (const m of before) if (!after.has(m)) left.push(m);
        for (const m of after) if (!before.has(m)) joined.push(m);
        for (const m of left) {
          before.delete(m);
          membershipChanges.note(id, kind, m, false);
        }
        for (const m of joined) {
          before.add(m);
          membershipChanges.note(id, kind, m, true);
        }
      }
      if (roleKeys) members.roleKeys = roleKeys;
      else delete members.roleKeys;
    }

    for (const id of cas) {
      const key = await readCaKey(q, id);
      const previous = tracked.caKeys.get(id);
      if (previous !== undefined && previous !== key?.kid) {
        keys.push({ action: DataStateAction.Delete, isSynthetic: true, publicKey: { kid: previous, usages: [PublicKeyUsage.ClientX509CertValidation], format: PublicKeyFormat.X509CertDer } });
        tracked.caKeys.delete(id);
      }
      if (key && previous !== key.kid) {
        keys.push({ action: DataStateAction.Create, isSynthetic: true, publicKey: key });
        tracked.caKeys.set(id, key.kid!);
      }
    }

    // Ended JWT sessions (src/oidc/): routers validate those tokens themselves.
    const revoked: ModelEvent[] = [];
    for (const id of revocations) {
      const revocation = await readRevocation(q, id, now());
      if (revocation) revoked.push({ action: DataStateAction.Create, revocation });
    }

    // Upserts were made in dependency order (config types, configs, identities, services, posture checks, policies).
    const changes = [
      ...upserts,
      ...membershipChanges.events(tracked.policies),
      ...policyDeletes,
      ...entityDeletes.postureCheck,
      ...entityDeletes.service,
      ...entityDeletes.identity,
      ...deletes.filter((e) => e.config),
      ...deletes.filter((e) => e.configType),
      ...keys,
      ...revoked,
    ];
    if (changes.length === 0) return { kind: 'none' };
    return { kind: 'changes', changes, firstSeq: relevant[0]!.seq, lastSeq: relevant[relevant.length - 1]!.seq };
  }

  return { apply, tracked };
}

export type ChangeSetBuilder = ReturnType<typeof createChangeSetBuilder>;
