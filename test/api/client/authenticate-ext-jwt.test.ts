/**
 * `POST /authenticate?method=ext-jwt`: tokens of a certificate signer and of a JWKS signer (served over HTTP on
 * loopback, including a redirect and a key published later), identity by id or by externalId, the auth
 * policy's ext-jwt rules, and every failure with its `WWW-Authenticate` challenge: missing, invalid (issuer
 * unknown, audience, kid, signature, nbf, claim type, `alg: none`) and expired tokens, disabled signers and
 * identities, and no enabled signer at all.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import { createClient, type HttpResponse } from '../../support/client.ts';
import { createIdentity } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertError } from '../../support/assertions.ts';
import { manualClock } from '../../support/manual-clock.ts';
import { claimsFor, createTestSigner, insertAuthPolicy, startJwksServer } from '../../support/external-signer.ts';

// Real time plus moves: the JWKS refresh interval (1 s) is passed by moving the clock, not by sleeping.
const clock = manualClock();
const tc: TestController = await startTestController({ start: { clock } });
const jwks = await startJwksServer();
after(() => jwks.close());

const AUDIENCE = 'portcullis-tests';
const certIdp = await createTestSigner('cert-idp');
const jwksIdp = await createTestSigner('jwks-idp');
const CERT_ISSUER = uniqueName('https://cert-idp.example.com');
const JWKS_ISSUER = uniqueName('https://jwks-idp.example.com');
const JWKS_KID = 'jwks-key-1';
jwks.setKeys([await jwksIdp.publicJwk(JWKS_KID)]);

async function createSigner(body: Record<string, unknown>): Promise<string> {
  const res = await tc.mgmt.post('/external-jwt-signers', { name: uniqueName('signer'), audience: AUDIENCE, enabled: true, ...body });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id as string;
}

const certSignerId = await createSigner({ issuer: CERT_ISSUER, certPem: certIdp.certPem });
const jwksSignerId = await createSigner({ issuer: JWKS_ISSUER, jwksEndpoint: jwks.url, useExternalId: true });

function authenticate(token: string | undefined, opts: { api?: 'client' | 'management'; headers?: Record<string, string> } = {}): Promise<HttpResponse> {
  const headers: Record<string, string> = { ...opts.headers };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  return tc.http.post(`/edge/${opts.api ?? 'client'}/v1/authenticate?method=ext-jwt`, {}, { headers });
}

async function enabledSignerIds(): Promise<{ ids: string; issuers: string }> {
  const rows = await tc.controller.store.all<{ id: string; issuer: string }>('SELECT id, issuer FROM external_jwt_signers WHERE enabled = 1 ORDER BY created_at, id');
  return { ids: rows.map((r) => r.id).join('|'), issuers: rows.map((r) => r.issuer).join('|') };
}

/** 401 UNAUTHORIZED with the primary ext-jwt challenge naming `error` and every enabled signer. */
async function assertRefused(res: HttpResponse, error: 'missing' | 'invalid' | 'expired'): Promise<void> {
  assertError(res, 401, 'UNAUTHORIZED');
  const description = { missing: 'no matching token was provided', expired: 'token expired', invalid: 'token is invalid' }[error];
  const { ids, issuers } = await enabledSignerIds();
  assert.equal(
    res.headers['www-authenticate'],
    `Bearer realm="openziti-primary-ext-jwt" error="${error}" error_description="${description}" id="${ids}" issuer="${issuers}"`,
  );
}

function certToken(sub: string, extra: Record<string, unknown> = {}, opts: { kid?: string | null } = {}): Promise<string> {
  return certIdp.sign(claimsFor(CERT_ISSUER, AUDIENCE, sub, extra), opts);
}

function jwksToken(sub: string, extra: Record<string, unknown> = {}, kid: string | null = JWKS_KID): Promise<string> {
  return jwksIdp.sign(claimsFor(JWKS_ISSUER, AUDIENCE, sub, extra), { kid });
}

describe('ext-jwt authentication: success', () => {
  it('accepts a token of a certificate signer whose subject is the identity id, on both APIs', async () => {
    const identityId = await createIdentity(tc.mgmt);
    for (const api of ['client', 'management'] as const) {
      const res = await authenticate(await certToken(identityId), { api });
      assert.equal(res.status, 200, res.text);
      assertMatchesReference(api, 'POST', '/authenticate', 200, res.body);
      assert.equal(res.body.data.identityId, identityId);
      assert.equal(res.body.data.authenticatorId, `extJwtId:${certSignerId}`);
      assert.equal(res.headers['zt-session'], res.body.data.token);
      const session = createClient(`https://127.0.0.1:${tc.port}/edge/${api}/v1`, tc.ca, { token: res.body.data.token });
      const current = await session.get('/current-api-session');
      assert.equal(current.status, 200, current.text);
      assert.equal(current.body.data.identityId, identityId);
    }
  });

  it('accepts a token of a JWKS signer matched by externalId; the JWKS is fetched from the endpoint', async () => {
    const externalId = uniqueName('ext');
    const identityId = await createIdentity(tc.mgmt, { externalId });
    const before = jwks.requests();
    const res = await authenticate(await jwksToken(externalId));
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.identityId, identityId);
    assert.equal(res.body.data.authenticatorId, `extJwtId:${jwksSignerId}`);
    assert.ok(jwks.requests() > before);
    // An identity id is not an externalId for this signer.
    await assertRefused(await authenticate(await jwksToken(identityId)), 'missing');
  });

  it('uses a configured kid instead of the certificate fingerprint, and a custom claims property', async () => {
    const idp = await createTestSigner('kid-idp');
    const issuer = uniqueName('https://kid-idp.example.com');
    await createSigner({ issuer, certPem: idp.certPem, kid: uniqueName('custom-kid'), claimsProperty: 'identity/id' });
    const kid = (await tc.controller.store.value<string>('SELECT kid FROM external_jwt_signers WHERE issuer = ?', [issuer]))!;
    const identityId = await createIdentity(tc.mgmt);
    const claims = claimsFor(issuer, AUDIENCE, 'ignored', { identity: { id: identityId } });
    const res = await authenticate(await idp.sign(claims, { kid }));
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.identityId, identityId);
    await assertRefused(await authenticate(await idp.sign(claims, { kid: idp.fingerprint })), 'invalid');
    // A claims property that does not resolve to a string makes the token invalid.
    await assertRefused(await authenticate(await idp.sign({ ...claims, identity: { id: 42 } }, { kid })), 'invalid');
  });

  it('accepts audiences given as an array, JWKS entries with x5c, redirects to the key set, and keys published later', async () => {
    const identityId = await createIdentity(tc.mgmt);
    assert.equal((await authenticate(await certToken(identityId, { aud: ['other', AUDIENCE] }))).status, 200);

    const idp = await createTestSigner('x5c-idp');
    const der = idp.certPem.replace(/-----[A-Z ]+-----|\s/g, '');
    const issuer = uniqueName('https://x5c-idp.example.com');
    jwks.setKeys([await jwksIdp.publicJwk(JWKS_KID), { kty: 'EC', kid: 'x5c-key', x5c: [der] }]);
    await createSigner({ issuer, jwksEndpoint: jwks.url.replace('/jwks', '/redirect') });
    const token = await idp.sign(claimsFor(issuer, AUDIENCE, identityId), { kid: 'x5c-key' });
    const ok = await authenticate(token);
    assert.equal(ok.status, 200, ok.text);

    // A key the endpoint did not publish yet is unknown; once published it is found when the one-second refresh
    // interval has passed.
    const rotated = await createTestSigner('rotated');
    const late = await rotated.sign(claimsFor(issuer, AUDIENCE, identityId), { kid: 'late-key' });
    await assertRefused(await authenticate(late), 'invalid');
    jwks.setKeys([await jwksIdp.publicJwk(JWKS_KID), await rotated.publicJwk('late-key')]);
    const fetches = jwks.requests();
    clock.advance(1000);
    const found = await authenticate(late);
    assert.equal(found.status, 200, found.text);
    assert.ok(jwks.requests() > fetches, 'the key set was fetched again');
    // Keys learned once stay usable although the endpoint no longer lists them.
    jwks.setKeys([await jwksIdp.publicJwk(JWKS_KID)]);
    const refetches = jwks.requests();
    clock.advance(1000);
    assert.equal((await authenticate(late)).status, 200);
    assert.equal((await authenticate(token)).status, 200);
    assert.ok(jwks.requests() > refetches, 'the key set without the keys was fetched');
  });
});

describe('ext-jwt authentication: refused tokens', () => {
  it('reports missing when no bearer token, no known issuer, or a non-bearer header is sent', async () => {
    const identityId = await createIdentity(tc.mgmt);
    await assertRefused(await authenticate(undefined), 'missing');
    await assertRefused(await authenticate(await certIdp.sign(claimsFor('https://unknown.example.com', AUDIENCE, identityId))), 'missing');
    await assertRefused(await tc.http.post('/edge/client/v1/authenticate?method=ext-jwt', {}, { headers: { authorization: `Basic ${await certToken(identityId)}` } }), 'missing');
    await assertRefused(await authenticate('not-a-jwt'), 'missing');
    // With a zt-session header bearer tokens are secondary factors, never primary credentials.
    await assertRefused(await authenticate(await certToken(identityId), { headers: { 'zt-session': 'abc' } }), 'missing');
  });

  it('reports expired for a token past exp, and invalid for nbf in the future, a wrong audience, kid or signature', async () => {
    const identityId = await createIdentity(tc.mgmt);
    const now = Math.floor(Date.now() / 1000);
    await assertRefused(await authenticate(await certToken(identityId, { exp: now - 10 })), 'expired');
    await assertRefused(await authenticate(await certToken(identityId, { nbf: now + 600 })), 'invalid');
    await assertRefused(await authenticate(await certToken(identityId, { aud: 'someone-else' })), 'invalid');
    await assertRefused(await authenticate(await certToken(identityId, {}, { kid: 'unknown-kid' })), 'invalid');
    await assertRefused(await authenticate(await certToken(identityId, {}, { kid: null })), 'invalid');
    await assertRefused(await authenticate(await jwksToken(identityId, {}, 'unknown-kid')), 'invalid');
    // Signed by another key under the certificate's kid.
    const impostor = await createTestSigner('impostor');
    await assertRefused(await authenticate(await impostor.sign(claimsFor(CERT_ISSUER, AUDIENCE, identityId), { kid: certIdp.fingerprint })), 'invalid');
    // Unsigned.
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const unsigned = `${b64({ alg: 'none', kid: certIdp.fingerprint })}.${b64(claimsFor(CERT_ISSUER, AUDIENCE, identityId))}.`;
    await assertRefused(await authenticate(unsigned), 'invalid');
  });

  it('reports missing for unknown and disabled identities and for a disabled signer', async () => {
    await assertRefused(await authenticate(await certToken('no-such-identity')), 'missing');
    const identityId = await createIdentity(tc.mgmt);
    await tc.controller.store.write((tx) => tx.run('UPDATE identities SET disabled_at = ? WHERE id = ?', [new Date().toISOString(), identityId]));
    await assertRefused(await authenticate(await certToken(identityId)), 'missing');

    const idp = await createTestSigner('disabled-idp');
    const issuer = uniqueName('https://disabled-idp.example.com');
    const signerId = await createSigner({ issuer, certPem: idp.certPem, enabled: false });
    const other = await createIdentity(tc.mgmt);
    const token = await idp.sign(claimsFor(issuer, AUDIENCE, other));
    const refused = await authenticate(token);
    await assertRefused(refused, 'missing');
    assert.ok(!String(refused.headers['www-authenticate']).includes(signerId));
    assert.equal((await tc.mgmt.patch(`/external-jwt-signers/${signerId}`, { enabled: true })).status, 200);
    assert.equal((await authenticate(token)).status, 200);
  });

  it('percent-encodes the UTF-8 of an issuer outside printable ASCII in the challenge, and keeps the error envelope', async () => {
    // Found by the fuzz suite (test/interop/fuzz): Node refused the header and the 401 lost its envelope.
    const idp = await createTestSigner('odd-issuer-idp');
    const base = uniqueName('https://odd-issuer.example.com');
    const signerId = await createSigner({ issuer: `${base}/\u00e9\u0001x\u2603`, certPem: idp.certPem });
    try {
      const res = await authenticate(undefined);
      assertError(res, 401, 'UNAUTHORIZED');
      assert.match(String(res.headers['content-type']), /^application\/json/);
      const challenge = String(res.headers['www-authenticate']);
      assert.ok(challenge.startsWith('Bearer realm="openziti-primary-ext-jwt" error="missing"'), challenge);
      assert.ok(challenge.includes(`${base}/%C3%A9%01x%E2%98%83"`), challenge);
    } finally {
      assert.equal((await tc.mgmt.patch(`/external-jwt-signers/${signerId}`, { enabled: false })).status, 200);
    }
  });

  it("follows the identity's auth policy: ext-jwt disallowed, or restricted to other signers", async () => {
    const forbidding = await insertAuthPolicy(tc, { extJwt: { allowed: false } });
    const onlyJwks = await insertAuthPolicy(tc, { extJwt: { allowed: true, allowedSigners: [jwksSignerId] } });
    const onlyCert = await insertAuthPolicy(tc, { extJwt: { allowed: true, allowedSigners: [certSignerId] } });
    const a = await createIdentity(tc.mgmt, { authPolicyId: forbidding });
    const b = await createIdentity(tc.mgmt, { authPolicyId: onlyJwks });
    const c = await createIdentity(tc.mgmt, { authPolicyId: onlyCert });
    await assertRefused(await authenticate(await certToken(a)), 'missing');
    await assertRefused(await authenticate(await certToken(b)), 'missing');
    const ok = await authenticate(await certToken(c));
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.data.identityId, c);
  });

  it('answers 401 UNAUTHORIZED without a challenge when no signer is enabled', async () => {
    const identityId = await createIdentity(tc.mgmt);
    const enabled = await tc.controller.store.all<{ id: string }>('SELECT id FROM external_jwt_signers WHERE enabled = 1');
    for (const { id } of enabled) assert.equal((await tc.mgmt.patch(`/external-jwt-signers/${id}`, { enabled: false })).status, 200);
    try {
      const res = await authenticate(await certToken(identityId));
      assertError(res, 401, 'UNAUTHORIZED');
      assert.equal(res.headers['www-authenticate'], undefined);
    } finally {
      for (const { id } of enabled) await tc.mgmt.patch(`/external-jwt-signers/${id}`, { enabled: true });
    }
    assert.equal((await authenticate(await certToken(identityId))).status, 200);
  });
});
