/**
 * The one error type of Antenna. Anything thrown from a route, a service or a
 * plugin that carries a `statusCode` reaches the client as `{"error": message}`
 * with that status; everything else becomes a logged 500 with a generic body.
 *
 * `code` is a stable machine-readable name (ANTENNA_NOT_FOUND…) for logs and
 * tests; clients only ever see the message.
 */
export class AppError extends Error {
  readonly statusCode: number;
  readonly code: string;
  /** Extra response headers, e.g. Retry-After on 429/503. */
  readonly headers: Record<string, string>;

  constructor(statusCode: number, code: string, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'AppError';
    this.statusCode = statusCode;
    this.code = code;
    this.headers = headers;
  }
}

/** Duck-typed check so errors survive being thrown across two copies of the SDK. */
export function isAppError(err: unknown): err is AppError {
  return (
    typeof err === 'object' && err !== null &&
    typeof (err as AppError).statusCode === 'number' &&
    typeof (err as AppError).code === 'string' && (err as AppError).code.startsWith('ANTENNA_')
  );
}

export const errors = {
  badRequest: (message: string) => new AppError(400, 'ANTENNA_BAD_REQUEST', message),
  unauthorized: (message = 'Unauthorized') => new AppError(401, 'ANTENNA_UNAUTHORIZED', message),
  forbidden: (message = 'Forbidden') => new AppError(403, 'ANTENNA_FORBIDDEN', message),
  inactive: () => new AppError(403, 'ANTENNA_INACTIVE', 'User Account Inactive'),
  notFound: (message = 'Not found') => new AppError(404, 'ANTENNA_NOT_FOUND', message),
  conflict: (message: string) => new AppError(409, 'ANTENNA_CONFLICT', message),
  payloadTooLarge: (message = 'Payload too large') => new AppError(413, 'ANTENNA_PAYLOAD_TOO_LARGE', message),
  unsupportedMediaType: (message = 'Unsupported media type') => new AppError(415, 'ANTENNA_UNSUPPORTED_MEDIA_TYPE', message),
  rangeNotSatisfiable: (message = 'Range not satisfiable') => new AppError(416, 'ANTENNA_RANGE', message),
  tooManyRequests: (retryAfterSeconds: number, message = 'Too many requests') =>
    new AppError(429, 'ANTENNA_RATE_LIMITED', message, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) }),
  badGateway: (message: string, retryAfterSeconds?: number) =>
    new AppError(502, 'ANTENNA_UPSTREAM', message, retryAfterSeconds ? { 'retry-after': String(retryAfterSeconds) } : {}),
  unavailable: (message: string, retryAfterSeconds?: number) =>
    new AppError(503, 'ANTENNA_UNAVAILABLE', message, retryAfterSeconds ? { 'retry-after': String(retryAfterSeconds) } : {}),
  /** Start-up problems: bad config, a plugin that cannot load. Never reaches HTTP. */
  startup: (message: string) => new AppError(500, 'ANTENNA_STARTUP', message),
};
