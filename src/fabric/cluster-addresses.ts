/**
 * What a router hears about the controllers of its network (controllers-ha.md §2.1, §2.2), as pure functions of
 * the membership: UpdateCtrlAddresses (1037) with every live controller's control address, the membership version
 * as its index and whether the sender leads, and UpdateClusterLeader (1051) with the leader's epoch.
 *
 * Only a clustered controller sends them: a controller alone on its store is upstream's standalone controller,
 * which sends none, and a list that is not exactly the router's endpoints would make the router rewrite its
 * endpoints file. Settings/NewCtrlAddress (1020) is never sent: it collapses a router's set to one controller.
 */
import type { Membership } from '../cluster/membership.ts';
import { message, type ChannelMessage } from './channel/message.ts';
import { CtrlContentType } from './proto/ctrl.ts';
import { encode } from './proto/index.ts';
import type { ProtoInput } from './proto/codec.ts';
import type { UpdateCtrlAddresses } from './proto/ctrl.ts';

export type ClusterView = Pick<Membership, 'live' | 'version' | 'isLeader' | 'leaderEpoch'>;

/**
 * The body of UpdateCtrlAddresses. Both lists are filled, in the membership's order: routers up to v2.0.0 read
 * `addresses`, v2.0.3 routers read only `controllers` (no endpoint groups: every router may use every controller).
 */
export function ctrlAddressesUpdate(membership: ClusterView): ProtoInput<UpdateCtrlAddresses> {
  const live = membership.live();
  return {
    addresses: live.map((m) => m.ctrlAddress),
    index: BigInt(membership.version()),
    isLeader: membership.isLeader(),
    controllers: live.map((m) => ({ id: m.id, endpoints: [{ address: m.ctrlAddress, groups: [] }] })),
  };
}

export function ctrlAddressesMessage(membership: ClusterView): ChannelMessage {
  return message(CtrlContentType.UpdateCtrlAddresses, encode('ctrl.UpdateCtrlAddresses', ctrlAddressesUpdate(membership)));
}

/** UpdateClusterLeader: the receiving router takes the sending channel's controller as its leader. */
export function clusterLeaderMessage(membership: Pick<Membership, 'leaderEpoch'>): ChannelMessage {
  return message(CtrlContentType.UpdateClusterLeaderRequest, encode('ctrl.UpdateClusterLeader', { index: BigInt(membership.leaderEpoch()) }));
}
