/**
 * Data-model subscriptions as upstream's controller keeps them (rtx.go): a renew keeps the subscription, a new
 * subscription at an index we can replay from gets only what it missed, anything else the full state; expired
 * subscriptions get nothing until renewed; the buffer of recent change sets is bounded; the current index is
 * announced every 30 s when it moved. The replay rule across processes: an index another process sent is
 * replayed from when it falls between two of our change sets. The full state is kept across changes: a router
 * that needs it gets it with the change sets since, until those outweigh their share of it.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createChangeSetBuffer, createSubscriptions } from '../../../src/fabric/data-model/subscriptions.ts';
import { Inbox, SimRouter, dataModel, identity, openStore, otherProcess, type Received, type Store } from './data-model-fixture.ts';

let store: Store;
before(async () => {
  store = await openStore();
});
after(() => store.close());

let t = 1_000_000_000;
const now = () => t;

function req(over: Partial<{ currentIndex: bigint; subscriptionDurationSeconds: number; renew: boolean; timelineId: string; subscriptionId: string }> = {}) {
  return { currentIndex: 0n, subscriptionDurationSeconds: 300, renew: false, timelineId: '', subscriptionId: 'sub-1', ...over };
}

describe('change-set buffer', () => {
  const set = (index: bigint, firstSeq: bigint, at = 0) => ({ index, firstSeq, changes: Buffer.alloc(10), at });

  it('replays from an index between sets, not from one inside a set, older than the buffer or in the future', () => {
    const buffer = createChangeSetBuffer(100n);
    buffer.add(set(105n, 103n));
    buffer.add(set(110n, 108n));
    assert.deepEqual(buffer.after(100n)?.map((s) => s.index), [105n, 110n]);
    assert.deepEqual(buffer.after(102n)?.map((s) => s.index), [105n, 110n], 'before the first row of a set: exact');
    assert.equal(buffer.after(104n), undefined, 'inside a set: the router may hold part of it');
    assert.deepEqual(buffer.after(105n)?.map((s) => s.index), [110n]);
    assert.deepEqual(buffer.after(107n)?.map((s) => s.index), [110n]);
    assert.deepEqual(buffer.after(110n), []);
    assert.equal(buffer.after(99n), undefined, 'older than the buffer');
    assert.equal(buffer.after(111n), undefined, 'in our future');
    assert.throws(() => buffer.add(set(110n, 110n)));
  });

  it('drops sets by count, bytes and age, and raises the replay floor with them', () => {
    const buffer = createChangeSetBuffer(0n, { maxSets: 2, maxAgeMs: 1000, maxBytes: 25 });
    buffer.add(set(1n, 1n, 0));
    buffer.add(set(2n, 2n, 0));
    buffer.add(set(3n, 3n, 0));
    assert.equal(buffer.size(), 2);
    assert.equal(buffer.floor, 1n);
    assert.equal(buffer.after(0n), undefined);
    assert.deepEqual(buffer.after(1n)?.map((s) => s.index), [2n, 3n]);
    buffer.expire(1500);
    assert.equal(buffer.size(), 0);
    assert.equal(buffer.floor, 3n);
    assert.deepEqual(buffer.after(3n), []);
  });
});

describe('subscriptions', () => {
  it('clamps durations to 10..360 s and keeps a renewed subscription with what we know of the router', () => {
    const subs = createSubscriptions('tl');
    const a = subs.request('r', req({ subscriptionDurationSeconds: 1 }), 0);
    assert.equal(a.expiresAt, 10_000);
    a.index = 50n;
    const b = subs.request('r', req({ renew: true, currentIndex: 7n, subscriptionDurationSeconds: 10_000 }), 0);
    assert.equal(b, a);
    assert.equal(b.index, 50n, 'a renew keeps the index we know');
    assert.equal(b.expiresAt, 360_000);
    const c = subs.request('r', req({ renew: true, subscriptionId: 'other', currentIndex: 7n }), 0);
    assert.notEqual(c, a, 'a renew of another subscription id starts over');
    assert.equal(c.index, 7n);
  });
});

describe('router data model subscriptions', () => {
  function setup(s = store) {
    const dm = dataModel(s, { now, indexIntervalMs: 30_000 });
    const inbox = new Inbox();
    const router = new SimRouter();
    const deliver = () => {
      const got = inbox.take();
      for (const r of got) router.receive(r);
      return got;
    };
    return { dm, inbox, router, deliver };
  }

  it('keeps a renewed subscription: nothing is resent, later sets carry the same id', async () => {
    const { dm, inbox, router, deliver } = setup();
    await dm.subscribe('r1', inbox.send, req({ subscriptionId: 'sub-a' }));
    assert.equal(deliver()[0]!.type, 'state');
    await dm.subscribe('r1', inbox.send, req({ subscriptionId: 'sub-a', renew: true, currentIndex: router.index, timelineId: router.timelineId }));
    assert.deepEqual(deliver(), []);
    await identity(store, 'renew-id');
    await dm.poll();
    const got = deliver();
    assert.equal(got.length, 1);
    assert.ok(got[0]!.type === 'changes' && got[0]!.subscriptionId === 'sub-a');
  });

  it('sends nothing to an expired subscription and replays what it missed when it is renewed', async () => {
    const { dm, inbox, router, deliver } = setup();
    await dm.subscribe('r1', inbox.send, req({ subscriptionDurationSeconds: 10 }));
    deliver();
    const before = router.index;
    t += 11_000;
    await identity(store, 'expired-1');
    await dm.poll();
    await identity(store, 'expired-2');
    await dm.poll();
    assert.deepEqual(deliver(), [], 'nothing while expired');
    await dm.subscribe('r1', inbox.send, req({ renew: true, currentIndex: before, timelineId: 'timeline-1' }));
    const got = deliver();
    assert.deepEqual(got.map((r) => r.type), ['changes', 'changes']);
    assert.equal(router.gaps, 0);
    assert.equal(router.index, dm.currentIndex());
  });

  it('gives a resubscribing router on our timeline only the change sets after its index', async () => {
    const { dm, inbox, router, deliver } = setup();
    await dm.subscribe('r1', inbox.send, req());
    deliver();
    const at = router.index;
    await identity(store, 'missed-1');
    await dm.poll();
    await dm.routerGone('r1');
    await identity(store, 'missed-2');
    await dm.poll();
    const again = new Inbox();
    await dm.subscribe('r1', again.send, req({ subscriptionId: 'sub-2', currentIndex: at, timelineId: 'timeline-1' }));
    const got = again.take();
    assert.deepEqual(got.map((r) => r.type), ['changes', 'changes']);
    assert.ok(got.every((r) => r.type === 'changes' && r.subscriptionId === 'sub-2'));
    for (const r of got) router.receive(r);
    assert.equal(router.gaps, 0);
    // Already current: nothing at all.
    const third = new Inbox();
    await dm.subscribe('r1', third.send, req({ subscriptionId: 'sub-3', currentIndex: router.index, timelineId: 'timeline-1' }));
    assert.deepEqual(third.take(), []);
  });

  it('sends the full state to another timeline, to index 0, to a future index and to one older than the buffer', async () => {
    const { dm, inbox } = setup();
    await dm.subscribe('r1', inbox.send, req());
    const current = dm.currentIndex()!;
    inbox.take();
    for (const r of [req({ subscriptionId: 'x1', currentIndex: current, timelineId: 'elsewhere' }), req({ subscriptionId: 'x2', currentIndex: 0n, timelineId: 'timeline-1' }), req({ subscriptionId: 'x3', currentIndex: current + 1000n, timelineId: 'timeline-1' }), req({ subscriptionId: 'x4', currentIndex: current - 1n, timelineId: 'timeline-1' })]) {
      await dm.subscribe('r1', inbox.send, r);
      const got = inbox.take();
      assert.equal(got.length, 1, r.subscriptionId);
      assert.ok(got[0]!.type === 'state' && got[0]!.subscriptionId === r.subscriptionId && got[0]!.state.endIndex === current);
    }
  });

  it('replays an index another process sent when it falls between our sets, else sends the full state', async () => {
    const other = await otherProcess(store);
    try {
      const a = setup(store);
      const b = setup(other);
      await a.dm.subscribe('r1', a.inbox.send, req());
      await b.dm.subscribe('r2', b.inbox.send, req());
      a.deliver();
      b.deliver();
      await identity(store, 'xp-1');
      await a.dm.poll();
      const afterFirst = a.dm.currentIndex()!;
      await identity(store, 'xp-2');
      await a.dm.poll();
      await b.dm.poll(); // one set for both rows on b
      const afterSecond = a.dm.currentIndex()!;
      assert.equal(b.dm.currentIndex(), afterSecond);

      const inside = new Inbox();
      await b.dm.subscribe('r3', inside.send, req({ subscriptionId: 's3', currentIndex: afterFirst, timelineId: 'timeline-1' }));
      const full = inside.take();
      assert.deepEqual(full.map((r) => r.type), ['state', 'changes'], 'an index inside one of our sets needs the full state (kept, with the set since)');
      const fromFull = new SimRouter();
      for (const r of full) fromFull.receive(r);
      assert.equal(fromFull.index, afterSecond);

      const between = new Inbox();
      await b.dm.subscribe('r4', between.send, req({ subscriptionId: 's4', currentIndex: afterSecond, timelineId: 'timeline-1' }));
      assert.deepEqual(between.take(), [], 'current on both');

      await identity(store, 'xp-3');
      await a.dm.poll();
      await b.dm.poll();
      const late = new Inbox();
      const router = new SimRouter();
      await a.dm.subscribe('r5', late.send, req({ subscriptionId: 's5' }));
      for (const r of late.take()) router.receive(r);
      await identity(store, 'xp-4');
      await b.dm.poll();
      await b.dm.subscribe('r5', late.send, req({ subscriptionId: 's6', currentIndex: router.index, timelineId: 'timeline-1' }));
      const got = late.take();
      assert.deepEqual(got.map((r) => r.type), ['changes']);
      for (const r of got) router.receive(r);
      assert.equal(router.gaps, 0);
    } finally {
      await other.close();
    }
  });

  it('announces the current index every 30 s when it moved', async () => {
    const { dm, inbox } = setup();
    await dm.subscribe('r1', inbox.send, req());
    inbox.take();
    t += 31_000;
    await dm.poll();
    const first = inbox.take();
    assert.deepEqual(first.map((r) => r.type), ['index']);
    assert.ok(first[0]!.type === 'index' && first[0]!.index === dm.currentIndex());
    t += 31_000;
    await dm.poll();
    assert.deepEqual(inbox.take(), [], 'not moved: not announced');
    await identity(store, 'announce');
    await dm.poll();
    inbox.take();
    t += 10_000;
    await dm.poll();
    assert.deepEqual(inbox.take(), [], 'not before 30 s');
    t += 21_000;
    await dm.poll();
    assert.deepEqual(inbox.take().map((r) => r.type), ['index']);
  });
});

describe('the kept full state', () => {
  /** A log that keeps the messages, to count how often the store was read for a full state. */
  function recordingLog() {
    const messages: string[] = [];
    const keep = (_: object, msg: string) => void messages.push(msg);
    return { log: { info: keep, warn: keep, debug: keep }, reads: () => messages.filter((m) => m === 'router data model: full state read again').length };
  }

  function modelOf(received: readonly Received[]): SimRouter {
    const router = new SimRouter();
    for (const r of received) router.receive(r);
    return router;
  }

  it('goes to routers that subscribe after changes with the change sets since it, which bring them to the current model', async () => {
    const { log, reads } = recordingLog();
    const dm = dataModel(store, { now, log });
    const first = new Inbox();
    await dm.subscribe('r1', first.send, req());
    const [loaded] = first.take();
    assert.ok(loaded?.type === 'state');
    const id = await identity(store, 'kept-1', ['kept']);
    await dm.poll();
    const pol = await store.policies.create({ name: 'kept-pol', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#kept'], serviceRoles: [] });
    await dm.poll();
    await store.identities.update(id, { name: 'kept-1-renamed' }, 'patch');
    await dm.poll();

    for (const [routerId, subscriptionId] of [['r2', 'late-1'], ['r3', 'late-2']] as const) {
      const late = new Inbox();
      await dm.subscribe(routerId, late.send, req({ subscriptionId }));
      const got = late.take();
      assert.deepEqual(got.map((r) => r.type), ['state', 'changes', 'changes', 'changes']);
      assert.ok(got[0]!.type === 'state' && got[0]!.state.endIndex === loaded.state.endIndex, 'the state as it was read');
      assert.ok(got.every((r) => r.type !== 'index' && r.subscriptionId === subscriptionId));
      const router = modelOf(got);
      assert.equal(router.gaps, 0);
      assert.equal(router.index, dm.currentIndex());
      assert.ok(router.policies.get(pol)!.identities.has(id));
      // A model that reads the store now gives the same.
      const fresh = new Inbox();
      await dataModel(store).subscribe('rx', fresh.send, req());
      assert.deepEqual(router.snapshot(), modelOf(fresh.take()).snapshot());
    }
    assert.equal(reads(), 0, 'the store was not read again for any of them');
  });

  it('is read again, at the current index and once, when the change sets since it outweigh their share of it', async () => {
    const { log, reads } = recordingLog();
    const dm = dataModel(store, { now, log, replayShare: 0, replayMinBytes: 0 });
    const first = new Inbox();
    await dm.subscribe('r1', first.send, req());
    first.take();
    await identity(store, 'outweigh-1');
    await dm.poll();
    for (const routerId of ['r2', 'r3']) {
      const late = new Inbox();
      await dm.subscribe(routerId, late.send, req({ subscriptionId: `sub-${routerId}` }));
      const got = late.take();
      assert.deepEqual(got.map((r) => r.type), ['state']);
      assert.ok(got[0]!.type === 'state' && got[0]!.state.endIndex === dm.currentIndex());
    }
    assert.equal(reads(), 1, 'read for the first router that needed it, kept for the next');
  });

  it('keeps its change sets when the replay buffer drops them', async () => {
    const dm = dataModel(store, { now, buffer: { maxSets: 1 } });
    const first = new Inbox();
    await dm.subscribe('r1', first.send, req());
    first.take();
    await identity(store, 'evicted-1');
    await dm.poll();
    await identity(store, 'evicted-2');
    await dm.poll();
    const late = new Inbox();
    await dm.subscribe('r2', late.send, req({ subscriptionId: 'sub-evicted' }));
    const got = late.take();
    assert.deepEqual(got.map((r) => r.type), ['state', 'changes', 'changes']);
    const router = modelOf(got);
    assert.equal(router.gaps, 0);
    assert.equal(router.index, dm.currentIndex());
  });
});
