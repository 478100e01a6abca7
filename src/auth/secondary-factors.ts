/**
 * Secondary factors (auth.md §1.8, §4.6), evaluated at authentication and again on every request:
 *
 * - TOTP is pending while `(session.isMfaRequired || policy.secondary.requireTotp) && !session.isMfaComplete`;
 * - a required external JWT signer is pending unless the request also carries `Authorization: Bearer <jwt>`
 *   from that signer that verifies and names the same identity.
 *
 * Anything pending makes the session partial and is listed as an auth query (TOTP first). At
 * authentication a pending signer is also announced in a `WWW-Authenticate` header of the secondary realm.
 */
import { covers } from './rights.ts';
import { identityRights } from '../resources/identities/identity-rights.ts';
import type { Db } from '../store/database.ts';
import { prepare } from '../store/entity-table.ts';
import type { AuthPolicyReader, SecondarySettings } from './auth-policy-reader.ts';
import { bearerTokens, ExternalJwtError, resolveClaim, type SignerTokens } from '../resources/external-jwt-signers/signer-tokens.ts';

export type AuthQuery = Record<string, unknown>;

/** The TOTP query of a session with MFA pending (`scopes` is null on the wire, as upstream). */
export const totpAuthQuery: AuthQuery = {
  typeId: 'MFA',
  provider: 'ziti',
  format: 'alphaNumeric',
  httpMethod: 'POST',
  httpUrl: './authenticate/mfa',
  minLength: 4,
  maxLength: 6,
  scopes: null,
};

type Outcome = 'ok' | 'missing' | 'invalid' | 'expired';

const descriptions = {
  missing: 'no matching token was provided',
  expired: 'token expired',
  invalid: 'token is invalid',
} as const;

export interface SecondaryState {
  /** Pending auth queries, TOTP first; empty when the session is fully authenticated. */
  authQueries: AuthQuery[];
  /** `WWW-Authenticate` value when the required signer's token is missing, invalid or expired. */
  challenge?: string;
}

export interface SessionFlags {
  identityId: string;
  isMfaRequired: boolean;
  isMfaComplete: boolean;
}

export function createSecondaryFactors(deps: { db: Db; policies: AuthPolicyReader; signers?: SignerTokens }) {
  const { db, policies, signers } = deps;

  function identityOf(useExternalId: boolean, claimValue: string): string | undefined {
    if (!useExternalId) return claimValue;
    const row = prepare(db, 'SELECT id FROM identities WHERE external_id = ?').get(claimValue) as { id: string } | undefined;
    return row?.id;
  }

  async function checkSigner(signerId: string, identityId: string, headers: Record<string, string | string[] | undefined>): Promise<Outcome> {
    const signer = signers?.byId(signerId);
    if (!signers || !signer || !signer.enabled) return 'missing';
    let outcome: Outcome = 'missing';
    for (const token of bearerTokens(headers)) {
      if (signers.decode(token)?.claims.iss !== signer.issuer) continue;
      let claims: Record<string, unknown>;
      try {
        claims = await signers.verify(signer, token);
      } catch (err) {
        outcome = err instanceof ExternalJwtError && err.reason === 'expired' ? 'expired' : 'invalid';
        continue;
      }
      const value = resolveClaim(claims, signer.claimsProperty);
      // A signer proves only identities whose rights its stamped rights cover (auth/rights.ts).
      const trusted = () => identityRights(db, identityId).every((owner) => covers(signer.trust, owner));
      if (typeof value === 'string' && identityOf(signer.useExternalId, value) === identityId && trusted()) return 'ok';
      // A valid token of somebody else, or from a signer not trusted for this identity, does not prove it.
      if (outcome === 'missing') outcome = 'invalid';
    }
    return outcome;
  }

  function extJwtQuery(signerId: string): AuthQuery {
    const row = prepare(db, 'SELECT external_auth_url, client_id, scopes FROM external_jwt_signers WHERE id = ?').get(signerId) as
      | { external_auth_url: string | null; client_id: string | null; scopes: string | null }
      | undefined;
    const query: AuthQuery = { typeId: 'EXT-JWT', provider: 'url', httpUrl: row?.external_auth_url ?? '', id: signerId };
    if (row?.client_id) query.clientId = row.client_id;
    query.scopes = row?.scopes ? (JSON.parse(row.scopes) as string[]) : [];
    return query;
  }

  function challenge(signerId: string, outcome: Exclude<Outcome, 'ok'>): string {
    const issuer = signers?.byId(signerId)?.issuer ?? '';
    return `Bearer realm="openziti-secondary-ext-jwt" error="${outcome}" error_description="${descriptions[outcome]}" id="${signerId}" issuer="${issuer}"`;
  }

  /** The secondary settings of an auth policy (the default policy for none). */
  function settings(authPolicyId: string): SecondarySettings | undefined {
    return policies.secondary(authPolicyId || 'default');
  }

  /**
   * What is still pending for this session on this request, given its policy's secondary settings. Answers
   * synchronously unless an external JWT has to be verified.
   */
  function evaluateWith(
    session: SessionFlags,
    secondary: SecondarySettings | undefined,
    headers: Record<string, string | string[] | undefined>,
  ): SecondaryState | Promise<SecondaryState> {
    const authQueries: AuthQuery[] = [];
    if ((session.isMfaRequired || secondary?.requireTotp === true) && !session.isMfaComplete) authQueries.push({ ...totpAuthQuery });
    const signerId = secondary?.requireExtJwtSigner;
    if (!signerId) return { authQueries };
    return checkSigner(signerId, session.identityId, headers).then((outcome): SecondaryState => {
      if (outcome === 'ok') return { authQueries };
      authQueries.push(extJwtQuery(signerId));
      return { authQueries, challenge: challenge(signerId, outcome) };
    });
  }

  /** What is still pending for this session on this request. */
  async function evaluate(
    session: SessionFlags,
    authPolicyId: string,
    headers: Record<string, string | string[] | undefined>,
  ): Promise<SecondaryState> {
    return evaluateWith(session, settings(authPolicyId), headers);
  }

  return { evaluate, evaluateWith, settings };
}

export type SecondaryFactors = ReturnType<typeof createSecondaryFactors>;
