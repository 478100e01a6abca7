/**
 * The enroll operations of the client API (enrollment.md §2; client seeds §4.5). None takes a session.
 *
 * - `POST /enroll?method=&token=` is what real clients call. Like upstream's pre-routing interceptor, a body
 *   in `application/pkcs7`, `application/x-pem-file` or `text/plain` (or no Content-Type with `method=ca`) is
 *   the legacy form: the raw body is the client CSR (an Accept header that does not admit JSON answers 406,
 *   as for every operation). Any other body is the JSON `genericEnroll` document.
 * - The method-specific paths (`/enroll/ott`, `/ottca`, `/ca`, `/updb`, `/erott`, `/token`, `/extend/router`)
 *   take their spec bodies and dispatch to the same methods.
 *
 * Method resolution: `ca` and `token` (and any method that declares it needs no token) skip the token
 * lookup; every other request must name an outstanding enrollment by token (unknown or used:
 * INVALID_ENROLLMENT_TOKEN), an explicit method must match it (INVALID_ENROLL_METHOD), and it must not have
 * expired (ENROLLMENT_EXPIRED). The strategy comes from the registered methods; one that is not registered
 * is INVALID_ENROLL_METHOD. Successes are `{data, meta:{}}` with `Content-Type: application/json` exactly
 * (no charset): the Go SDK stores any other response as the certificate itself (§2.1).
 *
 * Also here: `POST /enroll/challenge` and `GET /enroll/jwks`, which upstream never implemented (§2.10) and
 * the seeds require, built on the TLS server key that signs enrollment JWTs. The JWKS lists the keys of every live
 * controller of the network (own first); the challenge is answered for this controller's own key only, since only
 * it holds that private key.
 */
import { sign as signBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type TSchema } from '@sinclair/typebox';
import { ApiError, fieldError } from '../errors.ts';
import type { RouteSpec } from '../http/route.ts';
import { peerCertificates } from '../http/caller.ts';
import { detailEnvelope } from '../http/envelope.ts';
import { Password, Username } from '../resources/common.schema.ts';
import type { Store } from '../store/store.ts';
import { systemClock, type Clock } from '../resources/entity-service.ts';
import { jwtAlgorithmFor } from '../pki/keys.ts';
import { networkJwks, type JwksSource } from '../pki/jwks.ts';
import { createJwtKeyring, type JwtKeyring } from '../pki/jwt-keyring.ts';
import type { ControllerMember, Membership } from '../cluster/membership.ts';
import type { EnrollInput, EnrollMethod, EnrollmentRow } from './enroll-method.ts';
import { findEnrollmentByToken, isEnrollmentExpired } from './enrollment-store.ts';

export interface EnrollRouteDeps {
  store: Store;
  /** The registered strategies; read on every request, so methods pushed after mounting are found. */
  methods: readonly EnrollMethod[];
  pki: JwksSource & { caBundlePem: string };
  /** The network's controllers, whose keys the JWKS lists; absent: this controller alone. */
  membership?: Pick<Membership, 'known'>;
  clock?: Clock;
}

/** Media types upstream's interceptor treats as a raw PEM body. */
const LEGACY_MEDIA_TYPES = new Set(['application/pkcs7', 'application/x-pem-file', 'text/plain']);
/** Methods upstream resolves without a token lookup. */
const TOKENLESS_METHODS = new Set(['ca', 'token']);
/** Strategies that only their own path reaches, never `?method=`. */
const PATH_ONLY_METHODS = new Set(['extend-router']);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const GenericEnrollProperties = {
  certCsr: Type.String(),
  clientCsr: Type.String(),
  name: Type.String(),
  password: Password,
  serverCertCsr: Type.String(),
  username: Username,
};
// A JSON genericEnroll document, a raw PEM text (legacy media types), or nothing at all.
const GenericEnrollBody = Type.Unsafe<Record<string, unknown> | string | null>({
  type: ['object', 'string', 'null'],
  properties: GenericEnrollProperties,
});
const GenericEnrollQuery = Type.Object({ token: Type.Optional(Type.String()), method: Type.Optional(Type.String()) });
const OttEnrollBody = Type.Object({ clientCsr: Type.Optional(Type.String()), token: Type.Optional(Type.String()) });
const ErOttEnrollBody = Type.Object({
  clientCsr: Type.Optional(Type.String()),
  serverCsr: Type.Optional(Type.String()),
  token: Type.Optional(Type.String()),
});
const UpdbEnrollBody = Type.Object({ password: Type.Optional(Password), username: Type.Optional(Username) });
const UpdbEnrollQuery = Type.Object({ token: Type.String({ format: 'uuid' }) });
const RouterExtendBody = Type.Object({ certCsr: Type.String(), serverCertCsr: Type.String() });
const TokenEnrollBody = Type.Unsafe<Record<string, unknown> | null>({ type: ['object', 'null'], properties: { clientCsr: Type.String() } });
const NonceChallenge = Type.Object({ keyId: Type.String(), nonce: Type.String({ format: 'uuid' }) });

const EnrollmentCerts = Type.Object({
  ca: Type.Optional(Type.String()),
  cert: Type.Optional(Type.String()),
  serverCert: Type.Optional(Type.String()),
});
const certsEnvelope = detailEnvelope(EnrollmentCerts);
const emptyDataEnvelope = detailEnvelope(Type.Unsafe({ type: 'object', additionalProperties: true }));
const NonceSignature = Type.Object({ algorithm: Type.String(), caPool: Type.String(), kid: Type.String(), signature: Type.String() });
const Jwks = Type.Object({ keys: Type.Array(Type.Unsafe({ type: 'object', additionalProperties: true })) });

const ENROLL_CONSUMES = ['application/json', 'application/x-pem-file', 'application/pkcs7', 'text/plain'];

/** The media type of the request body, lower-case, without parameters; '' when there is no Content-Type. */
function mediaTypeOf(req: FastifyRequest): string {
  return String(req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
}

/** Writes the bytes itself so the media type stays exactly `application/json` (no charset parameter). */
function sendJson(reply: FastifyReply, body: unknown): FastifyReply {
  return reply.code(200).header('content-type', 'application/json').send(Buffer.from(JSON.stringify(body), 'utf8'));
}

function stringField(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** The JSON request fields every method may read, copied without anything else the client sent. */
function enrollBody(source: Record<string, unknown>): EnrollInput['body'] {
  const body: EnrollInput['body'] = {};
  for (const key of ['name', 'clientCsr', 'certCsr', 'serverCertCsr', 'username', 'password'] as const) {
    const value = stringField(source[key]);
    if (value !== undefined) body[key] = value;
  }
  return body;
}

export function enrollRoutes(deps: EnrollRouteDeps): RouteSpec[] {
  const clock = deps.clock ?? systemClock;
  const keyring = createJwtKeyring<ControllerMember>(deps.pki, () => deps.membership?.known() ?? []);
  const methodNamed = (name: string) => deps.methods.find((m) => m.name === name);

  async function run(req: FastifyRequest, reply: FastifyReply, method: EnrollMethod, enrollment: EnrollmentRow | undefined, body: EnrollInput['body']) {
    const data = await method.enroll({
      method: method.name,
      ...(enrollment ? { enrollment } : {}),
      body,
      peerCertificates: peerCertificates(req),
      headers: req.headers,
    });
    return sendJson(reply, { data: data ?? {}, meta: {} });
  }

  /** Resolves the method (and the enrollment for token methods), then lets the strategy do the work. */
  async function dispatch(req: FastifyRequest, reply: FastifyReply, requested: string | undefined, token: string | undefined, body: EnrollInput['body']) {
    if (requested !== undefined && PATH_ONLY_METHODS.has(requested)) throw new ApiError('INVALID_ENROLL_METHOD');
    const named = requested === undefined ? undefined : methodNamed(requested);
    if (requested !== undefined && (named ? !named.usesToken : TOKENLESS_METHODS.has(requested))) {
      if (!named) throw new ApiError('INVALID_ENROLL_METHOD');
      return run(req, reply, named, undefined, body);
    }
    const enrollment = token ? await findEnrollmentByToken(deps.store, token) : undefined;
    if (!enrollment) throw new ApiError('INVALID_ENROLLMENT_TOKEN');
    if (requested !== undefined && requested !== enrollment.method) throw new ApiError('INVALID_ENROLL_METHOD');
    if (isEnrollmentExpired(enrollment, clock.now())) throw new ApiError('ENROLLMENT_EXPIRED');
    const method = methodNamed(enrollment.method);
    if (!method) throw new ApiError('INVALID_ENROLL_METHOD');
    return run(req, reply, method, enrollment, body);
  }

  async function genericEnroll(req: FastifyRequest, reply: FastifyReply) {
    const query = req.query as { token?: string; method?: string };
    const requested = query.method === undefined || query.method === '' ? undefined : query.method;
    const mediaType = mediaTypeOf(req);
    if (LEGACY_MEDIA_TYPES.has(mediaType) || (mediaType === '' && requested === 'ca')) {
      const raw = typeof req.body === 'string' ? req.body : '';
      return dispatch(req, reply, requested, query.token, raw.trim() === '' ? {} : { clientCsr: raw });
    }
    // The spec path: the token is a UUID by schema, the body a genericEnroll object or nothing.
    if (query.token !== undefined && !UUID.test(query.token)) {
      throw fieldError('token', `token in query must be of type uuid: ${JSON.stringify(query.token)}`, query.token);
    }
    const body = req.body;
    if (body !== undefined && body !== null && typeof body !== 'object') {
      throw fieldError('body', `body in body must be of type object: ${JSON.stringify(String(body))}`, body);
    }
    return dispatch(req, reply, requested, query.token, enrollBody((body ?? {}) as Record<string, unknown>));
  }

  const bodyOf = (req: FastifyRequest) => (req.body ?? {}) as Record<string, unknown>;
  const route = (r: Omit<RouteSpec, 'method' | 'tag' | 'access'> & { method?: RouteSpec['method'] }): RouteSpec => ({
    method: 'POST',
    tag: 'Enroll',
    access: 'public',
    ...r,
  });
  const certsResponse: Record<number, TSchema> = { 200: certsEnvelope };

  return [
    route({
      url: '/enroll', operationId: 'enroll', summary: 'Enroll with a one-time token, a CA-issued certificate or an external token (generic form)',
      querystring: GenericEnrollQuery, body: GenericEnrollBody, consumes: ENROLL_CONSUMES, produces: ['application/json'],
      response: certsResponse,
      handler: genericEnroll,
    }),
    route({
      url: '/enroll/ott', operationId: 'enrollOtt', summary: 'Enroll an identity with a one-time token and a CSR',
      body: OttEnrollBody, response: certsResponse,
      handler: (req, reply) => {
        const body = bodyOf(req);
        return dispatch(req, reply, 'ott', stringField(body.token), enrollBody(body));
      },
    }),
    route({
      url: '/enroll/ottca', operationId: 'enrollOttCa', summary: 'Enroll an identity with a one-time token and a pre-issued third-party certificate',
      body: OttEnrollBody, response: { 200: emptyDataEnvelope },
      handler: (req, reply) => dispatch(req, reply, 'ottca', stringField(bodyOf(req).token), {}),
    }),
    route({
      url: '/enroll/ca', operationId: 'enrollCa', summary: 'Enroll a new identity with a certificate from a verified third-party CA',
      response: { 200: emptyDataEnvelope },
      handler: (req, reply) => dispatch(req, reply, 'ca', undefined, {}),
    }),
    route({
      url: '/enroll/updb', operationId: 'enrollUpdb', summary: 'Enroll an identity with a user name and password',
      querystring: UpdbEnrollQuery, body: UpdbEnrollBody, response: { 200: emptyDataEnvelope },
      handler: (req, reply) => dispatch(req, reply, 'updb', (req.query as { token: string }).token, enrollBody(bodyOf(req))),
    }),
    route({
      url: '/enroll/erott', operationId: 'enrollErOtt', summary: 'Enroll an edge router with a one-time token',
      body: ErOttEnrollBody, response: certsResponse,
      handler: (req, reply) => {
        const body = bodyOf(req);
        const clientCsr = stringField(body.clientCsr);
        const serverCsr = stringField(body.serverCsr);
        return dispatch(req, reply, 'erott', stringField(body.token), {
          ...(clientCsr !== undefined ? { certCsr: clientCsr, clientCsr } : {}),
          ...(serverCsr !== undefined ? { serverCertCsr: serverCsr } : {}),
        });
      },
    }),
    route({
      url: '/enroll/extend/router', operationId: 'extendRouterEnrollment', summary: "Extend a router's certificates with its current client certificate",
      body: RouterExtendBody, response: certsResponse,
      handler: (req, reply) => {
        const method = methodNamed('extend-router');
        if (!method) throw new ApiError('INVALID_ENROLL_METHOD');
        return run(req, reply, method, undefined, enrollBody(bodyOf(req)));
      },
    }),
    route({
      url: '/enroll/token', operationId: 'enrollToken', summary: 'Enroll a new identity with a token from an external JWT signer',
      body: TokenEnrollBody, response: certsResponse,
      handler: (req, reply) => {
        // The operation declares the header required, so its absence is a validation error, as upstream.
        if (!req.headers.authorization) throw fieldError('Authorization', 'Authorization in header is required', '');
        return dispatch(req, reply, 'token', undefined, enrollBody(bodyOf(req)));
      },
    }),
    route({
      url: '/enroll/challenge', operationId: 'enrollmentChallenge', summary: 'Prove this controller holds the enrollment signing key by signing a nonce',
      body: NonceChallenge, response: { 200: NonceSignature },
      handler: (req, reply) => {
        const { nonce, keyId } = req.body as { nonce: string; keyId: string };
        return sendJson(reply, signChallenge(deps.pki, nonce, keyId, keyring));
      },
    }),
    route({
      method: 'GET', url: '/enroll/jwks', operationId: 'getEnrollmentJwks', summary: 'List the keys that sign enrollment JWTs',
      response: { 200: Jwks },
      handler: async (_req, reply) => sendJson(reply, await networkJwks(deps.pki, keyring)),
    }),
  ];
}

const HASH_BY_ALGORITHM = { ES256: 'sha256', ES384: 'sha384', ES512: 'sha512', RS256: 'sha256' } as const;

/**
 * The challenge answer (enrollment.md §2.10 design): the UTF-8 nonce signed with the enrollment signing
 * key as a JWS signature would be (raw r‖s for ECDSA, PKCS#1 v1.5 for RSA), base64url, with the algorithm,
 * the key id and the CA bundle the client should trust afterwards.
 */
export function signChallenge(
  pki: JwksSource & { caBundlePem: string },
  nonce: string,
  keyId: string,
  network?: Pick<JwtKeyring<ControllerMember>, 'member'>,
) {
  if (keyId !== pki.serverCertFingerprint) {
    const other = network?.member(keyId);
    if (other) {
      throw fieldError(
        'keyId',
        `the key ${JSON.stringify(keyId)} is controller ${other.id}'s: only that controller can answer for it (this controller's key id is ${pki.serverCertFingerprint})`,
        keyId,
      );
    }
    throw fieldError('keyId', `no enrollment signing key has the id ${JSON.stringify(keyId)}`, keyId);
  }
  const algorithm = jwtAlgorithmFor(pki.serverKey);
  const signature = signBytes(HASH_BY_ALGORITHM[algorithm], Buffer.from(nonce, 'utf8'), { key: pki.serverKey, dsaEncoding: 'ieee-p1363' });
  return { algorithm, caPool: pki.caBundlePem, kid: pki.serverCertFingerprint, signature: signature.toString('base64url') };
}

/** `GET /network-jwts` (both APIs, no session): `{data:[{name, token}], meta:{}}` without pagination. */
// The C SDK sends `?limit=N&offset=0`; no query schema, so those are ignored.
export function networkJwtRoute(source: { networkJwts(): Promise<Array<{ name: string; token: string }>> }): RouteSpec {
  return {
    method: 'GET', url: '/network-jwts', operationId: 'listNetworkJWTs', tag: 'Informational',
    summary: 'List JWTs that let a client bootstrap trust in the network', access: 'public',
    response: {
      200: Type.Object({
        data: Type.Array(Type.Object({ name: Type.String(), token: Type.String() })),
        meta: Type.Object({}),
      }),
    },
    handler: async () => ({ data: await source.networkJwts(), meta: {} }),
  };
}
