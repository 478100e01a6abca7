/**
 * Compiled filters run against a real SQLite database (fixture.ts): every operator for every field type,
 * upstream's null semantics, sets, tags, precedence and keyword case. Each predicate is also run negated,
 * `not (<filter>)`, which must return exactly the other rows — the check that SQL's NULLs never leak
 * through a NOT. Also: literal text never reaches the SQL string.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type Database from 'better-sqlite3';
import { compileListQuery } from '../../../src/query/index.ts';
import { MAX_NESTING } from '../../../src/query/parser.ts';
import { ALL_IDS, complementOf, createDatabase, matching, table } from './fixture.ts';
import { filterCaseGroups } from './cases.ts';

describe('compiled filters on SQLite', () => {
  let db: Database.Database;
  before(() => {
    db = createDatabase();
  });

  for (const [group, cases] of filterCaseGroups) {
    describe(group, () => {
      for (const [name, filter, ids] of cases) {
        it(name, () => {
          assert.deepEqual(matching(db, filter), ids, filter);
          assert.deepEqual(matching(db, `not (${filter})`), complementOf(ids), `not (${filter})`);
        });
      }
    });
  }

  it('ok/runs the deepest accepted nesting, negated, within SQLite limits', () => {
    const chain = Array.from({ length: MAX_NESTING - 2 }, (_, i) => `cost != ${i + 1000}`).join(' and ');
    assert.deepEqual(matching(db, `not (${chain})`), []);
    const nots = `${'not '.repeat(MAX_NESTING - 1)}isAdmin`;
    assert.deepEqual(matching(db, nots), ['b2', 'c3', 'e5', 'g7']);
  });
});

describe('generated SQL', () => {
  it('ok/never contains literal text: strings become parameters', () => {
    const attack = "'; drop table items; --";
    const compiled = compileListQuery(table, { filter: `name = "${attack}" or name contains "\\" or 1=1 --"` });
    assert.ok(!compiled.where.includes('drop'), compiled.where);
    assert.ok(!compiled.where.includes('1=1'), compiled.where);
    assert.deepEqual(compiled.params, [attack, '" or 1=1 --']);
    const db = createDatabase();
    assert.deepEqual(matching(db, `name = "${attack}"`), []);
    assert.deepEqual(db.prepare('SELECT count(*) AS n FROM items').get(), { n: ALL_IDS.length });
  });

  it('ok/never contains numbers, datetimes or tag paths', () => {
    const compiled = compileListQuery(table, {
      filter: 'cost = 4242 and createdAt > datetime(2031-05-06T07:08:09Z) and tags.owner-team = "zz" and name in [7777]',
    });
    for (const text of ['4242', '2031', 'owner-team', 'zz', '7777']) assert.ok(!compiled.where.includes(text), text);
    assert.deepEqual(compiled.params, [4242, '2031-05-06T07:08:09.000Z', '$."owner-team"', '$."owner-team"', 'zz', '7777']);
  });

  it('ok/an empty or missing filter is true', () => {
    assert.equal(compileListQuery(table, {}).where, '1');
    assert.equal(compileListQuery(table, { filter: '' }).where, '1');
  });

  it('ok/plain comparisons stay bare at the top level (index friendly); negated ones are made definite', () => {
    assert.equal(compileListQuery(table, { filter: 'name = "x"' }).where, '(e.name = ?)');
    assert.equal(compileListQuery(table, { filter: 'not name = "x"' }).where, '(NOT COALESCE((e.name = ?), 0))');
    assert.equal(compileListQuery(table, { filter: 'id in ["a", "b"]' }).where, '(e.id IN (?, ?))');
  });

  it('ok/binds an int64 beyond 2^53 as a bigint', () => {
    assert.deepEqual(compileListQuery(table, { filter: 'cost = 9007199254740993' }).params, [9007199254740993n]);
  });
});
