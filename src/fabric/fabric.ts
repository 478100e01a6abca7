/**
 * The fabric engine of one controller process: the routers whose control channels this process holds, what
 * it tells them and what it does with what they report. It imports nothing from the HTTP layer; the server
 * hands it the TLS connections that chose the control channel (`accept`), and the REST side reads the live
 * state from the store (`live-routers.ts`).
 *
 * A router's connection belongs to the process that accepted it (src/fabric/README.md).
 */
import type { TLSSocket } from 'node:tls';
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
  controllerId: string;
  controllerVersion: VersionInfo;
  /** The live router rows this process writes (owned by its change-feed origin). */
  live: LiveRouters;
  log: FabricLog;
  timings?: ChannelTimings;
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
    };
    sessions.set(session.routerId, session);
    live.connected(session.routerId, session.connectionId, session.connectedAt, session.versionInfo, []);
    for (const contentType of Object.values(ACKNOWLEDGED)) router.channel.handle(contentType, (msg, ch) => ch.result(msg, true));
    router.channel.once('close', (reason) => {
      live.disconnected(session.routerId, session.connectionId);
      if (sessions.get(session.routerId) === session) sessions.delete(session.routerId);
      log.info({ routerId: session.routerId, connectionId: session.connectionId, reason }, 'router disconnected');
    });
  }

  /** Closes the channels of routers deleted, disabled or re-enrolled since they connected. */
  function checkStoredRouters(): void {
    if (sessions.size === 0) return;
    const stored = storedRouters();
    for (const session of sessions.values()) {
      const now = stored.get(session.routerId);
      const reason = !now ? 'router deleted' : now.disabled ? 'router disabled' : now.fingerprint !== session.fingerprint ? 'router re-enrolled' : undefined;
      if (reason) {
        log.info({ routerId: session.routerId, reason }, 'closing router control channel');
        session.channel.close(reason);
      }
    }
  }
  const checkTimer = setInterval(checkStoredRouters, options.checkIntervalMs ?? 1000);
  checkTimer.unref();

  return {
    /** Takes a TLS connection that negotiated the control channel's ALPN. */
    accept: (socket: TLSSocket) => listener.accept(socket),
    live,
    /** The routers connected to this process. */
    sessions: (): ReadonlyMap<string, RouterSession> => sessions,
    /** Ends every router connection (controller stop); the routers reconnect to the next start. */
    close(): void {
      clearInterval(checkTimer);
      listener.close();
    },
  };
}

export type Fabric = ReturnType<typeof createFabric>;
