/**
 * The edge messages a controller sends an edge router and reads from it, as pure functions: the server hello
 * that asks the router to describe itself, the client hello it answers with (hostname and the edge URLs SDKs
 * connect to), the API sessions the router verifies SDK connections against (full state in chunks, then
 * each addition and removal), removed service sessions, and the public keys of the router data model (what
 * the router checks session JWTs with; the rest of the model is src/fabric/data-model).
 */
import { createHash } from 'node:crypto';
import type { VersionInfo } from './channel/hello.ts';
import { boolValue, message, readBool, readUint64, stringValue, type ChannelMessage } from './channel/message.ts';
import { decode, encode } from './proto/index.ts';
import { EdgeContentType, EdgeHeader, PublicKeyFormat, PublicKeyUsage, type ClientHello, type DataStateEvent } from './proto/edge-ctrl.ts';
import type { ProtoInput } from './proto/codec.ts';

/** Full-state API session chunks hold at most this many sessions. */
export const API_SESSION_CHUNK = 100;

export function serverHello(controllerVersion: VersionInfo): ChannelMessage {
  const body = encode('edge.ServerHello', { version: controllerVersion.version, data: { instant: 'true', routerModel: 'true' } });
  return message(EdgeContentType.ServerHello, body, [[EdgeHeader.RouterDataModel, boolValue(true)]]);
}

export interface RouterDescription {
  hostname: string;
  /** Protocol → URL an SDK dials (`tls` → `tls://host:port`). */
  supportedProtocols: Record<string, string>;
  /** Whether the router keeps a data model, and the index of the one it has. */
  dataModel: { supported: boolean; index: bigint };
}

/** The edge URLs a router advertises: from its listeners, else from its protocol and port lists. */
export function advertisedProtocols(hello: ClientHello): Record<string, string> {
  const out: Record<string, string> = {};
  if (hello.listeners.length > 0) {
    for (const listener of hello.listeners) {
      const a = listener.advertise;
      if (a && a.protocol) out[a.protocol] = `${a.protocol}://${a.hostname}:${a.port}`;
    }
  } else if (hello.hostname) {
    hello.protocols.forEach((protocol, i) => {
      const port = hello.protocolPorts[i];
      if (port !== undefined) out[protocol] = `${protocol}://${hello.hostname}:${port}`;
    });
  }
  return out;
}

/** Reads the router's answer to the server hello; throws ProtoDecodeError on a body that is not one. */
export function readClientHello(msg: ChannelMessage): RouterDescription {
  const hello = decode('edge.ClientHello', msg.body);
  const supported = readBool(msg.headers.get(EdgeHeader.RouterDataModel)) === true;
  return {
    hostname: hello.hostname,
    supportedProtocols: advertisedProtocols(hello),
    dataModel: { supported, index: (supported && readUint64(msg.headers.get(EdgeHeader.RouterDataModelIndex))) || 0n },
  };
}

export interface RouterApiSession {
  id: string;
  token: string;
  identityId: string;
  /** SHA-1 fingerprints of the certificates an SDK may connect with under this session. */
  certFingerprints: string[];
}

function sessionsBody(sessions: readonly RouterApiSession[]) {
  return sessions.map((s) => ({ id: s.id, token: s.token, identityId: s.identityId, certFingerprints: [...s.certFingerprints] }));
}

/**
 * Every API session, as the full-state messages a router replaces its set with: chunks that name one sync and
 * say which is last. No message at all when there is no session (the router keeps an empty set).
 */
export function apiSessionFullState(sessions: readonly RouterApiSession[], syncId: string): ChannelMessage[] {
  const out: ChannelMessage[] = [];
  const chunks = Math.ceil(sessions.length / API_SESSION_CHUNK);
  for (let i = 0; i < chunks; i++) {
    const chunk = sessions.slice(i * API_SESSION_CHUNK, (i + 1) * API_SESSION_CHUNK);
    const state = JSON.stringify({ id: syncId, isLast: i === chunks - 1, sequence: i });
    out.push(
      message(EdgeContentType.ApiSessionAdded, encode('edge.ApiSessionAdded', { isFullState: true, apiSessions: sessionsBody(chunk) }), [
        [EdgeHeader.SyncStrategyType, stringValue('instant')],
        [EdgeHeader.SyncStrategyState, stringValue(state)],
      ]),
    );
  }
  return out;
}

export function apiSessionsAdded(sessions: readonly RouterApiSession[]): ChannelMessage {
  return message(EdgeContentType.ApiSessionAdded, encode('edge.ApiSessionAdded', { isFullState: false, apiSessions: sessionsBody(sessions) }));
}

export function apiSessionsRemoved(sessions: ReadonlyArray<{ id: string; token: string }>): ChannelMessage {
  return message(EdgeContentType.ApiSessionRemoved, encode('edge.ApiSessionRemoved', { tokens: sessions.map((s) => s.token), ids: sessions.map((s) => s.id) }));
}

/** Service sessions ended: routers drop them by id (the JWT's `jti`); the token list only has to match in length. */
export function sessionsRemoved(ids: readonly string[]): ChannelMessage {
  return message(EdgeContentType.SessionRemoved, encode('edge.SessionRemoved', { tokens: [...ids], ids: [...ids] }));
}

/** Lower-case hex SHA-1 of a DER certificate: the `kid` routers look keys up by. */
export function keyId(der: Uint8Array): string {
  return createHash('sha1').update(der).digest('hex');
}

/** Another controller's signing certificate (DER) and its `kid` (its fingerprint). */
export interface ControllerKey {
  der: Uint8Array;
  kid: string;
}

/**
 * The public keys of the data model: the controller's signing certificate (it signs session JWTs and is also
 * a client-certificate anchor), those of the other controllers of the network with the same usages (a full state
 * replaces a router's keys: it must hold every controller's, controllers-ha.md §3.4), and the network's CA
 * certificates (client-certificate anchors only).
 */
export function publicKeyEvents(
  signingCertDer: Uint8Array,
  caCertDers: readonly Uint8Array[],
  otherControllers: readonly ControllerKey[] = [],
): Array<ProtoInput<DataStateEvent>> {
  const key = (der: Uint8Array, usages: number[], kid = keyId(der)) => ({
    action: 0 as const,
    isSynthetic: true,
    publicKey: { data: der, kid, usages: usages as Array<0 | 1>, format: PublicKeyFormat.X509CertDer },
  });
  const signing = [PublicKeyUsage.JWTValidation, PublicKeyUsage.ClientX509CertValidation];
  return [
    key(signingCertDer, signing),
    ...otherControllers.map((c) => key(c.der, signing, c.kid)),
    ...caCertDers.map((der) => key(der, [PublicKeyUsage.ClientX509CertValidation])),
  ];
}

/** A change set routers apply at once, outside index order (public keys on connect). */
export function syntheticChangeSet(events: ReadonlyArray<ProtoInput<DataStateEvent>>): ChannelMessage {
  return message(EdgeContentType.DataStateChangeSet, encode('edge.DataState.ChangeSet', { isSynthetic: true, changes: [...events] }));
}
