import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { connect, createServer, type TLSSocket } from 'node:tls';
import { loadOrCreatePki } from '../../../src/pki/certificate-authority.ts';
import { parseCsr } from '../../../src/pki/csr.ts';
import { sha1Fingerprint } from '../../../src/pki/fingerprint.ts';
import { generateKeyPair, exportPrivateKeyPem } from '../../../src/pki/keys.ts';
import { x509 } from '../../../src/pki/x509-library.ts';
import { openssl, temporaryDirectory } from './pki-fixture.ts';

describe('the PKI in a real TLS handshake', async () => {
  const pki = await loadOrCreatePki(await temporaryDirectory(), { advertise: 'ctrl.example.com' });
  // Like the controller listener: request a client certificate, never require or verify it in TLS.
  const listenerOptions = { key: pki.serverKeyPem, cert: pki.serverChainPem, requestCert: true, rejectUnauthorized: false };
  const server = createServer(listenerOptions, (socket) => {
    const peer = socket.getPeerCertificate();
    socket.end(peer && peer.raw ? sha1Fingerprint(new Uint8Array(peer.raw)) : 'anonymous');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  after(() => server.close());

  function handshake(options: { servername?: string; key?: string; cert?: string }): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket: TLSSocket = connect({ host: '127.0.0.1', port, ca: pki.caBundlePem, ...options }, () => {
        let body = '';
        socket.setEncoding('utf8');
        socket.on('data', (chunk: string) => (body += chunk));
        socket.on('end', () => resolve(body));
      });
      socket.on('error', reject);
    });
  }

  it('is trusted by a client that trusts only the CA bundle, for every host in the certificate', async () => {
    assert.equal(await handshake({}), 'anonymous'); // hostname check against IP 127.0.0.1
    assert.equal(await handshake({ servername: 'localhost' }), 'anonymous');
    assert.equal(await handshake({ servername: 'ctrl.example.com' }), 'anonymous');
  });

  it('fails the hostname check for a host the certificate does not cover', async () => {
    await assert.rejects(handshake({ servername: 'elsewhere.example.com' }), /altnames/);
  });

  it('carries an issued client certificate to the server, identified by its fingerprint', async () => {
    const keys = await generateKeyPair();
    const signingAlgorithm = { name: 'ECDSA', hash: 'SHA-256' };
    const csr = await x509.Pkcs10CertificateRequestGenerator.create({ name: 'CN=client', keys, signingAlgorithm });
    const issued = await pki.issuer.issueClientCertificate(await parseCsr(csr.toString('pem')), { commonName: 'identity-1' });
    const key = await exportPrivateKeyPem(keys.privateKey);
    const seen = await handshake({ servername: 'localhost', key, cert: issued.chainPem });
    assert.equal(seen, issued.fingerprint);
  });

  it('reports the same SHA-1 fingerprint as openssl', () => {
    const out = openssl(['x509', '-noout', '-fingerprint', '-sha1'], pki.serverCertPem);
    assert.equal(out.trim().split('=')[1].replace(/:/g, '').toLowerCase(), pki.serverCertFingerprint);
  });
});
