/**
 * CA rules beyond generic CRUD (enrollment.md §4, seeds management §2.3 and §3): the certificate must be
 * a CA (first PEM block) with a fingerprint no other CA has; a new CA is unverified and gets a
 * verification token; verification takes a certificate the CA signed whose CN is that token; the static
 * auto-enrollment JWT; and deleting a CA removes its outstanding ottca enrollments and the certificate
 * authenticators it issued. Also the trust pools the enrollment and login code ask for.
 */
import { randomUUID } from 'node:crypto';
import type { Store } from '../../store/store.ts';
import { decodeRow, type Values } from '../../store/entity-table.ts';
import { ApiError, fieldError } from '../../errors.ts';
import { signJwt, type JwtSigningKey } from '../../pki/enrollment-jwt.ts';
import { parsePemBlocks } from '../../pki/pem.ts';
import {
  isValidAt,
  issuedBy,
  readCertificateBundle,
  readCertificateDer,
  type ParsedCertificate,
} from '../../pki/certificate-chain.ts';
import { createEntityService, systemClock, type Clock } from '../entity-service.ts';
import { caLinks, caResource, DEFAULT_IDENTITY_NAME_FORMAT } from './ca.resource.ts';
import { assertWholeClaim, completeClaim, validateExternalIdClaim, CLAIM_FIELDS, type ExternalIdClaim } from './external-id-claim.ts';
import { intersect, parseRights, type Rights } from '../../auth/rights.ts';

/** A CA as the trust decisions see it. */
export interface TrustedCa {
  id: string;
  name: string;
  fingerprint: string;
  isVerified: boolean;
  isAutoCaEnrollmentEnabled: boolean;
  isOttCaEnrollmentEnabled: boolean;
  isAuthEnabled: boolean;
  identityRoles: string[];
  identityNameFormat: string;
  externalIdClaim: ExternalIdClaim | null;
  /** The rights of whoever last set whom the CA authenticates: it logs in and enrolls only identities they cover. */
  trust: Rights;
  /** Every certificate of the CA's certPem, the CA itself first. */
  certificates: ParsedCertificate[];
}

export interface CaServiceDeps {
  store: Store;
  /** Signs the CA auto-enrollment JWT (the TLS server key). */
  signer: JwtSigningKey;
  /** `https://<edge API host:port>`, no trailing slash. */
  issuer: string;
  clock?: Clock;
}

function checkIdentityRoles(roles: unknown): string[] {
  const list = Array.isArray(roles) ? (roles as string[]) : [];
  for (const role of list) {
    if (role.startsWith('#') || role.startsWith('@')) {
      throw fieldError('identityRoles', `role attributes may not be prefixed with ${role[0]}`, list);
    }
  }
  return [...new Set(list)].sort();
}

/** certPem of a new CA: one or more certificates, the first of them a CA. */
function parseCaCertificates(certPem: unknown): ParsedCertificate[] {
  if (typeof certPem !== 'string' || certPem.trim() === '') throw fieldError('certPem', 'certPem is required', certPem);
  let certificates: ParsedCertificate[];
  try {
    certificates = readCertificateBundle(certPem);
  } catch {
    throw fieldError('certPem', 'certPem holds a PEM block that is not a readable certificate', '<pem>');
  }
  if (certificates.length === 0) throw fieldError('certPem', 'certPem holds no PEM CERTIFICATE block', '<pem>');
  if (!certificates[0].isCa) {
    throw new ApiError('CERTIFICATE_IS_NOT_CA', { cause: { field: 'certPem', reason: 'the first certificate is not a CA certificate', value: '<pem>' } });
  }
  return certificates;
}

/** The claim of a body; `whole` for create and put, whose claim must name all six members. */
function claimFromBody(value: unknown, whole = false): ExternalIdClaim | null {
  if (value === undefined || value === null) return null;
  if (whole) assertWholeClaim(value as Record<string, unknown>);
  const claim = completeClaim(value as Partial<ExternalIdClaim>);
  validateExternalIdClaim(claim);
  return claim;
}

export function createCaService(deps: CaServiceDeps) {
  const { store } = deps;
  const clock = deps.clock ?? systemClock;
  const entities = createEntityService(
    caResource,
    store,
    {
      async beforeCreate(tx, values) {
        const existing = await tx.get<{ id: string }>('SELECT id FROM cas WHERE fingerprint = ?', [values.fingerprint]);
        if (existing) throw fieldError('certPem', `certificate already used as CA ${existing.id}`, '<pem>');
      },
      async beforeDelete(tx, existing) {
        await tx.run('DELETE FROM enrollments WHERE ca_id = ?', [existing.id]);
        // Authenticators enrolled through the CA go with it (foreign key); so do certificate authenticators an
        // administrator created for certificates this CA issued.
        const ca = toTrusted(existing);
        const candidates = await tx.all<{ id: string; cert_pem: string }>(
          "SELECT id, cert_pem FROM authenticators WHERE method = 'cert' AND ca_id IS NULL AND is_issued_by_network = 0 AND cert_pem IS NOT NULL",
        );
        for (const row of candidates) if (issuedByCa(row.cert_pem, ca)) await tx.run('DELETE FROM authenticators WHERE id = ?', [row.id]);
      },
    },
    clock,
  );

  function issuedByCa(certPem: string, ca: TrustedCa): boolean {
    let leaf: ParsedCertificate | undefined;
    try {
      leaf = readCertificateBundle(certPem)[0];
    } catch {
      return false;
    }
    return leaf !== undefined && ca.certificates.some((caCert) => issuedBy(leaf, caCert));
  }

  function toTrusted(values: Values): TrustedCa {
    return {
      id: values.id as string,
      name: values.name as string,
      fingerprint: values.fingerprint as string,
      isVerified: values.isVerified === true,
      isAutoCaEnrollmentEnabled: values.isAutoCaEnrollmentEnabled === true,
      isOttCaEnrollmentEnabled: values.isOttCaEnrollmentEnabled === true,
      isAuthEnabled: values.isAuthEnabled === true,
      identityRoles: (values.identityRoles as string[] | null) ?? [],
      identityNameFormat: (values.identityNameFormat as string) || DEFAULT_IDENTITY_NAME_FORMAT,
      externalIdClaim: (values.externalIdClaim as ExternalIdClaim | null) ?? null,
      trust: parseRights(values.trustRights),
      certificates: readCertificateBundle(values.certPem as string),
    };
  }

  function create(body: Record<string, unknown>, stamped: Values = {}): Promise<string> {
    const certificates = parseCaCertificates(body.certPem);
    const identityRoles = checkIdentityRoles(body.identityRoles);
    const externalIdClaim = claimFromBody(body.externalIdClaim, true);
    const format = typeof body.identityNameFormat === 'string' && body.identityNameFormat !== '' ? body.identityNameFormat : DEFAULT_IDENTITY_NAME_FORMAT;
    return entities.create(body, {
      ...stamped,
      identityRoles,
      identityNameFormat: format,
      externalIdClaim,
      fingerprint: certificates[0].fingerprint,
      isVerified: false,
      verificationToken: randomUUID(),
    });
  }

  async function update(id: string, body: Record<string, unknown>, mode: 'put' | 'patch', stamped: Values = {}): Promise<void> {
    const existing = await entities.get(id);
    const extra: Values = { ...stamped };
    // A put must name the roles (`[]` for none); upstream refuses a null list there as missing.
    if (mode === 'put' && body.identityRoles === null) throw fieldError('identityRoles', 'identityRoles in body is required', []);
    if (body.identityRoles !== undefined && body.identityRoles !== null) extra.identityRoles = checkIdentityRoles(body.identityRoles);
    if (body.identityNameFormat === '') extra.identityNameFormat = DEFAULT_IDENTITY_NAME_FORMAT;
    if (mode === 'put') {
      // A put replaces the whole record: an omitted claim clears the stored one.
      extra.externalIdClaim = claimFromBody(body.externalIdClaim, true);
    } else if (body.externalIdClaim !== undefined && body.externalIdClaim !== null) {
      const supplied = Object.fromEntries(
        CLAIM_FIELDS.map((field) => [field, (body.externalIdClaim as Record<string, unknown>)[field]]).filter(([, v]) => v !== undefined && v !== null),
      );
      if (Object.keys(supplied).length > 0) {
        extra.externalIdClaim = claimFromBody({ ...((existing.externalIdClaim as object | null) ?? {}), ...supplied });
      } else {
        extra.externalIdClaim = existing.externalIdClaim ?? null;
      }
    }
    const { externalIdClaim: _claim, ...rest } = body;
    await entities.update(id, rest, mode, extra);
  }

  function present(values: Values): Record<string, unknown> {
    const detail = caResource.presentStored(values);
    detail._links = caLinks(values.id as string, values);
    if (detail.externalIdClaim == null) delete detail.externalIdClaim;
    return detail;
  }

  /** `POST /cas/{id}/verify`: proof that the operator holds the CA key (enrollment.md §4.3). */
  async function verify(id: string, body: unknown, verifier: Rights): Promise<void> {
    const ca = await entities.get(id);
    if (ca.isVerified) throw new ApiError('CA_ALREADY_VERIFIED');
    const text = typeof body === 'string' ? body : '';
    // Upstream's answers: no cause for an unreadable body or a wrong common name, the x509 reason for a failed chain.
    let blocks;
    try {
      blocks = parsePemBlocks(text);
    } catch {
      throw new ApiError('COULD_NOT_PARSE_BODY');
    }
    if (blocks.length === 0) throw new ApiError('COULD_NOT_PARSE_BODY');
    if (blocks[0].label !== 'CERTIFICATE') throw new ApiError('EXPECTED_PEM_CERTIFICATE');
    const certificate = readCertificateDer(blocks[0].der);
    if (certificate.commonName !== ca.verificationToken) throw new ApiError('INVALID_COMMON_NAME');
    const caCertificate = readCertificateBundle(ca.certPem as string)[0];
    const now = clock.now();
    const x509Failure = (message: string) => new ApiError('CERTIFICATE_FAILED_VALIDATION', { cause: { code: 'UNHANDLED', message } });
    if (!issuedBy(certificate, caCertificate)) throw x509Failure('x509: certificate signed by unknown authority');
    if (!isValidAt(certificate, now) || !isValidAt(caCertificate, now)) throw x509Failure('x509: certificate has expired or is not yet valid');
    // Whoever can make the proof holds the CA key: the CA keeps only the rights its verifier holds too.
    await entities.update(id, {}, 'patch', { isVerified: true, trustRights: intersect(parseRights(ca.trustRights), verifier) });
  }

  /** The static CA auto-enrollment JWT (enrollment.md §1.6): `em: ca`, no expiry, signed with the TLS key. */
  async function enrollmentJwt(id: string): Promise<string> {
    await entities.get(id);
    return signJwt({ iss: `${deps.issuer}/`, sub: id, aud: ['openziti-enroller'], jti: id, em: 'ca', ctrls: null }, deps.signer);
  }

  async function findTrusted(id: string): Promise<TrustedCa | undefined> {
    const values = await entities.find(id);
    return values ? toTrusted(values) : undefined;
  }

  /** CAs with a stored row matching `where` (a fixed SQL condition), for the trust pools. */
  async function trustedWhere(where: string): Promise<TrustedCa[]> {
    const rows = await store.all(`SELECT * FROM cas WHERE ${where} ORDER BY created_at, id`);
    return rows.map((row) => toTrusted(decodeRow(caResource.decl, row)));
  }

  return {
    ...entities,
    create,
    update,
    present,
    verify,
    enrollmentJwt,
    findTrusted,
    /** Verified CAs that allow certificate login. */
    authPool: () => trustedWhere('is_verified = 1 AND is_auth_enabled = 1'),
    /** Verified CAs that allow auto enrollment. */
    autoEnrollmentPool: () => trustedWhere('is_verified = 1 AND is_auto_ca_enrollment_enabled = 1'),
    count: async () => Number(await store.value<number | string>('SELECT COUNT(*) AS n FROM cas')),
  };
}

export type CaService = ReturnType<typeof createCaService>;
