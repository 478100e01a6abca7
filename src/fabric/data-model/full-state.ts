/**
 * The full router data model, read from the store (one snapshot) and the access index (brought up to it): the events of a
 * DataState in upstream's order (sync_instant.go BuildAll, router_data_model.go getDataStateAlreadyLocked) —
 * every config type, config, identity, service and posture check, then each service policy followed by its
 * related services, posture checks and identities (`add=true`; services and posture checks always, identities
 * when there are some), then the public keys (marked synthetic): the controller's own, then the third-party CAs.
 *
 * The same read gives what a change-set builder starts from (`TrackedModel`): which entities routers have and
 * which members each service policy has (and the role lists that chose them), so later changes are sent as
 * differences.
 */
import type { Sql } from '../../store/store.ts';
import type { ProtoInput } from '../proto/index.ts';
import { DataStateAction, ServicePolicyRelatedEntityType, type DataStateEvent } from '../proto/edge-ctrl.ts';
import {
  readAllPolicyRoleKeys,
  readCaKeys,
  readConfigTypes,
  readConfigs,
  readIdentities,
  readPostureChecks,
  readRevocations,
  readServicePolicies,
  readServices,
  type PolicyRoleKeys,
} from './model-store.ts';

export type ModelEvent = ProtoInput<DataStateEvent>;

/** The role lists of a service policy whose members routers get. */
export type MemberField = 'serviceRoles' | 'postureCheckRoles' | 'identityRoles';

/** Which entities each service policy covers now (the access index). */
export interface PolicyMembership {
  membersOf(policyId: string, field: MemberField): ReadonlySet<string>;
}

export interface PolicyMembers {
  services: Set<string>;
  postureChecks: Set<string>;
  identities: Set<string>;
  /** The role lists these members were chosen by (undefined: unknown, compare the members). */
  roleKeys?: PolicyRoleKeys;
}

/** What routers were last told: entity ids by kind, each policy's members, the CA keys (CA id → kid). */
export interface TrackedModel {
  configTypes: Set<string>;
  configs: Set<string>;
  identities: Set<string>;
  services: Set<string>;
  postureChecks: Set<string>;
  policies: Map<string, PolicyMembers>;
  caKeys: Map<string, string>;
}

export function emptyTrackedModel(): TrackedModel {
  return {
    configTypes: new Set(),
    configs: new Set(),
    identities: new Set(),
    services: new Set(),
    postureChecks: new Set(),
    policies: new Map(),
    caKeys: new Map(),
  };
}

const sorted = (ids: Iterable<string>): string[] => [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

function change(policyId: string, type: ServicePolicyRelatedEntityType, ids: readonly string[], add: boolean): ModelEvent {
  return { action: DataStateAction.Create, servicePolicyChange: { policyId, relatedEntityIds: [...ids], relatedEntityType: type, add } };
}

export interface FullModel {
  events: ModelEvent[];
  tracked: TrackedModel;
}

/**
 * Reads everything routers get. Run it inside one read snapshot (`q`), with the access index brought up to at
 * least the point the caller's feed position names, so members and entities agree. `controllerKeys` are the controller's own public key events.
 */
export async function readFullModel(q: Sql, membership: PolicyMembership, controllerKeys: readonly ModelEvent[], now = new Date()): Promise<FullModel> {
  const tracked = emptyTrackedModel();
  const events: ModelEvent[] = [];
  const create = DataStateAction.Create;
  for (const configType of await readConfigTypes(q)) {
    tracked.configTypes.add(configType.id!);
    events.push({ action: create, configType });
  }
  for (const config of await readConfigs(q)) {
    tracked.configs.add(config.id!);
    events.push({ action: create, config });
  }
  for (const identity of await readIdentities(q, now)) {
    tracked.identities.add(identity.id!);
    events.push({ action: create, identity });
  }
  for (const service of await readServices(q)) {
    tracked.services.add(service.id!);
    events.push({ action: create, service });
  }
  for (const postureCheck of await readPostureChecks(q)) {
    tracked.postureChecks.add(postureCheck.id!);
    events.push({ action: create, postureCheck });
  }
  const roleKeys = await readAllPolicyRoleKeys(q);
  for (const servicePolicy of await readServicePolicies(q)) {
    const id = servicePolicy.id!;
    const members: PolicyMembers = {
      services: new Set(membership.membersOf(id, 'serviceRoles')),
      postureChecks: new Set(membership.membersOf(id, 'postureCheckRoles')),
      identities: new Set(membership.membersOf(id, 'identityRoles')),
      ...(roleKeys.has(id) ? { roleKeys: roleKeys.get(id)! } : {}),
    };
    tracked.policies.set(id, members);
    events.push({ action: create, servicePolicy });
    events.push(change(id, ServicePolicyRelatedEntityType.RelatedService, sorted(members.services), true));
    events.push(change(id, ServicePolicyRelatedEntityType.RelatedPostureCheck, sorted(members.postureChecks), true));
    if (members.identities.size > 0) events.push(change(id, ServicePolicyRelatedEntityType.RelatedIdentity, sorted(members.identities), true));
  }
  events.push(...controllerKeys);
  for (const { id, key } of await readCaKeys(q)) {
    tracked.caKeys.set(id, key.kid!);
    events.push({ action: create, isSynthetic: true, publicKey: key });
  }
  // Ended JWT sessions whose tokens have not expired yet (as upstream's later full states carry them).
  for (const revocation of await readRevocations(q, now)) events.push({ action: create, revocation });
  return { events, tracked };
}
