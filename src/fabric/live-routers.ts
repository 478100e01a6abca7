/**
 * What the store knows of connected routers (table `router_connections`): written by the process holding each
 * router's control channel, read by every process for the REST views (online, hostname, protocols, sync
 * status, version). One row per router; a row is removed with its connection, and every row is dropped at
 * controller start and when the process owning it dies.
 */
import type { Sql, Store } from '../store/store.ts';
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
export async function clearLiveRouters(store: Store): Promise<void> {
  await store.write(async (tx) => {
    await tx.run(`DELETE FROM terminators WHERE ${ROUTER_CREATED}`);
    await tx.run('DELETE FROM circuits');
    await tx.run('DELETE FROM links');
    await tx.run('DELETE FROM identity_router_connections');
    await tx.run('DELETE FROM router_connections');
  });
}

/** Forgets the connections a dead process held, with their routers' terminators, circuits and identities. */
export async function clearLiveRoutersOf(store: Store, owner: string): Promise<void> {
  await store.write(async (tx) => {
    const held = 'SELECT router_id FROM router_connections WHERE owner = ?';
    await tx.run(`DELETE FROM terminators WHERE ${ROUTER_CREATED} AND router_id IN (${held})`, [owner]);
    await tx.run(`DELETE FROM identity_router_connections WHERE router_id IN (${held})`, [owner]);
    await tx.run('DELETE FROM circuits WHERE owner = ?', [owner]);
    await tx.run('DELETE FROM links WHERE owner = ?', [owner]);
    await tx.run('DELETE FROM router_connections WHERE owner = ?', [owner]);
  });
}

export function createLiveRouters(store: Store, owner: string) {
  /** Every connected router, by id; rebuilt only when the table changed. */
  const current: (q?: Sql) => Promise<ReadonlyMap<string, LiveRouter>> = store.versioned(['router_connections'], async (q) => {
    const rows = await q.all<Row>('SELECT * FROM router_connections');
    return new Map(rows.map((row) => [row.router_id, Object.freeze(liveOf(row))]));
  });

  // The connection rows are runtime rows (store.ts `writeRuntime`): written by the process holding the connection,
  // keyed by it, read by reloading the table; they do not wait for model writes. (A router deleted meanwhile makes
  // `connected` fail on its foreign key: the connection is then refused, as it would be a moment later.)

  /** Records a new connection; a row of an earlier connection of the same router is replaced. */
  async function connected(routerId: string, connectionId: string, connectedAt: Date, versionInfo: VersionInfo, listeners: LinkListener[]): Promise<void> {
    await store.writeRuntime((tx) =>
      tx.run(
        `INSERT INTO router_connections (router_id, owner, connection_id, connected_at, version_info, listeners) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (router_id) DO UPDATE SET owner = excluded.owner, connection_id = excluded.connection_id, connected_at = excluded.connected_at,
         hostname = '', supported_protocols = '{}', version_info = excluded.version_info, sync_status = 'SYNC_NEW', listeners = excluded.listeners`,
        [routerId, owner, connectionId, connectedAt.toISOString(), JSON.stringify(versionInfo), JSON.stringify(listeners)],
      ),
    );
  }

  /** What an edge router said of itself in its client hello. */
  async function described(routerId: string, connectionId: string, hostname: string, supportedProtocols: Record<string, string>): Promise<void> {
    await store.writeRuntime((tx) =>
      tx.run('UPDATE router_connections SET hostname = ?, supported_protocols = ? WHERE router_id = ? AND connection_id = ?', [
        hostname,
        JSON.stringify(supportedProtocols),
        routerId,
        connectionId,
      ]),
    );
  }

  async function syncStatus(routerId: string, connectionId: string, status: SyncStatus): Promise<void> {
    await store.writeRuntime((tx) => tx.run('UPDATE router_connections SET sync_status = ? WHERE router_id = ? AND connection_id = ?', [status, routerId, connectionId]));
  }

  /**
   * The connection ended; a newer connection of the same router keeps its row. Returns whether the router is
   * connected again already (in any process): what it holds then belongs to that connection.
   */
  async function disconnected(routerId: string, connectionId: string): Promise<boolean> {
    const { changes: removed } = await store.writeRuntime((tx) => tx.run('DELETE FROM router_connections WHERE router_id = ? AND connection_id = ?', [routerId, connectionId]));
    return removed === 0 && (await current()).has(routerId);
  }

  return { current, connected, described, syncStatus, disconnected };
}

export type LiveRouters = ReturnType<typeof createLiveRouters>;
