/**
 * JWKS fetches check the addresses a host name resolves to and connect to the checked address: a name resolving
 * to a link-local address is refused before any connection, and a refused fetch fails verification as an
 * unreachable endpoint does, with one log line that names the host but not the URL.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { openSqliteStore } from '../../../src/store/sqlite-store.ts';
import { fetchJwks, RefusedAddressError, type ResolveHost } from '../../../src/resources/external-jwt-signers/jwks-fetch.ts';
import { createSignerTokens, ExternalJwtError, type SignerRecord } from '../../../src/resources/external-jwt-signers/signer-tokens.ts';
import { noRights } from '../../../src/auth/rights.ts';
import { claimsFor, createTestSigner } from '../../support/external-signer.ts';

/** A resolver answering from a fixed table, counting its calls per name. */
function fakeResolver(table: Record<string, string[]>): ResolveHost & { calls: Map<string, number> } {
  const calls = new Map<string, number>();
  const resolve = async (hostname: string) => {
    calls.set(hostname, (calls.get(hostname) ?? 0) + 1);
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolve, { calls });
}

let server: Server;
let port = 0;
let body = '{"keys":[]}';
const hostsSeen: string[] = [];

before(async () => {
  server = createServer((req, res) => {
    hostsSeen.push(req.headers.host ?? '');
    if (req.url === '/to-metadata') {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
      res.end();
      return;
    }
    if (req.url === '/to-named-metadata') {
      res.writeHead(302, { location: `http://metadata.example.test:${port}/jwks` });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('fetchJwks', () => {
  it('error/refuses a host name resolving to a link-local address without connecting', async () => {
    const resolve = fakeResolver({ 'idp.example.test': ['169.254.169.254'] });
    const before = hostsSeen.length;
    await assert.rejects(fetchJwks(`http://idp.example.test:${port}/jwks`, { resolve }), (err: unknown) => {
      assert.ok(err instanceof RefusedAddressError);
      assert.equal(err.host, 'idp.example.test');
      assert.equal(err.address, '169.254.169.254');
      return true;
    });
    assert.equal(hostsSeen.length, before);
  });

  it('error/refuses a host name when any one of its addresses is refused', async () => {
    const resolve = fakeResolver({ 'idp.example.test': ['127.0.0.1', 'fe80::1'] });
    await assert.rejects(fetchJwks(`http://idp.example.test:${port}/jwks`, { resolve }), RefusedAddressError);
  });

  it('error/refuses an IPv4-mapped metadata address from the resolver', async () => {
    const resolve = fakeResolver({ 'idp.example.test': ['::ffff:169.254.169.254'] });
    await assert.rejects(fetchJwks(`http://idp.example.test:${port}/jwks`, { resolve }), RefusedAddressError);
  });

  it('error/refuses a literal metadata address without resolving', async () => {
    const resolve = fakeResolver({});
    await assert.rejects(fetchJwks('http://[::ffff:a9fe:a9fe]/jwks', { resolve }), RefusedAddressError);
    await assert.rejects(fetchJwks('http://0xa9.0xfe.0xa9.0xfe/jwks', { resolve }), RefusedAddressError);
    assert.equal(resolve.calls.size, 0);
  });

  it('error/refuses a redirect to a metadata address, literal or by name', async () => {
    const resolve = fakeResolver({ 'idp.example.test': ['127.0.0.1'], 'metadata.example.test': ['169.254.169.254'] });
    await assert.rejects(fetchJwks(`http://idp.example.test:${port}/to-metadata`, { resolve }), RefusedAddressError);
    await assert.rejects(fetchJwks(`http://idp.example.test:${port}/to-named-metadata`, { resolve }), RefusedAddressError);
  });

  it('ok/connects to the address it checked, resolving the name once', async () => {
    const resolve = fakeResolver({ 'idp.example.test': ['127.0.0.1'] });
    body = '{"keys":[{"kid":"k1"}]}';
    const json = await fetchJwks(`http://idp.example.test:${port}/jwks`, { resolve });
    assert.deepEqual(json, { keys: [{ kid: 'k1' }] });
    assert.equal(resolve.calls.get('idp.example.test'), 1);
    assert.equal(hostsSeen.at(-1), `idp.example.test:${port}`);
  });

  it('ok/allows loopback and private addresses', async () => {
    const resolve = fakeResolver({ 'idp.example.test': ['127.0.0.1', '10.0.0.1'] });
    assert.ok(await fetchJwks(`http://idp.example.test:${port}/jwks`, { resolve }));
  });
});

describe('signer tokens with a refused JWKS host', () => {
  it('fails verification as for an unreachable endpoint and logs one line without the URL', async () => {
    const store = openSqliteStore(':memory:');
    const warnings: Array<{ obj: Record<string, unknown>; msg: string }> = [];
    const resolve = fakeResolver({ 'idp.example.test': ['169.254.169.254'], 'good.example.test': ['127.0.0.1'] });
    const tokens = createSignerTokens(store, { resolve, refreshIntervalMs: 0, log: { warn: (obj, msg) => warnings.push({ obj: obj as Record<string, unknown>, msg }) } });
    try {
      const idp = await createTestSigner();
      body = JSON.stringify({ keys: [await idp.publicJwk('k1')] });
      const signer: SignerRecord = {
        id: 'signer-1', name: 'idp', issuer: 'https://idp', audience: 'ziti', certPem: null,
        jwksEndpoint: `http://idp.example.test:${port}/jwks?secret=s3cr3t`, kid: null, fingerprint: null, enabled: true,
        claimsProperty: '/sub', useExternalId: false, enrollToCertEnabled: false, enrollToTokenEnabled: false,
        enrollNameClaimsSelector: '/sub', enrollAttributeClaimsSelector: '', enrollAuthPolicyId: 'default', trust: noRights,
      };
      const token = await idp.sign(claimsFor('https://idp', 'ziti', 'alice'), { kid: 'k1' });

      await assert.rejects(tokens.verify(signer, token), (err: unknown) => err instanceof ExternalJwtError && err.reason === 'invalid');
      assert.equal(warnings.length, 1);
      assert.deepEqual(warnings[0]!.obj, { signerId: 'signer-1', host: 'idp.example.test', address: '169.254.169.254' });
      assert.doesNotMatch(JSON.stringify(warnings), /s3cr3t|\/jwks/);

      // The same key behind an allowed address verifies: the refusal, not the token, failed above.
      const claims = await tokens.verify({ ...signer, id: 'signer-2', jwksEndpoint: `http://good.example.test:${port}/jwks` }, token);
      assert.equal(claims.sub, 'alice');
    } finally {
      await store.close();
    }
  });
});
