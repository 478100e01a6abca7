/**
 * Encodes and decodes the protobuf bodies of control-plane messages, by message name ('ctrl.Route',
 * 'edge.DataState', ...). The schemas of schema.ts are parsed once at import; protobufjs does the wire work and
 * this module only converts between its objects and our plain shapes:
 *
 * - 64-bit integers are `bigint` both ways (one rule for indexes, markers, ns durations and timestamps, never a
 *   silent loss of precision); every narrower integer and every enum is a `number`.
 * - bytes decode to a Buffer copied out of the input, so a kept value does not pin a whole frame.
 * - maps with integer keys (peer data) are `Map<number, …>`; maps with string keys are plain records.
 * - decoded messages carry every field, proto3 defaults for absent ones ('' / 0 / 0n / false / [] / {} / empty
 *   bytes); an absent sub-message or unset oneof member is left out (`undefined`).
 * - encoding leaves default values off the wire, as proto3 does; missing fields count as defaults.
 *
 * Malformed input makes `decode` throw ProtoDecodeError and nothing else. Unknown fields are skipped, so newer
 * routers can add fields.
 */
import protobuf from 'protobufjs';
import type * as ctrl from './ctrl.ts';
import type * as edge from './edge-ctrl.ts';
import { CTRL_PROTO, EDGE_CTRL_PROTO, METRICS_PROTO, TIMESTAMP_PROTO } from './schema.ts';

/** Message name → its decoded shape. */
export interface ProtoMessages {
  'ctrl.Settings': ctrl.Settings;
  'ctrl.CircuitConfirmation': ctrl.CircuitConfirmation;
  'ctrl.RemoveTerminatorsRequest': ctrl.RemoveTerminatorsRequest;
  'ctrl.Terminator': ctrl.Terminator;
  'ctrl.ValidateTerminatorsV2Request': ctrl.ValidateTerminatorsV2Request;
  'ctrl.RouterTerminatorState': ctrl.RouterTerminatorState;
  'ctrl.ValidateTerminatorsV2Response': ctrl.ValidateTerminatorsV2Response;
  'ctrl.LinkConn': ctrl.LinkConn;
  'ctrl.LinkConnState': ctrl.LinkConnState;
  'ctrl.RouterLinks': ctrl.RouterLinks;
  'ctrl.Fault': ctrl.Fault;
  'ctrl.Context': ctrl.Context;
  'ctrl.Route': ctrl.Route;
  'ctrl.Unroute': ctrl.Unroute;
  'ctrl.InspectRequest': ctrl.InspectRequest;
  'ctrl.InspectResponse': ctrl.InspectResponse;
  'ctrl.VerifyRouter': ctrl.VerifyRouter;
  'ctrl.Listener': ctrl.Listener;
  'ctrl.Listeners': ctrl.Listeners;
  'ctrl.UpdateCtrlAddresses': ctrl.UpdateCtrlAddresses;
  'ctrl.UpdateClusterLeader': ctrl.UpdateClusterLeader;
  'ctrl.PeerStateChange': ctrl.PeerStateChange;
  'ctrl.PeerStateChanges': ctrl.PeerStateChanges;
  'ctrl.Interface': ctrl.Interface;
  'ctrl.RouterInterfacesUpdate': ctrl.RouterInterfacesUpdate;
  'ctrl.LinkStateUpdate': ctrl.LinkStateUpdate;
  'ctrl.Alerts': ctrl.Alerts;
  'ctrl.UpdateTerminatorRequest': ctrl.UpdateTerminatorRequest;
  'metrics.MetricsMessage': ctrl.MetricsMessage;
  'edge.ServerHello': edge.ServerHello;
  'edge.ClientHello': edge.ClientHello;
  'edge.Address': edge.Address;
  'edge.Listener': edge.Listener;
  'edge.Cache': edge.Cache;
  'edge.DataState': edge.DataState;
  'edge.DataState.Event': edge.DataStateEvent;
  'edge.DataState.ChangeSet': edge.DataStateChangeSet;
  'edge.ApiSession': edge.ApiSession;
  'edge.ApiSessionAdded': edge.ApiSessionAdded;
  'edge.ApiSessionUpdated': edge.ApiSessionUpdated;
  'edge.ApiSessionRemoved': edge.ApiSessionRemoved;
  'edge.ApiSessionHeartbeat': edge.ApiSessionHeartbeat;
  'edge.SessionRemoved': edge.SessionRemoved;
  'edge.RequestClientReSync': edge.RequestClientReSync;
  'edge.CreateTerminatorV2Request': edge.CreateTerminatorV2Request;
  'edge.CreateTerminatorV2Response': edge.CreateTerminatorV2Response;
  'edge.CreateTunnelTerminatorRequestV2': edge.CreateTunnelTerminatorRequestV2;
  'edge.CreateTunnelTerminatorResponseV2': edge.CreateTunnelTerminatorResponseV2;
  'edge.UpdateTunnelTerminatorRequest': edge.UpdateTunnelTerminatorRequest;
  'edge.RemoveTerminatorRequest': edge.RemoveTerminatorRequest;
  'edge.UpdateTerminatorRequest': edge.UpdateTerminatorRequest;
  'edge.HealthEventRequest': edge.HealthEventRequest;
  'edge.ValidateSessionsRequest': edge.ValidateSessionsRequest;
  'edge.ConnectEvents': edge.ConnectEvents;
  'edge.SubscribeToDataModelRequest': edge.SubscribeToDataModelRequest;
}

export type ProtoMessageName = keyof ProtoMessages;

/** What `encode` accepts: the decoded shape with every field (at any depth) optional. */
export type ProtoInput<T> = T extends Uint8Array | bigint | string | number | boolean
  ? T
  : T extends Map<infer K, infer V>
    ? Map<K, ProtoInput<V>>
    : T extends readonly (infer E)[]
      ? readonly ProtoInput<E>[]
      : { [P in keyof T]?: ProtoInput<T[P]> };

/** Message name → full proto name. `satisfies` keeps this list and ProtoMessages in step. */
export const PROTO_TYPE_NAMES = Object.freeze({
  'ctrl.Settings': 'ziti.ctrl.pb.Settings',
  'ctrl.CircuitConfirmation': 'ziti.ctrl.pb.CircuitConfirmation',
  'ctrl.RemoveTerminatorsRequest': 'ziti.ctrl.pb.RemoveTerminatorsRequest',
  'ctrl.Terminator': 'ziti.ctrl.pb.Terminator',
  'ctrl.ValidateTerminatorsV2Request': 'ziti.ctrl.pb.ValidateTerminatorsV2Request',
  'ctrl.RouterTerminatorState': 'ziti.ctrl.pb.RouterTerminatorState',
  'ctrl.ValidateTerminatorsV2Response': 'ziti.ctrl.pb.ValidateTerminatorsV2Response',
  'ctrl.LinkConn': 'ziti.ctrl.pb.LinkConn',
  'ctrl.LinkConnState': 'ziti.ctrl.pb.LinkConnState',
  'ctrl.RouterLinks': 'ziti.ctrl.pb.RouterLinks',
  'ctrl.Fault': 'ziti.ctrl.pb.Fault',
  'ctrl.Context': 'ziti.ctrl.pb.Context',
  'ctrl.Route': 'ziti.ctrl.pb.Route',
  'ctrl.Unroute': 'ziti.ctrl.pb.Unroute',
  'ctrl.InspectRequest': 'ziti.ctrl.pb.InspectRequest',
  'ctrl.InspectResponse': 'ziti.ctrl.pb.InspectResponse',
  'ctrl.VerifyRouter': 'ziti.ctrl.pb.VerifyRouter',
  'ctrl.Listener': 'ziti.ctrl.pb.Listener',
  'ctrl.Listeners': 'ziti.ctrl.pb.Listeners',
  'ctrl.UpdateCtrlAddresses': 'ziti.ctrl.pb.UpdateCtrlAddresses',
  'ctrl.UpdateClusterLeader': 'ziti.ctrl.pb.UpdateClusterLeader',
  'ctrl.PeerStateChange': 'ziti.ctrl.pb.PeerStateChange',
  'ctrl.PeerStateChanges': 'ziti.ctrl.pb.PeerStateChanges',
  'ctrl.Interface': 'ziti.ctrl.pb.Interface',
  'ctrl.RouterInterfacesUpdate': 'ziti.ctrl.pb.RouterInterfacesUpdate',
  'ctrl.LinkStateUpdate': 'ziti.ctrl.pb.LinkStateUpdate',
  'ctrl.Alerts': 'ziti.ctrl.pb.Alerts',
  'ctrl.UpdateTerminatorRequest': 'ziti.ctrl.pb.UpdateTerminatorRequest',
  'metrics.MetricsMessage': 'ziti.metrics.pb.MetricsMessage',
  'edge.ServerHello': 'ziti.edge_ctrl.pb.ServerHello',
  'edge.ClientHello': 'ziti.edge_ctrl.pb.ClientHello',
  'edge.Address': 'ziti.edge_ctrl.pb.Address',
  'edge.Listener': 'ziti.edge_ctrl.pb.Listener',
  'edge.Cache': 'ziti.edge_ctrl.pb.Cache',
  'edge.DataState': 'ziti.edge_ctrl.pb.DataState',
  'edge.DataState.Event': 'ziti.edge_ctrl.pb.DataState.Event',
  'edge.DataState.ChangeSet': 'ziti.edge_ctrl.pb.DataState.ChangeSet',
  'edge.ApiSession': 'ziti.edge_ctrl.pb.ApiSession',
  'edge.ApiSessionAdded': 'ziti.edge_ctrl.pb.ApiSessionAdded',
  'edge.ApiSessionUpdated': 'ziti.edge_ctrl.pb.ApiSessionUpdated',
  'edge.ApiSessionRemoved': 'ziti.edge_ctrl.pb.ApiSessionRemoved',
  'edge.ApiSessionHeartbeat': 'ziti.edge_ctrl.pb.ApiSessionHeartbeat',
  'edge.SessionRemoved': 'ziti.edge_ctrl.pb.SessionRemoved',
  'edge.RequestClientReSync': 'ziti.edge_ctrl.pb.RequestClientReSync',
  'edge.CreateTerminatorV2Request': 'ziti.edge_ctrl.pb.CreateTerminatorV2Request',
  'edge.CreateTerminatorV2Response': 'ziti.edge_ctrl.pb.CreateTerminatorV2Response',
  'edge.CreateTunnelTerminatorRequestV2': 'ziti.edge_ctrl.pb.CreateTunnelTerminatorRequestV2',
  'edge.CreateTunnelTerminatorResponseV2': 'ziti.edge_ctrl.pb.CreateTunnelTerminatorResponseV2',
  'edge.UpdateTunnelTerminatorRequest': 'ziti.edge_ctrl.pb.UpdateTunnelTerminatorRequest',
  'edge.RemoveTerminatorRequest': 'ziti.edge_ctrl.pb.RemoveTerminatorRequest',
  'edge.UpdateTerminatorRequest': 'ziti.edge_ctrl.pb.UpdateTerminatorRequest',
  'edge.HealthEventRequest': 'ziti.edge_ctrl.pb.HealthEventRequest',
  'edge.ValidateSessionsRequest': 'ziti.edge_ctrl.pb.ValidateSessionsRequest',
  'edge.ConnectEvents': 'ziti.edge_ctrl.pb.ConnectEvents',
  'edge.SubscribeToDataModelRequest': 'ziti.edge_ctrl.pb.SubscribeToDataModelRequest',
} as const satisfies Record<ProtoMessageName, string>);

/** A body that is not a valid encoding of the message it was read as. */
export class ProtoDecodeError extends Error {
  override readonly name = 'ProtoDecodeError';
}

const root = new protobuf.Root();
for (const source of [TIMESTAMP_PROTO, CTRL_PROTO, EDGE_CTRL_PROTO, METRICS_PROTO]) protobuf.parse(source, root, { keepCase: true });
root.resolveAll(); // an unresolvable reference fails at import, not at the first message

const types = new Map<ProtoMessageName, protobuf.Type>();
function typeOf(name: ProtoMessageName): protobuf.Type {
  let type = types.get(name);
  if (!type) {
    type = root.lookupType(PROTO_TYPE_NAMES[name]);
    types.set(name, type);
  }
  return type;
}

export function encode<K extends ProtoMessageName>(name: K, msg: ProtoInput<ProtoMessages[K]>): Buffer {
  const type = typeOf(name);
  const bytes = type.encode(toWire(type, msg as Plain)).finish();
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function decode<K extends ProtoMessageName>(name: K, bytes: Uint8Array): ProtoMessages[K] {
  const type = typeOf(name);
  try {
    return fromWire(type, type.decode(bytes) as unknown as Plain) as unknown as ProtoMessages[K];
  } catch (err) {
    throw new ProtoDecodeError(`malformed ${name}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

type Plain = Record<string, unknown>;
/** What protobufjs holds for a 64-bit field: a Long (the `long` package) or, without it, a number. */
type WireLong = { low: number; high: number } | number;

const LONG_TYPES = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);
const UNSIGNED_LONG_TYPES = new Set(['uint64', 'fixed64']);
const INTEGER_KEY_TYPES = new Set(['int32', 'uint32', 'sint32', 'fixed32', 'sfixed32']);

/** Our shape → an object protobufjs encodes: bigints as low/high bits, integer-keyed Maps as records. */
function toWire(type: protobuf.Type, msg: Plain): Plain {
  const out: Plain = {};
  for (const field of type.fieldsArray) {
    const value = msg[field.name];
    if (value === undefined || value === null) continue;
    if (field instanceof protobuf.MapField) {
      const entries = value instanceof Map ? [...value] : Object.entries(value as Plain);
      out[field.name] = Object.fromEntries(entries.map(([k, v]) => [String(k), toWireValue(field, v)]));
    } else if (field.repeated) {
      out[field.name] = (value as unknown[]).map((v) => toWireValue(field, v));
    } else {
      out[field.name] = toWireValue(field, value);
    }
  }
  return out;
}

function toWireValue(field: protobuf.Field, value: unknown): unknown {
  if (field.resolvedType instanceof protobuf.Type) return toWire(field.resolvedType, value as Plain);
  if (LONG_TYPES.has(field.type)) {
    const bits = BigInt.asUintN(64, value as bigint);
    return { low: Number(bits & 0xffffffffn) | 0, high: Number(bits >> 32n) | 0 };
  }
  return value;
}

/** A protobufjs message → our shape, with proto3 defaults filled in. */
function fromWire(type: protobuf.Type, msg: Plain): Plain {
  const out: Plain = {};
  for (const field of type.fieldsArray) {
    const value = msg[field.name];
    if (field instanceof protobuf.MapField) {
      const entries = Object.entries((value ?? {}) as Plain).map(([k, v]) => [k, fromWireValue(field, v)] as const);
      out[field.name] = INTEGER_KEY_TYPES.has(field.keyType)
        ? new Map(entries.map(([k, v]) => [Number(k), v]))
        : Object.fromEntries(entries);
    } else if (field.repeated) {
      out[field.name] = ((value ?? []) as unknown[]).map((v) => fromWireValue(field, v));
    } else if (field.resolvedType instanceof protobuf.Type) {
      if (value !== undefined && value !== null) out[field.name] = fromWireValue(field, value);
    } else {
      out[field.name] = fromWireValue(field, value ?? scalarDefault(field));
    }
  }
  return out;
}

function fromWireValue(field: protobuf.Field, value: unknown): unknown {
  if (field.resolvedType instanceof protobuf.Type) return fromWire(field.resolvedType, value as Plain);
  if (LONG_TYPES.has(field.type)) return toBigInt(value as WireLong, UNSIGNED_LONG_TYPES.has(field.type));
  if (field.type === 'bytes') return Buffer.from(value as Uint8Array);
  return value;
}

function toBigInt(value: WireLong, unsigned: boolean): bigint {
  const bits = typeof value === 'number' ? BigInt(value) : (BigInt(value.high >>> 0) << 32n) | BigInt(value.low >>> 0);
  return unsigned ? BigInt.asUintN(64, bits) : BigInt.asIntN(64, bits);
}

function scalarDefault(field: protobuf.Field): unknown {
  if (field.resolvedType instanceof protobuf.Enum) return 0;
  if (LONG_TYPES.has(field.type)) return 0;
  switch (field.type) {
    case 'string':
      return '';
    case 'bool':
      return false;
    case 'bytes':
      return new Uint8Array(0);
    default:
      return 0;
  }
}
