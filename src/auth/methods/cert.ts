/**
 * `method=cert` (auth.md §1.4, enrollment.md §3.6): the client certificate presented over mutual TLS.
 * The chain is verified by the application (the listener only requests a certificate), ignoring validity
 * dates and accepting any key usage, against three pools in turn:
 *
 * 1. the self-signed roots of the controller's CA bundle, with the rest of the presented chain as
 *    intermediates;
 * 2. every certificate of the bundle: success here means the client left out its intermediate, which the
 *    session reports as `improperClientCertChain`;
 * 3. the first certificate of every verified, auth-enabled third-party CA.
 *
 * A chain ending at a third-party CA with an `externalIdClaim` identifies the identity by externalId
 * (authenticator id `internal`); otherwise the leaf's fingerprint names the cert authenticator. Then the
 * identity must be enabled, its auth policy must allow certificates, and an expired leaf is refused unless
 * the policy allows expired certificates. A chain ending at a third-party CA logs in only identities whose
 * rights the CA's stamped rights cover (auth/rights.ts). Every failure is 401 INVALID_AUTH. A pending request-extend flag
 * of the authenticator is carried into the new session (and announced in a response header).
 */
import { ApiError } from '../../errors.ts';
import type { Store } from '../../store/store.ts';
import {
  isValidAt,
  issuedBy,
  readCertificateBundle,
  readPeerCertificates,
  verifyChain,
  type ParsedCertificate,
} from '../../pki/certificate-chain.ts';
import type { IdentityService } from '../../resources/identities/identity.service.ts';
import type { CaService, TrustedCa } from '../../resources/cas/ca.service.ts';
import { covers } from '../rights.ts';
import { externalIdFrom } from '../../resources/cas/external-id-claim.ts';
import { systemClock, type Clock } from '../../resources/entity-service.ts';
import type { AuthPolicyReader } from '../auth-policy-reader.ts';
import type { AuthMethod, AuthOutcome, AuthRequest } from './auth-method.ts';

export interface CertMethodDeps {
  store: Store;
  /** The controller's CA bundle (intermediate and root) as PEM. */
  caBundlePem: string;
  cas: CaService;
  identities: IdentityService;
  policies: AuthPolicyReader;
  clock?: Clock;
  /** Live API-session certificates: a leaf that names no authenticator may be one of them. */
  sessionCertificates?: {
    identityFor(fingerprint: string, at: Date): Promise<{ identityId: string; authenticatorId: string } | undefined> | { identityId: string; authenticatorId: string } | undefined;
  };
}

interface CertAuthenticatorRow {
  id: string;
  identity_id: string;
  is_issued_by_network: number;
  cert_pem: string | null;
  last_auth_resolved_to_root: number;
  is_extend_requested: number;
  is_key_roll_requested: number;
}

export function createCertMethod(deps: CertMethodDeps): AuthMethod {
  const clock = deps.clock ?? systemClock;
  const bundle = readCertificateBundle(deps.caBundlePem);
  const selfSignedRoots = bundle.filter((cert) => issuedBy(cert, cert));
  const refused = () => new ApiError('INVALID_AUTH');

  function presented(req: AuthRequest): ParsedCertificate[] {
    try {
      return readPeerCertificates(req.peerCertificates);
    } catch {
      throw refused();
    }
  }

  return {
    name: 'cert',
    async authenticate(req: AuthRequest): Promise<AuthOutcome> {
      const chain = presented(req);
      if (chain.length === 0) throw refused();
      const leaf = chain[0];
      const intermediates = chain.slice(1);

      let improperClientCertChain = false;
      let externalId: string | undefined;
      // The third-party CA the chain ends at, if any: it logs in only identities its stamped rights cover.
      let thirdPartyCa: TrustedCa | undefined;
      const resolvedToRoot = verifyChain(leaf, { roots: selfSignedRoots, intermediates }) !== undefined;
      if (!resolvedToRoot) {
        if (verifyChain(leaf, { roots: bundle, intermediates })) improperClientCertChain = true;
        else {
          thirdPartyCa = (await deps.cas.authPool()).find((candidate) => verifyChain(leaf, { roots: [candidate.certificates[0]], intermediates }));
          if (!thirdPartyCa) throw refused();
          // A claim that yields nothing falls back to the fingerprint lookup, as upstream.
          if (thirdPartyCa.externalIdClaim) externalId = externalIdFrom(thirdPartyCa.externalIdClaim, leaf);
        }
      }

      let identityId: string;
      let authenticatorId: string;
      let isCertExtendable = false;
      let isCertExtendRequested = false;
      let isCertKeyRollRequested = false;
      if (externalId !== undefined) {
        const row = await deps.store.get<{ id: string }>('SELECT id FROM identities WHERE external_id = ?', [externalId]);
        if (!row) throw refused();
        identityId = row.id;
        authenticatorId = 'internal';
      } else {
        const row = await deps.store.get<CertAuthenticatorRow>(
          `SELECT id, identity_id, is_issued_by_network, cert_pem, last_auth_resolved_to_root, is_extend_requested, is_key_roll_requested
           FROM authenticators WHERE method = 'cert' AND fingerprint = ?`,
          [leaf.fingerprint],
        );
        // A leaf that names no authenticator may be a live API-session certificate of the identity.
        const sessionOwner = row ? undefined : await deps.sessionCertificates?.identityFor(leaf.fingerprint, clock.now());
        if (!row && !sessionOwner) throw refused();
        if (sessionOwner) return finish(sessionOwner.identityId, sessionOwner.authenticatorId, { improperClientCertChain });
        if (!row) throw refused();
        identityId = row.identity_id;
        authenticatorId = row.id;
        isCertExtendable = row.is_issued_by_network === 1;
        isCertExtendRequested = row.is_extend_requested === 1;
        isCertKeyRollRequested = row.is_key_roll_requested === 1;
        if (row.cert_pem === null || (row.last_auth_resolved_to_root === 1) !== resolvedToRoot) {
          await deps.store.write((tx) =>
            tx.run('UPDATE authenticators SET cert_pem = ?, last_auth_resolved_to_root = ? WHERE id = ?', [row.cert_pem ?? leaf.pem, resolvedToRoot ? 1 : 0, row.id]),
          );
        }
      }

      return finish(identityId, authenticatorId, { isCertExtendable, improperClientCertChain, isCertExtendRequested, isCertKeyRollRequested });

      async function finish(identityId: string, authenticatorId: string, flags: Omit<AuthOutcome, 'identityId' | 'authenticatorId'>): Promise<AuthOutcome> {
        const identity = await deps.identities.summary(identityId);
        const policy = identity ? await deps.policies.primary(identity.authPolicyId) : undefined;
        if (!identity || identity.disabled || !policy || !policy.cert.allowed) throw refused();
        if (thirdPartyCa && !covers(thirdPartyCa.trust, identity)) throw refused();
        if (!policy.cert.allowExpiredCerts && !isValidAt(leaf, clock.now())) throw refused();
        return { identityId, authenticatorId, ...flags };
      }
    },
  };
}
