/**
 * The data-model subscriptions of the routers one process holds, and the change sets it can replay — as
 * decisions, without channels or a store (router-data-model.ts sends what they say).
 *
 * Following upstream's controller (controller/sync_strats/rtx.go): a request with `renew` and the subscription id
 * we have keeps that subscription and what we know of the router's index; any other request starts over from the
 * index and timeline the router names. The duration is clamped to 10..360 s; an expired subscription gets nothing
 * until it is renewed, and is then brought up to date. A router on another timeline, at index 0, at an index in
 * our future, or at one our buffer cannot replay from gets the full state; otherwise the change sets after its
 * index (none when it is current).
 *
 * The buffer keeps the recent change sets of this process (bounded by age, count and bytes). Each set records the
 * seqs of the first and last feed row it came from: its index is the last one, and the model did not change
 * between two sets. A router index X (ours or another process's, the index is the feed's seq everywhere) can be
 * replayed from when X is not older than the buffer and falls between sets, not inside one (then the router's
 * model is exactly ours before the next set; inside a set it may hold part of it, and only the full state is
 * safe). Each set a router gets names the index that router had as `previousIndex`, so its chain never shows a
 * gap that is not one.
 */

/** A change set as kept for replay: the encoded `changes` and where it came from. */
export interface BufferedChangeSet {
  index: bigint;
  /** Seq of the first feed row that went into it. */
  firstSeq: bigint;
  /** `edge.DataState.ChangeSet` bytes holding only the `changes` field. */
  changes: Buffer;
  at: number;
}

export interface ChangeSetBufferOptions {
  maxAgeMs?: number;
  maxSets?: number;
  maxBytes?: number;
}

export function createChangeSetBuffer(start: bigint, options: ChangeSetBufferOptions = {}) {
  const maxAgeMs = options.maxAgeMs ?? 10 * 60_000;
  const maxSets = options.maxSets ?? 2000;
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  const sets: BufferedChangeSet[] = [];
  let bytes = 0;
  /** The lowest index a replay may start from: the start, or the last set dropped. */
  let floor = start;
  /** The model's index: the newest set's, or the start. */
  let current = start;

  function evict(now: number): void {
    while (sets.length > 0 && (sets.length > maxSets || bytes > maxBytes || sets[0]!.at < now - maxAgeMs)) {
      const dropped = sets.shift()!;
      bytes -= dropped.changes.length;
      floor = dropped.index;
    }
  }

  return {
    get current(): bigint {
      return current;
    },
    get floor(): bigint {
      return floor;
    },
    add(set: BufferedChangeSet): void {
      if (set.index <= current) throw new Error(`change set ${set.index} does not follow ${current}`);
      sets.push(set);
      bytes += set.changes.length;
      current = set.index;
      evict(set.at);
    },
    /** Drops what has grown too old. */
    expire(now: number): void {
      evict(now);
    },
    /** The sets after `index`, or undefined when a replay from it is not possible (full state needed). */
    after(index: bigint): BufferedChangeSet[] | undefined {
      if (index < floor || index > current) return undefined;
      const out: BufferedChangeSet[] = [];
      for (let i = sets.length - 1; i >= 0; i--) {
        const set = sets[i]!;
        if (set.index <= index) break;
        if (set.firstSeq <= index) return undefined;
        out.push(set);
      }
      return out.reverse();
    },
    size: () => sets.length,
  };
}

export type ChangeSetBuffer = ReturnType<typeof createChangeSetBuffer>;

export interface SubscribeRequest {
  currentIndex: bigint;
  subscriptionDurationSeconds: number;
  renew: boolean;
  timelineId: string;
  subscriptionId: string;
}

export interface Subscription {
  routerId: string;
  subscriptionId: string;
  /** The timeline the router's model is on. */
  timelineId: string;
  /** The index of the router's model, as far as we know. */
  index: bigint;
  expiresAt: number;
  /** The last index announced with CurrentIndexMessage. */
  announced: bigint;
}

/** What a router needs: the full state, these change sets, or nothing. */
export type SyncPlan = { kind: 'full' } | { kind: 'replay'; sets: BufferedChangeSet[] } | { kind: 'none' };

export const MIN_SUBSCRIPTION_SECONDS = 10;
export const MAX_SUBSCRIPTION_SECONDS = 360;

export function createSubscriptions(timelineId: string) {
  const byRouter = new Map<string, Subscription>();

  /** Records a request (see the module comment) and returns the subscription it leaves. */
  function request(routerId: string, req: SubscribeRequest, now: number): Subscription {
    let sub = byRouter.get(routerId);
    if (!req.renew || !sub || sub.subscriptionId !== req.subscriptionId) {
      sub = { routerId, subscriptionId: req.subscriptionId, timelineId: req.timelineId, index: req.currentIndex, expiresAt: 0, announced: sub?.announced ?? 0n };
      byRouter.set(routerId, sub);
    }
    const seconds = Math.min(MAX_SUBSCRIPTION_SECONDS, Math.max(MIN_SUBSCRIPTION_SECONDS, req.subscriptionDurationSeconds));
    sub.expiresAt = now + seconds * 1000;
    return sub;
  }

  /** What the subscription needs to reach the buffer's current index. */
  function plan(sub: Subscription, buffer: ChangeSetBuffer): SyncPlan {
    if (sub.timelineId !== timelineId || sub.index === 0n) return { kind: 'full' };
    if (sub.index === buffer.current) return { kind: 'none' };
    const sets = buffer.after(sub.index);
    return sets ? { kind: 'replay', sets } : { kind: 'full' };
  }

  return {
    timelineId,
    request,
    plan,
    get: (routerId: string) => byRouter.get(routerId),
    remove: (routerId: string) => byRouter.delete(routerId),
    isActive: (sub: Subscription, now: number) => sub.expiresAt > now,
    /** Subscriptions that may be sent to now. */
    active(now: number): Subscription[] {
      return [...byRouter.values()].filter((s) => s.expiresAt > now);
    },
    all: (): Subscription[] => [...byRouter.values()],
    get size(): number {
      return byRouter.size;
    },
  };
}

export type Subscriptions = ReturnType<typeof createSubscriptions>;
