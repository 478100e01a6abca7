/**
 * Hostile HTTP: every abuse gets a clear error or a closed connection within bounded time, and the server keeps
 * answering others. Slow headers (slowloris) are cut off after `--header-timeout`; headers beyond 16 KiB get 431;
 * bodies beyond 1 MiB get 413; JSON nested deeper than 64 levels and deeply nested filters are refused with
 * upstream's codes; absurd paging values are refused; connections beyond `--max-connections` are closed.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type TLSSocket } from 'node:tls';
import { once } from 'node:events';
import { startTestController } from '../support/controller.ts';
import { assertError } from '../support/assertions.ts';

const tc = await startTestController({ extraArgs: ['--header-timeout', '1', '--max-connections', '40'] });

async function tlsSocket(): Promise<TLSSocket> {
  const socket = connect({ host: '127.0.0.1', port: tc.port, ca: tc.ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] });
  socket.on('error', () => undefined);
  await once(socket, 'secureConnect');
  return socket;
}

function closed(socket: TLSSocket): Promise<number> {
  const started = Date.now();
  return new Promise((resolve) => {
    if (socket.destroyed) resolve(0);
    socket.once('close', () => resolve(Date.now() - started));
  });
}

describe('hostile HTTP', () => {
  it('cuts off a client that sends its headers too slowly, while others are served', async () => {
    const slow = await tlsSocket();
    slow.write('GET /version HTTP/1.1\r\nHost: localhost\r\n');
    const drip = setInterval(() => slow.write('X-Slow: a\r\n'), 200);
    const gone = closed(slow);
    assert.equal((await tc.http.get('/version')).status, 200, 'others are served meanwhile');
    const after = await Promise.race([gone, new Promise<number>((r) => setTimeout(() => r(-1), 8000))]);
    clearInterval(drip);
    assert.ok(after >= 0, 'the slow client is disconnected within the header timeout and the check interval');
    slow.destroy();
  });

  it('answers oversized headers with 431 and oversized bodies with 413', async () => {
    const big = await tc.http.get('/version', { headers: { 'x-big': 'a'.repeat(20_000) } });
    assert.equal(big.status, 431);
    const body = await tc.mgmt.post('/identities', undefined, { rawBody: `{"name":"${'a'.repeat(2_000_000)}"}`, contentType: 'application/json' });
    assertError(body, 413, 'REQUEST_ENTITY_TOO_LARGE');
  });

  it('refuses deep JSON and deep or endless filters with upstream codes', async () => {
    for (const raw of ['['.repeat(200_000) + ']'.repeat(200_000), '{"name":' + '{"a":'.repeat(50_000) + '1' + '}'.repeat(50_000) + '}']) {
      const res = await tc.mgmt.post('/identities', undefined, { rawBody: raw, contentType: 'application/json' });
      assertError(res, 400, 'COULD_NOT_PARSE_BODY');
    }
    const nested = '('.repeat(2000) + 'name = "x"' + ')'.repeat(2000);
    assertError(await tc.mgmt.get(`/identities?filter=${encodeURIComponent(nested)}`), 400, 'INVALID_FILTER');
    const endless = Array.from({ length: 300 }, (_, i) => `name = "n${i}"`).join(' or ');
    const res = await tc.mgmt.get(`/identities?filter=${encodeURIComponent(endless)}`);
    assert.ok(res.status === 200 || res.status === 400, `a long flat filter is answered (${res.status})`);
    assert.equal((await tc.http.get('/version')).status, 200);
  });

  it('accepts JSON nested 64 levels deep and refuses 65 with COULD_NOT_PARSE_BODY', async () => {
    // The identity object is level 1 and its appData level 2; the value in appData adds the remaining levels.
    const identityNested = (levels: number) => {
      const value = '['.repeat(levels - 2) + '"deep"' + ']'.repeat(levels - 2);
      return `{"name":"nested-${levels}-${process.pid}","type":"User","isAdmin":false,"appData":{"deep":${value}}}`;
    };
    const accepted = await tc.mgmt.post('/identities', undefined, { rawBody: identityNested(64), contentType: 'application/json' });
    assert.equal(accepted.status, 201, accepted.text);
    const stored = await tc.mgmt.get(`/identities/${accepted.body.data.id}`);
    let depth = 0;
    for (let v: unknown = stored.body.data.appData.deep; Array.isArray(v); v = v[0]) depth++;
    assert.equal(depth, 62, 'the value is stored whole');

    const refused = await tc.mgmt.post('/identities', undefined, { rawBody: identityNested(65), contentType: 'application/json' });
    assertError(refused, 400, 'COULD_NOT_PARSE_BODY');
    assert.match(refused.body.error.cause.message, /nesting deeper than 64/);
    const named = await tc.mgmt.get(`/identities?filter=${encodeURIComponent(`name = "nested-65-${process.pid}"`)}`);
    assert.equal(named.body.meta.pagination.totalCount, 0, 'the refused body created nothing');
  });

  it('refuses absurd paging values', async () => {
    const res = await tc.mgmt.get('/identities?limit=1000000000000&offset=100000000000000000000');
    assertError(res, 400, 'COULD_NOT_VALIDATE');
    const huge = await tc.mgmt.get('/identities?limit=1000000000000');
    assert.ok(huge.status === 200 || huge.status === 400, String(huge.status));
    if (huge.status === 200) assert.ok(huge.body.meta.pagination.limit <= 500, 'a page is bounded');
  });

  it('closes connections beyond the limit and serves again once they are gone', async () => {
    const held: TLSSocket[] = [];
    let refused = 0;
    for (let i = 0; i < 50; i++) {
      try {
        const s = await Promise.race([
          tlsSocket(),
          new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), 3000)),
        ]);
        held.push(s);
      } catch {
        refused++;
      }
    }
    await new Promise((r) => setTimeout(r, 300));
    const open = held.filter((s) => !s.destroyed).length;
    assert.ok(refused + (held.length - open) >= 10, `connections past 40 are refused (${refused} refused, ${held.length - open} closed)`);
    for (const s of held) s.destroy();
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await tc.http.get('/version')).status, 200);
  });
});
