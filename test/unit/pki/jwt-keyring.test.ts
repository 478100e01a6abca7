/**
 * The JWT keyring: a token signed by any live controller of the network verifies on every other, under the key its
 * `kid` names and that key's algorithm only. Three real controller PKIs: A (EC P-256, the own controller), B (EC
 * P-384, a member) and C (RSA, a member in some tests, a stranger in others).
 */
import assert from 'node:assert/strict';
import { createHmac, createPublicKey, generateKeyPairSync, sign as signBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { SignJWT, createLocalJWKSet, jwtVerify } from 'jose';
import { loadOrCreatePki, type ControllerPki } from '../../../src/pki/certificate-authority.ts';
import { signJwt } from '../../../src/pki/enrollment-jwt.ts';
import { createJwtKeyring, type KeyringMember } from '../../../src/pki/jwt-keyring.ts';
import { networkJwks } from '../../../src/pki/jwks.ts';
import { signChallenge } from '../../../src/enrollment/enroll.routes.ts';
import { temporaryDirectory } from './pki-fixture.ts';

const inOneHour = () => Math.floor(Date.now() / 1000) + 3600;
const claims = () => ({ iss: 'https://ctrl.example.com:1280', sub: 'identity-1', aud: ['openziti'], exp: inOneHour(), z_t: 's' });

const memberOf = (pki: ControllerPki, id: string) => ({ id, ctrlAddress: `tls:${id}.example.com:1280`, certPem: pki.serverCertPem, fingerprint: pki.serverCertFingerprint });

function b64url(value: unknown): string {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
}

/** A compact JWS with any header, signed by `signature` over its signing input. */
function handMade(header: Record<string, unknown>, payload: Record<string, unknown>, signature: (input: string) => Buffer): string {
  const input = `${b64url(header)}.${b64url(payload)}`;
  return `${input}.${signature(input).toString('base64url')}`;
}

/** A controller PKI whose server key is P-384 (a key file present at first start is kept). */
async function p384Pki(advertise: string): Promise<ControllerPki> {
  const dir = await temporaryDirectory();
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-384' });
  await writeFile(join(dir, 'server.key.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
  return loadOrCreatePki(dir, { advertise });
}

describe('JWT keyring', async () => {
  const [a, b, c] = await Promise.all([
    loadOrCreatePki(await temporaryDirectory(), { advertise: 'a.example.com' }),
    p384Pki('b.example.com'),
    loadOrCreatePki(await temporaryDirectory(), { advertise: 'c.example.com', serverKeyType: 'rsa' }),
  ]);
  let members: KeyringMember[] = [memberOf(a, 'a'), memberOf(b, 'b')];
  const ringOfA = createJwtKeyring(a, () => members);

  it("verifies the own controller's token and another live controller's, each under its own key", async () => {
    const fromA = await ringOfA.verifyWithKey(await signJwt(claims(), a));
    assert.equal(fromA.key.own, true);
    assert.equal(fromA.key.kid, a.serverCertFingerprint);
    assert.equal(fromA.claims.sub, 'identity-1');
    const fromB = await ringOfA.verifyWithKey(await signJwt(claims(), b));
    assert.equal(fromB.key.own, false);
    assert.equal(fromB.key.kid, b.serverCertFingerprint);
    assert.equal(fromB.key.algorithm, 'ES384');
  });

  it("verifies in both directions: B's keyring accepts A's token", async () => {
    const ringOfB = createJwtKeyring(b, () => [memberOf(a, 'a'), memberOf(b, 'b')]);
    assert.equal((await ringOfB.verify(await signJwt(claims(), a))).sub, 'identity-1');
    assert.equal((await ringOfB.verify(await signJwt(claims(), b))).sub, 'identity-1');
  });

  it('verifies an RSA member under RS256, next to EC keys', async () => {
    const ring = createJwtKeyring(a, () => [memberOf(a, 'a'), memberOf(c, 'c')]);
    const verified = await ring.verifyWithKey(await signJwt(claims(), c));
    assert.equal(verified.key.algorithm, 'RS256');
  });

  it('refuses a token whose kid names no live controller, unless the own key signed it', async () => {
    // C and D are not members: their tokens name their own kids, which nobody here knows.
    await assert.rejects(ringOfA.verify(await signJwt(claims(), c)), { code: 'ERR_JOSE_ALG_NOT_ALLOWED' });
    const d = await loadOrCreatePki(await temporaryDirectory(), { advertise: 'd.example.com' });
    await assert.rejects(ringOfA.verify(await signJwt(claims(), d)), { code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' });
    // B's key under a made-up kid, or under no kid, is tried against the own key only.
    const unknownKid = await new SignJWT(claims()).setProtectedHeader({ alg: 'ES384', kid: 'ab'.repeat(20) }).sign(b.serverKey);
    await assert.rejects(ringOfA.verify(unknownKid), { code: 'ERR_JOSE_ALG_NOT_ALLOWED' });
    const noKid = await new SignJWT(claims()).setProtectedHeader({ alg: 'ES384' }).sign(b.serverKey);
    await assert.rejects(ringOfA.verify(noKid));
    // The own key under a kid of an earlier certificate (renewal keeps the key), or under none, verifies.
    const earlierCert = await new SignJWT(claims()).setProtectedHeader({ alg: 'ES256', kid: 'cd'.repeat(20) }).sign(a.serverKey);
    assert.equal((await ringOfA.verifyWithKey(earlierCert)).key.own, true);
    const ownNoKid = await new SignJWT(claims()).setProtectedHeader({ alg: 'ES256' }).sign(a.serverKey);
    assert.equal((await ringOfA.verifyWithKey(ownNoKid)).key.own, true);
  });

  it("refuses a token signed by one controller under another's kid", async () => {
    const bAsA = await new SignJWT(claims()).setProtectedHeader({ alg: 'ES384', kid: a.serverCertFingerprint }).sign(b.serverKey);
    await assert.rejects(ringOfA.verify(bAsA));
    const aAsB = await new SignJWT(claims()).setProtectedHeader({ alg: 'ES256', kid: b.serverCertFingerprint }).sign(a.serverKey);
    await assert.rejects(ringOfA.verify(aAsB), { code: 'ERR_JOSE_ALG_NOT_ALLOWED' });
  });

  it('stops verifying a controller once it leaves the live set', async () => {
    const token = await signJwt(claims(), b);
    await ringOfA.verify(token);
    const before = members;
    members = [memberOf(a, 'a')];
    try {
      await assert.rejects(ringOfA.verify(token));
    } finally {
      members = before;
    }
  });

  it('refuses HS256 signed with the public key as the secret', async () => {
    for (const secret of [createPublicKey(b.serverKey).export({ type: 'spki', format: 'pem' }) as string, b.serverCertPem]) {
      const token = handMade({ alg: 'HS256', kid: b.serverCertFingerprint, typ: 'JWT' }, claims(), (input) => createHmac('sha256', secret).update(input).digest());
      await assert.rejects(ringOfA.verify(token), { code: 'ERR_JOSE_ALG_NOT_ALLOWED' });
    }
    const own = handMade({ alg: 'HS256', typ: 'JWT' }, claims(), (input) => createHmac('sha256', a.serverCertPem).update(input).digest());
    await assert.rejects(ringOfA.verify(own), { code: 'ERR_JOSE_ALG_NOT_ALLOWED' });
  });

  it('refuses alg none, with and without a signature', async () => {
    for (const kid of [b.serverCertFingerprint, a.serverCertFingerprint, undefined]) {
      const unsigned = handMade({ alg: 'none', ...(kid ? { kid } : {}) }, claims(), () => Buffer.alloc(0));
      await assert.rejects(ringOfA.verify(unsigned));
      await assert.rejects(ringOfA.verify(`${unsigned}AAAA`));
    }
  });

  it("refuses another algorithm with the member's key type (PS256 from an RSA member)", async () => {
    const ring = createJwtKeyring(a, () => [memberOf(c, 'c')]);
    const pss = await new SignJWT(claims()).setProtectedHeader({ alg: 'PS256', kid: c.serverCertFingerprint }).sign(c.serverKey);
    await assert.rejects(ring.verify(pss), { code: 'ERR_JOSE_ALG_NOT_ALLOWED' });
  });

  it('refuses a tampered payload or signature', async () => {
    const token = await signJwt(claims(), b);
    const [header, , signature] = token.split('.');
    const forged = `${header}.${b64url({ ...claims(), sub: 'identity-2' })}.${signature}`;
    await assert.rejects(ringOfA.verify(forged), { code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' });
    const flipped = Buffer.from(signature!, 'base64url');
    flipped[0]! ^= 1;
    await assert.rejects(ringOfA.verify(`${token.split('.').slice(0, 2).join('.')}.${flipped.toString('base64url')}`));
  });

  it('refuses a malformed token and an expired one', async () => {
    await assert.rejects(ringOfA.verify('not-a-jwt'), { code: 'ERR_JWS_INVALID' });
    await assert.rejects(ringOfA.verify(''), { code: 'ERR_JWS_INVALID' });
    const expired = await signJwt({ ...claims(), exp: Math.floor(Date.now() / 1000) - 10 }, b);
    await assert.rejects(ringOfA.verify(expired), { code: 'ERR_JWT_EXPIRED' });
    assert.equal((await ringOfA.verify(expired, { currentDate: new Date(Date.now() - 60_000) })).sub, 'identity-1');
  });

  it("ignores a member whose certificate does not have the member's fingerprint", async () => {
    // B's certificate listed under C's fingerprint: neither C's token nor B's verifies through it.
    const ring = createJwtKeyring(a, () => [{ certPem: b.serverCertPem, fingerprint: c.serverCertFingerprint }]);
    await assert.rejects(ring.verify(await signJwt(claims(), c)), { code: 'ERR_JWKS_NO_MATCHING_KEY' });
    await assert.rejects(ring.verify(await signJwt(claims(), b)));
    assert.deepEqual(ring.keys().map((k) => k.kid), [a.serverCertFingerprint]);
  });

  it('refuses a member key no controller signs with (Ed25519)', async () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const token = handMade({ alg: 'EdDSA', kid: 'ef'.repeat(20) }, claims(), (input) => signBytes(null, Buffer.from(input), privateKey));
    await assert.rejects(ringOfA.verify(token));
  });

  it('lists the own key first, then each other live controller once', () => {
    const ring = createJwtKeyring(a, () => [memberOf(b, 'b'), memberOf(a, 'a'), memberOf(b, 'b2')]);
    assert.deepEqual(
      ring.keys().map((k) => [k.kid, k.own, k.algorithm]),
      [
        [a.serverCertFingerprint, true, 'ES256'],
        [b.serverCertFingerprint, false, 'ES384'],
      ],
    );
    assert.equal(ring.member(b.serverCertFingerprint)?.fingerprint, b.serverCertFingerprint);
    assert.equal(ring.member('00'.repeat(20)), undefined);
  });

  it('publishes a JWKS of every live controller, own first, that verifies each one’s tokens', async () => {
    const ring = createJwtKeyring(a, () => [memberOf(a, 'a'), memberOf(b, 'b'), memberOf(c, 'c')]);
    const jwks = await networkJwks(a, ring);
    assert.deepEqual(
      jwks.keys.map((k) => [k.kid, k.alg, k.kty]),
      [
        [a.serverCertFingerprint, 'ES256', 'EC'],
        [b.serverCertFingerprint, 'ES384', 'EC'],
        [c.serverCertFingerprint, 'RS256', 'RSA'],
      ],
    );
    // The own entry carries its chain, the others their certificate.
    assert.equal(jwks.keys[0]!.x5c?.length, 2);
    assert.equal(jwks.keys[1]!.x5c?.length, 1);
    const set = createLocalJWKSet(jwks);
    for (const signer of [a, b, c]) {
      const { payload } = await jwtVerify(await signJwt(claims(), signer), set);
      assert.equal(payload.sub, 'identity-1');
    }
  });

  it('answers a challenge for the own kid only, and says whose another controller’s kid is', () => {
    const ring = createJwtKeyring(a, () => [memberOf(a, 'a'), memberOf(b, 'ctrl-b')]);
    assert.equal(signChallenge(a, 'nonce-1', a.serverCertFingerprint, ring).kid, a.serverCertFingerprint);
    const reasonOf = (keyId: string) => {
      try {
        signChallenge(a, 'nonce-1', keyId, ring);
      } catch (err) {
        return String((err as { cause?: { reason?: unknown } }).cause?.reason);
      }
      assert.fail('the challenge was answered');
    };
    assert.match(reasonOf(b.serverCertFingerprint), /is controller ctrl-b's: only that controller can answer for it \(this controller's key id is [0-9a-f]{40}\)/);
    assert.match(reasonOf(c.serverCertFingerprint), /no enrollment signing key has the id/);
  });
});
