/**
 * Read access to an auth policy's settings: the primary ones, which every authentication method consults
 * to know whether it is allowed for the identity (and the password rules and lockout), and the secondary
 * ones, which decide whether an API session stays partial until MFA or a second JWT is presented.
 */
import type { Db } from '../store/database.ts';
import { prepare } from '../store/entity-table.ts';

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
  primary(id: string): PrimarySettings | undefined;
  secondary(id: string): SecondarySettings | undefined;
}

export function createAuthPolicyReader(db: Db): AuthPolicyReader {
  return {
    primary(id) {
      const row = prepare(db, 'SELECT primary_settings FROM auth_policies WHERE id = ?').get(id) as { primary_settings: string } | undefined;
      return row ? (JSON.parse(row.primary_settings) as PrimarySettings) : undefined;
    },
    secondary(id) {
      const row = prepare(db, 'SELECT secondary_settings FROM auth_policies WHERE id = ?').get(id) as { secondary_settings: string } | undefined;
      return row ? (JSON.parse(row.secondary_settings) as SecondarySettings) : undefined;
    },
  };
}
