/**
 * Header values from stored text: printable ASCII unchanged, every other UTF-8 byte percent-encoded.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { headerValue } from '../../../src/http/header-value.ts';

describe('headerValue', () => {
  const cases: Array<[string, string, string]> = [
    ['ok/printable ascii unchanged', 'Bearer realm="x" issuer="https://idp.example.com/a%20b"', 'Bearer realm="x" issuer="https://idp.example.com/a%20b"'],
    ['ok/non-ascii as utf-8 bytes', 'a\u00e9\u2603', 'a%C3%A9%E2%98%83'],
    ['ok/control characters', 'a\u0000b\tc\r\nd\u007f', 'a%00b%09c%0D%0Ad%7F'],
    ['ok/lone surrogate as the replacement character', 'x\ud800', 'x%EF%BF%BD'],
  ];
  for (const [name, input, expected] of cases) {
    it(name, () => assert.equal(headerValue(input), expected));
  }
});
