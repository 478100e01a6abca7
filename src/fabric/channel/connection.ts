/**
 * One control channel over a byte stream, after the hello: numbered sends, requests that wait for their
 * reply, dispatch by content type, and the channel's own duties (heartbeat echo, ping, liveness).
 *
 * Replies are matched to waiting requests by header 1; a reply nobody waits for (late, or sent to a plain
 * send) is dispatched by content type like any other message, as upstream's channel does. Handlers may be async
 * (they wait for the store); the read loop never waits for them. An ordered handler (the default) runs once the
 * ordered handlers of the messages before it on this channel have finished, so the messages of one router are
 * handled in arrival order, one at a time, as when every handler was synchronous; `serially` puts other work of
 * the channel's owner in the same line (the router's registration before its messages, its cleanup after them).
 * A concurrent handler (a circuit request, which waits for route results from routers) starts in the same order
 * but holds nobody up while it runs, so a handler that waits on another message stalls neither the connection
 * nor the handlers after it.
 *
 * Anything that breaks the framing closes this one connection; a handler that throws is logged and the
 * connection goes on (a bad protobuf body from a router is its own problem, not the controller's).
 *
 * What a router may cost is bounded (`admission.ts`): beyond its message rate or its queues the channel stops
 * reading the socket for a while ('slowed'), and a router that stays beyond them is disconnected ('overloaded',
 * then 'close'). Handler failures are logged at most once per FAILURE_LOG_MS with the count of the others.
 *
 * A large body (the data model's full state, tens of MB on a large network, the same bytes for every router) is
 * written from the caller's buffer in slices, the next one only once the stream has drained (`write` returned
 * false: wait for 'drain'), so it is never copied per channel and what a channel holds of it stays about one
 * slice; messages sent meanwhile wait behind it in order in an outbox. Other messages are small and go to the
 * stream at once, as the stream buffers them.
 */
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import {
  ChannelContentType,
  ChannelHeader,
  ChannelProtocolError,
  MessageDecoder,
  asReplyTo,
  boolValue,
  encodeMessage,
  encodeMessageHead,
  message,
  readUint64,
  replyFor,
  uint64Value,
  type ChannelMessage,
  type DecoderLimits,
} from './message.ts';
import { ChannelAdmission, DEFAULT_BOUNDS, type ChannelBounds, type ChannelLoad } from './admission.ts';

/**
 * After the hello: no message a router sends may exceed these. Upstream's channel reads any length (uint32); its
 * routers' largest messages are reports they do not split: connect events with every connected identity and
 * circuit confirmations with every idle circuit, about 100 bytes an entry (src/fabric/README.md). 16 MiB holds
 * those of 150,000 entries; the largest header value upstream's encodings allow is a byte map of 128 × 8 KiB.
 */
export const CHANNEL_LIMITS: DecoderLimits = { maxHeaders: 2 << 20, maxBody: 16 << 20 };

/** Handler failures of one channel are logged at most this often (a router sending garbage must not flood the log). */
const FAILURE_LOG_MS = 10_000;

/** Bytes queued for a peer beyond which it counts as gone (large bodies shared with other channels not counted). */
const MAX_UNSENT_BYTES = 256 << 20;

/** Bodies of at least this many bytes are written from the caller's buffer, in slices, never copied. */
export const SHARED_BODY_BYTES = 256 << 10;

/** A shared body is written this much at a time: what one channel has of it in the stream at most. */
export const BODY_SLICE_BYTES = 64 << 10;

/** Bytes waiting in the outbox: `owned` ones were encoded for this channel, the others (a large body) the caller's. */
interface Outgoing {
  bytes: Buffer;
  owned: boolean;
}

export interface ChannelTimings {
  /** How often the controller sends its own heartbeat. */
  heartbeatIntervalMs: number;
  /** No heartbeat answer (and nothing else received) for this long closes the channel. */
  unresponsiveMs: number;
  /** Default wait for a reply. */
  requestTimeoutMs: number;
}

export const DEFAULT_TIMINGS: ChannelTimings = { heartbeatIntervalMs: 10_000, unresponsiveMs: 90_000, requestTimeoutMs: 10_000 };

export type MessageHandler = (msg: ChannelMessage, channel: ControlChannel) => void | Promise<void>;

/**
 * `ordered` (default): the handler runs after the ordered handlers of earlier messages have finished, and the next
 * ones wait for it. `concurrent`: it starts after them too, but the messages after it do not wait for it.
 */
export type HandlerMode = 'ordered' | 'concurrent';

export interface ChannelLog {
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

interface Waiter {
  resolve(msg: ChannelMessage): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export class ChannelClosedError extends Error {
  override readonly name = 'ChannelClosedError';
}

export class ControlChannel extends EventEmitter<{ close: [reason: string]; slowed: [reason: string]; overloaded: [reason: string] }> {
  private readonly decoder = new MessageDecoder(CHANNEL_LIMITS);
  private readonly handlers = new Map<number, { handler: MessageHandler; mode: HandlerMode }>();
  /** Settles when the ordered work queued so far has finished; never rejects. */
  private orderedTail: Promise<void> = Promise.resolve();
  private readonly waiters = new Map<number, Waiter>();
  private nextSequence = 1;
  private lastReceivedAt = Date.now();
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private closedReason: string | undefined;
  /** Messages not yet handed to the stream, in order; `outboxOffset` bytes of the first one are written. */
  private readonly outbox: Outgoing[] = [];
  private outboxOffset = 0;
  /** Bytes of `owned` entries in the outbox. */
  private outboxOwned = 0;
  /** Since when a large body has waited for the stream to drain; undefined while it is not waiting. */
  private blockedSince: number | undefined;
  private readonly admission: ChannelAdmission;
  /** Messages whose (async) handlers have not finished, and their bytes. */
  private inboundMessages = 0;
  private inboundBytes = 0;
  /** Reading stopped by the admission; the timer asks it again. */
  private stopped = false;
  private pausedTimer: NodeJS.Timeout | undefined;
  private failures = { loggedAt: Number.NEGATIVE_INFINITY, unlogged: 0 };

  constructor(
    private readonly stream: Duplex,
    private readonly log: ChannelLog,
    private readonly timings: ChannelTimings = DEFAULT_TIMINGS,
    /** Bytes already read past the hello. */
    leftover?: Buffer,
    bounds: ChannelBounds = DEFAULT_BOUNDS,
  ) {
    super();
    this.admission = new ChannelAdmission(bounds, performance.now());
    stream.on('data', (chunk: Buffer) => this.receive(chunk));
    stream.on('error', (err) => this.close(`connection error: ${err.message}`));
    stream.on('close', () => this.close('connection closed by peer'));
    stream.on('end', () => this.close('connection ended by peer'));
    this.heartbeatTimer = setInterval(() => this.tick(), timings.heartbeatIntervalMs);
    this.heartbeatTimer.unref();
    if (leftover && leftover.length > 0) queueMicrotask(() => this.receive(leftover));
  }

  get closed(): boolean {
    return this.closedReason !== undefined;
  }

  /** Handles messages of this content type (replies nobody waits for included). */
  handle(contentType: number, handler: MessageHandler, mode: HandlerMode = 'ordered'): this {
    this.handlers.set(contentType, { handler, mode });
    return this;
  }

  /**
   * Runs `work` in line with the ordered handlers: after everything queued before it (messages received,
   * other work) has finished, and before anything queued after it. Its failure is the caller's (the promise
   * returned); the line goes on either way. Work queued after `close` still runs.
   */
  serially<T>(work: () => T | Promise<T>): Promise<T> {
    const done = this.orderedTail.then(work);
    this.orderedTail = done.then(
      () => undefined,
      () => undefined,
    );
    return done;
  }

  /**
   * Sends without waiting (after what is already waiting); returns the sequence used. Sends on a closed channel
   * are dropped. A body of SHARED_BODY_BYTES or more must not change until it is written: it is not copied.
   */
  send(msg: ChannelMessage): number {
    if (this.closed) return -1;
    msg.sequence = this.nextSequence++;
    if (this.nextSequence > 0x7fffffff) this.nextSequence = 1;
    if (msg.body.length >= SHARED_BODY_BYTES) {
      this.enqueue({ bytes: encodeMessageHead(msg), owned: true });
      this.enqueue({ bytes: msg.body, owned: false });
      this.flush();
    } else if (this.outbox.length === 0) {
      this.stream.write(encodeMessage(msg));
    } else {
      this.enqueue({ bytes: encodeMessage(msg), owned: true });
    }
    // A peer that stops reading must not make the controller buffer without bound.
    const unsent = this.unsentOwnedBytes;
    if (unsent > MAX_UNSENT_BYTES) this.close(`peer is not reading (${unsent} bytes unsent)`);
    return msg.sequence;
  }

  /** Bytes encoded for this channel and not yet taken by the peer (of a shared body, at most the slice in the stream). */
  private get unsentOwnedBytes(): number {
    return this.stream.writableLength + this.outboxOwned;
  }

  /** Whether reading is stopped because the peer is over its bounds. */
  get paused(): boolean {
    return this.stopped;
  }

  /** Bytes sent but not yet taken by the stream (a shared body counts with what is left of it). */
  get pendingBytes(): number {
    let n = this.stream.writableLength - this.outboxOffset;
    for (const o of this.outbox) n += o.bytes.length;
    return n;
  }

  private enqueue(out: Outgoing): void {
    this.outbox.push(out);
    if (out.owned) this.outboxOwned += out.bytes.length;
  }

  /** Hands the outbox to the stream: small entries at once, a large body a slice per drained stream. */
  private flush(): void {
    while (this.outbox.length > 0 && this.blockedSince === undefined && !this.closed) {
      const first = this.outbox[0]!;
      if (first.owned) {
        this.outbox.shift();
        this.outboxOwned -= first.bytes.length;
        this.stream.write(first.bytes);
        continue;
      }
      if (this.stream.writableNeedDrain) {
        this.awaitDrain();
        return;
      }
      const end = Math.min(first.bytes.length, this.outboxOffset + BODY_SLICE_BYTES);
      const slice = first.bytes.subarray(this.outboxOffset, end);
      if (end === first.bytes.length) {
        this.outbox.shift();
        this.outboxOffset = 0;
      } else {
        this.outboxOffset = end;
      }
      this.stream.write(slice);
    }
  }

  private awaitDrain(): void {
    this.blockedSince = Date.now();
    this.stream.once('drain', () => {
      this.blockedSince = undefined;
      this.flush();
    });
  }

  /** Sends `msg` as the reply to `request`. */
  reply(request: ChannelMessage, msg: ChannelMessage): void {
    this.send(asReplyTo(request, msg));
  }

  /** A channel result (content type 2) answering `request`. */
  result(request: ChannelMessage, success: boolean, text = ''): void {
    this.reply(request, message(ChannelContentType.Result, text, [[ChannelHeader.ResultSuccess, boolValue(success)]]));
  }

  /** Sends and waits for the reply. */
  request(msg: ChannelMessage, timeoutMs = this.timings.requestTimeoutMs): Promise<ChannelMessage> {
    if (this.closed) return Promise.reject(new ChannelClosedError(this.closedReason));
    return new Promise((resolve, reject) => {
      const sequence = this.nextSequence;
      const timer = setTimeout(() => {
        this.waiters.delete(sequence);
        reject(new Error(`no reply to content type ${msg.contentType} within ${timeoutMs} ms`));
      }, timeoutMs);
      timer.unref();
      this.waiters.set(sequence, { resolve, reject, timer });
      this.send(msg);
    });
  }

  close(reason: string): void {
    if (this.closedReason !== undefined) return;
    this.closedReason = reason;
    clearInterval(this.heartbeatTimer);
    clearTimeout(this.pausedTimer);
    this.pausedTimer = undefined;
    for (const [, waiter] of this.waiters) {
      clearTimeout(waiter.timer);
      waiter.reject(new ChannelClosedError(reason));
    }
    this.waiters.clear();
    this.outbox.length = 0;
    this.outboxOwned = 0;
    this.stream.destroy();
    this.emit('close', reason);
  }

  private receive(chunk: Buffer): void {
    if (this.closed) return;
    let messages: ChannelMessage[];
    try {
      messages = this.decoder.push(chunk);
    } catch (err) {
      const reason = err instanceof ChannelProtocolError ? `protocol error: ${err.message}` : `decode failure: ${(err as Error).message}`;
      this.log.warn({ reason }, 'closing control channel');
      this.close(reason);
      return;
    }
    this.lastReceivedAt = Date.now();
    if (messages.length === 0) return;
    this.admission.received(messages.length, performance.now());
    for (const msg of messages) this.dispatch(msg);
    this.regulate();
  }

  private load(): ChannelLoad {
    return { inboundMessages: this.inboundMessages, inboundBytes: this.inboundBytes, outboundBytes: this.unsentOwnedBytes };
  }

  /** Reads on, stops reading for a while, or ends the channel, as the admission decides for the load now. */
  private regulate(): void {
    if (this.closed) return;
    const verdict = this.admission.assess(this.load(), performance.now());
    if (verdict.action === 'disconnect') {
      this.emit('overloaded', verdict.reason);
      this.close(verdict.reason);
      return;
    }
    clearTimeout(this.pausedTimer);
    this.pausedTimer = undefined;
    if (verdict.action === 'read') {
      if (this.stopped) this.stream.resume();
      this.stopped = false;
      return;
    }
    if (verdict.slowed) this.emit('slowed', verdict.reason);
    this.stopped = true;
    this.stream.pause();
    this.pausedTimer = setTimeout(() => {
      this.pausedTimer = undefined;
      this.regulate();
    }, verdict.ms);
  }

  private dispatch(msg: ChannelMessage): void {
    const beat = msg.headers.get(ChannelHeader.Heartbeat);
    if (beat && readUint64(beat) !== undefined) {
      // The peer measures our responsiveness by this echo: answer at once, on its own message.
      this.send(message(ChannelContentType.Heartbeat, Buffer.alloc(0), [[ChannelHeader.HeartbeatResponse, beat]]));
    }
    if (msg.contentType === ChannelContentType.Heartbeat) return;
    if (msg.contentType === ChannelContentType.Ping) {
      this.result(msg, true);
      return;
    }
    const answers = replyFor(msg);
    if (answers !== undefined) {
      const waiter = this.waiters.get(answers);
      if (waiter) {
        this.waiters.delete(answers);
        clearTimeout(waiter.timer);
        waiter.resolve(msg);
        return;
      }
    }
    const entry = this.handlers.get(msg.contentType);
    if (!entry) {
      this.log.debug({ contentType: msg.contentType }, 'ignoring control message of unhandled content type');
      return;
    }
    const { handler, mode } = entry;
    const failed = (err: unknown) => this.handlerFailed(msg.contentType, err);
    const done = this.orderedTail.then(() => handler(msg, this)).catch(failed);
    if (mode === 'ordered') this.orderedTail = done;
    this.track(msg, done);
  }

  /** Counts a message as waiting for its handler until `done` settles. */
  private track(msg: ChannelMessage, done: Promise<void>): void {
    const bytes = msg.body.length + [...msg.headers.values()].reduce((n, v) => n + v.length, 0);
    this.inboundMessages++;
    this.inboundBytes += bytes;
    void done.finally(() => {
      this.inboundMessages--;
      this.inboundBytes -= bytes;
      if (this.paused) this.regulate();
    });
  }

  private handlerFailed(contentType: number, err: unknown): void {
    const now = performance.now();
    if (now - this.failures.loggedAt < FAILURE_LOG_MS) {
      this.failures.unlogged++;
      return;
    }
    this.log.warn({ contentType, err: (err as Error)?.message, failuresNotLogged: this.failures.unlogged }, 'control message handler failed');
    this.failures = { loggedAt: now, unlogged: 0 };
  }

  private tick(): void {
    if (this.closed) return;
    // While reading is stopped the peer's messages wait unread: its silence is ours.
    if (this.paused) this.lastReceivedAt = Date.now();
    if (Date.now() - this.lastReceivedAt > this.timings.unresponsiveMs) {
      this.close(`no message for ${this.timings.unresponsiveMs} ms`);
      return;
    }
    // A peer that keeps sending but takes nothing holds what waits for it (a shared full state included).
    if (this.blockedSince !== undefined && Date.now() - this.blockedSince > this.timings.unresponsiveMs) {
      this.close(`peer took nothing for ${this.timings.unresponsiveMs} ms (${this.pendingBytes} bytes unsent)`);
      return;
    }
    this.send(message(ChannelContentType.Heartbeat, Buffer.alloc(0), [[ChannelHeader.Heartbeat, uint64Value(BigInt(Date.now()) * 1_000_000n)]]));
  }
}
