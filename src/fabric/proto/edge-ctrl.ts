/**
 * Package ziti.edge_ctrl.pb as TypeScript: content types and header ids of the edge control protocol, its enums,
 * and the shape of each message as `decode` returns it (same conventions as ctrl.ts: proto3 defaults for absent
 * fields, absent sub-messages and unset oneof members `undefined`, 64-bit integers `bigint`, open enums).
 * Nested proto messages get the shortest clear name: DataState.Identity → DataStateIdentity,
 * DataState.PostureCheck.Mac → PostureCheckMac, ConnectEvents.ConnectDetails → ConnectDetails.
 */
import type { ByteMap } from './ctrl.ts';

/** Edge content types (§8.2). */
export const EdgeContentType = {
  ServerHello: 20000,
  ClientHello: 20001,
  Error: 20002,
  SessionRemoved: 20102,
  ApiSessionAdded: 20200,
  ApiSessionUpdated: 20201,
  ApiSessionRemoved: 20202,
  ApiSessionHeartbeat: 20203,
  RequestClientReSync: 20204,
  CreateCircuitRequest: 20205,
  CreateCircuitResponse: 20206,
  UpdateTerminatorRequest: 20209,
  UpdateTerminatorResponse: 20210,
  RemoveTerminatorRequest: 20211,
  RemoveTerminatorResponse: 20212,
  ValidateSessionsRequest: 20213,
  HealthEvent: 20214,
  CreateTerminatorV2Request: 20216,
  CreateTerminatorV2Response: 20217,
  CreateCircuitV2Request: 20218,
  CreateCircuitV2Response: 20219,
  CreateTunnelCircuitV2Request: 20220,
  CreateTunnelCircuitV2Response: 20221,
  Enroll: 20300,
  EnrollmentCertsResponse: 20301,
  EnrollmentExtendRouterRequest: 20302,
  EnrollmentExtendRouterVerifyRequest: 20303,
  CreateApiSessionRequest: 20400,
  CreateApiSessionResponse: 20401,
  CreateCircuitForServiceRequest: 20402,
  CreateCircuitForServiceResponse: 20403,
  ListServicesRequest: 20404,
  ServiceList: 20405,
  CreateTunnelTerminatorRequest: 20406,
  CreateTunnelTerminatorResponse: 20407,
  UpdateTunnelTerminatorRequest: 20408,
  UpdateTunnelTerminatorResponse: 20409,
  RemoveTunnelTerminatorRequest: 20410,
  RemoveTunnelTerminatorResponse: 20411,
  TunnelHealthEvent: 20412,
  CreateTunnelTerminatorRequestV2: 20413,
  CreateTunnelTerminatorResponseV2: 20414,
  ConnectEvents: 20415,
  DataState: 20500,
  DataStateChangeSet: 20501,
  UpdateToken: 20502,
  ValidateDataStateRequest: 20503,
  ValidateDataStateResponse: 20504,
  SubscribeToDataModelRequest: 20505,
  CurrentIndexMessage: 20506,
} as const;

/** Header ids used with edge messages: the proto Header enum plus the sync-strategy headers of full-state chunks. */
export const EdgeHeader = {
  SyncStrategyType: 1013,
  SyncStrategyState: 1014,
  SyncStrategyLastIndex: 1015,
  TerminatorId: 1022,
  CheckPassed: 1023,
  RouterDataModel: 1024,
  RouterDataModelIndex: 1025,
  RouterDataModelSubscriptionId: 1026,
} as const;

export const SessionType = { Dial: 0, Bind: 1 } as const;
export type SessionType = (typeof SessionType)[keyof typeof SessionType];

export const PolicyType = { Invalid: 0, Dial: 1, Bind: 2 } as const;
export type PolicyType = (typeof PolicyType)[keyof typeof PolicyType];

export const ServicePolicyRelatedEntityType = {
  Invalid: 0,
  RelatedService: 1,
  RelatedIdentity: 2,
  RelatedPostureCheck: 3,
} as const;
export type ServicePolicyRelatedEntityType = (typeof ServicePolicyRelatedEntityType)[keyof typeof ServicePolicyRelatedEntityType];

export const TerminatorPrecedence = { Default: 0, Required: 1, Failed: 2 } as const;
export type TerminatorPrecedence = (typeof TerminatorPrecedence)[keyof typeof TerminatorPrecedence];

export const CreateTerminatorResult = {
  Success: 0,
  FailedIdConflict: 1,
  FailedOther: 2,
  FailedBusy: 3,
  FailedInvalidSession: 4,
} as const;
export type CreateTerminatorResult = (typeof CreateTerminatorResult)[keyof typeof CreateTerminatorResult];

/** Edge error codes (edge_client_pb.Error): what routers pass on to SDKs when the controller refuses a request. */
export const EdgeErrorCode = {
  Internal: 1,
  InvalidApiSession: 2,
  InvalidSession: 3,
  WrongSessionType: 4,
  InvalidEdgeRouterForSession: 5,
  InvalidService: 6,
  TunnelingNotEnabled: 7,
  InvalidTerminator: 8,
  InvalidPrecedence: 9,
  InvalidCost: 10,
  EncryptionDataMissing: 11,
} as const;

/** CreateTerminatorV2Response.retryHint values. */
export const RetryHint = { Default: 0, TooBusy: 1, StartOver: 2, NotRetriable: 3 } as const;

export const CacheType = { TerminatorIds: 0 } as const;

/** DataState.Action */
export const DataStateAction = { Create: 0, Update: 1, Delete: 2 } as const;
export type DataStateAction = (typeof DataStateAction)[keyof typeof DataStateAction];

/** DataState.PublicKey.Usage */
export const PublicKeyUsage = { JWTValidation: 0, ClientX509CertValidation: 1 } as const;
export type PublicKeyUsage = (typeof PublicKeyUsage)[keyof typeof PublicKeyUsage];

/** DataState.PublicKey.Format */
export const PublicKeyFormat = { X509CertDer: 0, PKIXPublicKey: 1 } as const;
export type PublicKeyFormat = (typeof PublicKeyFormat)[keyof typeof PublicKeyFormat];

/** google.protobuf.Timestamp */
export interface Timestamp {
  seconds: bigint;
  nanos: number;
}

export interface ServerHello {
  version: string;
  data: Record<string, string>;
  byteData: Record<string, Uint8Array>;
}

export interface Address {
  value: string;
  protocol: string;
  hostname: string;
  port: number;
}

export interface Listener {
  address?: Address;
  advertise?: Address;
}

export interface ClientHello {
  version: string;
  hostname: string;
  protocols: string[];
  data: Record<string, string>;
  protocolPorts: string[];
  listeners: Listener[];
}

export interface Cache {
  data: Record<string, Uint8Array>;
}

export interface DataStateConfigType {
  id: string;
  name: string;
}

export interface DataStateConfig {
  id: string;
  typeId: string;
  name: string;
  dataJson: string;
}

export interface DataStateServiceConfigs {
  /** Config type id → config id. */
  configs: Record<string, string>;
}

export interface DataStateIdentity {
  id: string;
  name: string;
  defaultHostingPrecedence: TerminatorPrecedence;
  defaultHostingCost: number;
  serviceHostingPrecedences: Record<string, TerminatorPrecedence>;
  serviceHostingCosts: Record<string, number>;
  appDataJson: Uint8Array;
  serviceConfigs: Record<string, DataStateServiceConfigs>;
  disabled: boolean;
}

export interface DataStateService {
  id: string;
  name: string;
  encryptionRequired: boolean;
  configs: string[];
}

export interface DataStateServicePolicy {
  id: string;
  name: string;
  policyType: PolicyType;
}

export interface DataStateServicePolicyChange {
  policyId: string;
  relatedEntityIds: string[];
  relatedEntityType: ServicePolicyRelatedEntityType;
  add: boolean;
}

export interface DataStateRevocation {
  id: string;
  expiresAt?: Timestamp;
  /** `API_SESSION`, `IDENTITY` or `JTI` (routers of 2.0.3 and later act on it; older ones ignore it). */
  type?: string;
  issuedBefore?: Timestamp;
}

export interface DataStatePublicKey {
  data: Uint8Array;
  kid: string;
  usages: PublicKeyUsage[];
  format: PublicKeyFormat;
}

export interface PostureCheckMac {
  macAddresses: string[];
}

export interface PostureCheckMfa {
  timeoutSeconds: bigint;
  promptOnWake: boolean;
  promptOnUnlock: boolean;
  ignoreLegacyEndpoints: boolean;
}

export interface PostureCheckOs {
  osType: string;
  osVersions: string[];
}

export interface PostureCheckOsList {
  osList: PostureCheckOs[];
}

export interface PostureCheckProcess {
  osType: string;
  path: string;
  hashes: string[];
  fingerprints: string[];
}

export interface PostureCheckProcessMulti {
  semantic: string;
  processes: PostureCheckProcess[];
}

export interface PostureCheckDomains {
  domains: string[];
}

/** DataState.PostureCheck; at most one of the subtype members (oneof `subtype`) is set. */
export interface DataStatePostureCheck {
  id: string;
  name: string;
  typeId: string;
  mac?: PostureCheckMac;
  mfa?: PostureCheckMfa;
  osList?: PostureCheckOsList;
  process?: PostureCheckProcess;
  processMulti?: PostureCheckProcessMulti;
  domains?: PostureCheckDomains;
}

/** DataState.Event; at most one of the model members (oneof `model`) is set. */
export interface DataStateEvent {
  action: DataStateAction;
  isSynthetic: boolean;
  identity?: DataStateIdentity;
  service?: DataStateService;
  servicePolicy?: DataStateServicePolicy;
  postureCheck?: DataStatePostureCheck;
  publicKey?: DataStatePublicKey;
  revocation?: DataStateRevocation;
  servicePolicyChange?: DataStateServicePolicyChange;
  configType?: DataStateConfigType;
  config?: DataStateConfig;
}

export interface DataStateChangeSet {
  index: bigint;
  isSynthetic: boolean;
  changes: DataStateEvent[];
  timestampId: string;
  previousIndex: bigint;
}

export interface DataState {
  events: DataStateEvent[];
  endIndex: bigint;
  timelineId: string;
  caches: Record<string, Cache>;
}

export interface ApiSession {
  token: string;
  certFingerprints: string[];
  id: string;
  identityId: string;
}

export interface ApiSessionAdded {
  isFullState: boolean;
  apiSessions: ApiSession[];
}

export interface ApiSessionUpdated {
  apiSessions: ApiSession[];
}

export interface ApiSessionRemoved {
  tokens: string[];
  ids: string[];
}

export interface ApiSessionHeartbeat {
  tokens: string[];
}

export interface SessionRemoved {
  tokens: string[];
  ids: string[];
}

export interface RequestClientReSync {
  reason: string;
}

export interface CreateTerminatorV2Request {
  address: string;
  sessionToken: string;
  fingerprints: string[];
  peerData: ByteMap;
  cost: number;
  precedence: TerminatorPrecedence;
  instanceId: string;
  instanceSecret: Uint8Array;
  apiSessionToken: string;
}

export interface CreateTerminatorV2Response {
  terminatorId: string;
  result: CreateTerminatorResult;
  msg: string;
  errorCode: number;
  /** One of RetryHint. */
  retryHint: number;
}

/** A router's tunneler hosting a service (its own identity, the router's id). */
export interface CreateTunnelTerminatorRequestV2 {
  serviceId: string;
  address: string;
  peerData: ByteMap;
  cost: number;
  precedence: TerminatorPrecedence;
  instanceId: string;
  instanceSecret: Uint8Array;
  startTime: bigint;
}

export interface CreateTunnelTerminatorResponseV2 {
  terminatorId: string;
  startTime: bigint;
  result: CreateTerminatorResult;
  msg: string;
  errorCode: number;
  /** One of RetryHint. */
  retryHint: number;
}

export interface UpdateTunnelTerminatorRequest {
  terminatorId: string;
  cost: number;
  precedence: TerminatorPrecedence;
  updatePrecedence: boolean;
  updateCost: boolean;
}

export interface RemoveTerminatorRequest {
  sessionToken: string;
  fingerprints: string[];
  terminatorId: string;
  apiSessionToken: string;
}

export interface UpdateTerminatorRequest {
  sessionToken: string;
  fingerprints: string[];
  terminatorId: string;
  cost: number;
  precedence: TerminatorPrecedence;
  updatePrecedence: boolean;
  updateCost: boolean;
  apiSessionToken: string;
}

export interface HealthEventRequest {
  sessionToken: string;
  fingerprints: string[];
  terminatorId: string;
  checkPassed: boolean;
  apiSessionToken: string;
}

export interface ValidateSessionsRequest {
  sessionTokens: string[];
}

/** ConnectEvents.ConnectDetails */
export interface ConnectDetails {
  connectTime: bigint;
  srcAddr: string;
  dstAddr: string;
}

/** ConnectEvents.IdentityConnectEvents */
export interface IdentityConnectEvents {
  identityId: string;
  isConnected: boolean;
  connectTimes: ConnectDetails[];
}

export interface ConnectEvents {
  events: IdentityConnectEvents[];
  fullState: boolean;
}

export interface SubscribeToDataModelRequest {
  currentIndex: bigint;
  subscriptionDurationSeconds: number;
  renew: boolean;
  timelineId: string;
  subscriptionId: string;
}
