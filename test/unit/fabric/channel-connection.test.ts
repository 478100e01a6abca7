/**
 * Sending on a control channel over a peer that reads slowly: a large body (the data model's full state) is written
 * from the caller's buffer in slices as the stream drains, never copied, so what the channel holds for one peer stays
 * one slice; messages sent meanwhile follow it in order; a peer that takes nothing for the unresponsive time is
 * closed while it still sends.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Duplex } from 'node:stream';
import { BODY_SLICE_BYTES, ControlChannel, SHARED_BODY_BYTES } from '../../../src/fabric/channel/connection.ts';
import { ChannelContentType, MessageDecoder, encodeMessage, message, type ChannelMessage } from '../../../src/fabric/channel/message.ts';

const silent = { warn() {}, debug() {} };
const HIGH_WATER = 16 * 1024;

/** The controller's end of a connection whose peer takes bytes only when `take` is called. */
class SlowPeer extends Duplex {
  readonly written: Buffer[] = [];
  private held: Array<{ chunk: Buffer; done: () => void }> = [];

  constructor() {
    super({ writableHighWaterMark: HIGH_WATER });
  }

  override _read(): void {}

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    this.held.push({ chunk, done });
  }

  /** Accepts what is being written now (one chunk at a time, as a socket would); returns its bytes. */
  accept(): number {
    const next = this.held.shift();
    if (!next) return 0;
    this.written.push(next.chunk);
    next.done();
    return next.chunk.length;
  }

  /** Accepts everything, until the channel has nothing more to write. */
  async drainAll(): Promise<void> {
    for (;;) {
      while (this.accept() > 0);
      await new Promise((r) => setImmediate(r));
      if (this.held.length === 0) return;
    }
  }

  messages(): ChannelMessage[] {
    return new MessageDecoder({ maxHeaders: 1 << 20, maxBody: 64 << 20 }).push(Buffer.concat(this.written));
  }
}

const timings = { heartbeatIntervalMs: 60_000, unresponsiveMs: 120_000, requestTimeoutMs: 1000 };

describe('control channel sends', () => {
  it('writes a large body from the caller\'s buffer in slices as the peer reads, and what follows after it', async () => {
    const peer = new SlowPeer();
    const channel = new ControlChannel(peer, silent, timings);
    const body = Buffer.alloc(20 * SHARED_BODY_BYTES, 7);
    body.write('the shared full state', 0);
    channel.send(message(20500, body, [[1026, Buffer.from('sub-1')]]));
    channel.send(message(20501, Buffer.from('a change set')));
    channel.send(message(ChannelContentType.Heartbeat, Buffer.alloc(0)));

    let largest = 0;
    let copies = 0;
    for (let i = 0; i < 10_000 && channel.pendingBytes > 0; i++) {
      largest = Math.max(largest, peer.writableLength);
      peer.accept();
      await new Promise((r) => setImmediate(r));
    }
    await peer.drainAll();
    for (const chunk of peer.written) if (chunk.length === BODY_SLICE_BYTES && chunk.buffer !== body.buffer) copies++;
    assert.ok(largest <= BODY_SLICE_BYTES + HIGH_WATER, `the stream never held more than a slice and a little (${largest} bytes)`);
    assert.equal(copies, 0, 'slices of the body are views of the caller\'s buffer');
    assert.ok(peer.written.filter((c) => c.buffer === body.buffer).length >= body.length / BODY_SLICE_BYTES);

    const got = peer.messages();
    assert.deepEqual(got.map((m) => m.contentType), [20500, 20501, ChannelContentType.Heartbeat]);
    assert.deepEqual(got.map((m) => m.sequence), [1, 2, 3]);
    assert.ok(got[0]!.body.equals(body));
    assert.equal(got[0]!.headers.get(1026)!.toString(), 'sub-1');
    assert.equal(got[1]!.body.toString(), 'a change set');
    channel.close('done');
  });

  it('writes small messages at once, in order, to a peer that reads slowly', async () => {
    const peer = new SlowPeer();
    const channel = new ControlChannel(peer, silent, timings);
    const sent: Buffer[] = [];
    for (let i = 0; i < 200; i++) {
      const body = Buffer.alloc(1000, i);
      sent.push(body);
      channel.send(message(20501, body));
    }
    await peer.drainAll();
    const got = peer.messages();
    assert.equal(got.length, 200);
    got.forEach((m, i) => assert.ok(m.body.equals(sent[i]!), `message ${i}`));
    assert.equal(channel.pendingBytes, 0);
    channel.close('done');
  });

  it('closes a peer that keeps sending but takes nothing for the unresponsive time', async () => {
    const peer = new SlowPeer();
    const channel = new ControlChannel(peer, silent, { heartbeatIntervalMs: 20, unresponsiveMs: 150, requestTimeoutMs: 1000 });
    const closed = new Promise<string>((resolve) => channel.once('close', resolve));
    channel.send(message(20500, Buffer.alloc(2 * SHARED_BODY_BYTES)));
    // The peer's heartbeats keep arriving; it just never reads.
    const beats = setInterval(() => peer.push(encodeMessage(message(ChannelContentType.Heartbeat, Buffer.alloc(0)))), 20);
    try {
      const reason = await closed;
      assert.match(reason, /took nothing for 150 ms/);
    } finally {
      clearInterval(beats);
    }
  });
});

describe('control channel bounds', () => {
  const small = { messagesPerSecond: 100_000, messageBurst: 100_000, maxInboundMessages: 10, maxInboundBytes: 1 << 20, maxOutboundBytes: 2048, maxSlowedMs: 300, calmMs: 100 };
  const ping = () => encodeMessage(message(ChannelContentType.Ping));

  it('stops reading while too many messages wait for their handlers, then disconnects the peer', async () => {
    const peer = new SlowPeer();
    const channel = new ControlChannel(peer, silent, timings, undefined, small);
    let started = 0;
    channel.handle(20218, () => {
      started++;
      return new Promise<void>(() => undefined);
    });
    const slowed = new Promise<string>((resolve) => channel.once('slowed', resolve));
    const overloaded = new Promise<string>((resolve) => channel.once('overloaded', resolve));
    const closed = new Promise<string>((resolve) => channel.once('close', resolve));
    peer.push(Buffer.concat(Array.from({ length: 12 }, () => encodeMessage(message(20218, Buffer.alloc(10))))));
    assert.match(await slowed, /12 messages \(120 bytes\) waiting to be handled, more than 10/);
    assert.equal(channel.paused, true);
    // Read no more while paused: these wait in the stream.
    peer.push(Buffer.concat(Array.from({ length: 5 }, () => encodeMessage(message(20218, Buffer.alloc(10))))));
    const reason = await overloaded;
    assert.match(reason, /^12 messages \(120 bytes\) waiting to be handled.* for 0.3 s/, "the five sent while reading was stopped were not read");
    assert.equal(await closed, reason);
    // A channel's messages are handled one after another: the first never ends, so the other eleven read wait in
    // its line (and count against the bounds above); the five sent while reading was stopped were never read.
    assert.equal(started, 1, 'one handler at a time, and nothing more was handled while reading was stopped');
  });

  it('stops reading while its answers pile up unread, and disconnects a peer that takes none of them', async () => {
    const peer = new SlowPeer();
    const channel = new ControlChannel(peer, silent, timings, undefined, small);
    const closed = new Promise<string>((resolve) => channel.once('close', resolve));
    peer.push(Buffer.concat(Array.from({ length: 200 }, ping)));
    await new Promise((r) => setImmediate(r));
    assert.equal(channel.paused, true, 'about 8 KiB of results wait for a peer that reads nothing');
    assert.match(await closed, /took none of the \d+ bytes queued for it \(more than 2048\) for 0.3 s/);
  });

  it('reads on once a slow peer took its answers', async () => {
    const peer = new SlowPeer();
    const channel = new ControlChannel(peer, silent, timings, undefined, small);
    peer.push(Buffer.concat(Array.from({ length: 200 }, ping)));
    await new Promise((r) => setImmediate(r));
    assert.equal(channel.paused, true);
    await peer.drainAll();
    while (channel.paused) await new Promise((r) => setTimeout(r, 20));
    peer.push(ping());
    await peer.drainAll();
    assert.equal(peer.messages().filter((m) => m.contentType === ChannelContentType.Result).length, 201);
    assert.equal(channel.closed, false);
    channel.close('done');
  });
});
