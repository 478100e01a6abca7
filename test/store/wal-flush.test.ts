/**
 * The WAL flusher (src/store/wal-flush.ts): a write waits for a flush that started after its commit; writers
 * that arrive together share one flush; one that arrives while a flush runs waits for the next; nothing written,
 * nothing to wait for; a failed flush fails its waiters and the next write flushes again.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import { openSqliteStore } from '../../src/store/sqlite-store.ts';
import { createWalFlusher } from '../../src/store/wal-flush.ts';

/** A store without its own flusher, and a flusher (with the test's sync) on its write connection. */
function setup(sync?: (file: FileHandle) => Promise<void>) {
  const dir = mkdtempSync(join(tmpdir(), 'wal-flush-'));
  const store = openSqliteStore(join(dir, 'test.db'), { flush: false });
  store.db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
  const flusher = createWalFlusher(store.db, sync ? { sync } : {});
  const write = () => store.write((tx) => tx.run('INSERT INTO t (v) VALUES (?)', ['x']));
  return {
    store,
    flusher,
    write,
    async done() {
      await flusher.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A sync the test releases (or fails) by hand; `gates` holds one entry per flush started. */
function gatedSync() {
  const gates: Array<{ release(): void; fail(err: Error): void }> = [];
  const sync = (file: FileHandle) =>
    new Promise<void>((resolve, reject) => {
      gates.push({ release: () => void file.datasync().then(resolve, reject), fail: reject });
    });
  return { sync, gates };
}

const tick = () => new Promise((r) => setTimeout(r, 5));

/** Waits (bounded) until the condition holds: a flush starts only once the WAL file is open (thread pool). */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await tick();
  }
}

async function state(p: Promise<unknown>): Promise<'pending' | 'resolved' | 'rejected'> {
  let s: 'pending' | 'resolved' | 'rejected' = 'pending';
  p.then(
    () => (s = 'resolved'),
    () => (s = 'rejected'),
  );
  await tick();
  return s;
}

describe('WAL flusher', () => {
  it('has nothing to wait for when nothing was written, and flushes once something was', async () => {
    const t = setup();
    assert.equal(t.flusher.durable(), undefined);
    // Read on the connection the flusher watches (a transaction that only reads).
    await t.store.write((tx) => tx.value('SELECT COUNT(*) FROM t'));
    assert.equal(t.flusher.durable(), undefined, 'a read is no write');
    await t.write();
    const wait = t.flusher.durable();
    assert.ok(wait);
    await wait;
    assert.equal(t.flusher.flushes, 1);
    assert.equal(t.flusher.durable(), undefined, 'the flush covered the write');
    await t.done();
  });

  it('answers a write only after a flush that covers it; writers together share one flush', async () => {
    const { sync, gates } = gatedSync();
    const t = setup(sync);
    await t.write();
    const first = t.flusher.durable()!;
    await until(() => gates.length === 1, 'the first flush started');
    assert.equal(await state(first), 'pending', 'not answered before the disk has it');
    // Two writes while the first flush runs: both wait for the next flush, which they share.
    await t.write();
    const second = t.flusher.durable()!;
    await t.write();
    const third = t.flusher.durable()!;
    assert.equal(second, third);
    gates[0]!.release();
    await first;
    await until(() => gates.length === 2, 'the next flush started when the first ended');
    assert.equal(await state(second), 'pending');
    gates[1]!.release();
    await second;
    assert.equal(t.flusher.flushes, 2);
    assert.equal(t.flusher.durable(), undefined);
    await t.done();
  });

  it('fails the waiters of a failed flush; the next write flushes again', async () => {
    const { sync, gates } = gatedSync();
    const t = setup(sync);
    await t.write();
    const failing = t.flusher.durable()!;
    await until(() => gates.length === 1, 'the flush started');
    gates[0]!.fail(new Error('EIO'));
    await assert.rejects(failing, /EIO/);
    const retry = t.flusher.durable();
    assert.ok(retry, 'the write is still not known to be on disk');
    await until(() => gates.length === 2, 'the second flush started');
    gates[1]!.release();
    await retry;
    assert.equal(t.flusher.durable(), undefined);
    await t.done();
  });
});
