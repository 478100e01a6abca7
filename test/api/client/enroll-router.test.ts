/**
 * Router enrollment over the client API (enrollment.md §2.7, §2.8, §3.3, §6.3): edge routers (`erott`) and
 * transit routers (`trott`) enroll with a server and a client CSR for one EC P-256 key, get chains that
 * `openssl verify` accepts under the CA bundle, and their records turn verified with the client
 * certificate's fingerprint; tokens are single-use, expire and belong to one method; bad and missing CSRs
 * and a wrong common name are refused without consuming the token; re-enroll clears the credentials and a
 * new JWT enrolls again; `POST /enroll/extend/router` renews both certificates for a router presenting its
 * current client certificate over mutual TLS and retires the old one at once.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { decodeJwt } from 'jose';
import { startTestController, uniqueName, type TestController } from '../../support/controller.ts';
import type { HttpResponse } from '../../support/client.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertError } from '../../support/assertions.ts';
import { parseCsr } from '../../../src/pki/csr.ts';
import { certificate, csrPem, newKey, opensslVerify, pemBlocks, sha1Of, type TestKey } from '../../support/router-certs.ts';

const tc: TestController = await startTestController();
const ENROLL = '/edge/client/v1/enroll';
const ROOT_PEM = tc.controller.pki.rootCertPem;
const INTERMEDIATE_PEM = tc.controller.pki.intermediateCertPem;

const ER_NULLS = { allowNullAt: ['/data/interfaces'] };
const ROUTER_NULLS = { allowNullAt: ['/data/interfaces', '/data/fingerprint'] };

/**
 * The reference's edgeRouterDetail lists the versionInfo members in its top-level `required` without declaring
 * them (upstream never sends them there); validate a copy with those keys filled in, as the edge router tests do.
 */
function assertEdgeRouterDetail(body: any): void {
  const data = { ...body.data, os: '', version: '', arch: '', buildDate: '', revision: '' };
  assertMatchesReference('management', 'GET', '/edge-routers/{id}', 200, { ...body, data }, ER_NULLS);
}

interface Router {
  id: string;
  token: string;
  jwt: string;
}

async function createEdgeRouter(): Promise<Router> {
  const res = await tc.mgmt.post('/edge-routers', { name: uniqueName('er') });
  assert.equal(res.status, 201, res.text);
  return routerEnrollment('/edge-routers', res.body.data.id as string);
}

async function createTransitRouter(): Promise<Router> {
  const res = await tc.mgmt.post('/transit-routers', { name: uniqueName('tr') });
  assert.equal(res.status, 201, res.text);
  return routerEnrollment('/transit-routers', res.body.data.id as string);
}

async function routerEnrollment(base: string, id: string): Promise<Router> {
  const res = await tc.mgmt.get(`${base}/${id}`);
  assert.equal(res.status, 200, res.text);
  assert.equal(typeof res.body.data.enrollmentToken, 'string', res.text);
  return { id, token: res.body.data.enrollmentToken, jwt: res.body.data.enrollmentJwt };
}

interface Csrs {
  key: TestKey;
  certCsr: string;
  serverCertCsr: string;
}

/** Server and client CSRs for one new key; the client CN defaults to the router id, as routers send it. */
async function routerCsrs(routerId: string, opts: { clientCn?: string } = {}): Promise<Csrs> {
  const key = await newKey();
  const serverCertCsr = await csrPem(key, { subject: `CN=${routerId}, O=Portcullis Tests`, dns: ['localhost', `${routerId}.routers.test`], ips: ['127.0.0.1'] });
  const certCsr = await csrPem(key, { subject: `CN=${opts.clientCn ?? routerId}, O=Portcullis Tests`, dns: [`${routerId}.routers.test`] });
  return { key, certCsr, serverCertCsr };
}

function enroll(method: string, token: string, body: Record<string, unknown>): Promise<HttpResponse> {
  return tc.http.post(`${ENROLL}?method=${method}&token=${token}`, body);
}

interface Enrolled {
  cert: string;
  serverCert: string;
  ca: string;
  key: TestKey;
}

async function enrollRouter(router: Router, method: 'erott' | 'trott'): Promise<Enrolled> {
  const csrs = await routerCsrs(router.id);
  const res = await enroll(method, router.token, { certCsr: csrs.certCsr, serverCertCsr: csrs.serverCertCsr });
  assert.equal(res.status, 200, res.text);
  assertMatchesReference('client', 'POST', '/enroll', 200, res.body);
  return { ...res.body.data, key: csrs.key };
}

/** The CA bundle as clients get it: the well-known PKCS#7, here as the concatenated PEMs it holds. */
const CA_BUNDLE = INTERMEDIATE_PEM + ROOT_PEM;

describe('POST /enroll?method=erott (edge router)', () => {
  it('issues a client and a server certificate that chain to the root, and verifies the router', async () => {
    const router = await createEdgeRouter();
    const claims = decodeJwt(router.jwt);
    assert.equal(claims.em, 'erott');
    assert.equal(claims.sub, router.id);
    assert.equal(claims.jti, router.token);

    const csrs = await routerCsrs(router.id);
    const res = await enroll('erott', router.token, { certCsr: csrs.certCsr, serverCertCsr: csrs.serverCertCsr });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers['content-type'], 'application/json');
    assertMatchesReference('client', 'POST', '/enroll', 200, res.body);
    assert.deepEqual(res.body.meta, {});
    const { cert, serverCert, ca } = res.body.data as { cert: string; serverCert: string; ca: string };
    assert.deepEqual(Object.keys(res.body.data).sort(), ['ca', 'cert', 'serverCert']);

    // Chains: leaf then the signing intermediate, never the root.
    const clientChain = pemBlocks(cert);
    const serverChain = pemBlocks(serverCert);
    assert.equal(clientChain.length, 2);
    assert.equal(serverChain.length, 2);
    assert.equal(clientChain[1], INTERMEDIATE_PEM);
    assert.equal(serverChain[1], INTERMEDIATE_PEM);
    // The CA field: the well-known bundle, each certificate preceded by a newline.
    assert.equal(ca, `\n${INTERMEDIATE_PEM}\n${ROOT_PEM}`);

    // openssl, trusting only the root, accepts both chains for their purposes; the ca field alone suffices too.
    assert.match(opensslVerify(cert, ROOT_PEM, 'sslclient'), /OK/);
    assert.match(opensslVerify(serverCert, ROOT_PEM, 'sslserver'), /OK/);
    assert.match(opensslVerify(cert, ca, 'sslclient'), /OK/);
    assert.throws(() => opensslVerify(serverCert, ROOT_PEM, 'sslclient'), 'the server certificate is not a client certificate');
    assert.throws(() => opensslVerify(cert, ROOT_PEM, 'sslserver'), 'the client certificate is not a server certificate');

    // Subjects, keys and SANs come from the CSRs.
    const client = certificate(clientChain[0]!);
    const server = certificate(serverChain[0]!);
    assert.match(client.subject, new RegExp(`CN=${router.id}`));
    assert.match(server.subject, new RegExp(`CN=${router.id}`));
    assert.equal(server.subjectAltName, `DNS:localhost, DNS:${router.id}.routers.test, IP Address:127.0.0.1`);
    assert.equal(client.subjectAltName, `DNS:${router.id}.routers.test`);
    const spki = (pem: string) => certificate(pem).publicKey.export({ format: 'der', type: 'spki' }).toString('hex');
    assert.equal(spki(clientChain[0]!), spki(serverChain[0]!), 'both certificates carry the CSR key');
    assert.ok(client.checkIssued(certificate(INTERMEDIATE_PEM)));
    const days = (Date.parse(client.validTo) - Date.parse(client.validFrom)) / 86_400_000;
    assert.ok(days >= 365 && days <= 367, `about a year of validity, got ${days}`);

    // The edge router record: verified, fingerprint and certPem set, enrollment fields gone.
    const detail = await tc.mgmt.get(`/edge-routers/${router.id}`);
    assert.equal(detail.status, 200);
    assertEdgeRouterDetail(detail.body);
    const er = detail.body.data;
    assert.equal(er.isVerified, true);
    assert.equal(er.fingerprint, sha1Of(clientChain[0]!));
    assert.match(er.fingerprint, /^[0-9a-f]{40}$/);
    assert.equal(er.certPem, cert);
    for (const field of ['enrollmentJwt', 'enrollmentToken', 'enrollmentCreatedAt', 'enrollmentExpiresAt']) {
      assert.equal(field in er, false, `${field} is omitted once verified`);
    }
    // Through /routers it is a verified base router with the same fingerprint.
    const asRouter = await tc.mgmt.get(`/routers/${router.id}`);
    assertMatchesReference('management', 'GET', '/routers/{id}', 200, asRouter.body, ROUTER_NULLS);
    assert.equal(asRouter.body.data.isVerified, true);
    assert.equal(asRouter.body.data.fingerprint, er.fingerprint);
    assert.equal('enrollmentToken' in asRouter.body.data, false);
    // The filter finds it by fingerprint.
    const found = await tc.mgmt.get(`/edge-routers?filter=${encodeURIComponent(`fingerprint = "${er.fingerprint}"`)}`);
    assert.deepEqual(found.body.data.map((r: { id: string }) => r.id), [router.id]);
  });

  it('refuses the token once it has been used', async () => {
    const router = await createEdgeRouter();
    await enrollRouter(router, 'erott');
    const csrs = await routerCsrs(router.id);
    const again = await enroll('erott', router.token, { certCsr: csrs.certCsr, serverCertCsr: csrs.serverCertCsr });
    assertError(again, 400, 'INVALID_ENROLLMENT_TOKEN');
  });

  it('refuses an unknown token', async () => {
    const router = await createEdgeRouter();
    const csrs = await routerCsrs(router.id);
    assertError(await enroll('erott', randomUUID(), { certCsr: csrs.certCsr, serverCertCsr: csrs.serverCertCsr }), 400, 'INVALID_ENROLLMENT_TOKEN');
  });

  it('refuses an expired token with ENROLLMENT_EXPIRED and leaves the router unverified', async () => {
    const router = await createEdgeRouter();
    // The store's clock is the only way to age a 3-hour enrollment within a test.
    await tc.controller.store.write((tx) => tx.run('UPDATE enrollments SET expires_at = ? WHERE router_id = ?', [new Date(Date.now() - 60_000).toISOString(), router.id]));
    const csrs = await routerCsrs(router.id);
    assertError(await enroll('erott', router.token, { certCsr: csrs.certCsr, serverCertCsr: csrs.serverCertCsr }), 400, 'ENROLLMENT_EXPIRED');
    const detail = await tc.mgmt.get(`/edge-routers/${router.id}`);
    assert.equal(detail.body.data.isVerified, false);
    assert.equal('fingerprint' in detail.body.data, false);
  });

  it("refuses another method's token and a router token under the wrong router method", async () => {
    const edge = await createEdgeRouter();
    const transit = await createTransitRouter();
    const edgeCsrs = await routerCsrs(edge.id);
    const transitCsrs = await routerCsrs(transit.id);
    assertError(await enroll('trott', edge.token, { certCsr: edgeCsrs.certCsr, serverCertCsr: edgeCsrs.serverCertCsr }), 400, 'INVALID_ENROLL_METHOD');
    assertError(await enroll('erott', transit.token, { certCsr: transitCsrs.certCsr, serverCertCsr: transitCsrs.serverCertCsr }), 400, 'INVALID_ENROLL_METHOD');
    assertError(await enroll('ott', edge.token, { certCsr: edgeCsrs.certCsr, serverCertCsr: edgeCsrs.serverCertCsr }), 400, 'INVALID_ENROLL_METHOD');
    // Nothing was consumed: both still enroll with their own method.
    await enrollRouter(edge, 'erott');
    await enrollRouter(transit, 'trott');
  });

  it('answers MISSING_OR_INVALID_CSR for a missing or empty CSR and keeps the token usable', async () => {
    const router = await createEdgeRouter();
    const csrs = await routerCsrs(router.id);
    const bodies = [
      { serverCertCsr: csrs.serverCertCsr },
      { certCsr: csrs.certCsr },
      { certCsr: '', serverCertCsr: csrs.serverCertCsr },
      { certCsr: csrs.certCsr, serverCertCsr: '' },
      {},
    ];
    for (const body of bodies) assertError(await enroll('erott', router.token, body), 400, 'MISSING_OR_INVALID_CSR');
    await enrollRouter(router, 'erott');
  });

  it('answers COULD_NOT_PROCESS_CSR for malformed CSRs and keeps the token usable', async () => {
    const router = await createEdgeRouter();
    const csrs = await routerCsrs(router.id);
    const garbage = '-----BEGIN CERTIFICATE REQUEST-----\nbm90IGEgY3Ny\n-----END CERTIFICATE REQUEST-----\n';
    // Flip one byte inside the signature: still DER, but the self-signature no longer verifies.
    const der = Buffer.from(csrs.certCsr.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64');
    der[der.length - 5] = (der[der.length - 5]! ^ 0x01) & 0xff;
    const tampered = `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`;
    for (const body of [
      { certCsr: garbage, serverCertCsr: csrs.serverCertCsr },
      { certCsr: csrs.certCsr, serverCertCsr: garbage },
      { certCsr: 'not pem at all', serverCertCsr: csrs.serverCertCsr },
      { certCsr: tampered, serverCertCsr: csrs.serverCertCsr },
    ]) {
      assertError(await enroll('erott', router.token, body), 400, 'COULD_NOT_PROCESS_CSR');
    }
    await enrollRouter(router, 'erott');
  });

  it('refuses a client CSR whose common name is not the router id', async () => {
    const router = await createEdgeRouter();
    const csrs = await routerCsrs(router.id, { clientCn: 'someone-else' });
    const res = await enroll('erott', router.token, { certCsr: csrs.certCsr, serverCertCsr: csrs.serverCertCsr });
    assertError(res, 400, 'COULD_NOT_PROCESS_CSR');
    assert.equal(res.body.error.cause.code, 'EDGE_ROUTER_ENROLL_COMMON_NAME_INVALID');
    const detail = await tc.mgmt.get(`/edge-routers/${router.id}`);
    assert.equal(detail.body.data.isVerified, false);
    assert.equal(detail.body.data.enrollmentToken, router.token);
  });

  it('accepts the spec form POST /enroll/erott {token, clientCsr, serverCsr}', async () => {
    const router = await createEdgeRouter();
    const csrs = await routerCsrs(router.id);
    const res = await tc.http.post(`${ENROLL}/erott`, { token: router.token, clientCsr: csrs.certCsr, serverCsr: csrs.serverCertCsr });
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('client', 'POST', '/enroll/erott', 200, res.body);
    assert.match(opensslVerify(res.body.data.cert, ROOT_PEM, 'sslclient'), /OK/);
    assert.match(opensslVerify(res.body.data.serverCert, ROOT_PEM, 'sslserver'), /OK/);
    assert.equal((await tc.mgmt.get(`/edge-routers/${router.id}`)).body.data.isVerified, true);
  });
});

describe('POST /enroll?method=trott (transit router)', () => {
  it('issues both certificates, forces the client CN to the router id, and verifies the router', async () => {
    const router = await createTransitRouter();
    assert.equal(decodeJwt(router.jwt).em, 'trott');
    const csrs = await routerCsrs(router.id, { clientCn: 'chosen-by-the-router' });
    const res = await enroll('trott', router.token, { certCsr: csrs.certCsr, serverCertCsr: csrs.serverCertCsr });
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('client', 'POST', '/enroll', 200, res.body);
    const { cert, serverCert, ca } = res.body.data;
    assert.ok(cert && serverCert && ca);
    assert.match(certificate(pemBlocks(cert)[0]!).subject, new RegExp(`CN=${router.id}`));
    assert.doesNotMatch(certificate(pemBlocks(cert)[0]!).subject, /chosen-by-the-router/);
    assert.match(opensslVerify(cert, ROOT_PEM, 'sslclient'), /OK/);
    assert.match(opensslVerify(serverCert, ROOT_PEM, 'sslserver'), /OK/);

    for (const base of ['/routers', '/transit-routers']) {
      const detail = await tc.mgmt.get(`${base}/${router.id}`);
      assert.equal(detail.status, 200);
      assertMatchesReference('management', 'GET', `${base}/{id}`, 200, detail.body, ROUTER_NULLS);
      assert.equal(detail.body.data.isVerified, true);
      assert.equal(detail.body.data.fingerprint, sha1Of(cert));
      assert.equal('enrollmentJwt' in detail.body.data, false);
      assert.equal('enrollmentToken' in detail.body.data, false);
    }
    assertError(await enroll('trott', router.token, { certCsr: csrs.certCsr, serverCertCsr: csrs.serverCertCsr }), 400, 'INVALID_ENROLLMENT_TOKEN');
  });

  it('answers MISSING_OR_INVALID_CSR and COULD_NOT_PROCESS_CSR for missing and malformed CSRs', async () => {
    const router = await createTransitRouter();
    const csrs = await routerCsrs(router.id);
    assertError(await enroll('trott', router.token, { certCsr: csrs.certCsr }), 400, 'MISSING_OR_INVALID_CSR');
    assertError(await enroll('trott', router.token, { certCsr: csrs.certCsr, serverCertCsr: 'garbage' }), 400, 'COULD_NOT_PROCESS_CSR');
    await enrollRouter(router, 'trott');
  });
});

describe('POST /edge-routers/{id}/re-enroll after enrollment', () => {
  it('clears the credentials, invalidates the old token, and lets the router enroll again with the new JWT', async () => {
    const router = await createEdgeRouter();
    const first = await enrollRouter(router, 'erott');
    const res = await tc.mgmt.post(`/edge-routers/${router.id}/re-enroll`, {});
    assert.equal(res.status, 200, res.text);

    const detail = await tc.mgmt.get(`/edge-routers/${router.id}`);
    assertEdgeRouterDetail(detail.body);
    const er = detail.body.data;
    assert.equal(er.isVerified, false);
    assert.equal('fingerprint' in er, false);
    assert.equal(er.certPem, null);
    assert.equal(typeof er.enrollmentJwt, 'string');
    assert.notEqual(er.enrollmentToken, router.token);

    // The old certificate no longer identifies the router.
    const extend = await routerCsrs(router.id);
    const refused = await tc.http.post(`${ENROLL}/extend/router`, { certCsr: extend.certCsr, serverCertCsr: extend.serverCertCsr }, { cert: first.cert, key: first.key.keyPem });
    assertError(refused, 401, 'UNAUTHORIZED');

    const csrs = await routerCsrs(router.id);
    assertError(await enroll('erott', router.token, { certCsr: csrs.certCsr, serverCertCsr: csrs.serverCertCsr }), 400, 'INVALID_ENROLLMENT_TOKEN');
    const again = await enrollRouter({ ...router, token: er.enrollmentToken, jwt: er.enrollmentJwt }, 'erott');
    const after = (await tc.mgmt.get(`/edge-routers/${router.id}`)).body.data;
    assert.equal(after.isVerified, true);
    assert.equal(after.fingerprint, sha1Of(again.cert));
    assert.notEqual(after.fingerprint, sha1Of(first.cert));
  });
});

describe('POST /enroll/extend/router', () => {
  const EXTEND = `${ENROLL}/extend/router`;

  it('renews both certificates for the router presenting its client certificate, and retires the old one', async () => {
    const router = await createEdgeRouter();
    const enrolled = await enrollRouter(router, 'erott');
    // A key roll: the new CSRs use a new key.
    const csrs = await routerCsrs(router.id);
    const res = await tc.http.post(EXTEND, { certCsr: csrs.certCsr, serverCertCsr: csrs.serverCertCsr }, { cert: enrolled.cert, key: enrolled.key.keyPem });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers['content-type'], 'application/json');
    assertMatchesReference('client', 'POST', '/enroll/extend/router', 200, res.body);
    assert.deepEqual(Object.keys(res.body.data).sort(), ['cert', 'serverCert'], 'no ca on extension');
    const { cert, serverCert } = res.body.data;
    assert.match(opensslVerify(cert, ROOT_PEM, 'sslclient'), /OK/);
    assert.match(opensslVerify(serverCert, ROOT_PEM, 'sslserver'), /OK/);
    assert.notEqual(sha1Of(cert), sha1Of(enrolled.cert));

    const er = (await tc.mgmt.get(`/edge-routers/${router.id}`)).body.data;
    assert.equal(er.isVerified, true);
    assert.equal(er.fingerprint, sha1Of(cert));
    assert.equal(er.certPem, cert);

    // The old certificate stops working at once; the new one works.
    const next = await routerCsrs(router.id);
    const old = await tc.http.post(EXTEND, { certCsr: next.certCsr, serverCertCsr: next.serverCertCsr }, { cert: enrolled.cert, key: enrolled.key.keyPem });
    assertError(old, 401, 'UNAUTHORIZED');
    const renewed = await tc.http.post(EXTEND, { certCsr: next.certCsr, serverCertCsr: next.serverCertCsr }, { cert, key: csrs.key.keyPem });
    assert.equal(renewed.status, 200, renewed.text);
  });

  it('renews a transit router with the leaf alone (no intermediate sent)', async () => {
    const router = await createTransitRouter();
    const enrolled = await enrollRouter(router, 'trott');
    const csrs = await routerCsrs(router.id);
    const leafOnly = pemBlocks(enrolled.cert)[0]!;
    const res = await tc.http.post(EXTEND, { certCsr: csrs.certCsr, serverCertCsr: csrs.serverCertCsr }, { cert: leafOnly, key: enrolled.key.keyPem });
    assert.equal(res.status, 200, res.text);
    assert.equal((await tc.mgmt.get(`/routers/${router.id}`)).body.data.fingerprint, sha1Of(res.body.data.cert));
  });

  it('answers 401 without a client certificate or with one that is no router', async () => {
    const router = await createEdgeRouter();
    const csrs = await routerCsrs(router.id);
    const body = { certCsr: csrs.certCsr, serverCertCsr: csrs.serverCertCsr };
    assertError(await tc.http.post(EXTEND, body), 401, 'UNAUTHORIZED');
    // A certificate from our own CA that belongs to no router.
    const key = await newKey();
    const stranger = await tc.controller.pki.issuer.issueClientCertificate(await parseCsr(await csrPem(key, { subject: `CN=${router.id}` })));
    assertError(await tc.http.post(EXTEND, body, { cert: stranger.chainPem, key: key.keyPem }), 401, 'UNAUTHORIZED');
  });

  it('validates the body and the CSRs of an authenticated router', async () => {
    const router = await createEdgeRouter();
    const enrolled = await enrollRouter(router, 'erott');
    const tls = { cert: enrolled.cert, key: enrolled.key.keyPem };
    const csrs = await routerCsrs(router.id);
    const missingClient = await tc.http.post(EXTEND, { serverCertCsr: csrs.serverCertCsr }, tls);
    assertError(missingClient, 400, 'COULD_NOT_VALIDATE');
    const missingServer = await tc.http.post(EXTEND, { certCsr: csrs.certCsr }, tls);
    assertError(missingServer, 400, 'COULD_NOT_VALIDATE');
    assertError(await tc.http.post(EXTEND, { certCsr: 'garbage', serverCertCsr: csrs.serverCertCsr }, tls), 400, 'COULD_NOT_PROCESS_CSR');
    const wrongCn = await routerCsrs(router.id, { clientCn: 'not-the-router' });
    const cn = await tc.http.post(EXTEND, { certCsr: wrongCn.certCsr, serverCertCsr: wrongCn.serverCertCsr }, tls);
    assertError(cn, 400, 'COULD_NOT_PROCESS_CSR');
    // None of that changed the router's certificate.
    assert.equal((await tc.mgmt.get(`/edge-routers/${router.id}`)).body.data.fingerprint, sha1Of(enrolled.cert));
  });
});

describe('concurrent use of one token', () => {
  it('lets exactly one of two simultaneous enrollments succeed', async () => {
    const router = await createEdgeRouter();
    const [a, b] = await Promise.all([routerCsrs(router.id), routerCsrs(router.id)]);
    const results = await Promise.all([
      enroll('erott', router.token, { certCsr: a.certCsr, serverCertCsr: a.serverCertCsr }),
      enroll('erott', router.token, { certCsr: b.certCsr, serverCertCsr: b.serverCertCsr }),
    ]);
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 400]);
    const winner = results.find((r) => r.status === 200)!;
    assertError(results.find((r) => r.status === 400)!, 400, 'INVALID_ENROLLMENT_TOKEN');
    assert.equal((await tc.mgmt.get(`/edge-routers/${router.id}`)).body.data.fingerprint, sha1Of(winner.body.data.cert));
  });
});
