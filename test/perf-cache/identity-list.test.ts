/**
 * The management identity list over HTTPS while its query is answered from the list cache: repeated asks
 * return the same page as the first (uncached) one, and a created, renamed or deleted identity changes the
 * very next list's totalCount and page.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../support/controller.ts';
import { createIdentity } from '../support/factories.ts';

const tc: TestController = await startTestController();

async function list(filter: string, limit: number, offset: number): Promise<{ totalCount: number; names: string[]; body: any }> {
  const res = await tc.mgmt.get(`/identities?filter=${encodeURIComponent(filter)}&limit=${limit}&offset=${offset}`);
  assert.equal(res.status, 200, res.text);
  return { totalCount: res.body.meta.pagination.totalCount, names: res.body.data.map((i: any) => i.name), body: res.body };
}

test('a created, renamed or deleted identity changes the next list', async () => {
  const prefix = uniqueName('lc');
  for (let i = 0; i < 30; i++) await createIdentity(tc.mgmt, { name: `${prefix}-${String(i).padStart(2, '0')}`, isAdmin: i % 10 === 0 });
  const filter = `name contains "${prefix}" and isAdmin = false sort by name desc`;
  const expected = Array.from({ length: 30 }, (_, i) => i)
    .filter((i) => i % 10 !== 0)
    .reverse()
    .map((i) => `${prefix}-${String(i).padStart(2, '0')}`);

  const first = await list(filter, 10, 5);
  assert.equal(first.totalCount, 27);
  assert.deepEqual(first.names, expected.slice(5, 15));
  for (let i = 0; i < 3; i++) {
    const again = await list(filter, 10, 5);
    assert.deepEqual(again.body, first.body, 'a repeated ask answers exactly as the first');
  }
  assert.deepEqual((await list(filter, 10, 20)).names, expected.slice(20), 'another page of the same query');

  const topId = await createIdentity(tc.mgmt, { name: `${prefix}-99`, isAdmin: false });
  const afterCreate = await list(filter, 10, 5);
  assert.equal(afterCreate.totalCount, 28);
  assert.deepEqual(afterCreate.names, [`${prefix}-99`, ...expected].slice(5, 15));

  await list(filter, 10, 5); // asked again at the new state: cached again
  const rename = await tc.mgmt.patch(`/identities/${topId}`, { name: `${prefix}-00a` });
  assert.equal(rename.status, 200, rename.text);
  const afterRename = await list(filter, 10, 20);
  assert.equal(afterRename.totalCount, 28);
  assert.deepEqual(afterRename.names, [...expected, `${prefix}-00a`].slice(20));

  await list(filter, 10, 20);
  const removed = await tc.mgmt.delete(`/identities/${topId}`);
  assert.equal(removed.status, 200, removed.text);
  const afterDelete = await list(filter, 10, 5);
  assert.equal(afterDelete.totalCount, 27);
  assert.deepEqual(afterDelete.body, first.body, 'back to the first answer');

  const unlimited = await list(filter, -1, 0);
  assert.deepEqual(unlimited.names, expected);
});
