/**
 * External JWT signer rules beyond generic CRUD (upstream's signer store): exactly one of `certPem` and
 * `jwksEndpoint`; the certificate must be a single parsable X.509 certificate and its fingerprint is
 * stored; empty strings mean "unset" (defaults for the claim selectors, the enrollment policy and the
 * target token); the enrollment auth policy must exist and allow what enrollment is enabled for; and a
 * signer an auth policy references can not be deleted.
 */
import type { Db } from '../../store/database.ts';
import { prepare, type Values } from '../../store/entity-table.ts';
import type { Tx } from '../../store/transaction.ts';
import { ApiError, fieldError, invalidField } from '../../errors.ts';
import { describeSignerCertificate } from '../../pki/external-jwt.ts';
import { createEntityService, systemClock, type Clock, type ListRequest } from '../entity-service.ts';
import { externalJwtSignerResource } from './external-jwt-signer.resource.ts';
import { jwksEndpointProblem } from './outbound-address.ts';
import { isValidPointer } from './signer-tokens.ts';

const ZERO_TIME = '0001-01-01T00:00:00.000Z';

function blank(v: unknown): boolean {
  return v === undefined || v === null || (typeof v === 'string' && v.trim() === '');
}

function isHttpUrl(text: string): boolean {
  try {
    const u = new URL(text);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

interface PolicyPrimary {
  cert?: { allowed?: boolean };
  extJwt?: { allowed?: boolean };
}

/** Validates and normalizes the record as it will be stored; writes derived values into `out`. */
function checkSigner(tx: Tx, record: Values, out: Values): void {
  for (const field of ['externalAuthUrl', 'audience', 'certPem', 'jwksEndpoint', 'kid', 'clientId'] as const) {
    if (record[field] !== undefined && record[field] !== null && blank(record[field])) out[field] = record[field] = null;
  }
  const defaults: Record<string, string> = {
    claimsProperty: '/sub',
    enrollNameClaimsSelector: '/sub',
    enrollAuthPolicyId: 'default',
    targetToken: 'ACCESS',
  };
  for (const [field, value] of Object.entries(defaults)) if (blank(record[field])) out[field] = record[field] = value;
  if (record.enrollAttributeClaimsSelector === null || record.enrollAttributeClaimsSelector === undefined) {
    out.enrollAttributeClaimsSelector = record.enrollAttributeClaimsSelector = '';
  }
  if (record.scopes === null || record.scopes === undefined) out.scopes = record.scopes = [];

  const certPem = record.certPem as string | null;
  const jwksEndpoint = record.jwksEndpoint as string | null;
  // Upstream's order: the certificate is read, then one key source is required, then the issuer.
  const fingerprint = certPem ? describeSignerCertificate(certPem).fingerprint : null;
  if (!certPem && !jwksEndpoint) throw invalidField('certPem', 'jwksEndpoint or certPem is required', certPem);
  if (certPem && jwksEndpoint) throw invalidField('jwksEndpoint', 'only one of jwksEndpoint or certPem may be defined', jwksEndpoint);
  if (blank(record.issuer)) throw fieldError('issuer', 'issuer is required', record.issuer ?? '');
  const endpointProblem = jwksEndpoint ? jwksEndpointProblem(jwksEndpoint) : undefined;
  if (endpointProblem) throw fieldError('jwksEndpoint', endpointProblem, jwksEndpoint);
  if (record.externalAuthUrl && !isHttpUrl(record.externalAuthUrl as string)) {
    throw fieldError('externalAuthUrl', 'externalAuthUrl must be an http or https URL', record.externalAuthUrl);
  }
  out.fingerprint = fingerprint;

  for (const field of ['claimsProperty', 'enrollNameClaimsSelector', 'enrollAttributeClaimsSelector'] as const) {
    if (!isValidPointer(String(record[field] ?? ''))) throw fieldError(field, 'the claims selector is not a valid JSON pointer', record[field]);
  }

  const policyId = record.enrollAuthPolicyId as string;
  const row = prepare(tx.db, 'SELECT primary_settings FROM auth_policies WHERE id = ?').get(policyId) as { primary_settings: string } | undefined;
  if (!row) throw fieldError('enrollAuthPolicyId', 'the auth policy could not be found', policyId);
  const primary = JSON.parse(row.primary_settings) as PolicyPrimary;
  if (record.enrollToTokenEnabled && primary.extJwt?.allowed === false) {
    throw fieldError('enrollAuthPolicyId', 'primary external jwt authentication on auth policy is disabled', policyId);
  }
  if (record.enrollToCertEnabled && primary.cert?.allowed === false) {
    throw fieldError('enrollAuthPolicyId', 'primary certificate authentication on auth policy is disabled', policyId);
  }
}

/** Auth policies that name the signer as an allowed primary signer or as the required secondary one. */
function referencingPolicies(tx: Tx, id: string): string[] {
  const rows = prepare(
    tx.db,
    `SELECT id FROM auth_policies
      WHERE EXISTS (SELECT 1 FROM json_each(primary_settings, '$.extJwt.allowedSigners') WHERE value = ?)
         OR json_extract(secondary_settings, '$.requireExtJwtSigner') = ?
      ORDER BY id`,
  ).all(id, id) as Array<{ id: string }>;
  return rows.map((r) => r.id);
}

export function createExternalJwtSignerService(db: Db, clock: Clock = systemClock) {
  const entities = createEntityService(
    externalJwtSignerResource,
    db,
    {
      beforeCreate(tx, values) {
        checkSigner(tx, values, values);
      },
      beforeUpdate(tx, existing, changes) {
        const merged = { ...existing, ...changes };
        checkSigner(tx, merged, changes);
      },
      beforeDelete(tx, existing) {
        const id = existing.id as string;
        const policies = referencingPolicies(tx, id);
        if (policies.length > 0) {
          throw new ApiError('CAN_NOT_DELETE_REFERENCED_ENTITY', {
            cause: {
              code: 'UNHANDLED',
              message: `cannot delete external-jwt-signers with id ${id}, it is referenced by auth-policies with id(s) [${policies.join(' ')}]`,
              data: { authPolicyIds: policies },
            },
          });
        }
      },
    },
    clock,
  );

  /** The management read model (externalJwtSignerDetail). */
  function present(values: Values): Record<string, unknown> {
    const out = externalJwtSignerResource.presentStored(values);
    let commonName = '';
    let notBefore = ZERO_TIME;
    let notAfter = ZERO_TIME;
    if (typeof values.certPem === 'string' && values.certPem) {
      try {
        const cert = describeSignerCertificate(values.certPem);
        commonName = cert.commonName;
        notBefore = cert.notBefore.toISOString();
        notAfter = cert.notAfter.toISOString();
      } catch {
        // Stored certificates were validated on write; an unreadable one just shows no details.
      }
    }
    out.commonName = commonName;
    out.notBefore = notBefore;
    out.notAfter = notAfter;
    out.targetToken = values.targetToken ?? 'ACCESS';
    out.claimsProperty = values.claimsProperty ?? '/sub';
    return out;
  }

  /** The client read model (clientExternalJwtSignerDetail). */
  function presentClient(values: Values): Record<string, unknown> {
    const full = present(values);
    const out: Record<string, unknown> = {};
    for (const key of ['_links', 'createdAt', 'id', 'tags', 'updatedAt', 'audience', 'clientId', 'enrollToCertEnabled',
      'enrollToTokenEnabled', 'externalAuthUrl', 'name', 'scopes', 'targetToken']) {
      if (full[key] !== undefined) out[key] = full[key];
    }
    if (out.clientId === null) delete out.clientId;
    return out;
  }

  /** What the client API lists: enabled signers only, with the caller's paging and filter. */
  function listEnabled(req: ListRequest) {
    return entities.list(req, { sql: 'e.enabled = 1', params: [] });
  }

  return { ...entities, present, presentClient, listEnabled };
}

export type ExternalJwtSignerService = ReturnType<typeof createExternalJwtSignerService>;
