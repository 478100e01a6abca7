/**
 * The disk full: the controller's data dir on a small tmpfs, the space then taken by a filler file. Writes fail
 * with a clear 503 STORAGE_UNAVAILABLE and change nothing, reads go on, nothing crashes; when the space comes back
 * writes succeed again and the integrity check is clean. Needs root (mount), as CI has. SQLite only: on PostgreSQL
 * the data dir holds only the PKI, and the database's disk is the server's.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestController, testStore, uniqueName, type TestController } from '../support/controller.ts';
import { assertError } from '../support/assertions.ts';
import type { SqliteStore } from '../../src/store/sqlite-store.ts';

const sqliteOnly = testStore() !== 'sqlite' && 'SQLite only: fills the disk under the SQLite file (on PostgreSQL the data dir holds only the PKI)';
const mountPoint = mkdtempSync(join(tmpdir(), 'portcullis-diskfull-'));
let tc!: TestController;
if (!sqliteOnly) {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m', 'tmpfs', mountPoint]);
  after(() => {
    try {
      execFileSync('umount', ['-l', mountPoint]);
    } finally {
      rmSync(mountPoint, { recursive: true, force: true });
    }
  });
  tc = await startTestController({ dataDir: join(mountPoint, 'data') });
} else {
  rmSync(mountPoint, { recursive: true, force: true });
}
const filler = join(mountPoint, 'filler');

/** Takes every free byte of the tmpfs. */
function fill(): void {
  const fd = openSync(filler, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (err) {
    assert.equal((err as NodeJS.ErrnoException).code, 'ENOSPC');
  } finally {
    closeSync(fd);
  }
  // The last bytes too.
  const tail = openSync(filler, 'a');
  try {
    for (;;) writeSync(tail, Buffer.alloc(512, 1));
  } catch {
    // full
  } finally {
    closeSync(tail);
  }
}

describe('disk full', { skip: sqliteOnly }, () => {
  it('refuses writes with a clear error, keeps serving reads, and recovers when space returns', async () => {
    const before = (await tc.mgmt.get('/identities?limit=1')).body.meta.pagination.totalCount as number;
    fill();
    const prefix = uniqueName('full');
    let refused = 0;
    let accepted = 0;
    for (let i = 0; i < 200 && refused < 5; i++) {
      const res = await tc.mgmt.post('/identities', { name: `${prefix}-${i}`, type: 'User', isAdmin: false, appData: { pad: 'x'.repeat(4000) } });
      if (res.status === 201) accepted++;
      else {
        assertError(res, 503, 'STORAGE_UNAVAILABLE');
        refused++;
      }
    }
    assert.equal(refused, 5, 'writes fail once the disk is full');
    const reads = await tc.mgmt.get(`/identities?limit=500&filter=${encodeURIComponent(`name contains "${prefix}"`)}`);
    assert.equal(reads.status, 200, 'reads go on');
    assert.equal(reads.body.meta.pagination.totalCount, accepted, 'a refused write left nothing behind');
    // Background writers (API-session activity every 5 s, posture enforcement, feed trimming) meet the full disk
    // too: the process lives on and keeps answering.
    for (let i = 0; i < 7; i++) {
      assert.equal((await tc.mgmt.get('/current-api-session')).status, 200);
      await new Promise((r) => setTimeout(r, 1000));
    }

    unlinkSync(filler);
    const again = await tc.mgmt.post('/identities', { name: `${prefix}-after`, type: 'User', isAdmin: false });
    assert.equal(again.status, 201, again.text);
    assert.equal((await tc.mgmt.get('/identities?limit=1')).body.meta.pagination.totalCount, before + accepted + 1);

    const started = await tc.mgmt.post('/database/check-data-integrity', {});
    assert.equal(started.status, 202, started.text);
    let results;
    for (let i = 0; i < 300; i++) {
      results = (await tc.mgmt.get('/database/data-integrity-results')).body.data;
      if (!results.inProgress) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(results.error, null);
    assert.deepEqual(results.results ?? [], []);
    const quick = (tc.controller.store as SqliteStore).db.pragma('quick_check', { simple: true });
    assert.equal(quick, 'ok', 'SQLite finds the file sound');
  });
});
