import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../../src/errors.ts';
import { parseCsr } from '../../../src/pki/csr.ts';
import { firstPemDer, encodePem } from '../../../src/pki/pem.ts';
import { generateCsrPem } from './pki-fixture.ts';

async function assertRejected(input: string | Uint8Array, reason: RegExp): Promise<void> {
  await assert.rejects(parseCsr(input), (error: unknown) => {
    assert.ok(error instanceof ApiError);
    assert.equal(error.code, 'COULD_NOT_PROCESS_CSR');
    assert.equal(error.status, 400);
    assert.ok(error.cause && 'message' in error.cause);
    assert.match(error.cause.message, reason);
    return true;
  });
}

describe('parseCsr', () => {
  it('ok/reads CN, subject, SANs and key of a P-256 CSR', async () => {
    const pem = await generateCsrPem({
      subject: 'CN=router-1, O=Example',
      sans: [
        { type: 'dns', value: 'router.example.com' },
        { type: 'ip', value: '192.0.2.7' },
        { type: 'ip', value: '2001:db8:0:0:0:0:0:9' },
        { type: 'email', value: 'ops@example.com' },
        { type: 'url', value: 'spiffe://example/router' },
      ],
    });
    const csr = await parseCsr(pem);
    assert.equal(csr.commonName, 'router-1');
    assert.match(csr.subject, /CN=router-1/);
    assert.deepEqual(csr.publicKey.type, 'ec');
    assert.equal(csr.publicKey.type === 'ec' && csr.publicKey.curve, 'P-256');
    assert.deepEqual(csr.sans, {
      dns: ['router.example.com'],
      ip: ['192.0.2.7', '2001:db8::9'],
      email: ['ops@example.com'],
      uri: ['spiffe://example/router'],
    });
    assert.deepEqual(csr.der, firstPemDer(pem, ['CERTIFICATE REQUEST']));
  });

  it('ok/accepts P-384 and RSA-2048 keys', async () => {
    const ec = await parseCsr(await generateCsrPem({ key: 'P-384' }));
    assert.equal(ec.publicKey.type === 'ec' && ec.publicKey.curve, 'P-384');
    const rsa = await parseCsr(await generateCsrPem({ key: 'RSA-2048' }));
    assert.equal(rsa.publicKey.type === 'rsa' && rsa.publicKey.bits, 2048);
  });

  it('ok/accepts DER bytes, the legacy NEW CERTIFICATE REQUEST label and CRLF line ends', async () => {
    const pem = await generateCsrPem();
    const der = firstPemDer(pem, ['CERTIFICATE REQUEST'])!;
    assert.equal((await parseCsr(der)).commonName, 'test-subject');
    const legacy = encodePem(der, 'NEW CERTIFICATE REQUEST').replace(/\n/g, '\r\n');
    assert.equal((await parseCsr(legacy)).commonName, 'test-subject');
  });

  it('ok/reports a missing CN as undefined', async () => {
    const csr = await parseCsr(await generateCsrPem({ subject: 'O=Example' }));
    assert.equal(csr.commonName, undefined);
  });

  it('error/garbage text', () => assertRejected('this is not a CSR', /no CERTIFICATE REQUEST PEM block/));

  it('error/an empty string', () => assertRejected('', /no CERTIFICATE REQUEST PEM block/));

  it('error/a PEM block whose body is not base64', () =>
    assertRejected('-----BEGIN CERTIFICATE REQUEST-----\n!!!!\n-----END CERTIFICATE REQUEST-----\n', /malformed/));

  it('error/a PEM block whose content is not a CSR', () =>
    assertRejected(encodePem(new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x01]), 'CERTIFICATE REQUEST'), /could not parse CSR/));

  it('error/a CSR whose signature does not verify', async () => {
    const der = firstPemDer(await generateCsrPem(), ['CERTIFICATE REQUEST'])!;
    der[der.length - 1] ^= 0x01; // last byte of the ECDSA signature's s value
    await assertRejected(encodePem(der, 'CERTIFICATE REQUEST'), /signature/);
  });

  it('error/a CSR whose subject was altered after signing', async () => {
    const pem = await generateCsrPem({ subject: 'CN=aaaa' });
    const der = firstPemDer(pem, ['CERTIFICATE REQUEST'])!;
    const at = Buffer.from(der).indexOf('aaaa');
    der[at] = 'b'.charCodeAt(0);
    await assertRejected(encodePem(der, 'CERTIFICATE REQUEST'), /signature is invalid/);
  });

  it('error/an RSA key below 2048 bits', async () => {
    await assertRejected(await generateCsrPem({ key: 'RSA-1024' }), /1024 bits is too small/);
  });
});
