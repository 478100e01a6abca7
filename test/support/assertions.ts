/**
 * Assertions shared by the black-box suites: upstream's error envelope, field errors, the empty success
 * envelope and the timestamp format of base fields.
 */
import assert from 'node:assert/strict';
import type { HttpResponse } from './client.ts';

/** `createdAt`/`updatedAt`: RFC 3339 in UTC with exactly three fraction digits. */
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const ERROR_META = { apiEnrollmentVersion: '0.0.1', apiVersion: '0.0.1' };

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The response is the error envelope with this status and code, a request id, and the error meta. */
export function assertError(res: HttpResponse, status: number, code: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.error?.code, code, res.text);
  assert.ok(typeof res.body.error.requestId === 'string' && res.body.error.requestId.length > 0, res.text);
  assert.deepEqual(res.body.meta, ERROR_META);
}

/** 400 COULD_NOT_VALIDATE whose cause names the field. */
export function assertFieldError(res: HttpResponse, field: string | RegExp): void {
  assertError(res, 400, 'COULD_NOT_VALIDATE');
  const actual = String(res.body.error.cause?.field);
  if (typeof field === 'string') assert.equal(actual, field, res.text);
  else assert.match(actual, field, res.text);
}

/** 400 INVALID_FIELD (a rule between fields), upstream's cause `{code: UNHANDLED, message}` naming the value and field. */
export function assertInvalidField(res: HttpResponse, field: string, value: string, reason: string): void {
  assertError(res, 400, 'INVALID_FIELD');
  assert.equal(res.body.error.message, 'The field contains an invalid value', res.text);
  assert.deepEqual(res.body.error.cause, { code: 'UNHANDLED', message: `the value '${value}' for '${field}' is invalid: ${reason}` }, res.text);
}

/** 200 with `{data: {}, meta: {}}` (update, patch, delete). */
export function assertEmptyOk(res: HttpResponse): void {
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.body, { data: {}, meta: {} });
}

/**
 * 400 COULD_NOT_PARSE_BODY for a body value whose JSON kind does not fit the model (a string for a boolean,
 * an array for an object): the decode error names the field path (`isAdmin`, `process.hashes`), or the whole
 * body when `field` is empty.
 */
export function assertDecodeError(res: HttpResponse, field: string): void {
  assertError(res, 400, 'COULD_NOT_PARSE_BODY');
  const message = String(res.body.error.cause?.message);
  if (field === '') assert.match(message, /cannot unmarshal \w+ into Go value of type/, res.text);
  else assert.ok(message.includes(`.${field} of type`), `decode error should name ${field}: ${res.text}`);
}

/** 200 with an empty first page: a list below a record that does not exist, as upstream answers it. */
export function assertEmptyList(res: HttpResponse): void {
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.body.data, [], res.text);
  assert.equal(res.body.meta.pagination.totalCount, 0);
  assert.ok(Array.isArray(res.body.meta.filterableFields), 'the listed type\'s filterable fields');
}
