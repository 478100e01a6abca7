/**
 * What the store knows of connected routers (table `router_connections`): written by the process holding each
 * router's control channel, read by every process for the REST views (online, hostname, protocols, sync
 * status, version). A router keeps one control channel to each controller of its network, so there is one row
 * per router and controller (migration 0039): a newer connection to the same controller replaces the row, a
 * connection to another controller has its own. A row is removed with its connection; every row is dropped at a
 * start with no other controller alive, and the rows of a process that died when it is found gone.
 *
 * "Online" means connected to any controller. What a router holds in the store (terminators it created, links,
 * connected identities) goes only once it is connected to no controller at all.
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
  /** The controller whose process holds this connection. */
  controllerId: string;
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
  controller_id: string;
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
    controllerId: row.controller_id,
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

/**
 * Forgets the connections a dead process held, the circuits it routed, and, of its routers connected to no other
 * controller now, the terminators they created, their links and connected identities. The links it recorded whose
 * dialer is still connected elsewhere stay, recorded by a process holding that dialer.
 */
export async function clearLiveRoutersOf(store: Store, owner: string): Promise<void> {
  await store.write(async (tx) => {
    const held = 'SELECT router_id FROM router_connections WHERE owner = ?';
    const heldElsewhere = 'SELECT router_id FROM router_connections WHERE owner <> ?';
    const goneRouters = `IN (${held}) AND router_id NOT IN (${heldElsewhere})`;
    await tx.run(`DELETE FROM terminators WHERE ${ROUTER_CREATED} AND router_id ${goneRouters}`, [owner, owner]);
    await tx.run(`DELETE FROM identity_router_connections WHERE router_id ${goneRouters}`, [owner, owner]);
    await tx.run('DELETE FROM circuits WHERE owner = ?', [owner]);
    await tx.run(
      `DELETE FROM links WHERE (owner = ? AND src_router_id NOT IN (${heldElsewhere}))
         OR (src_router_id IN (${held}) AND src_router_id NOT IN (${heldElsewhere}))
         OR (dst_router_id IN (${held}) AND dst_router_id NOT IN (${heldElsewhere}))`,
      [owner, owner, owner, owner, owner, owner],
    );
    await tx.run(
      `UPDATE links SET owner = (SELECT MIN(c.owner) FROM router_connections c WHERE c.router_id = links.src_router_id AND c.owner <> ?) WHERE owner = ?`,
      [owner, owner],
    );
    await tx.run('DELETE FROM router_connections WHERE owner = ?', [owner]);
  });
}

/** Where a router is still connected once one of its connections ended. */
export type RemainingConnection =
  /** To this controller: a newer connection replaced the one that ended (in this process or another of it). */
  | 'here'
  /** Only to other controllers: what it holds in the store stays, this controller can no longer reach it. */
  | 'elsewhere'
  /** Nowhere: what it held goes. */
  | 'gone';

/** `owner` is this process (its change-feed origin), `controllerId` the controller it serves. */
export function createLiveRouters(store: Store, owner: string, controllerId: string) {
  /** One read of the table (rebuilt only when it changed): every router once, and those connected to this controller. */
  const rows = store.versioned(['router_connections'], async (q) => {
    const list = await q.all<Row>('SELECT * FROM router_connections ORDER BY router_id, controller_id');
    const anywhere = new Map<string, LiveRouter>();
    const here = new Map<string, LiveRouter>();
    for (const row of list) {
      const live = Object.freeze(liveOf(row));
      if (row.controller_id === controllerId) {
        here.set(live.routerId, live);
        anywhere.set(live.routerId, live);
      } else if (!here.has(live.routerId) && !anywhere.has(live.routerId)) {
        anywhere.set(live.routerId, live);
      }
    }
    return { anywhere: anywhere as ReadonlyMap<string, LiveRouter>, here: here as ReadonlyMap<string, LiveRouter> };
  });

  /**
   * Every router connected to any controller, once, by id: its connection to this controller if it has one, else
   * the one to the first other controller by id (what the REST views show).
   */
  const current = async (q?: Sql): Promise<ReadonlyMap<string, LiveRouter>> => (await rows(q)).anywhere;

  /** The routers connected to this controller (in any of its processes), by id: the ones it can reach. */
  const here = async (q?: Sql): Promise<ReadonlyMap<string, LiveRouter>> => (await rows(q)).here;

  // The connection rows are runtime rows (store.ts `writeRuntime`): written by the process holding the connection,
  // keyed by it, read by reloading the table; they do not wait for model writes. (A router deleted meanwhile makes
  // `connected` fail on its foreign key: the connection is then refused, as it would be a moment later.)

  /** Records a new connection; a row of an earlier connection of the same router to this controller is replaced. */
  async function connected(routerId: string, connectionId: string, connectedAt: Date, versionInfo: VersionInfo, listeners: LinkListener[]): Promise<void> {
    await store.writeRuntime((tx) =>
      tx.run(
        `INSERT INTO router_connections (router_id, controller_id, owner, connection_id, connected_at, version_info, listeners) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (router_id, controller_id) DO UPDATE SET owner = excluded.owner, connection_id = excluded.connection_id, connected_at = excluded.connected_at,
         hostname = '', supported_protocols = '{}', version_info = excluded.version_info, sync_status = 'SYNC_NEW', listeners = excluded.listeners`,
        [routerId, controllerId, owner, connectionId, connectedAt.toISOString(), JSON.stringify(versionInfo), JSON.stringify(listeners)],
      ),
    );
  }

  /** What an edge router said of itself in its client hello. */
  async function described(routerId: string, connectionId: string, hostname: string, supportedProtocols: Record<string, string>): Promise<void> {
    await store.writeRuntime((tx) =>
      tx.run('UPDATE router_connections SET hostname = ?, supported_protocols = ? WHERE router_id = ? AND controller_id = ? AND connection_id = ?', [
        hostname,
        JSON.stringify(supportedProtocols),
        routerId,
        controllerId,
        connectionId,
      ]),
    );
  }

  async function syncStatus(routerId: string, connectionId: string, status: SyncStatus): Promise<void> {
    await store.writeRuntime((tx) =>
      tx.run('UPDATE router_connections SET sync_status = ? WHERE router_id = ? AND controller_id = ? AND connection_id = ?', [status, routerId, controllerId, connectionId]),
    );
  }

  /**
   * The connection ended; a newer connection of the same router to this controller keeps its row. Says where the
   * router is still connected. The removal and the look at the other rows are one write under the store's write
   * lock, so of two controllers losing the same router at once the second sees the first's removal: one of them
   * finds it gone.
   */
  async function disconnected(routerId: string, connectionId: string): Promise<RemainingConnection> {
    return store.write(async (tx) => {
      await tx.run('DELETE FROM router_connections WHERE router_id = ? AND controller_id = ? AND connection_id = ?', [routerId, controllerId, connectionId]);
      const holders = await tx.column<string>('SELECT controller_id FROM router_connections WHERE router_id = ?', [routerId]);
      return holders.includes(controllerId) ? 'here' : holders.length > 0 ? 'elsewhere' : 'gone';
    });
  }

  return { controllerId, current, here, connected, described, syncStatus, disconnected };
}

export type LiveRouters = ReturnType<typeof createLiveRouters>;
