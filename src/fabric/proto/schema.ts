/**
 * Our protobuf schemas for the router control plane, written from the wire facts of
 * docs/upstream/router-control.md §8 (message names, field numbers, types, enum values). Only numbers and types
 * travel on the wire, so names are ours where the tables leave them open (e.g. nested enum and message names), and
 * a few field names are lower-camel-cased (`expiresAt`, `timeoutSeconds`, `osType`) for one TypeScript style.
 * Enum value names are prefixed where two enums of one package would otherwise share a name (proto scoping rule).
 *
 * Kept as strings so a compiled build needs no .proto file on disk; codec.ts parses them once.
 */

/** A wire-identical stand-in for google.protobuf.Timestamp (used by DataState.Revocation). */
export const TIMESTAMP_PROTO = `
syntax = "proto3";
package google.protobuf;

message Timestamp {
  int64 seconds = 1;
  int32 nanos = 2;
}
`;

/** Package ziti.ctrl.pb: routing, links, terminators, cluster membership (§8.1). */
export const CTRL_PROTO = `
syntax = "proto3";
package ziti.ctrl.pb;

message Settings {
  map<int32, bytes> data = 1;
}

message CircuitConfirmation {
  repeated string circuitIds = 1;
  map<string, int64> idleTimes = 2;
}

message RemoveTerminatorsRequest {
  repeated string terminatorIds = 1;
}

message Terminator {
  string id = 1;
  string binding = 2;
  string address = 3;
  uint64 marker = 4;
}

message ValidateTerminatorsV2Request {
  repeated Terminator terminators = 1;
  bool fixInvalid = 2;
}

enum TerminatorInvalidReason {
  UnknownBinding = 0;
  UnknownTerminator = 1;
  BadState = 2;
}

message RouterTerminatorState {
  bool valid = 1;
  TerminatorInvalidReason reason = 2;
  string detail = 3;
  uint64 marker = 4;
}

message ValidateTerminatorsV2Response {
  map<string, RouterTerminatorState> states = 1;
}

message LinkConn {
  string type = 1;
  string localAddr = 2;
  string remoteAddr = 3;
}

message LinkConnState {
  uint32 stateIteration = 1;
  repeated LinkConn conns = 2;
}

message RouterLinks {
  message RouterLink {
    string id = 1;
    string destRouterId = 2;
    string linkProtocol = 3;
    repeated string linkCostTags = 4;
    string dialAddress = 5;
    uint32 iteration = 6;
    LinkConnState connState = 7;
  }
  repeated RouterLink links = 1;
  bool fullRefresh = 2;
}

enum FaultSubject {
  IngressFault = 0;
  EgressFault = 1;
  LinkFault = 2;
  ForwardFault = 3;
  UnknownOwnerForwardFault = 4;
  LinkDuplicate = 5;
}

message Fault {
  FaultSubject subject = 1;
  string id = 2;
  uint32 iteration = 3;
}

message Context {
  map<string, string> fields = 1;
  uint32 channelMask = 2;
}

enum DestType {
  Start = 0;
  End = 1;
  Link = 2;
}

message Route {
  message Egress {
    string binding = 1;
    string address = 2;
    string destination = 3;
    map<uint32, bytes> peerData = 4;
  }
  message Forward {
    string srcAddress = 1;
    string dstAddress = 2;
    DestType dstType = 3;
  }
  string circuitId = 1;
  uint32 attempt = 2;
  Egress egress = 3;
  repeated Forward forwards = 4;
  Context context = 5;
  uint64 timeout = 6;
  map<string, string> tags = 7;
}

message Unroute {
  string circuitId = 1;
  bool now = 2;
}

message InspectRequest {
  repeated string requestedValues = 1;
}

message InspectResponse {
  message InspectValue {
    string name = 1;
    string value = 2;
  }
  bool success = 1;
  repeated string errors = 2;
  repeated InspectValue values = 3;
}

message VerifyRouter {
  string routerId = 1;
  repeated string fingerprints = 2;
}

message Listener {
  string address = 1;
  string protocol = 2;
  repeated string costTags = 3;
  repeated string groups = 4;
  string localBinding = 5;
}

message Listeners {
  repeated Listener listeners = 1;
}

message UpdateCtrlAddresses {
  repeated string addresses = 1;
  uint64 index = 2;
  bool isLeader = 3;
  repeated CtrlDetail controllers = 4;
}

message CtrlDetail {
  string id = 1;
  repeated CtrlEndpoint endpoints = 2;
}

message CtrlEndpoint {
  string address = 1;
  repeated string groups = 2;
}

message UpdateClusterLeader {
  uint64 index = 1;
}

enum PeerState {
  Healthy = 0;
  Unhealthy = 1;
  Removed = 2;
}

message PeerStateChange {
  string id = 1;
  string version = 2;
  PeerState state = 3;
  repeated Listener listeners = 4;
}

message PeerStateChanges {
  repeated PeerStateChange changes = 1;
}

message Interface {
  string name = 1;
  string hardwareAddress = 2;
  int64 mtu = 3;
  int64 index = 4;
  uint64 flags = 5;
  repeated string addresses = 6;
}

message RouterInterfacesUpdate {
  repeated Interface interfaces = 1;
}

message LinkStateUpdate {
  string linkId = 1;
  uint32 linkIteration = 2;
  LinkConnState connState = 3;
}

message Alert {
  string sourceType = 1;
  string sourceId = 2;
  int64 timestamp = 3;
  string severity = 4;
  string message = 5;
  repeated string details = 6;
  map<string, string> relatedEntities = 7;
}

message Alerts {
  repeated Alert alerts = 1;
}

enum TerminatorPrecedence {
  Default = 0;
  Required = 1;
  Failed = 2;
}

message UpdateTerminatorRequest {
  string terminatorId = 1;
  bool updatePrecedence = 2;
  bool updateCost = 3;
  TerminatorPrecedence precedence = 4;
  uint32 cost = 5;
}
`;

/** Package ziti.edge_ctrl.pb: edge hello, API sessions, terminators, the router data model (§8.2). */
export const EDGE_CTRL_PROTO = `
syntax = "proto3";
package ziti.edge_ctrl.pb;

enum SessionType {
  Dial = 0;
  Bind = 1;
}

enum PolicyType {
  InvalidPolicy = 0;
  DialPolicy = 1;
  BindPolicy = 2;
}

enum ServicePolicyRelatedEntityType {
  InvalidRelatedType = 0;
  RelatedService = 1;
  RelatedIdentity = 2;
  RelatedPostureCheck = 3;
}

enum TerminatorPrecedence {
  Default = 0;
  Required = 1;
  Failed = 2;
}

enum CreateTerminatorResult {
  Success = 0;
  FailedIdConflict = 1;
  FailedOther = 2;
  FailedBusy = 3;
  FailedInvalidSession = 4;
}

enum CacheType {
  TerminatorIds = 0;
}

message ServerHello {
  string version = 1;
  map<string, string> data = 2;
  map<string, bytes> byteData = 3;
}

message Address {
  string value = 10;
  string protocol = 20;
  string hostname = 30;
  int32 port = 40;
}

message Listener {
  Address address = 10;
  Address advertise = 20;
}

message ClientHello {
  string version = 1;
  string hostname = 2;
  repeated string protocols = 3;
  map<string, string> data = 4;
  repeated string protocolPorts = 5;
  repeated Listener listeners = 10;
}

message Cache {
  map<string, bytes> data = 1;
}

message DataState {
  enum Action {
    Create = 0;
    Update = 1;
    Delete = 2;
  }

  message Event {
    Action action = 1;
    bool isSynthetic = 3;
    oneof model {
      Identity identity = 10;
      Service service = 11;
      ServicePolicy servicePolicy = 12;
      PostureCheck postureCheck = 13;
      PublicKey publicKey = 14;
      Revocation revocation = 15;
      ServicePolicyChange servicePolicyChange = 16;
      ConfigType configType = 17;
      Config config = 18;
    }
  }

  message ChangeSet {
    uint64 index = 1;
    bool isSynthetic = 2;
    repeated Event changes = 3;
    string timestampId = 4;
    uint64 previousIndex = 5;
  }

  message ConfigType {
    string id = 1;
    string name = 2;
  }

  message Config {
    string id = 1;
    string typeId = 2;
    string name = 3;
    string dataJson = 4;
  }

  message ServiceConfigs {
    map<string, string> configs = 1;
  }

  message Identity {
    string id = 1;
    string name = 2;
    TerminatorPrecedence defaultHostingPrecedence = 3;
    uint32 defaultHostingCost = 4;
    map<string, TerminatorPrecedence> serviceHostingPrecedences = 5;
    map<string, uint32> serviceHostingCosts = 6;
    bytes appDataJson = 7;
    map<string, ServiceConfigs> serviceConfigs = 8;
    bool disabled = 9;
  }

  message Service {
    string id = 1;
    string name = 2;
    bool encryptionRequired = 3;
    repeated string configs = 4;
  }

  message ServicePolicy {
    string id = 1;
    string name = 2;
    PolicyType policyType = 3;
  }

  message ServicePolicyChange {
    string policyId = 1;
    repeated string relatedEntityIds = 2;
    ServicePolicyRelatedEntityType relatedEntityType = 3;
    bool add = 4;
  }

  message Revocation {
    string id = 1;
    google.protobuf.Timestamp expiresAt = 2;
    // 2.0.3 routers: API_SESSION (id is an API session's), IDENTITY (tokens of the identity issued before issuedBefore) or JTI.
    string type = 3;
    google.protobuf.Timestamp issuedBefore = 4;
  }

  message PublicKey {
    enum Usage {
      JWTValidation = 0;
      ClientX509CertValidation = 1;
    }
    enum Format {
      X509CertDer = 0;
      PKIXPublicKey = 1;
    }
    bytes data = 1;
    string kid = 2;
    repeated Usage usages = 3;
    Format format = 4;
  }

  message PostureCheck {
    message Mac {
      repeated string macAddresses = 1;
    }
    message Mfa {
      int64 timeoutSeconds = 1;
      bool promptOnWake = 2;
      bool promptOnUnlock = 3;
      bool ignoreLegacyEndpoints = 4;
    }
    message Os {
      string osType = 1;
      repeated string osVersions = 2;
    }
    message OsList {
      repeated Os osList = 1;
    }
    message Process {
      string osType = 1;
      string path = 2;
      repeated string hashes = 3;
      repeated string fingerprints = 4;
    }
    message ProcessMulti {
      string semantic = 1;
      repeated Process processes = 2;
    }
    message Domains {
      repeated string domains = 1;
    }
    string id = 1;
    string name = 2;
    string typeId = 4;
    oneof subtype {
      Mac mac = 7;
      Mfa mfa = 8;
      OsList osList = 9;
      Process process = 10;
      ProcessMulti processMulti = 11;
      Domains domains = 12;
    }
  }

  repeated Event events = 1;
  uint64 endIndex = 2;
  string timelineId = 3;
  map<string, Cache> caches = 4;
}

message ApiSession {
  string token = 1;
  repeated string certFingerprints = 2;
  string id = 3;
  string identityId = 4;
}

message ApiSessionAdded {
  bool isFullState = 1;
  repeated ApiSession apiSessions = 2;
}

message ApiSessionUpdated {
  repeated ApiSession apiSessions = 1;
}

message ApiSessionRemoved {
  repeated string tokens = 1;
  repeated string ids = 2;
}

message ApiSessionHeartbeat {
  repeated string tokens = 1;
}

message SessionRemoved {
  repeated string tokens = 1;
  repeated string ids = 2;
}

message RequestClientReSync {
  string reason = 1;
}

message CreateTerminatorV2Request {
  string address = 1;
  string sessionToken = 2;
  repeated string fingerprints = 3;
  map<uint32, bytes> peerData = 4;
  uint32 cost = 5;
  TerminatorPrecedence precedence = 6;
  string instanceId = 7;
  bytes instanceSecret = 8;
  string apiSessionToken = 9;
}

message CreateTerminatorV2Response {
  string terminatorId = 1;
  CreateTerminatorResult result = 2;
  string msg = 3;
  uint32 errorCode = 4;
  uint32 retryHint = 5;
}

message CreateTunnelTerminatorRequestV2 {
  string serviceId = 1;
  string address = 2;
  map<uint32, bytes> peerData = 3;
  uint32 cost = 4;
  TerminatorPrecedence precedence = 5;
  string instanceId = 6;
  bytes instanceSecret = 7;
  int64 startTime = 8;
}

message CreateTunnelTerminatorResponseV2 {
  string terminatorId = 1;
  int64 startTime = 2;
  CreateTerminatorResult result = 3;
  string msg = 4;
  uint32 errorCode = 5;
  uint32 retryHint = 6;
}

message UpdateTunnelTerminatorRequest {
  string terminatorId = 1;
  uint32 cost = 2;
  TerminatorPrecedence precedence = 3;
  bool updatePrecedence = 4;
  bool updateCost = 5;
}

message RemoveTerminatorRequest {
  string sessionToken = 1;
  repeated string fingerprints = 2;
  string terminatorId = 3;
  string apiSessionToken = 4;
}

message UpdateTerminatorRequest {
  string sessionToken = 1;
  repeated string fingerprints = 2;
  string terminatorId = 3;
  uint32 cost = 4;
  TerminatorPrecedence precedence = 5;
  bool updatePrecedence = 6;
  bool updateCost = 7;
  string apiSessionToken = 8;
}

message HealthEventRequest {
  string sessionToken = 1;
  repeated string fingerprints = 2;
  string terminatorId = 3;
  bool checkPassed = 4;
  string apiSessionToken = 5;
}

message ValidateSessionsRequest {
  repeated string sessionTokens = 1;
}

message ConnectEvents {
  message ConnectDetails {
    int64 connectTime = 1;
    string srcAddr = 2;
    string dstAddr = 3;
  }
  message IdentityConnectEvents {
    string identityId = 1;
    bool isConnected = 2;
    repeated ConnectDetails connectTimes = 3;
  }
  repeated IdentityConnectEvents events = 1;
  bool fullState = 2;
}

message SubscribeToDataModelRequest {
  uint64 currentIndex = 1;
  uint32 subscriptionDurationSeconds = 2;
  bool renew = 3;
  string timelineId = 4;
  string subscriptionId = 5;
}
`;

/**
 * Package ziti.metrics.pb, the body of a router's Metrics (1007): only what the controller reads of it, the
 * sender and the histograms (link latency and queue time); protobuf skips the other fields unread.
 */
export const METRICS_PROTO = `
syntax = "proto3";
package ziti.metrics.pb;

message MetricsMessage {
  string sourceId = 2;
  map<string, Histogram> histograms = 8;

  message Histogram {
    int64 count = 1;
    int64 max = 2;
    double mean = 3;
    int64 min = 4;
  }
}
`;
