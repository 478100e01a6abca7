/**
 * The router mesh as this process sees it: which routers are connected (to any process) and how to reach
 * them, which links join them, and what every router must hear about its peers.
 *
 * With several controllers a router keeps a control channel to each; a controller reaches only the routers
 * connected to it (in any of its processes: there are no messages between controllers), so paths go only through
 * those. Peers are the routers connected to any controller: links join routers, not controllers, and a router told
 * a peer is unhealthy by one controller while another says healthy keeps the last word (controllers-ha.md §1.5).
 *
 * - Peers: routers learn the other connected routers and their link listeners from peer state changes
 *   (healthy when a router connects, unhealthy when it goes, removed when it is deleted). Every process
 *   compares the connected routers in the store with what it last saw and tells its own routers.
 * - Links: the router that dialed a link reports it; links are stored (any process may route over them) and
 *   removed on a link fault (the other end is told), when the dialer reports a full list without them, and
 *   when either router goes. A router asked to accept a link verifies the dialer through the controller. A
 *   link an operator took down is held down (`link_holds`, migration 0033): reported again under its id (the
 *   router reconnected, re-announced it or re-dialed it), it comes back down until the operator lifts it.
 * - Link costs: a link costs its static cost plus the latency each end measures, in whole milliseconds (the
 *   store keeps the sum, migration 0031). Both ends report the mean of their `link.<id>.latency` (and
 *   `.queue_time`) histograms in their metrics; until a router has, its end counts the initial latency (65 s, as
 *   upstream's), so an unmeasured link is the last choice while a measured one exists.
 * - Reaching routers: a router held here is reached on its channel; one held by another process through the
 *   bus (the owner sends and hands back the reply).
 */
import type { Store } from '../store/store.ts';
import type { BusPayload, FabricBus, WireMessage } from './bus.ts';
import type { ControlChannel } from './channel/connection.ts';
import { message, type ChannelMessage } from './channel/message.ts';
import type { LinkListener, LiveRouter, LiveRouters } from './live-routers.ts';
import type { GraphLink, GraphRouter } from './paths.ts';
import { decode, encode, type ProtoMessages } from './proto/index.ts';
import { CtrlContentType, FaultSubject, PeerState } from './proto/ctrl.ts';

export interface MeshLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface MeshOptions {
  store: Store;
  live: LiveRouters;
  bus: FabricBus;
  /** The channel of a router this process holds. */
  localChannel(routerId: string): ControlChannel | undefined;
  /** Routers this process holds. */
  localRouters(): Iterable<{ routerId: string; channel: ControlChannel }>;
  log: MeshLog;
  now?: () => Date;
}

export function toWire(msg: ChannelMessage): WireMessage {
  return { contentType: msg.contentType, headers: [...msg.headers].map(([k, v]) => [k, v.toString('base64')]), body: msg.body.toString('base64') };
}

export function fromWire(wire: WireMessage): ChannelMessage {
  return message(wire.contentType, Buffer.from(wire.body, 'base64'), wire.headers.map(([k, v]) => [k, Buffer.from(v, 'base64')]));
}

export function decodeListeners(header: Buffer | undefined): LinkListener[] {
  if (!header || header.length === 0) return [];
  return decode('ctrl.Listeners', header).listeners.map((l) => ({ address: l.address, protocol: l.protocol, costTags: l.costTags, groups: l.groups }));
}

/** The latency each end of a new link counts until its router has measured it (nanoseconds). */
export const INITIAL_LINK_LATENCY_NS = 65_000_000_000;

/** What a router's metrics say of one link's latency at its end: latency plus queue time means, if measured. */
export function measuredLatency(histograms: Record<string, { mean: number; count: bigint }>, linkId: string): number | undefined {
  const latency = histograms[`link.${linkId}.latency`];
  // A histogram without samples (the link's first heartbeat is still to come) measures nothing yet.
  if (!latency || latency.count <= 0n || !Number.isFinite(latency.mean)) return undefined;
  const queue = histograms[`link.${linkId}.queue_time`];
  const total = latency.mean + (queue && Number.isFinite(queue.mean) ? queue.mean : 0);
  return Math.max(0, Math.min(Number.MAX_SAFE_INTEGER, Math.trunc(total)));
}

interface LinkRow {
  id: string;
  src_router_id: string;
  dst_router_id: string;
  cost: number;
  iteration: number;
}

export function createMesh(options: MeshOptions) {
  const { store, live, bus, log } = options;
  const now = options.now ?? (() => new Date());

  // ---- reaching routers --------------------------------------------------------------------------------------

  let nextRequestId = 1;
  const pending = new Map<number, { resolve(m: ChannelMessage): void; reject(e: Error): void; timer: NodeJS.Timeout }>();

  /** Sends to a router wherever this controller holds it and waits for its reply. */
  async function requestOn(routerId: string, msg: ChannelMessage, timeoutMs: number): Promise<ChannelMessage> {
    const local = options.localChannel(routerId);
    if (local) return local.request(msg, timeoutMs);
    const owner = (await live.here()).get(routerId)?.owner;
    if (!owner) throw new Error(`router ${routerId} is not connected`);
    return new Promise((resolve, reject) => {
      const requestId = nextRequestId++;
      const timer = setTimeout(() => {
        pending.delete(requestId);
        reject(new Error(`no reply from router ${routerId} within ${timeoutMs} ms`));
      }, timeoutMs + 1000);
      timer.unref();
      pending.set(requestId, { resolve, reject, timer });
      if (!bus.send(owner, { kind: 'request', requestId, routerId, message: toWire(msg), timeoutMs })) {
        clearTimeout(timer);
        pending.delete(requestId);
        reject(new Error(`router ${routerId} is held by a process this one can not reach`));
      }
    });
  }

  /**
   * Sends to a router wherever this controller holds it (at once to a router held by this process); false when it is
   * not connected to this controller.
   */
  async function sendOn(routerId: string, msg: ChannelMessage): Promise<boolean> {
    const local = options.localChannel(routerId);
    if (local) {
      local.send(msg);
      return true;
    }
    const owner = (await live.here()).get(routerId)?.owner;
    return owner !== undefined && bus.send(owner, { kind: 'send', routerId, message: toWire(msg) });
  }

  const otherHandlers: Array<(from: string, payload: BusPayload) => void> = [];

  bus.onMessage((from, payload) => {
    switch (payload.kind) {
      case 'request': {
        const channel = options.localChannel(payload.routerId);
        if (!channel) {
          bus.send(from, { kind: 'reply', requestId: payload.requestId, error: `router ${payload.routerId} is not held here` });
          return;
        }
        channel.request(fromWire(payload.message), payload.timeoutMs).then(
          (reply) => bus.send(from, { kind: 'reply', requestId: payload.requestId, message: toWire(reply) }),
          (err: Error) => bus.send(from, { kind: 'reply', requestId: payload.requestId, error: err.message }),
        );
        return;
      }
      case 'reply': {
        const waiter = pending.get(payload.requestId);
        if (!waiter) return;
        pending.delete(payload.requestId);
        clearTimeout(waiter.timer);
        if (payload.message) waiter.resolve(fromWire(payload.message));
        else waiter.reject(new Error(payload.error ?? 'no reply'));
        return;
      }
      case 'send':
        options.localChannel(payload.routerId)?.send(fromWire(payload.message));
        return;
      default:
        for (const handler of otherHandlers) handler(from, payload);
    }
  });

  // ---- the graph -----------------------------------------------------------------------------------------------

  /** Costs and traversal flags of every router (re-read only when the routers table changed). */
  const routerFacts = store.versioned(['routers'], async (q) => {
    const rows = await q.all<{ id: string; cost: number; no_traversal: number }>('SELECT id, cost, no_traversal FROM routers');
    return new Map(rows.map((r) => [r.id, { cost: r.cost, noTraversal: r.no_traversal === 1 }]));
  });

  const storedLinks = store.versioned(['links'], (q) => q.all<LinkRow>('SELECT id, src_router_id, dst_router_id, cost, iteration FROM links WHERE down = 0'));

  /** The routers connected to this controller and the links between them, for path selection. */
  async function graph(): Promise<{ routers: Map<string, GraphRouter>; links: GraphLink[] }> {
    const facts = await routerFacts();
    const routers = new Map<string, GraphRouter>();
    for (const id of (await live.here()).keys()) {
      const f = facts.get(id);
      if (f) routers.set(id, { id, cost: f.cost, noTraversal: f.noTraversal });
    }
    const links = (await storedLinks()).map((l) => ({ id: l.id, src: l.src_router_id, dst: l.dst_router_id, cost: l.cost }));
    return { routers, links };
  }

  /** Ids of the links that exist now. */
  async function linkIds(): Promise<Set<string>> {
    return new Set((await storedLinks()).map((l) => l.id));
  }

  // ---- links ---------------------------------------------------------------------------------------------------

  /**
   * A dialing router's report of its links; a full refresh drops the ones it no longer lists. Whether a link is
   * down is the operator's alone: a link taken down and reported again stays down (migration 0033).
   */
  async function routerLinks(routerId: string, msg: ChannelMessage): Promise<void> {
    const report = decode('ctrl.RouterLinks', msg.body);
    const at = now().toISOString();
    const upsert = `INSERT INTO links (id, src_router_id, dst_router_id, protocol, dial_address, iteration, state, down, owner, created_at, updated_at, src_latency, dst_latency)
       VALUES (?, ?, ?, ?, ?, ?, 'Connected', 0, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET iteration = excluded.iteration, state = 'Connected', owner = excluded.owner, updated_at = excluded.updated_at`;
    const routers = new Set(await store.column<string>('SELECT id FROM routers'));
    await store.write(async (tx) => {
      for (const link of report.links) {
        if (!link.id || !routers.has(link.destRouterId) || link.destRouterId === routerId) continue;
        if (!(await tx.get('SELECT 1 FROM links WHERE id = ?', [link.id]))) {
          log.info({ linkId: link.id, from: routerId, to: link.destRouterId, protocol: link.linkProtocol }, 'link up');
        }
        await tx.run(upsert, [link.id, routerId, link.destRouterId, link.linkProtocol, link.dialAddress, link.iteration, bus.self, at, at,
          INITIAL_LINK_LATENCY_NS, INITIAL_LINK_LATENCY_NS]);
      }
      if (report.fullRefresh) {
        const listed = new Set(report.links.map((l) => l.id));
        for (const id of await tx.column<string>('SELECT id FROM links WHERE src_router_id = ?', [routerId])) {
          if (listed.has(id)) continue;
          await tx.run('DELETE FROM links WHERE id = ?', [id]);
          log.info({ linkId: id, from: routerId }, 'link gone (no longer reported)');
        }
      }
    });
    log.debug({ routerId, links: report.links.length, fullRefresh: report.fullRefresh }, 'router links reported');
  }

  /** A router's metrics: the latency it measured of each of its links sets its end's share of the link's cost. */
  async function metrics(routerId: string, msg: ChannelMessage): Promise<void> {
    let report: ProtoMessages['metrics.MetricsMessage'];
    try {
      report = decode('metrics.MetricsMessage', msg.body);
    } catch (err) {
      log.warn({ routerId, err: (err as Error).message }, 'unreadable metrics from a router');
      return;
    }
    // Read and written in one transaction: the other end's share, read here, is written back unchanged.
    await store.write(async (tx) => {
      const rows = await tx.all<{ id: string; src_router_id: string; src_latency: number; dst_latency: number }>(
        'SELECT id, src_router_id, src_latency, dst_latency FROM links WHERE src_router_id = ? OR dst_router_id = ?',
        [routerId, routerId],
      );
      // The link's cost follows in the store (migration 0031).
      for (const row of rows) {
        const measured = measuredLatency(report.histograms, row.id);
        if (measured === undefined) continue;
        const atSource = row.src_router_id === routerId;
        const src = atSource ? measured : row.src_latency;
        const dst = atSource ? row.dst_latency : measured;
        if (src === row.src_latency && dst === row.dst_latency) continue;
        await tx.run('UPDATE links SET src_latency = ?, dst_latency = ? WHERE id = ?', [src, dst, row.id]);
      }
    });
  }

  /** A link failed at one end: it goes, and the router at the other end is told to close its side. */
  async function linkFault(routerId: string, linkId: string, iteration: number): Promise<void> {
    const row = await store.write(async (tx) => {
      const found = await tx.get<LinkRow>('SELECT id, src_router_id, dst_router_id, iteration FROM links WHERE id = ?', [linkId]);
      if (!found || (iteration > 0 && found.iteration > iteration)) return undefined;
      await tx.run('DELETE FROM links WHERE id = ?', [linkId]);
      return found;
    });
    if (!row) return;
    const other = row.src_router_id === routerId ? row.dst_router_id : row.src_router_id;
    await sendOn(other, message(CtrlContentType.Fault, encode('ctrl.Fault', { subject: FaultSubject.LinkFault, id: linkId, iteration })));
    log.info({ linkId, reportedBy: routerId }, 'link removed');
  }

  /** The listening end of a new link asks whether the dialer is who it says: its certificate must be the enrolled one. */
  async function verifyRouter(channel: ControlChannel, msg: ChannelMessage): Promise<void> {
    const request = decode('ctrl.VerifyRouter', msg.body);
    const row = await store.get<{ fingerprint: string | null; disabled: number }>('SELECT fingerprint, disabled FROM routers WHERE id = ?', [request.routerId]);
    const enrolled = row?.fingerprint?.toLowerCase();
    const ok = !!row && row.disabled === 0 && !!enrolled && request.fingerprints.some((f) => f.toLowerCase() === enrolled);
    channel.result(msg, ok, ok ? '' : `router ${request.routerId} could not be verified`);
  }

  /** A router went away (from every controller): its links go with it. */
  async function routerGone(routerId: string): Promise<void> {
    const { changes: gone } = await store.write((tx) => tx.run('DELETE FROM links WHERE src_router_id = ? OR dst_router_id = ?', [routerId, routerId]));
    if (gone > 0) log.info({ routerId, links: gone }, 'links of a disconnected router removed');
  }

  // ---- peers ---------------------------------------------------------------------------------------------------

  /** What this process last told its routers: connected routers by id, with the connection they were told of. */
  let toldPeers = new Map<string, string>();
  /** Local routers that have been sent the full peer list, by connection id. */
  const introduced = new Map<string, string>();

  function peerChange(
    connected: ReadonlyMap<string, LiveRouter>,
    id: string,
    state: number,
  ): { id: string; version: string; state: number; listeners: Array<Record<string, unknown>> } {
    const router = connected.get(id);
    return {
      id,
      version: router?.versionInfo.version ?? '',
      state,
      listeners: (router?.listeners ?? []).map((l) => ({ address: l.address, protocol: l.protocol, costTags: l.costTags, groups: l.groups })),
    };
  }

  function peerMessage(changes: ReturnType<typeof peerChange>[]): ChannelMessage {
    return message(CtrlContentType.PeerStateChangeRequest, encode('ctrl.PeerStateChanges', { changes: changes as never }));
  }

  /**
   * Tells this process's routers what changed among their peers (routers connected to any controller) since the last
   * look (one look at a time).
   */
  async function syncPeers(): Promise<void> {
    const connected = await live.current();
    const current = new Map([...connected.values()].map((r) => [r.routerId, r.connectionId]));
    const changes: Array<{ id: string; change: ReturnType<typeof peerChange> }> = [];
    for (const [id, connectionId] of current) if (toldPeers.get(id) !== connectionId) changes.push({ id, change: peerChange(connected, id, PeerState.Healthy) });
    if ([...toldPeers.keys()].some((id) => !current.has(id))) {
      const existing = new Set(await store.column<string>('SELECT id FROM routers'));
      for (const id of toldPeers.keys()) {
        if (!current.has(id)) changes.push({ id, change: { id, version: '', state: existing.has(id) ? PeerState.Unhealthy : PeerState.Removed, listeners: [] } });
      }
    }
    toldPeers = current;
    for (const { routerId, channel } of options.localRouters()) {
      const connectionId = current.get(routerId);
      if (connectionId === undefined) continue;
      if (introduced.get(routerId) !== connectionId) {
        // A router new to this process hears of every other connected router.
        introduced.set(routerId, connectionId);
        const all = [...current.keys()].filter((id) => id !== routerId).map((id) => peerChange(connected, id, PeerState.Healthy));
        if (all.length > 0) channel.send(peerMessage(all));
        continue;
      }
      const relevant = changes.filter((c) => c.id !== routerId).map((c) => c.change);
      if (relevant.length > 0) channel.send(peerMessage(relevant));
    }
    for (const id of introduced.keys()) if (!current.has(id)) introduced.delete(id);
  }

  return {
    requestOn,
    sendOn,
    graph,
    linkIds,
    routerLinks,
    metrics,
    linkFault,
    verifyRouter,
    routerGone,
    syncPeers,
    /** Handles bus messages the mesh itself does not (circuit faults). */
    onBusMessage: (handler: (from: string, payload: BusPayload) => void) => void otherHandlers.push(handler),
  };
}

export type Mesh = ReturnType<typeof createMesh>;
