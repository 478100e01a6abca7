/**
 * Control channel messages as upstream routers frame them (channel "V2 wire format"): a 20-byte prefix (magic,
 * content type, sequence, headers length, body length, all little-endian int32), a headers block of
 * `id | length | bytes` entries, then the body. This module only encodes and decodes; it knows nothing of
 * routers, TLS or the data model.
 */

/** The four bytes every message starts with. */
export const MAGIC = Buffer.from([0x03, 0x06, 0x09, 0x0c]);
const PREFIX_LENGTH = 20;

/** Content types of the channel layer itself (the control protocol uses its own, 1000 and up). */
export const ChannelContentType = {
  Hello: 0,
  Ping: 1,
  Result: 2,
  Latency: 3,
  LatencyResponse: 4,
  Heartbeat: 5,
} as const;

/** Header ids of the channel layer. */
export const ChannelHeader = {
  ConnectionId: 0,
  ReplyFor: 1,
  ResultSuccess: 2,
  HelloVersion: 4,
  Heartbeat: 5,
  HeartbeatResponse: 6,
  Type: 7,
  Id: 8,
  IsGrouped: 9,
  GroupSecret: 10,
  IsFirstGroupConnection: 11,
} as const;

/** Headers with ids in this range on a request are copied onto its reply (128 carries a trace id). */
const REFLECTED_FIRST = 128;
const REFLECTED_LAST = 255;

export interface ChannelMessage {
  contentType: number;
  sequence: number;
  headers: Map<number, Buffer>;
  body: Buffer;
}

/** A frame that breaks the wire format: the connection that sent it can not be trusted to stay in step. */
export class ChannelProtocolError extends Error {
  override readonly name = 'ChannelProtocolError';
}

export function message(contentType: number, body: Buffer | string = Buffer.alloc(0), headers?: Iterable<[number, Buffer]>): ChannelMessage {
  return { contentType, sequence: 0, headers: new Map(headers ?? []), body: typeof body === 'string' ? Buffer.from(body, 'utf8') : body };
}

export function encodeMessage(msg: ChannelMessage): Buffer {
  return encodeInto(msg, msg.body.length);
}

/**
 * The bytes of a message up to its body (prefix and headers): a large body that many channels share is written
 * after them as it is, never copied into one buffer per channel.
 */
export function encodeMessageHead(msg: ChannelMessage): Buffer {
  return encodeInto(msg, 0);
}

/** Prefix, headers and the first `bodyBytes` of the body. */
function encodeInto(msg: ChannelMessage, bodyBytes: number): Buffer {
  let headersLength = 0;
  for (const value of msg.headers.values()) headersLength += 8 + value.length;
  const out = Buffer.allocUnsafe(PREFIX_LENGTH + headersLength + bodyBytes);
  MAGIC.copy(out, 0);
  out.writeInt32LE(msg.contentType, 4);
  out.writeInt32LE(msg.sequence, 8);
  out.writeInt32LE(headersLength, 12);
  out.writeInt32LE(msg.body.length, 16);
  let at = PREFIX_LENGTH;
  for (const [id, value] of msg.headers) {
    out.writeInt32LE(id, at);
    out.writeInt32LE(value.length, at + 4);
    value.copy(out, at + 8);
    at += 8 + value.length;
  }
  if (bodyBytes > 0) msg.body.copy(out, at, 0, bodyBytes);
  return out;
}

function decodeHeaders(block: Buffer): Map<number, Buffer> {
  const headers = new Map<number, Buffer>();
  let at = 0;
  while (at < block.length) {
    if (block.length - at < 8) throw new ChannelProtocolError('truncated header entry');
    const id = block.readInt32LE(at);
    const length = block.readInt32LE(at + 4);
    if (length < 0 || length > block.length - at - 8) throw new ChannelProtocolError(`header ${id} overruns the headers block`);
    headers.set(id, Buffer.from(block.subarray(at + 8, at + 8 + length)));
    at += 8 + length;
  }
  return headers;
}

export interface DecoderLimits {
  /** Largest headers block accepted, in bytes. */
  maxHeaders: number;
  /** Largest body accepted, in bytes. */
  maxBody: number;
}

/** What a listener accepts for the hello, as upstream routers expect (both at most 4192 bytes). */
export const HELLO_LIMITS: DecoderLimits = { maxHeaders: 4192, maxBody: 4192 };

/**
 * Splits a byte stream into messages. Feed it chunks as they arrive; it returns every message completed so
 * far and keeps the rest. Limits can be tightened per message (the hello) or set for the connection.
 */
export class MessageDecoder {
  private pending: Buffer[] = [];
  private pendingLength = 0;

  constructor(private limits: DecoderLimits) {}

  setLimits(limits: DecoderLimits): void {
    this.limits = limits;
  }

  /** Bytes received that do not yet form a whole message. */
  get buffered(): number {
    return this.pendingLength;
  }

  /** Hands over the bytes not yet decoded (they start the next message) and forgets them. */
  takeBuffered(): Buffer {
    const rest = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingLength);
    this.pending = [];
    this.pendingLength = 0;
    return rest;
  }

  push(chunk: Buffer): ChannelMessage[] {
    this.pending.push(chunk);
    this.pendingLength += chunk.length;
    const out: ChannelMessage[] = [];
    while (this.pendingLength >= PREFIX_LENGTH) {
      // Read the prefix first; join the chunks only once a whole message is there (large messages arrive in many).
      const prefix = this.pending[0]!.length >= PREFIX_LENGTH ? this.pending[0]! : Buffer.concat(this.pending, this.pendingLength);
      if (!prefix.subarray(0, 4).equals(MAGIC)) throw new ChannelProtocolError('invalid message header (bad magic)');
      const headersLength = prefix.readInt32LE(12);
      const bodyLength = prefix.readInt32LE(16);
      if (headersLength < 0 || bodyLength < 0) throw new ChannelProtocolError('negative section length');
      if (headersLength > this.limits.maxHeaders) throw new ChannelProtocolError(`headers of ${headersLength} bytes exceed ${this.limits.maxHeaders}`);
      if (bodyLength > this.limits.maxBody) throw new ChannelProtocolError(`body of ${bodyLength} bytes exceeds ${this.limits.maxBody}`);
      const total = PREFIX_LENGTH + headersLength + bodyLength;
      if (this.pendingLength < total) break;
      const data = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingLength);
      out.push({
        contentType: data.readInt32LE(4),
        sequence: data.readInt32LE(8),
        headers: decodeHeaders(data.subarray(PREFIX_LENGTH, PREFIX_LENGTH + headersLength)),
        body: Buffer.from(data.subarray(PREFIX_LENGTH + headersLength, total)),
      });
      const rest = data.subarray(total);
      this.pending = rest.length ? [rest] : [];
      this.pendingLength = rest.length;
    }
    return out;
  }
}

/** Makes `msg` the reply to `request`: header 1 names the request's sequence; reflected headers are copied. */
export function asReplyTo(request: ChannelMessage, msg: ChannelMessage): ChannelMessage {
  for (const [id, value] of request.headers) {
    if (id >= REFLECTED_FIRST && id <= REFLECTED_LAST && !msg.headers.has(id)) msg.headers.set(id, value);
  }
  msg.headers.set(ChannelHeader.ReplyFor, int32Value(request.sequence));
  return msg;
}

/** The sequence a message answers, when it is a reply. */
export function replyFor(msg: ChannelMessage): number | undefined {
  const v = msg.headers.get(ChannelHeader.ReplyFor);
  return v && v.length === 4 ? v.readInt32LE(0) : undefined;
}

// ---- header values --------------------------------------------------------------------------------------------

const MAX_LIST_ENTRIES = 128;
const MAX_LIST_ITEM = 8192;

export function boolValue(value: boolean): Buffer {
  return Buffer.from([value ? 1 : 0]);
}

/** A bool header: only the byte 1 is true. */
export function readBool(value: Buffer | undefined): boolean | undefined {
  return value === undefined ? undefined : value.length === 1 && value[0] === 1;
}

export function int32Value(value: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeInt32LE(value, 0);
  return b;
}

export function uint32Value(value: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32LE(value, 0);
  return b;
}

/** A fixed-size integer header; undefined when the value has another length, as upstream's getters answer. */
export function readUint32(value: Buffer | undefined): number | undefined {
  return value && value.length === 4 ? value.readUInt32LE(0) : undefined;
}

export function uint64Value(value: bigint): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64LE(value, 0);
  return b;
}

export function readUint64(value: Buffer | undefined): bigint | undefined {
  return value && value.length === 8 ? value.readBigUInt64LE(0) : undefined;
}

export function stringValue(value: string): Buffer {
  return Buffer.from(value, 'utf8');
}

export function readString(value: Buffer | undefined): string | undefined {
  return value?.toString('utf8');
}

function checkListSize(count: number, what: string): void {
  if (count > MAX_LIST_ENTRIES) throw new ChannelProtocolError(`${what} of ${count} entries exceeds ${MAX_LIST_ENTRIES}`);
}

/** A string list: uint32 count, then uint32 length and bytes per string (at most 128 strings of 8192 bytes). */
export function stringListValue(values: readonly string[]): Buffer {
  checkListSize(values.length, 'string list');
  const parts = values.map((v) => Buffer.from(v, 'utf8'));
  for (const p of parts) if (p.length > MAX_LIST_ITEM) throw new ChannelProtocolError('string list item too long');
  const out = Buffer.allocUnsafe(4 + parts.reduce((n, p) => n + 4 + p.length, 0));
  out.writeUInt32LE(parts.length, 0);
  let at = 4;
  for (const p of parts) {
    out.writeUInt32LE(p.length, at);
    p.copy(out, at + 4);
    at += 4 + p.length;
  }
  return out;
}

export function readStringList(value: Buffer | undefined): string[] | undefined {
  if (!value || value.length === 0) return value ? [] : undefined;
  if (value.length < 4) throw new ChannelProtocolError('truncated string list');
  const count = value.readUInt32LE(0);
  checkListSize(count, 'string list');
  const out: string[] = [];
  let at = 4;
  for (let i = 0; i < count; i++) {
    if (value.length - at < 4) throw new ChannelProtocolError('truncated string list');
    const length = value.readUInt32LE(at);
    if (length > MAX_LIST_ITEM || length > value.length - at - 4) throw new ChannelProtocolError('string list item overruns its header');
    out.push(value.toString('utf8', at + 4, at + 4 + length));
    at += 4 + length;
  }
  return out;
}

/** A string map: uint32 count, then per entry uint32 key length, key, uint32 value length, value. */
export function stringMapValue(map: Readonly<Record<string, string>>): Buffer {
  const entries = Object.entries(map);
  checkListSize(entries.length, 'string map');
  const parts: Buffer[] = [uint32Value(entries.length)];
  for (const [k, v] of entries) {
    const key = Buffer.from(k, 'utf8');
    const val = Buffer.from(v, 'utf8');
    parts.push(uint32Value(key.length), key, uint32Value(val.length), val);
  }
  return Buffer.concat(parts);
}

export function readStringMap(value: Buffer | undefined): Record<string, string> | undefined {
  if (!value) return undefined;
  if (value.length < 4) throw new ChannelProtocolError('truncated string map');
  const count = value.readUInt32LE(0);
  checkListSize(count, 'string map');
  const out: Record<string, string> = {};
  let at = 4;
  const take = (): string => {
    if (value.length - at < 4) throw new ChannelProtocolError('truncated string map');
    const length = value.readUInt32LE(at);
    if (length > value.length - at - 4) throw new ChannelProtocolError('string map entry overruns its header');
    const s = value.toString('utf8', at + 4, at + 4 + length);
    at += 4 + length;
    return s;
  };
  for (let i = 0; i < count; i++) {
    const key = take();
    out[key] = take();
  }
  return out;
}

/** A byte map (peer data): uint32 count, then per entry uint32 key, uint32 value length, value. */
export function byteMapValue(map: ReadonlyMap<number, Uint8Array>): Buffer {
  checkListSize(map.size, 'byte map');
  const parts: Buffer[] = [uint32Value(map.size)];
  for (const [k, v] of map) {
    if (v.length > MAX_LIST_ITEM) throw new ChannelProtocolError(`byte map value of ${v.length} bytes exceeds ${MAX_LIST_ITEM}`);
    parts.push(uint32Value(k), uint32Value(v.length), Buffer.from(v));
  }
  return Buffer.concat(parts);
}

export function readByteMap(value: Buffer | undefined): Map<number, Buffer> | undefined {
  if (!value) return undefined;
  if (value.length < 4) throw new ChannelProtocolError('truncated byte map');
  const count = value.readUInt32LE(0);
  checkListSize(count, 'byte map');
  const out = new Map<number, Buffer>();
  let at = 4;
  for (let i = 0; i < count; i++) {
    if (value.length - at < 8) throw new ChannelProtocolError('truncated byte map');
    const key = value.readUInt32LE(at);
    const length = value.readUInt32LE(at + 4);
    if (length > value.length - at - 8) throw new ChannelProtocolError('byte map entry overruns its header');
    out.set(key, Buffer.from(value.subarray(at + 8, at + 8 + length)));
    at += 8 + length;
  }
  return out;
}
