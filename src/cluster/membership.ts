/**
 * Which controllers form the network right now, and which of them leads: the view every part of a controller
 * that talks about "the other controllers" reads (router enrollment `ctrls`, UpdateCtrlAddresses, GET /controllers,
 * the JWT keyring, leader-only work). Built by src/cluster/network.ts; a controller on the embedded SQLite store is a
 * network of one that always leads.
 */

export interface ControllerMember {
  /** The controller's id: hello header 8, the `/controllers` id, `source_ctrl` of terminators it created. */
  id: string;
  /** `tls:<advertise>:<port>`, exactly the string routers store in their endpoints file. */
  ctrlAddress: string;
  /** Its TLS server certificate (PEM): the key behind it signs that controller's JWTs. */
  certPem: string;
  /** Lower-case hex SHA-1 of that certificate's DER: the `kid` of its JWTs. */
  fingerprint: string;
}

export type MembershipEvent = 'members' | 'leader';

export interface Membership {
  /** This controller's id. */
  readonly controllerId: string;
  /** The network's id (the router data model's timeline): the same on every controller of one store. */
  readonly networkId: string;
  /** True when controllers share a PostgreSQL store (membership is real); false on SQLite (a network of one). */
  readonly clustered: boolean;
  /** The live controllers, this one included, ordered by id. */
  live(): readonly ControllerMember[];
  /**
   * Every controller of the network, live or not, ordered by id: the keys JWTs are verified under. A token a
   * controller signed stays valid after that controller died (its SDK keeps its session on the others) until it
   * expires, or until the controller's record is deleted.
   */
  known(): readonly ControllerMember[];
  /** A number that grows whenever the live set changes (always > 0): UpdateCtrlAddresses' `index`. */
  version(): number;
  /** True while this process holds the leadership (it runs the work that must run once in the network). */
  isLeader(): boolean;
  /** Grows each time leadership moves to a process (the leader's fencing token; UpdateClusterLeader's `index`). */
  leaderEpoch(): number;
  /** Called after the live set changed ('members') or this process became or stopped being the leader ('leader'). */
  onChange(listener: (event: MembershipEvent) => void): () => void;
}

/** The membership of a controller alone on its store: itself, always leading. */
export function soleMembership(self: ControllerMember, networkId: string): Membership {
  const members = Object.freeze([self]);
  return {
    controllerId: self.id,
    networkId,
    clustered: false,
    live: () => members,
    known: () => members,
    version: () => 1,
    isLeader: () => true,
    leaderEpoch: () => 1,
    onChange: () => () => undefined,
  };
}
