/**
 * The router data model of one process: what the edge routers it holds are told about config types, configs,
 * identities, services, posture checks, service policies and public keys (router-control.md §3), kept current
 * from the change feed.
 *
 * - Index: the change feed's `seq` (shared by every process). A change set's index is the seq of the last feed row
 *   it came from; the full state's `endIndex` is the model's index; the timeline is the network id (one per
 *   database, the same on every controller of it).
 * - Started at the first subscription: one read of the store and the access index gives the full state and what
 *   routers have (`TrackedModel`). From then on every poll (the fabric's 100 ms timer) reads the feed rows above
 *   its position, turns them into one change set (change-sets.ts), keeps it for replays (subscriptions.ts) and
 *   sends it to every router with an active subscription, each with its own `previousIndex`. The feed rows are
 *   read first, then the access index is brought up to them (at least), then the entities are read in one read
 *   snapshot, so members and entities are at or past the index (the next rows are compared with what routers were
 *   told, so a change seen early is not sent twice). A rebuild of the access index elsewhere (feed row `all`) or
 *   rows trimmed before they were read restart the model: every subscribed router gets the full state again.
 * - One operation at a time (a subscription, a poll, a router gone): each waits for the one before it, as when
 *   each ran in one synchronous step.
 * - The full state is one DataState message: an upstream router builds a new model from each one it gets and
 *   replaces its own with it (router/state/dataState.go), so it cannot be split into several. Its encoded body is
 *   kept with the change sets made since it was read, shared by every router (the channel writes it from that one
 *   buffer, a slice at a time as the router reads). A router that needs the full state gets it at the index it was
 *   read at, then those change sets, as any router behind would: it ends at the current model without the store
 *   being read again. The state is read again, at the next router that needs it, only once those change sets weigh
 *   more than a share of it (REPLAY_SHARE, at least REPLAY_MIN_BYTES): a change costs the next new router a few
 *   bytes, not a rebuild.
 * - Subscriptions as upstream's rtx.go handles them (subscriptions.ts); CurrentIndexMessage every 30 s when the
 *   index moved since the last one a router got.
 * - With no subscription for 10 minutes the model is dropped (the next subscription starts it again).
 */
import { modelHead } from '../../cluster/change-feed.ts';
import type { Sql, Store } from '../../store/store.ts';
import { message, stringValue, uint64Value, type ChannelMessage } from '../channel/message.ts';
import { encode } from '../proto/index.ts';
import { EdgeContentType, EdgeHeader } from '../proto/edge-ctrl.ts';
import { createChangeSetBuilder, MODEL_FEED_KINDS, type ChangeSetBuilder, type FeedRow } from './change-sets.ts';
import type { ChangeSetLog, LoggedChangeSet } from './change-set-log.ts';
import { readFullModel, type ModelEvent, type PolicyMembership } from './full-state.ts';
import {
  createChangeSetBuffer,
  createSubscriptions,
  type BufferedChangeSet,
  type ChangeSetBuffer,
  type ChangeSetBufferOptions,
  type SubscribeRequest,
  type Subscription,
} from './subscriptions.ts';

export interface DataModelLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface DataModelAccess {
  /** Brings the access index up to the store (other processes' writes). */
  catchUp(): void | Promise<unknown>;
  /** Service policy members now. */
  membership(): PolicyMembership | Promise<PolicyMembership>;
}

export interface RouterDataModelOptions {
  store: Store;
  access: DataModelAccess;
  /**
   * The controllers' public key events (every live controller's signing certificate, the CA bundle), synthetic:
   * read at each full state. A kept full state read with another list than the current one is read again, so the
   * full states sent after a controller joined carry its key. Return the same list while nothing changed.
   */
  controllerKeys: () => readonly ModelEvent[];
  /** A stable id of this database, the same on every controller of it (the network id). */
  timelineId: string;
  /**
   * Controllers sharing one store: the change sets the leader builds and the others read (change-set-log.ts). Without
   * it, this process builds its own sets from the feed.
   */
  shared?: ChangeSetLog;
  log: DataModelLog;
  now?: () => number;
  buffer?: ChangeSetBufferOptions;
  /** How often routers are told the current index when it moved (upstream: 30 s). */
  indexIntervalMs?: number;
  /** How long the model is kept without any subscription. */
  idleReleaseMs?: number;
  /** The kept full state is read again once the change sets since it weigh more than this share of it... */
  replayShare?: number;
  /** ... and more than this many bytes. */
  replayMinBytes?: number;
}

/** Rows of the shared change-set log are kept this long (as the change feed's), trimmed by the leader this often. */
const LOG_RETENTION_MS = 10 * 60_000;
const LOG_TRIM_INTERVAL_MS = 60_000;

/** Defaults of `replayShare` and `replayMinBytes`. */
export const REPLAY_SHARE = 1 / 8;
export const REPLAY_MIN_BYTES = 64 * 1024;

/** Sends one message to a router (its control channel). */
export type RouterSend = (msg: ChannelMessage) => void;

/** An encoded full state and what changed since it was read. */
interface KeptFullState {
  index: bigint;
  /** The controller keys it was read with. */
  keys: readonly ModelEvent[];
  body: Buffer;
  events: number;
  /** The change sets after `index`, in order, up to the current index. */
  since: BufferedChangeSet[];
  sinceBytes: number;
}

interface ModelState {
  /** Builds the sets from the feed; undefined where they are read from the shared log (a controller that does not lead). */
  builder?: ChangeSetBuilder;
  buffer: ChangeSetBuffer;
  /** Highest feed seq read (building), or the index of the newest log row read (reading the shared log). */
  position: number;
  /** The store's commit mark when the feed was last read: while it stands, nobody committed and nothing is read. */
  readAt?: unknown;
  /** The kept full state, until the change sets since it grow too large. */
  full?: KeptFullState;
}

const KIND_LIST = MODEL_FEED_KINDS.map((k) => `'${k}'`).join(', ');

export function createRouterDataModel(options: RouterDataModelOptions) {
  const { store, access, log, timelineId } = options;
  const now = options.now ?? Date.now;
  const indexIntervalMs = options.indexIntervalMs ?? 30_000;
  const idleReleaseMs = options.idleReleaseMs ?? 10 * 60_000;
  const replayShare = options.replayShare ?? REPLAY_SHARE;
  const replayMinBytes = options.replayMinBytes ?? REPLAY_MIN_BYTES;
  const subscriptions = createSubscriptions(timelineId);
  const senders = new Map<string, RouterSend>();
  let state: ModelState | undefined;
  let lastIndexTick = now();
  let idleSince = now();
  let lastTrim = now();

  /** The operation running now (or settled); never rejects. */
  let tail: Promise<void> = Promise.resolve();

  /** Runs `work` once the operations before it have finished (they share `state`, the senders and subscriptions). */
  function serially<T>(work: () => Promise<T>): Promise<T> {
    const done = tail.then(work);
    tail = done.then(
      () => undefined,
      () => undefined,
    );
    return done;
  }

  /** The newest model seq (runtime rows say nothing of model rows still to commit: src/cluster/change-feed.ts). */
  function head(q: Sql = store): Promise<number> {
    return modelHead(q);
  }

  async function trimmedThrough(q: Sql = store): Promise<number> {
    return (await q.value<number>('SELECT trimmed_through FROM change_feed_trim WHERE id = 1')) ?? 0;
  }

  /**
   * Everything routers get, read after the access index was brought up to the store (it reads through its own
   * snapshot, which must not be nested in this one), the entities in one snapshot.
   */
  async function readModel() {
    await access.catchUp();
    const membership = await access.membership();
    const keys = options.controllerKeys();
    return { keys, ...(await store.snapshot((q) => readFullModel(q, membership, keys))) };
  }

  /** Reads everything at the feed's head: the model starts, or starts again, there. */
  async function load(): Promise<ModelState> {
    const shared = options.shared;
    if (shared && !shared.leads()) return follow(shared);
    for (let attempt = 0; ; attempt++) {
      // A leader of controllers sharing the store continues the shared chain, or restarts it at its own start.
      const logHead = shared ? await shared.head() : undefined;
      const at = Math.max(await head(), await trimmedThrough(), Number(logHead ?? 0));
      const full = await readModel();
      const index = BigInt(at);
      let buffer = createChangeSetBuffer(index, options.buffer);
      // An empty log gets its first row now, so the controllers reading it start the chain where this one does.
      if (shared && logHead === undefined && !(await shared.restart(index, 0n))) continue;
      if (shared && logHead !== undefined) {
        if (logHead === index) buffer = await replayable(shared, index);
        else if (!(await shared.restart(index, logHead))) {
          // Another process appended meanwhile (an old leader finishing a set): read its place again.
          if (attempt < 5) continue;
          throw new Error('the shared change-set log keeps moving under this leader');
        }
      }
      const body = encode('edge.DataState', { events: full.events, endIndex: index, timelineId });
      log.info({ index: String(index), events: full.events.length, bytes: body.length, shared: shared !== undefined }, 'router data model loaded');
      return {
        builder: createChangeSetBuilder({ store, membership: () => access.membership(), tracked: full.tracked }),
        buffer,
        position: at,
        full: { index, keys: full.keys, body, events: full.events.length, since: [], sinceBytes: 0 },
      };
    }
  }

  /** A buffer ending at `index` holding the newest sets of the shared chain that end there (for replays). */
  async function replayable(shared: ChangeSetLog, index: bigint): Promise<ChangeSetBuffer> {
    const recent = (await shared.recent(options.buffer?.maxSets ?? 1000)).filter((r) => r.changes && r.index <= index);
    if (recent.length === 0 || recent[recent.length - 1]!.index !== index) return createChangeSetBuffer(index, options.buffer);
    const buffer = createChangeSetBuffer(recent[0]!.previousIndex, options.buffer);
    for (const row of recent) buffer.add(buffered(row));
    return buffer;
  }

  function buffered(row: LoggedChangeSet): BufferedChangeSet {
    return { index: row.index, firstSeq: row.firstSeq, changes: row.changes!, at: Number.isNaN(row.at) ? now() : row.at };
  }

  /** A controller that does not lead: its sets are the leader's, read from the log; the full state is its own read. */
  async function follow(shared: ChangeSetLog): Promise<ModelState> {
    const logHead = (await shared.head()) ?? BigInt(Math.max(await head(), await trimmedThrough()));
    const buffer = await replayable(shared, logHead);
    const full = await readModel();
    const body = encode('edge.DataState', { events: full.events, endIndex: logHead, timelineId });
    log.info({ index: String(logHead), events: full.events.length, bytes: body.length, replayable: buffer.size() }, 'router data model loaded from the shared log');
    return { buffer, position: Number(logHead), full: { index: logHead, keys: full.keys, body, events: full.events.length, since: [], sinceBytes: 0 } };
  }

  /** Reading the shared log: its new rows become this process's change sets. */
  async function advanceShared(s: ModelState, shared: ChangeSetLog): Promise<'same' | 'moved' | 'restarted'> {
    if (shared.leads()) {
      log.info({}, 'this process leads the network now: router data model built here from now on');
      state = await load();
      return 'restarted';
    }
    const mark = store.commitMark?.();
    if (mark !== undefined && s.readAt === mark) return 'same';
    const rows = await shared.after(BigInt(s.position));
    s.readAt = mark;
    let moved = false;
    for (const row of rows) {
      if (!row.changes || row.previousIndex !== s.buffer.current) {
        log.info({ index: String(row.index), previous: String(row.previousIndex), at: String(s.buffer.current) }, 'the shared change-set log restarted: router data model loaded again');
        state = await load();
        return 'restarted';
      }
      const set = buffered(row);
      s.buffer.add(set);
      keepWithFullState(s, set);
      s.position = Number(row.index);
      moved = true;
    }
    return moved ? 'moved' : 'same';
  }

  /** Applies the feed rows above the position. Returns whether the model moved or restarted. */
  async function advance(s: ModelState): Promise<'same' | 'moved' | 'restarted'> {
    const shared = options.shared;
    if (shared && !s.builder) return advanceShared(s, shared);
    if (shared && !shared.leads()) {
      log.info({}, 'this process no longer leads the network: router data model read from the shared log');
      state = await load();
      return 'restarted';
    }
    const builder = s.builder!;
    const mark = store.commitMark?.();
    if (mark !== undefined && s.readAt === mark) return 'same';
    const top = await head();
    if (top <= s.position) {
      s.readAt = mark;
      return 'same';
    }
    if ((await trimmedThrough()) > s.position) {
      log.warn({ position: s.position }, 'router data model missed trimmed change-feed rows, loading it again');
      state = await load();
      return 'restarted';
    }
    const rows = (
      await store.all<{ seq: number; kind: string; entity_id: string; op: string }>(
        `SELECT seq, kind, entity_id, op FROM change_feed WHERE seq > ? AND seq <= ? AND kind IN (${KIND_LIST}) ORDER BY seq`,
        [s.position, top],
      )
    ).map((r): FeedRow => ({ seq: r.seq, kind: r.kind, entityId: r.entity_id, op: r.op }));
    if (rows.length === 0) {
      s.position = top;
      s.readAt = mark;
      return 'same';
    }
    // The access index up to the rows (at least), then the entities they name in one snapshot.
    await access.catchUp();
    const result = await store.snapshot((q) => builder.apply(rows, q));
    s.position = top;
    s.readAt = mark;
    if (result.kind === 'none') return 'same';
    if (result.kind === 'reset') {
      log.info({ position: top }, 'access index rebuilt, loading the router data model again');
      state = await load();
      return 'restarted';
    }
    const set: BufferedChangeSet = {
      index: BigInt(result.lastSeq),
      firstSeq: BigInt(result.firstSeq),
      changes: encode('edge.DataState.ChangeSet', { changes: result.changes }),
      at: now(),
    };
    if (shared && !(await shared.append({ index: set.index, previousIndex: s.buffer.current, firstSeq: set.firstSeq, changes: set.changes }))) {
      log.warn({ index: String(set.index) }, 'another process appended to the shared change-set log: router data model loaded again');
      state = await load();
      return 'restarted';
    }
    s.buffer.add(set);
    keepWithFullState(s, set);
    log.debug({ index: String(set.index), events: result.changes.length }, 'router data model changed');
    return 'moved';
  }

  /** A new change set goes with the kept full state; past the share, the state is dropped (read at next need). */
  function keepWithFullState(s: ModelState, set: BufferedChangeSet): void {
    const full = s.full;
    if (!full) return;
    full.since.push(set);
    full.sinceBytes += set.changes.length;
    if (full.sinceBytes > Math.max(replayMinBytes, full.body.length * replayShare)) {
      log.debug({ index: String(full.index), sets: full.since.length, bytes: full.sinceBytes }, 'router data model: kept full state dropped, changes since outweigh it');
      s.full = undefined;
    }
  }

  /** The kept full state, or one read now at the current index (after `advance`). */
  async function fullState(s: ModelState): Promise<KeptFullState> {
    if (s.full && s.full.keys === options.controllerKeys()) return s.full;
    const full = await readModel();
    const index = s.buffer.current;
    const body = encode('edge.DataState', { events: full.events, endIndex: index, timelineId });
    log.info({ index: String(index), events: full.events.length, bytes: body.length }, 'router data model: full state read again');
    s.full = { index, keys: full.keys, body, events: full.events.length, since: [], sinceBytes: 0 };
    return s.full;
  }

  function changeSetMessage(set: BufferedChangeSet, previousIndex: bigint, subscriptionId: string): ChannelMessage {
    const head = encode('edge.DataState.ChangeSet', { index: set.index, previousIndex });
    return message(EdgeContentType.DataStateChangeSet, Buffer.concat([head, set.changes]), [[EdgeHeader.RouterDataModelSubscriptionId, stringValue(subscriptionId)]]);
  }

  /** Brings one subscription up to the current index. */
  async function sync(s: ModelState, sub: Subscription): Promise<void> {
    const send = senders.get(sub.routerId);
    if (!send) return;
    const plan = subscriptions.plan(sub, s.buffer);
    if (plan.kind === 'none') return;
    if (plan.kind === 'full') {
      const full = await fullState(s);
      // The body is shared by every router it goes to: the channel writes it as it is.
      send(message(EdgeContentType.DataState, full.body, [[EdgeHeader.RouterDataModelSubscriptionId, stringValue(sub.subscriptionId)]]));
      log.info(
        { routerId: sub.routerId, index: String(full.index), events: full.events, changeSetsAfter: full.since.length, routerIndex: String(sub.index) },
        'router data model: full state sent',
      );
      sub.index = full.index;
      sub.timelineId = timelineId;
      for (const set of full.since) {
        send(changeSetMessage(set, sub.index, sub.subscriptionId));
        sub.index = set.index;
      }
      return;
    }
    for (const set of plan.sets) {
      send(changeSetMessage(set, sub.index, sub.subscriptionId));
      sub.index = set.index;
    }
  }

  async function syncActive(s: ModelState): Promise<void> {
    for (const sub of subscriptions.active(now())) await sync(s, sub);
  }

  /** A router's SubscribeToDataModelRequest. */
  function subscribe(routerId: string, send: RouterSend, request: SubscribeRequest): Promise<void> {
    return serially(async () => {
      senders.set(routerId, send);
      if (!state) state = await load();
      else await advance(state);
      const s = state;
      await syncActive(s);
      const sub = subscriptions.request(routerId, request, now());
      log.info(
        { routerId, subscriptionId: request.subscriptionId, renew: request.renew, routerIndex: String(request.currentIndex), index: String(s.buffer.current), timelineMatches: request.timelineId === timelineId },
        'router data model subscription',
      );
      await sync(s, sub);
    });
  }

  /** The fabric's poll: new change sets to subscribed routers, the periodic index, expiry. */
  function poll(): Promise<void> {
    return serially(async () => {
      const t = now();
      if (subscriptions.size > 0) idleSince = t;
      // The leader of controllers sharing the store builds the sets for all of them, subscribed routers or not.
      const building = options.shared?.leads() === true;
      if (!state && building) state = await load();
      if (!state) return;
      if (building && t - lastTrim >= LOG_TRIM_INTERVAL_MS) {
        lastTrim = t;
        await options.shared!.trim(new Date(t - LOG_RETENTION_MS).toISOString());
      }
      if (!building && subscriptions.size === 0 && t - idleSince >= idleReleaseMs) {
        state = undefined;
        log.info({}, 'router data model released (no subscription)');
        return;
      }
      const moved = await advance(state);
      if (moved !== 'same') await syncActive(state!);
      state?.buffer.expire(t);
      if (t - lastIndexTick >= indexIntervalMs) {
        lastIndexTick = t;
        announceIndex();
      }
    });
  }

  /** CurrentIndexMessage to each router whose last one is behind. */
  function announceIndex(): void {
    if (!state) return;
    const current = state.buffer.current;
    for (const sub of subscriptions.all()) {
      if (current <= sub.announced) continue;
      const send = senders.get(sub.routerId);
      if (!send) continue;
      send(message(EdgeContentType.CurrentIndexMessage, Buffer.alloc(0), [[EdgeHeader.RouterDataModelIndex, uint64Value(current)]]));
      sub.announced = current;
    }
  }

  /**
   * The router's connection is gone: so is its subscription. With `send`, only when the subscription still
   * belongs to that connection (a newer connection of the router may have subscribed already).
   */
  function routerGone(routerId: string, send?: RouterSend): Promise<void> {
    return serially(async () => {
      if (send && senders.get(routerId) !== send) return;
      subscriptions.remove(routerId);
      senders.delete(routerId);
    });
  }

  return {
    subscribe,
    poll,
    routerGone,
    /** The model's index (undefined before the first subscription). */
    currentIndex: (): bigint | undefined => state?.buffer.current,
    timelineId,
    subscription: (routerId: string) => subscriptions.get(routerId),
  };
}

export type RouterDataModel = ReturnType<typeof createRouterDataModel>;
