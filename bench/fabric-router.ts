/**
 * A scripted edge router for the fabric benchmark (bench/fabric.ts), lean enough to drive thousands of control
 * messages a second: enrollment over REST (real keys, CSRs and certificates, as test/support/test-router.ts does),
 * a TLS connection with ALPN `ziti-ctrl` and the router's certificate, the hello, the edge sync's client hello, and
 * a dispatcher that matches replies to requests by sequence (a map, not a scan), echoes the controller's
 * heartbeats as upstream routers do and hands every Route to a callback. With `dataModel`, it also says in its client
 * hello that it keeps the router data model (header 1024, as upstream routers do) and hands every data model message
 * (DataState, change sets, CurrentIndexMessage) to a callback with its size on the wire (bench/fabric-scale.ts).
 */
import { connect, type TLSSocket } from 'node:tls';
import { once } from 'node:events';
import {
  ChannelContentType,
  ChannelHeader,
  MessageDecoder,
  boolValue,
  encodeMessage,
  int32Value,
  message,
  readBool,
  readUint64,
  replyFor,
  stringValue,
  type ChannelMessage,
} from '../src/fabric/channel/message.ts';
import { CtrlContentType } from '../src/fabric/proto/ctrl.ts';
import { EdgeContentType, EdgeHeader } from '../src/fabric/proto/edge-ctrl.ts';
import { encode } from '../src/fabric/proto/index.ts';
import { csrPem, newKey } from '../test/support/router-certs.ts';
import { HOST, type apiClient } from './lib.ts';

type Api = ReturnType<typeof apiClient>;

export interface BenchRouterCredentials {
  id: string;
  name: string;
  certPem: string;
  keyPem: string;
}

const MANAGEMENT = '/edge/management/v1';
/** What upstream v2.0.0-pre3 routers send as their version. */
const ROUTER_VERSION = 'v2.0.0-pre3|a0c6f0dd|2026-03-06T16:10:46Z|linux|amd64';
/** Unmatched messages kept for `next` (API session pushes and the like are dropped beyond this). */
const INBOX_LIMIT = 256;

/**
 * Creates an edge router through the management API (`admin` holds an admin session) and enrolls it with a fresh
 * EC P-256 key (`POST /enroll?method=erott`, through `anonymous`, a client without a session), as
 * `ziti router enroll` would.
 */
export async function enrollEdgeRouter(admin: Api, anonymous: Api, name: string): Promise<BenchRouterCredentials> {
  const created = await admin.must('POST', `${MANAGEMENT}/edge-routers`, { name }, 201);
  const id = created.data.id as string;
  const detail = await admin.must('GET', `${MANAGEMENT}/edge-routers/${id}`, undefined, 200);
  const token = detail.data.enrollmentToken as string;
  const key = await newKey();
  const certCsr = await csrPem(key, { subject: `CN=${id}, O=Portcullis Bench`, dns: [`${id}.routers.bench`] });
  const serverCertCsr = await csrPem(key, { subject: `CN=${id}, O=Portcullis Bench`, dns: ['localhost'], ips: ['127.0.0.1'] });
  const res = await anonymous.must('POST', `/edge/client/v1/enroll?method=erott&token=${token}`, { certCsr, serverCertCsr }, 200);
  return { id, name, certPem: res.data.cert as string, keyPem: key.keyPem };
}

/** The client hello an upstream edge router answers the server hello with (its edge listener). */
function clientHello(port: number): Buffer {
  return encode('edge.ClientHello', {
    version: 'v2.0.0-pre3',
    hostname: 'bench-router.local',
    protocols: ['tls'],
    protocolPorts: [String(port)],
    listeners: [
      {
        address: { value: `tls:127.0.0.1:${port}`, protocol: 'tls', hostname: '127.0.0.1', port },
        advertise: { value: `tls:127.0.0.1:${port}`, protocol: 'tls', hostname: '127.0.0.1', port },
      },
    ],
  });
}

/** Bytes a message takes on the wire: the 20-byte prefix, each header (id, length, value), the body. */
export function wireSize(msg: ChannelMessage): number {
  let n = 20 + msg.body.length;
  for (const value of msg.headers.values()) n += 8 + value.length;
  return n;
}

/** Data model messages: DataState, DataStateChangeSet, CurrentIndexMessage. */
const MODEL_CONTENT_TYPES = new Set<number>([EdgeContentType.DataState, EdgeContentType.DataStateChangeSet, EdgeContentType.CurrentIndexMessage]);

/**
 * Receives a data model message: when its last bytes and when its first bytes were taken off the socket
 * (performance.now(), chunk resolution) and its size on the wire.
 */
export type ModelListener = (msg: ChannelMessage, at: number, wireBytes: number, startedAt: number) => void;

interface Pending {
  resolve(msg: ChannelMessage): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

interface Watcher {
  match(msg: ChannelMessage): boolean;
  resolve(msg: ChannelMessage): void;
}

export class BenchRouter {
  private readonly decoder = new MessageDecoder({ maxHeaders: 1 << 24, maxBody: 1 << 26 });
  private readonly pending = new Map<number, Pending>();
  private watchers: Watcher[] = [];
  private inbox: ChannelMessage[] = [];
  private nextSequence = 1;
  closed = false;
  /** Called for every Route the controller sends (the benchmark answers it). */
  onRoute: ((msg: ChannelMessage) => void) | undefined;
  /** Called for every data model message (set by `connect` with `dataModel`). */
  onModel: ModelListener | undefined;
  /** Application bytes received on the control channel (after TLS), from the first one. */
  bytesIn = 0;
  /** When the last chunk arrived (performance.now()). */
  lastChunkAt = 0;
  /** When the chunk with the first bytes of the message being decoded arrived. */
  private partialStartedAt = 0;

  private constructor(
    readonly socket: TLSSocket,
    readonly creds: BenchRouterCredentials,
  ) {
    socket.on('data', (chunk: Buffer) => {
      this.bytesIn += chunk.length;
      const now = performance.now();
      this.lastChunkAt = now;
      const hadPartial = this.decoder.buffered > 0;
      let messages: ChannelMessage[];
      try {
        messages = this.decoder.push(chunk);
      } catch (err) {
        this.fail(err as Error);
        return;
      }
      const firstStartedAt = hadPartial ? this.partialStartedAt : now;
      // What is left over began in this chunk (unless it is the message that was already partial and did not end).
      if (this.decoder.buffered > 0 && (messages.length > 0 || !hadPartial)) this.partialStartedAt = now;
      messages.forEach((msg, i) => this.dispatch(msg, i === 0 ? firstStartedAt : now));
    });
    socket.on('close', () => this.fail(new Error('control channel closed')));
    socket.on('error', () => undefined);
  }

  /**
   * Dials the control channel with the router's certificate, sends the hello and waits for a successful result;
   * with `sync`, also answers the server hello with a client hello (the router then gets its API sessions and shows
   * SYNC_DONE), as an upstream edge router does. With `dataModel` (and `sync`), the client hello says the router keeps
   * the data model, and every data model message goes to that listener from the first byte on.
   */
  static async connect(port: number, ca: string, creds: BenchRouterCredentials, opts: { sync: boolean; dataModel?: ModelListener }): Promise<BenchRouter> {
    const socket = connect({ host: HOST, port, ca, servername: 'localhost', ALPNProtocols: ['ziti-ctrl'], cert: creds.certPem, key: creds.keyPem });
    // As upstream routers (Go sets TCP_NODELAY on every TCP connection): without it, a Fault followed at once by the
    // next request waits for the controller's delayed ACK (~40 ms) under Nagle's algorithm.
    socket.setNoDelay(true);
    await once(socket, 'secureConnect');
    const router = new BenchRouter(socket, creds);
    router.onModel = opts.dataModel;
    const hello = message(ChannelContentType.Hello, creds.id, [
      [ChannelHeader.HelloVersion, stringValue(ROUTER_VERSION)],
      [1002, Buffer.from([0x02])],
      [ChannelHeader.IsGrouped, boolValue(true)],
      [ChannelHeader.Type, stringValue('ctrl.default')],
      [ChannelHeader.IsFirstGroupConnection, boolValue(true)],
    ]);
    hello.sequence = -1;
    // Both may arrive in one chunk: watch for the server hello before the result comes.
    const serverHello = opts.sync ? router.next((m) => m.contentType === EdgeContentType.ServerHello, 30_000) : undefined;
    serverHello?.catch(() => undefined);
    socket.write(encodeMessage(hello));
    const result = await router.next((m) => m.contentType === ChannelContentType.Result, 30_000);
    if (readBool(result.headers.get(ChannelHeader.ResultSuccess)) !== true) {
      router.close();
      throw new Error(`router ${creds.name}: hello refused: ${result.body.toString('utf8')}`);
    }
    if (serverHello) {
      const sh = await serverHello;
      const reply = message(EdgeContentType.ClientHello, clientHello(3022));
      reply.headers.set(ChannelHeader.ReplyFor, int32Value(sh.sequence));
      if (opts.dataModel) reply.headers.set(EdgeHeader.RouterDataModel, boolValue(true));
      router.send(reply);
    }
    return router;
  }

  private dispatch(msg: ChannelMessage, startedAt = this.lastChunkAt): void {
    const beat = msg.headers.get(ChannelHeader.Heartbeat);
    if (beat && readUint64(beat) !== undefined) {
      this.send(message(ChannelContentType.Heartbeat, Buffer.alloc(0), [[ChannelHeader.HeartbeatResponse, beat]]));
    }
    if (msg.contentType === ChannelContentType.Heartbeat) return;
    const answers = replyFor(msg);
    if (answers !== undefined && answers !== -1) {
      const waiter = this.pending.get(answers);
      if (waiter) {
        this.pending.delete(answers);
        clearTimeout(waiter.timer);
        waiter.resolve(msg);
        return;
      }
    }
    if (msg.contentType === CtrlContentType.Route && this.onRoute) {
      this.onRoute(msg);
      return;
    }
    if (this.onModel && MODEL_CONTENT_TYPES.has(msg.contentType)) {
      this.onModel(msg, this.lastChunkAt, wireSize(msg), startedAt);
      return;
    }
    const i = this.watchers.findIndex((w) => w.match(msg));
    if (i >= 0) {
      const [w] = this.watchers.splice(i, 1);
      w!.resolve(msg);
      return;
    }
    this.inbox.push(msg);
    if (this.inbox.length > INBOX_LIMIT) this.inbox.splice(0, this.inbox.length - INBOX_LIMIT);
  }

  private fail(err: Error): void {
    if (this.closed) return;
    this.closed = true;
    for (const [, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
    this.socket.destroy();
  }

  /** Sends with the next sequence number; returns it. */
  send(msg: ChannelMessage): number {
    msg.sequence = this.nextSequence++;
    this.socket.write(encodeMessage(msg));
    return msg.sequence;
  }

  /** Sends and resolves with the reply (header 1 names our sequence). */
  request(msg: ChannelMessage, timeoutMs = 10_000): Promise<ChannelMessage> {
    if (this.closed) return Promise.reject(new Error('control channel closed'));
    return new Promise((resolve, reject) => {
      const sequence = this.nextSequence;
      const timer = setTimeout(() => {
        this.pending.delete(sequence);
        reject(new Error(`no reply to content type ${msg.contentType} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(sequence, { resolve, reject, timer });
      this.send(msg);
    });
  }

  /** The first unmatched message (received or to come) that `match` accepts. */
  next(match: (m: ChannelMessage) => boolean, timeoutMs = 10_000): Promise<ChannelMessage> {
    const i = this.inbox.findIndex(match);
    if (i >= 0) return Promise.resolve(this.inbox.splice(i, 1)[0]!);
    return new Promise((resolve, reject) => {
      const watcher: Watcher = {
        match,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      };
      const timer = setTimeout(() => {
        this.watchers = this.watchers.filter((w) => w !== watcher);
        reject(new Error(`router ${this.creds.name}: timed out after ${timeoutMs} ms waiting for a message`));
      }, timeoutMs);
      this.watchers.push(watcher);
    });
  }

  close(): void {
    this.fail(new Error('closed by the benchmark'));
  }
}
