import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadOrCreatePki } from '../../../src/pki/certificate-authority.ts';
import { sha1Fingerprint } from '../../../src/pki/fingerprint.ts';
import { certsToPkcs7Base64, certsToPkcs7Der, parsePemBundle, pkcs7ToPems } from '../../../src/pki/pkcs7.ts';
import { ApiError } from '../../../src/errors.ts';
import { openssl, opensslBytes, temporaryDirectory } from './pki-fixture.ts';

/** Certificates openssl finds in a DER PKCS#7, as the SHA-1 fingerprints we compute. */
function opensslPrintCerts(der: Uint8Array): string[] {
  const text = openssl(['pkcs7', '-inform', 'DER', '-print_certs'], der);
  return parsePemBundle(text).map((pem) => sha1Fingerprint(pem));
}

describe('certsToPkcs7Base64', async () => {
  const pki = await loadOrCreatePki(await temporaryDirectory(), { advertise: 'ctrl.example.com' });

  it('is read by openssl pkcs7 -print_certs, listing exactly the given certificates in order', () => {
    const body = certsToPkcs7Base64(pki.caCertPems);
    const der = Buffer.from(body, 'base64');
    assert.deepEqual(opensslPrintCerts(der), [sha1Fingerprint(pki.intermediateCertPem), sha1Fingerprint(pki.rootCertPem)]);
  });

  it('decodes with `openssl base64 -d` as an SDK would, then parses as PKCS#7', () => {
    const der = opensslBytes(['base64', '-d'], `${certsToPkcs7Base64(pki.caCertPems)}\n`);
    assert.deepEqual(opensslPrintCerts(der), [sha1Fingerprint(pki.intermediateCertPem), sha1Fingerprint(pki.rootCertPem)]);
  });

  it('wraps base64 at 64 characters with LF and no trailing newline', () => {
    const body = certsToPkcs7Base64(pki.caCertPems);
    const lines = body.split('\n');
    assert.ok(lines.length > 1);
    assert.ok(lines.slice(0, -1).every((line) => line.length === 64));
    assert.ok(lines.at(-1)!.length > 0 && lines.at(-1)!.length <= 64);
    assert.ok(!body.endsWith('\n'));
    assert.ok(!body.includes('\r'));
  });

  it('has upstream\'s layout: version 1, empty digest set, bare data content, empty CRL and signer sets', () => {
    const der = certsToPkcs7Der([pki.rootCertPem]);
    const hex = Buffer.from(der).toString('hex');
    assert.match(hex, /^3082....06092a864886f70d010702a082....3082....0201013100300b06092a864886f70d010701a082/);
    assert.ok(hex.endsWith('a1003100'));
  });

  it('accepts bundles holding several certificates per entry, and round-trips through pkcs7ToPems', () => {
    const body = certsToPkcs7Base64([pki.serverChainPem, pki.rootCertPem]);
    assert.deepEqual(pkcs7ToPems(body), [pki.serverCertPem, pki.intermediateCertPem, pki.rootCertPem]);
  });
});

describe('parsePemBundle', () => {
  it('splits blocks, skips non-certificate blocks and normalises line ends', async () => {
    const pki = await loadOrCreatePki(await temporaryDirectory(), { advertise: 'ctrl.example.com' });
    const messy = `leading text\r\n${pki.rootCertPem.replace(/\n/g, '\r\n')}\n${pki.serverKeyPem}  ${pki.intermediateCertPem}`;
    assert.deepEqual(parsePemBundle(messy), [pki.rootCertPem, pki.intermediateCertPem]);
  });

  it('returns nothing for text without PEM blocks', () => {
    assert.deepEqual(parsePemBundle('nothing here'), []);
  });

  it('rejects a certificate block whose body is not base64', () => {
    assert.throws(
      () => parsePemBundle('-----BEGIN CERTIFICATE-----\nnot*base64\n-----END CERTIFICATE-----\n'),
      (error: unknown) => error instanceof ApiError && error.code === 'COULD_NOT_PARSE_PEM_BLOCK',
    );
  });
});
