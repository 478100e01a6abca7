/**
 * The config types a fresh 0.27-era controller creates, with their fixed ids and JSON Schemas (draft-07 keywords,
 * each root carrying the `$id` upstream uses). Tunnelers, the `ziti` CLI and the admin console look these types up
 * by name or id and build configs (and forms) from the schemas, so ids, names, field names, bounds and
 * requiredness follow upstream (docs/upstream/model.md §3.15, §4.3); the schema text itself is written here from
 * those facts. Reusable pieces are inlined by small builder functions instead of `definitions` + `$ref`, so every
 * schema is self-contained. Validation of config data must register `idn-hostname` as an always-true format
 * (upstream's validator ignores it, which is what lets wildcards and CIDRs through as addresses) and check `ipv4`,
 * `ipv6`. Not included: `router.link.v1` (HEAD-only) and `host-interfaces.v1` (only on upgraded databases).
 */

export interface BuiltinConfigType {
  id: string;
  name: string;
  schema: Record<string, unknown>;
}

type JsonSchema = Record<string, unknown>;

const MAX_PORT = 65535;
const MAX_INT32 = 2147483647;

// ---------------------------------------------------------------------------------------------------------------
// Shared building blocks. Each call returns a fresh object, so no two schemas share a node.

function withDescription(schema: JsonSchema, description?: string): JsonSchema {
  return description === undefined ? schema : { ...schema, description };
}

/** A Go-style duration such as `5s`, `250ms`, `1h`. Unanchored, as upstream: it only has to contain one. */
function duration(description?: string): JsonSchema {
  return withDescription({ type: 'string', pattern: '[0-9]+(h|m|s|ms)' }, description);
}

function portNumber(description?: string): JsonSchema {
  return withDescription({ type: 'integer', minimum: 0, maximum: MAX_PORT }, description);
}

function portRange(): JsonSchema {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['low', 'high'],
    properties: { low: portNumber(), high: portNumber() },
  };
}

function protocolName(description?: string): JsonSchema {
  return withDescription({ type: 'string', enum: ['tcp', 'udp'] }, description);
}

/**
 * An intercept or allowed address: hostname, wildcard domain (`*.example.com`), IP or CIDR. `idn-hostname` is an
 * annotation only; clients decide what the string means.
 */
function listenAddress(description?: string): JsonSchema {
  return withDescription({ type: 'string', minLength: 1, format: 'idn-hostname' }, description);
}

/** A hostname or IP address a hosting tunneler dials. */
function dialAddress(description?: string): JsonSchema {
  return withDescription({ type: 'string', minLength: 1, format: 'idn-hostname' }, description);
}

/** A non-empty list without duplicates. */
function setOf(items: JsonSchema, description?: string): JsonSchema {
  return withDescription({ type: 'array', minItems: 1, uniqueItems: true, items }, description);
}

function timeoutSeconds(description?: string): JsonSchema {
  return withDescription({ type: 'integer', minimum: 0, maximum: MAX_INT32 }, description);
}

// ---------------------------------------------------------------------------------------------------------------
// Health checks (ziti-tunneler-server.v1, host.v1, host.v2)

function healthCheckAction(): JsonSchema {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['trigger', 'action'],
    properties: {
      trigger: { type: 'string', enum: ['fail', 'pass', 'change'] },
      consecutiveEvents: { type: 'integer', minimum: 0, maximum: MAX_PORT },
      duration: duration(),
      action: {
        type: 'string',
        pattern: '(mark (un)?healthy|increase cost [0-9]+|decrease cost [0-9]+|send event)',
        description: "One of 'mark healthy', 'mark unhealthy', 'increase cost N', 'decrease cost N', 'send event'",
      },
    },
  };
}

function healthCheckActions(): JsonSchema {
  return { type: 'array', minItems: 1, maxItems: 20, items: healthCheckAction() };
}

function portCheck(): JsonSchema {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['interval', 'timeout', 'address'],
    properties: {
      interval: duration(),
      timeout: duration(),
      address: { type: 'string', description: 'host:port to open a TCP connection to' },
      actions: healthCheckActions(),
    },
  };
}

function httpCheck(): JsonSchema {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['interval', 'timeout', 'url'],
    properties: {
      url: { type: 'string' },
      method: { type: 'string', enum: ['GET', 'POST', 'PUT', 'PATCH'] },
      body: { type: 'string' },
      interval: duration(),
      timeout: duration(),
      actions: healthCheckActions(),
      expectStatus: { type: 'integer', minimum: 100, maximum: 599 },
      expectInBody: { type: 'string' },
    },
  };
}

function healthCheckProperties(): JsonSchema {
  return {
    portChecks: { type: 'array', items: portCheck(), description: 'TCP connect checks run by the hosting tunneler' },
    httpChecks: { type: 'array', items: httpCheck(), description: 'HTTP checks run by the hosting tunneler' },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Hosting (host.v1, and each terminator of host.v2)

function proxyConfiguration(): JsonSchema {
  return {
    type: 'object',
    required: ['type', 'address'],
    properties: {
      type: { type: 'string', enum: ['http'], description: 'Proxy protocol' },
      address: { type: 'string', description: 'Proxy address as host:port' },
    },
    description: 'Send outgoing connections through this proxy',
  };
}

function addressTranslation(): JsonSchema {
  const family = (format: 'ipv4' | 'ipv6', maxPrefix: number): JsonSchema => ({
    type: 'object',
    additionalProperties: false,
    properties: {
      from: { type: 'string', format },
      to: { type: 'string', format },
      prefixLength: { type: 'integer', minimum: 0, maximum: maxPrefix },
    },
  });
  return { oneOf: [family('ipv4', 32), family('ipv6', 128)] };
}

function listenOptions(): JsonSchema {
  return {
    type: 'object',
    additionalProperties: false,
    properties: {
      connectTimeoutSeconds: timeoutSeconds('Deprecated, use connectTimeout. Outbound connect timeout in seconds (default 5)'),
      connectTimeout: duration("Outbound connect timeout (default '5s'); wins over connectTimeoutSeconds"),
      maxConnections: { type: 'integer', minimum: 1, description: 'Default 3' },
      identity: {
        type: 'string',
        description: "Terminator identity; may use '$tunneler_id.name' or '$tunneler_id.tag[name]'",
      },
      bindUsingEdgeIdentity: { type: 'boolean', description: "Same as identity '$tunneler_id.name'" },
      cost: { type: 'integer', minimum: 0, maximum: MAX_PORT, description: 'Default 0' },
      precedence: { type: 'string', enum: ['default', 'required', 'failed'], description: "Default 'default'" },
    },
  };
}

/** `forward<X>: true` means "use what the client intercepted, limited to <allowed>"; otherwise <fixed> is required. */
function forwardOrFixed(forwardFlag: string, allowedList: string, fixedField: string): JsonSchema {
  return {
    if: { properties: { [forwardFlag]: { const: true } }, required: [forwardFlag] },
    then: { required: [allowedList] },
    else: { required: [fixedField] },
  };
}

/** The host.v1 body without `$id`; also the shape of one host.v2 terminator. */
function hostingTerminator(): JsonSchema {
  const forwardOnly = (what: string) => ({ type: 'boolean', enum: [true], description: `Dial the ${what} the client intercepted` });
  return {
    type: 'object',
    additionalProperties: false,
    properties: {
      ...healthCheckProperties(),
      protocol: protocolName('Protocol to dial'),
      forwardProtocol: forwardOnly('protocol'),
      allowedProtocols: setOf(protocolName(), 'Protocols that may be forwarded'),
      address: dialAddress('Hostname or IP address to dial'),
      forwardAddress: forwardOnly('address'),
      allowedAddresses: setOf(listenAddress(), 'Addresses that may be forwarded'),
      forwardAddressTranslations: setOf(addressTranslation(), 'Rewrite forwarded addresses'),
      port: portNumber('Port to dial'),
      forwardPort: forwardOnly('port'),
      allowedPortRanges: setOf(portRange(), 'Ports that may be forwarded'),
      allowedSourceAddresses: setOf(listenAddress(), 'Source addresses the hosting tunneler routes locally so binds succeed'),
      proxy: proxyConfiguration(),
      listenOptions: listenOptions(),
    },
    allOf: [
      forwardOrFixed('forwardProtocol', 'allowedProtocols', 'protocol'),
      forwardOrFixed('forwardAddress', 'allowedAddresses', 'address'),
      forwardOrFixed('forwardPort', 'allowedPortRanges', 'port'),
    ],
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The types

function tunnelerClientV1(): JsonSchema {
  return {
    $id: 'http://edge.openziti.org/schemas/ziti-tunneler-client.v1.config.json',
    type: 'object',
    additionalProperties: false,
    required: ['hostname', 'port'],
    properties: { hostname: { type: 'string' }, port: portNumber() },
  };
}

/** `protocol` declares null as a type but the enum omits it, so null is rejected: upstream behaves the same. */
function tunnelerServerV1(): JsonSchema {
  return {
    $id: 'http://edge.openziti.org/schemas/ziti-tunneler-server.v1.config.json',
    type: 'object',
    additionalProperties: false,
    required: ['hostname', 'port'],
    properties: {
      hostname: { type: 'string' },
      port: portNumber(),
      protocol: { type: ['string', 'null'], enum: ['tcp', 'udp'] },
      ...healthCheckProperties(),
    },
  };
}

function interceptV1(): JsonSchema {
  return {
    $id: 'http://edge.openziti.org/schemas/intercept.v1.config.json',
    type: 'object',
    additionalProperties: false,
    required: ['protocols', 'addresses', 'portRanges'],
    properties: {
      protocols: setOf(protocolName()),
      addresses: setOf(listenAddress(), 'Hostnames, wildcard domains, IPs or CIDRs to intercept'),
      portRanges: setOf(portRange()),
      dialOptions: {
        type: 'object',
        additionalProperties: false,
        properties: {
          identity: { type: 'string', description: "Terminator identity to dial; may use '$dst_protocol', '$dst_ip', '$dst_port'" },
          connectTimeoutSeconds: timeoutSeconds('Default 5 without dialOptions, 15 with dialOptions'),
        },
      },
      sourceIp: {
        type: 'string',
        description: "Source IP[:port] the hosting tunneler spoofs; may use '$tunneler_id.name', '$tunneler_id.tag[name]', '$src_ip', '$src_port', '$dst_port'",
      },
      allowedSourceAddresses: setOf(listenAddress(), 'Only intercept traffic from these source IPs/CIDRs (default: all)'),
    },
  };
}

function hostV1(): JsonSchema {
  return { $id: 'http://ziti-edge.netfoundry.io/schemas/host.v1.schema.json', ...hostingTerminator() };
}

function hostV2(): JsonSchema {
  return {
    $id: 'http://ziti-edge.netfoundry.io/schemas/host.v2.schema.json',
    type: 'object',
    additionalProperties: false,
    required: ['terminators'],
    properties: {
      terminators: { type: 'array', minItems: 1, items: hostingTerminator(), description: 'One host.v1-shaped entry per terminator' },
    },
  };
}

function interfacesV1(): JsonSchema {
  return {
    $id: 'https://netfoundry.io/schemas/interfaces.v1.config.json',
    type: 'object',
    additionalProperties: false,
    required: ['interfaces'],
    properties: { interfaces: { type: 'array', items: { type: 'string' } } },
  };
}

/** `port` is a JSON number (not necessarily an integer), as upstream declares it. */
function proxyV1(): JsonSchema {
  return {
    $id: 'https://netfoundry.io/schemas/proxy.v1.config.json',
    type: 'object',
    additionalProperties: false,
    required: ['port', 'protocols'],
    properties: {
      port: { type: 'number', minimum: 1, maximum: MAX_PORT, description: 'Port to listen on' },
      protocols: { type: 'array', minItems: 1, items: protocolName('Network protocol') },
      binding: { type: 'string' },
    },
  };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** In upstream's creation order. Ids are fixed upstream values (two UUIDs, two shortids, the rest equal the name). */
export const builtinConfigTypes: readonly BuiltinConfigType[] = deepFreeze([
  { id: 'f2dd2df0-9c04-4b84-a91e-71437ac229f1', name: 'ziti-tunneler-client.v1', schema: tunnelerClientV1() },
  { id: 'cea49285-6c07-42cf-9f52-09a9b115c783', name: 'ziti-tunneler-server.v1', schema: tunnelerServerV1() },
  { id: 'g7cIWbcGg', name: 'intercept.v1', schema: interceptV1() },
  { id: 'NH5p4FpGR', name: 'host.v1', schema: hostV1() },
  { id: 'host.v2', name: 'host.v2', schema: hostV2() },
  { id: 'interfaces.v1', name: 'interfaces.v1', schema: interfacesV1() },
  { id: 'proxy.v1', name: 'proxy.v1', schema: proxyV1() },
]);
