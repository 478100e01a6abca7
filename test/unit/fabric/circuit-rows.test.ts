/** circuit-rows: batched writes of circuit rows, inserts before deletes, a removal after its insert, errors to every caller. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createCircuitRows, type CircuitRow } from '../../../src/fabric/circuit-rows.ts';
import type { Params, RunResult } from '../../../src/store/store.ts';

function row(id: string): CircuitRow {
  return {
    id,
    owner: 'p1',
    sessionId: 's',
    apiSessionId: 'a',
    identityId: 'i',
    serviceId: 'v',
    terminatorId: 't',
    path: ['r1'],
    links: [],
    createdAt: new Date('2026-01-01T00:00:00.000Z'),
  };
}

/** A store whose statements finish only when the test lets them. */
function slowStore() {
  const statements: Array<{ sql: string; params: Params; finish: (err?: Error) => void }> = [];
  return {
    statements,
    store: {
      runRuntime: (sql: string, params: Params = []) =>
        new Promise<RunResult>((resolve, reject) => statements.push({ sql, params, finish: (err) => (err ? reject(err) : resolve({ changes: 1 })) })),
    },
  };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('circuit rows', () => {
  it('writes at once while few are under way, and batches what comes while they are', async () => {
    const { store, statements } = slowStore();
    const rows = createCircuitRows(store, 1);
    const first = rows.insert(row('c1'));
    await tick();
    assert.equal(statements.length, 1, 'the first goes at once');
    const second = rows.insert(row('c2'));
    const third = rows.insert(row('c3'));
    await tick();
    assert.equal(statements.length, 1, 'the others wait for it');
    statements[0]!.finish();
    await first;
    await tick();
    assert.equal(statements.length, 2);
    assert.match(statements[1]!.sql, /^INSERT INTO circuits .* VALUES \(\?(, \?){9}\), \(\?(, \?){9}\)$/);
    assert.deepEqual([statements[1]!.params[0], statements[1]!.params[10]], ['c2', 'c3']);
    statements[1]!.finish();
    await Promise.all([second, third]);
  });

  it('removes a circuit only after its insert was written', async () => {
    const { store, statements } = slowStore();
    const rows = createCircuitRows(store, 1);
    const inserted = rows.insert(row('c1'));
    const removed = rows.remove('c1');
    const other = rows.insert(row('c2'));
    await tick();
    assert.equal(statements.length, 1);
    statements[0]!.finish();
    await inserted;
    await tick();
    await tick();
    // c2's insert was queued first and goes next; c1's removal waited for c1's insert and goes after it.
    assert.match(statements[1]!.sql, /^INSERT INTO circuits/);
    statements[1]!.finish();
    await other;
    await tick();
    assert.match(statements[2]!.sql, /^DELETE FROM circuits WHERE id IN \(\?\)$/);
    assert.deepEqual(statements[2]!.params, ['c1']);
    statements[2]!.finish();
    await removed;
  });

  it('fails every caller of a batch that could not be written, and goes on with the next', async () => {
    const { store, statements } = slowStore();
    const rows = createCircuitRows(store, 1);
    const first = rows.insert(row('c1'));
    const a = rows.insert(row('c2'));
    const b = rows.insert(row('c3'));
    await tick();
    statements[0]!.finish();
    await first;
    await tick();
    statements[1]!.finish(new Error('store unavailable'));
    await assert.rejects(a, /store unavailable/);
    await assert.rejects(b, /store unavailable/);
    const later = rows.insert(row('c4'));
    await tick();
    statements[2]!.finish();
    await later;
  });
});
