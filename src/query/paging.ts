/**
 * Effective paging for a list (upstream's query_options.go and checkLimits): `skip`/`limit` written in the
 * filter win over the `offset`/`limit` parameters, then both are clamped silently — limit missing, 0 or
 * below -1 → 10, above 500 → 500; -1 (or `limit none`) → every row; offset missing or negative → 0,
 * above 100000 → 100000.
 */

export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 500;
export const MAX_OFFSET = 100_000;
/** What `meta.pagination.limit` reports for an unlimited list (upstream rewrites -1 to int64 max). */
export const MAX_INT64_TEXT = '9223372036854775807';

export interface Paging {
  /** Rows per page; -1 when `unlimited`. */
  limit: number;
  offset: number;
  unlimited: boolean;
}

/** A parameter value as an integer, or undefined when it is absent or not a finite number. */
function fromParam(value: number | undefined): bigint | undefined {
  return value !== undefined && Number.isFinite(value) ? BigInt(Math.trunc(value)) : undefined;
}

export function resolvePaging(
  filter: { skip?: bigint; limit?: bigint | 'none' },
  params: { limit?: number; offset?: number },
): Paging {
  const limit = filter.limit === 'none' ? -1n : (filter.limit ?? fromParam(params.limit));
  const offset = filter.skip ?? fromParam(params.offset);
  return { ...clampLimit(limit), offset: clampOffset(offset) };
}

function clampLimit(limit: bigint | undefined): { limit: number; unlimited: boolean } {
  if (limit === -1n) return { limit: -1, unlimited: true };
  if (limit === undefined || limit === 0n || limit < -1n) return { limit: DEFAULT_LIMIT, unlimited: false };
  return { limit: limit > BigInt(MAX_LIMIT) ? MAX_LIMIT : Number(limit), unlimited: false };
}

function clampOffset(offset: bigint | undefined): number {
  if (offset === undefined || offset < 0n) return 0;
  return offset > BigInt(MAX_OFFSET) ? MAX_OFFSET : Number(offset);
}
