/**
 * The protobuf layer of the router control plane: schemas (schema.ts), message shapes and numeric ids per package
 * (ctrl.ts, edge-ctrl.ts), header-only messages (header-messages.ts) and the codec (codec.ts).
 *
 *   import { ctrl, edge, encode, decode } from '../proto/index.ts';
 *   const body = encode('ctrl.Unroute', { circuitId, now: true });
 *   const fault: ctrl.Fault = decode('ctrl.Fault', msg.body);
 */
export * as ctrl from './ctrl.ts';
export * as edge from './edge-ctrl.ts';
export * from './header-messages.ts';
export {
  PROTO_TYPE_NAMES,
  ProtoDecodeError,
  decode,
  encode,
  type ProtoInput,
  type ProtoMessageName,
  type ProtoMessages,
} from './codec.ts';
