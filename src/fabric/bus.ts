/**
 * Messages between the processes that hold routers. A circuit's path can cross routers whose control
 * channels belong to different worker processes: the process routing the circuit asks the owner of each
 * router to send it the route and to hand back the router's answer. In the cluster the primary relays these
 * messages by process name (the change-feed origin); a lone process has no one to talk to. Several controller
 * instances would carry the same messages over their own connection.
 */

/** A channel message as it crosses processes (bytes as base64). */
export interface WireMessage {
  contentType: number;
  headers: Array<[number, string]>;
  body: string;
}

export type BusPayload =
  /** Send `message` to the router and answer with its reply (`reply`). */
  | { kind: 'request'; requestId: number; routerId: string; message: WireMessage; timeoutMs: number }
  | { kind: 'reply'; requestId: number; message?: WireMessage; error?: string }
  /** Send `message` to the router; no answer. */
  | { kind: 'send'; routerId: string; message: WireMessage }
  /** A router of the circuit's path reported it ended (the circuit belongs to the receiver). */
  | { kind: 'circuit-fault'; circuitId: string; reporter: string };

export interface FabricBus {
  /** This process's name. */
  readonly self: string;
  /** Sends to the process named `to`; false when there is no way to reach it. */
  send(to: string, payload: BusPayload): boolean;
  onMessage(handler: (from: string, payload: BusPayload) => void): void;
}

/** A process alone: every router it can use is its own. */
export function loneBus(self: string): FabricBus {
  return { self, send: () => false, onMessage: () => undefined };
}

/** The envelope workers and the primary exchange (`type: 'fabric'`). */
export interface BusEnvelope {
  type: 'fabric';
  from: string;
  to: string;
  payload: BusPayload;
}

export function isBusEnvelope(message: unknown): message is BusEnvelope {
  const m = message as Partial<BusEnvelope> | null;
  return !!m && m.type === 'fabric' && typeof m.from === 'string' && typeof m.to === 'string' && typeof m.payload === 'object';
}

/** A cluster worker's bus: messages go to the primary, which hands them to the named worker. */
export function workerBus(self: string, port: { send(message: unknown): unknown; on(event: 'message', listener: (message: unknown) => void): unknown }): FabricBus {
  const handlers: Array<(from: string, payload: BusPayload) => void> = [];
  port.on('message', (message) => {
    if (!isBusEnvelope(message) || message.to !== self) return;
    for (const handler of handlers) handler(message.from, message.payload);
  });
  return {
    self,
    send(to, payload) {
      if (to === self) return false;
      port.send({ type: 'fabric', from: self, to, payload } satisfies BusEnvelope);
      return true;
    },
    onMessage: (handler) => void handlers.push(handler),
  };
}
