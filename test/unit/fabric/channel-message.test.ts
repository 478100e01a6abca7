/**
 * The control channel codec: byte layout against hand-written frames, round trips through a stream cut at every
 * byte, replies and their reflected headers, header value encodings, and malformed input.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ChannelContentType,
  ChannelHeader,
  ChannelProtocolError,
  HELLO_LIMITS,
  MessageDecoder,
  asReplyTo,
  boolValue,
  encodeMessage,
  int32Value,
  message,
  readBool,
  readString,
  readStringList,
  readStringMap,
  readUint32,
  readUint64,
  replyFor,
  stringListValue,
  stringMapValue,
  stringValue,
  uint32Value,
  uint64Value,
  type ChannelMessage,
} from '../../../src/fabric/channel/message.ts';

const roomy = { maxHeaders: 1 << 20, maxBody: 1 << 24 };

function hello(): ChannelMessage {
  const m = message(ChannelContentType.Hello, 'router-id-1', [
    [ChannelHeader.HelloVersion, stringValue('v2.0.0|abc|2026-01-01|linux|amd64')],
    [1002, Buffer.from([0x02])],
    [ChannelHeader.IsGrouped, boolValue(true)],
    [ChannelHeader.Type, stringValue('ctrl.default')],
  ]);
  m.sequence = -1;
  return m;
}

describe('message framing', () => {
  it('lays a message out as magic, content type, sequence, lengths, headers and body (little-endian)', () => {
    const m = message(20000, Buffer.from([0xaa, 0xbb]), [[1024, Buffer.from([1])]]);
    m.sequence = 7;
    const bytes = encodeMessage(m);
    const expected = Buffer.concat([
      Buffer.from([0x03, 0x06, 0x09, 0x0c]),
      Buffer.from([0x20, 0x4e, 0, 0]), // 20000
      Buffer.from([7, 0, 0, 0]),
      Buffer.from([9, 0, 0, 0]), // one header entry: 4 + 4 + 1
      Buffer.from([2, 0, 0, 0]),
      Buffer.from([0x00, 0x04, 0, 0, 1, 0, 0, 0, 1]), // id 1024, length 1, value 1
      Buffer.from([0xaa, 0xbb]),
    ]);
    assert.deepEqual(bytes, expected);
  });

  it('decodes what it encodes, however the stream is cut', () => {
    const a = hello();
    const b = message(ChannelContentType.Heartbeat, Buffer.alloc(0), [[ChannelHeader.Heartbeat, uint64Value(123456789n)]]);
    b.sequence = 2;
    const c = message(20500, Buffer.alloc(100_000, 7));
    c.sequence = 3;
    const stream = Buffer.concat([a, b, c].map(encodeMessage));
    for (const step of [1, 3, 19, 20, 21, 4096, stream.length]) {
      const decoder = new MessageDecoder(roomy);
      const got: ChannelMessage[] = [];
      for (let i = 0; i < stream.length; i += step) got.push(...decoder.push(stream.subarray(i, i + step)));
      assert.equal(got.length, 3, `step ${step}`);
      assert.equal(decoder.buffered, 0);
      assert.deepEqual(got.map((m) => [m.contentType, m.sequence]), [[0, -1], [5, 2], [20500, 3]]);
      assert.equal(got[0]!.body.toString(), 'router-id-1');
      assert.equal(readString(got[0]!.headers.get(ChannelHeader.HelloVersion)), 'v2.0.0|abc|2026-01-01|linux|amd64');
      assert.equal(readUint64(got[1]!.headers.get(ChannelHeader.Heartbeat)), 123456789n);
      assert.deepEqual(got[2]!.body, c.body);
    }
  });

  it('keeps an incomplete message until the rest arrives', () => {
    const bytes = encodeMessage(hello());
    const decoder = new MessageDecoder(HELLO_LIMITS);
    assert.deepEqual(decoder.push(bytes.subarray(0, bytes.length - 1)), []);
    assert.equal(decoder.buffered, bytes.length - 1);
    assert.equal(decoder.push(bytes.subarray(bytes.length - 1)).length, 1);
  });
});

describe('malformed input', () => {
  const refused = (bytes: Buffer, limits = roomy) => assert.throws(() => new MessageDecoder(limits).push(bytes), ChannelProtocolError);

  it('refuses a bad magic, negative lengths and a header entry that overruns its block', () => {
    const good = encodeMessage(hello());
    const badMagic = Buffer.from(good);
    badMagic[3] = 0x0a;
    refused(badMagic);
    const negative = Buffer.from(good);
    negative.writeInt32LE(-1, 16);
    refused(negative);
    const overrun = Buffer.from(good);
    overrun.writeInt32LE(10_000, 24); // first header entry claims more bytes than the block holds
    refused(overrun);
    const truncatedEntry = encodeMessage({ contentType: 1, sequence: 1, headers: new Map(), body: Buffer.alloc(0) });
    const withStub = Buffer.concat([truncatedEntry.subarray(0, 12), int32Value(3), int32Value(0), Buffer.from([1, 2, 3])]);
    refused(withStub);
  });

  it('refuses a hello larger than upstream routers allow, but not an ordinary large message', () => {
    const big = message(ChannelContentType.Hello, Buffer.alloc(4193));
    refused(encodeMessage(big), HELLO_LIMITS);
    const decoder = new MessageDecoder(HELLO_LIMITS);
    decoder.setLimits(roomy);
    assert.equal(decoder.push(encodeMessage(big)).length, 1);
  });
});

describe('replies', () => {
  it('name the request sequence in header 1 and carry its reflected headers (128-255)', () => {
    const request = message(1050, 'x', [
      [128, Buffer.from('trace-id')],
      [255, Buffer.from([9])],
      [127, Buffer.from([1])],
      [1024, Buffer.from([1])],
    ]);
    request.sequence = 41;
    const reply = asReplyTo(request, message(ChannelContentType.Result, 'ok', [[ChannelHeader.ResultSuccess, boolValue(true)]]));
    assert.equal(replyFor(reply), 41);
    assert.deepEqual(reply.headers.get(128), Buffer.from('trace-id'));
    assert.deepEqual(reply.headers.get(255), Buffer.from([9]));
    assert.equal(reply.headers.has(127), false);
    assert.equal(reply.headers.has(1024), false);
    assert.equal(readBool(reply.headers.get(ChannelHeader.ResultSuccess)), true);
    const helloReply = asReplyTo(hello(), message(ChannelContentType.Result));
    assert.deepEqual(helloReply.headers.get(ChannelHeader.ReplyFor), Buffer.from([0xff, 0xff, 0xff, 0xff]));
  });

  it('a message without a 4-byte header 1 is no reply', () => {
    assert.equal(replyFor(message(2)), undefined);
    assert.equal(replyFor(message(2, '', [[ChannelHeader.ReplyFor, Buffer.from([1, 0])]])), undefined);
  });
});

describe('header values', () => {
  it('bools: only the byte 1 is true', () => {
    assert.equal(readBool(boolValue(true)), true);
    assert.equal(readBool(boolValue(false)), false);
    assert.equal(readBool(Buffer.from([2])), false);
    assert.equal(readBool(undefined), undefined);
  });

  it('fixed-size integers read only at their exact size', () => {
    assert.equal(readUint32(uint32Value(0xfffffffe)), 0xfffffffe);
    assert.equal(readUint32(Buffer.from([1, 2])), undefined);
    assert.equal(readUint64(uint64Value(2n ** 63n)), 2n ** 63n);
    assert.equal(readUint64(uint32Value(1)), undefined);
  });

  it('string lists and maps round trip and refuse lengths that overrun the value', () => {
    const list = ['tls:127.0.0.1:3022', '', 'ünïcode'];
    assert.deepEqual(readStringList(stringListValue(list)), list);
    assert.deepEqual(readStringList(Buffer.alloc(0)), []);
    const map = { instant: 'true', routerModel: 'true', '': 'empty key' };
    assert.deepEqual(readStringMap(stringMapValue(map)), map);
    const bad = stringListValue(['abc']);
    bad.writeUInt32LE(99, 4);
    assert.throws(() => readStringList(bad), ChannelProtocolError);
    assert.throws(() => readStringList(uint32Value(129)), ChannelProtocolError);
    assert.throws(() => stringListValue(Array.from({ length: 129 }, () => 'x')), ChannelProtocolError);
    const badMap = stringMapValue({ k: 'v' });
    badMap.writeUInt32LE(50, 9);
    assert.throws(() => readStringMap(badMap), ChannelProtocolError);
  });
});
