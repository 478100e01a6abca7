/**
 * The query compiler's PostgreSQL dialect gives the answers of the SQLite one: every filter case (and its negation)
 * and every sort of cases.ts, and paging, run on a private PostgreSQL cluster with the fixture's rows.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestPostgres, type TestPostgres } from '../../support/postgres.ts';
import { filterCaseGroups, sortCases } from './cases.ts';
import { complementOf, createPostgresFixture } from './fixture.ts';
import { positionalParameters } from '../../../src/query/dialect.ts';

let server: TestPostgres;
let fixture: Awaited<ReturnType<typeof createPostgresFixture>>;
before(async () => {
  server = await startTestPostgres();
  fixture = await createPostgresFixture(server.url);
});
after(async () => {
  await fixture?.close();
  await server?.stop();
});

describe('compiled filters on PostgreSQL', () => {
  for (const [group, cases] of filterCaseGroups) {
    describe(group, () => {
      for (const [name, filter, ids] of cases) {
        it(name, async () => {
          assert.deepEqual(await fixture.matching(filter), ids, filter);
          assert.deepEqual(await fixture.matching(`not (${filter})`), complementOf(ids), `not (${filter})`);
        });
      }
    });
  }

  for (const [name, filter, , ids] of sortCases) {
    it(`sorting ${name}`, async () => assert.deepEqual(await fixture.matching(filter), ids));
  }

  it('ok/pages through rows in sort order, as on SQLite', async () => {
    assert.deepEqual(await fixture.run(fixture.compile({ filter: 'sort by cost skip 1 limit 2' })), ['a1', 'f6']);
    assert.deepEqual(await fixture.run(fixture.compile({ sort: 'cost', offset: 5, limit: 2 })), ['e5', 'c3']);
    assert.deepEqual(await fixture.run(fixture.compile({ filter: 'isAdmin', limit: -1 })), ['a1', 'd4', 'f6']);
  });

  it('ok/binds an int64 beyond 2^53 exactly', async () => {
    assert.deepEqual(await fixture.matching('cost = 9007199254740993'), []);
    assert.deepEqual(await fixture.matching('cost < 9007199254740993'), ['a1', 'b2', 'c3', 'e5', 'f6', 'g7']);
  });
});

describe('positional parameters', () => {
  it('numbers each ? in order, leaving quoted ones alone', () => {
    assert.equal(positionalParameters(`a = ? AND b IN (?, ?) AND c = '?' AND "d?" = ?`), `a = $1 AND b IN ($2, $3) AND c = '?' AND "d?" = $4`);
  });
});
