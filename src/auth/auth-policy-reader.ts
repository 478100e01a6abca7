/**
 * Read access to an auth policy's settings: the primary ones, which every authentication method consults
 * to know whether it is allowed for the identity (and the password rules and lockout), and the secondary
 * ones, which decide whether an API session stays partial until MFA or a second JWT is presented.
 */
import type { Sql } from '../store/store.ts';

export interface PrimarySettings {
  cert: { allowed: boolean; allowExpiredCerts: boolean };
  updb: {
    allowed: boolean;
    minPasswordLength: number;
    requireSpecialChar: boolean;
    requireNumberChar: boolean;
    requireMixedCase: boolean;
    maxAttempts: number;
    lockoutDurationMinutes: number;
  };
  extJwt: { allowed: boolean; allowedSigners: string[] | null };
}

export interface SecondarySettings {
  requireTotp: boolean;
  requireExtJwtSigner?: string | null;
}

export interface AuthPolicyReader {
  primary(id: string): Promise<PrimarySettings | undefined>;
  secondary(id: string): Promise<SecondarySettings | undefined>;
}

export function createAuthPolicyReader(store: Sql): AuthPolicyReader {
  return {
    async primary(id) {
      const row = await store.get<{ primary_settings: string }>('SELECT primary_settings FROM auth_policies WHERE id = ?', [id]);
      return row ? (JSON.parse(row.primary_settings) as PrimarySettings) : undefined;
    },
    async secondary(id) {
      const row = await store.get<{ secondary_settings: string }>('SELECT secondary_settings FROM auth_policies WHERE id = ?', [id]);
      return row ? (JSON.parse(row.secondary_settings) as SecondarySettings) : undefined;
    },
  };
}
