/**
 * Auth policies: which primary methods an identity may use (cert, updb with password rules and lockout,
 * ext-jwt with allowed signers) and which secondary factors it needs. The `default` policy exists on a
 * fresh controller and is what identities reference unless told otherwise.
 *
 * The request schemas follow the spec's create/put and patch definitions (the patch variants make every
 * nested member optional and nullable); the read model always shows every primary member, `allowedSigners`
 * as an array, and leaves out an unset `requireExtJwtSigner` (model.md §3.12).
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { defineResource, nameField } from '../define-resource.ts';
import { Nullable, TagsNullable } from '../common.schema.ts';

const PrimarySettings = Type.Object({
  cert: Type.Object({ allowed: Type.Boolean(), allowExpiredCerts: Type.Boolean() }),
  extJwt: Type.Object({ allowed: Type.Boolean(), allowedSigners: Type.Array(Type.String()) }),
  updb: Type.Object({
    allowed: Type.Boolean(),
    lockoutDurationMinutes: Type.Integer(),
    maxAttempts: Type.Integer(),
    minPasswordLength: Type.Integer(),
    requireMixedCase: Type.Boolean(),
    requireNumberChar: Type.Boolean(),
    requireSpecialChar: Type.Boolean(),
  }),
});

const SecondarySettings = Type.Object({
  requireExtJwtSigner: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'] })),
  requireTotp: Type.Boolean(),
});

/** Every member optional and nullable; the object itself nullable (null means "not supplied"). */
function patchOf(object: TSchema): TSchema {
  const properties: Record<string, TSchema> = {};
  for (const [name, member] of Object.entries((object as unknown as { properties: Record<string, TSchema> }).properties)) {
    const inner = member as unknown as { type?: unknown; properties?: unknown };
    if (inner.properties) properties[name] = patchOf(member);
    else if (inner.type === 'array') properties[name] = Type.Unsafe({ type: ['array', 'null'], items: (member as unknown as { items: unknown }).items });
    else properties[name] = Type.Unsafe({ ...member, type: Array.isArray(inner.type) ? inner.type : [inner.type, 'null'] });
  }
  return Type.Unsafe({ type: ['object', 'null'], properties });
}

export const authPolicyResource = defineResource({
  entityType: 'auth-policies',
  singular: 'authPolicy',
  permission: 'auth-policy',
  table: 'auth_policies',
  names: { create: 'authPolicyCreate', update: 'authPolicyUpdate', patch: 'authPolicyPatch', detail: 'authPolicyDetail' },
  fields: {
    name: nameField(),
    primary: { schema: PrimarySettings, column: 'primary_settings', kind: 'json', create: 'required', put: 'required', patch: true },
    secondary: { schema: SecondarySettings, column: 'secondary_settings', kind: 'json', create: 'required', put: 'required', patch: true },
  },
  // The settings' members by their upstream names (`primary.updb.maxAttempts`...), read from the JSON columns.
  extraSymbols: Object.fromEntries(
    (
      [
        ['primary.cert.allowed', 'bool'], ['primary.cert.allowExpiredCerts', 'bool'], ['primary.extJwt.allowed', 'bool'],
        ['primary.updb.allowed', 'bool'], ['primary.updb.minPasswordLength', 'int'], ['primary.updb.requireSpecialChar', 'bool'],
        ['primary.updb.requireNumberChar', 'bool'], ['primary.updb.requireMixedCase', 'bool'], ['primary.updb.maxAttempts', 'int'],
        ['secondary.requireTotp', 'bool'], ['secondary.requireExtJwtSigner', 'string'],
      ] as const
    ).map(([name, type]) => {
      const [column, ...path] = name.split('.');
      const json = `e.${column}_settings #> '{${path.join(',')}}'`;
      // PostgreSQL: JSON booleans as 1/0 and numbers as numbers, as SQLite's json_extract answers.
      const postgresSql =
        type === 'bool'
          ? `(CASE ${json} WHEN 'true'::jsonb THEN 1 WHEN 'false'::jsonb THEN 0 END)`
          : type === 'int'
            ? `(CASE WHEN jsonb_typeof(${json}) = 'number' THEN CAST(${json} #>> '{}' AS DOUBLE PRECISION) END)`
            : `(CASE WHEN jsonb_typeof(${json}) = 'string' THEN ${json} #>> '{}' END)`;
      return [name, { kind: 'scalar' as const, type, sql: `json_extract(e.${column}_settings, '$.${path.join('.')}')`, postgresSql }];
    }),
  ),
});

/** Request bodies of create and put (authPolicyCreate / authPolicyUpdate). */
export const authPolicyWriteSchema = Type.Unsafe({
  type: 'object',
  properties: { name: Type.String(), primary: PrimarySettings, secondary: SecondarySettings, tags: TagsNullable },
  required: ['name', 'primary', 'secondary'],
});

/** Request body of patch (authPolicyPatch). */
export const authPolicyPatchSchema = Type.Unsafe({
  type: 'object',
  properties: { name: Nullable(Type.String()), primary: patchOf(PrimarySettings), secondary: patchOf(SecondarySettings), tags: TagsNullable },
});

/** The stored default policy (upstream's fresh-database values). */
export const defaultAuthPolicy = {
  id: 'default',
  name: 'Default',
  primary: {
    cert: { allowed: true, allowExpiredCerts: true },
    extJwt: { allowed: true, allowedSigners: [] as string[] },
    updb: {
      allowed: true,
      lockoutDurationMinutes: 0,
      maxAttempts: 0,
      minPasswordLength: 5,
      requireMixedCase: false,
      requireNumberChar: false,
      requireSpecialChar: false,
    },
  },
  secondary: { requireTotp: false },
};
