/**
 * Every failure of the SDK is a CairnStorageError: a stable `code` callers
 * can switch on (S3's own code when the server sent one) and the HTTP status
 * when there was a response.
 */

/** Codes the SDK itself produces; S3's codes (NoSuchKey, AccessDenied, ...) pass through as the server sent them. */
export type CairnStorageErrorCode =
  | 'InvalidArgument'
  | 'NetworkError'
  | 'SourceStreamError'
  | 'CidMismatch'
  | 'UnverifiableCid'
  | 'NoDefaultBucket'
  | 'TooManyParts'
  | 'MissingHash'
  | 'GatewayError'
  | 'NotFound'
  | (string & {});

export interface CairnStorageErrorDetails {
  code: CairnStorageErrorCode;
  /** The HTTP status of the response that failed; undefined when no response came (network, local checks). */
  status?: number;
  /** S3's request id, when the server answered. */
  requestId?: string;
  /** For a failed multipart upload: its id, and whether aborting it on the server succeeded. */
  uploadId?: string;
  aborted?: boolean;
  cause?: unknown;
}

export class CairnStorageError extends Error {
  override readonly name = 'CairnStorageError';
  readonly code: CairnStorageErrorCode;
  readonly status: number | undefined;
  readonly requestId: string | undefined;
  readonly uploadId: string | undefined;
  readonly aborted: boolean | undefined;

  constructor(message: string, details: CairnStorageErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = details.code;
    this.status = details.status;
    this.requestId = details.requestId;
    this.uploadId = details.uploadId;
    this.aborted = details.aborted;
  }
}

export function invalidArgument(message: string): CairnStorageError {
  return new CairnStorageError(message, { code: 'InvalidArgument', status: 400 });
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
]);

/** Names the v3 client gives HEAD failures, which carry no body and so no S3 code. */
const HEAD_CODES: Record<number, string> = { 400: 'BadRequest', 403: 'AccessDenied', 404: 'NoSuchKey' };

interface SdkErrorShape {
  name?: string;
  message?: string;
  code?: string;
  Code?: string;
  $fault?: string;
  $metadata?: { httpStatusCode?: number; requestId?: string };
  $response?: { statusCode?: number };
  cause?: unknown;
}

/**
 * The system error code (ECONNREFUSED, ...) of an error, its causes, or the
 * errors it aggregates (Node's happy eyeballs). Errors crossing realms get
 * wrapped ("AWS SDK error wrapper for Error: connect ECONNREFUSED ..."), so the
 * message is read too.
 */
function systemCode(err: unknown, depth = 0): string | undefined {
  if (!err || typeof err !== 'object' || depth > 4) return undefined;
  const e = err as SdkErrorShape & { errors?: unknown[] };
  if (typeof e.code === 'string' && /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test(e.code)) return e.code;
  for (const inner of [e.cause, ...(Array.isArray(e.errors) ? e.errors : [])]) {
    const found = systemCode(inner, depth + 1);
    if (found) return found;
  }
  const inMessage =
    typeof e.message === 'string'
      ? /\b(E(?:CONNREFUSED|CONNRESET|PIPE|TIMEDOUT|NOTFOUND|AI_AGAIN|HOSTUNREACH|NETUNREACH))\b/.exec(e.message)
      : null;
  return inMessage?.[1] ?? (typeof e.code === 'string' ? e.code : undefined);
}

/**
 * Turns whatever the AWS client, fetch or a source stream threw into a
 * CairnStorageError. `operation` names what was being done, for the message.
 */
export function toStorageError(err: unknown, operation: string, extra: Partial<CairnStorageErrorDetails> = {}): CairnStorageError {
  if (err instanceof CairnStorageError) {
    if (!extra.uploadId) return err;
    return new CairnStorageError(err.message, { code: err.code, status: err.status, requestId: err.requestId, cause: err.cause, ...extra });
  }
  const e = (err ?? {}) as SdkErrorShape;
  const status = e.$metadata?.httpStatusCode ?? e.$response?.statusCode;
  let message = typeof e.message === 'string' && e.message ? e.message : String(err);
  if (typeof status === 'number' && status > 0) {
    if (/^(Unknown(Error)?|NotFound|Forbidden|BadRequest|\d+)$/.test(message)) message = `the server answered ${status}`;
    let code = e.Code ?? e.name ?? 'UnknownError';
    // HEAD answers have no body: the client names them after the status ("NotFound", "403").
    if (
      code === 'NotFound' ||
      code === 'Forbidden' ||
      code === 'BadRequest' ||
      /^\d+$/.test(code) ||
      code === 'Unknown' ||
      code === 'UnknownError'
    ) {
      code = HEAD_CODES[status] ?? (status >= 500 ? 'InternalError' : `Http${status}`);
    }
    return new CairnStorageError(`${operation}: ${code}: ${message}`, {
      code,
      status,
      requestId: e.$metadata?.requestId,
      cause: err,
      ...extra,
    });
  }
  if (e.name === 'AbortError') {
    return new CairnStorageError(`${operation}: aborted`, { code: 'Aborted', cause: err, ...extra });
  }
  const sysCode = systemCode(err);
  if ((sysCode && NETWORK_CODES.has(sysCode)) || e.name === 'TimeoutError' || (e.name === 'TypeError' && /fetch/i.test(message))) {
    return new CairnStorageError(`${operation}: the server could not be reached (${sysCode ?? message})`, {
      code: 'NetworkError',
      cause: err,
      ...extra,
    });
  }
  return new CairnStorageError(`${operation}: ${message}`, { code: sysCode ?? 'UnknownError', cause: err, ...extra });
}
