/**
 * JWTs across the controllers of one network: each signs with its own server key, and a token one signed verifies
 * on the other (Bearer access tokens, refresh). Both key sets list both keys, the answering controller's first;
 * the enrollment challenge stays with the controller that holds the key.
 */
import { describe, it } from 'node:test';
import { randomUUID } from 'node:crypto';
import assert from 'node:assert/strict';
import { ADMIN_PASSWORD, ADMIN_USER, testStore } from '../support/controller.ts';
import { eventually, startCluster } from '../support/cluster.ts';
import { bearer, headerOf, oidcLogin, tokenRequest } from '../support/oidc.ts';

const postgres = testStore() === 'postgres';

describe('JWTs across the controllers of a network', { skip: !postgres && 'needs PostgreSQL' }, async () => {
  const cluster = postgres ? await startCluster(2) : undefined!;
  const [a, b] = postgres ? cluster.members : [];
  const kidOf = (tc: typeof a) => tc.controller.pki.serverCertFingerprint;
  if (postgres) {
    await eventually(() => a.controller.membership.live().length === 2 && b.controller.membership.live().length === 2, 5000, 'both members live');
  }

  it('lists both keys in /oidc/keys and /enroll/jwks, the answering controller first', async () => {
    assert.notEqual(kidOf(a), kidOf(b));
    for (const [tc, other] of [[a, b], [b, a]] as const) {
      for (const path of ['/oidc/keys', '/edge/client/v1/enroll/jwks']) {
        const res = await tc.http.get(path);
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body.keys.map((k: { kid: string }) => k.kid), [kidOf(tc), kidOf(other)], path);
      }
    }
  });

  it('accepts on B the access and refresh tokens A signed, and B signs what it issues with its own key', async () => {
    const tokens = await oidcLogin(a.http, { username: ADMIN_USER, password: ADMIN_PASSWORD });
    assert.equal(headerOf(tokens.accessToken).kid, kidOf(a));
    const onB = await b.http.get('/edge/client/v1/current-api-session', bearer(tokens.accessToken));
    assert.equal(onB.status, 200, onB.text);
    const refreshed = await tokenRequest(b.http, { grant_type: 'refresh_token', client_id: 'native', refresh_token: tokens.refreshToken });
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.equal(headerOf(refreshed.body.access_token).kid, kidOf(b));
    const backOnA = await a.http.get('/edge/client/v1/current-api-session', bearer(refreshed.body.access_token));
    assert.equal(backOnA.status, 200, backOnA.text);
  });

  it("answers the enrollment challenge for its own key only, and names the controller of the other's", async () => {
    const own = await b.http.post('/edge/client/v1/enroll/challenge', { nonce: randomUUID(), keyId: kidOf(b) });
    assert.equal(own.status, 200, own.text);
    const other = await b.http.post('/edge/client/v1/enroll/challenge', { nonce: randomUUID(), keyId: kidOf(a) });
    assert.equal(other.status, 400, other.text);
    assert.match(other.text, new RegExp(`is controller ${a.controller.membership.controllerId}'s: only that controller can answer for it`));
  });
});
