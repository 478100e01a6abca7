/**
 * A test identity provider: an EC P-256 key pair with a self-signed certificate (for `certPem` signers), JWTs
 * signed with jose, and a JWKS served over plain HTTP on loopback (for `jwksEndpoint` signers). Also a helper
 * that stores an auth policy directly in the store (a shortcut for test setup; `/auth-policies` manages them over the API).
 */
import { createServer, type Server } from 'node:http';
import { randomUUID, webcrypto } from 'node:crypto';
import { SignJWT, exportJWK, type JWK } from 'jose';
import { x509 } from '../../src/pki/x509-library.ts';
import type { TestController } from './controller.ts';

export interface TestSigner {
  keys: CryptoKeyPair;
  certPem: string;
  /** Lower-case hex SHA-1 of the certificate DER (the default kid of a certPem signer). */
  fingerprint: string;
  sign(claims: Record<string, unknown>, opts?: { kid?: string | null; alg?: string }): Promise<string>;
  publicJwk(kid: string): Promise<JWK>;
}

export async function createTestSigner(commonName = 'test-idp'): Promise<TestSigner> {
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as unknown as CryptoKeyPair;
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01' + randomUUID().replace(/-/g, '').slice(0, 14),
    name: `CN=${commonName}`,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 365 * 24 * 3600_000),
    keys,
    signingAlgorithm: alg,
  });
  const fingerprint = Buffer.from(await cert.getThumbprint('SHA-1')).toString('hex');
  return {
    keys,
    certPem: cert.toString('pem') + '\n',
    fingerprint,
    async sign(claims, opts = {}) {
      const header: Record<string, unknown> = { alg: opts.alg ?? 'ES256', typ: 'JWT' };
      const kid = opts.kid === undefined ? fingerprint : opts.kid;
      if (kid !== null) header.kid = kid;
      return new SignJWT(claims).setProtectedHeader(header as { alg: string }).sign(keys.privateKey);
    },
    async publicJwk(kid) {
      return { ...(await exportJWK(keys.publicKey)), kid, alg: 'ES256', use: 'sig' };
    },
  };
}

/** Standard claims for `signer`: issuer, audience, subject, one hour of validity. */
export function claimsFor(issuer: string, audience: string, sub: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000);
  return { iss: issuer, aud: audience, sub, iat: now, exp: now + 3600, ...extra };
}

export interface JwksServer {
  url: string;
  /** The key set served from now on. */
  setKeys(keys: JWK[]): void;
  /** Number of JWKS requests served so far. */
  requests(): number;
  close(): Promise<void>;
}

export async function startJwksServer(): Promise<JwksServer> {
  let keys: JWK[] = [];
  let count = 0;
  const server: Server = createServer((req, res) => {
    count += 1;
    if (req.url === '/redirect') {
      res.writeHead(302, { location: '/jwks' });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/jwks`,
    setKeys: (k) => {
      keys = k;
    },
    requests: () => count,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const defaultPrimary = {
  cert: { allowed: true, allowExpiredCerts: true },
  extJwt: { allowed: true, allowedSigners: [] as string[] },
  updb: {
    allowed: true, lockoutDurationMinutes: 0, maxAttempts: 0, minPasswordLength: 5,
    requireMixedCase: false, requireNumberChar: false, requireSpecialChar: false,
  },
};

/** Stores an auth policy (primary settings merged over the default policy's) and returns its id. */
export async function insertAuthPolicy(
  tc: TestController,
  primary: { cert?: Partial<typeof defaultPrimary.cert>; extJwt?: Partial<typeof defaultPrimary.extJwt> } = {},
  secondary: { requireTotp?: boolean; requireExtJwtSigner?: string | null } = {},
): Promise<string> {
  const id = randomUUID();
  const settings = {
    ...defaultPrimary,
    cert: { ...defaultPrimary.cert, ...primary.cert },
    extJwt: { ...defaultPrimary.extJwt, ...primary.extJwt },
  };
  const now = new Date().toISOString();
  await tc.controller.store.write((tx) =>
    tx.run('INSERT INTO auth_policies (id, name, primary_settings, secondary_settings, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)', [
      id,
      `policy-${id}`,
      JSON.stringify(settings),
      JSON.stringify({ requireTotp: false, ...secondary }),
      now,
      now,
    ]),
  );
  return id;
}
