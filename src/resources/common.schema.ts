/**
 * Shared wire value types (the seeds' §2.2 table) as JSON Schemas via TypeBox. Nullable values use a
 * type array (`["string","null"]`) rather than anyOf: AJV validates it, fast-json-stringify serializes it
 * without a slow union, and the OpenAPI generator turns it into `x-nullable`.
 */
import { Type, type TSchema, type Static, type TUnsafe } from '@sinclair/typebox';
import { TERMINATOR_COST_MAX, TERMINATOR_PRECEDENCES, type PrecedenceName } from '../fabric/terminators.ts';

/** Makes a simple typed schema also accept/emit null. */
export function Nullable<T extends TSchema>(schema: T): TUnsafe<Static<T> | null> {
  const type = (schema as { type?: string | string[] }).type;
  if (typeof type !== 'string') throw new Error('Nullable() needs a schema with a single type');
  const { [Symbol.for('TypeBox.Kind')]: _kind, ...rest } = schema as Record<string | symbol, unknown>;
  const nullable: Record<string, unknown> = { ...rest, type: [type, 'null'] };
  if (Array.isArray(rest.enum)) nullable.enum = [...rest.enum, null];
  return Type.Unsafe<Static<T> | null>(nullable);
}

/** Tag values are null, string or boolean (seeds §2.2). */
export const TagValue = Type.Unsafe<string | boolean | null>({ type: ['string', 'boolean', 'null'] });
export const Tags = Type.Record(Type.String(), TagValue);
export type Tags = Static<typeof Tags>;
export const TagsNullable = Type.Unsafe<Tags | null>({ type: ['object', 'null'], additionalProperties: TagValue });
/** Tags in a read model: always an object. */
export const TagsRead = Type.Unsafe<Tags>({ type: 'object', additionalProperties: true });

/** A free JSON object (appData, envInfo...). */
export const FreeObject = Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true });
export const FreeObjectNullable = Type.Unsafe<Record<string, unknown> | null>({ type: ['object', 'null'], additionalProperties: true });

export const Attributes = Type.Unsafe<string[] | null>({ type: ['array', 'null'], items: { type: 'string' } });
export const AttributesRead = Type.Array(Type.String());
export const Roles = Type.Unsafe<string[] | null>({ type: ['array', 'null'], items: { type: 'string' } });

export const Semantic = Type.Union([Type.Literal('AllOf'), Type.Literal('AnyOf')]);
/** A terminator's cost and precedence as every terminator write checks them (src/fabric/terminators.ts). */
export const TerminatorCost = Type.Integer({ minimum: 0, maximum: TERMINATOR_COST_MAX });
export const TerminatorPrecedence = Type.Unsafe<PrecedenceName>({ type: 'string', enum: [...TERMINATOR_PRECEDENCES] });
export const TerminatorCostMap = Type.Record(Type.String(), TerminatorCost);
export const TerminatorPrecedenceMap = Type.Record(Type.String(), TerminatorPrecedence);
export const IdentityType = Type.Unsafe<'User' | 'Device' | 'Service' | 'Router' | 'Default'>({
  type: 'string',
  enum: ['User', 'Device', 'Service', 'Router', 'Default'],
});
export const Username = Type.String({ minLength: 4, maxLength: 100 });
export const Password = Type.String({ minLength: 5, maxLength: 100 });

export const Link = Type.Object({ href: Type.String(), method: Type.Optional(Type.String()), comment: Type.Optional(Type.String()) });
export const Links = Type.Record(Type.String(), Link);
export type Links = Static<typeof Links>;

export const EntityRef = Type.Object({
  _links: Links,
  entity: Type.String(),
  id: Type.String(),
  name: Type.String(),
});
export type EntityRef = Static<typeof EntityRef>;
/** An API session reference: upstream renders it without a name. */
export const ApiSessionRef = Type.Object({ _links: Links, entity: Type.String(), id: Type.String() });

/** Properties every read model starts with, in upstream's output order. */
export const baseEntityProperties = {
  _links: Links,
  createdAt: Type.String({ format: 'date-time' }),
  id: Type.String(),
  tags: TagsRead,
  updatedAt: Type.String({ format: 'date-time' }),
};

export const Pagination = Type.Object({
  limit: Type.Integer(),
  offset: Type.Integer(),
  totalCount: Type.Integer(),
});

export const ListMeta = Type.Object({
  filterableFields: Type.Optional(Type.Array(Type.String())),
  pagination: Type.Optional(Pagination),
});

export const EmptyObject = Type.Object({});

export const CreateLocation = Type.Object({
  _links: Links,
  id: Type.String(),
});
