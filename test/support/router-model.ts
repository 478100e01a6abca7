/**
 * The router side of the router data model for tests: decodes what a controller sends (DataState, change sets,
 * CurrentIndexMessage) and applies it with the rules upstream's routers follow (common/router_data_model.go):
 * change sets in index order with a `previousIndex` chain (a break is counted as a gap), membership changes that
 * need the identity to exist, deletes that take the entity out of its policies, a full state that replaces all.
 */
import { decode } from '../../src/fabric/proto/index.ts';
import { EdgeContentType, EdgeHeader, ServicePolicyRelatedEntityType, type DataState, type DataStateChangeSet, type DataStateEvent } from '../../src/fabric/proto/edge-ctrl.ts';
import { readString, readUint64, type ChannelMessage } from '../../src/fabric/channel/message.ts';

/** What a router receives, decoded. */
export type Received =
  | { type: 'state'; subscriptionId: string; state: DataState }
  | { type: 'changes'; subscriptionId: string; set: DataStateChangeSet }
  | { type: 'index'; index: bigint };

export function decodeReceived(msg: ChannelMessage): Received {
  const subscriptionId = readString(msg.headers.get(EdgeHeader.RouterDataModelSubscriptionId)) ?? '';
  if (msg.contentType === EdgeContentType.DataState) return { type: 'state', subscriptionId, state: decode('edge.DataState', msg.body) };
  if (msg.contentType === EdgeContentType.DataStateChangeSet) return { type: 'changes', subscriptionId, set: decode('edge.DataState.ChangeSet', msg.body) };
  if (msg.contentType === EdgeContentType.CurrentIndexMessage) return { type: 'index', index: readUint64(msg.headers.get(EdgeHeader.RouterDataModelIndex))! };
  throw new Error(`unexpected content type ${msg.contentType}`);
}

/** A router's inbox: every message the data model sent it, decoded. */
export class Inbox {
  readonly messages: Received[] = [];
  readonly send = (msg: ChannelMessage) => {
    this.messages.push(decodeReceived(msg));
  };

  take(): Received[] {
    return this.messages.splice(0);
  }
}

interface SimPolicy {
  name: string;
  type: number;
  services: Set<string>;
  postureChecks: Set<string>;
  identities: Set<string>;
}

/** The router side of the model, applying what it gets as upstream's RouterDataModel does. */
export class SimRouter {
  index = 0n;
  timelineId = '';
  configTypes = new Map<string, unknown>();
  configs = new Map<string, unknown>();
  identities = new Map<string, unknown>();
  services = new Map<string, unknown>();
  postureChecks = new Map<string, unknown>();
  policies = new Map<string, SimPolicy>();
  keys = new Map<string, unknown>();
  revocations = new Map<string, { type?: string; expiresAt?: unknown }>();
  gaps = 0;

  receive(r: Received): void {
    if (r.type === 'state') this.applyState(r.state);
    else if (r.type === 'changes') this.applyChangeSet(r.set);
  }

  applyState(state: DataState): void {
    const fresh = new SimRouter();
    for (const e of state.events) fresh.handle(e);
    Object.assign(this, { ...fresh, index: state.endIndex, timelineId: state.timelineId, gaps: this.gaps });
  }

  applyChangeSet(set: DataStateChangeSet): void {
    if (!set.isSynthetic) {
      if (this.index > 0n && this.index >= set.index) throw new Error(`out of order: ${set.index} after ${this.index}`);
      if (set.previousIndex > 0n && this.index > 0n && set.previousIndex !== this.index) {
        this.gaps++;
        throw new Error(`gap: router ${this.index}, previous ${set.previousIndex}, index ${set.index}`);
      }
      this.index = set.index;
    }
    for (const e of set.changes) this.handle(e);
  }

  private handle(e: DataStateEvent): void {
    const del = e.action === 2;
    const put = (map: Map<string, unknown>, id: string, value: unknown) => (del ? map.delete(id) : map.set(id, value));
    if (e.configType) put(this.configTypes, e.configType.id, e.configType);
    else if (e.config) put(this.configs, e.config.id, e.config);
    else if (e.identity) {
      if (del) for (const p of this.policies.values()) p.identities.delete(e.identity.id);
      put(this.identities, e.identity.id, e.identity);
    } else if (e.service) {
      if (del) for (const p of this.policies.values()) p.services.delete(e.service.id);
      put(this.services, e.service.id, e.service);
    } else if (e.postureCheck) {
      if (del) for (const p of this.policies.values()) p.postureChecks.delete(e.postureCheck.id);
      put(this.postureChecks, e.postureCheck.id, e.postureCheck);
    } else if (e.servicePolicy) {
      const sp = e.servicePolicy;
      if (del) this.policies.delete(sp.id);
      else {
        const existing = this.policies.get(sp.id);
        this.policies.set(sp.id, { name: sp.name, type: sp.policyType, services: existing?.services ?? new Set(), postureChecks: existing?.postureChecks ?? new Set(), identities: existing?.identities ?? new Set() });
      }
    } else if (e.publicKey) put(this.keys, e.publicKey.kid, e.publicKey);
    else if (e.revocation) put(this.revocations, e.revocation.id, e.revocation);
    else if (e.servicePolicyChange) {
      const c = e.servicePolicyChange;
      const p = this.policies.get(c.policyId);
      if (!p) {
        if (c.add) throw new Error(`membership of unknown policy ${c.policyId}`);
        return;
      }
      const set = c.relatedEntityType === ServicePolicyRelatedEntityType.RelatedIdentity ? p.identities : c.relatedEntityType === ServicePolicyRelatedEntityType.RelatedService ? p.services : p.postureChecks;
      for (const id of c.relatedEntityIds) {
        // Upstream's router only records an identity's membership when it has the identity.
        if (c.add && c.relatedEntityType === ServicePolicyRelatedEntityType.RelatedIdentity && !this.identities.has(id)) throw new Error(`identity ${id} added to ${c.policyId} before it exists`);
        if (c.add) set.add(id);
        else set.delete(id);
      }
    }
  }

  /** A comparable picture of the model (entities and members, not the index). */
  snapshot(): unknown {
    const sortMap = (m: Map<string, unknown>) => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? String(x) : x instanceof Uint8Array ? Buffer.from(x).toString('hex') : x))]);
    return {
      configTypes: sortMap(this.configTypes),
      configs: sortMap(this.configs),
      identities: sortMap(this.identities),
      services: sortMap(this.services),
      postureChecks: sortMap(this.postureChecks),
      keys: sortMap(this.keys),
      revocations: sortMap(this.revocations),
      policies: [...this.policies.entries()]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([id, p]) => [id, p.name, p.type, [...p.services].sort(), [...p.postureChecks].sort(), [...p.identities].sort()]),
    };
  }
}
