/**
 * The router hello and the controller's result: what an upstream router sends is read, the result carries every
 * header the router checks before it binds, and the admission rule refuses unknown, unenrolled, re-enrolled
 * (other certificate) and disabled routers.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ChannelContentType,
  ChannelHeader,
  MessageDecoder,
  HELLO_LIMITS,
  boolValue,
  encodeMessage,
  message,
  readBool,
  readString,
  replyFor,
  stringValue,
  type ChannelMessage,
} from '../../../src/fabric/channel/message.ts';
import {
  HelloHeader,
  controllerCapabilities,
  helloAccepted,
  helloRefused,
  parseVersionHeader,
  readRouterHello,
  routerRefusal,
} from '../../../src/fabric/channel/hello.ts';

const ROUTER_VERSION = 'v2.0.0-pre3|a0c6f0dd|2026-03-06T16:10:46Z|linux|amd64';

/** A hello as an upstream router writes it on its first dial (headers 4, 1002, 9, 7, 11). */
function routerHello(extra: Array<[number, Buffer]> = []): ChannelMessage {
  const m = message(ChannelContentType.Hello, 'r1-id', [
    [ChannelHeader.HelloVersion, stringValue(ROUTER_VERSION)],
    [HelloHeader.RouterCapabilities, Buffer.from([0x02])],
    [ChannelHeader.IsGrouped, boolValue(true)],
    [ChannelHeader.Type, stringValue('ctrl.default')],
    [ChannelHeader.IsFirstGroupConnection, boolValue(true)],
    ...extra,
  ]);
  m.sequence = -1;
  return m;
}

const accept = {
  controllerId: 'ctrl-1',
  controllerVersion: { version: 'v2.0.0', revision: 'portcullis v0.1.0', buildDate: '2026-11-26T00:00:00Z', os: 'linux', arch: 'amd64' },
  connectionId: 'conn-1',
};

/** The result as the router receives it: encoded and decoded again. */
function overTheWire(m: ChannelMessage): ChannelMessage {
  const [decoded] = new MessageDecoder(HELLO_LIMITS).push(encodeMessage(m));
  return decoded!;
}

describe('the router hello', () => {
  it('is read as upstream routers write it', () => {
    const hello = readRouterHello(overTheWire(routerHello()));
    assert.ok(typeof hello !== 'string', String(hello));
    assert.equal(hello.routerId, 'r1-id');
    assert.deepEqual(hello.versionInfo, { version: 'v2.0.0-pre3', revision: 'a0c6f0dd', buildDate: '2026-03-06T16:10:46Z', os: 'linux', arch: 'amd64' });
    assert.equal(hello.isGrouped, true);
    assert.equal(hello.underlayType, 'ctrl.default');
    assert.equal(hello.groupSecret, undefined);
  });

  it('is refused without a five-field version, a router id, sequence -1 or the hello content type', () => {
    const noVersion = routerHello();
    noVersion.headers.delete(ChannelHeader.HelloVersion);
    assert.match(String(readRouterHello(noVersion)), /version/);
    assert.match(String(readRouterHello(routerHello([[ChannelHeader.HelloVersion, stringValue('v2.0.0|x|y')]]))), /version/);
    const noId = routerHello();
    noId.body = Buffer.alloc(0);
    assert.match(String(readRouterHello(noId)), /names no router/);
    const wrongSequence = routerHello();
    wrongSequence.sequence = 1;
    assert.match(String(readRouterHello(wrongSequence)), /sequence -1/);
    assert.match(String(readRouterHello({ ...routerHello(), contentType: ChannelContentType.Ping })), /expected a hello/);
  });

  it('parses version headers of exactly five fields', () => {
    assert.equal(parseVersionHeader('v1|2|3|4'), undefined);
    assert.equal(parseVersionHeader('v1|2|3|4|5|6'), undefined);
    assert.equal(parseVersionHeader(undefined), undefined);
    assert.equal(parseVersionHeader('v0.0.0||||')?.version, 'v0.0.0');
  });
});

describe('the controller result', () => {
  it('carries what the router checks: reply to -1, success, group secret, version, capabilities with JWT sessions', () => {
    const hello = routerHello([[128, Buffer.from('trace')]]);
    const router = readRouterHello(hello);
    assert.ok(typeof router !== 'string');
    const result = overTheWire(helloAccepted(hello, router, accept));
    assert.equal(result.contentType, ChannelContentType.Result);
    assert.equal(result.sequence, -1);
    assert.equal(replyFor(result), -1);
    assert.equal(readBool(result.headers.get(ChannelHeader.ResultSuccess)), true);
    assert.equal(result.headers.get(ChannelHeader.GroupSecret)?.length, 16);
    assert.equal(readString(result.headers.get(ChannelHeader.HelloVersion)), 'v2.0.0|portcullis v0.1.0|2026-11-26T00:00:00Z|linux|amd64');
    assert.equal(readString(result.headers.get(ChannelHeader.ConnectionId)), 'conn-1');
    assert.equal(readString(result.headers.get(ChannelHeader.Id)), 'ctrl-1');
    assert.equal(readString(result.headers.get(ChannelHeader.Type)), 'ctrl.default');
    assert.equal(readBool(result.headers.get(ChannelHeader.IsGrouped)), true);
    assert.deepEqual(result.headers.get(128), Buffer.from('trace'));
    const caps = result.headers.get(HelloHeader.RouterCapabilities)!;
    assert.deepEqual(caps, result.headers.get(HelloHeader.LegacyCapabilities));
    const bit = (n: number) => (caps[caps.length - 1 - (n >> 3)]! >> (n & 7)) & 1;
    assert.equal(bit(6), 1, 'JWT legacy sessions: routers refuse to bind without it');
    assert.equal(bit(5), 0, 'no grouped control channel: one TCP connection per router');
    for (const n of [1, 2, 3, 4]) assert.equal(bit(n), 1, `capability ${n}`);
    assert.deepEqual(controllerCapabilities(), Buffer.from([0x5e]));
  });

  it('echoes the group secret of a re-dial unchanged', () => {
    const secret = Buffer.from('0123456789abcdef');
    const hello = routerHello([[ChannelHeader.GroupSecret, secret], [ChannelHeader.ConnectionId, stringValue('conn-1-2')]]);
    const router = readRouterHello(hello);
    assert.ok(typeof router !== 'string');
    assert.deepEqual(overTheWire(helloAccepted(hello, router, accept)).headers.get(ChannelHeader.GroupSecret), secret);
  });

  it('a refusal is an unsuccessful result whose body says why', () => {
    const result = overTheWire(helloRefused(routerHello(), 'unknown router r1-id'));
    assert.equal(replyFor(result), -1);
    assert.equal(readBool(result.headers.get(ChannelHeader.ResultSuccess)), false);
    assert.equal(result.body.toString(), 'unknown router r1-id');
  });
});

describe('router admission', () => {
  const print = 'ab'.repeat(20);
  it('admits an enrolled, enabled router presenting its enrolled certificate', () => {
    assert.equal(routerRefusal('r1', print, { fingerprint: print, disabled: false }), undefined);
    assert.equal(routerRefusal('r1', print.toUpperCase(), { fingerprint: print, disabled: false }), undefined);
  });

  it('refuses unknown, unenrolled, re-enrolled (another certificate) and disabled routers, saying why', () => {
    assert.match(String(routerRefusal('r1', print, undefined)), /unknown router r1/);
    assert.match(String(routerRefusal('r1', print, { fingerprint: null, disabled: false })), /not enrolled/);
    assert.match(String(routerRefusal('r1', print, { fingerprint: 'cd'.repeat(20), disabled: false })), /not enrolled with/);
    assert.match(String(routerRefusal('r1', print, { fingerprint: print, disabled: true })), /disabled/);
  });
});
