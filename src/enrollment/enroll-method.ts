/**
 * The strategy interface of every enrollment method (`ott`, `ottca`, `ca`, `updb`, `erott`, `trott`,
 * `token`), looked up by its wire name. The enroll routes (the generic `POST /enroll` and the method-specific
 * paths) resolve the method and, for token methods, the outstanding enrollment — unknown, used and expired
 * tokens are refused there — and hand the method a normalized request. The method does the rest in one
 * transaction (the enrollment is consumed together with the credential it creates) and returns `data`.
 */
import type { PeerCertificate } from 'node:tls';

/** An outstanding enrollment as stored (`enrollments` table). */
export interface EnrollmentRow {
  id: string;
  method: string;
  identityId: string | null;
  routerId: string | null;
  caId: string | null;
  username: string | null;
  token: string;
  jwt: string;
  issuedAt: string;
  expiresAt: string;
}

export interface EnrollInput {
  method: string;
  /** The matched outstanding enrollment (token methods only). */
  enrollment?: EnrollmentRow;
  body: {
    name?: string;
    clientCsr?: string;
    certCsr?: string;
    serverCertCsr?: string;
    username?: string;
    password?: string;
  };
  /** The TLS peer chain as presented: leaf first, then client-supplied intermediates. */
  peerCertificates: PeerCertificate[];
  headers: Record<string, string | string[] | undefined>;
}

export interface EnrollMethod {
  readonly name: string;
  /** Whether the method needs `token` (all but `ca` and `token`). */
  readonly usesToken: boolean;
  /** Returns the response `data` (e.g. `{cert, ca?, serverCert?}` or `{username}`). */
  enroll(input: EnrollInput): Promise<Record<string, unknown>>;
}
