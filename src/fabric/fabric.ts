/**
 * The fabric engine of one controller process: the routers whose control channels this process holds, what
 * it tells them and what it does with what they report. It imports nothing from the HTTP layer; the server
 * hands it the TLS connections that chose the control channel (`accept`), and the REST side reads the live
 * state from the store (`live-routers.ts`).
 *
 * A router's connection belongs to the process that accepted it (src/fabric/README.md).
 */
import { randomUUID } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import type { TokenSeal } from '../auth/token-seal.ts';
import { certificateDer, parsePemBundle } from '../pki/pem.ts';
import {
  apiSessionFullState,
  apiSessionsAdded,
  apiSessionsRemoved,
  publicKeyEvents,
  readClientHello,
  serverHello,
  sessionsRemoved,
  syntheticChangeSet,
} from './edge-sync.ts';
import { decode } from './proto/index.ts';
import { hashToken, type ApiSessionService } from '../auth/api-session.service.ts';
import type { ChannelBounds } from './channel/admission.ts';
import type { ChannelMessage } from './channel/message.ts';
import { EdgeContentType } from './proto/edge-ctrl.ts';
import { createEdgeRequests } from './edge-requests.ts';
import { createRouterDataModel } from './data-model/router-data-model.ts';
import { createTunnelTerminators } from './tunnel-terminators.ts';
import { createTerminatorWrites } from './terminators.ts';
import { createMesh, decodeListeners } from './mesh.ts';
import type { FabricBus } from './bus.ts';
import { HelloHeader } from './channel/hello.ts';
import { CtrlContentType } from './proto/ctrl.ts';
import { createServiceAccessCheck, type FabricAccess } from './service-access.ts';
import type { JwtSigningKey } from '../pki/enrollment-jwt.ts';
import { createSessionEventReader, feedHead, readRouterApiSessions, type SessionEvent } from './store-events.ts';
import type { Db } from '../store/database.ts';
import { prepare } from '../store/entity-table.ts';
import { versionedValue } from '../store/table-versions.ts';
import { readCertificateBundle } from '../pki/certificate-chain.ts';
import type { ControlChannel, ChannelTimings } from './channel/connection.ts';
import type { EnrolledRouter, VersionInfo } from './channel/hello.ts';
import { createControlListener, type AdmittedRouter } from './control-listener.ts';
import type { LiveRouters } from './live-routers.ts';

export interface FabricLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface FabricOptions {
  db: Db;
  /** PEM bundle of this network's CA (intermediate and root): what router certificates chain to. */
  caBundlePem: string;
  /** PEM of the certificate whose key signs session JWTs (routers verify them with it). */
  signingCertPem: string;
  /** Opens the sealed API session tokens routers verify SDKs against. */
  seal: TokenSeal;
  /** Where routers' API session heartbeats are marked as activity (batched with the REST side's). */
  apiSessions: Pick<ApiSessionService, 'markActiveByHashes'>;
  /** How often store changes (API sessions, service sessions) are looked for while routers are connected. */
  pollIntervalMs?: number;
  /** The key that signs session JWTs (routers' requests carry them back). */
  signer: JwtSigningKey;
  /** Policy and posture answers, from the same access index the REST side uses. */
  access: FabricAccess;
  /** How this process reaches routers other processes hold. */
  bus: FabricBus;
  controllerId: string;
  controllerVersion: VersionInfo;
  /** The live router rows this process writes (owned by its change-feed origin). */
  live: LiveRouters;
  /** This process's change-feed origin: owner of the circuit rows it writes. */
  owner: string;
  log: FabricLog;
  timings?: ChannelTimings;
  /** What each router may cost on its control channel (channel/admission.ts); the defaults otherwise. */
  bounds?: ChannelBounds;
  helloTimeoutMs?: number;
  /** How often stored router changes (deleted, disabled, re-enrolled) are checked against open channels. */
  checkIntervalMs?: number;
}

/** One connected router, as this process holds it. */
export interface RouterSession {
  routerId: string;
  name: string;
  isEdge: boolean;
  connectionId: string;
  channel: ControlChannel;
  fingerprint: string;
  versionInfo: VersionInfo;
  connectedAt: Date;
  /** An edge router that has its API sessions: it gets every later change. */
  synced: boolean;
  /** The change feed's head when its full API session state was read: it gets only session events above it. */
  apiSessionsFrom: number;
}

/** Content types a router sends that only need a successful result here. */
const ACKNOWLEDGED = {
  UpdateRouterInterfaces: 1052,
  QuiesceRouter: 1039,
  DequiesceRouter: 1040,
  DecommissionRouter: 1043,
} as const;

interface StoredRouter extends EnrolledRouter {
  name: string;
  isEdge: boolean;
}

export function createFabric(options: FabricOptions) {
  const { db, log } = options;
  const live = options.live;
  const sessions = new Map<string, RouterSession>();

  /** Every router of the store, by id (re-read only when the routers table changed). */
  const storedRouters = versionedValue(db, ['routers'], () => {
    const rows = prepare(db, 'SELECT id, name, is_edge, fingerprint, disabled FROM routers').all() as Array<{
      id: string;
      name: string;
      is_edge: number;
      fingerprint: string | null;
      disabled: number;
    }>;
    return new Map<string, StoredRouter>(
      rows.map((r) => [r.id, { name: r.name, isEdge: r.is_edge === 1, fingerprint: r.fingerprint, disabled: r.disabled === 1 }]),
    );
  });

  const listener = createControlListener({
    trustAnchors: readCertificateBundle(options.caBundlePem),
    findRouter: (id) => storedRouters().get(id),
    controllerId: options.controllerId,
    controllerVersion: options.controllerVersion,
    log,
    admitted,
    ...(options.helloTimeoutMs !== undefined ? { helloTimeoutMs: options.helloTimeoutMs } : {}),
    ...(options.timings ? { timings: options.timings } : {}),
    ...(options.bounds ? { bounds: options.bounds } : {}),
  });

  function admitted(router: AdmittedRouter): void {
    const stored = storedRouters().get(router.hello.routerId)!;
    const previous = sessions.get(router.hello.routerId);
    if (previous) previous.channel.close('replaced by a newer connection of the same router');
    const session: RouterSession = {
      routerId: router.hello.routerId,
      name: stored.name,
      isEdge: stored.isEdge,
      connectionId: router.connectionId,
      channel: router.channel,
      fingerprint: router.certificate.fingerprint,
      versionInfo: router.hello.versionInfo,
      connectedAt: new Date(),
      synced: false,
      apiSessionsFrom: 0,
    };
    sessions.set(session.routerId, session);
    const named = { routerId: session.routerId, routerName: session.name };
    router.channel.on('slowed', (reason) => log.warn({ ...named, reason }, 'router slowed: over its control channel bounds, reading paused'));
    router.channel.on('overloaded', (reason) => log.warn({ ...named, reason }, 'router disconnected: over its control channel bounds for too long'));
    live.connected(session.routerId, session.connectionId, session.connectedAt, session.versionInfo, linkListenersOf(router));
    for (const contentType of Object.values(ACKNOWLEDGED)) router.channel.handle(contentType, (msg, ch) => ch.result(msg, true));
    router.channel.handle(CtrlContentType.RouterLinks, (msg) => mesh.routerLinks(session.routerId, msg));
    router.channel.handle(CtrlContentType.Metrics, (msg) => mesh.metrics(session.routerId, msg));
    router.channel.handle(CtrlContentType.VerifyRouter, (msg, ch) => mesh.verifyRouter(ch, msg));
    edgeRequests.attach(session);
    if (session.isEdge) edgeRequests.attachEdge(session);
    if (session.isEdge) tunnelTerminators.attach(session);
    if (session.isEdge) startEdgeSync(session).catch((err: Error) => log.warn({ routerId: session.routerId, err: err.message }, 'edge sync failed'));
    router.channel.once('close', (reason) => {
      const current = sessions.get(session.routerId) === session;
      if (current) sessions.delete(session.routerId);
      try {
        const connectedAgain = live.disconnected(session.routerId, session.connectionId);
        // Not replaced by a newer connection, here or in another process: what the router held goes with it.
        if (current && !connectedAgain) {
          edgeRequests.routerGone(session.routerId);
          mesh.routerGone(session.routerId);
        }
      } catch (err) {
        log.warn({ routerId: session.routerId, err: (err as Error).message }, 'could not record the router disconnect');
      }
      log.info({ ...named, connectionId: session.connectionId, reason }, 'router disconnected');
    });
  }

  const mesh = createMesh({
    db,
    live,
    bus: options.bus,
    localChannel: (routerId) => sessions.get(routerId)?.channel,
    localRouters: () => sessions.values(),
    log,
  });
  mesh.onBusMessage((_from, payload) => {
    if (payload.kind === 'circuit-fault') edgeRequests.remoteFault(payload.circuitId, payload.reporter);
  });

  /** The link listeners a router announced in its hello; none when the header is missing or unreadable. */
  function linkListenersOf(router: AdmittedRouter) {
    try {
      return decodeListeners(router.helloMessage.headers.get(HelloHeader.Listeners));
    } catch {
      log.warn({ routerId: router.hello.routerId }, 'unreadable link listeners in the hello');
      return [];
    }
  }

  /** Every terminator a router writes goes through the one set of rules (terminators.ts). */
  const terminators = createTerminatorWrites({ db, controllerId: options.controllerId });

  const edgeRequests = createEdgeRequests({
    db,
    access: createServiceAccessCheck({ db, signer: options.signer, access: options.access }),
    terminators,
    owner: options.owner,
    mesh,
    onLinkFault: (routerId, linkId, iteration) => mesh.linkFault(routerId, linkId, iteration),
    forwardFault: (owner, circuitId, reporter) => options.bus.send(owner, { kind: 'circuit-fault', circuitId, reporter }),
    log,
  });

  /** Terminators of the routers' own tunnelers (their Router identities hosting services). */
  const tunnelTerminators = createTunnelTerminators({ db, access: options.access, terminators, log });

  // ---- edge routers: hello, API sessions, data model ------------------------------------------------------------

  const signingCertDer = certificateDer(options.signingCertPem);
  const caCertDers = parsePemBundle(options.caBundlePem).map(certificateDer);
  const publicKeys = publicKeyEvents(signingCertDer, caCertDers);
  /** The router data model (src/fabric/data-model): one timeline per database, the change feed's seq as index. */
  const dataModel = createRouterDataModel({
    db,
    access: { catchUp: () => options.access.catchUp(), membership: () => options.access.membership() },
    controllerKeys: publicKeys,
    timelineId: options.controllerId,
    log,
  });
  /** Tokens of the API sessions this process told routers about, by id (a removal names the token). */
  const pushedTokens = new Map<string, string>();
  const sessionEvents = createSessionEventReader(db);

  function routerApiSessions(ids?: readonly string[]) {
    const list = readRouterApiSessions(db, options.seal, ids);
    for (const s of list) pushedTokens.set(s.id, s.token);
    return list;
  }

  /** Every API session, read with the feed's head in one transaction: later events above it go to the router. */
  function sendFullApiSessionState(session: RouterSession): void {
    const { at, list } = db.transaction(() => ({ at: feedHead(db), list: routerApiSessions() })).deferred();
    session.apiSessionsFrom = at;
    for (const msg of apiSessionFullState(list, randomUUID())) session.channel.send(msg);
  }

  async function startEdgeSync(session: RouterSession): Promise<void> {
    const { channel } = session;
    const sendModel = (m: ChannelMessage): void => {
      channel.send(m);
    };
    channel.handle(EdgeContentType.SubscribeToDataModelRequest, (msg) => {
      dataModel.subscribe(session.routerId, sendModel, decode('edge.SubscribeToDataModelRequest', msg.body));
    });
    channel.once('close', () => dataModel.routerGone(session.routerId, sendModel));
    channel.handle(EdgeContentType.RequestClientReSync, () => sendFullApiSessionState(session));
    channel.handle(EdgeContentType.ConnectEvents, (msg) => identityConnections(session, msg));
    channel.handle(EdgeContentType.ApiSessionHeartbeat, (msg) => apiSessionHeartbeat(session, msg));
    live.syncStatus(session.routerId, session.connectionId, 'SYNC_HELLO');
    let description;
    try {
      description = readClientHello(await channel.request(serverHello(options.controllerVersion), 30_000));
    } catch (err) {
      if (channel.closed) return;
      log.warn({ routerId: session.routerId, err: (err as Error).message }, 'edge router did not describe itself');
      live.syncStatus(session.routerId, session.connectionId, 'SYNC_ERROR');
      return;
    }
    if (channel.closed) return;
    live.described(session.routerId, session.connectionId, description.hostname, description.supportedProtocols);
    sendFullApiSessionState(session);
    if (description.dataModel.supported) channel.send(syntheticChangeSet(publicKeys));
    session.synced = true;
    live.syncStatus(session.routerId, session.connectionId, 'SYNC_DONE');
  }

  /**
   * Which identities have an SDK connected to the router: full state, or the changes since the last report.
   * Identities that do not exist (deleted meanwhile, or made up) are passed over.
   */
  function identityConnections(session: RouterSession, msg: ChannelMessage): void {
    const report = decode('edge.ConnectEvents', msg.body);
    const at = new Date().toISOString();
    db.transaction(() => {
      if (report.fullState) prepare(db, 'DELETE FROM identity_router_connections WHERE router_id = ?').run(session.routerId);
      for (const event of report.events) {
        if (!event.identityId) continue;
        if (event.isConnected) {
          prepare(
            db,
            `INSERT INTO identity_router_connections (identity_id, router_id, connected_at)
             SELECT id, ?, ? FROM identities WHERE id = ? ON CONFLICT DO NOTHING`,
          ).run(session.routerId, at, event.identityId);
        } else {
          prepare(db, 'DELETE FROM identity_router_connections WHERE identity_id = ? AND router_id = ?').run(event.identityId, session.routerId);
        }
      }
    }).immediate();
  }

  /**
   * API sessions in use at the router count as active: marked like REST requests, written in the next batch of
   * activity (no write per heartbeat). Tokens of no live session are removed at the router.
   */
  function apiSessionHeartbeat(session: RouterSession, msg: ChannelMessage): void {
    const { tokens } = decode('edge.ApiSessionHeartbeat', msg.body);
    const hashes = tokens.map(hashToken);
    const unknown = options.apiSessions.markActiveByHashes(hashes);
    if (unknown.size > 0) session.channel.send(apiSessionsRemoved(tokens.filter((_, i) => unknown.has(hashes[i]!)).map((token) => ({ id: '', token }))));
  }

  /**
   * Tells synced edge routers what changed in the store since the last look: each router only the events above
   * the feed position its full API session state was read at (it already has what came before). With no router
   * connected the reader just keeps up with the feed: the first router's full state will hold all of it.
   */
  function pushSessionChanges(): void {
    if (sessions.size === 0) {
      sessionEvents.skip();
      return;
    }
    const { events, missed } = sessionEvents.poll();
    const targets = [...sessions.values()].filter((s) => s.synced && !s.channel.closed);
    if (missed) {
      for (const target of targets) sendFullApiSessionState(target);
      return;
    }
    if (events.length === 0) return;
    // Circuits of ended sessions end here too (the routers close the SDK side).
    const endedSessions = new Set(events.filter((e) => e.kind === 'sessionRemoved').map((e) => e.id));
    const endedApiSessions = new Set(events.filter((e) => e.kind === 'apiSessionRemoved').map((e) => e.id));
    if (endedSessions.size + endedApiSessions.size > 0) {
      edgeRequests.endCircuitsWhere((c) => endedSessions.has(c.sessionId) || endedApiSessions.has(c.apiSessionId), 'session ended');
    }
    // The tokens of removed sessions, taken once (a router that never had a session is told nothing of it).
    const removedTokens = new Map<string, string>();
    for (const e of events) {
      if (e.kind !== 'apiSessionRemoved') continue;
      const token = pushedTokens.get(e.id);
      pushedTokens.delete(e.id);
      if (token !== undefined) removedTokens.set(e.id, token);
    }
    if (targets.length === 0) return;
    const addedIds = events.filter((e) => e.kind === 'apiSessionAdded').map((e) => e.id);
    const added = new Map(addedIds.length > 0 ? routerApiSessions(addedIds).map((a) => [a.id, a]) : []);
    /** The messages for a tail of the events (most routers get them all: one list, built once, for all of them). */
    const messagesFrom = (tail: readonly SessionEvent[]): ChannelMessage[] => {
      const out: ChannelMessage[] = [];
      const adds = tail.flatMap((e) => (e.kind === 'apiSessionAdded' && added.has(e.id) ? [added.get(e.id)!] : []));
      if (adds.length > 0) out.push(apiSessionsAdded(adds));
      const removes = tail.flatMap((e) => (e.kind === 'apiSessionRemoved' && removedTokens.has(e.id) ? [{ id: e.id, token: removedTokens.get(e.id)! }] : []));
      if (removes.length > 0) out.push(apiSessionsRemoved(removes));
      const ended = tail.flatMap((e) => (e.kind === 'sessionRemoved' ? [e.id] : []));
      if (ended.length > 0) out.push(sessionsRemoved(ended));
      return out;
    };
    const byFirst = new Map<number, ChannelMessage[]>();
    for (const target of targets) {
      let first = events.findIndex((e) => e.seq > target.apiSessionsFrom);
      if (first < 0) first = events.length;
      let messages = byFirst.get(first);
      if (!messages) byFirst.set(first, (messages = messagesFrom(events.slice(first))));
      for (const msg of messages) target.channel.send(msg);
    }
  }
  const pollTimer = setInterval(() => {
    try {
      pushSessionChanges();
      mesh.syncPeers();
      // Circuits over links that went away end (routers report the rest as faults).
      const links = mesh.linkIds();
      edgeRequests.endCircuitsWhere((c) => c.links.some((l) => !links.has(l)), 'a link of its path went away');
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'could not push session changes to routers');
    }
    try {
      dataModel.poll();
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'could not push data model changes to routers');
    }
  }, options.pollIntervalMs ?? 100);
  pollTimer.unref();

  /**
   * Closes the channels of routers deleted, disabled or re-enrolled since they connected, and of routers that
   * connected again to another process (its row in router_connections names the newer connection).
   */
  function checkStoredRouters(): void {
    if (sessions.size === 0) return;
    const stored = storedRouters();
    const connected = live.current();
    for (const session of sessions.values()) {
      const now = stored.get(session.routerId);
      const row = connected.get(session.routerId);
      const reason = !now
        ? 'router deleted'
        : now.disabled
          ? 'router disabled'
          : now.fingerprint !== session.fingerprint
            ? 'router re-enrolled'
            : row && row.connectionId !== session.connectionId
              ? `replaced by a newer connection of the same router (held by ${row.owner})`
              : undefined;
      if (reason) {
        log.info({ routerId: session.routerId, reason }, 'closing router control channel');
        session.channel.close(reason);
      }
    }
  }
  const checkTimer = setInterval(() => {
    try {
      checkStoredRouters();
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'could not check connected routers against the store');
    }
  }, options.checkIntervalMs ?? 1000);
  checkTimer.unref();

  return {
    /** Takes a TLS connection that negotiated the control channel's ALPN. */
    accept: (socket: TLSSocket) => listener.accept(socket),
    live,
    /** The routers connected to this process. */
    sessions: (): ReadonlyMap<string, RouterSession> => sessions,
    /** Circuits routed by this process. */
    circuits: () => edgeRequests.circuits(),
    /** Ends every router connection (controller stop); the routers reconnect to the next start. */
    close(): void {
      clearInterval(checkTimer);
      clearInterval(pollTimer);
      listener.close();
    },
  };
}

export type Fabric = ReturnType<typeof createFabric>;
