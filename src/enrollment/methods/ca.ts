/**
 * Enrollment method `ca`, CA auto enrollment (enrollment.md §2.5): no token. A client presents, over
 * mutual TLS, a certificate issued by a verified third-party CA that allows auto enrollment; the first such
 * CA that validates it wins, and a new identity is created for it:
 *
 * - name: the CA's `identityNameFormat` with `[caName]`, `[caId]`, `[commonName]`, `[requestedName]` and
 *   `[identityId]` replaced (the requested name defaults to the new identity id); on a collision a six-digit
 *   counter is appended (`name000001`, `name000002`, ...);
 * - role attributes: the CA's `identityRoles`; type Default, not admin, the default auth policy;
 * - with an `externalIdClaim` on the CA: the identity carries the claimed externalId and no authenticator
 *   (logins are matched by externalId); otherwise a `cert` authenticator holds the leaf's fingerprint.
 */
import { mayCreateIdentities } from '../../auth/rights.ts';
import { ApiError } from '../../errors.ts';
import { newShortId } from '../../ids.ts';
import { insertEntity } from '../../store/entity-table.ts';
import type { Sql, Store } from '../../store/store.ts';
import { isoNow, systemClock, valuesFromBody, type Clock } from '../../resources/entity-service.ts';
import { identityResource } from '../../resources/identities/identity.resource.ts';
import { normalizeRoleAttributes, type AccessService } from '../../access/access.service.ts';
import type { CaService, TrustedCa } from '../../resources/cas/ca.service.ts';
import { externalIdFrom } from '../../resources/cas/external-id-claim.ts';
import type { ParsedCertificate } from '../../pki/certificate-chain.ts';
import type { EnrollInput, EnrollMethod } from '../enroll-method.ts';
import { assertCertificateUnused, chainToCa, insertCaAuthenticator, presentedChain } from './third-party-ca.ts';

export interface CaEnrollDeps {
  store: Store;
  cas: CaService;
  access: AccessService;
  clock?: Clock;
}

/** Expands the CA's identity name format; every occurrence of each placeholder is replaced. */
export function formatIdentityName(format: string, values: { caName: string; caId: string; commonName: string; requestedName: string; identityId: string }): string {
  return format
    .replaceAll('[caName]', values.caName)
    .replaceAll('[caId]', values.caId)
    .replaceAll('[commonName]', values.commonName)
    .replaceAll('[requestedName]', values.requestedName)
    .replaceAll('[identityId]', values.identityId);
}

export function createCaEnrollMethod(deps: CaEnrollDeps): EnrollMethod {
  const clock = deps.clock ?? systemClock;

  async function firstValidatingCa(chain: ParsedCertificate[]): Promise<TrustedCa | undefined> {
    const now = clock.now();
    return (await deps.cas.autoEnrollmentPool()).find((ca) => chainToCa(chain, ca, now) !== undefined);
  }

  async function uniqueName(q: Sql, base: string): Promise<string> {
    let name = base;
    for (let counter = 1; await q.get('SELECT 1 FROM identities WHERE name = ?', [name]); counter++) name = base + String(counter).padStart(6, '0');
    return name;
  }

  return {
    name: 'ca',
    usesToken: false,
    async enroll(input: EnrollInput) {
      if ((await deps.cas.count()) === 0) throw new ApiError('ENROLLMENT_NO_VALID_CAS');
      const chain = presentedChain(input.peerCertificates);
      const ca = chain ? await firstValidatingCa(chain) : undefined;
      if (!chain || !ca) throw new ApiError('CERT_FAILED_VALIDATION');
      // Auto enrollment creates an identity with the CA's roles: only a CA last set by a caller who may create identities does it.
      if (!mayCreateIdentities(ca.trust)) {
        throw new ApiError('ENROLLMENT_CA_NOT_VALID', { cause: { code: 'UNHANDLED', message: 'the CA was last changed by a caller who may not create identities' } });
      }
      const leaf = chain[0];
      let externalId: string | undefined;
      if (ca.externalIdClaim) {
        externalId = externalIdFrom(ca.externalIdClaim, leaf);
        if (externalId === undefined) throw new ApiError('MISSING_CERT_CLAIM');
      }
      const identityId = newShortId();
      const requestedName = typeof input.body.name === 'string' && input.body.name !== '' ? input.body.name : identityId;
      const baseName = formatIdentityName(ca.identityNameFormat, {
        caName: ca.name, caId: ca.id, commonName: leaf.commonName ?? '', requestedName, identityId,
      });

      await deps.store.write(async (tx) => {
        if (externalId !== undefined) {
          if (await tx.get('SELECT 1 FROM identities WHERE external_id = ?', [externalId])) {
            throw new ApiError('ENROLLMENT_IDENTITY_ALREADY_ENROLLED', { cause: { code: 'UNHANDLED', message: 'an identity with this externalId already exists' } });
          }
        } else {
          await assertCertificateUnused(tx, leaf.fingerprint, false);
        }
        const now = isoNow(clock);
        const roleAttributes = normalizeRoleAttributes(ca.identityRoles, { checkPrefix: false });
        const values = {
          ...valuesFromBody(identityResource, { name: await uniqueName(tx, baseName), isAdmin: false, roleAttributes, externalId }, 'create'),
          id: identityId,
          type: 'Default',
          createdAt: now,
          updatedAt: now,
        };
        await insertEntity(tx, identityResource.decl, values);
        await deps.access.entityChanged(tx, 'identity', identityId, roleAttributes);
        if (externalId === undefined) {
          await insertCaAuthenticator(tx, { identityId, caId: ca.id, certPem: leaf.pem, fingerprint: leaf.fingerprint, now });
        }
      });
      return {};
    },
  };
}
