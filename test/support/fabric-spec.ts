/**
 * Test oracle for the fabric API (`/fabric/v1`): the response definitions of upstream's fabric spec (controller
 * v2.0.0-pre3), written down here as test data — field names, kinds and required fields, transcribed from the
 * spec's facts (the spec itself is not in the repository). `assertFabricShape` checks a value against one of
 * them: every required field present, every field of the declared kind, no undeclared field (what the
 * serializer keeps must be exactly upstream's vocabulary). `null` is accepted only where a test names it
 * (`allowNullAt`), for the fields upstream renders null (Go nil pointers and slices), e.g. an unenrolled
 * router's `fingerprint`.
 */
import assert from 'node:assert/strict';

/** A field's kind: a JSON kind, a date-time string, a definition by name, or an array of one of these. */
type Kind = 'string' | 'integer' | 'boolean' | 'date-time' | 'map' | { def: string } | { array: Kind };

interface Definition {
  required: readonly string[];
  properties: Record<string, Kind>;
}

const base: Definition = {
  required: ['id', 'createdAt', 'updatedAt', '_links', 'tags'],
  properties: { id: 'string', createdAt: 'date-time', updatedAt: 'date-time', _links: { def: 'links' }, tags: 'map' },
};

function withBase(d: Definition): Definition {
  return { required: [...base.required, ...d.required], properties: { ...base.properties, ...d.properties } };
}

/** The fabric spec's definitions the read operations answer with (envelopes are checked by `assertFabricList`/`assertFabricDetail`). */
export const FABRIC_DEFINITIONS: Record<string, Definition> = {
  links: { required: [], properties: {} }, // a map of link; checked as such
  link: { required: ['href'], properties: { href: 'string', method: 'string', comment: 'string' } },
  entityRef: { required: [], properties: { _links: { def: 'links' }, entity: 'string', id: 'string', name: 'string' } },
  pagination: { required: ['limit', 'offset', 'totalCount'], properties: { limit: 'integer', offset: 'integer', totalCount: 'integer' } },
  meta: {
    required: [],
    properties: { filterableFields: { array: 'string' }, pagination: { def: 'pagination' }, apiEnrollmentVersion: 'string', apiVersion: 'string' },
  },
  versionInfo: { required: [], properties: { version: 'string', revision: 'string', buildDate: 'string', os: 'string', arch: 'string' } },
  routerListener: { required: ['address', 'protocol'], properties: { address: 'string', protocol: 'string' } },
  interface: {
    required: ['name', 'hardwareAddress', 'mtu', 'index', 'isUp', 'isRunning', 'isLoopback', 'isBroadcast', 'isMulticast', 'addresses'],
    properties: {
      name: 'string', hardwareAddress: 'string', mtu: 'integer', index: 'integer', isUp: 'boolean', isRunning: 'boolean',
      isLoopback: 'boolean', isBroadcast: 'boolean', isMulticast: 'boolean', addresses: { array: 'string' },
    },
  },
  routerDetail: withBase({
    required: ['name', 'fingerprint', 'connected', 'cost', 'noTraversal', 'disabled'],
    properties: {
      name: 'string', fingerprint: 'string', connected: 'boolean', cost: 'integer', noTraversal: 'boolean', disabled: 'boolean',
      listenerAddresses: { array: { def: 'routerListener' } }, versionInfo: { def: 'versionInfo' }, interfaces: { array: { def: 'interface' } },
    },
  }),
  serviceDetail: withBase({
    required: ['name', 'terminatorStrategy', 'maxIdleTimeMillis'],
    properties: { name: 'string', terminatorStrategy: 'string', maxIdleTimeMillis: 'integer' },
  }),
  terminatorDetail: withBase({
    required: ['serviceId', 'service', 'routerId', 'router', 'binding', 'address', 'instanceId', 'cost', 'precedence', 'dynamicCost', 'hostId'],
    properties: {
      serviceId: 'string', service: { def: 'entityRef' }, routerId: 'string', router: { def: 'entityRef' }, binding: 'string', address: 'string',
      instanceId: 'string', cost: 'integer', precedence: 'string', dynamicCost: 'integer', hostId: 'string',
    },
  }),
  linkConnection: { required: [], properties: { type: 'string', source: 'string', dest: 'string' } },
  linkDetail: {
    required: ['id', 'protocol', 'sourceRouter', 'destRouter', 'state', 'staticCost', 'sourceLatency', 'destLatency', 'cost', 'down', 'iteration'],
    properties: {
      id: 'string', protocol: 'string', sourceRouter: { def: 'entityRef' }, destRouter: { def: 'entityRef' }, state: 'string', down: 'boolean',
      staticCost: 'integer', sourceLatency: 'integer', destLatency: 'integer', cost: 'integer', iteration: 'integer',
      connections: { array: { def: 'linkConnection' } },
    },
  },
  path: { required: [], properties: { nodes: { array: { def: 'entityRef' } }, links: { array: { def: 'entityRef' } } } },
  circuitDetail: withBase({
    required: ['service', 'terminator', 'path'],
    properties: { clientId: 'string', service: { def: 'entityRef' }, terminator: { def: 'entityRef' }, path: { def: 'path' } },
  }),
};

/** The precedence values of terminatorPrecedence. */
export const TERMINATOR_PRECEDENCES = ['default', 'required', 'failed'];

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export interface ShapeOptions {
  /** JSON Pointers (relative to the checked value; `*` matches any index or key) where null is accepted. */
  allowNullAt?: readonly string[];
}

function pointerMatches(pattern: string, pointer: string): boolean {
  const a = pattern.split('/');
  const b = pointer.split('/');
  return a.length === b.length && a.every((part, i) => part === '*' || part === b[i]);
}

function check(kind: Kind, value: unknown, at: string, problems: string[], opts: ShapeOptions): void {
  if (value === null) {
    if (!(opts.allowNullAt ?? []).some((p) => pointerMatches(p, at))) problems.push(`${at || '/'} is null`);
    return;
  }
  if (typeof kind === 'string') {
    const ok =
      kind === 'string' ? typeof value === 'string'
      : kind === 'date-time' ? typeof value === 'string' && DATE_TIME.test(value)
      : kind === 'integer' ? Number.isInteger(value)
      : kind === 'boolean' ? typeof value === 'boolean'
      : typeof value === 'object' && !Array.isArray(value);
    if (!ok) problems.push(`${at} should be ${kind}, is ${JSON.stringify(value)}`);
    return;
  }
  if ('array' in kind) {
    if (!Array.isArray(value)) {
      problems.push(`${at} should be an array, is ${JSON.stringify(value)}`);
      return;
    }
    value.forEach((v, i) => check(kind.array, v, `${at}/${i}`, problems, opts));
    return;
  }
  checkDefinition(kind.def, value, at, problems, opts);
}

function checkDefinition(name: string, value: unknown, at: string, problems: string[], opts: ShapeOptions): void {
  const def = FABRIC_DEFINITIONS[name];
  if (!def) throw new Error(`no fabric definition ${name}`);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push(`${at || '/'} should be a ${name} object, is ${JSON.stringify(value)}`);
    return;
  }
  const record = value as Record<string, unknown>;
  if (name === 'links') {
    for (const [key, link] of Object.entries(record)) checkDefinition('link', link, `${at}/${key}`, problems, opts);
    return;
  }
  for (const field of def.required) if (!(field in record)) problems.push(`${at}/${field} (required by ${name}) is missing`);
  for (const [field, v] of Object.entries(record)) {
    const kind = def.properties[field];
    if (!kind) problems.push(`${at}/${field} is not a field of ${name}`);
    else check(kind, v, `${at}/${field}`, problems, opts);
  }
}

/** Fails listing every difference between `value` and the fabric definition `name`. */
export function assertFabricShape(name: string, value: unknown, opts: ShapeOptions = {}): void {
  const problems: string[] = [];
  checkDefinition(name, value, '', problems, opts);
  assert.deepEqual(problems, [], `${name}: ${JSON.stringify(value)}`);
}

/** A list envelope (`{data, meta}` with pagination) of `name` items; `allowNullAt` pointers are relative to each item. */
export function assertFabricList(name: string, body: unknown, opts: ShapeOptions = {}): void {
  const b = body as { data: unknown; meta: unknown };
  assert.deepEqual(Object.keys(b).sort(), ['data', 'meta'], JSON.stringify(body));
  assert.ok(Array.isArray(b.data), 'data is an array');
  assertFabricShape('meta', b.meta);
  assert.ok((b.meta as { pagination?: unknown }).pagination, 'a list has pagination meta');
  for (const item of b.data as unknown[]) assertFabricShape(name, item, opts);
}

/** A detail envelope (`{data, meta: {}}`) of one `name`; `allowNullAt` pointers are relative to `data`. */
export function assertFabricDetail(name: string, body: unknown, opts: ShapeOptions = {}): void {
  const b = body as { data: unknown; meta: unknown };
  assert.deepEqual(Object.keys(b).sort(), ['data', 'meta'], JSON.stringify(body));
  assert.deepEqual(b.meta, {});
  assertFabricShape(name, b.data, opts);
}
