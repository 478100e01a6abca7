/**
 * What one router may cost the controller on its control channel, as decisions over the channel's load: how many
 * messages a second it may send (a token bucket: a sustained rate and a burst), how much of what it sent may wait
 * for its handlers (messages and bytes), and how much may wait for it to read (bytes the controller encoded for it).
 * Beyond a bound the router is slowed first: the channel stops reading its socket (for as long as the excess takes
 * to pay back, or until the queues are below their bounds again), so it costs nothing while it waits. A router that
 * stays over the message bounds for `maxSlowedMs` (it is never within them for `calmMs` in between), or takes none
 * of the bytes queued for it for `maxSlowedMs`, is disconnected. A router within its bounds is never slowed.
 *
 * Pure logic over the times given (milliseconds of any monotonic clock), so it is tested without sockets or sleeps.
 */

export interface ChannelBounds {
  /** Messages a second a router may send, sustained. */
  messagesPerSecond: number;
  /** Messages it may send at once above the sustained rate (a reconnect's terminators and reports). */
  messageBurst: number;
  /** Messages received whose handlers have not finished (circuit requests waiting for routes)... */
  maxInboundMessages: number;
  /** ...and their bytes. */
  maxInboundBytes: number;
  /** Bytes encoded for the router and not yet taken by it (a shared full state not counted). */
  maxOutboundBytes: number;
  /** How long a router may stay over its bounds, slowed, before it is disconnected. */
  maxSlowedMs: number;
  /** Within its bounds for this long, a slowed router is no longer counted as slowed. */
  calmMs: number;
}

/** The bounds of every router's control channel; the reasons for each figure are in src/fabric/README.md. */
export const DEFAULT_BOUNDS: ChannelBounds = {
  messagesPerSecond: 10_000,
  messageBurst: 10_000,
  maxInboundMessages: 1_000,
  maxInboundBytes: 32 << 20,
  maxOutboundBytes: 8 << 20,
  maxSlowedMs: 10_000,
  calmMs: 1_000,
};

/** How often a channel paused for its queues looks again (they also shrink without a message arriving). */
export const RECHECK_MS = 100;

export interface ChannelLoad {
  inboundMessages: number;
  inboundBytes: number;
  outboundBytes: number;
}

export type AdmissionVerdict =
  | { action: 'read' }
  /** Stop reading for `ms`, then ask again; `slowed` is set when this starts a slowdown (once per episode). */
  | { action: 'pause'; ms: number; reason: string; slowed: boolean }
  | { action: 'disconnect'; reason: string };

export class ChannelAdmission {
  private tokens: number;
  private refilledAt: number;
  /** When the current slowdown began (over the message bounds); undefined while the router is within them. */
  private slowedSince: number | undefined;
  private lastOverAt = Number.NEGATIVE_INFINITY;
  /** While the outbound backlog is over its bound: since when it has not shrunk, and its least size meanwhile. */
  private outboundStall: { since: number; least: number } | undefined;

  constructor(
    readonly bounds: ChannelBounds,
    now: number,
  ) {
    this.tokens = bounds.messageBurst;
    this.refilledAt = now;
  }

  /** Counts messages received (they are handled; the excess is paid back by the pause that follows). */
  received(count: number, now: number): void {
    this.refill(now);
    this.tokens -= count;
  }

  assess(load: ChannelLoad, now: number): AdmissionVerdict {
    this.refill(now);
    const b = this.bounds;
    let over: { reason: string; ms: number } | undefined;
    if (this.tokens < 0) {
      over = { reason: `sent more than ${b.messagesPerSecond} messages a second`, ms: Math.ceil((-this.tokens / b.messagesPerSecond) * 1000) };
    } else if (load.inboundMessages > b.maxInboundMessages || load.inboundBytes > b.maxInboundBytes) {
      over = { reason: `${load.inboundMessages} messages (${load.inboundBytes} bytes) waiting to be handled, more than ${b.maxInboundMessages} (${b.maxInboundBytes} bytes)`, ms: RECHECK_MS };
    }

    // Within the bounds since calmMs (whether or not anything was assessed meanwhile): the slowdown is over.
    if (this.slowedSince !== undefined && now - this.lastOverAt >= b.calmMs) this.slowedSince = undefined;
    let startsSlowdown = false;
    if (over) {
      // Over the rate until the excess is paid back, whenever it sends next.
      this.lastOverAt = now + over.ms;
      startsSlowdown = this.slowedSince === undefined;
      this.slowedSince ??= now;
      if (now - this.slowedSince > b.maxSlowedMs) return { action: 'disconnect', reason: `${over.reason} for ${b.maxSlowedMs / 1000} s` };
    }

    const outbound = this.assessOutbound(load.outboundBytes, now);
    if (outbound?.action === 'disconnect') return outbound;
    if (over) return { action: 'pause', ms: Math.max(over.ms, outbound ? RECHECK_MS : 0), reason: over.reason, slowed: startsSlowdown };
    return outbound ?? { action: 'read' };
  }

  /** Whether the router is counted as slowed now (over its message bounds, not yet calm again). */
  get slowed(): boolean {
    return this.slowedSince !== undefined;
  }

  /**
   * Answers it does not read make the controller buffer: reading stops while the backlog is over its bound (the
   * router gets nothing more answered); a backlog that does not shrink for `maxSlowedMs` ends the connection.
   */
  private assessOutbound(bytes: number, now: number): AdmissionVerdict | undefined {
    const b = this.bounds;
    if (bytes <= b.maxOutboundBytes) {
      this.outboundStall = undefined;
      return undefined;
    }
    if (!this.outboundStall || bytes < this.outboundStall.least) this.outboundStall = { since: now, least: bytes };
    if (now - this.outboundStall.since > b.maxSlowedMs) {
      return { action: 'disconnect', reason: `took none of the ${bytes} bytes queued for it (more than ${b.maxOutboundBytes}) for ${b.maxSlowedMs / 1000} s` };
    }
    return { action: 'pause', ms: RECHECK_MS, reason: `${bytes} bytes queued for it, more than ${b.maxOutboundBytes}`, slowed: false };
  }

  private refill(now: number): void {
    const b = this.bounds;
    this.tokens = Math.min(b.messageBurst, this.tokens + ((now - this.refilledAt) * b.messagesPerSecond) / 1000);
    this.refilledAt = now;
  }
}
