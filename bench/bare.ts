/**
 * Child process: the "practical limit" server. A bare node:https server with the controller's own key and
 * certificate chain, answering canned responses (exact status, content-type and body bytes captured from the
 * controller) keyed by request URL. No routing, auth, database or JSON work: only TLS + HTTP/1.1 in Node.
 * Usage: node --import tsx bench/bare.ts <dataDir> <port|0> <responses.json>
 * responses.json: { "<url>": { "status": 200, "contentType": "...", "bodyBase64": "..." } }
 * A key is looked up as the full URL first, then as the path without its query string (for requests whose
 * query rotates, such as one-time tokens).
 */
import { createServer } from 'node:https';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';

const [dataDir, port = '0', responsesFile] = process.argv.slice(2);
if (!dataDir || !responsesFile) throw new Error('usage: bare.ts <dataDir> <port> <responses.json>');

const pki = join(dataDir, 'pki');
const key = readFileSync(join(pki, 'server.key.pem'));
const cert = readFileSync(join(pki, 'server.cert.pem'), 'utf8') + readFileSync(join(pki, 'intermediate-ca.cert.pem'), 'utf8');

type Canned = { status: number; contentType: string; bodyBase64: string };
const canned = new Map<string, { status: number; headers: Record<string, string | number>; body: Buffer }>();
for (const [url, r] of Object.entries(JSON.parse(readFileSync(responsesFile, 'utf8')) as Record<string, Canned>)) {
  const body = Buffer.from(r.bodyBase64, 'base64');
  canned.set(url, { status: r.status, headers: { 'content-type': r.contentType, 'content-length': body.length }, body });
}

// Same TLS settings as the controller's Fastify server (client certificate requested but not required).
const server = createServer({ key, cert, requestCert: true, rejectUnauthorized: false, minVersion: 'TLSv1.2' }, (req, res) => {
  const url = req.url ?? '';
  const r = canned.get(url) ?? canned.get(url.split('?')[0]!);
  if (!r) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(r.status, r.headers).end(r.body);
});
server.keepAliveTimeout = 72_000; // as Fastify's default
server.listen(Number(port), '127.0.0.1', () => {
  process.stdout.write(`READY ${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
const stop = () => server.close(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
