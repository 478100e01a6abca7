/**
 * Database operation helpers: the local-offset times of integrity results, snapshot file names (local time,
 * a suffix when a name is taken) and the effective controller settings merge.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { localIsoTime, snapshotPath } from '../../../src/resources/database/database-ops.ts';
import { effectiveOidc, normalizeOidc } from '../../../src/resources/controller-settings/controller-setting.service.ts';

const originalTz = process.env.TZ;
after(() => {
  if (originalTz === undefined) delete process.env.TZ;
  else process.env.TZ = originalTz;
});

describe('localIsoTime', () => {
  const instant = new Date('2024-03-05T20:04:05.006Z');
  it('uses Z in UTC', () => {
    process.env.TZ = 'UTC';
    assert.equal(localIsoTime(instant), '2024-03-05T20:04:05.006Z');
  });
  it('carries a positive half-hour offset', () => {
    process.env.TZ = 'Asia/Kolkata';
    assert.equal(localIsoTime(instant), '2024-03-06T01:34:05.006+05:30');
  });
  it('carries a negative offset', () => {
    process.env.TZ = 'America/New_York';
    assert.equal(localIsoTime(instant), '2024-03-05T15:04:05.006-05:00');
    assert.equal(new Date(localIsoTime(instant)).getTime(), instant.getTime());
  });
});

describe('snapshotPath', () => {
  it('names <db file>-YYYYMMDD-HHMMSS in local time and never reuses a name', () => {
    process.env.TZ = 'Asia/Kolkata';
    const dir = mkdtempSync(join(tmpdir(), 'portcullis-snap-'));
    try {
      const file = join(dir, 'portcullis.db');
      const at = new Date('2024-03-05T20:04:05.006Z');
      const first = snapshotPath(file, at);
      assert.equal(first, `${file}-20240306-013405`);
      writeFileSync(first, '');
      assert.equal(snapshotPath(file, at), `${file}-20240306-013405-1`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('effective controller settings', () => {
  it('overlays the instance on global list by list; an empty list overrides, an unset one inherits', () => {
    const global = { redirectUris: ['https://g/cb'], postLogoutUris: ['https://g/bye'] };
    assert.deepEqual(effectiveOidc(global, null), { redirectUris: ['https://g/cb'], postLogoutUris: ['https://g/bye'] });
    assert.deepEqual(effectiveOidc(global, { redirectUris: [] }), { redirectUris: [], postLogoutUris: ['https://g/bye'] });
    assert.deepEqual(effectiveOidc(null, { postLogoutUris: ['https://i/bye'] }), { redirectUris: [], postLogoutUris: ['https://i/bye'] });
  });
  it('keeps only the two lists, drops null lists and duplicate entries', () => {
    assert.deepEqual(normalizeOidc({ redirectUris: ['a://x', 'a://x', 'b://y'], postLogoutUris: null, other: 1 }), { redirectUris: ['a://x', 'b://y'] });
    assert.equal(normalizeOidc(null), null);
    assert.throws(() => normalizeOidc({ redirectUris: ['a://x', 'no scheme'] }), /COULD_NOT_VALIDATE|invalid document/);
  });
});
