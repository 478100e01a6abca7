/**
 * Informational operations: version (also at `/` and `/version` outside the API bases), capabilities,
 * protocols, controllers, summary counts, the embedded OpenAPI documents (the fabric one also at `/fabric`),
 * and the CA bundle at `/.well-known/est/cacerts`. None of these change anything.
 */
import { Type } from '@sinclair/typebox';
import { stringify as toYaml } from 'yaml';
import type { RouteSpec } from '../http/route.ts';
import { detailEnvelope, list, listEnvelope, ok, okNullMeta } from '../http/envelope.ts';
import { IdParams, ListQuery, listRequest } from '../http/list-params.ts';
import { ApiError } from '../errors.ts';
import { baseEntityProperties } from '../resources/common.schema.ts';
import type { SystemInfo } from './system-info.ts';
import type { ControllerService } from '../resources/controllers/controller.service.ts';
import { controllerResource } from '../resources/controllers/controller.resource.ts';

const ApiVersion = Type.Object({ apiBaseUrls: Type.Array(Type.String()), path: Type.String() });
export const VersionDetail = Type.Object({
  apiVersions: Type.Record(Type.String(), Type.Record(Type.String(), ApiVersion)),
  buildDate: Type.String(),
  capabilities: Type.Array(Type.String()),
  revision: Type.String(),
  runtimeVersion: Type.String(),
  version: Type.String(),
});

const SpecDetail = Type.Object({ ...baseEntityProperties, name: Type.String() });


const cacertsResponse = { raw: 'base64 encoded PKCS#7 bundle of the CA certificates (application/pkcs7-mime)' };

/** `GET /version` (and `/`), served at the root and under each API base. */
export function versionRoutes(info: SystemInfo, operationPrefix = ''): RouteSpec[] {
  const versionRoute = (url: string, operationId: string): RouteSpec => ({
    method: 'GET', url, operationId: operationPrefix + operationId, tag: 'Informational', summary: 'Version information',
    access: 'public', response: { 200: detailEnvelope(VersionDetail) },
    handler: () => ok(info.version()),
  });
  return [versionRoute('/', 'listRoot'), versionRoute('/version', 'listVersion')];
}

export function cacertsRoute(info: SystemInfo, operationPrefix = ''): RouteSpec {
  return {
    method: 'GET', url: '/.well-known/est/cacerts', operationId: operationPrefix + 'listWellKnownCas', tag: 'Well Known',
    summary: 'CA certificates that clients use to trust the controller', access: 'public',
    produces: ['application/pkcs7-mime'], response: { 200: cacertsResponse },
    handler: (_req, reply) =>
      reply.header('content-type', 'application/pkcs7-mime').header('content-transfer-encoding', 'base64').send(info.caBundlePkcs7()),
  };
}

/**
 * `GET /fabric`: the fabric API's document as JSON, without credentials. Upstream answers this path with an
 * API document too (its edge management one, by a slip); this serves the document of the API below it.
 */
export function fabricRootRoute(info: SystemInfo): RouteSpec {
  return {
    method: 'GET', url: '/fabric', operationId: 'rootFabricSpec', tag: 'Informational', summary: 'The fabric API document',
    access: 'public', response: { 200: { raw: 'the OpenAPI document of the fabric API (JSON)' } },
    handler: (_req, reply) => reply.type('application/json').send(JSON.stringify(info.specDocument('fabric'))),
  };
}

export function systemRoutes(info: SystemInfo, controllers: ControllerService, api: 'client' | 'management'): RouteSpec[] {
  const tag = 'Informational';
  const routes: RouteSpec[] = [
    ...versionRoutes(info),
    cacertsRoute(info),
    {
      method: 'GET', url: '/enumerated-capabilities', operationId: 'listEnumeratedCapabilities', tag, summary: 'Capabilities this controller knows',
      access: 'public', response: { 200: detailEnvelope(Type.Array(Type.String())) },
      handler: () => ok(info.enumeratedCapabilities()),
    },
    {
      method: 'GET', url: '/specs', operationId: 'listSpecs', tag, summary: 'The API documents this controller serves',
      access: 'public', response: { 200: detailEnvelope(Type.Array(SpecDetail)) },
      handler: () => ok(info.specs(api)),
    },
    {
      method: 'GET', url: '/specs/:id', operationId: 'detailSpec', tag, summary: 'One API document record',
      access: 'public', params: IdParams, response: { 200: detailEnvelope(SpecDetail) },
      handler: (req) => {
        const id = (req.params as { id: string }).id;
        const spec = info.specs(api).find((s) => s.id === id);
        if (!spec) throw new ApiError('NOT_FOUND'); // upstream names no cause here
        return ok(spec);
      },
    },
    {
      method: 'GET', url: '/specs/:id/spec', operationId: 'detailSpecBody', tag, summary: 'An API document (YAML by default, JSON on request)',
      access: 'public', params: IdParams, produces: ['text/yaml', 'application/json'], response: { 200: { raw: 'the OpenAPI document' } },
      handler: (req, reply) => {
        const id = (req.params as { id: string }).id;
        const doc = info.specs(api).some((s) => s.id === id) ? info.specDocument(id) : undefined;
        if (!doc) throw new ApiError('NOT_FOUND');
        const accept = String(req.headers.accept ?? '');
        if (accept.includes('application/json') && !accept.includes('text/yaml')) {
          return reply.type('application/json').send(JSON.stringify(doc));
        }
        return reply.type('text/yaml').send(toYaml(doc));
      },
    },
    {
      method: 'GET', url: '/controllers', operationId: 'listControllers', tag, summary: 'Controllers of this network',
      access: 'session', querystring: ListQuery, response: { 200: listEnvelope(controllerResource.schemas.detail) },
      handler: async (req) => {
        const r = await controllers.list(listRequest(req));
        return list(r.items.map(controllers.presentFor(api)), r.page, r.filterableFields);
      },
    },
  ];
  if (api === 'client') {
    routes.push({
      method: 'GET', url: '/protocols', operationId: 'listProtocols', tag, summary: 'Edge protocols this controller listens on',
      access: 'public', response: { 200: detailEnvelope(Type.Record(Type.String(), Type.Object({ address: Type.String() }))) },
      handler: () => ok(info.protocols()),
    });
  } else {
    routes.push({
      method: 'GET', url: '/summary', operationId: 'listSummary', tag, summary: 'Record counts by type',
      access: 'admin', response: { 200: detailEnvelope(Type.Record(Type.String(), Type.Integer()), 'null') },
      handler: async () => okNullMeta(await info.summary()),
    });
  }
  return routes;
}
