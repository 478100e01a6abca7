/**
 * A scripted router for black-box tests of the control channel: enrolls an edge or transit router over REST
 * (real CSRs and certificates), then dials the controller's port over TLS with ALPN `ziti-ctrl`, presenting
 * whatever certificate a test chooses, sends a hello as upstream routers do and reads what comes back. The
 * real routers are exercised by the interop suite; this one can misbehave on purpose.
 */
import assert from 'node:assert/strict';
import { connect, type TLSSocket } from 'node:tls';
import { once } from 'node:events';
import type { TestController } from './controller.ts';
import { uniqueName } from './controller.ts';
import { csrPem, newKey, type TestKey } from './router-certs.ts';
import {
  ChannelContentType,
  ChannelHeader,
  MessageDecoder,
  boolValue,
  encodeMessage,
  int32Value,
  message,
  replyFor,
  stringValue,
  type ChannelMessage,
} from '../../src/fabric/channel/message.ts';
import { encode } from '../../src/fabric/proto/index.ts';
import { EdgeContentType, EdgeHeader } from '../../src/fabric/proto/edge-ctrl.ts';

export interface RouterCredentials {
  id: string;
  name: string;
  certPem: string;
  keyPem: string;
  key: TestKey;
}

/** Creates and enrolls a router (edge by default) through the APIs, as `ziti router enroll` would. */
export async function enrolledRouter(tc: TestController, kind: 'edge' | 'transit' = 'edge'): Promise<RouterCredentials> {
  const base = kind === 'edge' ? '/edge-routers' : '/transit-routers';
  const name = uniqueName(kind === 'edge' ? 'er' : 'tr');
  const created = await tc.mgmt.post(base, { name });
  assert.equal(created.status, 201, created.text);
  const id = created.body.data.id as string;
  return enrollRouterAgain(tc, id, name, kind);
}

/** Enrolls (or re-enrolls, after `POST .../re-enroll`) the router with a fresh key. */
export async function enrollRouterAgain(tc: TestController, id: string, name: string, kind: 'edge' | 'transit' = 'edge'): Promise<RouterCredentials> {
  const base = kind === 'edge' ? '/edge-routers' : '/transit-routers';
  const detail = await tc.mgmt.get(`${base}/${id}`);
  assert.equal(detail.status, 200, detail.text);
  const token = detail.body.data.enrollmentToken as string;
  const key = await newKey();
  const certCsr = await csrPem(key, { subject: `CN=${id}, O=Portcullis Tests`, dns: [`${id}.routers.test`] });
  const serverCertCsr = await csrPem(key, { subject: `CN=${id}, O=Portcullis Tests`, dns: ['localhost'], ips: ['127.0.0.1'] });
  const method = kind === 'edge' ? 'erott' : 'trott';
  const res = await tc.http.post(`/edge/client/v1/enroll?method=${method}&token=${token}`, { certCsr, serverCertCsr });
  assert.equal(res.status, 200, res.text);
  return { id, name, certPem: res.body.data.cert as string, keyPem: key.keyPem, key };
}

export const ROUTER_VERSION = 'v2.0.0-pre3|a0c6f0dd|2026-03-06T16:10:46Z|linux|amd64';

/** The hello an upstream router sends on its first dial. */
export function routerHello(routerId: string, extra: Array<[number, Buffer]> = []): ChannelMessage {
  const hello = message(ChannelContentType.Hello, routerId, [
    [ChannelHeader.HelloVersion, stringValue(ROUTER_VERSION)],
    [1002, Buffer.from([0x02])],
    [ChannelHeader.IsGrouped, boolValue(true)],
    [ChannelHeader.Type, stringValue('ctrl.default')],
    [ChannelHeader.IsFirstGroupConnection, boolValue(true)],
    ...extra,
  ]);
  hello.sequence = -1;
  return hello;
}

export class TestRouterConnection {
  private readonly decoder = new MessageDecoder({ maxHeaders: 1 << 24, maxBody: 1 << 26 });
  private readonly inbox: ChannelMessage[] = [];
  private waiting: Array<() => void> = [];
  private nextSequence = 1;
  closed = false;

  constructor(readonly socket: TLSSocket) {
    socket.on('data', (chunk: Buffer) => {
      for (const msg of this.decoder.push(chunk)) this.inbox.push(msg);
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => undefined);
  }

  private wake(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const w of waiting) w();
  }

  /** Sends with the next sequence number (the hello keeps its -1). */
  send(msg: ChannelMessage): number {
    if (msg.contentType !== ChannelContentType.Hello) msg.sequence = this.nextSequence++;
    this.socket.write(encodeMessage(msg));
    return msg.sequence;
  }

  writeRaw(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  /** The first message (received or to come) that `match` accepts, removed from the inbox. */
  async next(match: (m: ChannelMessage) => boolean = () => true, timeoutMs = 5000): Promise<ChannelMessage> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.inbox.findIndex(match);
      if (i >= 0) return this.inbox.splice(i, 1)[0]!;
      if (this.closed) throw new Error('connection closed before the expected message');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('timed out waiting for a message');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiting.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The next message of a content type. */
  nextOf(contentType: number, timeoutMs?: number): Promise<ChannelMessage> {
    return this.next((m) => m.contentType === contentType, timeoutMs);
  }

  /** The reply to one of our sequences. */
  replyTo(sequence: number, timeoutMs?: number): Promise<ChannelMessage> {
    return this.next((m) => replyFor(m) === sequence, timeoutMs);
  }

  async waitClosed(timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      if (Date.now() > deadline) throw new Error('connection still open');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        this.waiting.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

export interface DialOptions {
  /** Client certificate and key to present (none: no client certificate). */
  cert?: string;
  key?: string;
  alpn?: string[];
}

/** A TLS connection to the controller's port that negotiated the control channel. */
export async function dialControl(tc: TestController, opts: DialOptions): Promise<TestRouterConnection> {
  const socket = connect({
    host: '127.0.0.1',
    port: tc.port,
    ca: tc.ca,
    servername: 'localhost',
    ALPNProtocols: opts.alpn ?? ['ziti-ctrl'],
    ...(opts.cert ? { cert: opts.cert, key: opts.key } : {}),
  });
  await once(socket, 'secureConnect');
  return new TestRouterConnection(socket);
}

/** Dials with the router's own certificate and sends its hello; answers the connection and the hello result. */
export async function connectRouter(tc: TestController, router: RouterCredentials, hello = routerHello(router.id)): Promise<{ conn: TestRouterConnection; result: ChannelMessage }> {
  const conn = await dialControl(tc, { cert: router.certPem, key: router.keyPem });
  conn.send(hello);
  const result = await conn.nextOf(ChannelContentType.Result);
  return { conn, result };
}

/** The client hello an upstream edge router answers the server hello with (its edge listener on `port`). */
export function clientHelloBody(port: number): Buffer {
  return encode('edge.ClientHello', {
    version: 'v2.0.0-pre3',
    hostname: 'router.test',
    protocols: ['tls'],
    protocolPorts: [String(port)],
    listeners: [{ address: { value: `tls:0.0.0.0:${port}`, protocol: 'tls', hostname: '0.0.0.0', port }, advertise: { value: `tls:router.test:${port}`, protocol: 'tls', hostname: 'router.test', port } }],
  });
}

/** Waits for the server hello and answers it as an upstream edge router does (optionally keeping the data model). */
export async function answerServerHello(conn: TestRouterConnection, opts: { port?: number; dataModel?: boolean } = {}): Promise<void> {
  const hello = await conn.nextOf(EdgeContentType.ServerHello);
  const reply = message(EdgeContentType.ClientHello, clientHelloBody(opts.port ?? 3022), opts.dataModel ? [[EdgeHeader.RouterDataModel, boolValue(true)]] : []);
  reply.headers.set(ChannelHeader.ReplyFor, int32Value(hello.sequence));
  conn.send(reply);
}

/** Polls `probe` until it returns true (or fails the test after `timeoutMs`). */
export async function eventually(probe: () => Promise<boolean> | boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
