/**
 * createCallerCache on a migrated in-memory store: entries reused while the counters stand still, all
 * dropped when one moves, the size bound, disabled identities never kept, and no reuse when the clock reads
 * earlier than when an entry was read.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openSqliteStore } from '../../src/store/sqlite-store.ts';
import { migrateStore } from '../../src/store/open-store.ts';
import { createCallerCache, type CallerState } from '../../src/auth/caller-cache.ts';

function state(hash: string, disabled = false): CallerState {
  return {
    session: {
      id: `s-${hash}`, tokenHash: hash, identityId: `i-${hash}`, authenticatorId: 'a', ipAddress: '127.0.0.1', configTypes: [],
      isMfaRequired: false, isMfaComplete: false, isCertExtendable: false, isCertExtendRequested: false, isCertKeyRollRequested: false,
      improperClientCertChain: false, lastActivityAt: '2026-01-01T00:00:00.000Z', createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z', tags: {},
    },
    identity: { id: `i-${hash}`, name: hash, isAdmin: false, isDefaultAdmin: false, permissions: [], authPolicyId: 'default', disabled },
    secondary: { requireTotp: false },
  };
}

async function setup(opts: { maxEntries?: number; disabled?: Set<string> } = {}) {
  const store = openSqliteStore(':memory:');
  await migrateStore(store);
  const loads: string[] = [];
  let now = 1_000;
  const cache = createCallerCache({
    store,
    now: () => now,
    maxEntries: opts.maxEntries,
    async load(hash) {
      loads.push(hash);
      return hash.startsWith('missing') ? undefined : state(hash, opts.disabled?.has(hash));
    },
  });
  const bump = (name: string) => store.write((tx) => tx.run('UPDATE table_versions SET version = version + 1 WHERE name = ?', [name]));
  return { store, cache, loads, bump, setNow: (ms: number) => (now = ms) };
}

describe('caller cache', () => {
  it('reuses an entry while the counters stand still', async () => {
    const { cache, loads } = await setup();
    const first = await cache.get('h1');
    assert.equal(await cache.get('h1'), first);
    assert.deepEqual(loads, ['h1']);
    assert.ok(Object.isFrozen(first) && Object.isFrozen(first!.session) && Object.isFrozen(first!.identity));
  });

  for (const table of ['api_sessions', 'api_session_activity', 'identities', 'auth_policies']) {
    it(`drops every entry when the ${table} counter moves`, async () => {
      const { cache, loads, bump } = await setup();
      await cache.get('h1');
      await cache.get('h2');
      await bump(table);
      await cache.get('h1');
      assert.deepEqual(loads, ['h1', 'h2', 'h1']);
      assert.equal(cache.size, 1);
    });
  }

  it('is not affected by counters it does not depend on', async () => {
    const { cache, loads, bump } = await setup();
    await cache.get('h1');
    await bump('services');
    await cache.get('h1');
    assert.deepEqual(loads, ['h1']);
  });

  it('holds at most maxEntries, dropping the oldest', async () => {
    const { cache, loads } = await setup({ maxEntries: 2 });
    await cache.get('h1');
    await cache.get('h2');
    await cache.get('h3');
    assert.equal(cache.size, 2);
    await cache.get('h3');
    await cache.get('h2');
    await cache.get('h1');
    assert.deepEqual(loads, ['h1', 'h2', 'h3', 'h1']);
    assert.equal(cache.size, 2);
  });

  it('never keeps unknown tokens or disabled identities', async () => {
    const { cache, loads } = await setup({ disabled: new Set(['off']) });
    assert.equal(await cache.get('missing'), undefined);
    assert.equal(await cache.get('missing'), undefined);
    assert.equal((await cache.get('off'))!.identity.disabled, true);
    assert.equal((await cache.get('off'))!.identity.disabled, true);
    assert.deepEqual(loads, ['missing', 'missing', 'off', 'off']);
    assert.equal(cache.size, 0);
  });

  it('reads again when the clock is earlier than when the entry was read', async () => {
    const { cache, loads, setNow } = await setup();
    await cache.get('h1');
    setNow(999);
    await cache.get('h1');
    setNow(5_000);
    await cache.get('h1');
    assert.deepEqual(loads, ['h1', 'h1']);
  });
});
