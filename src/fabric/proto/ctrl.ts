/**
 * Package ziti.ctrl.pb as TypeScript: the content types and header ids of the control protocol, its enums, and
 * the shape of each message as `decode` returns it (every field present, proto3 defaults for absent ones; an
 * absent sub-message is `undefined`). 64-bit integers are `bigint`, everything narrower is `number`.
 * Enums are open in proto3: a decoded enum field can hold a number newer than the ones listed here.
 */

/** Control-plane content types (§8.1). CircuitSuccess, CircuitFailed and RouteResult carry no protobuf body. */
export const CtrlContentType = {
  CircuitRequest: 1000,
  CircuitSuccess: 1001,
  Fault: 1004,
  Route: 1005,
  Unroute: 1006,
  Metrics: 1007,
  TogglePipeTracesRequest: 1008,
  TraceEvent: 1010,
  CreateTerminatorRequest: 1011,
  RemoveTerminatorRequest: 1012,
  InspectRequest: 1013,
  InspectResponse: 1014,
  CircuitFailed: 1016,
  ValidateTerminatorsRequest: 1017,
  UpdateTerminatorRequest: 1018,
  Settings: 1020,
  RouteResult: 1022,
  CircuitConfirmation: 1034,
  RouterLinks: 1035,
  VerifyRouter: 1036,
  UpdateCtrlAddresses: 1037,
  RemoveTerminatorsRequest: 1038,
  QuiesceRouterRequest: 1039,
  DequiesceRouterRequest: 1040,
  ValidateTerminatorsV2Request: 1041,
  ValidateTerminatorsV2Response: 1042,
  DecommissionRouterRequest: 1043,
  PeerStateChangeRequest: 1050,
  UpdateClusterLeaderRequest: 1051,
  UpdateRouterInterfaces: 1052,
  LinkState: 1053,
  Alerts: 1054,
  RequestClusterMembers: 1055,
} as const;

/** Header ids of the control hello (ControlHeaders). */
export const CtrlHeader = {
  Listeners: 1000,
  RouterMetadata: 1001,
  Capabilities: 1002,
} as const;

export const FaultSubject = {
  IngressFault: 0,
  EgressFault: 1,
  LinkFault: 2,
  ForwardFault: 3,
  UnknownOwnerForwardFault: 4,
  LinkDuplicate: 5,
} as const;
export type FaultSubject = (typeof FaultSubject)[keyof typeof FaultSubject];

export const DestType = { Start: 0, End: 1, Link: 2 } as const;
export type DestType = (typeof DestType)[keyof typeof DestType];

export const PeerState = { Healthy: 0, Unhealthy: 1, Removed: 2 } as const;
export type PeerState = (typeof PeerState)[keyof typeof PeerState];

export const TerminatorPrecedence = { Default: 0, Required: 1, Failed: 2 } as const;
export type TerminatorPrecedence = (typeof TerminatorPrecedence)[keyof typeof TerminatorPrecedence];

export const TerminatorInvalidReason = { UnknownBinding: 0, UnknownTerminator: 1, BadState: 2 } as const;
export type TerminatorInvalidReason = (typeof TerminatorInvalidReason)[keyof typeof TerminatorInvalidReason];

/** Peer data and similar integer-keyed byte maps (keys are header-style ids, e.g. PeerDataKey). */
export type ByteMap = Map<number, Uint8Array>;

export interface Settings {
  data: ByteMap;
}

export interface CircuitConfirmation {
  circuitIds: string[];
  /** Circuit id → idle time in nanoseconds. */
  idleTimes: Record<string, bigint>;
}

export interface RemoveTerminatorsRequest {
  terminatorIds: string[];
}

export interface Terminator {
  id: string;
  binding: string;
  address: string;
  marker: bigint;
}

export interface ValidateTerminatorsV2Request {
  terminators: Terminator[];
  fixInvalid: boolean;
}

export interface RouterTerminatorState {
  valid: boolean;
  reason: TerminatorInvalidReason;
  detail: string;
  marker: bigint;
}

export interface ValidateTerminatorsV2Response {
  states: Record<string, RouterTerminatorState>;
}

export interface LinkConn {
  type: string;
  localAddr: string;
  remoteAddr: string;
}

export interface LinkConnState {
  stateIteration: number;
  conns: LinkConn[];
}

/** RouterLinks.RouterLink */
export interface RouterLink {
  id: string;
  destRouterId: string;
  linkProtocol: string;
  linkCostTags: string[];
  dialAddress: string;
  iteration: number;
  connState?: LinkConnState;
}

export interface RouterLinks {
  links: RouterLink[];
  fullRefresh: boolean;
}

/** A router's Metrics (1007), package ziti.metrics.pb: the part the controller reads. Values in nanoseconds. */
export interface MetricsMessage {
  sourceId: string;
  histograms: Record<string, MetricsHistogram>;
}

export interface MetricsHistogram {
  count: bigint;
  max: bigint;
  mean: number;
  min: bigint;
}

export interface Fault {
  subject: FaultSubject;
  id: string;
  iteration: number;
}

export interface Context {
  fields: Record<string, string>;
  channelMask: number;
}

/** Route.Egress */
export interface RouteEgress {
  binding: string;
  address: string;
  destination: string;
  peerData: ByteMap;
}

/** Route.Forward */
export interface RouteForward {
  srcAddress: string;
  dstAddress: string;
  dstType: DestType;
}

export interface Route {
  circuitId: string;
  attempt: number;
  egress?: RouteEgress;
  forwards: RouteForward[];
  context?: Context;
  /** Nanoseconds. */
  timeout: bigint;
  tags: Record<string, string>;
}

export interface Unroute {
  circuitId: string;
  now: boolean;
}

export interface InspectRequest {
  requestedValues: string[];
}

/** InspectResponse.InspectValue */
export interface InspectValue {
  name: string;
  value: string;
}

export interface InspectResponse {
  success: boolean;
  errors: string[];
  values: InspectValue[];
}

export interface VerifyRouter {
  routerId: string;
  fingerprints: string[];
}

export interface Listener {
  address: string;
  protocol: string;
  costTags: string[];
  groups: string[];
  localBinding: string;
}

export interface Listeners {
  listeners: Listener[];
}

export interface UpdateCtrlAddresses {
  addresses: string[];
  index: bigint;
  isLeader: boolean;
  /** Since v2.0.3: routers of that version read only this list (they ignore `addresses`). */
  controllers: CtrlDetail[];
}

export interface CtrlDetail {
  id: string;
  endpoints: CtrlEndpoint[];
}

export interface CtrlEndpoint {
  address: string;
  groups: string[];
}

export interface UpdateClusterLeader {
  index: bigint;
}

export interface PeerStateChange {
  id: string;
  version: string;
  state: PeerState;
  listeners: Listener[];
}

export interface PeerStateChanges {
  changes: PeerStateChange[];
}

export interface Interface {
  name: string;
  hardwareAddress: string;
  mtu: bigint;
  index: bigint;
  flags: bigint;
  addresses: string[];
}

export interface RouterInterfacesUpdate {
  interfaces: Interface[];
}

export interface LinkStateUpdate {
  linkId: string;
  linkIteration: number;
  connState?: LinkConnState;
}

export interface Alert {
  sourceType: string;
  sourceId: string;
  timestamp: bigint;
  severity: string;
  message: string;
  details: string[];
  relatedEntities: Record<string, string>;
}

export interface Alerts {
  alerts: Alert[];
}

export interface UpdateTerminatorRequest {
  terminatorId: string;
  updatePrecedence: boolean;
  updateCost: boolean;
  precedence: TerminatorPrecedence;
  cost: number;
}
