/**
 * Query parameters of list operations (`limit`, `offset`, `filter`, `sort`, and where offered
 * `roleFilter`/`roleSemantic`) as a schema and as the ListRequest the services take.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { ListRequest } from '../resources/entity-service.ts';
import { fieldError } from '../errors.ts';

// Digits only, at most int64's 19: `1e3`, `0x10` or `Infinity` are not integers upstream either.
const Int64Text = Type.String({ pattern: '^-?[0-9]{1,19}$' });

const pagingProps = {
  limit: Type.Optional(Int64Text),
  offset: Type.Optional(Int64Text),
  filter: Type.Optional(Type.String()),
  sort: Type.Optional(Type.String()),
};

export const ListQuery = Type.Object(pagingProps);
export const RoleListQuery = Type.Object({
  ...pagingProps,
  roleFilter: Type.Optional(Type.Array(Type.String())),
  roleSemantic: Type.Optional(Type.String()),
});

export const IdParams = Type.Object({ id: Type.String({ minLength: 1 }) });

/** The first `filter=` value wins, as upstream reads it. */
function firstFilter(req: FastifyRequest): string | undefined {
  const raw = req.raw.url ?? '';
  const q = raw.indexOf('?');
  if (q < 0) return undefined;
  const value = new URLSearchParams(raw.slice(q + 1)).get('filter');
  return value ?? undefined;
}

const int64Max = 9223372036854775807n;

/** A paging number that fits int64, as upstream parses it; anything else is a validation error. */
function int64Param(name: 'limit' | 'offset', text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = BigInt(text);
  if (n > int64Max || n < -int64Max - 1n) throw fieldError(name, `${name} in query must be of type int64: "${text}"`, text);
  return Number(n);
}

export function listRequest(req: FastifyRequest): ListRequest {
  const q = req.query as { limit?: string; offset?: string; sort?: string; roleFilter?: string[]; roleSemantic?: string };
  return {
    filter: firstFilter(req),
    sort: q.sort,
    limit: int64Param('limit', q.limit),
    offset: int64Param('offset', q.offset),
    roleFilter: q.roleFilter,
    roleSemantic: q.roleSemantic,
  };
}
