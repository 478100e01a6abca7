/**
 * Admission to the control channel: a TLS connection that negotiated ALPN `ziti-ctrl` on the API port is
 * handed here. It must send its hello within `helloTimeoutMs`; the router it names must exist, be enrolled
 * with exactly the certificate presented on this connection (which must chain to this network's CA) and be
 * enabled. An admitted router gets the result it binds on and a `ControlChannel`; a refused one gets the
 * reason (routers log it and retry later) and the connection is closed. Every refusal is logged with its
 * reason and the peer address, never with key material.
 */
import { randomBytes } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import { readCertificateDer, verifyChain, type ParsedCertificate } from '../pki/certificate-chain.ts';
import { ControlChannel, DEFAULT_TIMINGS, type ChannelLog, type ChannelTimings } from './channel/connection.ts';
import type { ChannelBounds } from './channel/admission.ts';
import { HelloHeader, helloAccepted, helloRefused, readRouterHello, routerRefusal, type EnrolledRouter, type RouterHello, type VersionInfo } from './channel/hello.ts';
import { ChannelProtocolError, HELLO_LIMITS, MessageDecoder, encodeMessage, type ChannelMessage } from './channel/message.ts';

export interface AdmittedRouter<R extends EnrolledRouter = EnrolledRouter> {
  hello: RouterHello;
  /** The stored router the hello named, as `findRouter` read it. */
  stored: R;
  /** The raw hello, for headers a later stage reads (link listeners). */
  helloMessage: ChannelMessage;
  channel: ControlChannel;
  connectionId: string;
  certificate: ParsedCertificate;
  remoteAddress: string;
}

export interface ControlListenerOptions<R extends EnrolledRouter = EnrolledRouter> {
  /** Certificates a router's certificate must chain to (this network's CA bundle). */
  trustAnchors: readonly ParsedCertificate[];
  /** The stored router named by a hello. */
  findRouter(routerId: string): Promise<R | undefined>;
  controllerId: string;
  controllerVersion: VersionInfo;
  log: ChannelLog & { info(obj: object, msg: string): void };
  /** Called for each admitted router, after the result was written. */
  admitted(router: AdmittedRouter<R>): void;
  helloTimeoutMs?: number;
  timings?: ChannelTimings;
  /** What each router may cost (channel/admission.ts); the defaults otherwise. */
  bounds?: ChannelBounds;
  now?: () => Date;
}

export function createControlListener<R extends EnrolledRouter>(options: ControlListenerOptions<R>) {
  const helloTimeoutMs = options.helloTimeoutMs ?? 10_000;
  const now = options.now ?? (() => new Date());
  const open = new Set<TLSSocket>();
  const channels = new Set<ControlChannel>();

  function refuse(socket: TLSSocket, hello: ChannelMessage | undefined, reason: string, routerId?: string): void {
    options.log.warn({ routerId, remoteAddress: socket.remoteAddress, reason }, 'control channel refused');
    if (hello) socket.end(encodeMessage(helloRefused(hello, reason)));
    else socket.destroy();
    setTimeout(() => socket.destroy(), 1000).unref();
  }

  function presentedCertificate(socket: TLSSocket): ParsedCertificate | undefined {
    const raw = socket.getPeerCertificate()?.raw;
    if (!raw || raw.length === 0) return undefined;
    try {
      return readCertificateDer(raw);
    } catch {
      return undefined;
    }
  }

  /** Admits or refuses the router; true once admitted (its channel reads the socket from then on). */
  async function onHello(socket: TLSSocket, hello: ChannelMessage, leftover: Buffer): Promise<boolean> {
    const parsed = readRouterHello(hello);
    if (typeof parsed === 'string') return refused(socket, hello, parsed);
    const certificate = presentedCertificate(socket);
    if (!certificate) return refused(socket, hello, 'no client certificate presented', parsed.routerId);
    if (!verifyChain(certificate, { roots: options.trustAnchors, at: now() })) {
      return refused(socket, hello, 'client certificate is not issued by this network', parsed.routerId);
    }
    if (certificate.commonName !== parsed.routerId) return refused(socket, hello, 'hello does not name the certificate subject', parsed.routerId);
    const stored = await options.findRouter(parsed.routerId);
    // Gone while the store answered (the router hung up, or the controller is stopping): nothing to admit.
    if (socket.destroyed) return false;
    const refusal = routerRefusal(parsed.routerId, certificate.fingerprint, stored);
    if (refusal || !stored) return refused(socket, hello, refusal ?? `unknown router ${parsed.routerId}`, parsed.routerId);

    const connectionId = randomBytes(6).toString('base64url');
    socket.write(encodeMessage(helloAccepted(hello, parsed, { controllerId: options.controllerId, controllerVersion: options.controllerVersion, connectionId })));
    const channel = new ControlChannel(socket, options.log, options.timings ?? DEFAULT_TIMINGS, leftover, options.bounds);
    channels.add(channel);
    channel.once('close', () => channels.delete(channel));
    options.log.info({ routerId: parsed.routerId, connectionId, remoteAddress: socket.remoteAddress, version: parsed.versionInfo.version }, 'router connected');
    options.admitted({ hello: parsed, stored, helloMessage: hello, channel, connectionId, certificate, remoteAddress: socket.remoteAddress ?? '' });
    // Before the channel reads what came with the hello (a microtask), which may stop reading again (admission).
    socket.resume();
    return true;
  }

  function refused(socket: TLSSocket, hello: ChannelMessage, reason: string, routerId?: string): false {
    refuse(socket, hello, reason, routerId);
    return false;
  }

  /** Takes a TLS connection that chose `ziti-ctrl`. */
  function accept(socket: TLSSocket): void {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    const decoder = new MessageDecoder(HELLO_LIMITS);
    const timer = setTimeout(() => refuse(socket, undefined, `no hello within ${helloTimeoutMs} ms`), helloTimeoutMs);
    timer.unref();
    const onData = (chunk: Buffer) => {
      let messages: ChannelMessage[];
      try {
        messages = decoder.push(chunk);
      } catch (err) {
        clearTimeout(timer);
        socket.off('data', onData);
        refuse(socket, undefined, err instanceof ChannelProtocolError ? err.message : 'unreadable hello');
        return;
      }
      if (messages.length === 0) return;
      clearTimeout(timer);
      socket.off('data', onData);
      socket.pause();
      const [hello, ...early] = messages;
      if (early.length > 0) return refuse(socket, hello, 'messages sent before the hello was answered');
      // The socket stays paused until the router is admitted (its channel reads on) or refused.
      onHello(socket, hello!, decoder.takeBuffered()).then(
        (admitted) => {
          if (!admitted && !socket.destroyed) socket.resume();
        },
        (err: unknown) => {
          // Nothing a router sends may take the process down: this connection ends, the router retries.
          options.log.warn({ remoteAddress: socket.remoteAddress, err: (err as Error).message }, 'control channel setup failed');
          socket.destroy();
        },
      );
    };
    socket.on('data', onData);
    socket.on('error', () => socket.destroy());
  }

  /** Ends every control connection (controller stop). */
  function close(): void {
    for (const channel of channels) channel.close('controller stopping');
    for (const socket of open) socket.destroy();
  }

  return { accept, close };
}

export type ControlListener = ReturnType<typeof createControlListener>;

/** The link listeners a router announced in its hello (header 1000), undecoded. */
export function helloListenersHeader(hello: ChannelMessage): Buffer | undefined {
  return hello.headers.get(HelloHeader.Listeners);
}
