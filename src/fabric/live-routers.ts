/**
 * What the store knows of connected routers (table `router_connections`): written by the process holding each
 * router's control channel, read by every process for the REST views (online, hostname, protocols, sync
 * status, version). One row per router; a row is removed with its connection, and every row is dropped at
 * controller start and when the process owning it dies.
 */
import type { Db } from '../store/database.ts';
import { prepare } from '../store/entity-table.ts';
import { versionedValue } from '../store/table-versions.ts';
import type { VersionInfo } from './channel/hello.ts';
import { ROUTER_CREATED } from './terminators.ts';

export type SyncStatus = 'SYNC_NEW' | 'SYNC_HELLO' | 'SYNC_IN_PROGRESS' | 'SYNC_DONE' | 'SYNC_ERROR';

export interface LinkListener {
  address: string;
  protocol: string;
  costTags: string[];
  groups: string[];
}

export interface LiveRouter {
  routerId: string;
  /** The process holding the router's control channel. */
  owner: string;
  connectionId: string;
  connectedAt: string;
  hostname: string;
  supportedProtocols: Record<string, string>;
  versionInfo: VersionInfo;
  syncStatus: SyncStatus;
  listeners: LinkListener[];
}

interface Row {
  router_id: string;
  owner: string;
  connection_id: string;
  connected_at: string;
  hostname: string;
  supported_protocols: string;
  version_info: string;
  sync_status: SyncStatus;
  listeners: string;
}

function liveOf(row: Row): LiveRouter {
  return {
    routerId: row.router_id,
    owner: row.owner,
    connectionId: row.connection_id,
    connectedAt: row.connected_at,
    hostname: row.hostname,
    supportedProtocols: JSON.parse(row.supported_protocols) as Record<string, string>,
    versionInfo: JSON.parse(row.version_info) as VersionInfo,
    syncStatus: row.sync_status,
    listeners: JSON.parse(row.listeners) as LinkListener[],
  };
}

/**
 * Forgets every connection and what routers made or reported over them (the terminators they created, which
 * they re-create when they reconnect; circuits, links, connected identities): at controller start, when none
 * can exist.
 */
export function clearLiveRouters(db: Db): void {
  db.transaction(() => {
    prepare(db, `DELETE FROM terminators WHERE ${ROUTER_CREATED}`).run();
    prepare(db, 'DELETE FROM circuits').run();
    prepare(db, 'DELETE FROM links').run();
    prepare(db, 'DELETE FROM identity_router_connections').run();
    prepare(db, 'DELETE FROM router_connections').run();
  }).immediate();
}

/** Forgets the connections a dead process held, with their routers' terminators, circuits and identities. */
export function clearLiveRoutersOf(db: Db, owner: string): void {
  db.transaction(() => {
    const held = 'SELECT router_id FROM router_connections WHERE owner = ?';
    prepare(db, `DELETE FROM terminators WHERE ${ROUTER_CREATED} AND router_id IN (${held})`).run(owner);
    prepare(db, `DELETE FROM identity_router_connections WHERE router_id IN (${held})`).run(owner);
    prepare(db, 'DELETE FROM circuits WHERE owner = ?').run(owner);
    prepare(db, 'DELETE FROM links WHERE owner = ?').run(owner);
    prepare(db, 'DELETE FROM router_connections WHERE owner = ?').run(owner);
  }).immediate();
}

export function createLiveRouters(db: Db, owner: string) {
  /** Every connected router, by id; rebuilt only when the table changed. */
  const current = versionedValue(db, ['router_connections'], () => {
    const rows = prepare(db, 'SELECT * FROM router_connections').all() as Row[];
    return new Map(rows.map((row) => [row.router_id, Object.freeze(liveOf(row))]));
  });

  /** Records a new connection; a row of an earlier connection of the same router is replaced. */
  function connected(routerId: string, connectionId: string, connectedAt: Date, versionInfo: VersionInfo, listeners: LinkListener[]): void {
    prepare(
      db,
      `INSERT INTO router_connections (router_id, owner, connection_id, connected_at, version_info, listeners) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (router_id) DO UPDATE SET owner = excluded.owner, connection_id = excluded.connection_id, connected_at = excluded.connected_at,
         hostname = '', supported_protocols = '{}', version_info = excluded.version_info, sync_status = 'SYNC_NEW', listeners = excluded.listeners`,
    ).run(routerId, owner, connectionId, connectedAt.toISOString(), JSON.stringify(versionInfo), JSON.stringify(listeners));
  }

  /** What an edge router said of itself in its client hello. */
  function described(routerId: string, connectionId: string, hostname: string, supportedProtocols: Record<string, string>): void {
    prepare(db, 'UPDATE router_connections SET hostname = ?, supported_protocols = ? WHERE router_id = ? AND connection_id = ?').run(
      hostname,
      JSON.stringify(supportedProtocols),
      routerId,
      connectionId,
    );
  }

  function syncStatus(routerId: string, connectionId: string, status: SyncStatus): void {
    prepare(db, 'UPDATE router_connections SET sync_status = ? WHERE router_id = ? AND connection_id = ?').run(status, routerId, connectionId);
  }

  /**
   * The connection ended; a newer connection of the same router keeps its row. Returns whether the router is
   * connected again already (in any process): what it holds then belongs to that connection.
   */
  function disconnected(routerId: string, connectionId: string): boolean {
    const removed = prepare(db, 'DELETE FROM router_connections WHERE router_id = ? AND connection_id = ?').run(routerId, connectionId).changes;
    return removed === 0 && current().has(routerId);
  }

  return { current, connected, described, syncStatus, disconnected };
}

export type LiveRouters = ReturnType<typeof createLiveRouters>;
