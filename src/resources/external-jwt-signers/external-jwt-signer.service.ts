/**
 * External JWT signer rules beyond generic CRUD (upstream's signer store): exactly one of `certPem` and
 * `jwksEndpoint`; the certificate must be a single parsable X.509 certificate and its fingerprint is
 * stored; empty strings mean "unset" (defaults for the claim selectors, the enrollment policy and the
 * target token); the enrollment auth policy must exist and allow what enrollment is enabled for; and a
 * signer an auth policy references can not be deleted.
 */
import type { Values } from '../../store/entity-table.ts';
import type { Sql, Store } from '../../store/store.ts';
import { ApiError, fieldError, invalidField } from '../../errors.ts';
import { describeSignerCertificate } from '../../pki/external-jwt.ts';
import { createEntityService, systemClock, type Clock, type ListRequest } from '../entity-service.ts';
import { externalJwtSignerResource } from './external-jwt-signer.resource.ts';
import { signerCertFacts } from '../authenticators/cert-facts.ts';
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
async function checkSigner(q: Sql, record: Values, out: Values): Promise<void> {
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
  // What filters read of the certificate, stored with it.
  Object.assign(out, signerCertFacts(certPem));

  for (const field of ['claimsProperty', 'enrollNameClaimsSelector', 'enrollAttributeClaimsSelector'] as const) {
    if (!isValidPointer(String(record[field] ?? ''))) throw fieldError(field, 'the claims selector is not a valid JSON pointer', record[field]);
  }

  const policyId = record.enrollAuthPolicyId as string;
  const row = await q.get<{ primary_settings: string }>('SELECT primary_settings FROM auth_policies WHERE id = ?', [policyId]);
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
async function referencingPolicies(q: Sql, id: string): Promise<string[]> {
  // The settings are read here rather than searched in SQL (JSON functions differ between engines).
  const rows = await q.all<{ id: string; primary_settings: string; secondary_settings: string }>(
    'SELECT id, primary_settings, secondary_settings FROM auth_policies ORDER BY id',
  );
  return rows
    .filter((r) => {
      const primary = JSON.parse(r.primary_settings) as { extJwt?: { allowedSigners?: unknown } } | null;
      const secondary = JSON.parse(r.secondary_settings) as { requireExtJwtSigner?: unknown } | null;
      const signers = primary?.extJwt?.allowedSigners;
      const allowed = Array.isArray(signers) ? signers.includes(id) : signers === id;
      return allowed || secondary?.requireExtJwtSigner === id;
    })
    .map((r) => r.id);
}

export function createExternalJwtSignerService(store: Store, clock: Clock = systemClock) {
  const entities = createEntityService(
    externalJwtSignerResource,
    store,
    {
      async beforeCreate(tx, values) {
        await checkSigner(tx, values, values);
      },
      async beforeUpdate(tx, existing, changes) {
        const merged = { ...existing, ...changes };
        await checkSigner(tx, merged, changes);
      },
      async beforeDelete(tx, existing) {
        const id = existing.id as string;
        const policies = await referencingPolicies(tx, id);
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
