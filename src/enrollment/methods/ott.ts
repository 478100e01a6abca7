/**
 * Method `ott` (enrollment.md §2.3, §3): the identity's one-time token plus a CSR. The controller issues a
 * client certificate from its signing intermediate (subject from the CSR, client profile, no SANs as the
 * 0.27-era controller) and, in one transaction, consumes the enrollment and stores a `cert` authenticator
 * holding the issued chain, its fingerprint and `isIssuedByNetwork = true`. The response carries the leaf
 * followed by the intermediate (never the root) as `cert`; upstream sends no `ca` for ott.
 */
import { ApiError } from '../../errors.ts';
import { parseCsr } from '../../pki/csr.ts';
import type { Issuer } from '../../pki/issue-certificate.ts';
import type { Store } from '../../store/store.ts';
import { isoNow, systemClock, type Clock } from '../../resources/entity-service.ts';
import { assertNoAuthenticator, consumeEnrollment, insertIssuedCertAuthenticator } from '../enrollment-store.ts';
import type { EnrollInput, EnrollMethod } from '../enroll-method.ts';

export interface OttEnrollDeps {
  store: Store;
  pki: { issuer: Issuer };
  clock?: Clock;
}

export function createOttEnrollMethod(deps: OttEnrollDeps): EnrollMethod {
  const clock = deps.clock ?? systemClock;
  return {
    name: 'ott',
    usesToken: true,
    async enroll(input: EnrollInput) {
      const enrollment = input.enrollment;
      if (!enrollment || enrollment.method !== 'ott' || !enrollment.identityId) throw new ApiError('INVALID_ENROLLMENT_TOKEN');
      const identityId = enrollment.identityId;
      if (!(await deps.store.get('SELECT 1 FROM identities WHERE id = ?', [identityId]))) throw new ApiError('INVALID_ENROLLMENT_TOKEN');
      const csrPem = input.body.clientCsr;
      if (typeof csrPem !== 'string' || csrPem.trim() === '') {
        throw new ApiError('COULD_NOT_PROCESS_CSR', { cause: { code: 'UNHANDLED', message: 'no CSR was supplied' } });
      }
      const csr = await parseCsr(csrPem);
      const issued = await deps.pki.issuer.issueClientCertificate(csr, { now: clock.now() });
      await deps.store.write(async (tx) => {
        await consumeEnrollment(tx, enrollment);
        await assertNoAuthenticator(tx, identityId, 'cert');
        const now = isoNow(clock);
        await insertIssuedCertAuthenticator(tx, identityId, issued, now);
      });
      return { cert: issued.chainPem };
    },
  };
}
