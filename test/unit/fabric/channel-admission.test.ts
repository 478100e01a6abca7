/**
 * The control channel's admission as decisions over time (no socket, no sleep): a router within its bounds is never
 * slowed; beyond its message rate it is paused for as long as the excess takes to pay back, and disconnected when it
 * stays beyond for `maxSlowedMs`; a slowdown ends once the router keeps within its bounds for `calmMs`; messages
 * waiting for their handlers and answers it does not read pause it too.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ChannelAdmission, RECHECK_MS, type ChannelBounds, type ChannelLoad } from '../../../src/fabric/channel/admission.ts';

const bounds: ChannelBounds = {
  messagesPerSecond: 100,
  messageBurst: 50,
  maxInboundMessages: 10,
  maxInboundBytes: 1000,
  maxOutboundBytes: 5000,
  maxSlowedMs: 2000,
  calmMs: 500,
};
const idle: ChannelLoad = { inboundMessages: 0, inboundBytes: 0, outboundBytes: 0 };

describe('control channel admission', () => {
  it('ok/never slows a router within its rate, bursts up to the burst included', () => {
    const a = new ChannelAdmission(bounds, 0);
    a.received(50, 0);
    assert.deepEqual(a.assess(idle, 0), { action: 'read' });
    // 90 a second for a minute, one message every 1/90 s.
    for (let t = 1000; t < 61_000; t += 1000 / 90) {
      a.received(1, t);
      assert.equal(a.assess(idle, t).action, 'read', `at ${t} ms`);
    }
    assert.equal(a.slowed, false);
  });

  it('error/pauses a router beyond its burst for as long as the excess takes to pay back', () => {
    const a = new ChannelAdmission(bounds, 0);
    a.received(80, 0);
    const v = a.assess(idle, 0);
    assert.equal(v.action, 'pause');
    assert.ok(v.action === 'pause' && v.ms === 300 && v.slowed, JSON.stringify(v));
    assert.match(v.action === 'pause' ? v.reason : '', /more than 100 messages a second/);
    // Paid back after 300 ms: reading goes on, and the slowdown is reported only once while it lasts.
    assert.equal(a.assess(idle, 300).action, 'read');
    a.received(10, 310);
    const again = a.assess(idle, 310);
    assert.ok(again.action === 'pause' && !again.slowed, JSON.stringify(again));
  });

  it('error/disconnects a router that stays beyond its rate for maxSlowedMs, naming the bound', () => {
    const a = new ChannelAdmission(bounds, 0);
    let t = 0;
    let verdict = a.assess(idle, t);
    // As fast as it may: every time reading resumes it sends twice what the pause paid back.
    while (verdict.action !== 'disconnect' && t < 10_000) {
      a.received(verdict.action === 'pause' ? Math.ceil((verdict.ms * bounds.messagesPerSecond) / 500) + 60 : 60, t);
      verdict = a.assess(idle, t);
      if (verdict.action === 'pause') t += verdict.ms;
      else t += 1;
    }
    assert.equal(verdict.action, 'disconnect');
    assert.ok(t > bounds.maxSlowedMs && t < 2 * bounds.maxSlowedMs, `disconnected after ${t} ms`);
    assert.match(verdict.action === 'disconnect' ? verdict.reason : '', /sent more than 100 messages a second for 2 s/);
  });

  it('ok/forgets a slowdown once the router kept within its bounds for calmMs', () => {
    const a = new ChannelAdmission(bounds, 0);
    a.received(80, 0);
    assert.equal(a.assess(idle, 0).action, 'pause');
    assert.equal(a.assess(idle, 300).action, 'read');
    assert.equal(a.slowed, true, 'not calm yet');
    assert.equal(a.assess(idle, 800).action, 'read');
    assert.equal(a.slowed, false);
    // A later burst starts a new slowdown, with its own clock, also when nothing was assessed in between.
    a.received(80, 1800);
    const v = a.assess(idle, 1800);
    assert.ok(v.action === 'pause' && v.slowed);
    assert.equal(a.assess(idle, 2100).action, 'read');
    a.received(80, 60_000);
    const later = a.assess(idle, 60_000);
    assert.ok(later.action === 'pause' && later.slowed, JSON.stringify(later));
  });

  it('error/pauses while too many messages wait for their handlers, and disconnects when they keep waiting', () => {
    const a = new ChannelAdmission(bounds, 0);
    const waiting = { inboundMessages: 11, inboundBytes: 100, outboundBytes: 0 };
    const v = a.assess(waiting, 0);
    assert.ok(v.action === 'pause' && v.ms === RECHECK_MS && v.slowed, JSON.stringify(v));
    assert.match(v.action === 'pause' ? v.reason : '', /11 messages \(100 bytes\) waiting to be handled/);
    assert.equal(a.assess({ ...waiting, inboundMessages: 3, inboundBytes: 2000 }, 100).action, 'pause', 'bytes count too');
    assert.equal(a.assess(idle, 200).action, 'read');
    // Waiting again after a calm while: a new slowdown, with its own clock (not counted from the first).
    for (let t = 1000; t <= 3000; t += RECHECK_MS) assert.equal(a.assess(waiting, t).action, 'pause');
    const end = a.assess(waiting, 3100);
    assert.equal(end.action, 'disconnect');
  });

  it('error/pauses while answers pile up unread, and disconnects when the router takes none of them for maxSlowedMs', () => {
    const a = new ChannelAdmission(bounds, 0);
    const v = a.assess({ ...idle, outboundBytes: 6000 }, 0);
    assert.ok(v.action === 'pause' && !v.slowed, JSON.stringify(v));
    // It reads, slowly: the backlog shrinks now and then, so it stays connected however long it takes.
    let backlog = 6000;
    for (let t = 0; t <= 10_000; t += RECHECK_MS) {
      if (t % 1000 === 0) backlog -= 50;
      assert.equal(a.assess({ ...idle, outboundBytes: backlog }, t).action, 'pause', `at ${t} ms`);
    }
    assert.equal(a.assess({ ...idle, outboundBytes: 4000 }, 10_100).action, 'read');
    // It stops reading: disconnected maxSlowedMs later.
    let t = 11_000;
    while (a.assess({ ...idle, outboundBytes: 6000 }, t).action === 'pause') t += RECHECK_MS;
    const end = a.assess({ ...idle, outboundBytes: 6000 }, t);
    assert.equal(end.action, 'disconnect');
    assert.equal(t - 11_000, 2100);
    assert.match(end.action === 'disconnect' ? end.reason : '', /took none of the 6000 bytes queued for it/);
  });
});
