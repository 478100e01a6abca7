/**
 * Enrollment method `ottca` (enrollment.md §2.4): an identity pre-created with an ottca enrollment proves
 * possession of a certificate issued by the enrollment's third-party CA, presented over mutual TLS with
 * the one-time token. No CSR and no certificate is issued; the presented certificate becomes the
 * identity's `cert` authenticator (not issued by the network, tied to the CA). The CA must exist, allow
 * ottca enrollment and, as the seed contract requires (upstream does not), be verified. The enrollment is
 * consumed in the transaction that creates the authenticator.
 */
import { covers } from '../../auth/rights.ts';
import { identityRights } from '../../resources/identities/identity-rights.ts';
import { ApiError } from '../../errors.ts';
import type { Store } from '../../store/store.ts';
import { isoNow, systemClock, type Clock } from '../../resources/entity-service.ts';
import type { CaService } from '../../resources/cas/ca.service.ts';
import { consumeEnrollment } from '../enrollment-store.ts';
import type { EnrollInput, EnrollMethod } from '../enroll-method.ts';
import { assertCertificateUnused, chainToCa, insertCaAuthenticator, presentedChain } from './third-party-ca.ts';

export function createOttcaEnrollMethod(deps: { store: Store; cas: CaService; clock?: Clock }): EnrollMethod {
  const clock = deps.clock ?? systemClock;
  return {
    name: 'ottca',
    usesToken: true,
    async enroll(input: EnrollInput) {
      const enrollment = input.enrollment;
      if (!enrollment || !enrollment.identityId || !enrollment.caId) throw new ApiError('INVALID_ENROLLMENT_TOKEN');
      const ca = await deps.cas.findTrusted(enrollment.caId);
      if (!ca) throw new ApiError('INVALID_ENROLLMENT_TOKEN');
      if (!ca.isOttCaEnrollmentEnabled || !ca.isVerified) {
        throw new ApiError('ENROLLMENT_CA_NOT_VALID', {
          cause: { code: 'UNHANDLED', message: ca.isVerified ? 'the CA does not allow ottca enrollment' : 'the CA is not verified' },
        });
      }
      // The CA's key holder becomes the identity: only a CA whose stamped rights cover the identity enrolls it.
      if (!(await identityRights(deps.store, enrollment.identityId)).every((owner) => covers(ca.trust, owner))) {
        throw new ApiError('ENROLLMENT_CA_NOT_VALID', { cause: { code: 'UNHANDLED', message: 'the CA was last changed by a caller without the rights of this identity' } });
      }
      const chain = presentedChain(input.peerCertificates);
      const verified = chain ? chainToCa(chain, ca, clock.now()) : undefined;
      if (!chain || !verified) throw new ApiError('CERTIFICATE_FAILED_VALIDATION');
      const leaf = chain[0];
      await deps.store.write(async (tx) => {
        await assertCertificateUnused(tx, leaf.fingerprint, true);
        await consumeEnrollment(tx, enrollment);
        await insertCaAuthenticator(tx, {
          identityId: enrollment.identityId!,
          caId: ca.id,
          // The verified chain up to and including the CA, each PEM followed by an empty line (as upstream).
          certPem: verified.map((cert) => `${cert.pem}\n`).join(''),
          fingerprint: leaf.fingerprint,
          now: isoNow(clock),
        });
      });
      return {};
    },
  };
}
