/**
 * Child process of scenario S14: one enrolled edge router that sends heartbeats and malformed messages (bodies
 * that are no protobuf of their content type) on its control channel as fast as its socket takes them, for
 * `seconds`, in a process of its own so that sending does not delay the measured load. When the controller
 * disconnects it, it dials again after 50 ms (the first back-off of upstream routers). Prints `READY {}` once its
 * first connection is synced and the flood starts, and `RESULT {...}` (RouterFloodFigures) when it ends.
 * Usage: node --import tsx bench/router-flood.ts '<RouterFloodSpec as JSON>'
 */
import { ChannelContentType, ChannelHeader, encodeMessage, message, uint64Value } from '../src/fabric/channel/message.ts';
import { EdgeContentType } from '../src/fabric/proto/edge-ctrl.ts';
import { CtrlContentType } from '../src/fabric/proto/ctrl.ts';
import { BenchRouter, type BenchRouterCredentials } from './fabric-router.ts';

export interface RouterFloodSpec {
  port: number;
  ca: string;
  creds: BenchRouterCredentials;
  seconds: number;
}

export interface RouterFloodFigures {
  /** Messages handed to the socket (heartbeats and malformed ones alike) and their rate over the flood. */
  sent: number;
  sentPerSecond: number;
  /** Bytes received from the controller (heartbeat echoes and its own messages). */
  bytesIn: number;
  /** Control channel connections made (the first included) and refused or failed dials. */
  connections: number;
  failedDials: number;
  /** Milliseconds the router was connected, of the flood. */
  connectedMs: number;
}

const spec = JSON.parse(process.argv[2] ?? '') as RouterFloodSpec;
const RECONNECT_MS = 50;
const PER_WRITE = 500;

/** One write's worth: heartbeats, and every tenth message one whose body no decoder accepts. */
function batch(): Buffer {
  const malformed = [EdgeContentType.ConnectEvents, EdgeContentType.ApiSessionHeartbeat, CtrlContentType.Metrics, CtrlContentType.Fault];
  const out: Buffer[] = [];
  for (let i = 0; i < PER_WRITE; i++) {
    const msg =
      i % 10 === 9
        ? message(malformed[(i / 10) % malformed.length | 0]!, Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]))
        : message(ChannelContentType.Heartbeat, Buffer.alloc(0), [[ChannelHeader.Heartbeat, uint64Value(BigInt(Date.now()) * 1_000_000n)]]);
    msg.sequence = i + 1;
    out.push(encodeMessage(msg));
  }
  return Buffer.concat(out);
}

const figures: RouterFloodFigures = { sent: 0, sentPerSecond: 0, bytesIn: 0, connections: 0, failedDials: 0, connectedMs: 0 };
const payload = batch();
const started = performance.now();
const endAt = started + spec.seconds * 1000;
let announced = false;

async function floodOnce(router: BenchRouter): Promise<void> {
  const since = performance.now();
  const closed = new Promise<void>((resolve) => router.socket.once('close', () => resolve()));
  while (!router.closed && performance.now() < endAt) {
    figures.sent += PER_WRITE;
    if (!router.socket.write(payload)) {
      await Promise.race([new Promise((r) => router.socket.once('drain', r)), closed, new Promise((r) => setTimeout(r, Math.max(0, endAt - performance.now())))]);
    } else {
      // Let the socket's reads (the controller's echoes) in between writes.
      await new Promise((r) => setImmediate(r));
    }
  }
  figures.connectedMs += performance.now() - since;
  figures.bytesIn += router.bytesIn;
  router.close();
}

while (performance.now() < endAt) {
  let router: BenchRouter;
  try {
    router = await BenchRouter.connect(spec.port, spec.ca, spec.creds, { sync: true });
  } catch {
    figures.failedDials++;
    await new Promise((r) => setTimeout(r, RECONNECT_MS));
    continue;
  }
  figures.connections++;
  if (!announced) {
    announced = true;
    process.stdout.write('READY {}\n');
  }
  await floodOnce(router);
  if (performance.now() < endAt) await new Promise((r) => setTimeout(r, RECONNECT_MS));
}
figures.sentPerSecond = figures.sent / ((performance.now() - started) / 1000);
process.stdout.write(`RESULT ${JSON.stringify(figures)}\n`, () => process.exit(0));
