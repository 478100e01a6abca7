/**
 * Read access to an auth policy's primary settings, which every authentication method consults to know
 * whether it is allowed for the identity.
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

export interface AuthPolicyReader {
  primary(id: string): PrimarySettings | undefined;
}

export function createAuthPolicyReader(db: Db): AuthPolicyReader {
  return {
    primary(id) {
      const row = prepare(db, 'SELECT primary_settings FROM auth_policies WHERE id = ?').get(id) as { primary_settings: string } | undefined;
      return row ? (JSON.parse(row.primary_settings) as PrimarySettings) : undefined;
    },
  };
}
