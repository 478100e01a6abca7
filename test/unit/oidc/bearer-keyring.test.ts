/**
 * OIDC tokens across controllers: an access or refresh token another live controller of the network signed verifies
 * here (verifyOidcToken, the Bearer resolver), one from a controller outside the network does not.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadOrCreatePki, type ControllerPki } from '../../../src/pki/certificate-authority.ts';
import { createJwtKeyring } from '../../../src/pki/jwt-keyring.ts';
import { createBearerResolver } from '../../../src/oidc/bearer.ts';
import { createOidcTokens, DEFAULT_LIFETIMES, TokenRefused, verifyOidcToken, type SessionClaims } from '../../../src/oidc/tokens.ts';
import { ApiError } from '../../../src/errors.ts';
import type { Caller } from '../../../src/http/caller.ts';
import type { Membership } from '../../../src/cluster/membership.ts';
import { temporaryDirectory } from '../pki/pki-fixture.ts';

const session: SessionClaims = {
  iss: 'https://b.example.com:1280/oidc',
  sub: 'identity-1',
  clientId: 'openziti',
  apiSessionId: 'api-session-1',
  amr: ['pwd'],
  authTime: Math.floor(Date.now() / 1000),
  scopes: ['openid'],
  configTypes: [],
  certFingerprints: [],
  remoteAddress: '127.0.0.1',
  authenticatorId: 'authenticator-1',
  isAdmin: false,
  externalId: '',
  sdkInfo: null,
  envInfo: null,
  certFlags: { extendable: false, extendRequested: false, keyRollRequested: false, improperChain: false },
};

const memberOf = (pki: ControllerPki, id: string) => ({ id, ctrlAddress: `tls:${id}.example.com:1280`, certPem: pki.serverCertPem, fingerprint: pki.serverCertFingerprint });

describe('OIDC tokens signed by another controller', async () => {
  const [a, b, stranger] = await Promise.all(
    ['a', 'b', 'x'].map(async (name) => loadOrCreatePki(await temporaryDirectory(), { advertise: `${name}.example.com` })),
  );
  const membership: Pick<Membership, 'known'> = { known: () => [memberOf(a, 'a'), memberOf(b, 'b')] };
  const tokensOf = (pki: ControllerPki) => createOidcTokens(pki, DEFAULT_LIFETIMES, () => Date.now());

  it("verifyOidcToken accepts B's access and refresh tokens with A's keyring, and refuses a stranger's", async () => {
    const ring = createJwtKeyring(a, () => membership.known());
    const access = await tokensOf(b).access(session);
    assert.equal((await verifyOidcToken(access, ring, 'a', new Date())).session.apiSessionId, 'api-session-1');
    const refresh = await tokensOf(b).refresh(session);
    assert.equal((await verifyOidcToken(refresh, ring, 'r', new Date())).session.sub, 'identity-1');
    // The type still counts: a refresh token is no access token.
    await assert.rejects(verifyOidcToken(refresh, ring, 'a', new Date()), TokenRefused);
    await assert.rejects(verifyOidcToken(await tokensOf(stranger).access(session), ring, 'a', new Date()), TokenRefused);
    // A keyring of A alone refuses B's token.
    await assert.rejects(verifyOidcToken(access, createJwtKeyring(a), 'a', new Date()), TokenRefused);
  });

  it("the Bearer resolver of A resolves B's access token to the API session it names", async () => {
    const asked: string[] = [];
    const auth = {
      async resolveOidcCaller(apiSessionId: string) {
        asked.push(apiSessionId);
        return { identity: { id: 'identity-1' } } as unknown as Caller;
      },
    };
    const clock = { now: () => new Date() };
    const withNetwork = createBearerResolver({ key: a, membership, auth, clock });
    const caller = await withNetwork.resolve(await tokensOf(b).access(session), {});
    assert.equal(caller.identity.id, 'identity-1');
    assert.deepEqual(asked, ['api-session-1']);

    const alone = createBearerResolver({ key: a, auth, clock });
    await assert.rejects(alone.resolve(await tokensOf(b).access(session), {}), (err: unknown) => err instanceof ApiError && err.status === 401);
    await assert.rejects(withNetwork.resolve(await tokensOf(stranger).access(session), {}), (err: unknown) => err instanceof ApiError && err.status === 401);
    assert.deepEqual(asked, ['api-session-1']);
  });
});
