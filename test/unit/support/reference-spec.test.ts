/**
 * Proves the reference-spec oracle (test/support/reference-spec.ts) before other tests lean on it: it lists the
 * operations the two reference specs declare, accepts hand-written bodies that follow the reference, rejects wrong
 * types, missing required fields and malformed date-times with readable messages, honours x-nullable, swagger
 * discriminators and relative links, and refuses to validate against responses the reference does not declare.
 */

import { AssertionError } from 'node:assert';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  assertMatchesDefinition,
  assertMatchesReference,
  referenceOperations,
  responseSchemaFor,
  type ApiName,
} from '../../support/reference-spec.ts';

const timestamp = '2024-05-01T10:20:30.123Z';

function versionEnvelope(): Record<string, unknown> {
  return {
    data: {
      version: 'v2.0.0',
      revision: 'ea556fc18740',
      buildDate: '2024-05-01 10:00:00',
      runtimeVersion: 'node20',
      capabilities: ['OIDC_AUTH'],
      apiVersions: {
        'edge-client': { v1: { path: '/edge/client/v1', version: '0.27.0', apiBaseUrls: ['https://ctrl:1280/edge/client/v1'] } },
      },
    },
    meta: {},
  };
}

function entityRef(entity: string, id: string, name: string): Record<string, unknown> {
  return { entity, id, name, _links: { self: { href: `./${entity}/${id}` } } };
}

function identityDetail(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'kZ3.aB9-x',
    createdAt: timestamp,
    updatedAt: timestamp,
    _links: { self: { href: './identities/kZ3.aB9-x' }, 'service-policies': { href: './identities/kZ3.aB9-x/service-policies' } },
    tags: { env: 'prod', pinned: true, note: null },
    name: 'laptop-01',
    type: entityRef('identity-types', 'Default', 'Default'),
    typeId: 'Default',
    isDefaultAdmin: false,
    isAdmin: false,
    authenticators: { updb: { id: 'auth1', username: 'alice' } },
    enrollment: {},
    envInfo: { os: 'linux', arch: 'amd64' },
    sdkInfo: { type: 'ziti-sdk-golang', version: '1.0.0' },
    roleAttributes: null,
    hasEdgeRouterConnection: false,
    edgeRouterConnectionStatus: 'offline',
    hasApiSession: false,
    isMfaEnabled: false,
    serviceHostingPrecedences: {},
    serviceHostingCosts: { svc1: 10 },
    defaultHostingCost: 0,
    defaultHostingPrecedence: 'default',
    authPolicyId: 'default',
    authPolicy: entityRef('auth-policies', 'default', 'Default'),
    externalId: null,
    disabled: false,
    permissions: [],
    appData: {},
    ...overrides,
  };
}

function postureCheckDetail(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: '3ZOzrF6q1kGXEwDdP0Yqcr',
    createdAt: timestamp,
    updatedAt: timestamp,
    _links: { self: { href: './posture-checks/3ZOzrF6q1kGXEwDdP0Yqcr' } },
    tags: {},
    name: 'corp-domain',
    typeId: 'DOMAIN',
    version: 1,
    roleAttributes: ['corp'],
    domains: ['corp.example.com'],
    ...overrides,
  };
}

function listMeta(totalCount: number): Record<string, unknown> {
  return { pagination: { limit: 10, offset: 0, totalCount }, filterableFields: ['id', 'name'] };
}

/** Runs `fn` and returns the AssertionError message it throws; fails the test if it throws nothing else. */
function assertionMessage(fn: () => void): string {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof AssertionError, `expected an AssertionError, got ${String(error)}`);
    return error.message;
  }
  assert.fail('expected the body to be rejected');
}

describe('referenceOperations', () => {
  it('finds 59 client and 196 management operations (255 in all)', () => {
    assert.equal(referenceOperations('client').length, 59);
    assert.equal(referenceOperations('management').length, 196);
  });

  it('returns upper-case methods, basePath-relative templates and unique operation ids', () => {
    for (const api of ['client', 'management'] as const) {
      const operations = referenceOperations(api);
      for (const op of operations) {
        assert.match(op.method, /^(GET|PUT|POST|PATCH|DELETE)$/);
        assert.match(op.path, /^\//);
        assert.ok(!op.path.startsWith('/edge/'), op.path);
      }
      assert.equal(new Set(operations.map((op) => op.operationId)).size, operations.length, `${api} operation ids`);
    }
    assert.ok(referenceOperations('management').some((op) => op.method === 'GET' && op.path === '/identities/{id}' && op.operationId === 'detailIdentity'));
  });

  it('derives an id for the one operation the specs leave unnamed', () => {
    for (const api of ['client', 'management'] as const) {
      const op = referenceOperations(api).find((o) => o.method === 'DELETE' && o.path === '/current-api-session');
      assert.equal(op?.operationId, 'deleteCurrentApiSession');
    }
  });
});

describe('responseSchemaFor', () => {
  it('translates every declared response of both specs into a schema Ajv compiles', () => {
    const statuses = [200, 201, 202, 400, 401, 403, 404, 409, 410, 429, 503];
    for (const api of ['client', 'management'] as ApiName[]) {
      let compiled = 0;
      for (const op of referenceOperations(api)) {
        for (const status of statuses) {
          const schema = declaredSchema(api, op.method, op.path, status);
          if (!schema) continue;
          try {
            assertMatchesReference(api, op.method, op.path, status, { probe: true });
          } catch (error) {
            assert.ok(error instanceof AssertionError, `${api} ${op.method} ${op.path} ${status}: ${String(error)}`);
          }
          compiled++;
        }
      }
      assert.ok(compiled > 200, `${api}: only ${compiled} response schemas`);
    }
  });

  it('returns undefined for a declared response without a body schema (MFA QR code)', () => {
    assert.equal(responseSchemaFor('client', 'GET', '/current-identity/mfa/qr-code', 200), undefined);
  });

  it('throws for an undeclared status or operation', () => {
    assert.throws(() => responseSchemaFor('client', 'GET', '/version', 404), /declares no 404 response.*declared: 200/);
    assert.throws(() => responseSchemaFor('client', 'GET', '/no-such-thing', 200), /declares no operation GET \/no-such-thing/);
    assert.throws(() => responseSchemaFor('client', 'PUT', '/version', 200), /declares no operation PUT/);
  });
});

function declaredSchema(api: ApiName, method: string, path: string, status: number): unknown {
  try {
    return responseSchemaFor(api, method, path, status);
  } catch {
    return undefined;
  }
}

describe('assertMatchesReference', () => {
  it('accepts a version envelope on GET /version, with or without the basePath', () => {
    assertMatchesReference('client', 'GET', '/version', 200, versionEnvelope());
    assertMatchesReference('client', 'get', '/edge/client/v1/version', 200, versionEnvelope());
    assertMatchesReference('management', 'GET', '/version', 200, versionEnvelope());
  });

  it('rejects a wrong type with the instance path in the message', () => {
    const body = versionEnvelope();
    (body.data as Record<string, unknown>).version = 2;
    const message = assertionMessage(() => assertMatchesReference('client', 'GET', '/version', 200, body));
    assert.match(message, /client GET \/version → 200/);
    assert.match(message, /\/data\/version must be string/);
  });

  it('rejects an envelope without meta', () => {
    const { data } = versionEnvelope();
    const message = assertionMessage(() => assertMatchesReference('client', 'GET', '/version', 200, { data }));
    assert.match(message, /\(root\) must have required property 'meta'/);
  });

  it('accepts an identity detail envelope and matches templates regardless of parameter names', () => {
    assertMatchesReference('management', 'GET', '/identities/{id}', 200, { data: identityDetail(), meta: {} });
    assertMatchesReference('management', 'GET', '/identities/{identityId}', 200, { data: identityDetail(), meta: {} });
  });

  it('accepts a list envelope with pagination', () => {
    const body = { data: [identityDetail(), identityDetail({ id: 'other', name: 'other' })], meta: listMeta(2) };
    assertMatchesReference('management', 'GET', '/identities', 200, body);
  });

  it('accepts a create envelope and an error envelope', () => {
    assertMatchesReference('management', 'POST', '/identities', 201, { data: { id: 'abc', _links: { self: { href: './identities/abc' } } }, meta: {} });
    const notFound = {
      error: { code: 'NOT_FOUND', message: 'The resource requested was not found or is no longer available', requestId: 'r1', args: { urlVars: { id: 'x' } } },
      meta: { apiVersion: '0.0.1', apiEnrollmentVersion: '0.0.1' },
    };
    assertMatchesReference('management', 'GET', '/identities/{id}', 404, notFound);
  });

  it('rejects a malformed date-time', () => {
    const body = { data: identityDetail({ createdAt: '2024-05-01 10:20' }), meta: {} };
    const message = assertionMessage(() => assertMatchesReference('management', 'GET', '/identities/{id}', 200, body));
    assert.match(message, /\/data\/createdAt must match format "date-time"/);
  });

  it('rejects a value outside an enum and lists the allowed values', () => {
    const body = { data: identityDetail({ edgeRouterConnectionStatus: 'up' }), meta: {} };
    const message = assertionMessage(() => assertMatchesReference('management', 'GET', '/identities/{id}', 200, body));
    assert.match(message, /\/data\/edgeRouterConnectionStatus must be equal to one of the allowed values \["online","offline","unknown"\]/);
  });

  it('throws a plain error when the reference declares no body for the response', () => {
    assert.throws(
      () => assertMatchesReference('client', 'GET', '/current-identity/mfa/qr-code', 200, {}),
      (error: unknown) => !(error instanceof AssertionError) && /declares no response body schema/.test(String(error)),
    );
  });
});

describe('assertMatchesDefinition', () => {
  it('accepts a realistic identity detail', () => {
    assertMatchesDefinition('management', 'identityDetail', identityDetail());
  });

  it('names each missing required field', () => {
    const { name: _name, typeId: _typeId, ...withoutName } = identityDetail();
    const message = assertionMessage(() => assertMatchesDefinition('management', 'identityDetail', withoutName));
    assert.match(message, /management definition identityDetail/);
    assert.match(message, /must have required property 'name'/);
    assert.match(message, /must have required property 'typeId'/);
  });

  it('honours x-nullable: null is fine for externalId, disabledAt and roleAttributes but not for name', () => {
    assertMatchesDefinition('management', 'identityDetail', identityDetail({ externalId: null, disabledAt: null, roleAttributes: null, tags: null }));
    const message = assertionMessage(() => assertMatchesDefinition('management', 'identityDetail', identityDetail({ name: null })));
    assert.match(message, /\/name must be string/);
  });

  it('accepts scalar tag values and relative links', () => {
    assertMatchesDefinition('management', 'tags', { a: 'x', b: false, c: null });
    assertMatchesDefinition('management', 'link', { href: './identities/abc' });
  });

  it('throws for an unknown definition name', () => {
    assert.throws(() => assertMatchesDefinition('management', 'noSuchDefinition', {}), /no definition "noSuchDefinition"/);
  });
});

describe('allowNullAt (documented upstream quirks)', () => {
  it('tolerates null only at the listed pointers', () => {
    const body = { data: identityDetail({ interfaces: null }), meta: null };
    const message = assertionMessage(() => assertMatchesReference('management', 'GET', '/identities/{id}', 200, body));
    assert.match(message, /\/data\/interfaces must be array/);
    assert.match(message, /\/meta must be object/);
    assert.throws(() => assertMatchesReference('management', 'GET', '/identities/{id}', 200, body, { allowNullAt: ['/meta'] }), AssertionError);
    assertMatchesReference('management', 'GET', '/identities/{id}', 200, body, { allowNullAt: ['/meta', '/data/interfaces'] });
  });

  it('reaches into list items with *', () => {
    const body = { data: [identityDetail({ interfaces: null })], meta: listMeta(1) };
    assertMatchesReference('management', 'GET', '/identities', 200, body, { allowNullAt: ['/data/*/interfaces'] });
  });

  it('still validates the rest of the body', () => {
    const body = { data: identityDetail({ interfaces: null, isAdmin: 'no' }), meta: {} };
    const message = assertionMessage(() =>
      assertMatchesReference('management', 'GET', '/identities/{id}', 200, body, { allowNullAt: ['/data/interfaces'] }));
    assert.match(message, /\/data\/isAdmin must be boolean/);
    assert.doesNotMatch(message, /interfaces/);
  });

  it('throws for a pointer the schema cannot reach', () => {
    assert.throws(
      () => assertMatchesReference('management', 'GET', '/identities/{id}', 200, {}, { allowNullAt: ['/data/noSuchField'] }),
      /allowNullAt: \/data\/noSuchField is not reachable/,
    );
  });
});

describe('swagger discriminator (posture checks)', () => {
  it('accepts each subtype through the base definition', () => {
    const body = {
      data: [
        postureCheckDetail(),
        postureCheckDetail({ typeId: 'MAC', domains: undefined, macAddresses: ['00:11:22:33:44:55'] }),
        postureCheckDetail({ typeId: 'MFA', domains: undefined, timeoutSeconds: -1, promptOnWake: false, promptOnUnlock: false, ignoreLegacyEndpoints: false }),
      ].map(dropUndefined),
      meta: listMeta(3),
    };
    assertMatchesReference('management', 'GET', '/posture-checks', 200, body);
  });

  it('applies the subtype selected by typeId', () => {
    const { domains: _domains, ...withoutDomains } = postureCheckDetail();
    const message = assertionMessage(() => assertMatchesDefinition('management', 'postureCheckDetail', withoutDomains));
    assert.match(message, /must have required property 'domains'/);
  });

  it('rejects an unknown discriminator value', () => {
    const message = assertionMessage(() => assertMatchesDefinition('management', 'postureCheckDetail', postureCheckDetail({ typeId: 'RETINA' })));
    assert.match(message, /\/typeId must be equal to one of the allowed values \["DOMAIN","MAC","MFA","OS","PROCESS","PROCESS_MULTI"\]/);
  });
});

function dropUndefined(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
}
