/**
 * The one place errors are rendered: ApiError, Fastify's own request errors and anything unexpected
 * become upstream's error envelope `{error:{cause?,code,message,requestId},meta:{apiEnrollmentVersion,
 * apiVersion}}`. Unexpected errors are logged and answered 500 UNHANDLED without their detail.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';
import { newShortId } from '../ids.ts';
import { headerValue } from './header-value.ts';

const errorMeta = { apiEnrollmentVersion: '0.0.1', apiVersion: '0.0.1' };

export function renderError(err: ApiError) {
  return {
    error: {
      ...(err.cause ? { cause: err.cause } : {}),
      code: err.code,
      message: err.message,
      requestId: newShortId(),
    },
    meta: errorMeta,
  };
}

/** Maps Fastify's framework errors (content type, body parsing, size) onto upstream codes. */
function fromFrameworkError(err: FastifyError, req: FastifyRequest): ApiError | undefined {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': {
      const ct = String(req.headers['content-type'] ?? 'application/octet-stream');
      return new ApiError('COULD_NOT_VALIDATE', {
        status: 415,
        cause: { field: 'Content-Type', reason: `unsupported media type "${ct}", only [application/json] are allowed`, value: ct },
      });
    }
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('REQUEST_ENTITY_TOO_LARGE');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('COULD_NOT_PARSE_BODY', { cause: { code: 'UNHANDLED', message: err.message } });
    default:
      if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
        return new ApiError('COULD_NOT_VALIDATE', { status: err.statusCode, cause: { code: 'UNHANDLED', message: err.message } });
      }
      return undefined;
  }
}

export function sendError(reply: FastifyReply, err: ApiError): FastifyReply {
  if (err.headers) for (const [name, value] of Object.entries(err.headers)) reply.header(name, headerValue(value));
  return reply.code(err.status).type('application/json').send(renderError(err));
}

/**
 * The store could not write (disk full, I/O failure) or stayed locked past its timeout: the transaction was
 * rolled back, so the request changed nothing and may be retried. Answered 503 with a clear reason.
 */
function fromStoreError(err: Error): ApiError | undefined {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return undefined;
  if (code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR') || code === 'SQLITE_READONLY' || code === 'SQLITE_CANTOPEN') return new ApiError('STORAGE_UNAVAILABLE');
  if (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_') || code === 'SQLITE_LOCKED') return new ApiError('TIMEOUT');
  return undefined;
}

export function errorHandler(err: FastifyError | ApiError | Error, req: FastifyRequest, reply: FastifyReply) {
  if (err instanceof ApiError) return sendError(reply, err);
  const mapped = fromFrameworkError(err as FastifyError, req);
  if (mapped) return sendError(reply, mapped);
  const store = fromStoreError(err);
  if (store) {
    req.log.warn({ code: (err as { code?: string }).code, url: req.routeOptions?.url }, 'store write failed');
    return sendError(reply, store);
  }
  req.log.error({ err, url: req.routeOptions?.url }, 'unhandled error');
  return sendError(reply, new ApiError('UNHANDLED'));
}
