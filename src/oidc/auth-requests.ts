/**
 * Authorization requests, from `/oidc/authorize` to the redemption of their code. They live in the store (table
 * `oidc_auth_requests`), so each step of a flow may reach another worker process or controller. A request lives
 * ten minutes (upstream's figure); its code is single use: redeeming deletes the row in the same statement that
 * finds it, so two processes can not both redeem one code. Only a SHA-256 of the code is stored.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Store } from '../store/store.ts';
import type { Clock } from '../resources/entity-service.ts';

export const AUTH_REQUEST_LIFETIME_MS = 10 * 60 * 1000;

export interface AuthRequestData {
  clientId: string;
  redirectUri: string;
  state: string;
  nonce: string;
  scopes: string[];
  codeChallenge: string;
  codeChallengeMethod: string;
  /** `https://<host>/oidc`, from the Host of the authorize request. */
  issuer: string;
  /** Config types asked for at authorize (names or ids; resolved at login). */
  configTypes: string[];
  /** Hex SHA-1 of each client certificate presented on the authorize request. */
  certFingerprints: string[];
  remoteAddress: string;
  /** Set once primary authentication passed: the API session it started, and who. */
  apiSessionId?: string;
  identityId?: string;
  /** Authentication methods passed so far (`password`, `cert`, `ext-jwt`, `totp`). */
  amr: string[];
  /** Seconds since the epoch of the primary authentication. */
  authTime?: number;
  sdkInfo?: Record<string, string>;
  envInfo?: Record<string, string>;
}

export interface StoredAuthRequest {
  id: string;
  data: AuthRequestData;
  createdAt: string;
}

function hashCode(code: string): string {
  return createHash('sha256').update(code).digest('hex');
}

export function createAuthRequests(store: Store, clock: Clock) {
  const cutoff = () => new Date(clock.now().getTime() - AUTH_REQUEST_LIFETIME_MS).toISOString();

  function decode(row: { id: string; data: string; created_at: string } | undefined): StoredAuthRequest | undefined {
    if (!row || row.created_at <= cutoff()) return undefined;
    return { id: row.id, data: JSON.parse(row.data) as AuthRequestData, createdAt: row.created_at };
  }

  /** A new request (and the removal of expired ones, which costs an index range scan). */
  async function create(id: string, data: AuthRequestData): Promise<void> {
    const now = clock.now().toISOString();
    await store.writeRuntime(async (tx) => {
      await tx.run('DELETE FROM oidc_auth_requests WHERE created_at <= ?', [cutoff()]);
      await tx.run('INSERT INTO oidc_auth_requests (id, data, created_at) VALUES (?, ?, ?)', [id, JSON.stringify(data), now]);
    });
  }

  /** The live request of this id (not yet redeemed, not expired). */
  async function find(id: string): Promise<StoredAuthRequest | undefined> {
    if (id === '' || id.length > 64) return undefined;
    return decode(await store.get('SELECT id, data, created_at FROM oidc_auth_requests WHERE id = ?', [id]));
  }

  /** Replaces the data of a live request; false when it is gone or already has a code. */
  async function update(id: string, data: AuthRequestData): Promise<boolean> {
    const { changes } = await store.writeRuntime((tx) =>
      tx.run('UPDATE oidc_auth_requests SET data = ? WHERE id = ? AND code_hash IS NULL AND created_at > ?', [JSON.stringify(data), id, cutoff()]),
    );
    return changes > 0;
  }

  /** Issues the request's code (once); undefined when the request is gone or has one already. */
  async function issueCode(id: string): Promise<string | undefined> {
    const code = randomBytes(32).toString('base64url');
    const { changes } = await store.writeRuntime((tx) =>
      tx.run('UPDATE oidc_auth_requests SET code_hash = ? WHERE id = ? AND code_hash IS NULL AND created_at > ?', [hashCode(code), id, cutoff()]),
    );
    return changes > 0 ? code : undefined;
  }

  /** The request a code names, removed in the same step: a code is redeemed once, by one process. */
  async function redeem(code: string): Promise<StoredAuthRequest | undefined> {
    if (code === '' || code.length > 128) return undefined;
    const hash = hashCode(code);
    return store.writeRuntime(async (tx) => {
      const row = await tx.get<{ id: string; data: string; created_at: string }>('SELECT id, data, created_at FROM oidc_auth_requests WHERE code_hash = ?', [hash]);
      if (!row) return undefined;
      const { changes } = await tx.run('DELETE FROM oidc_auth_requests WHERE id = ? AND code_hash = ?', [row.id, hash]);
      return changes > 0 ? decode(row) : undefined;
    });
  }

  return { create, find, update, issueCode, redeem };
}

export type AuthRequests = ReturnType<typeof createAuthRequests>;
