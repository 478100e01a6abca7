/**
 * The upstream success envelope: `{data, meta}`. Lists carry `meta.pagination` and `meta.filterableFields`;
 * creates answer 201 with `{id, _links:{self}}`; updates and deletes answer `data: {}`. Response schemas
 * built here both document the operation and drive fast serialization.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { CreateLocation, EmptyObject, ListMeta, type Links } from '../resources/common.schema.ts';
import { MAX_INT64_TEXT } from '../query/index.ts';

const EmptyMeta = Type.Object({});
const NullMeta = Type.Null();

export function detailEnvelope(data: TSchema, meta: 'empty' | 'null' = 'empty'): TSchema {
  return Type.Object({ data, meta: meta === 'null' ? NullMeta : EmptyMeta });
}

export function listEnvelope(item: TSchema): TSchema {
  return Type.Object({ data: Type.Array(item), meta: ListMeta });
}

export const emptyEnvelope = Type.Object({ data: EmptyObject, meta: EmptyMeta });
export const createEnvelope = Type.Object({ data: CreateLocation, meta: EmptyMeta });

export interface Page {
  limit: number;
  offset: number;
  totalCount: number;
  unlimited?: boolean;
}

const maxInt64 = BigInt(MAX_INT64_TEXT);

export function ok<T>(data: T) {
  return { data, meta: {} };
}

export function okNullMeta<T>(data: T) {
  return { data, meta: null };
}

export function list<T>(items: T[], page: Page, filterableFields?: string[]) {
  return {
    data: items,
    meta: {
      ...(filterableFields && filterableFields.length ? { filterableFields } : {}),
      pagination: {
        // An unlimited page reports int64 max, as upstream does; BigInt keeps all 19 digits on the wire.
        limit: page.unlimited ? maxInt64 : page.limit,
        offset: page.offset,
        totalCount: page.totalCount,
      },
    },
  };
}

export function created(id: string, links: Links) {
  return { data: { _links: { self: links.self }, id }, meta: {} };
}

export function empty() {
  return { data: {}, meta: {} };
}
