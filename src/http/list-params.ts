/**
 * Query parameters of list operations (`limit`, `offset`, `filter`, `sort`, and where offered
 * `roleFilter`/`roleSemantic`) as a schema and as the ListRequest the services take.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { ListRequest } from '../resources/entity-service.ts';

const pagingProps = {
  limit: Type.Optional(Type.Integer()),
  offset: Type.Optional(Type.Integer()),
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

export function listRequest(req: FastifyRequest): ListRequest {
  const q = req.query as { limit?: number; offset?: number; sort?: string; roleFilter?: string[]; roleSemantic?: string };
  return {
    filter: firstFilter(req),
    sort: q.sort,
    limit: q.limit,
    offset: q.offset,
    roleFilter: q.roleFilter,
    roleSemantic: q.roleSemantic,
  };
}
