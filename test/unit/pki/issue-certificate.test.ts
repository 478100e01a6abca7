import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadOrCreatePki } from '../../../src/pki/certificate-authority.ts';
import { parseCsr } from '../../../src/pki/csr.ts';
import { sha1Fingerprint } from '../../../src/pki/fingerprint.ts';
import { randomSerialNumber } from '../../../src/pki/issue-certificate.ts';
import { parsePemBundle } from '../../../src/pki/pem.ts';
import { subjectAltNamesFromExtensions } from '../../../src/pki/subject-alt-names.ts';
import { x509 } from '../../../src/pki/x509-library.ts';
import { generateCsrPem, openssl, temporaryDirectory, writeFiles } from './pki-fixture.ts';

describe('Issuer', async () => {
  const pki = await loadOrCreatePki(await temporaryDirectory(), { advertise: 'ctrl.example.com' });
  const work = await temporaryDirectory();
  const trust = await writeFiles(work, { 'root.pem': pki.rootCertPem, 'intermediate.pem': pki.intermediateCertPem });

  async function opensslVerify(certPem: string, purpose: string): Promise<string> {
    const files = await writeFiles(work, { 'leaf.pem': certPem });
    return openssl([
      'verify', '-CAfile', trust['root.pem'], '-untrusted', trust['intermediate.pem'], '-purpose', purpose, files['leaf.pem'],
    ]);
  }

  describe('issueClientCertificate', () => {
    it('issues a clientAuth certificate that openssl verifies against root + intermediate, with the requested CN', async () => {
      const csr = await parseCsr(await generateCsrPem({ subject: 'CN=requested-by-client, O=Example' }));
      const issued = await pki.issuer.issueClientCertificate(csr, { commonName: 'identity-42' });
      assert.match(await opensslVerify(issued.certPem, 'sslclient'), /: OK/);

      const certificate = new x509.X509Certificate(issued.certPem);
      assert.deepEqual(certificate.subjectName.getField('CN'), ['identity-42']);
      assert.deepEqual(certificate.subjectName.getField('O'), ['Example']);
      const eku = certificate.getExtension(x509.ExtendedKeyUsageExtension);
      assert.deepEqual([...(eku?.usages ?? [])], [x509.ExtendedKeyUsage.clientAuth]);
      const text = openssl(['x509', '-noout', '-text'], issued.certPem);
      assert.match(text, /Subject: CN = identity-42, O = Example/);
      assert.match(text, /TLS Web Client Authentication/);
      assert.doesNotMatch(text, /TLS Web Server Authentication/);
      assert.match(text, /Key Usage: critical\s+Digital Signature, Key Encipherment, Data Encipherment/);
    });

    it('keeps the CSR subject when no CN is given and adds no SANs by default', async () => {
      const sans: x509.JsonGeneralNames = [{ type: 'dns', value: 'ignored.example' }];
      const csr = await parseCsr(await generateCsrPem({ subject: 'CN=router-7', sans }));
      const certificate = new x509.X509Certificate((await pki.issuer.issueClientCertificate(csr)).certPem);
      assert.equal(certificate.subject, 'CN=router-7');
      assert.equal(certificate.getExtension(x509.SubjectAlternativeNameExtension), null);
    });

    it('copies SANs only when the caller passes them', async () => {
      const csr = await parseCsr(await generateCsrPem({ sans: [{ type: 'url', value: 'spiffe://net/identity/x' }] }));
      const issued = await pki.issuer.issueClientCertificate(csr, { sans: csr.sans });
      const sans = subjectAltNamesFromExtensions(new x509.X509Certificate(issued.certPem).extensions);
      assert.deepEqual(sans.uri, ['spiffe://net/identity/x']);
    });

    it('describes the issued certificate: chain without the root, fingerprint, serial and validity', async () => {
      const now = new Date(Date.UTC(2026, 0, 15, 12, 0, 0));
      const csr = await parseCsr(await generateCsrPem({ key: 'RSA-2048' }));
      const issued = await pki.issuer.issueClientCertificate(csr, { now });
      assert.deepEqual(parsePemBundle(issued.chainPem), [issued.certPem, pki.intermediateCertPem]);
      assert.equal(issued.fingerprint, sha1Fingerprint(issued.certPem));
      assert.equal(issued.notBefore.toISOString(), '2026-01-15T11:59:00.000Z');
      assert.equal(issued.notAfter.toISOString(), '2027-01-15T12:00:00.000Z');
      assert.match(issued.serialNumber, /^[0-9a-f]+$/);
      assert.ok(BigInt(`0x${issued.serialNumber}`) > 0n);
    });

    it('never lets a certificate outlive the signing CA', async () => {
      const csr = await parseCsr(await generateCsrPem());
      const issued = await pki.issuer.issueClientCertificate(csr, { notAfter: new Date(Date.UTC(2100, 0, 1)) });
      assert.equal(issued.notAfter.getTime(), new x509.X509Certificate(pki.intermediateCertPem).notAfter.getTime());
    });
  });

  describe('issueServerCertificate', () => {
    it('issues a serverAuth certificate with the SANs of the CSR, verified by openssl', async () => {
      const csr = await parseCsr(
        await generateCsrPem({
          subject: 'CN=edge-router',
          sans: [
            { type: 'dns', value: 'er1.example.com' },
            { type: 'ip', value: '192.0.2.10' },
          ],
        }),
      );
      const issued = await pki.issuer.issueServerCertificate(csr);
      assert.match(await opensslVerify(issued.certPem, 'sslserver'), /: OK/);
      const text = openssl(['x509', '-noout', '-text'], issued.certPem);
      assert.match(text, /DNS:er1\.example\.com, IP Address:192\.0\.2\.10/);
      assert.match(text, /TLS Web Server Authentication/);
      assert.doesNotMatch(text, /TLS Web Client Authentication/);
    });
  });

  it('chainPem() is the intermediate alone', () => {
    assert.deepEqual(parsePemBundle(pki.issuer.chainPem()), [pki.intermediateCertPem]);
  });
});

describe('randomSerialNumber', () => {
  it('is positive, at most 159 bits, and different every time', () => {
    const serials = new Set(Array.from({ length: 200 }, randomSerialNumber));
    assert.equal(serials.size, 200);
    for (const serial of serials) {
      const value = BigInt(`0x${serial}`);
      assert.ok(value > 0n && value < 1n << 159n);
    }
  });
});
