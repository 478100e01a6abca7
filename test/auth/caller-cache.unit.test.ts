/**
 * createCallerCache on a migrated in-memory store: entries reused while the counters stand still, all
 * dropped when one moves, the size bound, disabled identities never kept, and no reuse when the clock reads
 * earlier than when an entry was read.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase } from '../../src/store/database.ts';
import { migrate } from '../../src/store/migrate.ts';
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

function setup(opts: { maxEntries?: number; disabled?: Set<string> } = {}) {
  const db = openDatabase(':memory:');
  migrate(db);
  const loads: string[] = [];
  let now = 1_000;
  const cache = createCallerCache({
    db,
    now: () => now,
    maxEntries: opts.maxEntries,
    load(hash) {
      loads.push(hash);
      return hash.startsWith('missing') ? undefined : state(hash, opts.disabled?.has(hash));
    },
  });
  const bump = (name: string) => db.prepare('UPDATE table_versions SET version = version + 1 WHERE name = ?').run(name);
  return { db, cache, loads, bump, setNow: (ms: number) => (now = ms) };
}

describe('caller cache', () => {
  it('reuses an entry while the counters stand still', () => {
    const { cache, loads } = setup();
    const first = cache.get('h1');
    assert.equal(cache.get('h1'), first);
    assert.deepEqual(loads, ['h1']);
    assert.ok(Object.isFrozen(first) && Object.isFrozen(first!.session) && Object.isFrozen(first!.identity));
  });

  for (const table of ['api_sessions', 'api_session_activity', 'identities', 'auth_policies']) {
    it(`drops every entry when the ${table} counter moves`, () => {
      const { cache, loads, bump } = setup();
      cache.get('h1');
      cache.get('h2');
      bump(table);
      cache.get('h1');
      assert.deepEqual(loads, ['h1', 'h2', 'h1']);
      assert.equal(cache.size, 1);
    });
  }

  it('is not affected by counters it does not depend on', () => {
    const { cache, loads, bump } = setup();
    cache.get('h1');
    bump('services');
    cache.get('h1');
    assert.deepEqual(loads, ['h1']);
  });

  it('holds at most maxEntries, dropping the oldest', () => {
    const { cache, loads } = setup({ maxEntries: 2 });
    cache.get('h1');
    cache.get('h2');
    cache.get('h3');
    assert.equal(cache.size, 2);
    cache.get('h3');
    cache.get('h2');
    cache.get('h1');
    assert.deepEqual(loads, ['h1', 'h2', 'h3', 'h1']);
    assert.equal(cache.size, 2);
  });

  it('never keeps unknown tokens or disabled identities', () => {
    const { cache, loads } = setup({ disabled: new Set(['off']) });
    assert.equal(cache.get('missing'), undefined);
    assert.equal(cache.get('missing'), undefined);
    assert.equal(cache.get('off')!.identity.disabled, true);
    assert.equal(cache.get('off')!.identity.disabled, true);
    assert.deepEqual(loads, ['missing', 'missing', 'off', 'off']);
    assert.equal(cache.size, 0);
  });

  it('reads again when the clock is earlier than when the entry was read', () => {
    const { cache, loads, setNow } = setup();
    cache.get('h1');
    setNow(999);
    cache.get('h1');
    setNow(5_000);
    cache.get('h1');
    assert.deepEqual(loads, ['h1', 'h1']);
  });
});
