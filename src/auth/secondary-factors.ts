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
import type { Store } from '../store/store.ts';
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

export function createSecondaryFactors(deps: { store: Store; policies: AuthPolicyReader; signers?: SignerTokens }) {
  const { store, policies, signers } = deps;

  async function identityOf(useExternalId: boolean, claimValue: string): Promise<string | undefined> {
    if (!useExternalId) return claimValue;
    const row = await store.get<{ id: string }>('SELECT id FROM identities WHERE external_id = ?', [claimValue]);
    return row?.id;
  }

  async function checkSigner(signerId: string, identityId: string, headers: Record<string, string | string[] | undefined>): Promise<Outcome> {
    const signer = await signers?.byId(signerId);
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
      const trusted = async () => (await identityRights(store, identityId)).every((owner) => covers(signer.trust, owner));
      if (typeof value === 'string' && (await identityOf(signer.useExternalId, value)) === identityId && (await trusted())) return 'ok';
      // A valid token of somebody else, or from a signer not trusted for this identity, does not prove it.
      if (outcome === 'missing') outcome = 'invalid';
    }
    return outcome;
  }

  async function extJwtQuery(signerId: string): Promise<AuthQuery> {
    const row = await store.get<{ external_auth_url: string | null; client_id: string | null; scopes: string | null }>(
      'SELECT external_auth_url, client_id, scopes FROM external_jwt_signers WHERE id = ?',
      [signerId],
    );
    const query: AuthQuery = { typeId: 'EXT-JWT', provider: 'url', httpUrl: row?.external_auth_url ?? '', id: signerId };
    if (row?.client_id) query.clientId = row.client_id;
    query.scopes = row?.scopes ? (JSON.parse(row.scopes) as string[]) : [];
    return query;
  }

  async function challenge(signerId: string, outcome: Exclude<Outcome, 'ok'>): Promise<string> {
    const issuer = (await signers?.byId(signerId))?.issuer ?? '';
    return `Bearer realm="openziti-secondary-ext-jwt" error="${outcome}" error_description="${descriptions[outcome]}" id="${signerId}" issuer="${issuer}"`;
  }

  /** The secondary settings of an auth policy (the default policy for none). */
  function settings(authPolicyId: string): Promise<SecondarySettings | undefined> {
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
    return checkSigner(signerId, session.identityId, headers).then(async (outcome): Promise<SecondaryState> => {
      if (outcome === 'ok') return { authQueries };
      authQueries.push(await extJwtQuery(signerId));
      return { authQueries, challenge: await challenge(signerId, outcome) };
    });
  }

  /** What is still pending for this session on this request. */
  async function evaluate(
    session: SessionFlags,
    authPolicyId: string,
    headers: Record<string, string | string[] | undefined>,
  ): Promise<SecondaryState> {
    return evaluateWith(session, await settings(authPolicyId), headers);
  }

  return { evaluate, evaluateWith, settings };
}

export type SecondaryFactors = ReturnType<typeof createSecondaryFactors>;
