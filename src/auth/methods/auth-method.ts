/**
 * The strategy interface every authentication method implements (`password`, later `cert` and `ext-jwt`),
 * looked up by its wire name from `POST /authenticate?method=<name>`.
 */
import type { PeerCertificate } from 'node:tls';

export interface AuthRequest {
  body: Record<string, unknown>;
  ipAddress: string;
  peerCertificates: PeerCertificate[];
  headers: Record<string, string | string[] | undefined>;
}

export interface AuthOutcome {
  identityId: string;
  authenticatorId: string;
  isCertExtendable?: boolean;
  improperClientCertChain?: boolean;
  /** The cert authenticator is flagged for early extension (and key roll): the session shows it. */
  isCertExtendRequested?: boolean;
  isCertKeyRollRequested?: boolean;
}

export interface AuthMethod {
  readonly name: string;
  authenticate(req: AuthRequest): Promise<AuthOutcome>;
}
