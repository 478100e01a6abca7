/**
 * Method `updb` (enrollment.md §2.6): the identity's one-time token plus a password. The user name is the
 * one an administrator put on the enrollment; a user name in the request is ignored, as upstream. The
 * password is hashed (argon2id) before the write transaction, which consumes the enrollment and stores the
 * `updb` authenticator. The response names the user name, which the Go SDK reads back.
 */
import { ApiError, fieldError } from '../../errors.ts';
import { hashPassword } from '../../auth/password-hash.ts';
import { assertPasswordRules } from '../../auth/password-rules.ts';
import type { Store } from '../../store/store.ts';
import { insertEntity } from '../../store/entity-table.ts';
import { newEntityId } from '../../ids.ts';
import { isoNow, systemClock, type Clock } from '../../resources/entity-service.ts';
import { authenticatorResource } from '../../resources/authenticators/authenticator.resource.ts';
import { assertNoAuthenticator, consumeEnrollment } from '../enrollment-store.ts';
import type { EnrollInput, EnrollMethod } from '../enroll-method.ts';

export interface UpdbEnrollDeps {
  store: Store;
  clock?: Clock;
}

const MIN_PASSWORD = 5;
const MAX_PASSWORD = 100;

export function createUpdbEnrollMethod(deps: UpdbEnrollDeps): EnrollMethod {
  const clock = deps.clock ?? systemClock;
  return {
    name: 'updb',
    usesToken: true,
    async enroll(input: EnrollInput) {
      const enrollment = input.enrollment;
      if (!enrollment || enrollment.method !== 'updb' || !enrollment.identityId) throw new ApiError('INVALID_ENROLLMENT_TOKEN');
      const identityId = enrollment.identityId;
      if (!(await deps.store.get('SELECT 1 FROM identities WHERE id = ?', [identityId]))) throw new ApiError('INVALID_ENROLLMENT_TOKEN');
      const password = input.body.password;
      // Upstream answers 500 for a missing password (it reaches the module only on the legacy paths); 400 is what it means.
      if (typeof password !== 'string' || password === '') throw fieldError('password', 'password in body is required', '');
      if (password.length < MIN_PASSWORD) throw fieldError('password', `password in body should be at least ${MIN_PASSWORD} chars long`, password);
      if (password.length > MAX_PASSWORD) throw fieldError('password', `password in body should be at most ${MAX_PASSWORD} chars long`, password);
      await assertPasswordRules(deps.store, identityId, password);
      const username = enrollment.username ?? '';
      const passwordHash = await hashPassword(password);
      await deps.store.write(async (tx) => {
        await consumeEnrollment(tx, enrollment);
        await assertNoAuthenticator(tx, identityId, 'updb');
        const now = isoNow(clock);
        await insertEntity(tx, authenticatorResource.decl, {
          id: newEntityId(),
          identityId,
          method: 'updb',
          username,
          passwordHash,
          isIssuedByNetwork: false,
          createdAt: now,
          updatedAt: now,
          tags: {},
        });
      });
      return { username };
    },
  };
}
