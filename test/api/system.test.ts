/**
 * Informational operations and the conventions every route shares: version at the root and under both
 * bases (and the legacy paths), capabilities, protocols, specs, controllers, summary, the CA bundle, and
 * the error envelope for unknown routes, wrong methods, wrong content types and malformed JSON; CORS.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError } from '../support/assertions.ts';
import { execFileSync } from 'node:child_process';
import { parse as parseYaml } from 'yaml';
import { startTestController, testStore, type TestController } from '../support/controller.ts';
import { assertMatchesReference } from '../support/reference-spec.ts';

const tc: TestController = await startTestController();

describe('GET /version and GET /', () => {
  it('answers the same version envelope at the root, under both bases and on legacy paths', async () => {
    const paths = ['/', '/version', '/edge/client/v1/version', '/edge/management/v1/version', '/edge/client/v1/', '/edge/v1/version'];
    const bodies = [];
    for (const p of paths) {
      const res = await tc.http.get(p);
      assert.equal(res.status, 200, `${p}: ${res.text}`);
      bodies.push(res.body);
    }
    for (const b of bodies) assert.deepEqual(b, bodies[0]);
    const data = bodies[0].data;
    assert.equal(data.apiVersions['edge-client'].v1.path, '/edge/client/v1');
    assert.equal(data.apiVersions['edge-management'].v1.path, '/edge/management/v1');
    assert.deepEqual(data.apiVersions.edge, data.apiVersions['edge-client']);
    assert.equal(data.apiVersions['edge-client'].v1.apiBaseUrls[0], `https://localhost:${tc.port}/edge/client/v1`);
    assert.deepEqual(data.capabilities, ['OIDC_AUTH'], 'advertises OIDC logins (and no HA controller)');
    assert.equal(data.apiVersions['edge-oidc'].v1.path, '/oidc');
    // The upstream line it is compatible with (consoles and routers gate features on it); its own name in revision.
    assert.equal(data.version, 'v2.0.0');
    assert.match(data.revision, /^portcullis v\d+\.\d+\.\d+/);
    assert.match(data.buildDate, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assertMatchesReference('client', 'GET', '/version', 200, bodies[0]);
    assertMatchesReference('management', 'GET', '/', 200, bodies[0]);
  });

  it('sends the server and instance headers', async () => {
    const res = await tc.http.get('/version');
    assert.match(String(res.headers.server), /portcullis/);
    assert.ok(res.headers['ziti-instance-id']);
  });
});

describe('path cleaning', () => {
  it('treats repeated slashes anywhere, and . and .. segments, as upstream does', async () => {
    const id = (await tc.mgmt.get('/current-identity')).body.data.id as string;
    for (const path of [
      `/edge/management/v1/identities/${id}//`,
      `/edge/management/v1//identities/${id}`,
      `/edge/management/v1/identities//${id}`,
      `/edge/management/v1/./identities/${id}`,
      `/edge/management/v1/x/../identities/${id}`,
    ]) {
      const res = await tc.http.as({ token: tc.adminToken }).get(path, { asIs: true });
      assert.equal(res.status, 200, `${path}: ${res.text}`);
      assert.equal(res.body.data.id, id, path);
    }
    assert.equal((await tc.mgmt.get('//terminators', { asIs: true })).status, 200);
    assert.equal((await tc.http.get('//version', { asIs: true })).status, 200);
    const cacerts = await tc.http.get('/edge/management/v1//.well-known/est/cacerts', { asIs: true });
    assert.equal(cacerts.status, 200);
    assert.match(String(cacerts.headers['content-type']), /application\/pkcs7-mime/);
    assert.equal((await tc.http.get('/edge/client/v1//no-such-thing', { asIs: true })).status, 404);
  });
});

describe('wire details as upstream sends them', () => {
  it('JSON answers carry Content-Type application/json without a charset parameter', async () => {
    for (const res of [await tc.http.get('/version'), await tc.mgmt.get('/identities?limit=1'), await tc.mgmt.get('/identities/nope'), await tc.client.get('/services')]) {
      assert.equal(res.headers['content-type'], 'application/json', res.text);
    }
  });

  it('answers 406 on field Accept when the caller accepts none of the media types, before anything else', async () => {
    for (const path of ['/version', '/edge/management/v1/identities?limit=1', '/edge/management/v1/identities/nope']) {
      const res = await tc.http.as({ token: tc.adminToken }).get(path, { headers: { accept: 'text/html' } });
      assertError(res, 406, 'COULD_NOT_VALIDATE');
      assert.deepEqual(res.body.error.cause, { field: 'Accept', reason: 'unsupported media type requested, only [application/json] are available', value: 'text/html' });
    }
    for (const accept of ['*/*', 'application/*', 'application/json;q=0.5, text/html', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8']) {
      assert.equal((await tc.mgmt.get('/identities?limit=1', { headers: { accept } })).status, 200, accept);
    }
    assertError(await tc.mgmt.get('/identities?limit=1', { headers: { accept: 'application/json;q=0' } }), 406, 'COULD_NOT_VALIDATE');
    // Operations that produce other media types accept them, and JSON.
    const cacerts = await tc.http.get('/.well-known/est/cacerts', { headers: { accept: 'application/pkcs7-mime' } });
    assert.equal(cacerts.status, 200);
  });

  it('a repeated query parameter that is not a list keeps its first value', async () => {
    const id = (await tc.mgmt.get('/current-identity')).body.data.id as string;
    const name = (await tc.mgmt.get('/current-identity')).body.data.name as string;
    const first = await tc.mgmt.get(`/identities?filter=${encodeURIComponent(`id = "${id}"`)}&filter=${encodeURIComponent('id = "nope"')}`);
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body.data.map((i: { name: string }) => i.name), [name]);
    const limited = await tc.mgmt.get('/identities?limit=1&limit=3');
    assert.equal(limited.status, 200, limited.text);
    assert.equal(limited.body.meta.pagination.limit, 1);
  });
});

describe('informational lists', () => {
  it('lists enumerated capabilities on both APIs', async () => {
    for (const api of ['client', 'management'] as const) {
      const res = await tc.http.get(`/edge/${api}/v1/enumerated-capabilities`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.data, ['OIDC_AUTH', 'HA_CONTROLLER']);
      assertMatchesReference(api, 'GET', '/enumerated-capabilities', 200, res.body);
    }
  });

  it('lists protocols on the client API only', async () => {
    const res = await tc.http.get('/edge/client/v1/protocols');
    assert.equal(res.status, 200);
    assert.equal(res.body.data.https.address, `localhost:${tc.port}`);
    assertMatchesReference('client', 'GET', '/protocols', 200, res.body);
    assert.equal((await tc.http.get('/edge/management/v1/protocols')).status, 404);
  });

  it('serves every spec, their records and their documents as YAML by default and JSON on request', async () => {
    const list = await tc.http.get('/edge/management/v1/specs');
    assert.deepEqual(list.body.data.map((s: { id: string }) => s.id), ['edge-client', 'edge-management', 'fabric']);
    assertMatchesReference('management', 'GET', '/specs', 200, list.body);
    // The client API lists and serves only its own document.
    const clientList = await tc.http.get('/edge/client/v1/specs');
    assert.deepEqual(clientList.body.data.map((s: { id: string }) => s.id), ['edge-client']);
    assert.equal((await tc.http.get('/edge/client/v1/specs/edge-management')).status, 404);
    assert.equal((await tc.http.get('/edge/client/v1/specs/edge-management/spec')).status, 404);
    const one = await tc.http.get('/edge/management/v1/specs/edge-management');
    assert.equal(one.body.data.name, 'edge-management');
    assertMatchesReference('management', 'GET', '/specs/{id}', 200, one.body);
    const yaml = await tc.http.get('/edge/client/v1/specs/edge-client/spec', { headers: { accept: '*/*' } });
    assert.match(String(yaml.headers['content-type']), /text\/yaml/);
    const doc = parseYaml(yaml.text);
    assert.equal(doc.swagger, '2.0');
    assert.equal(doc.basePath, '/edge/client/v1');
    assert.ok(doc.paths['/authenticate'].post, 'documents authenticate');
    const json = await tc.http.get('/edge/management/v1/specs/edge-management/spec', { headers: { accept: 'application/json' } });
    assert.ok(json.body.paths['/identities/{id}'].patch, 'documents identity patch');
    const missing = await tc.http.get('/edge/client/v1/specs/nope');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'NOT_FOUND');
    assert.equal(missing.body.error.cause, undefined, 'upstream names no cause for an unknown spec');
    assert.equal((await tc.http.get('/edge/management/v1/specs/nope')).body.error.cause, undefined);
  });

  it('lists the live controllers to authenticated callers only: none alone on SQLite, as upstream standalone', async () => {
    const res = await tc.mgmt.get('/controllers');
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'GET', '/controllers', 200, res.body);
    const anon = await tc.http.get('/edge/client/v1/controllers');
    assert.equal(anon.status, 401);
    if (testStore() === 'sqlite') {
      assert.deepEqual(res.body.data, []);
      assert.equal((await tc.client.get('/controllers')).body.data.length, 0);
      return;
    }
    assert.equal(res.body.data.length, 1);
    assert.equal(res.body.data[0].isOnline, true);
    assert.equal(res.body.data[0].id, res.headers['ziti-instance-id']);
    assert.equal(res.body.data[0].ctrlAddress, `tls:localhost:${tc.port}`);
  });

  it('filters the controller list, and shows only client API addresses on the client API', { skip: testStore() === 'sqlite' && 'SQLite lists no controller' }, async () => {
    const online = await tc.mgmt.get(`/controllers?filter=${encodeURIComponent('isOnline = true')}`);
    assert.equal(online.body.meta.pagination.totalCount, 1);
    assert.deepEqual(Object.keys(online.body.data[0].apiAddresses).sort(), ['edge-client', 'edge-management', 'edge-oidc', 'fabric']);
    const none = await tc.mgmt.get(`/controllers?filter=${encodeURIComponent('name = "elsewhere"')}`);
    assert.equal(none.body.meta.pagination.totalCount, 0);
    const bad = await tc.mgmt.get(`/controllers?filter=${encodeURIComponent('nme = "x"')}`);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'INVALID_FILTER');
    const client = await tc.client.get('/controllers');
    assert.equal(client.status, 200);
    assert.deepEqual(Object.keys(client.body.data[0].apiAddresses).sort(), ['edge-client', 'edge-oidc']);
    assert.deepEqual(client.body.data[0].apiAddresses['edge-oidc'], [{ url: `https://localhost:${tc.port}/oidc`, version: 'v1' }]);
    assertMatchesReference('client', 'GET', '/controllers', 200, client.body);
  });

  it('counts records in the summary (meta null)', async () => {
    const res = await tc.mgmt.get('/summary');
    assert.equal(res.status, 200);
    assert.equal(res.body.meta, null);
    assert.equal(res.body.data.identities, 1);
    assert.equal(res.body.data.identityTypes, 2);
    assert.equal(res.body.data.configTypes, 7);
    assert.equal(res.body.data.postureCheckTypes, 5);
    // Upstream's full key set, in its order.
    assert.deepEqual(Object.keys(res.body.data), [
      'apiSessionCertificates', 'apiSessions', 'authPolicies', 'authenticators', 'cas', 'configTypes', 'configs', 'controllers',
      'edgeRouterPolicies', 'enrollments', 'eventualEvents', 'externalJwtSigners', 'identities', 'identityTypes', 'mfas',
      'postureCheckTypes', 'postureChecks', 'revocations', 'routers', 'routers.edge', 'serviceEdgeRouterPolicies', 'servicePolicies',
      'services', 'services.edge', 'sessions', 'terminators',
    ]);
    for (const key of ['services', 'services.edge', 'routers', 'routers.edge', 'servicePolicies', 'edgeRouterPolicies', 'serviceEdgeRouterPolicies', 'sessions', 'terminators', 'configs', 'postureChecks', 'enrollments', 'cas', 'externalJwtSigners', 'mfas', 'apiSessionCertificates']) {
      assert.equal(res.body.data[key], 0, key);
    }
    const router = await tc.mgmt.post('/edge-routers', { name: 'summary-router' });
    assert.equal(router.status, 201, router.text);
    const after = (await tc.mgmt.get('/summary')).body.data;
    assert.equal(after['routers.edge'], 1);
    assert.equal(after.routers, 1);
    assert.equal(after.enrollments, 1);
    assert.equal((await tc.http.get('/edge/management/v1/summary')).status, 401);
  });
});

describe('GET /.well-known/est/cacerts', () => {
  it('is a base64 PKCS#7 bundle that openssl reads, at the root and under both bases', async () => {
    for (const path of ['/.well-known/est/cacerts', '/edge/client/v1/.well-known/est/cacerts', '/edge/management/v1/.well-known/est/cacerts']) {
      const res = await tc.http.get(path, { headers: { accept: '*/*' } });
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], 'application/pkcs7-mime');
      for (const line of res.text.split('\n')) assert.ok(line.length <= 64);
      const der = Buffer.from(res.text, 'base64');
      const out = execFileSync('openssl', ['pkcs7', '-inform', 'DER', '-print_certs', '-noout'], { input: der }).toString();
      assert.equal((out.match(/subject=/g) ?? []).length, 2, out);
    }
  });
});

describe('error conventions', () => {
  it('answers unknown routes with 404 NOT_FOUND in the error envelope', async () => {
    const res = await tc.http.get('/edge/management/v1/no-such-thing');
    assert.equal(res.status, 404);
    assert.equal(res.body.error.code, 'NOT_FOUND');
    assert.deepEqual(res.body.meta, { apiEnrollmentVersion: '0.0.1', apiVersion: '0.0.1' });
    assert.ok(res.body.error.requestId);
    const legacy = await tc.http.get('/no-such-thing');
    assert.equal(legacy.body.error.cause.message, 'path /edge/client/v1/no-such-thing was not found');
  });

  it('answers a known path with a wrong method with 405 METHOD_NOT_ALLOWED', async () => {
    const res = await tc.http.request('PUT', '/edge/management/v1/version');
    assert.equal(res.status, 405);
    assert.equal(res.body.error.code, 'METHOD_NOT_ALLOWED');
  });

  it('answers a body with a wrong content type with 415', async () => {
    const res = await tc.mgmt.request('POST', '/identities', { rawBody: 'name=x', contentType: 'text/plain' });
    assert.equal(res.status, 415);
    assert.equal(res.body.error.code, 'COULD_NOT_VALIDATE');
    assert.equal(res.body.error.cause.field, 'Content-Type');
  });

  it('answers malformed JSON with 400 COULD_NOT_PARSE_BODY', async () => {
    const res = await tc.mgmt.request('POST', '/identities', { rawBody: '{"name": ', contentType: 'application/json' });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.code, 'COULD_NOT_PARSE_BODY');
  });

  it('answers 401 with the missing-token challenge, and the invalid-token challenge for a bad token', async () => {
    const missing = await tc.http.get('/edge/management/v1/identities');
    assert.equal(missing.status, 401);
    assert.equal(missing.body.error.code, 'UNAUTHORIZED');
    assert.match(String(missing.headers['www-authenticate']), /^zt-session realm="zt-session" error="missing".*,Bearer realm="openziti-oidc" error="missing"/);
    const invalid = await tc.http.get('/edge/management/v1/identities', { token: '00000000-0000-4000-8000-000000000000' });
    assert.equal(invalid.status, 401);
    assert.equal(invalid.headers['www-authenticate'], 'zt-session realm="zt-session" error="invalid" error_description="token is invalid"');
  });
});

describe('CORS', () => {
  it('answers preflights as upstream and marks responses for any origin', async () => {
    const ok = await tc.http.request('OPTIONS', '/edge/management/v1/identities', {
      headers: { origin: 'https://console.example', 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'zt-session, content-type' },
    });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers['access-control-allow-origin'], '*');
    assert.equal(ok.headers['access-control-allow-methods'], 'PATCH');
    assert.equal(ok.headers['access-control-allow-headers'], 'Zt-Session,Content-Type');
    const noMethod = await tc.http.request('OPTIONS', '/edge/management/v1/identities', { headers: { origin: 'https://x' } });
    assert.equal(noMethod.status, 400);
    const badHeader = await tc.http.request('OPTIONS', '/edge/management/v1/identities', {
      headers: { origin: 'https://x', 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-custom' },
    });
    assert.equal(badHeader.status, 403);
    const simple = await tc.http.get('/version', { headers: { origin: 'https://x' } });
    assert.equal(simple.headers['access-control-allow-origin'], '*');
    assert.equal(simple.headers['access-control-allow-credentials'], 'true');
    const none = await tc.http.get('/version');
    assert.equal(none.headers['access-control-allow-origin'], undefined);
  });
});
