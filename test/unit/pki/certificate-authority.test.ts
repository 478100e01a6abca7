import assert from 'node:assert/strict';
import { readFile, readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { advertisedHost, loadOrCreatePki, SERVER_CERT_RENEWAL_WINDOW_MS } from '../../../src/pki/certificate-authority.ts';
import { sha1Fingerprint } from '../../../src/pki/fingerprint.ts';
import { PKI_FILES } from '../../../src/pki/pki-files.ts';
import { subjectAltNamesFromExtensions } from '../../../src/pki/subject-alt-names.ts';
import { x509 } from '../../../src/pki/x509-library.ts';
import { openssl, temporaryDirectory, writeFiles } from './pki-fixture.ts';

const KEY_FILES = [PKI_FILES.rootKey, PKI_FILES.intermediateKey, PKI_FILES.serverKey];
const CERT_FILES = [PKI_FILES.rootCert, PKI_FILES.intermediateCert, PKI_FILES.serverCert];

async function snapshot(dir: string): Promise<Record<string, string>> {
  const names = (await readdir(dir)).sort();
  return Object.fromEntries(await Promise.all(names.map(async (name) => [name, await readFile(join(dir, name), 'utf8')])));
}

const modeOf = async (path: string) => (await stat(path)).mode & 0o777;

describe('loadOrCreatePki', () => {
  it('creates the directory (0700), three certificates (0644) and three keys (0600) on first start', async () => {
    const dir = join(await temporaryDirectory(), 'pki');
    await loadOrCreatePki(dir, { advertise: 'ctrl.example.com' });
    assert.equal(await modeOf(dir), 0o700);
    assert.deepEqual((await readdir(dir)).sort(), [...KEY_FILES, ...CERT_FILES].sort());
    for (const name of KEY_FILES) assert.equal(await modeOf(join(dir, name)), 0o600, name);
    for (const name of CERT_FILES) assert.equal(await modeOf(join(dir, name)), 0o644, name);
  });

  it('reuses every file byte for byte on the next start', async () => {
    const dir = await temporaryDirectory();
    const first = await loadOrCreatePki(dir, { advertise: 'ctrl.example.com' });
    const before = await snapshot(dir);
    const second = await loadOrCreatePki(dir, { advertise: 'ctrl.example.com' });
    assert.deepEqual(await snapshot(dir), before);
    assert.equal(second.serverCertFingerprint, first.serverCertFingerprint);
    assert.equal(second.serverKeyPem, first.serverKeyPem);
  });

  it('reissues only the server certificate, keeping its key, when the advertised host changes', async () => {
    const dir = await temporaryDirectory();
    const first = await loadOrCreatePki(dir, { advertise: 'old.example.com' });
    const before = await snapshot(dir);
    const second = await loadOrCreatePki(dir, { advertise: 'new.example.com' });
    const after = await snapshot(dir);
    for (const name of Object.keys(before)) {
      if (name === PKI_FILES.serverCert) assert.notEqual(after[name], before[name], name);
      else assert.equal(after[name], before[name], name);
    }
    assert.notEqual(second.serverCertFingerprint, first.serverCertFingerprint);
    const sans = subjectAltNamesFromExtensions(new x509.X509Certificate(second.serverCertPem).extensions);
    assert.ok(sans.dns.includes('new.example.com'));
    assert.ok(!sans.dns.includes('old.example.com'));
  });

  it('renews the server certificate when it expires within 30 days', async () => {
    const dir = await temporaryDirectory();
    const first = await loadOrCreatePki(dir, { advertise: 'ctrl.example.com' });
    const late = new Date(first.serverCertNotAfter.getTime() - SERVER_CERT_RENEWAL_WINDOW_MS + 60_000);
    const renewed = await loadOrCreatePki(dir, { advertise: 'ctrl.example.com', now: late });
    assert.notEqual(renewed.serverCertFingerprint, first.serverCertFingerprint);
    assert.ok(renewed.serverCertNotAfter.getTime() > first.serverCertNotAfter.getTime());
    assert.equal(renewed.rootCertPem, first.rootCertPem);
  });

  it('issues a new server key and certificate when the server key file is gone', async () => {
    const dir = await temporaryDirectory();
    const first = await loadOrCreatePki(dir, { advertise: 'ctrl.example.com' });
    await unlink(join(dir, PKI_FILES.serverKey));
    const second = await loadOrCreatePki(dir, { advertise: 'ctrl.example.com' });
    assert.notEqual(second.serverKeyPem, first.serverKeyPem);
    assert.equal(second.intermediateCertPem, first.intermediateCertPem);
  });

  it('refuses to start on a partial CA instead of silently creating a new one', async () => {
    const dir = await temporaryDirectory();
    await loadOrCreatePki(dir, { advertise: 'ctrl.example.com' });
    await unlink(join(dir, PKI_FILES.intermediateKey));
    await assert.rejects(loadOrCreatePki(dir, { advertise: 'ctrl.example.com' }), /incomplete PKI.*intermediate-ca\.key\.pem/);
  });

  it('starts without the root key, which an operator may keep offline', async () => {
    const dir = await temporaryDirectory();
    const first = await loadOrCreatePki(dir, { advertise: 'ctrl.example.com' });
    await unlink(join(dir, PKI_FILES.rootKey));
    const second = await loadOrCreatePki(dir, { advertise: 'ctrl.example.com' });
    assert.equal(second.serverCertFingerprint, first.serverCertFingerprint);
  });

  it('exposes the chain, the bundle and the fingerprint consistently', async () => {
    const pki = await loadOrCreatePki(await temporaryDirectory(), { advertise: 'ctrl.example.com' });
    assert.equal(pki.serverChainPem, pki.serverCertPem + pki.intermediateCertPem);
    assert.equal(pki.caBundlePem, pki.intermediateCertPem + pki.rootCertPem);
    assert.deepEqual(pki.caCertPems, [pki.intermediateCertPem, pki.rootCertPem]);
    assert.match(pki.serverCertFingerprint, /^[0-9a-f]{40}$/);
    assert.equal(pki.serverCertFingerprint, sha1Fingerprint(pki.serverCertPem));
    assert.equal(pki.jwtAlgorithm, 'ES256');
    assert.equal(pki.serverKey.asymmetricKeyType, 'ec');
    assert.equal(pki.issuer.chainPem(), pki.intermediateCertPem);
  });
});

describe('the generated certificates', async () => {
  const dir = await temporaryDirectory();
  const pki = await loadOrCreatePki(dir, { advertise: 'ctrl.example.com' });
  const path = (name: string) => join(dir, name);

  it('give the server certificate SANs localhost, 127.0.0.1, ::1 and the advertised host (read by @peculiar/x509)', () => {
    const server = new x509.X509Certificate(pki.serverCertPem);
    const sans = subjectAltNamesFromExtensions(server.extensions);
    assert.deepEqual(sans.dns.sort(), ['ctrl.example.com', 'localhost']);
    assert.deepEqual(sans.ip.sort(), ['127.0.0.1', '::1']);
    const eku = server.getExtension(x509.ExtendedKeyUsageExtension);
    assert.ok(eku?.usages.includes(x509.ExtendedKeyUsage.serverAuth));
  });

  it('give the server certificate the same SANs and usages as seen by openssl', () => {
    const text = openssl(['x509', '-noout', '-text', '-in', path(PKI_FILES.serverCert)]);
    for (const entry of ['DNS:localhost', 'DNS:ctrl.example.com', 'IP Address:127.0.0.1', 'IP Address:0:0:0:0:0:0:0:1']) {
      assert.ok(text.includes(entry), `${entry} missing from:\n${text}`);
    }
    assert.match(text, /Digital Signature, Key Encipherment/);
    assert.match(text, /TLS Web Server Authentication/);
    assert.match(text, /ASN1 OID: prime256v1/);
  });

  it('chain server -> intermediate -> root for openssl verify', () => {
    const out = openssl([
      'verify', '-CAfile', path(PKI_FILES.rootCert), '-untrusted', path(PKI_FILES.intermediateCert),
      '-purpose', 'sslserver', path(PKI_FILES.serverCert),
    ]);
    assert.match(out, /: OK/);
  });

  it('make the intermediate a CA with path length 0 and the root a self-signed CA', () => {
    const intermediate = openssl(['x509', '-noout', '-text', '-in', path(PKI_FILES.intermediateCert)]);
    assert.match(intermediate, /CA:TRUE, pathlen:0/);
    assert.match(intermediate, /Certificate Sign, CRL Sign/);
    const root = new x509.X509Certificate(pki.rootCertPem);
    assert.equal(root.subject, root.issuer);
    assert.ok(root.notAfter.getTime() - Date.now() > 9 * 365 * 86_400_000);
  });

  it('put an IP address given as the advertised host into an IP SAN', async () => {
    const ipPki = await loadOrCreatePki(await temporaryDirectory(), { advertise: '10.1.2.3:1280' });
    const files = await writeFiles(await temporaryDirectory(), { 'server.pem': ipPki.serverCertPem });
    assert.match(openssl(['x509', '-noout', '-ext', 'subjectAltName', '-in', files['server.pem']]), /IP Address:10\.1\.2\.3/);
  });
});

describe('advertisedHost', () => {
  const cases: Array<[string, string]> = [
    ['ctrl.example.com', 'ctrl.example.com'],
    ['ctrl.example.com:1280', 'ctrl.example.com'],
    ['https://ctrl.example.com:1280', 'ctrl.example.com'],
    ['10.0.0.1:443', '10.0.0.1'],
    ['::1', '::1'],
    ['[2001:db8::1]:1280', '2001:db8::1'],
  ];
  for (const [input, expected] of cases) {
    it(`ok/${input} -> ${expected}`, () => assert.equal(advertisedHost(input), expected));
  }
  it('error/empty host', () => assert.throws(() => advertisedHost('  '), /no host/));
});
