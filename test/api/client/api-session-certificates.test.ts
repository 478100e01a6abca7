/**
 * `/current-api-session/certificates` (client API): a CSR becomes a 12-hour client certificate signed by the
 * controller's signing CA, visible only to its own API session, usable for `method=cert` login while that
 * session lives, and gone with it. Also checks the current API session's expiry fields and the controller
 * list. Real keys and CSRs; issued chains are checked with `openssl verify`.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { startTestController, testStore, uniqueName, type TestController } from '../../support/controller.ts';
import { createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertDecodeError, TIMESTAMP, assertEmptyOk, assertError, assertFieldError } from '../../support/assertions.ts';
import { csrFor, newEcKey, opensslVerify, pemBlocks, sha1Of, tamperedCsr, type TestKey } from '../../support/enrollment.ts';
import type { HttpClient } from '../../support/client.ts';

const tc: TestController = await startTestController();
const BASE = '/edge/client/v1';
const TWELVE_HOURS = 12 * 60 * 60 * 1000;

interface Session {
  user: Awaited<ReturnType<typeof createUserWithPassword>>;
  client: HttpClient;
}

async function newSession(): Promise<Session> {
  const user = await createUserWithPassword(tc);
  return { user, client: tc.client.as({ token: user.token }) };
}

async function issue(session: Session, key?: TestKey): Promise<{ id: string; certificate: string; key: TestKey; body: any }> {
  const k = key ?? (await newEcKey());
  const res = await session.client.post('/current-api-session/certificates', { csr: await csrFor(k, uniqueName('ephemeral')) });
  assert.equal(res.status, 201, res.text);
  return { id: res.body.data.id, certificate: res.body.data.certificate, key: k, body: res.body };
}

async function certLogin(certPem: string, key: TestKey) {
  return tc.http.post(`${BASE}/authenticate?method=cert`, {}, { cert: certPem, key: key.keyPem });
}

describe('POST /current-api-session/certificates', () => {
  it('signs the CSR for 12 hours under the signing CA and answers certificate and CA bundle', async () => {
    const session = await newSession();
    const before = Date.now();
    const { id, certificate, body } = await issue(session);
    assertMatchesReference('client', 'POST', '/current-api-session/certificates', 201, body);
    assert.deepEqual(Object.keys(body.data), ['_links', 'id', 'cas', 'certificate']);
    assert.deepEqual(body.data._links, { self: { href: `./current-api-session/certificates/${id}` } });
    assert.deepEqual(body.meta, {});
    assert.equal(body.data.cas, tc.controller.pki.caBundlePem);
    assert.equal(pemBlocks(certificate).length, 1, 'the certificate alone');

    const cert = new X509Certificate(certificate);
    assert.match(cert.subject, /CN=ephemeral-/);
    assert.ok(Date.parse(cert.validTo) - before >= TWELVE_HOURS - 2000 && Date.parse(cert.validTo) - Date.now() <= TWELVE_HOURS + 2000);
    // Chains to the bundle as a client certificate (the intermediate is the issuer).
    opensslVerify(certificate + pemBlocks(tc.controller.pki.caBundlePem)[0], tc.controller.pki.caBundlePem, 'sslclient');
    assert.equal(cert.checkIssued(new X509Certificate(pemBlocks(tc.controller.pki.caBundlePem)[0])), true);
  });

  it('refuses a malformed, tampered or missing CSR and a wrong content type', async () => {
    const session = await newSession();
    assertError(await session.client.post('/current-api-session/certificates', { csr: 'not a csr' }), 400, 'COULD_NOT_PROCESS_CSR');
    const good = await csrFor(await newEcKey(), 'x');
    assertError(await session.client.post('/current-api-session/certificates', { csr: tamperedCsr(good) }), 400, 'COULD_NOT_PROCESS_CSR');
    const certAsCsr = pemBlocks(tc.controller.pki.caBundlePem)[0];
    assertError(await session.client.post('/current-api-session/certificates', { csr: certAsCsr }), 400, 'COULD_NOT_PROCESS_CSR');
    assertFieldError(await session.client.post('/current-api-session/certificates', {}), /csr/);
    assertDecodeError(await session.client.post('/current-api-session/certificates', { csr: 42 }), 'csr');
    const wrongType = await session.client.post('/current-api-session/certificates', undefined, { rawBody: good, contentType: 'application/x-pem-file' });
    assert.equal(wrongType.status, 415, wrongType.text);
    const listed = await session.client.get('/current-api-session/certificates');
    assert.equal(listed.body.data.length, 0, 'nothing was stored');
  });

  it('needs a session', async () => {
    const res = await tc.http.post(`${BASE}/current-api-session/certificates`, { csr: await csrFor(await newEcKey(), 'x') });
    assertError(res, 401, 'UNAUTHORIZED');
    assertError(await tc.http.get(`${BASE}/current-api-session/certificates`), 401, 'UNAUTHORIZED');
    assertError(await tc.http.get(`${BASE}/current-api-session/certificates/x`), 401, 'UNAUTHORIZED');
    assertError(await tc.http.delete(`${BASE}/current-api-session/certificates/x`), 401, 'UNAUTHORIZED');
  });

  it('is not offered by the management API', async () => {
    const res = await tc.mgmt.get('/current-api-session/certificates');
    assert.equal(res.status, 404, res.text);
  });
});

describe('list, detail and delete', () => {
  it('shows the certificates of the caller\'s own session only', async () => {
    const session = await newSession();
    const first = await issue(session);
    const second = await issue(session);

    const res = await session.client.get('/current-api-session/certificates');
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('client', 'GET', '/current-api-session/certificates', 200, res.body);
    assert.deepEqual(res.body.data.map((c: { id: string }) => c.id).sort(), [first.id, second.id].sort());
    assert.equal(res.body.meta.pagination.totalCount, 2);

    const detail = await session.client.get(`/current-api-session/certificates/${first.id}`);
    assert.equal(detail.status, 200, detail.text);
    assertMatchesReference('client', 'GET', '/current-api-session/certificates/{id}', 200, detail.body, { allowNullAt: ['/meta'] });
    assert.equal(detail.body.meta, null, 'upstream sends a null meta here');
    const d = detail.body.data;
    const cert = new X509Certificate(first.certificate);
    assert.equal(d.certificate, first.certificate);
    assert.equal(d.fingerprint, sha1Of(first.certificate));
    assert.equal(d.subject, cert.subject.split('\n').reverse().join(','));
    assert.match(d.subject, /^CN=ephemeral-.*,O=NetFoundry,C=US$/);
    assert.equal(Date.parse(d.validTo), Date.parse(cert.validTo));
    assert.equal(Date.parse(d.validFrom), Date.parse(cert.validFrom));
    for (const f of ['createdAt', 'updatedAt', 'validFrom', 'validTo']) assert.match(d[f], TIMESTAMP);
    assert.deepEqual(d._links, { self: { href: `./current-api-session/certificates/${first.id}` } });
    assert.deepEqual(d.tags, {});

    // Filter and paging work as on every list.
    const filtered = await session.client.get(`/current-api-session/certificates?filter=${encodeURIComponent(`fingerprint = "${d.fingerprint}"`)}`);
    assert.deepEqual(filtered.body.data.map((c: { id: string }) => c.id), [first.id]);
    const paged = await session.client.get('/current-api-session/certificates?limit=1');
    assert.equal(paged.body.data.length, 1);
    assert.equal(paged.body.meta.pagination.totalCount, 2);
    assertError(await session.client.get('/current-api-session/certificates?filter=nonsense%20%3D'), 400, 'INVALID_FILTER');

    // Another session, even of the same identity, sees none of them.
    const other = tc.client.as({ token: await tc.login(session.user.username, session.user.password, 'client') });
    assert.equal((await other.get('/current-api-session/certificates')).body.data.length, 0);
    assertError(await other.get(`/current-api-session/certificates/${first.id}`), 404, 'NOT_FOUND');
    assertError(await other.delete(`/current-api-session/certificates/${first.id}`), 404, 'NOT_FOUND');

    assertEmptyOk(await session.client.delete(`/current-api-session/certificates/${first.id}`));
    assertError(await session.client.get(`/current-api-session/certificates/${first.id}`), 404, 'NOT_FOUND');
    assertError(await session.client.delete(`/current-api-session/certificates/${first.id}`), 404, 'NOT_FOUND');
    assert.deepEqual((await session.client.get('/current-api-session/certificates')).body.data.map((c: { id: string }) => c.id), [second.id]);
  });

  it('answers 404 for an unknown id', async () => {
    const session = await newSession();
    assertError(await session.client.get('/current-api-session/certificates/no-such-cert'), 404, 'NOT_FOUND');
    assertError(await session.client.delete('/current-api-session/certificates/no-such-cert'), 404, 'NOT_FOUND');
  });
});

describe('certificate login with an API-session certificate', () => {
  it('authenticates the session\'s identity while the certificate and its session live', async () => {
    const session = await newSession();
    const { id, certificate, key } = await issue(session);
    const intermediate = pemBlocks(tc.controller.pki.caBundlePem)[0];

    const res = await certLogin(certificate + intermediate, key);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.identityId, session.user.id);
    const original = await session.client.get('/current-api-session');
    assert.equal(res.body.data.authenticatorId, original.body.data.authenticatorId, 'the new session keeps the authenticator');
    assert.equal(res.body.data.isCertExtendable, false);
    assert.equal('improperClientCertChain' in res.body.data, false);

    // The leaf alone is enough too.
    const leafOnly = await certLogin(certificate, key);
    assert.equal(leafOnly.status, 200, leafOnly.text);

    // A deleted certificate no longer authenticates.
    assertEmptyOk(await session.client.delete(`/current-api-session/certificates/${id}`));
    assertError(await certLogin(certificate + intermediate, key), 401, 'INVALID_AUTH');
  });

  it('ends with its API session (logout or admin delete)', async () => {
    const session = await newSession();
    const { id, certificate, key } = await issue(session);
    const sessionId = (await session.client.get('/current-api-session')).body.data.id as string;
    assertEmptyOk(await session.client.delete('/current-api-session'));
    assertError(await certLogin(certificate, key), 401, 'INVALID_AUTH');
    const left = (await tc.controller.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM api_session_certificates WHERE id = ? OR api_session_id = ?', [id, sessionId]))!;
    assert.equal(Number(left.n), 0, 'the certificate is deleted with its session');

    const next = await newSession();
    const second = await issue(next);
    const nextId = (await next.client.get('/current-api-session')).body.data.id as string;
    assertEmptyOk(await tc.mgmt.delete(`/api-sessions/${nextId}`));
    assertError(await certLogin(second.certificate, second.key), 401, 'INVALID_AUTH');
  });

  it('is refused while the identity is disabled, and for an expired certificate', async () => {
    const session = await newSession();
    const { certificate, key } = await issue(session);
    assertEmptyOk(await tc.mgmt.post(`/identities/${session.user.id}/disable`, { durationMinutes: 0 }));
    assertError(await certLogin(certificate, key), 401, 'INVALID_AUTH');
    assertEmptyOk(await tc.mgmt.post(`/identities/${session.user.id}/enable`));

    const again = await newSession();
    const issued = await issue(again);
    assert.equal((await certLogin(issued.certificate, issued.key)).status, 200);
    // Expire the stored certificate instead of waiting 12 hours.
    await tc.controller.store.write((tx) => tx.run('UPDATE api_session_certificates SET valid_to = ? WHERE id = ?', [new Date(Date.now() - 1000).toISOString(), issued.id]));
    assertError(await certLogin(issued.certificate, issued.key), 401, 'INVALID_AUTH');
  });

  it('a certificate signed by someone else with the same subject is refused', async () => {
    const session = await newSession();
    const key = await newEcKey();
    await issue(session, key);
    const { x509 } = await import('../../../src/pki/x509-library.ts');
    const selfSigned = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: '01', name: 'CN=ephemeral-forged', keys: key.keys, notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 3_600_000), signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    });
    assertError(await certLogin(selfSigned.toString('pem'), key), 401, 'INVALID_AUTH');
  });
});

describe('GET /current-api-session fields', () => {
  it('carries expiry, activity and the cert flags as upstream', async () => {
    const session = await newSession();
    const res = await session.client.get('/current-api-session');
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('client', 'GET', '/current-api-session', 200, res.body);
    const d = res.body.data;
    assert.equal(d.expirationSeconds, 1800, 'the configured timeout, not the time left');
    assert.match(d.expiresAt, TIMESTAMP);
    assert.match(d.cachedLastActivityAt, TIMESTAMP);
    assert.match(d.lastActivityAt, TIMESTAMP);
    const expiresIn = Date.parse(d.expiresAt) - Date.parse(d.cachedLastActivityAt);
    assert.equal(expiresIn, 1800 * 1000, 'expiresAt = newest activity + timeout');
    assert.ok(Date.parse(d.cachedLastActivityAt) >= Date.parse(d.lastActivityAt));
    for (const flag of ['isCertExtendRequested', 'isCertKeyRollRequested', 'improperClientCertChain']) {
      assert.equal(flag in d, false, `${flag} is omitted while false`);
    }
    assert.equal(d.isCertExtendable, false);
    assert.deepEqual(d.authQueries, []);
    assert.equal(d.token, session.user.token);

    // Activity moves expiresAt forward (or keeps it), never back.
    const later = await session.client.get('/current-api-session');
    assert.ok(Date.parse(later.body.data.expiresAt) >= Date.parse(d.expiresAt));
  });

  it('GET /controllers lists this controller', { skip: testStore() === 'sqlite' && 'SQLite lists no controller' }, async () => {
    for (const client of [tc.client, tc.mgmt]) {
      const res = await client.get('/controllers');
      assert.equal(res.status, 200, res.text);
      assertMatchesReference(client === tc.client ? 'client' : 'management', 'GET', '/controllers', 200, res.body);
      assert.equal(res.body.data.length, 1);
      const c = res.body.data[0];
      assert.equal(c.isOnline, true);
      assert.equal(c.fingerprint, sha1Of(tc.controller.pki.serverCertPem));
      assert.equal(c.certPem.trim(), pemBlocks(tc.controller.pki.serverCertPem)[0].trim());
      assert.match(c.lastJoinedAt, TIMESTAMP);
      assert.ok(c.apiAddresses['edge-client'][0].url.endsWith('/edge/client/v1'));
    }
    const user = await newSession();
    assert.equal((await tc.mgmt.as({ token: user.user.token }).get('/controllers')).status, 200, 'any authenticated caller may list controllers');
    assertError(await tc.http.get(`${BASE}/controllers`), 401, 'UNAUTHORIZED');
  });
});
