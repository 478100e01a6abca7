/**
 * Posture operations. Client API: `POST /posture-response` (one response) and `/posture-response-bulk`
 * (an array), full session, 201 with the services whose MFA prompt timers changed. Management API: an
 * identity's posture data and its refused session requests (identity read permission).
 */
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { RouteSpec } from '../http/route.ts';
import { callerOf } from '../http/caller.ts';
import { IdParams } from '../http/list-params.ts';
import { detailEnvelope, ok } from '../http/envelope.ts';
import { Nullable } from '../resources/common.schema.ts';
import type { IdentityService } from '../resources/identities/identity.service.ts';
import type { PostureService } from './posture.service.ts';

const DateTime = Type.String({ format: 'date-time' });
const AnyObject = Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true });

const PostureResponseServiceSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  postureQueryType: Type.String(),
  timeout: Type.Integer(),
  timeoutRemaining: Type.Integer(),
});
const PostureResponseSchema = Type.Object({ services: Type.Array(PostureResponseServiceSchema) });

const dataBase = { lastUpdatedAt: Nullable(DateTime), postureCheckId: Type.String(), timedOut: Type.Boolean() };
const PostureDataSchema = Type.Object({
  apiSessionPostureData: Type.Record(
    Type.String(),
    Type.Object({
      endpointState: Type.Object({ unlockedAt: Nullable(DateTime), wokenAt: Nullable(DateTime) }),
      mfa: Type.Object({
        apiSessionId: Type.String(),
        passedAt: Nullable(DateTime),
        passedMfa: Type.Boolean(),
        passedOnUnlock: Nullable(Type.Boolean()),
        passedOnWake: Nullable(Type.Boolean()),
      }),
      sdkInfo: AnyObject,
    }),
  ),
  domain: Type.Object({ ...dataBase, domain: Nullable(Type.String()) }),
  mac: Type.Object({ ...dataBase, addresses: Nullable(Type.Array(Type.String())) }),
  os: Type.Object({ ...dataBase, build: Nullable(Type.String()), type: Nullable(Type.String()), version: Nullable(Type.String()) }),
  processes: Type.Array(
    Type.Object({ ...dataBase, binaryHash: Type.String(), isRunning: Type.Boolean(), signerFingerprints: Type.Array(Type.String()) }),
  ),
});

/** Failure records are stored as rendered; their type-specific members pass through unchanged. */
const FailedServiceRequestSchema = Type.Object({
  apiSessionId: Type.String(),
  policyFailures: Type.Array(
    Type.Object({
      checks: Type.Array(Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true })),
      policyId: Type.String(),
      policyName: Type.String(),
    }),
  ),
  serviceId: Type.String(),
  serviceName: Type.String(),
  sessionType: Type.String(),
  when: DateTime,
});

const idOf = (req: FastifyRequest) => (req.params as { id: string }).id;

export function clientPostureRoutes(posture: PostureService): RouteSpec[] {
  return [
    {
      method: 'POST', url: '/posture-response', operationId: 'createPostureResponse', tag: 'Posture Checks',
      summary: 'Submit a posture response', access: 'session', body: AnyObject,
      response: { 201: detailEnvelope(PostureResponseSchema) },
      handler: async (req, reply) => reply.code(201).send(ok(await posture.submit(callerOf(req), [req.body], false))),
    },
    {
      method: 'POST', url: '/posture-response-bulk', operationId: 'createPostureResponseBulk', tag: 'Posture Checks',
      summary: 'Submit several posture responses', access: 'session', body: Type.Array(Type.Unsafe({})),
      response: { 201: detailEnvelope(PostureResponseSchema) },
      handler: async (req, reply) => reply.code(201).send(ok(await posture.submit(callerOf(req), req.body as unknown[], true))),
    },
  ];
}

export function managementPostureRoutes(posture: PostureService, identities: IdentityService): RouteSpec[] {
  return [
    {
      method: 'GET', url: '/identities/:id/posture-data', operationId: 'getIdentityPostureData', tag: 'Identity',
      summary: 'The current posture data of an identity', access: 'identity.read',
      params: IdParams, response: { 200: detailEnvelope(PostureDataSchema) },
      handler: async (req) => {
        await identities.get(idOf(req));
        return ok(await posture.postureData(idOf(req)));
      },
    },
    {
      method: 'GET', url: '/identities/:id/failed-service-requests', operationId: 'getIdentityFailedServiceRequests', tag: 'Identity',
      summary: 'Recent session requests of an identity refused for posture', access: 'identity.read',
      params: IdParams, response: { 200: detailEnvelope(Type.Array(FailedServiceRequestSchema)) },
      handler: async (req) => {
        await identities.get(idOf(req));
        return ok(await posture.failedServiceRequests(idOf(req)));
      },
    },
  ];
}
