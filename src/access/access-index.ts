/**
 * The access index: an in-memory model of role attributes and the three policy kinds, and the only code
 * that decides who may dial or bind which service through which edge routers.
 *
 * Each policy keeps the set of entities each of its role lists currently matches (its members), and
 * each entity keeps the set of policies it is a member of. An entity change re-evaluates that entity
 * against every policy (O(policies)); a policy change re-evaluates the policy through the attribute
 * index (O(size of the answer)). Questions such as "services identity X may dial" walk the policies of
 * X and union their members: O(policies of X + answer), never identities × services.
 *
 * The index holds no store handle. The access service (access.service.ts) loads it from the store at
 * start and feeds it every write that can change access, inside that write's transaction.
 */
import type { Semantic } from '../policy/role-ref.ts';
import { parseRoleRef } from '../policy/role-ref.ts';

export type EntityKind = 'identity' | 'service' | 'edgeRouter' | 'postureCheck';
export type PolicyKind = 'servicePolicy' | 'edgeRouterPolicy' | 'serviceEdgeRouterPolicy';
export type RoleField = 'identityRoles' | 'serviceRoles' | 'edgeRouterRoles' | 'postureCheckRoles';
export type PolicyType = 'Dial' | 'Bind';

/** Which entity kind each role list selects. */
export const roleFieldKind: Record<RoleField, EntityKind> = {
  identityRoles: 'identity',
  serviceRoles: 'service',
  edgeRouterRoles: 'edgeRouter',
  postureCheckRoles: 'postureCheck',
};

/** The role lists of each policy kind. */
export const policyRoleFields: Record<PolicyKind, readonly RoleField[]> = {
  servicePolicy: ['identityRoles', 'serviceRoles', 'postureCheckRoles'],
  edgeRouterPolicy: ['identityRoles', 'edgeRouterRoles'],
  serviceEdgeRouterPolicy: ['serviceRoles', 'edgeRouterRoles'],
};

export interface PolicyInput {
  id: string;
  kind: PolicyKind;
  semantic: Semantic;
  /** Service policies only. */
  type?: PolicyType;
  roles: Partial<Record<RoleField, readonly string[]>>;
}

interface ParsedRoles {
  all: boolean;
  attributes: string[];
  ids: string[];
}

interface PolicyState {
  id: string;
  kind: PolicyKind;
  semantic: Semantic;
  type?: PolicyType;
  roles: Map<RoleField, ParsedRoles>;
  members: Map<RoleField, Set<string>>;
}

interface EntitySpace {
  attributes: Map<string, ReadonlySet<string>>;
  byAttribute: Map<string, Set<string>>;
  /** entity id → ids of the policies whose role list of this kind matches it. */
  memberOf: Map<string, Set<string>>;
}

/** What one write did to access: the identities whose visible services may have changed. */
export interface AccessChange {
  affectedIdentities: Set<string>;
}

const EMPTY: ReadonlySet<string> = new Set();

function parseRoles(roles: readonly string[] | undefined): ParsedRoles {
  const parsed: ParsedRoles = { all: false, attributes: [], ids: [] };
  for (const role of roles ?? []) {
    const ref = parseRoleRef(role);
    if (!ref) continue;
    if (ref.kind === 'all') parsed.all = true;
    else if (ref.kind === 'attribute') parsed.attributes.push(ref.name);
    else parsed.ids.push(ref.id);
  }
  return parsed;
}

/** Upstream's rule: @ids always match; #all matches everything; then AllOf / AnyOf over the #attributes. */
function matches(roles: ParsedRoles, semantic: Semantic, id: string, attributes: ReadonlySet<string>): boolean {
  if (roles.all) return true;
  if (roles.ids.includes(id)) return true;
  if (roles.attributes.length === 0) return false;
  return semantic === 'AllOf' ? roles.attributes.every((a) => attributes.has(a)) : roles.attributes.some((a) => attributes.has(a));
}

function setsEqual(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

export class AccessIndex {
  private readonly spaces: Record<EntityKind, EntitySpace> = {
    identity: newSpace(),
    service: newSpace(),
    edgeRouter: newSpace(),
    postureCheck: newSpace(),
  };
  private readonly policies = new Map<string, PolicyState>();

  // ---- writes ----------------------------------------------------------------------------------

  /** Creates or updates an entity's role attributes and re-evaluates it against every policy. */
  setEntity(kind: EntityKind, id: string, attributes: readonly string[]): AccessChange {
    const space = this.spaces[kind];
    const previous = space.attributes.get(id);
    const next = new Set(attributes);
    for (const a of previous ?? EMPTY) if (!next.has(a)) space.byAttribute.get(a)?.delete(id);
    for (const a of next) {
      let ids = space.byAttribute.get(a);
      if (!ids) space.byAttribute.set(a, (ids = new Set()));
      ids.add(id);
    }
    space.attributes.set(id, next);
    if (!space.memberOf.has(id)) space.memberOf.set(id, new Set());

    const change: AccessChange = { affectedIdentities: new Set() };
    for (const policy of this.policies.values()) {
      for (const field of policyRoleFields[policy.kind]) {
        if (roleFieldKind[field] !== kind) continue;
        const roles = policy.roles.get(field)!;
        const members = policy.members.get(field)!;
        const isMember = members.has(id);
        const shouldBe = matches(roles, policy.semantic, id, next);
        if (isMember === shouldBe) continue;
        if (shouldBe) {
          members.add(id);
          space.memberOf.get(id)!.add(policy.id);
        } else {
          members.delete(id);
          space.memberOf.get(id)!.delete(policy.id);
        }
        this.noteMembershipChange(policy, field, id, change);
      }
    }
    return change;
  }

  /** Removes an entity: from every policy's members and from every policy's `@id` roles. */
  removeEntity(kind: EntityKind, id: string): AccessChange {
    const space = this.spaces[kind];
    const change: AccessChange = { affectedIdentities: new Set() };
    for (const policyId of space.memberOf.get(id) ?? EMPTY) {
      const policy = this.policies.get(policyId);
      if (!policy) continue;
      for (const field of policyRoleFields[policy.kind]) {
        if (roleFieldKind[field] !== kind) continue;
        if (policy.members.get(field)!.delete(id)) this.noteMembershipChange(policy, field, id, change);
      }
    }
    for (const policy of this.policies.values()) {
      for (const field of policyRoleFields[policy.kind]) {
        if (roleFieldKind[field] !== kind) continue;
        const roles = policy.roles.get(field)!;
        if (roles.ids.includes(id)) roles.ids = roles.ids.filter((x) => x !== id);
      }
    }
    for (const a of space.attributes.get(id) ?? EMPTY) space.byAttribute.get(a)?.delete(id);
    space.attributes.delete(id);
    space.memberOf.delete(id);
    return change;
  }

  /** Creates or replaces a policy and recomputes its members through the attribute index. */
  setPolicy(input: PolicyInput): AccessChange {
    const previous = this.policies.get(input.id);
    const state: PolicyState = {
      id: input.id,
      kind: input.kind,
      semantic: input.semantic,
      type: input.kind === 'servicePolicy' ? (input.type ?? 'Dial') : undefined,
      roles: new Map(),
      members: new Map(),
    };
    for (const field of policyRoleFields[input.kind]) {
      const roles = parseRoles(input.roles[field]);
      state.roles.set(field, roles);
      state.members.set(field, this.evaluate(roleFieldKind[field], roles, input.semantic));
    }
    for (const field of policyRoleFields[input.kind]) {
      const space = this.spaces[roleFieldKind[field]];
      for (const id of previous?.members.get(field) ?? EMPTY) space.memberOf.get(id)?.delete(input.id);
      for (const id of state.members.get(field)!) space.memberOf.get(id)?.add(input.id);
    }
    this.policies.set(input.id, state);
    return { affectedIdentities: policyAffected(previous, state) };
  }

  removePolicy(id: string): AccessChange {
    const previous = this.policies.get(id);
    if (!previous) return { affectedIdentities: new Set() };
    for (const field of policyRoleFields[previous.kind]) {
      const space = this.spaces[roleFieldKind[field]];
      for (const member of previous.members.get(field)!) space.memberOf.get(member)?.delete(id);
    }
    this.policies.delete(id);
    return { affectedIdentities: policyAffected(previous, undefined) };
  }

  // ---- questions ---------------------------------------------------------------------------------

  hasEntity(kind: EntityKind, id: string): boolean {
    return this.spaces[kind].attributes.has(id);
  }

  entityCount(kind: EntityKind): number {
    return this.spaces[kind].attributes.size;
  }

  /** Ids of the policies of `kind` whose role list for the entity's kind currently matches it. */
  policiesOf(entityKind: EntityKind, entityId: string, policyKind?: PolicyKind): string[] {
    const out: string[] = [];
    for (const policyId of this.spaces[entityKind].memberOf.get(entityId) ?? EMPTY) {
      if (!policyKind || this.policies.get(policyId)?.kind === policyKind) out.push(policyId);
    }
    return out;
  }

  /** The entities one role list of a policy currently matches (empty for an unknown policy). */
  membersOf(policyId: string, field: RoleField): ReadonlySet<string> {
    return this.policies.get(policyId)?.members.get(field) ?? EMPTY;
  }

  policyKind(policyId: string): PolicyKind | undefined {
    return this.policies.get(policyId)?.kind;
  }

  policyType(policyId: string): PolicyType | undefined {
    return this.policies.get(policyId)?.type;
  }

  /** Services the identity may use (of one type, or either). */
  servicesOfIdentity(identityId: string, type?: PolicyType): Set<string> {
    return this.reach('identity', identityId, 'servicePolicy', 'serviceRoles', type);
  }

  /** Identities that may use the service (of one type, or either). */
  identitiesOfService(serviceId: string, type?: PolicyType): Set<string> {
    return this.reach('service', serviceId, 'servicePolicy', 'identityRoles', type);
  }

  /** Edge routers the identity may use (edge router policies). */
  edgeRoutersOfIdentity(identityId: string): Set<string> {
    return this.reach('identity', identityId, 'edgeRouterPolicy', 'edgeRouterRoles');
  }

  identitiesOfEdgeRouter(routerId: string): Set<string> {
    return this.reach('edgeRouter', routerId, 'edgeRouterPolicy', 'identityRoles');
  }

  /** Edge routers that may carry the service (service edge router policies). */
  edgeRoutersOfService(serviceId: string): Set<string> {
    return this.reach('service', serviceId, 'serviceEdgeRouterPolicy', 'edgeRouterRoles');
  }

  servicesOfEdgeRouter(routerId: string): Set<string> {
    return this.reach('edgeRouter', routerId, 'serviceEdgeRouterPolicy', 'serviceRoles');
  }

  /** Posture checks reachable through service policies that include the service. */
  postureChecksOfService(serviceId: string): Set<string> {
    return this.reach('service', serviceId, 'servicePolicy', 'postureCheckRoles');
  }

  /** Edge routers the identity may use for the service: both policy kinds must grant the router. */
  edgeRoutersFor(identityId: string, serviceId: string): Set<string> {
    const forService = this.edgeRoutersOfService(serviceId);
    const out = new Set<string>();
    if (forService.size === 0) return out;
    for (const routerId of this.edgeRoutersOfIdentity(identityId)) if (forService.has(routerId)) out.add(routerId);
    return out;
  }

  /** Whether the identity may dial and/or bind the service. */
  permissions(identityId: string, serviceId: string): { dial: boolean; bind: boolean } {
    const result = { dial: false, bind: false };
    for (const policyId of this.linkingServicePolicies(identityId, serviceId)) {
      if (this.policies.get(policyId)!.type === 'Bind') result.bind = true;
      else result.dial = true;
    }
    return result;
  }

  /** Service policies (optionally of one type) that include both the identity and the service. */
  linkingServicePolicies(identityId: string, serviceId: string, type?: PolicyType): string[] {
    const out: string[] = [];
    for (const policyId of this.spaces.identity.memberOf.get(identityId) ?? EMPTY) {
      const policy = this.policies.get(policyId)!;
      if (policy.kind !== 'servicePolicy' || (type && policy.type !== type)) continue;
      if (policy.members.get('serviceRoles')!.has(serviceId)) out.push(policyId);
    }
    return out;
  }

  // ---- internals ---------------------------------------------------------------------------------

  private reach(fromKind: EntityKind, fromId: string, policyKind: PolicyKind, toField: RoleField, type?: PolicyType): Set<string> {
    const out = new Set<string>();
    for (const policyId of this.spaces[fromKind].memberOf.get(fromId) ?? EMPTY) {
      const policy = this.policies.get(policyId)!;
      if (policy.kind !== policyKind || (type && policy.type !== type)) continue;
      for (const id of policy.members.get(toField)!) out.add(id);
    }
    return out;
  }

  private evaluate(kind: EntityKind, roles: ParsedRoles, semantic: Semantic): Set<string> {
    const space = this.spaces[kind];
    if (roles.all) return new Set(space.attributes.keys());
    const out = new Set<string>();
    for (const id of roles.ids) if (space.attributes.has(id)) out.add(id);
    if (roles.attributes.length === 0) return out;
    if (semantic === 'AnyOf') {
      for (const a of roles.attributes) for (const id of space.byAttribute.get(a) ?? EMPTY) out.add(id);
      return out;
    }
    const sets = roles.attributes.map((a) => space.byAttribute.get(a) ?? EMPTY).sort((x, y) => x.size - y.size);
    for (const id of sets[0]!) if (sets.every((s) => s.has(id))) out.add(id);
    return out;
  }

  /** An entity joined or left one role list of a policy: which identities can that affect? */
  private noteMembershipChange(policy: PolicyState, field: RoleField, entityId: string, change: AccessChange): void {
    if (policy.kind !== 'servicePolicy') return;
    if (field === 'identityRoles') change.affectedIdentities.add(entityId);
    else for (const id of policy.members.get('identityRoles')!) change.affectedIdentities.add(id);
  }
}

function newSpace(): EntitySpace {
  return { attributes: new Map(), byAttribute: new Map(), memberOf: new Map() };
}

/**
 * Identities whose service view a policy write can change. Edge router policies never change which
 * services an identity sees. For a service policy: when its type, services or posture checks changed,
 * every identity before and after; otherwise only the identities that joined or left.
 */
function policyAffected(before: PolicyState | undefined, after: PolicyState | undefined): Set<string> {
  const out = new Set<string>();
  const kind = (before ?? after)!.kind;
  if (kind !== 'servicePolicy') return out;
  const identitiesBefore = before?.members.get('identityRoles') ?? EMPTY;
  const identitiesAfter = after?.members.get('identityRoles') ?? EMPTY;
  const sameTargets =
    before !== undefined &&
    after !== undefined &&
    before.type === after.type &&
    setsEqual(before.members.get('serviceRoles')!, after.members.get('serviceRoles')!) &&
    setsEqual(before.members.get('postureCheckRoles')!, after.members.get('postureCheckRoles')!);
  if (!sameTargets) {
    const hasTargets = (p: PolicyState | undefined) => p !== undefined && p.members.get('serviceRoles')!.size > 0;
    if (hasTargets(before)) for (const id of identitiesBefore) out.add(id);
    if (hasTargets(after)) for (const id of identitiesAfter) out.add(id);
    return out;
  }
  if (after!.members.get('serviceRoles')!.size === 0) return out;
  for (const id of identitiesBefore) if (!identitiesAfter.has(id)) out.add(id);
  for (const id of identitiesAfter) if (!identitiesBefore.has(id)) out.add(id);
  return out;
}
