/**
 * Lexer for the filter language: text → tokens with 1-based line and 0-based column (counted in code
 * points, as upstream's ANTLR runtime does). It mirrors upstream's lexer rule for rule and resolves
 * overlaps the same way — the longest match wins, and on equal length the rule declared first wins — so
 * keywords beat identifiers (`in`, `count`), `not in` (exactly one whitespace character) is one token, and
 * quirks such as `1e05` lexing as `1e0` + `5` fall out exactly as upstream. Whitespace is kept as tokens
 * because the grammar says where it is required. Upstream silently drops characters it cannot lex (so
 * `a = .5` means `a = 5`); here each becomes an UNKNOWN token that no grammar rule accepts, so the parser
 * rejects it with the usual syntax error — or reports an earlier grammar error first, as upstream would.
 */
import { invalidFilter, type ApiError } from '../errors.ts';

export type TokenKind =
  | 'COMMA' | 'WS' | 'LPAREN' | 'RPAREN' | 'LBRACKET' | 'RBRACKET'
  | 'AND' | 'OR' | 'LT' | 'GT' | 'EQ' | 'CONTAINS' | 'ICONTAINS' | 'IN' | 'BETWEEN' | 'BOOL' | 'DATETIME'
  | 'ALL_OF' | 'ANY_OF' | 'COUNT' | 'IS_EMPTY' | 'STRING' | 'NUMBER' | 'NULL' | 'NOT' | 'ASC' | 'DESC'
  | 'SORT' | 'BY' | 'SKIP' | 'LIMIT' | 'NONE' | 'WHERE' | 'FROM' | 'IDENTIFIER' | 'BARE_DATETIME'
  /** One character no rule matches. */
  | 'UNKNOWN'
  | 'EOF';

export interface Token {
  kind: TokenKind;
  /** The source text; `<EOF>` for the end-of-input token. */
  text: string;
  line: number;
  column: number;
}

const WS = '[ \\n\\t\\r]';
const INT = '(?:0|[1-9][0-9]*)';
// RFC 3339 as upstream's lexer fragments restrict it; `T`/`Z` may be lower case, the year is any digits.
const RFC3339 =
  '[0-9]+-(?:0[1-9]|1[012])-(?:0[1-9]|[12][0-9]|3[01])[tT]' +
  '(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\\.[0-9]+)?' +
  '(?:[zZ]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])';
const IDENT_BODY = '[A-Za-z][A-Za-z_]*(?:\\.[A-Za-z][A-Za-z_-]*)*';

/**
 * Upstream's rules in declaration order (the implicit `,` literal comes first, as ANTLR numbers it).
 * The `i` flag without `u` folds ASCII letters only, which matches the grammar's `[aA]` fragments.
 */
const RULE_SOURCES: ReadonlyArray<readonly [TokenKind, string, string?]> = [
  ['COMMA', ','],
  ['WS', WS],
  ['LPAREN', '\\('],
  ['RPAREN', '\\)'],
  ['LBRACKET', '\\['],
  ['RBRACKET', '\\]'],
  ['AND', 'and', 'i'],
  ['OR', 'or', 'i'],
  ['LT', '<=?'],
  ['GT', '>=?'],
  ['EQ', '!?='],
  ['CONTAINS', `(?:not${WS}+)?contains`, 'i'],
  ['ICONTAINS', `(?:not${WS}+)?icontains`, 'i'],
  ['IN', `(?:not${WS})?in`, 'i'],
  ['BETWEEN', `(?:not${WS}+)?between`, 'i'],
  ['BOOL', 'true|false', 'i'],
  ['DATETIME', `datetime\\(${WS}*${RFC3339}${WS}*\\)`],
  ['ALL_OF', 'allof', 'i'],
  ['ANY_OF', 'anyof', 'i'],
  ['COUNT', 'count', 'i'],
  ['IS_EMPTY', 'isempty', 'i'],
  ['STRING', '"(?:\\\\["\\\\fnrt]|[^"\\\\\\u0000-\\u001f])*"'],
  ['NUMBER', `-?${INT}(?:\\.[0-9]+)?(?:[eE][+-]?${INT})?`],
  ['NULL', 'null', 'i'],
  ['NOT', 'not', 'i'],
  ['ASC', 'asc', 'i'],
  ['DESC', 'desc', 'i'],
  ['SORT', 'sort', 'i'],
  ['BY', 'by', 'i'],
  ['SKIP', 'skip', 'i'],
  ['LIMIT', 'limit', 'i'],
  ['NONE', 'none', 'i'],
  ['WHERE', 'where', 'i'],
  ['FROM', 'from', 'i'],
  ['IDENTIFIER', `${IDENT_BODY}|'${IDENT_BODY}'`],
  ['BARE_DATETIME', RFC3339],
];
const RULES = RULE_SOURCES.map(([kind, source, flags]) => [kind, new RegExp(source, `y${flags ?? ''}`)] as const);

/** The syntax error upstream reports, naming the first offending token (`<EOF>` at the end of input). */
export function syntaxError(token: Pick<Token, 'text' | 'line' | 'column'>): ApiError {
  const { text, line, column } = token;
  return invalidFilter(
    `Unexpected symbol: "${text}" at line: ${line} column: ${column}. line: ${line}, column: ${column}, symbol: ${text}`,
  );
}

/** The longest rule match at `offset` (first declared rule on ties), or undefined if nothing matches. */
function matchAt(input: string, offset: number): { kind: TokenKind; text: string } | undefined {
  let best: { kind: TokenKind; text: string } | undefined;
  for (const [kind, pattern] of RULES) {
    pattern.lastIndex = offset;
    const match = pattern.exec(input);
    if (match && match[0].length > 0 && (!best || match[0].length > best.text.length)) {
      best = { kind, text: match[0] };
    }
  }
  return best;
}

/**
 * Tokens on demand: the parser stops at the first error, so text after it is never lexed (which also keeps
 * pathological inputs such as thousands of zeros from costing more than their first few tokens).
 */
export class Lexer {
  private readonly tokens: Token[] = [];
  private offset = 0;
  private line = 1;
  private column = 0;

  constructor(private readonly input: string) {}

  /** The token at `index`; the EOF token for any index at or past the end. Never throws. */
  at(index: number): Token {
    while (this.tokens.length <= index && this.tokens.at(-1)?.kind !== 'EOF') this.tokens.push(this.lexNext());
    return this.tokens[Math.min(index, this.tokens.length - 1)];
  }

  private lexNext(): Token {
    const { input, offset, line, column } = this;
    if (offset >= input.length) return { kind: 'EOF', text: '<EOF>', line, column };
    const match = matchAt(input, offset) ?? {
      kind: 'UNKNOWN' as const,
      text: String.fromCodePoint(input.codePointAt(offset) ?? 0),
    };
    this.offset += match.text.length;
    // Whitespace inside `not contains` or `datetime( ... )` may hold newlines too, so scan every token.
    for (const char of match.text) {
      if (char === '\n') {
        this.line += 1;
        this.column = 0;
      } else {
        this.column += 1;
      }
    }
    return { kind: match.kind, text: match.text, line, column };
  }
}

/** Every token of the input, ending with EOF. */
export function tokenize(input: string): Token[] {
  const lexer = new Lexer(input);
  const tokens: Token[] = [];
  for (let i = 0; tokens.at(-1)?.kind !== 'EOF'; i += 1) tokens.push(lexer.at(i));
  return tokens;
}
