/**
 * The access index: an in-memory model of role attributes and the three policy kinds, and the only code
 * that decides who may dial or bind which service through which edge routers.
 *
 * Every entity of a kind is given a small integer slot (reused after deletes). Each policy keeps, per
 * role list, the entities it currently matches (its members) as a bitset over the slots of that kind,
 * so 100k identities cost 12.5 KB per policy instead of 100k set entries. An entity's policies are found
 * by testing its bit in each policy (O(policies), a few microseconds). An entity change re-evaluates
 * that entity against every policy (O(policies)); a policy change re-evaluates the policy through the
 * attribute index (word-wise ORs for widely used attributes). Questions such as "services identity X
 * may dial" OR together the member bitsets of the policies X is in: O(policies + answer), never
 * identities × services.
 *
 * The index holds no store handle. The access service (access.service.ts) loads it from the store at
 * start and feeds it every write that can change access. A write's changes are worked out inside its
 * transaction with the `*Undoable` variants (applied, consulted and undone in one synchronous step) and
 * applied for good once it commits, so other requests never see a change that is not committed.
 */
import type { Semantic } from '../policy/role-ref.ts';
import { parseRoleRef } from '../policy/role-ref.ts';
import { Bitset, EMPTY_BITSET, SlotSet, forEachBit } from './bitset.ts';

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
  members: Map<RoleField, Bitset>;
  views: Map<RoleField, MemberView>;
}

interface EntitySpace {
  /** entity id → slot. */
  slotOf: Map<string, number>;
  /** slot → entity id (undefined for a free slot). */
  ids: Array<string | undefined>;
  /** slot → the entity's role attributes (de-duplicated, each string shared with the attribute index). */
  attributes: Array<readonly string[] | undefined>;
  /** Free slots, reused by the next new entity. */
  free: number[];
  /** Every slot in use (`#all`). */
  live: Bitset;
  byAttribute: Map<string, SlotSet>;
}

/** What one write did to access: the identities whose visible services may have changed. */
export interface AccessChange {
  affectedIdentities: Set<string>;
}

/** A change applied to the index, and how to take it back exactly (changes made after it undone first). */
export interface Undoable {
  change: AccessChange;
  undo(): void;
}

const EMPTY: ReadonlySet<string> = new Set();
const NO_ATTRIBUTES: readonly string[] = [];

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
function matches(roles: ParsedRoles, semantic: Semantic, id: string, attributes: { has(a: string): boolean }): boolean {
  if (roles.all) return true;
  if (roles.ids.includes(id)) return true;
  if (roles.attributes.length === 0) return false;
  return semantic === 'AllOf' ? roles.attributes.every((a) => attributes.has(a)) : roles.attributes.some((a) => attributes.has(a));
}

/** `has` over an entity's attribute list: a scan for short lists, a Set for long ones. */
function attributeLookup(list: readonly string[]): { has(a: string): boolean } {
  return list.length > 16 ? new Set(list) : { has: (a: string) => list.includes(a) };
}

/** Ids of the set slots of `words`. */
function idsOf(space: EntitySpace, words: Uint32Array, out: Set<string> = new Set()): Set<string> {
  const ids = space.ids;
  forEachBit(words, (slot) => out.add(ids[slot]!));
  return out;
}

/** The members of one role list of a policy, as a read-only set of entity ids over its bitset. */
class MemberView implements ReadonlySet<string> {
  constructor(
    private readonly bits: Bitset,
    private readonly space: EntitySpace,
  ) {}

  get size(): number {
    return this.bits.size;
  }

  has(id: string): boolean {
    const slot = this.space.slotOf.get(id);
    return slot !== undefined && this.bits.has(slot);
  }

  *values(): IterableIterator<string> {
    const { words } = this.bits;
    const ids = this.space.ids;
    for (let w = 0; w < words.length; w++) {
      let x = words[w];
      while (x !== 0) {
        const low = x & -x;
        yield ids[(w << 5) + (31 - Math.clz32(low))]!;
        x ^= low;
      }
    }
  }

  keys(): IterableIterator<string> {
    return this.values();
  }

  *entries(): IterableIterator<[string, string]> {
    for (const id of this.values()) yield [id, id];
  }

  [Symbol.iterator](): IterableIterator<string> {
    return this.values();
  }

  forEach(fn: (value: string, key: string, set: ReadonlySet<string>) => void, thisArg?: unknown): void {
    const ids = this.space.ids;
    this.bits.forEach((slot) => fn.call(thisArg, ids[slot]!, ids[slot]!, this));
  }
}

interface LinkingPolicy {
  id: string;
  type: PolicyType;
  services: Bitset;
}

/** How many derived answers (per identity or service) are kept between two index changes. */
const MAX_DERIVED = 8192;

/** One identity's service policies (see `AccessIndex.identityServices`). */
export class IdentityServices {
  private memoKey: object | undefined;
  private memoValue: unknown;

  constructor(
    private readonly space: EntitySpace,
    private readonly policies: readonly LinkingPolicy[],
  ) {}

  /** Ids of the policies (of one type, or either) that link the identity to the service, in policy order. */
  linking(serviceId: string, type?: PolicyType): string[] {
    const out: string[] = [];
    const slot = this.space.slotOf.get(serviceId);
    if (slot === undefined) return out;
    for (const p of this.policies) if ((!type || p.type === type) && p.services.has(slot)) out.push(p.id);
    return out;
  }

  permissions(serviceId: string): { dial: boolean; bind: boolean } {
    const result = { dial: false, bind: false };
    const slot = this.space.slotOf.get(serviceId);
    if (slot === undefined) return result;
    for (const p of this.policies) {
      if (!p.services.has(slot)) continue;
      if (p.type === 'Bind') result.bind = true;
      else result.dial = true;
    }
    return result;
  }

  /**
   * A value derived from this answer and `key` (an immutable object, e.g. a catalogue state), computed once while
   * both stay current; one key is kept.
   */
  memo<T>(key: object, make: () => T): T {
    if (this.memoKey !== key) {
      this.memoValue = make();
      this.memoKey = key;
    }
    return this.memoValue as T;
  }

  /** Calls `fn` with the id of every service the identity may dial or bind (each once, in slot order). */
  forEachService(fn: (serviceId: string) => void): void {
    let words = new Uint32Array(0);
    for (const p of this.policies) {
      const src = p.services.words;
      if (src.length > words.length) {
        const grown = new Uint32Array(src.length);
        grown.set(words);
        words = grown;
      }
      for (let i = 0; i < src.length; i++) words[i] |= src[i];
    }
    const ids = this.space.ids;
    forEachBit(words, (slot) => fn(ids[slot]!));
  }
}

/** The role list of `kind` a policy kind has, if any (each policy kind selects each entity kind at most once). */
function fieldFor(policyKind: PolicyKind, kind: EntityKind): RoleField | undefined {
  return policyRoleFields[policyKind].find((f) => roleFieldKind[f] === kind);
}

export class AccessIndex {
  private readonly spaces: Record<EntityKind, EntitySpace> = {
    identity: newSpace(),
    service: newSpace(),
    edgeRouter: newSpace(),
    postureCheck: newSpace(),
  };
  private readonly policies = new Map<string, PolicyState>();
  /** Bumped by every change to the index; answers derived from it are current while it is unchanged. */
  private changes = 0;
  /** Answers kept since the last change (`identityServices`, `edgeRouterSet`), by key; dropped at the next change. */
  private readonly derived = new Map<string, unknown>();
  private derivedAt = 0;
  private readonly policiesByKind: Record<PolicyKind, Map<string, PolicyState>> = {
    servicePolicy: new Map(),
    edgeRouterPolicy: new Map(),
    serviceEdgeRouterPolicy: new Map(),
  };

  // ---- writes ----------------------------------------------------------------------------------

  /** Creates or updates an entity's role attributes and re-evaluates it against every policy. */
  setEntity(kind: EntityKind, id: string, attributes: readonly string[]): AccessChange {
    return this.putEntity(kind, id, attributes, true);
  }

  /** `note` false: the affected identities are not worked out (the change comes back empty). */
  private putEntity(kind: EntityKind, id: string, attributes: readonly string[], note: boolean): AccessChange {
    this.changes++;
    const space = this.spaces[kind];
    let slot = space.slotOf.get(id);
    if (slot === undefined) {
      slot = space.free.pop() ?? space.ids.length;
      space.slotOf.set(id, slot);
      space.ids[slot] = id;
      space.live.add(slot);
    }
    const previous = space.attributes[slot] ?? NO_ATTRIBUTES;
    const wanted = attributes.length > 1 ? [...new Set(attributes)] : attributes;
    for (const a of previous) {
      if (wanted.includes(a)) continue;
      const slots = space.byAttribute.get(a);
      if (!slots) continue;
      slots.delete(slot);
      if (slots.size === 0) space.byAttribute.delete(a);
    }
    const next: string[] = [];
    for (const a of wanted) {
      let slots = space.byAttribute.get(a);
      if (!slots) space.byAttribute.set(a, (slots = new SlotSet(a)));
      slots.add(slot, space.slotOf.size);
      next.push(slots.name);
    }
    space.attributes[slot] = next.length > 0 ? next : NO_ATTRIBUTES;

    const change: AccessChange = { affectedIdentities: new Set() };
    if (this.policies.size === 0) return change;
    const lookup = attributeLookup(next);
    for (const policy of this.policies.values()) {
      const field = fieldFor(policy.kind, kind);
      if (!field) continue;
      const roles = policy.roles.get(field)!;
      const members = policy.members.get(field)!;
      const isMember = members.has(slot);
      const shouldBe = matches(roles, policy.semantic, id, lookup);
      if (isMember === shouldBe) continue;
      if (shouldBe) members.add(slot);
      else members.delete(slot);
      if (note) this.noteMembershipChange(policy, field, id, change);
    }
    return change;
  }

  /** Removes an entity: from every policy's members and from every policy's `@id` roles. */
  removeEntity(kind: EntityKind, id: string): AccessChange {
    return this.dropEntity(kind, id, true);
  }

  private dropEntity(kind: EntityKind, id: string, note: boolean): AccessChange {
    this.changes++;
    const space = this.spaces[kind];
    const change: AccessChange = { affectedIdentities: new Set() };
    const slot = space.slotOf.get(id);
    for (const policy of this.policies.values()) {
      const field = fieldFor(policy.kind, kind);
      if (!field) continue;
      if (slot !== undefined && policy.members.get(field)!.delete(slot) && note) this.noteMembershipChange(policy, field, id, change);
      const roles = policy.roles.get(field)!;
      if (roles.ids.includes(id)) roles.ids = roles.ids.filter((x) => x !== id);
    }
    if (slot !== undefined) {
      for (const a of space.attributes[slot] ?? NO_ATTRIBUTES) {
        const slots = space.byAttribute.get(a);
        if (!slots) continue;
        slots.delete(slot);
        if (slots.size === 0) space.byAttribute.delete(a);
      }
      space.attributes[slot] = undefined;
      space.ids[slot] = undefined;
      space.slotOf.delete(id);
      space.live.delete(slot);
      space.free.push(slot);
    }
    return change;
  }

  /** Creates or replaces a policy and recomputes its members through the attribute index. */
  setPolicy(input: PolicyInput): AccessChange {
    const previous = this.policies.get(input.id);
    const state = this.putPolicy(input, previous);
    return { affectedIdentities: this.policyAffected(previous, state) };
  }

  /** setPolicy without working out the affected identities (building an index from the store, applying another process's write). */
  loadPolicy(input: PolicyInput): void {
    this.putPolicy(input, this.policies.get(input.id));
  }

  removePolicy(id: string): AccessChange {
    return this.dropPolicy(id, true);
  }

  private dropPolicy(id: string, note: boolean): AccessChange {
    this.changes++;
    const previous = this.policies.get(id);
    if (!previous) return { affectedIdentities: new Set() };
    this.policies.delete(id);
    this.policiesByKind[previous.kind].delete(id);
    return { affectedIdentities: note ? this.policyAffected(previous, undefined) : new Set() };
  }

  // ---- writes that can be undone (a write transaction's changes, see access.service.ts) -----------
  //
  // Each applies the change and returns how to restore exactly what was there before: undone in reverse
  // order, a series of them leaves the index as it found it. `note` false skips working out the affected
  // identities (the change comes back empty).

  setEntityUndoable(kind: EntityKind, id: string, attributes: readonly string[], note = true): Undoable {
    const undo = this.entityRestorer(kind, id);
    return { change: this.putEntity(kind, id, attributes, note), undo };
  }

  removeEntityUndoable(kind: EntityKind, id: string, note = true): Undoable {
    const undo = this.entityRestorer(kind, id);
    return { change: this.dropEntity(kind, id, note), undo };
  }

  setPolicyUndoable(input: PolicyInput, note = true): Undoable {
    const undo = this.policyRestorer(input.id);
    if (note) return { change: this.setPolicy(input), undo };
    this.loadPolicy(input);
    return { change: { affectedIdentities: new Set() }, undo };
  }

  removePolicyUndoable(id: string, note = true): Undoable {
    const undo = this.policyRestorer(id);
    return { change: this.dropPolicy(id, note), undo };
  }

  /**
   * Restores one entity as it is now: its slot (and the free list and slot arrays around it), attributes,
   * memberships and the `@id` roles naming it. Run after every later change was undone.
   */
  private entityRestorer(kind: EntityKind, id: string): () => void {
    const space = this.spaces[kind];
    const slot = space.slotOf.get(id);
    const freeLength = space.free.length;
    const idsLength = space.ids.length;
    const attributesLength = space.attributes.length;
    const attributes = slot === undefined ? undefined : space.attributes[slot];
    const memberOf: Bitset[] = [];
    const roleIds: Array<[ParsedRoles, string[]]> = [];
    for (const policy of this.policies.values()) {
      const field = fieldFor(policy.kind, kind);
      if (!field) continue;
      const members = policy.members.get(field)!;
      if (slot !== undefined && members.has(slot)) memberOf.push(members);
      const roles = policy.roles.get(field)!;
      if (roles.ids.includes(id)) roleIds.push([roles, roles.ids]);
    }
    return () => {
      this.changes++;
      const now = space.slotOf.get(id);
      if (now !== undefined) {
        // Take out what the entity holds now.
        for (const a of space.attributes[now] ?? NO_ATTRIBUTES) {
          const slots = space.byAttribute.get(a);
          if (!slots) continue;
          slots.delete(now);
          if (slots.size === 0) space.byAttribute.delete(a);
        }
        for (const policy of this.policies.values()) {
          const field = fieldFor(policy.kind, kind);
          if (field) policy.members.get(field)!.delete(now);
        }
        space.attributes[now] = undefined;
        if (slot === undefined) {
          // It was new: its slot goes back where it came from (the free list, or past the end).
          space.slotOf.delete(id);
          space.ids[now] = undefined;
          space.live.delete(now);
          if (space.free.length < freeLength) space.free.push(now);
        }
      } else if (slot !== undefined) {
        // It was removed: its slot comes back from the free list.
        space.free.length = freeLength;
        space.slotOf.set(id, slot);
        space.ids[slot] = id;
        space.live.add(slot);
      }
      if (space.ids.length > idsLength) space.ids.length = idsLength;
      if (space.attributes.length > attributesLength) space.attributes.length = attributesLength;
      if (slot !== undefined) {
        space.attributes[slot] = attributes;
        for (const a of attributes ?? NO_ATTRIBUTES) {
          let slots = space.byAttribute.get(a);
          if (!slots) space.byAttribute.set(a, (slots = new SlotSet(a)));
          slots.add(slot, space.slotOf.size);
        }
        for (const members of memberOf) members.add(slot);
      }
      for (const [roles, ids] of roleIds) roles.ids = ids;
    };
  }

  /** Restores one policy as it is now (or its absence), and the order of the policy maps. */
  private policyRestorer(id: string): () => void {
    const previous = this.policies.get(id);
    const order = [...this.policies];
    const kindOrder = previous ? [...this.policiesByKind[previous.kind]] : undefined;
    return () => {
      this.changes++;
      const current = this.policies.get(id);
      refill(this.policies, order);
      if (current && current.kind !== previous?.kind) this.policiesByKind[current.kind].delete(id);
      if (previous) refill(this.policiesByKind[previous.kind], kindOrder!);
    };
  }

  private putPolicy(input: PolicyInput, previous: PolicyState | undefined): PolicyState {
    this.changes++;
    const state: PolicyState = {
      id: input.id,
      kind: input.kind,
      semantic: input.semantic,
      type: input.kind === 'servicePolicy' ? (input.type ?? 'Dial') : undefined,
      roles: new Map(),
      members: new Map(),
      views: new Map(),
    };
    for (const field of policyRoleFields[input.kind]) {
      const roles = parseRoles(input.roles[field]);
      const space = this.spaces[roleFieldKind[field]];
      const members = this.evaluate(space, roles, input.semantic);
      state.roles.set(field, roles);
      state.members.set(field, members);
      state.views.set(field, new MemberView(members, space));
    }
    if (previous && previous.kind !== input.kind) this.policiesByKind[previous.kind].delete(input.id);
    this.policies.set(input.id, state);
    this.policiesByKind[input.kind].set(input.id, state);
    return state;
  }

  // ---- questions ---------------------------------------------------------------------------------

  hasEntity(kind: EntityKind, id: string): boolean {
    return this.spaces[kind].slotOf.has(id);
  }

  entityCount(kind: EntityKind): number {
    return this.spaces[kind].slotOf.size;
  }

  /** Ids of the policies of `kind` whose role list for the entity's kind currently matches it. */
  policiesOf(entityKind: EntityKind, entityId: string, policyKind?: PolicyKind): string[] {
    const out: string[] = [];
    const slot = this.spaces[entityKind].slotOf.get(entityId);
    if (slot === undefined) return out;
    for (const policy of policyKind ? this.policiesByKind[policyKind].values() : this.policies.values()) {
      const field = fieldFor(policy.kind, entityKind);
      if (field && policy.members.get(field)!.has(slot)) out.push(policy.id);
    }
    return out;
  }

  /** The entities one role list of a policy currently matches (empty for an unknown policy). */
  membersOf(policyId: string, field: RoleField): ReadonlySet<string> {
    return this.policies.get(policyId)?.views.get(field) ?? EMPTY;
  }

  policyKind(policyId: string): PolicyKind | undefined {
    return this.policies.get(policyId)?.kind;
  }

  policyType(policyId: string): PolicyType | undefined {
    return this.policies.get(policyId)?.type;
  }

  /** Services the identity may use (of one type, or either). */
  servicesOfIdentity(identityId: string, type?: PolicyType): Set<string> {
    return this.reach('identityRoles', identityId, 'servicePolicy', 'serviceRoles', type);
  }

  /** Identities that may use the service (of one type, or either). */
  identitiesOfService(serviceId: string, type?: PolicyType): Set<string> {
    return this.reach('serviceRoles', serviceId, 'servicePolicy', 'identityRoles', type);
  }

  /** Edge routers the identity may use (edge router policies). */
  edgeRoutersOfIdentity(identityId: string): Set<string> {
    return this.reach('identityRoles', identityId, 'edgeRouterPolicy', 'edgeRouterRoles');
  }

  identitiesOfEdgeRouter(routerId: string): Set<string> {
    return this.reach('edgeRouterRoles', routerId, 'edgeRouterPolicy', 'identityRoles');
  }

  /** Edge routers that may carry the service (service edge router policies). */
  edgeRoutersOfService(serviceId: string): Set<string> {
    return this.reach('serviceRoles', serviceId, 'serviceEdgeRouterPolicy', 'edgeRouterRoles');
  }

  servicesOfEdgeRouter(routerId: string): Set<string> {
    return this.reach('edgeRouterRoles', routerId, 'serviceEdgeRouterPolicy', 'serviceRoles');
  }

  /** Posture checks reachable through service policies that include the service. */
  postureChecksOfService(serviceId: string): Set<string> {
    return this.reach('serviceRoles', serviceId, 'servicePolicy', 'postureCheckRoles');
  }

  /** Edge routers the identity may use for the service: both policy kinds must grant the router. */
  edgeRoutersFor(identityId: string, serviceId: string): Set<string> {
    const forService = this.reachWords('serviceRoles', serviceId, 'serviceEdgeRouterPolicy', 'edgeRouterRoles');
    if (forService.length === 0) return new Set();
    const forIdentity = this.reachWords('identityRoles', identityId, 'edgeRouterPolicy', 'edgeRouterRoles');
    const n = Math.min(forService.length, forIdentity.length);
    const both = new Uint32Array(n);
    for (let i = 0; i < n; i++) both[i] = forService[i] & forIdentity[i];
    return idsOf(this.spaces.edgeRouter, both);
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
    const identitySlot = this.spaces.identity.slotOf.get(identityId);
    const serviceSlot = this.spaces.service.slotOf.get(serviceId);
    if (identitySlot === undefined || serviceSlot === undefined) return out;
    for (const policy of this.policiesByKind.servicePolicy.values()) {
      if (type && policy.type !== type) continue;
      if (policy.members.get('identityRoles')!.has(identitySlot) && policy.members.get('serviceRoles')!.has(serviceSlot)) out.push(policy.id);
    }
    return out;
  }

  /**
   * The service policies that include the identity, taken once: answers permissions, linking policies and
   * visibility for many services of one identity (a page of the service list) without walking every policy per
   * service. Kept for the identities asked since the index last changed; valid until the next change.
   */
  identityServices(identityId: string): IdentityServices {
    return this.kept(`identity:${identityId}`, () => this.buildIdentityServices(identityId));
  }

  /**
   * The edge routers an identity may use (`identity`, by edge router policies) or that may carry a service
   * (`service`, by service edge router policies), kept like `identityServices`.
   */
  edgeRouterSet(kind: 'identity' | 'service', id: string): ReadonlySet<string> {
    return this.kept(`routers:${kind}:${id}`, () => (kind === 'identity' ? this.edgeRoutersOfIdentity(id) : this.edgeRoutersOfService(id)));
  }

  /** A derived answer, computed once while the index is unchanged (a bounded number are kept). */
  private kept<T>(key: string, make: () => T): T {
    if (this.derivedAt !== this.changes) {
      this.derived.clear();
      this.derivedAt = this.changes;
    }
    if (this.derived.has(key)) return this.derived.get(key) as T;
    if (this.derived.size >= MAX_DERIVED) this.derived.clear();
    const value = make();
    this.derived.set(key, value);
    return value;
  }

  private buildIdentityServices(identityId: string): IdentityServices {
    const slot = this.spaces.identity.slotOf.get(identityId);
    const policies: LinkingPolicy[] = [];
    if (slot !== undefined) {
      for (const policy of this.policiesByKind.servicePolicy.values()) {
        if (policy.members.get('identityRoles')!.has(slot)) policies.push({ id: policy.id, type: policy.type ?? 'Dial', services: policy.members.get('serviceRoles')! });
      }
    }
    return new IdentityServices(this.spaces.service, policies);
  }

  // ---- internals ---------------------------------------------------------------------------------

  /** OR of the `toField` members of every policy of `policyKind` whose `fromField` matches the entity. */
  private reachWords(fromField: RoleField, fromId: string, policyKind: PolicyKind, toField: RoleField, type?: PolicyType): Uint32Array {
    const slot = this.spaces[roleFieldKind[fromField]].slotOf.get(fromId);
    let out = new Uint32Array(0);
    if (slot === undefined) return out;
    for (const policy of this.policiesByKind[policyKind].values()) {
      if (type && policy.type !== type) continue;
      if (!policy.members.get(fromField)!.has(slot)) continue;
      const src = policy.members.get(toField)!.words;
      if (src.length > out.length) {
        const grown = new Uint32Array(src.length);
        grown.set(out);
        out = grown;
      }
      for (let i = 0; i < src.length; i++) out[i] |= src[i];
    }
    return out;
  }

  private reach(fromField: RoleField, fromId: string, policyKind: PolicyKind, toField: RoleField, type?: PolicyType): Set<string> {
    return idsOf(this.spaces[roleFieldKind[toField]], this.reachWords(fromField, fromId, policyKind, toField, type));
  }

  private evaluate(space: EntitySpace, roles: ParsedRoles, semantic: Semantic): Bitset {
    if (roles.all) return space.live.clone();
    const out = new Bitset();
    for (const id of roles.ids) {
      const slot = space.slotOf.get(id);
      if (slot !== undefined) out.add(slot);
    }
    if (roles.attributes.length === 0) return out;
    if (semantic === 'AnyOf') {
      for (const a of roles.attributes) space.byAttribute.get(a)?.orInto(out);
      return out;
    }
    const sets: SlotSet[] = [];
    for (const a of roles.attributes) {
      const slots = space.byAttribute.get(a);
      if (!slots) return out;
      sets.push(slots);
    }
    if (sets.every((s) => s.bitset !== undefined)) {
      const all = sets.map((s) => s.bitset!.words);
      const n = Math.min(...all.map((w) => w.length));
      const both = new Uint32Array(n);
      for (let i = 0; i < n; i++) {
        let x = all[0]![i];
        for (let j = 1; j < all.length; j++) x &= all[j]![i];
        both[i] = x;
      }
      out.or(new Bitset(both));
      return out;
    }
    sets.sort((x, y) => x.size - y.size);
    const [smallest, ...rest] = sets;
    smallest!.forEach((slot) => {
      if (rest.every((s) => s.has(slot))) out.add(slot);
    });
    return out;
  }

  /** An entity joined or left one role list of a policy: which identities can that affect? */
  private noteMembershipChange(policy: PolicyState, field: RoleField, entityId: string, change: AccessChange): void {
    if (policy.kind !== 'servicePolicy') return;
    if (field === 'identityRoles') change.affectedIdentities.add(entityId);
    else idsOf(this.spaces.identity, policy.members.get('identityRoles')!.words, change.affectedIdentities);
  }

  /**
   * Identities whose service view a policy write can change. Edge router policies never change which
   * services an identity sees. For a service policy: when its type, services or posture checks changed,
   * every identity before and after; otherwise only the identities that joined or left.
   */
  private policyAffected(before: PolicyState | undefined, after: PolicyState | undefined): Set<string> {
    const out = new Set<string>();
    const kind = (before ?? after)!.kind;
    if (kind !== 'servicePolicy') return out;
    const identities = this.spaces.identity;
    const identitiesBefore = before?.members.get('identityRoles') ?? EMPTY_BITSET;
    const identitiesAfter = after?.members.get('identityRoles') ?? EMPTY_BITSET;
    const sameTargets =
      before !== undefined &&
      after !== undefined &&
      before.kind === after.kind &&
      before.type === after.type &&
      before.members.get('serviceRoles')!.equals(after.members.get('serviceRoles')!) &&
      before.members.get('postureCheckRoles')!.equals(after.members.get('postureCheckRoles')!);
    if (!sameTargets) {
      const hasTargets = (p: PolicyState | undefined) => p !== undefined && p.kind === 'servicePolicy' && p.members.get('serviceRoles')!.size > 0;
      if (hasTargets(before)) idsOf(identities, identitiesBefore.words, out);
      if (hasTargets(after)) idsOf(identities, identitiesAfter.words, out);
      return out;
    }
    if (after!.members.get('serviceRoles')!.size === 0) return out;
    const a = identitiesBefore.words;
    const b = identitiesAfter.words;
    const diff = new Uint32Array(Math.max(a.length, b.length));
    for (let i = 0; i < diff.length; i++) diff[i] = (a[i] ?? 0) ^ (b[i] ?? 0);
    return idsOf(identities, diff, out);
  }
}

function refill<K, V>(map: Map<K, V>, entries: ReadonlyArray<[K, V]>): void {
  map.clear();
  for (const [k, v] of entries) map.set(k, v);
}

function newSpace(): EntitySpace {
  return { slotOf: new Map(), ids: [], attributes: [], free: [], live: new Bitset(), byAttribute: new Map() };
}
