/**
 * `method=password` (updb): looks the authenticator up by exact user name, refuses disabled identities and
 * auth policies that disallow passwords, and verifies the argon2id hash. Every failure is the same
 * 401 INVALID_AUTH so a caller cannot tell which part was wrong; an unknown user name still costs one
 * hash verification so timing does not tell either.
 *
 * Lockout (auth.md §1.3): each wrong password of an enabled identity counts against its authenticator
 * (stored, so the count survives restarts); when the policy's `maxAttempts` is non-zero and reached, the
 * identity is disabled for `lockoutDurationMinutes` (0: until an administrator enables it), its API
 * sessions end, and the count starts over. A successful login resets the count.
 */
import { ApiError } from '../../errors.ts';
import { decoyHash, verifyPassword } from '../password-hash.ts';
import type { Store } from '../../store/store.ts';
import { systemClock, type Clock } from '../../resources/entity-service.ts';
import type { AuthenticatorService } from '../../resources/authenticators/authenticator.service.ts';
import type { IdentityService } from '../../resources/identities/identity.service.ts';
import type { AuthMethod, AuthRequest } from './auth-method.ts';
import type { AuthPolicyReader, PrimarySettings } from '../auth-policy-reader.ts';

export function createPasswordMethod(deps: {
  authenticators: AuthenticatorService;
  identities: IdentityService;
  policies: AuthPolicyReader;
  /** Where failed attempts are counted; without it there is no lockout. */
  store?: Store;
  clock?: Clock;
}): AuthMethod {
  const clock = deps.clock ?? systemClock;

  async function recordFailure(store: Store, authenticatorId: string, identityId: string, updb: PrimarySettings['updb']): Promise<void> {
    await store.write(async (tx) => {
      const row = await tx.get<{ failed_attempts: number }>(
        'UPDATE authenticators SET failed_attempts = failed_attempts + 1 WHERE id = ? RETURNING failed_attempts',
        [authenticatorId],
      );
      if (!row || updb.maxAttempts <= 0 || row.failed_attempts < updb.maxAttempts) return;
      const now = clock.now();
      const until = updb.lockoutDurationMinutes > 0 ? new Date(now.getTime() + updb.lockoutDurationMinutes * 60_000).toISOString() : null;
      await tx.run('UPDATE identities SET disabled_at = ?, disabled_until = ?, updated_at = ? WHERE id = ?', [
        now.toISOString(),
        until,
        now.toISOString(),
        identityId,
      ]);
      await tx.run('DELETE FROM api_sessions WHERE identity_id = ?', [identityId]);
      await tx.run('UPDATE authenticators SET failed_attempts = 0 WHERE id = ?', [authenticatorId]);
    });
  }

  return {
    name: 'password',
    async authenticate(req: AuthRequest) {
      const { username, password } = req.body;
      if (typeof username !== 'string' || typeof password !== 'string' || username === '' || password === '') {
        throw new ApiError('COULD_NOT_VALIDATE', { cause: { code: 'UNHANDLED', message: 'username and password fields are required' } });
      }
      const authenticator = await deps.authenticators.findUpdbByUsername(username);
      if (!authenticator) {
        await verifyPassword(await decoyHash(), password);
        throw new ApiError('INVALID_AUTH');
      }
      const identity = await deps.identities.summary(authenticator.identityId as string);
      const policy = identity ? await deps.policies.primary(identity.authPolicyId) : undefined;
      const passwordOk = await verifyPassword(authenticator.passwordHash as string, password);
      if (!identity || identity.disabled || !policy || !policy.updb.allowed) throw new ApiError('INVALID_AUTH');
      const authenticatorId = authenticator.id as string;
      if (!passwordOk) {
        if (deps.store) await recordFailure(deps.store, authenticatorId, identity.id, policy.updb);
        throw new ApiError('INVALID_AUTH');
      }
      if (deps.store) await deps.store.write((tx) => tx.run('UPDATE authenticators SET failed_attempts = 0 WHERE id = ? AND failed_attempts <> 0', [authenticatorId]));
      return { identityId: identity.id, authenticatorId };
    },
  };
}
