/**
 * TOTP MFA records (auth.md §4): at most one per identity, unverified until the first code is verified.
 * The caller's own enrollment (create, read, QR code, verify, recovery codes, removal), the step-up of an
 * API session (`POST /authenticate/mfa`) and the administrator's removal. Recovery codes are single-use:
 * a matching one is removed in the same transaction that accepts it. Passing MFA is recorded on the API
 * session (`is_mfa_complete`, `mfa_passed_at`), which MFA posture checks read.
 */
import type { Sql, Store, Tx } from '../../store/store.ts';
import { ApiError, notFound } from '../../errors.ts';
import { newEntityId } from '../../ids.ts';
import { isoNow, systemClock, type Clock } from '../entity-service.ts';
import { isValidTotp, newRecoveryCodes, newTotpSecret, provisioningUrl, qrCodePng } from '../../auth/totp.ts';

export interface MfaRecord {
  id: string;
  identityId: string;
  secret: string;
  isVerified: boolean;
  recoveryCodes: string[];
  createdAt: string;
  updatedAt: string;
  tags: Record<string, unknown>;
}

function decode(row: Record<string, unknown>): MfaRecord {
  return {
    id: row.id as string,
    identityId: row.identity_id as string,
    secret: row.secret as string,
    isVerified: row.is_verified === 1,
    recoveryCodes: JSON.parse(row.recovery_codes as string) as string[],
    createdAt: row.created_at as string,
    updatedAt: row.updated_at as string,
    tags: JSON.parse(row.tags as string) as Record<string, unknown>,
  };
}

const invalidToken = () => new ApiError('MFA_INVALID_TOKEN');

export function createMfaService(store: Store, clock: Clock = systemClock) {
  async function findIn(q: Sql, identityId: string): Promise<MfaRecord | undefined> {
    const row = await q.get('SELECT * FROM mfas WHERE identity_id = ?', [identityId]);
    return row ? decode(row) : undefined;
  }

  function find(identityId: string): Promise<MfaRecord | undefined> {
    return findIn(store, identityId);
  }

  /** The identity's record; 404 when there is none, or when its verification state is not the wanted one. */
  async function recordOf(identityId: string, verified?: boolean): Promise<MfaRecord> {
    const mfa = await find(identityId);
    if (!mfa || (verified !== undefined && mfa.isVerified !== verified)) throw new ApiError('NOT_FOUND');
    return mfa;
  }

  async function isEnabled(identityId: string): Promise<boolean> {
    return (await store.get('SELECT 1 FROM mfas WHERE identity_id = ? AND is_verified = 1', [identityId])) !== undefined;
  }

  /**
   * Checks a TOTP code, or (when allowed) a recovery code, which is consumed inside `tx`. Reads the record
   * again inside the transaction so that one recovery code can never be accepted twice.
   */
  async function acceptCode(tx: Tx, identityId: string, code: string, allowRecovery: boolean): Promise<boolean> {
    const mfa = await findIn(tx, identityId);
    if (!mfa || code === '') return false;
    if (isValidTotp(mfa.secret, code, clock.now())) return true;
    if (!allowRecovery) return false;
    const index = mfa.recoveryCodes.indexOf(code);
    if (index < 0) return false;
    const remaining = mfa.recoveryCodes.filter((_, i) => i !== index);
    await tx.run('UPDATE mfas SET recovery_codes = ?, updated_at = ? WHERE id = ?', [JSON.stringify(remaining), isoNow(clock), mfa.id]);
    return true;
  }

  async function markSessionPassed(tx: Tx, apiSessionId: string, alsoRequired: boolean): Promise<void> {
    const now = isoNow(clock);
    await tx.run(
      `UPDATE api_sessions SET is_mfa_complete = 1, mfa_passed_at = ?, updated_at = ?${alsoRequired ? ', is_mfa_required = 1' : ''} WHERE id = ?`,
      [now, now, apiSessionId],
    );
  }

  /** `POST /current-identity/mfa`: a new unverified record; 409 MFA_EXISTS when one exists. */
  function enroll(identityId: string): Promise<string> {
    return store.write(async (tx) => {
      if (await findIn(tx, identityId)) throw new ApiError('MFA_EXISTS');
      const id = newEntityId();
      const now = isoNow(clock);
      await tx.run(
        'INSERT INTO mfas (id, identity_id, secret, is_verified, recovery_codes, created_at, updated_at) VALUES (?, ?, ?, 0, ?, ?, ?)',
        [id, identityId, newTotpSecret(), JSON.stringify(newRecoveryCodes()), now, now],
      );
      return id;
    });
  }

  /** `POST /current-identity/mfa/verify`: TOTP only; completes the calling API session too. */
  async function verify(identityId: string, apiSessionId: string, code: string): Promise<void> {
    const mfa = await recordOf(identityId, false);
    if (!isValidTotp(mfa.secret, code, clock.now())) throw invalidToken();
    await store.write(async (tx) => {
      await tx.run('UPDATE mfas SET is_verified = 1, updated_at = ? WHERE id = ?', [isoNow(clock), mfa.id]);
      await markSessionPassed(tx, apiSessionId, true);
    });
  }

  /** `DELETE /current-identity/mfa`: a verified record needs a TOTP or recovery code, an unverified one none. */
  async function removeOwn(identityId: string, code: string): Promise<void> {
    await store.write(async (tx) => {
      const mfa = await findIn(tx, identityId);
      if (!mfa) throw new ApiError('NOT_FOUND');
      if (mfa.isVerified && !(await acceptCode(tx, identityId, code, true))) throw invalidToken();
      await tx.run('DELETE FROM mfas WHERE id = ?', [mfa.id]);
      // MFA posture no longer passes for any of the identity's API sessions.
      await tx.run('UPDATE api_sessions SET mfa_passed_at = NULL WHERE identity_id = ?', [identityId]);
    });
  }

  /** `GET /current-identity/mfa/recovery-codes`: TOTP only. */
  async function recoveryCodes(identityId: string, code: string): Promise<MfaRecord> {
    const mfa = await recordOf(identityId, true);
    if (code === '' || !isValidTotp(mfa.secret, code, clock.now())) throw invalidToken();
    return mfa;
  }

  /** `POST /current-identity/mfa/recovery-codes`: a TOTP or recovery code replaces all twenty codes. */
  async function regenerateRecoveryCodes(identityId: string, code: string): Promise<void> {
    await recordOf(identityId, true);
    await store.write(async (tx) => {
      if (!(await acceptCode(tx, identityId, code, true))) throw invalidToken();
      await tx.run('UPDATE mfas SET recovery_codes = ?, updated_at = ? WHERE identity_id = ?', [
        JSON.stringify(newRecoveryCodes()),
        isoNow(clock),
        identityId,
      ]);
    });
  }

  /**
   * `POST /authenticate/mfa`: a TOTP or recovery code completes the API session. An identity without a
   * verified record is not enrolled (409 MFA_NOT_ENROLLED): an unverified secret is finished with verify.
   */
  async function authenticate(identityId: string, apiSessionId: string, code: string): Promise<void> {
    const mfa = await find(identityId);
    if (!mfa || !mfa.isVerified) throw new ApiError('MFA_NOT_ENROLLED');
    await store.write(async (tx) => {
      if (!(await acceptCode(tx, identityId, code, true))) throw invalidToken();
      await markSessionPassed(tx, apiSessionId, false);
    });
  }

  /** A current TOTP code of the identity's verified enrollment (TOTP tokens of JWT sessions); throws otherwise. */
  async function checkTotp(identityId: string, code: string): Promise<void> {
    const mfa = await find(identityId);
    if (!mfa || !mfa.isVerified) throw new ApiError('MFA_NOT_ENROLLED');
    if (!isValidTotp(mfa.secret, code, clock.now())) throw invalidToken();
  }

  /** `DELETE /identities/{id}/mfa` (administrator): removes the record, verified or not, without a code. */
  async function adminRemove(identityId: string): Promise<void> {
    await store.write(async (tx) => {
      if (!(await tx.get('SELECT 1 FROM identities WHERE id = ?', [identityId]))) throw notFound('identity', identityId);
      await tx.run('DELETE FROM mfas WHERE identity_id = ?', [identityId]);
    });
  }

  function links(mfa: MfaRecord): Record<string, { href: string }> {
    const out: Record<string, { href: string }> = {
      self: { href: './current-identity/mfa' },
      'current-identity': { href: './current-identity' },
    };
    if (mfa.isVerified) out['recovery-codes'] = { href: './current-identity/mfa/recovery-codes' };
    else {
      out.verify = { href: './current-identity/mfa/verify' };
      out.qr = { href: './current-identity/mfa/qr-code' };
    }
    return out;
  }

  function base(mfa: MfaRecord): Record<string, unknown> {
    return { _links: links(mfa), createdAt: mfa.createdAt, id: mfa.id, tags: mfa.tags, updatedAt: mfa.updatedAt };
  }

  /**
   * detailMfa: the secret's URL and the recovery codes only while unverified; once verified, `recoveryCodes` is
   * null and the URL left out, as upstream renders it. Codes are listed in sorted order, as upstream lists them.
   */
  function present(mfa: MfaRecord, identityName: string): Record<string, unknown> {
    const out: Record<string, unknown> = { ...base(mfa), isVerified: mfa.isVerified, recoveryCodes: null };
    if (!mfa.isVerified) {
      out.provisioningUrl = provisioningUrl(identityName, mfa.secret);
      out.recoveryCodes = [...mfa.recoveryCodes].sort();
    }
    return out;
  }

  function presentRecoveryCodes(mfa: MfaRecord): Record<string, unknown> {
    return { ...base(mfa), recoveryCodes: [...mfa.recoveryCodes].sort() };
  }

  /** PNG QR code of an unverified record's provisioning URL; 404 when absent or verified. */
  async function qrCode(identityId: string, identityName: string): Promise<Buffer> {
    const mfa = await recordOf(identityId, false);
    return qrCodePng(provisioningUrl(identityName, mfa.secret));
  }

  return {
    find,
    recordOf,
    isEnabled,
    enroll,
    verify,
    removeOwn,
    recoveryCodes,
    regenerateRecoveryCodes,
    authenticate,
    checkTotp,
    adminRemove,
    present,
    presentRecoveryCodes,
    qrCode,
  };
}

export type MfaService = ReturnType<typeof createMfaService>;
