/**
 * Auth policies: which primary methods an identity may use (cert, updb with password rules and lockout,
 * ext-jwt with allowed signers) and which secondary factors it needs. The `default` policy exists on a
 * fresh controller and is what identities reference unless told otherwise.
 */
import { Type } from '@sinclair/typebox';
import { defineResource } from '../define-resource.ts';

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

export const authPolicyResource = defineResource({
  entityType: 'auth-policies',
  singular: 'authPolicy',
  permission: 'auth-policy',
  table: 'auth_policies',
  names: { detail: 'authPolicyDetail' },
  fields: {
    name: { schema: Type.String(), column: 'name', filter: 'string' },
    primary: { schema: PrimarySettings, column: 'primary_settings', kind: 'json' },
    secondary: { schema: SecondarySettings, column: 'secondary_settings', kind: 'json' },
  },
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
