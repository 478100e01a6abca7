/**
 * Robustness of request validation: about 250 generated malformed requests (wrong JSON types for every
 * identity field, huge strings, deeply nested values, arrays where objects belong, invalid UTF-8,
 * content-type variations, non-integer and out-of-range paging parameters, broken filters) against
 * POST/PUT/PATCH /identities, POST /authenticators and GET /identities. Every answer must be a 4xx in the
 * error envelope, never a 5xx or a success, and nothing may change. Generation is deterministic (a seeded
 * mulberry32 PRNG), so a failure names a reproducible request.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName, type TestController } from '../support/controller.ts';
import type { HttpResponse, RequestOptions } from '../support/client.ts';
import { createIdentity, createUserWithPassword } from '../support/factories.ts';
import { ERROR_META } from '../support/assertions.ts';
import { mulberry32 } from '../support/prng.ts';

const tc: TestController = await startTestController();

const SEED = 0x5eed2026;

// ---------------------------------------------------------------------------------------------------------------
// Deterministic generation

class Rng {
  private readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  /** Integer in [0, max). */
  int(max: number): number {
    return Math.floor(this.next() * max);
  }
  between(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }
  letters(length: number): string {
    let out = '';
    for (let i = 0; i < length; i++) out += String.fromCharCode(97 + this.int(26));
    return out;
  }
  /** Printable ASCII plus a few multi-byte characters, for garbage inside filters and strings. */
  garbage(length: number): string {
    const pool = 'abcXYZ019 _-.,;:!?@#$%^&*()[]{}<>=~|/\\\'"`éß漢字🙂';
    const chars = [...pool];
    let out = '';
    for (let i = 0; i < length; i++) out += this.pick(chars);
    return out;
  }
  /** Arbitrary code points, including NUL, controls, RTL marks, emoji and a lone surrogate. */
  unicode(length: number): string {
    const specials = ['\u0000', '\u0007', '\u001f', '\u202e', '\ufeff', '\ud800', '\uffff', '🙂', '𝕏', '\u0301'];
    let out = '';
    for (let i = 0; i < length; i++) out += this.int(3) === 0 ? this.pick(specials) : String.fromCodePoint(this.between(0x20, 0x2fff));
    return out;
  }
}

type Kind =
  | 'null'
  | 'bool'
  | 'int'
  | 'float'
  | 'huge-number'
  | 'string'
  | 'empty-string'
  | 'huge-string'
  | 'unicode'
  | 'array'
  | 'empty-array'
  | 'object'
  | 'empty-object'
  | 'deep-object'
  | 'deep-array';

function deepObject(depth: number): unknown {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

function deepArray(depth: number): unknown {
  let v: unknown = ['leaf'];
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

function scalar(r: Rng): unknown {
  return r.pick<() => unknown>([() => r.int(1000), () => `zz-${r.letters(5)}`, () => r.int(2) === 0, () => null, () => 1.25])();
}

const generators: Record<Kind, (r: Rng) => unknown> = {
  null: () => null,
  bool: (r) => r.int(2) === 0,
  int: (r) => r.between(-1_000_000, 1_000_000),
  float: (r) => r.int(1000) + 0.5,
  'huge-number': (r) => r.pick([1e300, -1e300, 1.7976931348623157e308, 2 ** 64, -(2 ** 63) - 4096]),
  // `zz-` keeps random strings away from every enum value.
  string: (r) => `zz-${r.letters(r.between(1, 12))}`,
  'empty-string': () => '',
  'huge-string': (r) => r.pick(['x', 'ab', '\u00e9', '🙂']).repeat(r.between(50_000, 150_000)),
  unicode: (r) => `zz${r.unicode(r.between(1, 40))}`,
  array: (r) => Array.from({ length: r.between(1, 5) }, () => scalar(r)),
  'empty-array': () => [],
  object: (r) => Object.fromEntries(Array.from({ length: r.between(1, 4) }, () => [r.letters(4), scalar(r)])),
  'empty-object': () => ({}),
  'deep-object': (r) => deepObject(r.between(20, 3000)),
  'deep-array': (r) => deepArray(r.between(20, 3000)),
};

type Mode = 'create' | 'put' | 'patch';

interface FieldRule {
  /** Value kinds that are invalid for the field in every mode. */
  kinds: Kind[];
  /** Kinds that are invalid on create and put only (PATCH treats null as absent, and an empty string as unset). */
  createPutKinds?: Kind[];
  /** Hand-made invalid values that the generic kinds do not cover. */
  extra?: Array<(r: Rng) => unknown>;
  modes?: Mode[];
}

const NON_OBJECTS: Kind[] = ['bool', 'int', 'float', 'huge-number', 'string', 'huge-string', 'unicode', 'array', 'empty-array', 'deep-array'];
const NON_STRINGS: Kind[] = ['bool', 'int', 'float', 'huge-number', 'array', 'empty-array', 'object', 'empty-object', 'deep-object', 'deep-array'];

/** For each identity field, values that are invalid for it (each must be refused, whatever else the body holds). */
const identityFieldRules: Record<string, FieldRule> = {
  name: { kinds: NON_STRINGS, createPutKinds: ['null', 'empty-string'] },
  type: { kinds: [...NON_STRINGS, 'string', 'huge-string', 'unicode'], createPutKinds: ['null', 'empty-string'] },
  isAdmin: { kinds: [...NON_STRINGS.filter((k) => k !== 'bool'), 'string', 'unicode', 'empty-string'], createPutKinds: ['null'] },
  appData: { kinds: NON_OBJECTS },
  authPolicyId: { kinds: NON_STRINGS },
  defaultHostingCost: {
    kinds: ['bool', 'float', 'huge-number', 'string', 'unicode', 'array', 'empty-array', 'object', 'empty-object', 'deep-object'],
    extra: [(r) => r.pick([65536, 70000, -1, -65535, 2 ** 31, 2 ** 53])],
  },
  defaultHostingPrecedence: { kinds: ['bool', 'int', 'float', 'huge-number', 'string', 'huge-string', 'unicode', 'array', 'empty-array', 'object', 'empty-object'] },
  externalId: { kinds: NON_STRINGS },
  permissions: {
    kinds: ['bool', 'int', 'float', 'string', 'unicode', 'object', 'empty-object', 'deep-object', 'deep-array'],
    extra: [(r) => [`zz-${r.letters(6)}`], () => ['identity.read', 'identity.fly'], () => [5], () => ['ops.create'], () => [true], () => [['admin_readonly']]],
  },
  roleAttributes: {
    kinds: ['bool', 'int', 'float', 'string', 'unicode', 'object', 'empty-object', 'deep-object', 'deep-array'],
    extra: [() => ['ok', 5], () => [{}], () => [['nested']], () => [true], (r) => [r.letters(3), 1.5]],
  },
  serviceHostingCosts: {
    kinds: ['bool', 'int', 'float', 'huge-number', 'string', 'unicode', 'array', 'empty-array', 'deep-array'],
    extra: [(r) => ({ [r.letters(6)]: 'cheap' }), (r) => ({ [r.letters(6)]: 70000 }), (r) => ({ [r.letters(6)]: -1 }), (r) => ({ [r.letters(6)]: {} }), (r) => deepObject(r.between(20, 500))],
  },
  serviceHostingPrecedences: {
    kinds: ['bool', 'int', 'float', 'string', 'unicode', 'array', 'empty-array', 'deep-array'],
    extra: [(r) => ({ [r.letters(6)]: 'sometimes' }), (r) => ({ [r.letters(6)]: 5 }), (r) => ({ [r.letters(6)]: [] }), (r) => deepObject(r.between(20, 500))],
  },
  tags: {
    kinds: ['bool', 'int', 'float', 'huge-number', 'string', 'huge-string', 'unicode', 'array', 'empty-array', 'deep-array', 'deep-object'],
    extra: [(r) => ({ [r.letters(4)]: { nested: 'x' } }), (r) => ({ [r.letters(4)]: ['a', 'b'] }), (r) => ({ env: 'prod', [r.letters(4)]: deepObject(r.between(2, 200)) })],
  },
  enrollment: {
    kinds: ['bool', 'int', 'huge-number', 'string', 'unicode', 'array', 'empty-array', 'deep-array'],
    extra: [() => ({ ott: 'yes' }), () => ({ ott: 5 }), () => ({ ottca: 5 }), () => ({ updb: true }), () => ({ updb: {} })],
    modes: ['create'],
  },
};

function invalidValue(r: Rng, field: string, mode: Mode): unknown {
  const rule = identityFieldRules[field];
  const kinds = mode === 'patch' ? rule.kinds : [...rule.kinds, ...(rule.createPutKinds ?? [])];
  const makers: Array<(r: Rng) => unknown> = [...kinds.map((k) => generators[k]), ...(rule.extra ?? [])];
  return r.pick(makers)(r);
}

function fieldsFor(mode: Mode): string[] {
  return Object.keys(identityFieldRules).filter((f) => !identityFieldRules[f].modes || identityFieldRules[f].modes!.includes(mode));
}

/** A body with one to three invalid fields on top of an otherwise valid request for `mode`. */
function malformedIdentityBody(r: Rng, mode: Mode, index: number): { body: Record<string, unknown>; broken: string[] } {
  const fields = fieldsFor(mode);
  const broken = new Set<string>([fields[index % fields.length]]);
  const extraFields = index % 5 === 4 ? r.between(1, 2) : 0;
  for (let i = 0; i < extraFields; i++) broken.add(r.pick(fields));
  const body: Record<string, unknown> = mode === 'patch' ? {} : { name: uniqueName('fuzz'), type: 'User', isAdmin: false };
  for (const f of broken) body[f] = invalidValue(r, f, mode);
  return { body, broken: [...broken] };
}

/** Short, readable description of a generated value for failure reports. */
function describeValue(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 120 ? `${text.slice(0, 100)}…(${text.length} chars)` : text;
}

// ---------------------------------------------------------------------------------------------------------------
// Sending and checking

interface Probe {
  label: string;
  method: string;
  path: string;
  options: RequestOptions;
}

/** Sends every probe, returning one line per answer that is not a 4xx in the error envelope. */
async function offenders(probes: Probe[]): Promise<string[]> {
  const bad: string[] = [];
  for (const probe of probes) {
    let res: HttpResponse;
    try {
      res = await tc.http.request(probe.method, probe.path, { token: tc.adminToken, ...probe.options });
    } catch (err) {
      bad.push(`${probe.label}: no answer (${(err as Error).message})`);
      continue;
    }
    const problem = envelopeProblem(res);
    if (problem) bad.push(`${probe.label}: ${problem} — HTTP ${res.status} ${res.text.slice(0, 300)}`);
  }
  return bad;
}

function envelopeProblem(res: HttpResponse): string | undefined {
  if (res.status < 400 || res.status >= 500) return `status ${res.status} is not a 4xx`;
  const body = res.body as { error?: { code?: unknown; requestId?: unknown }; meta?: unknown } | string;
  if (typeof body !== 'object' || body === null || typeof body.error !== 'object') return 'no error envelope';
  if (typeof body.error.code !== 'string' || body.error.code === '') return 'error.code is not a non-empty string';
  if (typeof body.error.requestId !== 'string' || body.error.requestId === '') return 'error.requestId is missing';
  try {
    assert.deepEqual(body.meta, ERROR_META);
  } catch {
    return 'meta is not the error meta';
  }
  return undefined;
}

function assertNoOffenders(bad: string[], total: number): void {
  assert.equal(bad.length, 0, `${bad.length} of ${total} malformed requests were not answered with a 4xx error envelope:\n${bad.slice(0, 40).join('\n')}`);
}

const M = '/edge/management/v1';

async function identityCount(): Promise<number> {
  const res = await tc.mgmt.get('/identities?limit=1');
  assert.equal(res.status, 200, res.text);
  return res.body.meta.pagination.totalCount as number;
}

async function authenticatorCount(): Promise<number> {
  const res = await tc.mgmt.get('/authenticators?limit=1');
  assert.equal(res.status, 200, res.text);
  return res.body.meta.pagination.totalCount as number;
}

async function identitySnapshot(id: string): Promise<unknown> {
  const res = await tc.mgmt.get(`/identities/${id}`);
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

// ---------------------------------------------------------------------------------------------------------------
// Fixtures: an identity that PUT/PATCH probes target, and one that already has a password authenticator so
// that even an accidentally valid POST /authenticators for it could only answer 409.

const target = await createIdentity(tc.mgmt, { roleAttributes: ['fuzz-target'], appData: { a: 1 }, tags: { env: 'prod' }, externalId: uniqueName('fuzz-ext') });
const locked = await createUserWithPassword(tc);
const targetBefore = await identitySnapshot(target);
const identitiesBefore = await identityCount();
const authenticatorsBefore = await authenticatorCount();

describe('malformed identity bodies', () => {
  it('answers 70 generated malformed POST /identities bodies with a 4xx error envelope', async () => {
    const r = new Rng(SEED);
    const probes: Probe[] = [];
    for (let i = 0; i < 70; i++) {
      const { body, broken } = malformedIdentityBody(r, 'create', i);
      probes.push({ label: `#${i} POST /identities ${broken.map((f) => `${f}=${describeValue(body[f])}`).join(' ')}`, method: 'POST', path: `${M}/identities`, options: { body } });
    }
    assertNoOffenders(await offenders(probes), probes.length);
    assert.equal(await identityCount(), identitiesBefore, 'no identity was created');
  });

  it('answers 35 generated malformed PUT /identities/{id} bodies with a 4xx error envelope and changes nothing', async () => {
    const r = new Rng(SEED + 1);
    const probes: Probe[] = [];
    for (let i = 0; i < 35; i++) {
      const { body, broken } = malformedIdentityBody(r, 'put', i);
      probes.push({ label: `#${i} PUT /identities/{id} ${broken.map((f) => `${f}=${describeValue(body[f])}`).join(' ')}`, method: 'PUT', path: `${M}/identities/${target}`, options: { body } });
    }
    assertNoOffenders(await offenders(probes), probes.length);
    assert.deepEqual(await identitySnapshot(target), targetBefore);
  });

  it('answers 35 generated malformed PATCH /identities/{id} bodies with a 4xx error envelope and changes nothing', async () => {
    const r = new Rng(SEED + 2);
    const probes: Probe[] = [];
    for (let i = 0; i < 35; i++) {
      const { body, broken } = malformedIdentityBody(r, 'patch', i);
      probes.push({ label: `#${i} PATCH /identities/{id} ${broken.map((f) => `${f}=${describeValue(body[f])}`).join(' ')}`, method: 'PATCH', path: `${M}/identities/${target}`, options: { body } });
    }
    assertNoOffenders(await offenders(probes), probes.length);
    assert.deepEqual(await identitySnapshot(target), targetBefore);
  });

  it('answers bodies that are not JSON objects, broken JSON, invalid UTF-8 and deep nesting with a 4xx error envelope', async () => {
    const r = new Rng(SEED + 3);
    const invalidUtf8 = Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x28, 0xa1, 0xf0, 0x28, 0x8c, 0xbc]);
    const randomBytes = Buffer.from(Array.from({ length: 200 }, () => r.int(256)));
    const deepBody = '['.repeat(50_000) + ']'.repeat(50_000);
    const deepTags = `{"name":"${uniqueName('deep')}","type":"User","isAdmin":false,"tags":{"t":${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}}}`;
    const deepRoles = `{"name":"${uniqueName('deep')}","type":"User","isAdmin":false,"roleAttributes":${'['.repeat(50_000)}${']'.repeat(50_000)}}`;
    const raw: Array<[string, string | Buffer]> = [
      ['null', 'null'],
      ['a string', '"identity"'],
      ['a number', '123'],
      ['true', 'true'],
      ['an empty array', '[]'],
      ['an array of valid identities', JSON.stringify([{ name: uniqueName('arr'), type: 'User', isAdmin: false }])],
      ['an empty object', '{}'],
      ['truncated JSON', '{"name": "x", "type": "Us'],
      ['trailing garbage', `{"name":"${uniqueName('t')}","type":"User","isAdmin":false} trailing`],
      ['single quotes', "{'name':'x','type':'User','isAdmin':false}"],
      ['a comment', '{"name":"x" /* c */, "type":"User","isAdmin":false}'],
      ['NaN literal', '{"name":"x","type":"User","isAdmin":false,"defaultHostingCost":NaN}'],
      ['a duplicate key whose last value is invalid', `{"name":"${uniqueName('dup')}","name":5,"type":"User","isAdmin":false}`],
      ['invalid UTF-8 breaking the JSON', Buffer.concat([Buffer.from('{"name": '), invalidUtf8, Buffer.from(', "type":"User","isAdmin":false}')])],
      ['invalid UTF-8 inside the type enum', Buffer.concat([Buffer.from(`{"name":"${uniqueName('utf')}","type":"`), invalidUtf8, Buffer.from('","isAdmin":false}')])],
      ['random bytes', randomBytes],
      ['deeply nested arrays as the body', deepBody],
      ['deeply nested tags', deepTags],
      ['deeply nested role attributes', deepRoles],
      ['a body over 1 MiB', JSON.stringify({ name: uniqueName('big'), type: 'x'.repeat(1_200_000), isAdmin: false })],
    ];
    const probes: Probe[] = raw.map(([label, rawBody]) => ({
      label: `POST /identities with ${label}`,
      method: 'POST',
      path: `${M}/identities`,
      options: { rawBody, contentType: 'application/json' },
    }));
    probes.push({
      label: 'PATCH /identities/{id} with deeply nested arrays',
      method: 'PATCH',
      path: `${M}/identities/${target}`,
      options: { rawBody: deepBody, contentType: 'application/json' },
    });
    assertNoOffenders(await offenders(probes), probes.length);
    assert.equal(await identityCount(), identitiesBefore, 'no identity was created');
    assert.deepEqual(await identitySnapshot(target), targetBefore);
  });

  it('answers bodies with a wrong or missing content type with a 4xx error envelope', async () => {
    const valid = () => JSON.stringify({ name: uniqueName('ct'), type: 'User', isAdmin: false });
    const cases: Array<[string | null, string]> = [
      ['text/plain', valid()],
      ['application/xml', '<identity><name>x</name></identity>'],
      ['application/x-www-form-urlencoded', 'name=x&type=User&isAdmin=false'],
      ['multipart/form-data; boundary=xyz', '--xyz\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--xyz--'],
      ['application/octet-stream', valid()],
      ['application/jsonx', valid()],
      ['', valid()],
      [null, valid()],
      ['application/json; charset=utf-8', '{"name": '],
      ['APPLICATION/JSON', '{"name": 5, "type": "User", "isAdmin": false}'],
      ['application/json', ''],
    ];
    const probes: Probe[] = cases.map(([contentType, rawBody]): Probe => {
      // null sends no Content-Type header; '' sends an empty one (the client skips an empty contentType).
      const options: RequestOptions =
        contentType === null ? { rawBody } : contentType === '' ? { rawBody, headers: { 'content-type': '' } } : { rawBody, contentType };
      return { label: `POST /identities with content type ${JSON.stringify(contentType)} and body ${describeValue(rawBody)}`, method: 'POST', path: `${M}/identities`, options };
    });
    assertNoOffenders(await offenders(probes), probes.length);
    assert.equal(await identityCount(), identitiesBefore, 'no identity was created');
  });
});

describe('malformed POST /authenticators bodies', () => {
  it('answers 35 generated malformed bodies with a 4xx error envelope and creates nothing', async () => {
    const r = new Rng(SEED + 4);
    const rules: Record<string, Array<(r: Rng) => unknown>> = {
      method: [...(['null', 'bool', 'int', 'float', 'string', 'empty-string', 'huge-string', 'unicode', 'array', 'object', 'deep-object'] as Kind[]).map((k) => generators[k])],
      identityId: [...(['null', 'bool', 'int', 'float', 'string', 'empty-string', 'huge-string', 'array', 'object', 'deep-array'] as Kind[]).map((k) => generators[k])],
      username: [
        ...(['null', 'bool', 'int', 'empty-string', 'array', 'object', 'deep-object'] as Kind[]).map((k) => generators[k]),
        (r) => r.letters(r.between(1, 3)),
        (r) => 'u'.repeat(r.between(101, 5000)),
      ],
      password: [
        ...(['null', 'bool', 'int', 'empty-string', 'array', 'object', 'deep-array'] as Kind[]).map((k) => generators[k]),
        (r) => r.letters(r.between(1, 4)),
        (r) => 'p'.repeat(r.between(101, 5000)),
      ],
      certPem: [...(['string', 'huge-string', 'unicode', 'int', 'object'] as Kind[]).map((k) => generators[k])],
    };
    const fields = Object.keys(rules);
    const probes: Probe[] = [];
    for (let i = 0; i < 30; i++) {
      const field = fields[i % fields.length];
      const body: Record<string, unknown> = { method: 'updb', identityId: locked.id, username: uniqueName('fuzz'), password: 'Valid-pass-1' };
      body[field] = r.pick(rules[field])(r);
      probes.push({ label: `#${i} POST /authenticators ${field}=${describeValue(body[field])}`, method: 'POST', path: `${M}/authenticators`, options: { body } });
    }
    for (let i = 0; i < 5; i++) {
      const pem = `-----BEGIN CERTIFICATE-----\n${Buffer.from(r.garbage(r.between(10, 300))).toString('base64')}\n-----END CERTIFICATE-----\n`;
      const body = { method: 'cert', identityId: locked.id, certPem: i === 0 ? r.unicode(50) : pem };
      probes.push({ label: `#c${i} POST /authenticators method=cert certPem=${describeValue(body.certPem)}`, method: 'POST', path: `${M}/authenticators`, options: { body } });
    }
    assertNoOffenders(await offenders(probes), probes.length);
    assert.equal(await authenticatorCount(), authenticatorsBefore, 'no authenticator was created');
    await tc.login(locked.username, locked.password);
  });
});

describe('malformed GET /identities parameters', () => {
  it('answers non-integer and out-of-range limit and offset values with a 4xx error envelope', async () => {
    const r = new Rng(SEED + 5);
    const fixed = ['abc', '1.5', '-2.5', '1e3', '0x10', 'NaN', 'Infinity', 'true', '[1]', '{}', '99999999999999999999', '-99999999999999999999', '9223372036854775808', ' 5', '5abc', '１２'];
    const values = [...fixed, r.letters(8), r.garbage(12), r.unicode(6), `${r.int(100)}.${r.between(1, 9)}`];
    const probes: Probe[] = [];
    values.forEach((value, i) => {
      const param = i % 2 === 0 ? 'limit' : 'offset';
      probes.push({ label: `GET /identities?${param}=${JSON.stringify(value)}`, method: 'GET', path: `${M}/identities?${param}=${encodeURIComponent(value)}`, options: {} });
    });
    assertNoOffenders(await offenders(probes), probes.length);
  });

  it('answers 30 generated broken filters with a 4xx error envelope', async () => {
    const r = new Rng(SEED + 6);
    const str = () => r.garbage(r.between(0, 20)).replace(/["\\]/g, '');
    const templates: Array<() => string> = [
      () => `zz${r.letters(r.between(1, 10))} = "${str()}"`,
      () => `name ${r.pick(['=', '!=', '<', '>=', 'contains', 'in', 'between', 'icontains'])}`,
      () => `${'('.repeat(r.between(1, 5))}name = "${str()}"`,
      () => `name = "${str()}" ${r.pick(['and', 'or'])}`,
      () => `roleAttributes = "${str()}"`,
      () => `anyOf(name) = "${str()}"`,
      () => `createdAt = "${str()}"`,
      () => `isAdmin < true`,
      () => `name in []`,
      () => `true limit ${r.int(50)} skip ${r.int(50)}`,
      () => `name = "${str()}" sort by roleAttributes`,
      () => `name = "${r.letters(r.between(1, 8))}`,
      () => `tags.x${r.int(10)} = "v"`,
      () => `name contains"${r.letters(3)}"`,
      () => `"${r.letters(4)}" = name`,
      () => `${r.garbage(r.between(1, 40))} =`,
      () => `name = ${'\uFFFD'.repeat(r.between(1, 3))}`,
      () => `createdAt > datetime(${r.letters(6)})`,
      () => `name = "${str()}" and not`,
      () => `count(roleAttributes) > "${str()}"`,
    ];
    const probes: Probe[] = [];
    for (let i = 0; i < 30; i++) {
      const filter = templates[i % templates.length]();
      probes.push({ label: `GET /identities?filter=${JSON.stringify(filter)}`, method: 'GET', path: `${M}/identities?filter=${encodeURIComponent(filter)}`, options: {} });
    }
    probes.push({ label: 'GET /identities?filter=<invalid UTF-8 bytes>', method: 'GET', path: `${M}/identities?filter=name%20%3D%20%FF%FE%C3%28`, options: {} });
    probes.push({ label: 'GET /identities?filter=<whitespace only>', method: 'GET', path: `${M}/identities?filter=%20%09`, options: {} });
    // 10 000 nested parentheses: deep enough to exhaust a naive recursive parser, short enough (10 KB) to stay
    // under the HTTP parser's header size limit.
    probes.push({ label: 'GET /identities?filter=<10000 open parens>', method: 'GET', path: `${M}/identities?filter=${'('.repeat(10_000)}name%20%3D%20%22x%22`, options: {} });
    probes.push({ label: 'GET /identities?filter=<10000 nested nots>', method: 'GET', path: `${M}/identities?filter=${'not%20'.repeat(2_000)}`, options: {} });
    assertNoOffenders(await offenders(probes), probes.length);
  });

  it('answers broken sort and roleSemantic parameters with a 4xx error envelope', async () => {
    const r = new Rng(SEED + 7);
    const probes: Probe[] = [
      `sort=${encodeURIComponent(`zz${r.letters(6)}`)}`,
      `sort=${encodeURIComponent('roleAttributes')}`,
      `sort=${encodeURIComponent('name sideways')}`,
      `sort=${encodeURIComponent(r.garbage(10))}%3D`,
      `roleFilter=%23x&roleSemantic=${encodeURIComponent(`zz${r.letters(5)}`)}`,
      `roleFilter=%23x&roleSemantic=${encodeURIComponent(r.unicode(4))}`,
    ].map((query) => ({ label: `GET /identities?${query}`, method: 'GET', path: `${M}/identities?${query}`, options: {} }));
    assertNoOffenders(await offenders(probes), probes.length);
  });
});

describe('the NUL character', () => {
  it('is refused in any body string or key and in the URL, with the field named, on both stores', async () => {
    const name = uniqueName('nul');
    const refused = async (res: HttpResponse, field: string) => {
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.error.code, 'COULD_NOT_VALIDATE');
      assert.equal(res.body.error.cause.field, field);
      assert.match(res.body.error.cause.reason, /NUL/);
    };
    await refused(await tc.mgmt.post('/identities', { name: `${name}\u0000x`, type: 'User', isAdmin: false }), 'name');
    await refused(await tc.mgmt.post('/identities', { name, type: 'User', isAdmin: false, roleAttributes: ['ok', 'a\u0000'] }), 'roleAttributes[1]');
    await refused(await tc.mgmt.post('/identities', { name, type: 'User', isAdmin: false, tags: { deep: { ['k\u0000']: 1 } } }), 'tags.deep.k\u0000');
    await refused(await tc.mgmt.patch(`/identities/${target}`, { tags: { t: ['\u0000'] } }), 'tags.t[0]');
    await refused(await tc.mgmt.get(`/identities?filter=${encodeURIComponent('name = "a\u0000"')}`), 'url');
    await refused(await tc.mgmt.get('/identities/%00'), 'url');
    const listed = await tc.mgmt.get(`/identities?filter=${encodeURIComponent(`name contains "${name}"`)}`);
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body.meta.pagination.totalCount, 0, 'nothing was created');
  });
});

describe('after the malformed requests', () => {
  it('still has the same identities and authenticators and still answers /version', async () => {
    assert.equal(await identityCount(), identitiesBefore);
    assert.equal(await authenticatorCount(), authenticatorsBefore);
    assert.deepEqual(await identitySnapshot(target), targetBefore);
    const version = await tc.http.get('/version');
    assert.equal(version.status, 200, version.text);
    assert.equal(typeof version.body.data.version, 'string');
    assert.equal((await tc.mgmt.get('/identities')).status, 200);
  });
});
