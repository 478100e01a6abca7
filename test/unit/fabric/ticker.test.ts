/**
 * The fabric's ticker (src/fabric/ticker.ts): periodic runs that never overlap, woken sooner by commits, with woken
 * runs kept apart by a minimum gap. Timers and the clock are mocked: every step is exact.
 */
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import assert from 'node:assert/strict';
import { everyInterval, type Ticker } from '../../../src/fabric/ticker.ts';

/** A run that stays in flight until `finish()`: records when each started. */
function controlledRun() {
  const starts: number[] = [];
  let finishCurrent: (() => void) | undefined;
  return {
    starts,
    run: () =>
      new Promise<void>((resolve) => {
        starts.push(Date.now());
        finishCurrent = resolve;
      }),
    async finish(): Promise<void> {
      const f = finishCurrent;
      finishCurrent = undefined;
      f?.();
      // Let the ticker's continuation run.
      await Promise.resolve();
      await Promise.resolve();
    },
  };
}

describe('fabric ticker', () => {
  let ticker: Ticker | undefined;
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 1_000_000 }));
  afterEach(() => {
    ticker?.stop();
    mock.timers.reset();
  });

  it('runs at each interval and skips a tick while a run is in flight', async () => {
    const r = controlledRun();
    ticker = everyInterval(100, r.run);
    mock.timers.tick(100);
    assert.equal(r.starts.length, 1);
    mock.timers.tick(100); // still in flight: skipped
    assert.equal(r.starts.length, 1);
    await r.finish();
    mock.timers.tick(100);
    assert.equal(r.starts.length, 2);
  });

  it('runs at once when woken, and makes the wakes during a run one run after it', async () => {
    const r = controlledRun();
    ticker = everyInterval(3_600_000, r.run);
    ticker.wake();
    assert.equal(r.starts.length, 1, 'woken: runs without waiting for the interval');
    ticker.wake();
    ticker.wake();
    ticker.wake();
    assert.equal(r.starts.length, 1, 'never two at once');
    await r.finish();
    assert.equal(r.starts.length, 2, 'the wakes during the run: one run after it');
    await r.finish();
    assert.equal(r.starts.length, 2, 'and no more');
  });

  it('keeps woken runs at least the gap apart', async () => {
    const r = controlledRun();
    ticker = everyInterval(3_600_000, r.run, 20);
    ticker.wake();
    await r.finish();
    mock.timers.tick(5);
    ticker.wake();
    ticker.wake();
    assert.equal(r.starts.length, 1, 'too soon after the last start');
    mock.timers.tick(14);
    assert.equal(r.starts.length, 1);
    mock.timers.tick(1);
    assert.equal(r.starts.length, 2, 'at the gap: one run for both wakes');
    assert.equal(r.starts[1]! - r.starts[0]!, 20);
    await r.finish();
    mock.timers.tick(100);
    assert.equal(r.starts.length, 2);
  });

  it('runs nothing once stopped, woken or not', async () => {
    const r = controlledRun();
    ticker = everyInterval(100, r.run, 20);
    ticker.wake();
    await r.finish();
    ticker.wake(); // scheduled for the gap
    ticker.stop();
    mock.timers.tick(1_000);
    ticker.wake();
    assert.equal(r.starts.length, 1);
  });
});
