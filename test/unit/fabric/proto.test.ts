/**
 * The control-plane protobuf codec: every message round-trips with every field set, a few encodings are pinned
 * to hand-computed protobuf bytes (field numbers, packing, oneof tags, 64-bit varints, peer-data map entries),
 * absent fields decode to proto3 defaults, and malformed bodies fail with ProtoDecodeError only.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  PROTO_TYPE_NAMES,
  PeerDataKey,
  ProtoDecodeError,
  ctrl,
  decode,
  edge,
  encode,
  type ProtoMessageName,
  type ProtoMessages,
} from '../../../src/fabric/proto/index.ts';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const buf = (s: string) => Buffer.from(s, 'utf8');
const U64_MAX = 2n ** 64n - 1n;

const linkConnState: ctrl.LinkConnState = { stateIteration: 3, conns: [{ type: 'ack', localAddr: 'tcp:10.0.0.1:1', remoteAddr: 'tcp:10.0.0.2:2' }] };
const ctrlListener: ctrl.Listener = { address: 'tls:0.0.0.0:6004', protocol: 'tls', costTags: ['cheap'], groups: ['default'], localBinding: 'eth0' };
const terminator: ctrl.Terminator = { id: 't1', binding: 'edge', address: 'hosted:abc', marker: 42n };
const terminatorState: ctrl.RouterTerminatorState = { valid: true, reason: ctrl.TerminatorInvalidReason.BadState, detail: 'gone', marker: U64_MAX };
const context: ctrl.Context = { fields: { trace: 'on' }, channelMask: 3 };
const peerData = new Map<number, Uint8Array>([
  [PeerDataKey.PublicKey, Buffer.from([0xaa, 0xbb])],
  [0, buf('zero key')],
  [PeerDataKey.AppData, Buffer.alloc(0)],
  [0xffffffff, buf('top key')],
]);
const peerStateChange: ctrl.PeerStateChange = { id: 'ctrl2', version: 'v2.0.0', state: ctrl.PeerState.Removed, listeners: [ctrlListener] };
const iface: ctrl.Interface = { name: 'eth0', hardwareAddress: 'aa:bb:cc', mtu: 1500n, index: -1n, flags: 2n ** 63n, addresses: ['10.0.0.1/24'] };

const address: edge.Address = { value: 'tls:er1:3022', protocol: 'tls', hostname: 'er1', port: 3022 };
const edgeListener: edge.Listener = { address, advertise: { ...address, hostname: 'er1.example', port: 443 } };
const cache: edge.Cache = { data: { t1: buf('instance') } };
const apiSession: edge.ApiSession = { token: 'tok', certFingerprints: ['fp1', 'fp2'], id: 'as1', identityId: 'id1' };
const process1: edge.PostureCheckProcess = { osType: 'Linux', path: '/bin/app', hashes: ['h'], fingerprints: ['f'] };
const check = (typeId: string, subtype: Partial<edge.DataStatePostureCheck>): edge.DataStateEvent => ({
  action: edge.DataStateAction.Update,
  isSynthetic: true,
  postureCheck: { id: `pc-${typeId}`, name: typeId, typeId, ...subtype },
});
/** One event per member of Event's `model` oneof, and one per member of PostureCheck's `subtype` oneof. */
const events: edge.DataStateEvent[] = [
  {
    action: edge.DataStateAction.Update,
    isSynthetic: true,
    identity: {
      id: 'id1',
      name: 'alice',
      defaultHostingPrecedence: edge.TerminatorPrecedence.Required,
      defaultHostingCost: 10,
      serviceHostingPrecedences: { s1: edge.TerminatorPrecedence.Failed },
      serviceHostingCosts: { s1: 5 },
      appDataJson: buf('{"a":1}'),
      serviceConfigs: { s1: { configs: { ct1: 'cfg1' } } },
      disabled: true,
    },
  },
  { action: edge.DataStateAction.Delete, isSynthetic: true, service: { id: 's1', name: 'web', encryptionRequired: true, configs: ['cfg1'] } },
  { action: edge.DataStateAction.Update, isSynthetic: true, servicePolicy: { id: 'sp1', name: 'dial-web', policyType: edge.PolicyType.Bind } },
  check('MAC', { mac: { macAddresses: ['aa:bb'] } }),
  check('MFA', { mfa: { timeoutSeconds: 300n, promptOnWake: true, promptOnUnlock: true, ignoreLegacyEndpoints: true } }),
  check('OS', { osList: { osList: [{ osType: 'Windows', osVersions: ['>=10'] }] } }),
  check('PROCESS', { process: process1 }),
  check('PROCESS_MULTI', { processMulti: { semantic: 'AllOf', processes: [process1] } }),
  check('DOMAIN', { domains: { domains: ['corp.example'] } }),
  {
    action: edge.DataStateAction.Update,
    isSynthetic: true,
    publicKey: {
      data: Buffer.from([0x30, 0x82]),
      kid: 'kid1',
      usages: [edge.PublicKeyUsage.JWTValidation, edge.PublicKeyUsage.ClientX509CertValidation],
      format: edge.PublicKeyFormat.PKIXPublicKey,
    },
  },
  { action: edge.DataStateAction.Update, isSynthetic: true, revocation: { id: 'jti1', expiresAt: { seconds: 1_700_000_000n, nanos: 5 }, type: 'API_SESSION', issuedBefore: { seconds: 1_699_999_000n, nanos: 7 } } },
  {
    action: edge.DataStateAction.Update,
    isSynthetic: true,
    servicePolicyChange: {
      policyId: 'sp1',
      relatedEntityIds: ['s1'],
      relatedEntityType: edge.ServicePolicyRelatedEntityType.RelatedPostureCheck,
      add: true,
    },
  },
  { action: edge.DataStateAction.Update, isSynthetic: true, configType: { id: 'ct1', name: 'intercept.v1' } },
  { action: edge.DataStateAction.Update, isSynthetic: true, config: { id: 'cfg1', typeId: 'ct1', name: 'web-intercept', dataJson: '{}' } },
];

/** A sample of every message the codec knows, with no field left at its default (checked below). */
const samples: { [K in ProtoMessageName]: ProtoMessages[K] } = {
  'ctrl.Settings': { data: new Map([[1, buf('a')], [-5, buf('b')]]) },
  'ctrl.CircuitConfirmation': { circuitIds: ['c1', 'c2'], idleTimes: { c1: 5_000_000_000n, c2: 1n } },
  'ctrl.RemoveTerminatorsRequest': { terminatorIds: ['t1', 't2'] },
  'ctrl.Terminator': terminator,
  'ctrl.ValidateTerminatorsV2Request': { terminators: [terminator], fixInvalid: true },
  'ctrl.RouterTerminatorState': terminatorState,
  'ctrl.ValidateTerminatorsV2Response': { states: { t1: terminatorState } },
  'ctrl.LinkConn': linkConnState.conns[0]!,
  'ctrl.LinkConnState': linkConnState,
  'ctrl.RouterLinks': {
    links: [{ id: 'l1', destRouterId: 'r2', linkProtocol: 'tls', linkCostTags: ['a'], dialAddress: 'tls:r2:6004', iteration: 2, connState: linkConnState }],
    fullRefresh: true,
  },
  'ctrl.Fault': { subject: ctrl.FaultSubject.LinkDuplicate, id: 'l1', iteration: 7 },
  'ctrl.Context': context,
  'ctrl.Route': {
    circuitId: 'c1',
    attempt: 2,
    egress: { binding: 'edge', address: 't1', destination: 'hosted:abc', peerData },
    forwards: [
      { srcAddress: 'ingress1', dstAddress: 'l1', dstType: ctrl.DestType.Link },
      { srcAddress: 'l1', dstAddress: 't1', dstType: ctrl.DestType.End },
    ],
    context,
    timeout: 10_000_000_000n,
    tags: { k: 'v' },
  },
  'ctrl.Unroute': { circuitId: 'c1', now: true },
  'ctrl.InspectRequest': { requestedValues: ['stackdump'] },
  'ctrl.InspectResponse': { success: true, errors: ['e'], values: [{ name: 'n', value: 'v' }] },
  'ctrl.VerifyRouter': { routerId: 'r1', fingerprints: ['ab12'] },
  'ctrl.Listener': ctrlListener,
  'ctrl.Listeners': { listeners: [ctrlListener, { ...ctrlListener, protocol: 'dtls' }] },
  'ctrl.UpdateCtrlAddresses': {
    addresses: ['tls:ctrl:6262'],
    index: 9n,
    isLeader: true,
    controllers: [{ id: 'ctrl1', endpoints: [{ address: 'tls:ctrl:6262', groups: ['default'] }] }],
  },
  'ctrl.UpdateClusterLeader': { index: 10n },
  'ctrl.PeerStateChange': peerStateChange,
  'ctrl.PeerStateChanges': { changes: [peerStateChange] },
  'ctrl.Interface': iface,
  'ctrl.RouterInterfacesUpdate': { interfaces: [iface] },
  'ctrl.LinkStateUpdate': { linkId: 'l1', linkIteration: 4, connState: linkConnState },
  'ctrl.Alerts': {
    alerts: [{
      sourceType: 'router',
      sourceId: 'r1',
      timestamp: 1_700_000_000_000n,
      severity: 'error',
      message: 'm',
      details: ['d'],
      relatedEntities: { service: 's1' },
    }],
  },
  'ctrl.UpdateTerminatorRequest': { terminatorId: 't1', updatePrecedence: true, updateCost: true, precedence: ctrl.TerminatorPrecedence.Failed, cost: 100 },
  'metrics.MetricsMessage': {
    sourceId: 'r1',
    histograms: { 'link.l1.latency': { count: 12n, max: 900_000n, mean: 412_345.5, min: 100_000n } },
  },
  'edge.ServerHello': { version: 'v2.0.0', data: { a: 'b' }, byteData: { k: Buffer.from([1, 2, 3]) } },
  'edge.ClientHello': {
    version: 'v2.0.0',
    hostname: 'er1',
    protocols: ['tls'],
    data: { x: 'y' },
    protocolPorts: ['tls:3022'],
    listeners: [edgeListener],
  },
  'edge.Address': address,
  'edge.Listener': edgeListener,
  'edge.Cache': cache,
  'edge.DataState': { events, endIndex: 77n, timelineId: 'tl1', caches: { terminatorIds: cache } },
  'edge.DataState.Event': events[0]!,
  'edge.DataState.ChangeSet': { index: 78n, isSynthetic: true, changes: events.slice(0, 3), timestampId: 'ts1', previousIndex: 77n },
  'edge.ApiSession': apiSession,
  'edge.ApiSessionAdded': { isFullState: true, apiSessions: [apiSession, { ...apiSession, id: 'as2' }] },
  'edge.ApiSessionUpdated': { apiSessions: [apiSession] },
  'edge.ApiSessionRemoved': { tokens: ['tok'], ids: ['as1'] },
  'edge.ApiSessionHeartbeat': { tokens: ['tok'] },
  'edge.SessionRemoved': { tokens: ['st'], ids: ['s1'] },
  'edge.RequestClientReSync': { reason: 'gap' },
  'edge.CreateTerminatorV2Request': {
    address: 'hosted:abc',
    sessionToken: 'jwt',
    fingerprints: ['fp'],
    peerData,
    cost: 7,
    precedence: edge.TerminatorPrecedence.Required,
    instanceId: 'i1',
    instanceSecret: Buffer.from([9, 9]),
    apiSessionToken: 'tok',
  },
  'edge.CreateTerminatorV2Response': {
    terminatorId: 't1',
    result: edge.CreateTerminatorResult.FailedInvalidSession,
    msg: 'no',
    errorCode: 4,
    retryHint: edge.RetryHint.NotRetriable,
  },
  'edge.CreateTunnelTerminatorRequestV2': {
    serviceId: 's1',
    address: 't1',
    peerData: new Map([[1003, buf('key')]]),
    cost: 3,
    precedence: edge.TerminatorPrecedence.Required,
    instanceId: 'i1',
    instanceSecret: buf('secret'),
    startTime: 1700000000000n,
  },
  'edge.CreateTunnelTerminatorResponseV2': {
    terminatorId: 't1',
    startTime: 1700000000000n,
    result: edge.CreateTerminatorResult.FailedBusy,
    msg: 'busy',
    errorCode: 8,
    retryHint: edge.RetryHint.TooBusy,
  },
  'edge.UpdateTunnelTerminatorRequest': { terminatorId: 't1', cost: 4, precedence: edge.TerminatorPrecedence.Failed, updatePrecedence: true, updateCost: true },
  'edge.RemoveTerminatorRequest': { sessionToken: 'jwt', fingerprints: ['fp'], terminatorId: 't1', apiSessionToken: 'tok' },
  'edge.UpdateTerminatorRequest': {
    sessionToken: 'jwt',
    fingerprints: ['fp'],
    terminatorId: 't1',
    cost: 3,
    precedence: edge.TerminatorPrecedence.Failed,
    updatePrecedence: true,
    updateCost: true,
    apiSessionToken: 'tok',
  },
  'edge.HealthEventRequest': { sessionToken: 'jwt', fingerprints: ['fp'], terminatorId: 't1', checkPassed: true, apiSessionToken: 'tok' },
  'edge.ValidateSessionsRequest': { sessionTokens: ['a', 'b'] },
  'edge.ConnectEvents': {
    events: [{ identityId: 'id1', isConnected: true, connectTimes: [{ connectTime: 1_700_000_000_123n, srcAddr: '1.2.3.4:5', dstAddr: '5.6.7.8:443' }] }],
    fullState: true,
  },
  'edge.SubscribeToDataModelRequest': { currentIndex: 5n, subscriptionDurationSeconds: 300, renew: true, timelineId: 'tl1', subscriptionId: 'sub1' },
};

/** Fails on any field (at any depth) left at its proto3 default, so a round trip really carries every field. */
function assertNothingDefault(value: unknown, path: string): void {
  if (value === undefined) return; // an unset oneof member or optional sub-message; the samples above set them
  if (value instanceof Uint8Array) return assert.ok(value.length > 0 || path.includes('peerData'), `${path} is empty bytes`);
  if (value instanceof Map) {
    assert.ok(value.size > 0, `${path} is an empty map`);
    for (const [k, v] of value) if (typeof v === 'object') assertNothingDefault(v, `${path}[${k}]`);
    return;
  }
  if (Array.isArray(value)) {
    assert.ok(value.length > 0, `${path} is an empty list`);
    value.forEach((v, i) => typeof v === 'object' && assertNothingDefault(v, `${path}[${i}]`));
    return;
  }
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value);
    assert.ok(entries.length > 0, `${path} is an empty object`);
    for (const [k, v] of entries) assertNothingDefault(v, `${path}.${k}`);
    return;
  }
  assert.ok(value !== '' && value !== 0 && value !== 0n && value !== false, `${path} is a default (${String(value)})`);
}

describe('round trips', () => {
  for (const name of Object.keys(PROTO_TYPE_NAMES) as ProtoMessageName[]) {
    it(`${name} decodes to what was encoded`, () => {
      const sample = samples[name];
      assertNothingDefault(sample, name);
      const bytes = encode(name, sample as never);
      assert.ok(Buffer.isBuffer(bytes));
      assert.deepEqual(decode(name, bytes), sample);
    });
  }

  it('carries peer data keys as numbers, including 0 and 2^32-1, and empty values', () => {
    const body = encode('edge.CreateTerminatorV2Request', { address: 'a', peerData });
    const got = decode('edge.CreateTerminatorV2Request', body).peerData;
    assert.ok(got instanceof Map);
    assert.deepEqual([...got.keys()].sort((a, b) => a - b), [0, 1003, 1011, 0xffffffff]);
    assert.deepEqual(got.get(PeerDataKey.PublicKey), Buffer.from([0xaa, 0xbb]));
    assert.deepEqual(got.get(PeerDataKey.AppData), Buffer.alloc(0));
  });

  it('reads a plain Uint8Array as well as a Buffer, and copies bytes out of the input', () => {
    const body = encode('edge.Cache', cache);
    const view = new Uint8Array(body);
    const got = decode('edge.Cache', view);
    assert.deepEqual(got, cache);
    view.fill(0);
    assert.deepEqual(got.data.t1, buf('instance'));
  });
});

describe('wire bytes', () => {
  it('Unroute{circuitId: c1, now: true}', () => {
    assert.deepEqual(encode('ctrl.Unroute', { circuitId: 'c1', now: true }), hex('0a 02 63 31 10 01'));
  });

  it('leaves defaults off the wire and fills them back in on decode', () => {
    assert.deepEqual(encode('ctrl.Unroute', { circuitId: 'c1', now: false }), hex('0a 02 63 31'));
    assert.equal(encode('ctrl.Route', { attempt: 0, forwards: [], tags: {}, timeout: 0n }).length, 0);
    assert.deepEqual(decode('ctrl.Route', Buffer.alloc(0)), { circuitId: '', attempt: 0, forwards: [], timeout: 0n, tags: {} });
    assert.deepEqual(decode('ctrl.Route', hex('1a 00')).egress, { binding: '', address: '', destination: '', peerData: new Map() });
  });

  it('Fault with subject EgressFault', () => {
    const bytes = encode('ctrl.Fault', { subject: ctrl.FaultSubject.EgressFault, id: 'l1', iteration: 3 });
    assert.deepEqual(bytes, hex('08 01 12 02 6c 31 18 03'));
  });

  it('ApiSessionAdded as full state with one session', () => {
    const bytes = encode('edge.ApiSessionAdded', {
      isFullState: true,
      apiSessions: [{ token: 't', certFingerprints: ['f'], id: 'a', identityId: 'i' }],
    });
    assert.deepEqual(bytes, hex('08 01  12 0c  0a 01 74  12 01 66  1a 01 61  22 01 69'));
  });

  it('CreateTerminatorV2Response', () => {
    const bytes = encode('edge.CreateTerminatorV2Response', {
      terminatorId: 't1',
      result: edge.CreateTerminatorResult.FailedBusy,
      msg: 'busy',
      errorCode: 7,
      retryHint: edge.RetryHint.TooBusy,
    });
    assert.deepEqual(bytes, hex('0a 02 74 31  10 03  1a 04 62 75 73 79  20 07  28 01'));
  });

  it('a DataState event with a PublicKey in oneof field 14 (usages packed)', () => {
    const bytes = encode('edge.DataState', {
      events: [{
        action: edge.DataStateAction.Create,
        publicKey: {
          data: Buffer.from([1, 2]),
          kid: 'k',
          usages: [edge.PublicKeyUsage.JWTValidation, edge.PublicKeyUsage.ClientX509CertValidation],
          format: edge.PublicKeyFormat.PKIXPublicKey,
        },
      }],
      endIndex: 5n,
    });
    // DataState.events(1) → Event.publicKey(14, tag 0x72) → data(1) kid(2) usages(3, packed) format(4); endIndex(2)
    assert.deepEqual(bytes, hex('0a 0f  72 0d  0a 02 01 02  12 01 6b  1a 02 00 01  20 01  10 05'));
  });

  it('oneof members 15 and 16 (two-byte tag), with a Timestamp inside the revocation', () => {
    const revocation = encode('edge.DataState.Event', { action: edge.DataStateAction.Delete, revocation: { id: 'r', expiresAt: { seconds: 1n } } });
    assert.deepEqual(revocation, hex('08 02  7a 07  0a 01 72  12 02 08 01'));
    const change = encode('edge.DataState.Event', {
      action: edge.DataStateAction.Update,
      servicePolicyChange: { policyId: 'p', relatedEntityIds: ['s'], relatedEntityType: edge.ServicePolicyRelatedEntityType.RelatedService, add: true },
    });
    assert.deepEqual(change, hex('08 01  82 01 0a  0a 01 70  12 01 73  18 01  20 01'));
  });

  it('a peer data entry of Route.Egress (map<uint32,bytes>: key varint, value bytes)', () => {
    const bytes = encode('ctrl.Route', { egress: { peerData: new Map([[PeerDataKey.PublicKey, Buffer.from([0xaa])]]) } });
    assert.deepEqual(bytes, hex('1a 08  22 06  08 eb 07  12 01 aa'));
  });

  it('64-bit values as ten-byte varints: int64 -1 and uint64 max', () => {
    assert.deepEqual(encode('ctrl.Interface', { mtu: -1n }), hex('18 ff ff ff ff ff ff ff ff ff 01'));
    assert.deepEqual(encode('ctrl.Terminator', { marker: U64_MAX }), hex('20 ff ff ff ff ff ff ff ff ff 01'));
    assert.equal(decode('ctrl.Interface', hex('18 ff ff ff ff ff ff ff ff ff 01')).mtu, -1n);
    assert.equal(decode('ctrl.Terminator', hex('20 ff ff ff ff ff ff ff ff ff 01')).marker, U64_MAX);
  });
});

describe('forward compatibility', () => {
  it('skips unknown fields, including groups', () => {
    const withUnknown = hex('0a 02 63 31  98 06 01  a2 06 01 ff  10 01  ab 06 08 01 ac 06'); // fields 99, 100, 101 (group)
    assert.deepEqual(decode('ctrl.Unroute', withUnknown), { circuitId: 'c1', now: true });
  });

  it('a router\'s metrics: sender and histograms read, the fields the controller does not read skipped', () => {
    // eventId "e" (1), sourceId "r" (2), intValues {"k": 7} (5, unread), histograms {"link.x.latency": {mean: 2.5e6}} (8)
    const body = hex('0a 01 65  12 01 72  2a 05 0a 01 6b 10 07  42 1b 0a 0e 6c 69 6e 6b 2e 78 2e 6c 61 74 65 6e 63 79  12 09 19 00 00 00 00 d0 12 43 41');
    assert.deepEqual(decode('metrics.MetricsMessage', body), {
      sourceId: 'r',
      histograms: { 'link.x.latency': { count: 0n, max: 0n, mean: 2_500_000, min: 0n } },
    });
  });

  it('keeps the last member of a oneof seen on the wire', () => {
    const two = hex('8a 01 04 0a 02 63 74  5a 03 0a 01 73'); // configType (17) then service (11)
    const event = decode('edge.DataState.Event', two);
    assert.equal(event.configType, undefined);
    assert.deepEqual(event.service, { id: 's', name: '', encryptionRequired: false, configs: [] });
  });

  it('keeps a map key named __proto__ as an ordinary own key', () => {
    const data = JSON.parse('{"__proto__": "x", "a": "b"}') as Record<string, string>;
    const got = decode('edge.ServerHello', encode('edge.ServerHello', { data })).data;
    assert.equal(Object.getPrototypeOf(got), Object.prototype);
    assert.deepEqual(Object.entries(got), [['__proto__', 'x'], ['a', 'b']]);
  });

  it('passes an enum value it does not know through as its number', () => {
    assert.equal(decode('ctrl.Fault', hex('08 09')).subject, 9);
  });
});

describe('malformed input', () => {
  const refused = (name: ProtoMessageName, bytes: Uint8Array) => assert.throws(() => decode(name, bytes), ProtoDecodeError);

  it('refuses truncated strings, varints and sub-messages', () => {
    refused('ctrl.Unroute', hex('0a 05 63'));
    refused('ctrl.Unroute', hex('10'));
    refused('ctrl.Route', hex('1a 10 0a'));
    refused('ctrl.Route', hex('1a 04 22 06 08 eb')); // map entry longer than its egress
    refused('edge.DataState', hex('0a 04 72 08 0a 01'));
  });

  it('refuses invalid wire types, over-long varints and stray group ends', () => {
    refused('ctrl.Unroute', hex('0f'));
    refused('ctrl.Unroute', hex('0e 00'));
    refused('ctrl.Fault', hex('08 ff ff ff ff ff ff ff ff ff ff ff 01'));
    refused('ctrl.Unroute', hex('0c'));
  });

  it('throws nothing but ProtoDecodeError for any prefix or byte flip of a valid body, or random bytes', () => {
    let seed = 12345;
    const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x80000000;
    const tryDecode = (name: ProtoMessageName, bytes: Uint8Array) => {
      try {
        decode(name, bytes);
      } catch (err) {
        assert.ok(err instanceof ProtoDecodeError, `${name} ${Buffer.from(bytes).toString('hex')}: ${String(err)}`);
      }
    };
    for (const name of ['edge.DataState', 'ctrl.Route', 'edge.ClientHello', 'edge.CreateTerminatorV2Request'] as const) {
      const good = encode(name, samples[name] as never);
      for (let end = 0; end < good.length; end++) tryDecode(name, good.subarray(0, end));
      for (let i = 0; i < 2000; i++) {
        const bad = Buffer.from(good);
        bad[Math.floor(random() * bad.length)] = Math.floor(random() * 256);
        tryDecode(name, bad);
      }
      for (let i = 0; i < 500; i++) tryDecode(name, Buffer.from(Array.from({ length: Math.floor(random() * 64) }, () => Math.floor(random() * 256))));
    }
  });
});
