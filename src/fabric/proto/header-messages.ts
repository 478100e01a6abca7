/**
 * Control messages that carry no protobuf body: their content lives in channel headers (§8.3). The header values
 * use the channel encodings of channel/message.ts (string, uint32, bool, string list, `map<u32,bytes>`, ...).
 */

/** CreateCircuitV2Request (edge content type 20218), empty body. */
export const CreateCircuitV2RequestHeader = {
  PeerData: 10,
  SessionToken: 11,
  Fingerprints: 12,
  TerminatorInstanceId: 13,
  ApiSessionToken: 14,
} as const;

/** CreateCircuitV2Response (20219), empty body. `Address` is the ingress id used in the Route's forwards. */
export const CreateCircuitV2ResponseHeader = {
  PeerData: 10,
  CircuitId: 11,
  Address: 12,
  Tags: 13,
} as const;

/**
 * RouteResult (ctrl content type 1022), body = circuit id. `Success` counts by presence; every header id not
 * listed here is peer data.
 */
export const RouteResultHeader = {
  Attempt: 1101,
  Success: 1102,
  Error: 1103,
  ErrorCode: 1104,
} as const;

/** Edge Error (20002), body = message text. `RetryHint` (a RetryHint value) is the control channel's header 18. */
export const EdgeErrorHeader = {
  RetryHint: 18,
  ErrorCode: 1014,
  CircuitId: 1026,
} as const;

/** CurrentIndexMessage (20506), empty body. */
export const CurrentIndexHeader = {
  Index: 1025,
} as const;

/** Keys of peer data maps (Route egress, CreateTerminatorV2, CreateCircuitV2 and RouteResult). */
export const PeerDataKey = {
  PublicKey: 1003,
  CallerId: 1008,
  AppData: 1011,
  ConnectionMarker: 1025,
  TerminatorLocalAddr: 1110,
  TerminatorRemoteAddr: 1111,
  InitiatorLocalAddr: 1112,
  InitiatorRemoteAddr: 1113,
  XtStickinessToken: 1114,
  DialerIdentityId: 1115,
  DialerIdentityName: 1116,
} as const;
