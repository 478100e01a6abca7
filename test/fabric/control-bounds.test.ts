/**
 * A misbehaving router can not hurt the controller: the control channel's deadlines and bounds against a scripted
 * router, on a controller started with short deadlines and small bounds (the same code as the defaults, scaled down
 * so nothing sleeps near a deadline): the hello within its time, nothing before the hello is answered, silence,
 * and the message rate (slowed first, then disconnected, with a log line naming the router). The queue bounds are
 * driven without a socket in test/unit/fabric/channel-connection.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController } from '../support/controller.ts';
import { connectRouter, dialControl, enrolledRouter, eventually, routerHello } from '../support/test-router.ts';
import { ChannelContentType, ChannelHeader, MessageDecoder, encodeMessage, message, readBool, uint64Value } from '../../src/fabric/channel/message.ts';
import type { ChannelBounds } from '../../src/fabric/channel/admission.ts';

interface LogLine {
  level: 'info' | 'warn';
  msg: string;
  obj: Record<string, unknown>;
}
const logged: LogLine[] = [];
const log = {
  info: (obj: object, msg: string) => void logged.push({ level: 'info', msg, obj: obj as Record<string, unknown> }),
  warn: (obj: object, msg: string) => void logged.push({ level: 'warn', msg, obj: obj as Record<string, unknown> }),
  debug: () => undefined,
};
const HELLO_TIMEOUT_MS = 300;
const SILENCE_MS = 1000;
const bounds: ChannelBounds = {
  messagesPerSecond: 500,
  messageBurst: 250,
  maxInboundMessages: 50,
  maxInboundBytes: 1 << 20,
  maxOutboundBytes: 256 << 10,
  maxSlowedMs: 1500,
  calmMs: 300,
};
const tc = await startTestController({
  start: { fabric: { log, bounds, helloTimeoutMs: HELLO_TIMEOUT_MS, timings: { heartbeatIntervalMs: 100, unresponsiveMs: SILENCE_MS, requestTimeoutMs: 10_000 } } },
});

function linesAbout(routerId: string, msg: RegExp): LogLine[] {
  return logged.filter((l) => l.obj.routerId === routerId && msg.test(l.msg));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('control channel deadlines', () => {
  it('closes a connection that sends no hello within the hello timeout, and logs why', async () => {
    const router = await enrolledRouter(tc);
    const conn = await dialControl(tc, { cert: router.certPem, key: router.keyPem });
    const started = performance.now();
    await conn.waitClosed(HELLO_TIMEOUT_MS + 5000);
    assert.ok(performance.now() - started >= HELLO_TIMEOUT_MS - 20, 'not before the timeout');
    assert.ok(logged.some((l) => l.msg === 'control channel refused' && l.obj.reason === `no hello within ${HELLO_TIMEOUT_MS} ms`));
  });

  it('refuses a router that sends messages before its hello is answered', async () => {
    const router = await enrolledRouter(tc);
    const conn = await dialControl(tc, { cert: router.certPem, key: router.keyPem });
    const early = message(ChannelContentType.Ping);
    early.sequence = 1;
    conn.writeRaw(Buffer.concat([encodeMessage(routerHello(router.id)), encodeMessage(early)]));
    const result = await conn.nextOf(ChannelContentType.Result);
    assert.equal(readBool(result.headers.get(ChannelHeader.ResultSuccess)), false);
    assert.match(result.body.toString(), /messages sent before the hello was answered/);
    await conn.waitClosed();
    assert.equal((await tc.mgmt.get(`/edge-routers/${router.id}`)).body.data.isOnline, false);
  });

  it('closes a router silent for the unresponsive time, and keeps one that sends heartbeats', async () => {
    const quiet = await enrolledRouter(tc, 'transit');
    const chatty = await enrolledRouter(tc, 'transit');
    // The quiet router's silence starts with its hello: measured from before it connects, so the bound below holds
    // however long the second connection takes.
    const started = performance.now();
    const q = await connectRouter(tc, quiet);
    const c = await connectRouter(tc, chatty);
    const beats = setInterval(() => c.conn.send(message(ChannelContentType.Heartbeat, Buffer.alloc(0), [[ChannelHeader.Heartbeat, uint64Value(1n)]])), SILENCE_MS / 5);
    try {
      await q.conn.waitClosed(SILENCE_MS + 5000);
      assert.ok(performance.now() - started >= SILENCE_MS - 20, 'not before the unresponsive time');
      await eventually(() => linesAbout(quiet.id, /^router disconnected$/).length > 0, 'the disconnect is logged');
      assert.match(String(linesAbout(quiet.id, /^router disconnected$/)[0]!.obj.reason), new RegExp(`no message for ${SILENCE_MS} ms`));
      // Well past the unresponsive time (not near it), the router that keeps talking is still connected.
      await sleep(2.5 * SILENCE_MS - (performance.now() - started));
      assert.equal(c.conn.closed, false);
      const seq = c.conn.send(message(ChannelContentType.Ping));
      assert.equal((await c.conn.replyTo(seq)).contentType, ChannelContentType.Result);
    } finally {
      clearInterval(beats);
      c.conn.close();
    }
  });
});

describe('control channel bounds', () => {
  it('slows a router that sends messages faster than its rate, then disconnects it with a log line naming it', async () => {
    const router = await enrolledRouter(tc, 'transit');
    const { conn } = await connectRouter(tc, router);
    let answered = 0;
    const decoder = new MessageDecoder({ maxHeaders: 1 << 20, maxBody: 1 << 20 });
    conn.socket.on('data', (chunk: Buffer) => {
      for (const m of decoder.push(chunk)) if (m.contentType === ChannelContentType.Result) answered++;
    });
    // Pings as fast as the socket takes them, a thousand to a write.
    const batch = () => {
      const out: Buffer[] = [];
      for (let i = 0; i < 1000; i++) out.push(encodeMessage(message(ChannelContentType.Ping)));
      return Buffer.concat(out);
    };
    const started = performance.now();
    let sent = 0;
    while (!conn.closed && performance.now() - started < 10_000) {
      sent += 1000;
      if (!conn.socket.write(batch())) await Promise.race([new Promise((r) => conn.socket.once('drain', r)), conn.waitClosed(10_000).catch(() => undefined)]);
    }
    const lasted = performance.now() - started;
    assert.ok(conn.closed, 'disconnected');
    assert.ok(lasted > bounds.maxSlowedMs, `slowed for a while first (${lasted.toFixed(0)} ms)`);
    // What it got answered is what the rate allows (the burst, the rate over its time, one read's worth more).
    const allowed = bounds.messageBurst + (bounds.messagesPerSecond * lasted) / 1000 + 1000;
    assert.ok(answered <= allowed, `${answered} answered of ${sent} sent in ${lasted.toFixed(0)} ms (at most ${allowed.toFixed(0)})`);
    assert.ok(answered > 0);

    await eventually(() => linesAbout(router.id, /over its control channel bounds for too long/).length > 0, 'the disconnect is logged');
    const slowed = linesAbout(router.id, /^router slowed/);
    assert.equal(slowed.length, 1, 'one slowdown, logged once');
    assert.equal(slowed[0]!.level, 'warn');
    assert.equal(slowed[0]!.obj.routerName, router.name);
    assert.match(String(slowed[0]!.obj.reason), /sent more than 500 messages a second/);
    const dropped = linesAbout(router.id, /over its control channel bounds for too long/)[0]!;
    assert.equal(dropped.level, 'warn');
    assert.equal(dropped.obj.routerName, router.name);
    assert.match(String(dropped.obj.reason), /sent more than 500 messages a second for 1.5 s/);
    assert.ok(logged.indexOf(slowed[0]!) < logged.indexOf(dropped), 'slowed before it was disconnected');
    await eventually(async () => (await tc.mgmt.get(`/transit-routers/${router.id}`)).body.data.isOnline === false, 'offline');
    // It may connect again (and is bounded again).
    const again = await connectRouter(tc, router);
    assert.equal(readBool(again.result.headers.get(ChannelHeader.ResultSuccess)), true);
    again.conn.close();
  });

  it('never slows a router that keeps within its rate', async () => {
    const router = await enrolledRouter(tc, 'transit');
    const { conn } = await connectRouter(tc, router);
    const started = performance.now();
    let answered = 0;
    // 40 % of the rate, in bursts of a tenth of the burst, for longer than a router may stay slowed.
    while (performance.now() - started < 2 * bounds.maxSlowedMs) {
      const seqs = Array.from({ length: bounds.messageBurst / 10 }, () => conn.send(message(ChannelContentType.Ping)));
      for (const seq of seqs) await conn.replyTo(seq);
      answered += seqs.length;
      await sleep((1000 * seqs.length) / (0.4 * bounds.messagesPerSecond));
    }
    assert.equal(conn.closed, false);
    assert.ok(answered >= 0.4 * bounds.messagesPerSecond * ((2 * bounds.maxSlowedMs) / 1000) * 0.8, `${answered} answered`);
    assert.deepEqual(linesAbout(router.id, /^router slowed/), []);
    conn.close();
  });
});
