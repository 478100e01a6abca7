/**
 * `GET /.well-known/est/cacerts` against enrollment.md §5: at the root and under both API bases, exactly
 * `application/pkcs7-mime` with base64 transfer encoding, 64-character lines and no trailing newline; the
 * degenerate PKCS#7 holds exactly the CA certificates clients need (the signing intermediate and the
 * self-signed root, no leaf, no duplicates), which is all `openssl verify` needs to accept the controller's
 * TLS chain and the chains issued to an enrolling router; the router's `ca` field carries the same set; the
 * bundle survives a restart unchanged.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestController, uniqueName, type TestController } from '../support/controller.ts';
import { certificate, csrPem, newKey, openssl, opensslVerify, pemBlocks } from '../support/router-certs.ts';

const tc: TestController = await startTestController();
const PATHS = ['/.well-known/est/cacerts', '/edge/client/v1/.well-known/est/cacerts', '/edge/management/v1/.well-known/est/cacerts'];

/** The certificates of a cacerts body, as openssl prints them (PEM, bundle order). */
function bundleCertificates(body: string): string[] {
  const der = Buffer.from(body, 'base64');
  return pemBlocks(openssl(['pkcs7', '-inform', 'DER', '-print_certs'], der)).map((pem) => (pem.endsWith('\n') ? pem : `${pem}\n`));
}

async function fetchBundle(path = PATHS[0]!, accept = 'application/pkcs7-mime'): Promise<string> {
  const res = await tc.http.get(path, { headers: { accept } });
  assert.equal(res.status, 200, `${path}: ${res.text}`);
  return res.text;
}

const pkiFile = (name: string) => readFileSync(join(tc.dataDir, 'pki', name), 'utf8');

describe('GET /.well-known/est/cacerts', () => {
  it('answers application/pkcs7-mime in base64 lines of 64 without a trailing newline, the same on every path', async () => {
    const bodies: string[] = [];
    for (const path of PATHS) {
      for (const accept of ['application/pkcs7-mime', '*/*']) {
        const res = await tc.http.get(path, { headers: { accept } });
        assert.equal(res.status, 200, `${path}: ${res.text}`);
        assert.equal(res.headers['content-type'], 'application/pkcs7-mime', path);
        assert.equal(res.headers['content-transfer-encoding'], 'base64', path);
        assert.ok(!res.text.endsWith('\n'), 'no trailing newline');
        const lines = res.text.split('\n');
        for (const line of lines.slice(0, -1)) assert.equal(line.length, 64);
        assert.ok(lines.at(-1)!.length > 0 && lines.at(-1)!.length <= 64);
        assert.match(res.text.replace(/\n/g, ''), /^[A-Za-z0-9+/]+={0,2}$/);
        bodies.push(res.text);
      }
    }
    for (const body of bodies) assert.equal(body, bodies[0]);
    // A certs-only SignedData: openssl sees signedData with no signers.
    const parsed = openssl(['pkcs7', '-inform', 'DER', '-print'], Buffer.from(bodies[0]!, 'base64'));
    assert.match(parsed, /type: pkcs7-signedData/);
    assert.match(parsed, /signer_info:\s*<EMPTY>/);
  });

  it('holds exactly the signing intermediate and the self-signed root, both CA certificates', async () => {
    const certs = bundleCertificates(await fetchBundle());
    assert.equal(certs.length, 2);
    assert.deepEqual(new Set(certs), new Set([pkiFile('intermediate-ca.cert.pem'), pkiFile('root-ca.cert.pem')]));
    assert.deepEqual(new Set(certs), new Set(tc.controller.pki.caCertPems));
    const parsed = certs.map(certificate);
    for (const cert of parsed) assert.equal(cert.ca, true, `${cert.subject} is a CA`);
    const roots = parsed.filter((cert) => cert.subject === cert.issuer);
    assert.equal(roots.length, 1, 'one self-signed root');
    const intermediate = parsed.find((cert) => cert.subject !== cert.issuer)!;
    assert.ok(intermediate.checkIssued(roots[0]!));
    assert.ok(intermediate.verify(roots[0]!.publicKey));
    // The controller's own TLS leaf is not in it.
    const serverLeaf = pemBlocks(tc.controller.pki.serverChainPem)[0]!;
    assert.ok(!certs.includes(serverLeaf));
  });

  it("is enough for openssl to verify the controller's TLS chain and an enrolled router's chains", async () => {
    const certs = bundleCertificates(await fetchBundle());
    const bundle = certs.join('');
    const root = certs.find((pem) => certificate(pem).subject === certificate(pem).issuer)!;
    assert.match(opensslVerify(tc.controller.pki.serverChainPem, bundle, 'sslserver'), /OK/);
    assert.match(opensslVerify(tc.controller.pki.serverChainPem, root, 'sslserver'), /OK/);

    const created = await tc.mgmt.post('/edge-routers', { name: uniqueName('er') });
    assert.equal(created.status, 201, created.text);
    const id = created.body.data.id as string;
    const token = (await tc.mgmt.get(`/edge-routers/${id}`)).body.data.enrollmentToken as string;
    const key = await newKey();
    const res = await tc.http.post(`/edge/client/v1/enroll?method=erott&token=${token}`, {
      certCsr: await csrPem(key, { subject: `CN=${id}` }),
      serverCertCsr: await csrPem(key, { subject: `CN=${id}`, dns: ['router.example.test'] }),
    });
    assert.equal(res.status, 200, res.text);
    const { cert, serverCert, ca } = res.body.data as Record<string, string>;
    // Trusting only the bundle's root (the chain supplies the intermediate), and trusting the whole bundle.
    for (const trusted of [root, bundle]) {
      assert.match(opensslVerify(cert, trusted, 'sslclient'), /OK/);
      assert.match(opensslVerify(serverCert, trusted, 'sslserver'), /OK/);
    }
    // The leaf alone verifies against the bundle too: the intermediate is in it.
    assert.match(opensslVerify(pemBlocks(cert)[0]!, bundle, 'sslclient'), /OK/);
    // The router's ca field is the same set of certificates.
    assert.deepEqual(new Set(pemBlocks(ca)), new Set(certs));
  });

  it('serves the same bundle after a restart', async () => {
    const before = await fetchBundle();
    await tc.restart();
    assert.equal(await fetchBundle(PATHS[1]), before);
  });
});
