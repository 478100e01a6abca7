/**
 * The controller's decision on a router's request to host (bind) or reach (dial) a service for an SDK: the
 * API session token (a zt-session, or the access token of an OIDC login) must name a live API session, the session
 * JWT must be one a live controller of the network signed (src/pki/jwt-keyring.ts) for that API session and of the
 * right type, its session record must still exist, and the identity must still hold the permission, pass the
 * posture checks and be allowed on this router for the service — the same answers the REST side gives, from the
 * same access index. Refusals carry the edge error code routers pass to SDKs.
 */
import { hashToken } from '../auth/api-session.service.ts';
import { verifyOidcToken } from '../oidc/tokens.ts';
import { looksLikeJwt } from '../resources/external-jwt-signers/signer-tokens.ts';
import type { JwtSigningKey } from '../pki/enrollment-jwt.ts';
import { createJwtKeyring } from '../pki/jwt-keyring.ts';
import type { Membership } from '../cluster/membership.ts';
import type { Store } from '../store/store.ts';
import { versionedLookup } from '../store/versioned-lookup.ts';
import type { PolicyMembership } from './data-model/full-state.ts';
import { EdgeErrorCode } from './proto/edge-ctrl.ts';

export class AccessRefused extends Error {
  override readonly name = 'AccessRefused';
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * What the fabric asks the access side; built by the controller from its access index and posture service. Each
 * answer may be given at once or as a promise (an answer that reads the store); the fabric awaits them all.
 */
export interface FabricAccess {
  /** Brings in-memory access state up to date with the store (other processes' writes). */
  catchUp(): void | Promise<unknown>;
  /** Whether the identity may dial or bind the service now (service policies and posture checks). */
  mayUse(identityId: string, apiSessionId: string, serviceId: string, type: 'Dial' | 'Bind'): boolean | Promise<boolean>;
  /** Whether edge router policies and service edge router policies put this router between them. */
  routerAllowed(identityId: string, serviceId: string, routerId: string): boolean | Promise<boolean>;
  /** The identities, services and posture checks each service policy covers now (the router data model). */
  membership(): PolicyMembership | Promise<PolicyMembership>;
  /** Whether service policies let the identity dial or bind the service, posture aside (routers' own tunnelers). */
  policyPermissions(identityId: string, serviceId: string): { dial: boolean; bind: boolean } | Promise<{ dial: boolean; bind: boolean }>;
}

export interface GrantedAccess {
  apiSessionId: string;
  identityId: string;
  sessionId: string;
  serviceId: string;
  encryptionRequired: boolean;
  /** The service's terminator strategy. */
  terminatorStrategy: string;
}

export interface ServiceAccessDeps {
  store: Store;
  signer: JwtSigningKey;
  /**
   * The network's controllers: access tokens and session JWTs any of them signed are accepted. Absent, only this
   * controller's own tokens are.
   */
  membership?: Pick<Membership, 'known'>;
  access: FabricAccess;
  now?: () => Date;
}

export function createServiceAccessCheck(deps: ServiceAccessDeps) {
  const now = deps.now ?? (() => new Date());
  const membership = deps.membership;
  const keyring = createJwtKeyring(deps.signer, () => membership?.known() ?? []);
  const { store } = deps;
  // The rows a request names, kept while their tables are unchanged: on PostgreSQL a circuit request then reads
  // nothing from the store (src/store/versioned-lookup.ts).
  const apiSessionByHash = versionedLookup(store, ['api_sessions'], (hash: string) =>
    store.get<{ id: string; identity_id: string }>('SELECT id, identity_id FROM api_sessions WHERE token_hash = ?', [hash]),
  );
  const oidcSessionById = versionedLookup(store, ['api_sessions'], (id: string) =>
    store.get<{ id: string; identity_id: string; oidc_client_id: string | null }>('SELECT id, identity_id, oidc_client_id FROM api_sessions WHERE id = ?', [id]),
  );
  /** Access tokens verified by this process, until they expire (a signature check costs more than the rest of a dial). */
  const verified = new Map<string, { apiSessionId: string; identityId: string; expMs: number }>();

  /** The live API session an access token of an OIDC login names (signature, type, audience, expiry checked). */
  async function oidcApiSession(token: string): Promise<{ id: string; identity_id: string } | undefined> {
    const at = now();
    let entry = verified.get(token);
    if (entry && entry.expMs <= at.getTime()) {
      verified.delete(token);
      return undefined;
    }
    if (!entry) {
      try {
        const { claims, session } = await verifyOidcToken(token, keyring, 'a', at);
        entry = { apiSessionId: session.apiSessionId, identityId: session.sub, expMs: (claims.exp as number) * 1000 };
      } catch {
        return undefined;
      }
      if (verified.size >= 10_000) verified.delete(verified.keys().next().value as string);
      verified.set(token, entry);
    }
    // Ending the login (logout, an administrator, the identity disabled or deleted) removed the row.
    const row = await oidcSessionById(entry.apiSessionId);
    return row && row.oidc_client_id !== null && row.identity_id === entry.identityId ? row : undefined;
  }

  const sessionById = versionedLookup(store, ['sessions'], (id: string) =>
    store.get<{ id: string; service_id: string; session_type: string; api_session_id: string }>(
      'SELECT id, service_id, session_type, api_session_id FROM sessions WHERE id = ?',
      [id],
    ),
  );
  const serviceById = versionedLookup(store, ['services'], (id: string) =>
    store.get<{ id: string; encryption_required: number; terminator_strategy: string }>('SELECT id, encryption_required, terminator_strategy FROM services WHERE id = ?', [id]),
  );

  async function check(routerId: string, apiSessionToken: string, sessionToken: string, type: 'Dial' | 'Bind'): Promise<GrantedAccess> {
    const apiSession = looksLikeJwt(apiSessionToken) ? await oidcApiSession(apiSessionToken) : await apiSessionByHash(hashToken(apiSessionToken));
    if (!apiSession) throw new AccessRefused(EdgeErrorCode.InvalidApiSession, 'invalid api session');
    let claims: Record<string, unknown>;
    try {
      claims = await keyring.verify(sessionToken, { currentDate: now() });
    } catch {
      throw new AccessRefused(EdgeErrorCode.InvalidSession, 'invalid session');
    }
    if (claims.z_t !== 's' || claims.z_asid !== apiSession.id || typeof claims.jti !== 'string') {
      throw new AccessRefused(EdgeErrorCode.InvalidSession, 'invalid session');
    }
    const session = await sessionById(claims.jti);
    if (!session || session.api_session_id !== apiSession.id) throw new AccessRefused(EdgeErrorCode.InvalidSession, 'invalid session');
    if (session.session_type !== type) {
      throw new AccessRefused(EdgeErrorCode.WrongSessionType, `incorrect session type: expected ${type}, got ${session.session_type}`);
    }
    const service = await serviceById(session.service_id);
    if (!service) throw new AccessRefused(EdgeErrorCode.InvalidService, `service ${session.service_id} not found`);
    await deps.access.catchUp();
    if (!(await deps.access.mayUse(apiSession.identity_id, apiSession.id, service.id, type))) {
      throw new AccessRefused(EdgeErrorCode.InvalidSession, `identity may not ${type.toLowerCase()} service ${service.id}`);
    }
    if (!(await deps.access.routerAllowed(apiSession.identity_id, service.id, routerId))) {
      throw new AccessRefused(EdgeErrorCode.InvalidEdgeRouterForSession, `edge router ${routerId} is not allowed for this identity and service`);
    }
    return {
      apiSessionId: apiSession.id,
      identityId: apiSession.identity_id,
      sessionId: session.id,
      serviceId: service.id,
      encryptionRequired: service.encryption_required === 1,
      terminatorStrategy: service.terminator_strategy,
    };
  }

  return { check };
}

export type ServiceAccessCheck = ReturnType<typeof createServiceAccessCheck>;
