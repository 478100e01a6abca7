/** versionedLookup: values kept while the counters stand, dropped when they move, never kept from a load a move overtook. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { versionedLookup } from '../../../src/store/versioned-lookup.ts';

function fakeStore() {
  let version = 1;
  return {
    bump: () => (version += 1),
    store: { versions: () => () => Promise.resolve(String(version)) },
  };
}

describe('versionedLookup', () => {
  it('loads a key once while the counters stand, and again after they moved', async () => {
    const { store, bump } = fakeStore();
    const loads: string[] = [];
    const data = new Map([['a', 1]]);
    const lookup = versionedLookup(store, ['sessions'], async (key: string) => {
      loads.push(key);
      return data.get(key);
    });
    assert.equal(await lookup('a'), 1);
    assert.equal(await lookup('a'), 1);
    assert.deepEqual(loads, ['a']);
    data.set('a', 2);
    assert.equal(await lookup('a'), 1, 'unchanged counters: the kept value');
    bump();
    assert.equal(await lookup('a'), 2);
    assert.deepEqual(loads, ['a', 'a']);
  });

  it('keeps no absent value', async () => {
    const { store } = fakeStore();
    let loads = 0;
    const lookup = versionedLookup(store, ['sessions'], async () => {
      loads += 1;
      return undefined;
    });
    assert.equal(await lookup('x'), undefined);
    assert.equal(await lookup('x'), undefined);
    assert.equal(loads, 2);
  });

  it('does not keep a value whose load a move of the counters overtook', async () => {
    const { store, bump } = fakeStore();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let value = 'old';
    let loads = 0;
    const lookup = versionedLookup(store, ['sessions'], async () => {
      loads += 1;
      const seen = value;
      if (loads === 1) await gate;
      return seen;
    });
    const slow = lookup('k');
    await new Promise((r) => setImmediate(r));
    value = 'new';
    bump();
    assert.equal(await lookup('k'), 'new', 'a lookup after the move loads again');
    release();
    assert.equal(await slow, 'old', 'the slow load answers its own caller');
    assert.equal(await lookup('k'), 'new', 'and is not kept over the newer value');
    assert.equal(loads, 2);
  });

  it('drops everything when it holds the most it may', async () => {
    const { store } = fakeStore();
    let loads = 0;
    const lookup = versionedLookup(
      store,
      ['sessions'],
      async (key: number) => {
        loads += 1;
        return key;
      },
      3,
    );
    for (const k of [1, 2, 3]) await lookup(k);
    await lookup(1);
    assert.equal(loads, 3, 'three kept');
    await lookup(4); // full: the three go, 4 is kept
    await lookup(1);
    assert.equal(loads, 5);
  });
});
