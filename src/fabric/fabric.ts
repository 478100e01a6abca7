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
  keyId,
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
import { createChangeSetLog } from './data-model/change-set-log.ts';
import { createTunnelTerminators } from './tunnel-terminators.ts';
import { createTerminatorWrites } from './terminators.ts';
import { createMesh, decodeListeners } from './mesh.ts';
import type { FabricBus } from './bus.ts';
import { HelloHeader } from './channel/hello.ts';
import { CtrlContentType } from './proto/ctrl.ts';
import { createServiceAccessCheck, type FabricAccess } from './service-access.ts';
import type { JwtSigningKey } from '../pki/enrollment-jwt.ts';
import { createSessionEventReader, feedHead, readRouterApiSessions, type SessionEvent } from './store-events.ts';
import type { Sql, Store } from '../store/store.ts';
import { readCertificateBundle } from '../pki/certificate-chain.ts';
import type { ControlChannel, ChannelTimings } from './channel/connection.ts';
import type { EnrolledRouter, VersionInfo } from './channel/hello.ts';
import { createControlListener, type AdmittedRouter } from './control-listener.ts';
import type { LiveRouters } from './live-routers.ts';
import { everyInterval } from './ticker.ts';
import type { Membership } from '../cluster/membership.ts';
import { clusterLeaderMessage, ctrlAddressesMessage } from './cluster-addresses.ts';

export interface FabricLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface FabricOptions {
  store: Store;
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
  /**
   * The controllers of the network: this one's id (hello header 8, `source_ctrl` of the terminators routers create
   * through it), the network's id (the data model's timeline), every known controller's signing certificate (in each
   * full data model) and, when clustered, what routers are told of the controllers (cluster-addresses.ts).
   */
  membership: Membership;
  controllerVersion: VersionInfo;
  /** The live router rows this process writes (owned by its change-feed origin, under this controller's id). */
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
  /** Set when a newer connection of the same router replaced this one here: settles once that one's row is written. */
  successor?: Promise<unknown>;
  /** Settles once this connection's row is written (or could not be). */
  registered?: Promise<unknown>;
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

/** Polls woken by the feed start at least this far apart: a burst of writes costs a few polls, not one per commit. */
const WOKEN_POLL_GAP_MS = 20;

/** Runs work one at a time, in the order it was asked for; a failure is the caller's, the line goes on. */
function workLine() {
  let tail: Promise<void> = Promise.resolve();
  return <T>(work: () => Promise<T>): Promise<T> => {
    const done = tail.then(work);
    tail = done.then(
      () => undefined,
      () => undefined,
    );
    return done;
  };
}

export function createFabric(options: FabricOptions) {
  const { store, log, membership } = options;
  const live = options.live;
  const sessions = new Map<string, RouterSession>();
  /** The cleanup of each router's last connection here, while it runs: the router's next connection waits for it. */
  const cleanups = new Map<string, Promise<void>>();
  /** Sessions whose row in router_connections has been written. */
  const recorded = new WeakSet<RouterSession>();

  /** Every router of the store, by id (re-read only when the routers table changed). */
  const storedRouters = store.versioned(['routers'], async (q) => {
    const rows = await q.all<{
      id: string;
      name: string;
      is_edge: number;
      fingerprint: string | null;
      disabled: number;
    }>('SELECT id, name, is_edge, fingerprint, disabled FROM routers');
    return new Map<string, StoredRouter>(
      rows.map((r) => [r.id, { name: r.name, isEdge: r.is_edge === 1, fingerprint: r.fingerprint, disabled: r.disabled === 1 }]),
    );
  });

  const listener = createControlListener<StoredRouter>({
    trustAnchors: readCertificateBundle(options.caBundlePem),
    findRouter: async (id) => (await storedRouters()).get(id),
    controllerId: options.membership.controllerId,
    controllerVersion: options.controllerVersion,
    log,
    admitted,
    ...(options.helloTimeoutMs !== undefined ? { helloTimeoutMs: options.helloTimeoutMs } : {}),
    ...(options.timings ? { timings: options.timings } : {}),
    ...(options.bounds ? { bounds: options.bounds } : {}),
  });

  /**
   * A router admitted: its handlers are registered at once (its messages may follow the hello), and in its
   * channel's line its row is written first (after the cleanup of its previous connection here), its messages
   * after it, in arrival order, and its cleanup when the channel closes after them.
   */
  function admitted(router: AdmittedRouter<StoredRouter>): void {
    const stored = router.stored;
    const previous = sessions.get(router.hello.routerId);
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
    const { channel } = router;
    // The cleanup of a connection that ended before this one came must finish first (it may remove what the router
    // held). A connection this one replaces removes nothing but its own row, and only after this one's row is
    // written (see `successor`), so the router never shows offline in between; its own row is written first (both
    // write the same row: the newer connection's must be the one that stays).
    const prior = previous ? previous.registered?.catch(() => undefined) : cleanups.get(session.routerId);
    const listeners = linkListenersOf(router);
    const registered = channel.serially(async () => {
      await prior;
      await live.connected(session.routerId, session.connectionId, session.connectedAt, session.versionInfo, listeners);
      recorded.add(session);
    });
    session.registered = registered;
    if (previous) {
      previous.successor = registered;
      previous.channel.close('replaced by a newer connection of the same router');
    }
    registered.catch((err: Error) => {
      log.warn({ ...named, err: err.message }, 'could not record the router connection');
      channel.close('could not record the connection');
    });
    for (const contentType of Object.values(ACKNOWLEDGED)) router.channel.handle(contentType, (msg, ch) => ch.result(msg, true));
    if (membership.clustered) {
      // The controllers of the network, as every clustered controller tells a router that connects, and again when
      // the router asks (it does while it waits to hear from a leader).
      router.channel.send(ctrlAddressesMessage(membership));
      router.channel.handle(CtrlContentType.RequestClusterMembers, (_msg, ch) => void ch.send(ctrlAddressesMessage(membership)));
    }
    router.channel.handle(CtrlContentType.RouterLinks, (msg) => mesh.routerLinks(session.routerId, msg));
    router.channel.handle(CtrlContentType.Metrics, (msg) => mesh.metrics(session.routerId, msg));
    router.channel.handle(CtrlContentType.VerifyRouter, (msg, ch) => mesh.verifyRouter(ch, msg));
    edgeRequests.attach(session);
    if (session.isEdge) edgeRequests.attachEdge(session);
    if (session.isEdge) tunnelTerminators.attach(session);
    if (session.isEdge) startEdgeSync(session, registered).catch((err: Error) => log.warn({ routerId: session.routerId, err: err.message }, 'edge sync failed'));
    router.channel.once('close', (reason) => {
      const current = sessions.get(session.routerId) === session;
      if (current) sessions.delete(session.routerId);
      // After the messages received before the close (and the row written before them).
      const cleanup = channel.serially(async () => {
        try {
          if (session.successor) await session.successor.catch(() => undefined);
          const remaining = await live.disconnected(session.routerId, session.connectionId);
          if (current && remaining === 'gone') {
            // Connected to no controller: what the router held goes with it.
            await edgeRequests.routerGone(session.routerId);
            await mesh.routerGone(session.routerId);
          } else if (current && remaining === 'elsewhere') {
            // Still connected to other controllers, which keep what it holds; this one can no longer reach it.
            await edgeRequests.endCircuitsWhere((c) => c.path.includes(session.routerId), `router ${session.routerId} disconnected from this controller`);
          }
        } catch (err) {
          log.warn({ routerId: session.routerId, err: (err as Error).message }, 'could not record the router disconnect');
        }
        log.info({ ...named, connectionId: session.connectionId, reason }, 'router disconnected');
      });
      cleanups.set(session.routerId, cleanup);
      const forget = (): void => {
        if (cleanups.get(session.routerId) === cleanup) cleanups.delete(session.routerId);
      };
      cleanup.then(forget, forget);
    });
  }

  const mesh = createMesh({
    store,
    live,
    bus: options.bus,
    localChannel: (routerId) => sessions.get(routerId)?.channel,
    localRouters: () => sessions.values(),
    log,
  });
  mesh.onBusMessage((_from, payload) => {
    if (payload.kind === 'circuit-fault') {
      edgeRequests.remoteFault(payload.circuitId, payload.reporter).catch((err: Error) => log.warn({ circuitId: payload.circuitId, err: err.message }, 'could not end a circuit'));
    }
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
  const terminators = createTerminatorWrites({ store, controllerId: options.membership.controllerId });

  const edgeRequests = createEdgeRequests({
    store,
    access: createServiceAccessCheck({ store, signer: options.signer, access: options.access, membership: options.membership }),
    terminators,
    owner: options.owner,
    mesh,
    onLinkFault: (routerId, linkId, iteration) => mesh.linkFault(routerId, linkId, iteration),
    forwardFault: (owner, circuitId, reporter) => options.bus.send(owner, { kind: 'circuit-fault', circuitId, reporter }),
    log,
  });

  /** Terminators of the routers' own tunnelers (their Router identities hosting services). */
  const tunnelTerminators = createTunnelTerminators({ store, access: options.access, terminators, log });

  // ---- edge routers: hello, API sessions, data model ------------------------------------------------------------

  const signingCertDer = certificateDer(options.signingCertPem);
  const caCertDers = parsePemBundle(options.caBundlePem).map(certificateDer);
  /** This controller's keys: what each edge router gets at once on its own channel (a synthetic change set). */
  const publicKeys = publicKeyEvents(signingCertDer, caCertDers);
  const ownKid = keyId(signingCertDer);
  /**
   * The keys of a full state: every controller's of the network (a full state replaces a router's keys, and a JWT a
   * controller signed stays good until it expires, also after that controller stopped: as upstream's, which puts in
   * every controller record's); the same list while those keys stand.
   */
  let networkKeys = { of: ownKid, events: publicKeys };
  function networkPublicKeys(): typeof publicKeys {
    const others = options.membership.known().filter((m) => m.fingerprint !== ownKid);
    const of = [ownKid, ...others.map((m) => m.fingerprint)].join(' ');
    if (of === networkKeys.of) return networkKeys.events;
    const keys = others.flatMap((m) => {
      try {
        return [{ der: certificateDer(m.certPem), kid: m.fingerprint }];
      } catch {
        log.warn({ controllerId: m.id }, 'unreadable signing certificate of a controller: its key is left out of the router data model');
        return [];
      }
    });
    networkKeys = { of, events: publicKeyEvents(signingCertDer, caCertDers, keys) };
    return networkKeys.events;
  }
  /** The router data model (src/fabric/data-model): one timeline per database, the change feed's seq as index. */
  const dataModel = createRouterDataModel({
    store,
    access: { catchUp: () => options.access.catchUp(), membership: () => options.access.membership() },
    controllerKeys: networkPublicKeys,
    timelineId: options.membership.networkId,
    // Controllers sharing the store send the sets their leader built (data-model/change-set-log.ts).
    shared: options.membership.clustered ? createChangeSetLog(store, () => options.membership.isLeader()) : undefined,
    log,
  });
  /** Tokens of the API sessions this process told routers about, by id (a removal names the token). */
  const pushedTokens = new Map<string, string>();
  const sessionEvents = createSessionEventReader(store);
  /**
   * The API session sync's line: each push of feed events and each full state (read with the feed's head) runs
   * alone, so a router is never between its full state and the events above it when a push looks at it.
   */
  const sessionSync = workLine();

  async function routerApiSessions(q: Sql, ids?: readonly string[]) {
    const list = await readRouterApiSessions(q, options.seal, ids);
    for (const s of list) pushedTokens.set(s.id, s.token);
    return list;
  }

  /**
   * Every API session, read with the feed's head in one snapshot: later events above it go to the router. Runs in
   * the `sessionSync` line (its caller's).
   */
  async function sendFullApiSessionStateNow(session: RouterSession): Promise<void> {
    const { at, list } = await store.snapshot(async (q) => ({ at: await feedHead(q), list: await routerApiSessions(q) }));
    session.apiSessionsFrom = at;
    for (const msg of apiSessionFullState(list, randomUUID())) session.channel.send(msg);
  }

  function sendFullApiSessionState(session: RouterSession): Promise<void> {
    return sessionSync(() => sendFullApiSessionStateNow(session));
  }

  async function startEdgeSync(session: RouterSession, registered: Promise<void>): Promise<void> {
    const { channel } = session;
    const sendModel = (m: ChannelMessage): void => {
      channel.send(m);
    };
    channel.handle(EdgeContentType.SubscribeToDataModelRequest, (msg) =>
      dataModel.subscribe(session.routerId, sendModel, decode('edge.SubscribeToDataModelRequest', msg.body)),
    );
    channel.once('close', () => {
      dataModel.routerGone(session.routerId, sendModel).catch((err: Error) => log.warn({ routerId: session.routerId, err: err.message }, 'could not end a data model subscription'));
    });
    channel.handle(EdgeContentType.RequestClientReSync, () => sendFullApiSessionState(session));
    channel.handle(EdgeContentType.ConnectEvents, (msg) => identityConnections(session, msg));
    channel.handle(EdgeContentType.ApiSessionHeartbeat, (msg) => apiSessionHeartbeat(session, msg));
    // The row the sync status goes to is written first (a failure to write it closed the channel).
    try {
      await registered;
    } catch {
      return;
    }
    await live.syncStatus(session.routerId, session.connectionId, 'SYNC_HELLO');
    let description;
    try {
      description = readClientHello(await channel.request(serverHello(options.controllerVersion), 30_000));
    } catch (err) {
      if (channel.closed) return;
      log.warn({ routerId: session.routerId, err: (err as Error).message }, 'edge router did not describe itself');
      await live.syncStatus(session.routerId, session.connectionId, 'SYNC_ERROR');
      return;
    }
    if (channel.closed) return;
    await live.described(session.routerId, session.connectionId, description.hostname, description.supportedProtocols);
    const { supported } = description.dataModel;
    await sessionSync(async () => {
      await sendFullApiSessionStateNow(session);
      if (supported) channel.send(syntheticChangeSet(publicKeys));
      session.synced = true;
    });
    await live.syncStatus(session.routerId, session.connectionId, 'SYNC_DONE');
  }

  /**
   * Which identities have an SDK connected to the router: full state, or the changes since the last report.
   * Identities that do not exist (deleted meanwhile, or made up) are passed over.
   */
  async function identityConnections(session: RouterSession, msg: ChannelMessage): Promise<void> {
    const report = decode('edge.ConnectEvents', msg.body);
    const at = new Date().toISOString();
    await store.write(async (tx) => {
      if (report.fullState) await tx.run('DELETE FROM identity_router_connections WHERE router_id = ?', [session.routerId]);
      for (const event of report.events) {
        if (!event.identityId) continue;
        if (event.isConnected) {
          await tx.run(
            `INSERT INTO identity_router_connections (identity_id, router_id, connected_at)
             SELECT id, CAST(? AS TEXT), CAST(? AS TEXT) FROM identities WHERE id = ? ON CONFLICT DO NOTHING`,
            [session.routerId, at, event.identityId],
          );
        } else {
          await tx.run('DELETE FROM identity_router_connections WHERE identity_id = ? AND router_id = ?', [event.identityId, session.routerId]);
        }
      }
    });
  }

  /**
   * API sessions in use at the router count as active: marked like REST requests, written in the next batch of
   * activity (no write per heartbeat). Tokens of no live session are removed at the router.
   */
  async function apiSessionHeartbeat(session: RouterSession, msg: ChannelMessage): Promise<void> {
    const { tokens } = decode('edge.ApiSessionHeartbeat', msg.body);
    const hashes = tokens.map(hashToken);
    const unknown = await options.apiSessions.markActiveByHashes(hashes);
    if (unknown.size > 0) session.channel.send(apiSessionsRemoved(tokens.filter((_, i) => unknown.has(hashes[i]!)).map((token) => ({ id: '', token }))));
  }

  /**
   * Tells synced edge routers what changed in the store since the last look: each router only the events above
   * the feed position its full API session state was read at (it already has what came before). With no router
   * connected the reader just keeps up with the feed: the first router's full state will hold all of it. Runs in
   * the `sessionSync` line.
   */
  async function pushSessionChanges(): Promise<void> {
    if (sessions.size === 0) {
      await sessionEvents.skip();
      return;
    }
    const { events, missed } = await sessionEvents.poll();
    const targets = [...sessions.values()].filter((s) => s.synced && !s.channel.closed);
    if (missed) {
      for (const target of targets) await sendFullApiSessionStateNow(target);
      return;
    }
    if (events.length === 0) return;
    // Circuits of ended sessions end here too (the routers close the SDK side).
    const endedSessions = new Set(events.filter((e) => e.kind === 'sessionRemoved').map((e) => e.id));
    const endedApiSessions = new Set(events.filter((e) => e.kind === 'apiSessionRemoved').map((e) => e.id));
    if (endedSessions.size + endedApiSessions.size > 0) {
      await edgeRequests.endCircuitsWhere((c) => endedSessions.has(c.sessionId) || endedApiSessions.has(c.apiSessionId), 'session ended');
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
    const added = new Map(addedIds.length > 0 ? (await routerApiSessions(store, addedIds)).map((a) => [a.id, a]) : []);
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
  const pollTimer = everyInterval(options.pollIntervalMs ?? 100, async () => {
    try {
      await sessionSync(pushSessionChanges);
      await mesh.syncPeers();
      // Circuits over links that went away end (routers report the rest as faults).
      const links = await mesh.linkIds();
      await edgeRequests.endCircuitsWhere((c) => c.links.some((l) => !links.has(l)), 'a link of its path went away');
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'could not push session changes to routers');
    }
    try {
      await dataModel.poll();
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'could not push data model changes to routers');
    }
  }, WOKEN_POLL_GAP_MS);
  // A commit that moved the change feed (this process's, or on PostgreSQL any controller's, or the shared change-set
  // log) wakes the poll: routers hear of a change within milliseconds, not at the next tick. Only while there is someone
  // to tell: routers connected here, or, for the leader of several controllers, the others reading the log it writes.
  const stopWakingOnFeed = store.onFeedChange(() => {
    if (sessions.size > 0 || (membership.clustered && membership.isLeader())) pollTimer.wake();
  });

  /**
   * Closes the channels of routers deleted, disabled or re-enrolled since they connected, and of routers that
   * connected again to another process of this controller (the router's row for this controller names the newer
   * connection). A router's connections to other controllers are rows of their own and replace nothing here.
   */
  async function checkStoredRouters(): Promise<void> {
    if (sessions.size === 0) return;
    // Only connections whose row was written before the rows are read: a newer one's may not be there yet.
    const recordedNow = [...sessions.values()].filter((s) => recorded.has(s));
    const stored = await storedRouters();
    const connected = await live.here();
    for (const session of recordedNow) {
      if (session.channel.closed) continue;
      const now = stored.get(session.routerId);
      const row = connected.get(session.routerId);
      const reason = !now
        ? 'router deleted'
        : now.disabled
          ? 'router disabled'
          : now.fingerprint !== session.fingerprint
            ? 'router re-enrolled'
            : !row
              ? // Removed by the network's leader, which took this process for gone (its database session was cut for a
                // moment): the router connects again and everything it holds is recorded anew.
                'its connection record was removed'
              : row.connectionId !== session.connectionId
                ? `replaced by a newer connection of the same router (held by ${row.owner})`
                : undefined;
      if (reason) {
        log.info({ routerId: session.routerId, reason }, 'closing router control channel');
        session.channel.close(reason);
      }
    }
  }
  /**
   * A clustered controller tells its routers when the live controllers change, and when leadership moves (whether it
   * now leads); the one that took the lead also says so with UpdateClusterLeader. Only routers of this process: every
   * process, and every controller, tells its own.
   */
  function tellRouters(event: 'members' | 'leader'): void {
    const targets = [...sessions.values()].filter((s) => !s.channel.closed);
    if (targets.length === 0) return;
    const addresses = ctrlAddressesMessage(membership);
    const leading = event === 'leader' && membership.isLeader() ? clusterLeaderMessage(membership) : undefined;
    for (const target of targets) {
      target.channel.send(addresses);
      if (leading) target.channel.send(leading);
    }
    log.info({ event, routers: targets.length, controllers: membership.live().length, leader: membership.isLeader() }, 'routers told of the controllers');
  }
  const stopWatchingMembers = membership.clustered ? membership.onChange(tellRouters) : () => undefined;

  const checkTimer = everyInterval(options.checkIntervalMs ?? 1000, async () => {
    try {
      await checkStoredRouters();
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'could not check connected routers against the store');
    }
  });

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
      stopWatchingMembers();
      stopWakingOnFeed();
      checkTimer.stop();
      pollTimer.stop();
      listener.close();
    },
  };
}

export type Fabric = ReturnType<typeof createFabric>;
