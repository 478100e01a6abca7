/**
 * The error catalogue: every upstream error code with its HTTP status and message, declared once.
 * The domain throws `ApiError`; exactly one place (http/error-handler.ts) renders it into the upstream
 * error envelope. Messages are wire data that clients display, so they match upstream's text.
 */

export const errorCatalogue = {
  NOT_FOUND: [404, 'The resource requested was not found or is no longer available'],
  UNHANDLED: [500, 'An unhandled error occurred'],
  ENTITY_CAN_NOT_BE_DELETED: [400, 'The entity requested for delete can not be deleted'],
  ENTITY_CAN_NOT_BE_UPDATED: [400, 'The entity requested for update can not be updated'],
  INVALID_FIELD: [400, 'The field contains an invalid value'],
  COULD_NOT_VALIDATE: [400, 'The supplied request contains an invalid document or no valid accept content were available, see cause'],
  UNAUTHORIZED: [401, 'The request could not be completed. The session is not authorized or the credentials are invalid'],
  FORBIDDEN: [403, 'The request is not permitted for this resource'],
  INVALID_FILTER: [400, 'The filter query supplied is invalid'],
  INVALID_PAGINATION: [400, 'The pagination properties provided are invalid'],
  INVALID_SORT_IDENTIFIER: [400, 'The sort order supplied is invalid'],
  METHOD_NOT_ALLOWED: [405, 'The resource requested does not support this HTTP verb'],
  COULD_NOT_PARSE_BODY: [400, 'The body of the request could not be parsed'],
  COULD_NOT_READ_BODY: [500, 'The body of the request could not be read'],
  REQUEST_ENTITY_TOO_LARGE: [413, 'The request body exceeds the maximum accepted size'],
  INVALID_UUID: [400, 'The supplied UUID is invalid'],
  INVALID_CONTENT_TYPE: [400, 'The content type supplied is not acceptable'],
  UNSUPPORTED_MEDIA: [415, 'No suitable accept media types were detected, supports: application/json'],
  INVALID_AUTH: [401, 'The authentication request failed'],
  INVALID_AUTH_METHOD: [400, 'The supplied authentication method is not valid'],
  ENROLLMENT_EXPIRED: [400, 'The window for this enrollment has expired'],
  ENROLLMENT_IDENTITY_ALREADY_ENROLLED: [409, 'The token supplied for this enrollment already has a matching identity, cannot enroll a new identity'],
  COULD_NOT_PROCESS_CSR: [400, 'The supplied csr could not be processed'],
  ENROLLMENT_CA_NOT_VALID: [400, 'The CA tied to the supplied token is no longer valid'],
  ENROLLMENT_NO_VALID_CAS: [400, 'No CAs are valid for this request'],
  INVALID_ENROLLMENT_TOKEN: [400, 'The supplied token is not valid'],
  INVALID_ENROLLMENT_NOT_ALLOWED: [409, 'The configuration does not allow this enrollment'],
  INVALID_ENROLLMENT_ALREADY_ENROLLED: [410, 'The token provided has already been used to enroll'],
  INVALID_ENROLL_METHOD: [400, 'The supplied enrollment method is not valid'],
  MISSING_OR_INVALID_CSR: [400, 'The supplied enrollment request is missing or contains an invalid CSR'],
  NO_EDGE_ROUTERS_AVAILABLE: [400, 'No edge routers are assigned and online to handle the requested connection'],
  COULD_NOT_PARSE_x509_FROM_DER: [400, 'could not parse x509 from DER'],
  CERT_FAILED_VALIDATION: [400, 'certificate failed to validate against CA'],
  CERT_IN_USE: [409, 'The certificate supplied is already associated with another identity'],
  CA_ALREADY_VERIFIED: [409, 'CA has already been verified'],
  EXPECTED_PEM_CERTIFICATE: [400, "expected PEM block type 'CERTIFICATE'"],
  COULD_NOT_PARSE_DER_BLOCK: [400, "The certificate's DER block could not be parsed"],
  COULD_NOT_PARSE_PEM_BLOCK: [400, "The certificate's PEM block could not be parsed"],
  INVALID_COMMON_NAME: [400, 'The common name of the supplied certificate is invalid'],
  CERTIFICATE_FAILED_VALIDATION: [400, "The supplied certificate failed to validate against the CA's certificate chain"],
  CERTIFICATE_IS_NOT_CA: [400, 'Leading certificate is not a CA'],
  INVALID_AUTHENTICATOR_PROPERTIES: [400, 'The properties supplied did not match the authenticator method'],
  CAN_NOT_UPDATE_AUTHENTICATOR: [409, 'The authenticator cannot be updated in this fashion'],
  CAN_NOT_UPDATE_ROUTER: [409, 'The router was not added via the Edge API and cannot be updated'],
  MAX_AUTHENTICATOR_METHODS_REACHED: [409, 'The identity already has the maximum authenticators of the specified method'],
  RATE_LIMITED: [429, 'The requested operation is rate limited and the rate limit has been exceeded. Please try again later'],
  TIMEOUT: [503, 'The requested operation took too much time to reply'],
  SNAPSHOT_NOT_SUPPORTED: [409, 'This controller runs on PostgreSQL: back it up with PostgreSQL\'s own tools (pg_dump, base backups, replicas)'],
  STORAGE_UNAVAILABLE: [503, 'The controller could not write to its store (the disk is full or failing); nothing was changed. Try again later'],
  INVALID_POSTURE: [409, 'Posture response data is missing or wrong'],
  MFA_EXISTS: [409, 'An MFA record already exists, try removing it'],
  MFA_ENROLLMENT_NOT_STARTED: [404, 'MFA enrollment has not be started'],
  MFA_INVALID_TOKEN: [400, 'An invalid token/code was provided'],
  INVALID_BACKING_TOKEN_TYPE: [400, 'The backing token type is invalid'],
  MFA_NOT_ENROLLED: [409, 'The current identity is not enrolled in MFA'],
  COULD_NOT_PARSE_PROXY_CERT: [500, 'could not decode proxy client cert'],
  MISSING_CERT_CLAIM: [400, 'The certificate is expected to contain and externalId, which was not found'],
  FAILED_ER_REENROLLMENT: [500, 'the edge router failed to be re-enrolled, see cause'],
  INVALID_CLIENT_CERT: [400, 'The provided client certificate is invalid'],
  INVALID_CERT_PEM: [400, 'the supplied certificate PEM is either invalid or contains the incorrect number of certificates'],
  CAN_NOT_DELETE_REFERENCED_ENTITY: [409, 'the entity cannot be deleted because it is referenced by another entity, see cause'],
  REFERENCED_ENTITY_NOT_FOUND: [400, 'REFERENCED_ENTITY_NOT_FOUND'],
  ENROLLMENT_EXISTS: [409, 'ENROLLMENT_EXISTS'],
  SERVER_TOO_MANY_REQUESTS: [429, 'Too many requests to alter state have been issued. Please slow your request rate or try again later.'],
  EDGE_ROUTER_ENROLL_COMMON_NAME_INVALID: [400, "The edge router CSR enrollment must have a common name that matches the edge router's id"],
  NOT_IMPLEMENTED: [501, 'this operation is not implemented'],
} as const satisfies Record<string, readonly [number, string]>;

export type ErrorCode = keyof typeof errorCatalogue;

/** A field problem: rendered as `cause: {field, reason, value}` (value is always a string, Go `%v` style). */
export interface FieldCause {
  field: string;
  reason: string;
  value: string;
}

/** A nested error cause: rendered as `cause: {code, message}` (upstream renders plain errors as code UNHANDLED). */
export interface MessageCause {
  code: string;
  message: string;
  data?: Record<string, unknown>;
}

/** Any other cause shape upstream uses (e.g. `{data, message}` for generic causes). */
export type ErrorCause = FieldCause | MessageCause | { message: string; data?: Record<string, unknown> };

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  override readonly cause?: ErrorCause;
  /** Extra response headers (e.g. WWW-Authenticate on 401). */
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, options: { cause?: ErrorCause; message?: string; status?: number; headers?: Record<string, string> } = {}) {
    const [status, message] = errorCatalogue[code];
    super(options.message ?? message);
    this.name = 'ApiError';
    this.code = code;
    this.status = options.status ?? status;
    this.cause = options.cause;
    this.headers = options.headers;
  }
}

/** Renders a value the way upstream's `%v` does in field causes: strings as-is, null as `<nil>`, arrays as `[a b]`. */
export function formatCauseValue(value: unknown): string {
  if (value === undefined || value === null) return '<nil>';
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return `[${value.map(formatCauseValue).join(' ')}]`;
  if (typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .map((k) => `${k}:${formatCauseValue((value as Record<string, unknown>)[k])}`);
    return `map[${entries.join(' ')}]`;
  }
  return String(value);
}

/** The JSON kind of a value, in Go's unmarshal vocabulary (decode errors name it). */
export function jsonKind(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'boolean') return 'bool';
  return typeof value === 'object' ? 'object' : typeof value;
}

/** 400 COULD_NOT_VALIDATE naming the field, the reason and the offending value. */
export function fieldError(field: string, reason: string, value: unknown): ApiError {
  return new ApiError('COULD_NOT_VALIDATE', { cause: { field, reason, value: formatCauseValue(value) } });
}

/** 400 INVALID_FIELD (a rule between fields), upstream's cause: `the value '<value>' for '<field>' is invalid: <reason>`. */
export function invalidField(field: string, reason: string, value: unknown): ApiError {
  return new ApiError('INVALID_FIELD', { cause: { code: 'UNHANDLED', message: `the value '${formatCauseValue(value)}' for '${field}' is invalid: ${reason}` } });
}

/**
 * A `typeId` naming no known type: upstream can not decode such a body at all (400 COULD_NOT_PARSE_BODY), so it
 * is refused before any other field is looked at.
 */
export function unknownTypeId(typeId: string): ApiError {
  return new ApiError('COULD_NOT_PARSE_BODY', { cause: { code: 'UNHANDLED', message: `invalid typeId value: ${JSON.stringify(typeId)}` } });
}

/** A missing `typeId` (absent, null or empty), which upstream reads as the empty string. */
export function missingTypeId(field = 'typeId'): ApiError {
  return fieldError(field, `${field} in body is required`, '');
}

/** 404 NOT_FOUND with upstream's cause text: `<type> with id <id> not found`. */
export function notFound(singular: string, id: string): ApiError {
  return new ApiError('NOT_FOUND', { cause: { code: 'UNHANDLED', message: `${singular} with id ${id} not found` } });
}

/** Throws NOT_FOUND unless the value is present; narrows the type for the caller. */
export function assertFound<T>(value: T | undefined | null, singular: string, id: string): T {
  if (value === undefined || value === null) throw notFound(singular, id);
  return value;
}

/** 400 INVALID_FILTER whose cause carries the parser's or checker's text, as upstream renders it. */
export function invalidFilter(message: string): ApiError {
  return new ApiError('INVALID_FILTER', { cause: { code: 'UNHANDLED', message } });
}
