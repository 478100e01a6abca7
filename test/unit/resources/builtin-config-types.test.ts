/**
 * Specifies the built-in config types: the seven 0.27-era names with their fixed upstream ids, and for each schema
 * that it compiles as draft-07 and accepts a realistic config while rejecting a broken one. Validation is set up
 * the way upstream's validator behaves (docs/upstream/model.md §4.1): `idn-hostname` is accepted unchecked, so
 * wildcards and CIDRs are valid addresses, while ipv4/ipv6 and date formats are checked.
 */

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { builtinConfigTypes } from '../../../src/resources/config-types/builtin-config-types.ts';

function createConfigValidator(): Ajv {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addFormat('idn-hostname', true);
  return ajv;
}

const ajv = createConfigValidator();
const validators = new Map<string, ValidateFunction>(
  builtinConfigTypes.map((type) => [type.name, ajv.compile(type.schema)]),
);

function validatorFor(name: string): ValidateFunction {
  const validate = validators.get(name);
  assert.ok(validate, `no built-in config type ${name}`);
  return validate;
}

function assertValid(name: string, data: unknown): void {
  const validate = validatorFor(name);
  assert.ok(validate(data), `${name} rejected ${JSON.stringify(data)}: ${ajv.errorsText(validate.errors)}`);
}

/** Asserts rejection and that some error mentions `expected` (instance path, keyword or message). */
function assertInvalid(name: string, data: unknown, expected: RegExp): void {
  const validate = validatorFor(name);
  assert.equal(validate(data), false, `${name} accepted ${JSON.stringify(data)}`);
  const errors = (validate.errors ?? []).map((e) => `${e.instancePath} ${e.keyword} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
  assert.ok(errors.some((line) => expected.test(line)), `${name}: no error matches ${expected}:\n${errors.join('\n')}`);
}

const hostV1Sample = {
  protocol: 'tcp',
  address: 'localhost',
  port: 8080,
  listenOptions: { connectTimeout: '5s', maxConnections: 3, bindUsingEdgeIdentity: true, cost: 10, precedence: 'required' },
  portChecks: [{ address: 'localhost:8080', interval: '5s', timeout: '500ms', actions: [{ trigger: 'fail', consecutiveEvents: 3, action: 'mark unhealthy' }] }],
  httpChecks: [{ url: 'http://localhost:8080/health', method: 'GET', interval: '10s', timeout: '1s', expectStatus: 200, actions: [{ trigger: 'pass', action: 'increase cost 5' }] }],
};

describe('builtinConfigTypes', () => {
  it('lists the seven 0.27-era types with their fixed ids', () => {
    assert.deepEqual(
      builtinConfigTypes.map(({ id, name }) => [name, id]),
      [
        ['ziti-tunneler-client.v1', 'f2dd2df0-9c04-4b84-a91e-71437ac229f1'],
        ['ziti-tunneler-server.v1', 'cea49285-6c07-42cf-9f52-09a9b115c783'],
        ['intercept.v1', 'g7cIWbcGg'],
        ['host.v1', 'NH5p4FpGR'],
        ['host.v2', 'host.v2'],
        ['interfaces.v1', 'interfaces.v1'],
        ['proxy.v1', 'proxy.v1'],
      ],
    );
  });

  it('gives every schema a unique $id, an object root that forbids unknown fields, and JSON-safe content', () => {
    const ids = builtinConfigTypes.map((type) => type.schema.$id);
    assert.equal(new Set(ids).size, ids.length);
    for (const { name, schema } of builtinConfigTypes) {
      assert.match(String(schema.$id), /^https?:\/\/.+\.json$/, name);
      assert.equal(schema.type, 'object', name);
      assert.equal(schema.additionalProperties, false, name);
      assert.deepEqual(JSON.parse(JSON.stringify(schema)), schema, name);
    }
  });

  it('is frozen so no caller can alter a shared schema', () => {
    assert.ok(Object.isFrozen(builtinConfigTypes));
    const intercept = builtinConfigTypes.find((type) => type.name === 'intercept.v1');
    assert.ok(intercept && Object.isFrozen(intercept.schema) && Object.isFrozen(intercept.schema.properties));
  });
});

describe('ziti-tunneler-client.v1', () => {
  it('accepts hostname and port', () => assertValid('ziti-tunneler-client.v1', { hostname: 'db.internal', port: 5432 }));
  it('rejects a missing port', () => assertInvalid('ziti-tunneler-client.v1', { hostname: 'db.internal' }, /required.*port/));
  it('rejects an unknown field', () => assertInvalid('ziti-tunneler-client.v1', { hostname: 'h', port: 1, extra: true }, /additionalProperties/));
});

describe('ziti-tunneler-server.v1', () => {
  it('accepts hostname, port, protocol and health checks', () => {
    assertValid('ziti-tunneler-server.v1', { hostname: '10.0.0.5', port: 443, protocol: 'tcp', portChecks: hostV1Sample.portChecks });
  });
  it('rejects a port above 65535', () => assertInvalid('ziti-tunneler-server.v1', { hostname: 'h', port: 65536 }, /^\/port maximum/));
  it('rejects a null protocol, because the enum omits null (as upstream)', () => {
    assertInvalid('ziti-tunneler-server.v1', { hostname: 'h', port: 1, protocol: null }, /^\/protocol enum/);
  });
});

describe('intercept.v1', () => {
  it('accepts protocols, addresses (hostnames, wildcards, CIDRs) and port ranges', () => {
    assertValid('intercept.v1', {
      protocols: ['tcp', 'udp'],
      addresses: ['app.ziti', '*.example.com', '10.0.0.0/8', '1.2.3.4/56'],
      portRanges: [{ low: 80, high: 80 }, { low: 8000, high: 8100 }],
      dialOptions: { identity: '$dst_ip', connectTimeoutSeconds: 10 },
      sourceIp: '$src_ip:$src_port',
      allowedSourceAddresses: ['192.168.0.0/16'],
    });
  });
  it('rejects an unknown protocol', () => {
    assertInvalid('intercept.v1', { protocols: ['icmp'], addresses: ['a'], portRanges: [{ low: 1, high: 2 }] }, /^\/protocols\/0 enum/);
  });
  it('rejects an empty or duplicated address set and an empty address', () => {
    const base = { protocols: ['tcp'], portRanges: [{ low: 1, high: 2 }] };
    assertInvalid('intercept.v1', { ...base, addresses: [] }, /^\/addresses minItems/);
    assertInvalid('intercept.v1', { ...base, addresses: ['a', 'a'] }, /^\/addresses uniqueItems/);
    assertInvalid('intercept.v1', { ...base, addresses: [''] }, /^\/addresses\/0 not/);
  });
  it('rejects a port range without high', () => {
    assertInvalid('intercept.v1', { protocols: ['tcp'], addresses: ['a'], portRanges: [{ low: 1 }] }, /^\/portRanges\/0 required.*high/);
  });
});

describe('host.v1', () => {
  it('accepts a fixed protocol/address/port with listen options and health checks', () => assertValid('host.v1', hostV1Sample));
  it('accepts forwarding when the allowed lists are given', () => {
    assertValid('host.v1', {
      forwardProtocol: true,
      allowedProtocols: ['tcp'],
      forwardAddress: true,
      allowedAddresses: ['10.0.0.0/24', '*.corp.example'],
      forwardAddressTranslations: [{ from: '10.0.0.0', to: '192.168.0.0', prefixLength: 24 }],
      forwardPort: true,
      allowedPortRanges: [{ low: 1, high: 1024 }],
      proxy: { type: 'http', address: 'proxy.corp:3128' },
    });
  });
  it('rejects port 70000', () => assertInvalid('host.v1', { ...hostV1Sample, port: 70000 }, /^\/port maximum/));
  it('requires port unless forwardPort is set, and allowedPortRanges when it is', () => {
    const { port: _port, ...withoutPort } = hostV1Sample;
    assertInvalid('host.v1', withoutPort, /required.*"port"/);
    assertInvalid('host.v1', { ...withoutPort, forwardPort: true }, /required.*allowedPortRanges/);
  });
  it('rejects forwardAddress: false (only true is meaningful)', () => {
    assertInvalid('host.v1', { ...hostV1Sample, forwardAddress: false }, /^\/forwardAddress enum/);
  });
  it('rejects a malformed duration, health-check action and translation', () => {
    assertInvalid('host.v1', { ...hostV1Sample, listenOptions: { connectTimeout: 'soon' } }, /^\/listenOptions\/connectTimeout pattern/);
    assertInvalid('host.v1', { ...hostV1Sample, portChecks: [{ address: 'a:1', interval: '1s', timeout: '1s', actions: [{ trigger: 'fail', action: 'reboot' }] }] }, /actions\/0\/action pattern/);
    assertInvalid('host.v1', { ...hostV1Sample, forwardAddressTranslations: [{ from: 'not-an-ip', to: '10.0.0.1', prefixLength: 8 }] }, /forwardAddressTranslations\/0/);
  });
});

describe('host.v2', () => {
  it('accepts a list of host.v1-shaped terminators', () => {
    assertValid('host.v2', { terminators: [hostV1Sample, { protocol: 'udp', address: 'dns.internal', port: 53 }] });
  });
  it('rejects an empty terminator list and applies host.v1 rules to each entry', () => {
    assertInvalid('host.v2', { terminators: [] }, /^\/terminators minItems/);
    assertInvalid('host.v2', { terminators: [{ protocol: 'tcp', address: 'a', port: 70000 }] }, /^\/terminators\/0\/port maximum/);
  });
});

describe('interfaces.v1', () => {
  it('accepts a list of interface names', () => assertValid('interfaces.v1', { interfaces: ['eth0', 'tun0'] }));
  it('rejects a non-string interface', () => assertInvalid('interfaces.v1', { interfaces: [1] }, /^\/interfaces\/0 type/));
});

describe('proxy.v1', () => {
  it('accepts port, protocols and binding', () => assertValid('proxy.v1', { port: 8080, protocols: ['tcp'], binding: 'edge' }));
  it('rejects port 0 and an empty protocol list', () => {
    assertInvalid('proxy.v1', { port: 0, protocols: ['tcp'] }, /^\/port minimum/);
    assertInvalid('proxy.v1', { port: 8080, protocols: [] }, /^\/protocols minItems/);
  });
});
