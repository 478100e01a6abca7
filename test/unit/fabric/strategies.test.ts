/**
 * Terminator strategies: precedence first (required before default, never failed), then smart routing by path,
 * own and dynamic cost, weighted and uniform randomness, stickiness.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TerminatorStats, chooseTerminator, type Candidate } from '../../../src/fabric/strategies.ts';

function t(id: string, precedence = 'default', cost = 0, pathCost = 0): Candidate {
  return { id, precedence, cost, pathCost };
}

/** A deterministic sequence of "random" numbers in [0, 1). */
function sequence(...values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length]!;
}

describe('chooseTerminator', () => {
  it('keeps required hosts before default ones and never picks failed ones, whatever the strategy', () => {
    for (const strategy of ['smartrouting', 'weighted', 'random', 'sticky']) {
      assert.equal(chooseTerminator(strategy, [t('d', 'default', 0), t('r', 'required', 500), t('f', 'failed')])?.terminator.id, 'r', strategy);
      assert.equal(chooseTerminator(strategy, [t('f', 'failed')]), undefined, strategy);
      assert.equal(chooseTerminator(strategy, []), undefined, strategy);
    }
  });

  it('smart routing takes the least path, own and dynamic cost, at random among equals', () => {
    assert.equal(chooseTerminator('smartrouting', [t('near', 'default', 5, 0), t('far', 'default', 0, 10)])?.terminator.id, 'near');
    const stats = new TerminatorStats(() => 0);
    stats.circuitOpened('a');
    stats.circuitOpened('a');
    assert.equal(chooseTerminator('smartrouting', [t('a'), t('b', 'default', 3)], { stats })?.terminator.id, 'b', 'two open circuits cost more than 3');
    stats.circuitClosed('a');
    stats.circuitClosed('a');
    stats.failed('b');
    assert.equal(chooseTerminator('smartrouting', [t('a', 'default', 3), t('b')], { stats })?.terminator.id, 'a', 'a recent failure costs more');
    const picks = new Set([0, 0.5, 0.99].map((r) => chooseTerminator('smartrouting', [t('x'), t('y')], { random: () => r })?.terminator.id));
    assert.deepEqual([...picks].sort(), ['x', 'y']);
  });

  it('forgets failures after a while', () => {
    let now = 0;
    const stats = new TerminatorStats(() => now);
    stats.failed('a');
    assert.equal(stats.dynamicCost('a'), 20);
    now = 61_000;
    assert.equal(stats.dynamicCost('a'), 0);
  });

  it('weighted favours cheap hosts but reaches dear ones; random ignores cost', () => {
    const pool = [t('cheap', 'default', 0), t('dear', 'default', 9)];
    // Weights 1 and 0.1: the first 1/1.1 of the range picks the cheap host.
    assert.equal(chooseTerminator('weighted', pool, { random: sequence(0.5) })?.terminator.id, 'cheap');
    assert.equal(chooseTerminator('weighted', pool, { random: sequence(0.95) })?.terminator.id, 'dear');
    assert.equal(chooseTerminator('random', pool, { random: sequence(0.9) })?.terminator.id, 'dear');
    assert.equal(chooseTerminator('random', pool, { random: sequence(0.1) })?.terminator.id, 'cheap');
  });

  it('sticky keeps the host its token names while it is usable, and hands back a token', () => {
    const pool = [t('a', 'default', 0), t('b', 'default', 50)];
    assert.deepEqual(chooseTerminator('sticky', pool, { stickyToken: 'b' }), { terminator: pool[1], stickyToken: 'b' });
    assert.deepEqual(chooseTerminator('sticky', pool, { stickyToken: 'gone' }), { terminator: pool[0], stickyToken: 'a' });
    assert.equal(chooseTerminator('sticky', [t('a'), t('b', 'failed')], { stickyToken: 'b' })?.terminator.id, 'a');
  });
});
