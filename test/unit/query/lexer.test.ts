/**
 * The lexer against upstream's token rules: longest match with keyword priority, case-insensitive keywords
 * but a lower-case `datetime(`, `not in` as one token with exactly one whitespace, number and identifier
 * shapes, string escapes, positions, and UNKNOWN tokens for characters upstream would silently drop.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { tokenize } from '../../../src/query/lexer.ts';

/** Tokens as `KIND:text`, whitespace and EOF left out, for compact expectations. */
function lex(input: string): string[] {
  return tokenize(input)
    .filter((t) => t.kind !== 'WS' && t.kind !== 'EOF')
    .map((t) => `${t.kind}:${t.text}`);
}

const okCases: Array<[name: string, input: string, tokens: string[]]> = [
  ['ok/comparison without spaces', 'a=1', ['IDENTIFIER:a', 'EQ:=', 'NUMBER:1']],
  ['ok/all comparison operators', '< <= > >= = !=', ['LT:<', 'LT:<=', 'GT:>', 'GT:>=', 'EQ:=', 'EQ:!=']],
  ['ok/keywords in any case', 'AND Or nOt NULL True FALSE', ['AND:AND', 'OR:Or', 'NOT:nOt', 'NULL:NULL', 'BOOL:True', 'BOOL:FALSE']],
  ['ok/set functions in any case', 'ALLOF AnyOf COUNT isempty', ['ALL_OF:ALLOF', 'ANY_OF:AnyOf', 'COUNT:COUNT', 'IS_EMPTY:isempty']],
  ['ok/clause keywords', 'sort by asc desc skip limit none where from', [
    'SORT:sort', 'BY:by', 'ASC:asc', 'DESC:desc', 'SKIP:skip', 'LIMIT:limit', 'NONE:none', 'WHERE:where', 'FROM:from',
  ]],
  ['ok/keyword prefix of a longer identifier is an identifier', 'andy orbit nothing inbound', [
    'IDENTIFIER:andy', 'IDENTIFIER:orbit', 'IDENTIFIER:nothing', 'IDENTIFIER:inbound',
  ]],
  ['ok/not in with one whitespace is one token', 'a not in [1]', ['IDENTIFIER:a', 'IN:not in', 'LBRACKET:[', 'NUMBER:1', 'RBRACKET:]']],
  ['ok/not in with a tab', 'NOT\tIN', ['IN:NOT\tIN']],
  ['ok/not in with two spaces is not and in', 'not  in', ['NOT:not', 'IN:in']],
  ['ok/not contains accepts several spaces', 'not   contains', ['CONTAINS:not   contains']],
  ['ok/not icontains and not between', 'not icontains not  between', ['ICONTAINS:not icontains', 'BETWEEN:not  between']],
  ['ok/upstream quirk: not followed by in... lexes as not in', 'not inactive', ['IN:not in', 'IDENTIFIER:active']],
  ['ok/dotted identifier with dashes after the first segment', 'tags.owner-team', ['IDENTIFIER:tags.owner-team']],
  ['ok/identifier stops at a digit', 'tags.foo1', ['IDENTIFIER:tags.foo', 'NUMBER:1']],
  ['ok/quoted identifier keeps its quotes', "'name'", ["IDENTIFIER:'name'"]],
  ['ok/numbers', '0 -1 1.5 -0.25 1e5 1E+10 2.5e-3', [
    'NUMBER:0', 'NUMBER:-1', 'NUMBER:1.5', 'NUMBER:-0.25', 'NUMBER:1e5', 'NUMBER:1E+10', 'NUMBER:2.5e-3',
  ]],
  ['ok/leading zeros split the number (007 is three numbers)', '007', ['NUMBER:0', 'NUMBER:0', 'NUMBER:7']],
  ['ok/exponent with a leading zero stops early (1e05)', '1e05', ['NUMBER:1e0', 'NUMBER:5']],
  ['ok/string with escapes', String.raw`"a\"b\\c\n"`, [String.raw`STRING:"a\"b\\c\n"`]],
  ['ok/string with unicode', '"héllo ✓ 😀"', ['STRING:"héllo ✓ 😀"']],
  ['ok/datetime literal', 'datetime(2024-01-01T00:00:00Z)', ['DATETIME:datetime(2024-01-01T00:00:00Z)']],
  ['ok/datetime with spaces, fraction, offset, lower-case t', 'datetime( 2024-01-01t10:00:00.123456+02:00 )', [
    'DATETIME:datetime( 2024-01-01t10:00:00.123456+02:00 )',
  ]],
  ['ok/DATETIME( is not a datetime literal', 'DATETIME(2024-01-01T00:00:00Z)', [
    'IDENTIFIER:DATETIME', 'LPAREN:(', 'BARE_DATETIME:2024-01-01T00:00:00Z', 'RPAREN:)',
  ]],
  ['ok/brackets, parens and commas', '([,])', ['LPAREN:(', 'LBRACKET:[', 'COMMA:,', 'RBRACKET:]', 'RPAREN:)']],
];

describe('tokenize', () => {
  for (const [name, input, tokens] of okCases) {
    it(name, () => assert.deepEqual(lex(input), tokens));
  }

  it('ok/keeps each whitespace character as a token and ends with EOF', () => {
    const kinds = tokenize(' a \n').map((t) => t.kind);
    assert.deepEqual(kinds, ['WS', 'IDENTIFIER', 'WS', 'WS', 'EOF']);
  });

  it('ok/positions: 1-based lines, 0-based columns in code points, reset after a newline', () => {
    const tokens = tokenize('"😀" = x\n  and y');
    const at = (text: string) => tokens.find((t) => t.text === text);
    assert.deepEqual([at('=')?.line, at('=')?.column], [1, 4]);
    assert.deepEqual([at('and')?.line, at('and')?.column], [2, 2]);
    assert.deepEqual([at('y')?.line, at('y')?.column], [2, 6]);
    const eof = tokens.at(-1);
    assert.deepEqual([eof?.text, eof?.line, eof?.column], ['<EOF>', 2, 7]);
  });

  it('ok/a newline inside not contains moves the line', () => {
    const tokens = tokenize('a not\ncontains "x"');
    const string = tokens.find((t) => t.kind === 'STRING');
    assert.deepEqual([string?.line, string?.column], [2, 9]);
  });

  it('ok/month 13 does not lex as a datetime (so the parser reports it)', () => {
    assert.equal(tokenize('datetime(2024-13-01T00:00:00Z)')[0].kind, 'IDENTIFIER');
  });

  const unknownCases: Array<[name: string, input: string, symbol: string, line: number, column: number]> = [
    ['ok/lone dot (.5) is an unknown character', 'a = .5', '.', 1, 4],
    ['ok/at sign is an unknown character', 'a = @x', '@', 1, 4],
    ['ok/dollar is an unknown character', '$a = 1', '$', 1, 0],
    ['ok/colon outside a datetime is an unknown character', 'a:b', ':', 1, 1],
    ['ok/unterminated string leaves an unknown quote', 'a = "abc', '"', 1, 4],
    ['ok/raw control character breaks a string', 'a = "a\u0001b"', '"', 1, 4],
    ['ok/single-quoted string is unknown', "a = 'x y'", "'", 1, 4],
    ['ok/unknown escape breaks a string', String.raw`a = "\q"`, '"', 1, 4],
    ['ok/dash in the first identifier segment', 'a-b = 1', '-', 1, 1],
    ['ok/position on a later line', 'a = 1\nand b = #', '#', 2, 8],
  ];
  for (const [name, input, symbol, line, column] of unknownCases) {
    it(name, () => {
      const unknown = tokenize(input).find((t) => t.kind === 'UNKNOWN');
      assert.deepEqual(unknown, { kind: 'UNKNOWN', text: symbol, line, column });
    });
  }
});
