/**
 * S3 errors as values: each carries S3's code and HTTP status and renders as
 * S3's XML error document. Anything else thrown becomes InternalError without
 * internals.
 */
import { xmlDocument } from './xml.js';

export class S3Error extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
    readonly extra: Record<string, string> = {},
    /** Headers the error answer carries (a delete marker's `x-amz-delete-marker`, `x-amz-version-id`). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'S3Error';
  }
}

export const errors = {
  accessDenied: () => new S3Error('AccessDenied', 403, 'Access Denied'),
  /** The integrity check (npm run fsck) found the object's blocks missing or corrupt. S3 has no code for lost bytes; this is the one for "not readable in its current state". */
  objectDamaged: (problem: string) =>
    new S3Error('InvalidObjectState', 403, `The object's stored content is damaged (${problem}); upload it again to restore it.`),
  signatureDoesNotMatch: () =>
    new S3Error(
      'SignatureDoesNotMatch',
      403,
      'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
    ),
  invalidAccessKeyId: (id: string) =>
    new S3Error('InvalidAccessKeyId', 403, 'The AWS Access Key Id you provided does not exist in our records.', {
      AWSAccessKeyId: id,
    }),
  authorizationHeaderMalformed: (why: string) =>
    new S3Error('AuthorizationHeaderMalformed', 400, `The authorization header is malformed; ${why}`),
  requestTimeTooSkewed: (requestTime: string, serverTime: string) =>
    new S3Error('RequestTimeTooSkewed', 403, 'The difference between the request time and the current time is too large.', {
      RequestTime: requestTime,
      ServerTime: serverTime,
      MaxAllowedSkewMilliseconds: '900000',
    }),
  contentSha256Mismatch: (client: string, server: string) =>
    new S3Error('XAmzContentSHA256Mismatch', 400, "The provided 'x-amz-content-sha256' header does not match what was computed.", {
      ClientComputedContentSHA256: client,
      S3ComputedContentSHA256: server,
    }),
  invalidArgument: (message: string, name?: string, value?: string) =>
    new S3Error('InvalidArgument', 400, message, name ? { ArgumentName: name, ArgumentValue: value ?? '' } : {}),
  invalidRequest: (message: string) => new S3Error('InvalidRequest', 400, message),
  noSuchBucket: (bucket: string) => new S3Error('NoSuchBucket', 404, 'The specified bucket does not exist', { BucketName: bucket }),
  noSuchKey: (key: string, headers: Record<string, string> = {}) =>
    new S3Error('NoSuchKey', 404, 'The specified key does not exist.', { Key: key }, headers),
  noSuchVersion: (key: string, versionId: string) =>
    new S3Error('NoSuchVersion', 404, 'The specified version does not exist.', { Key: key, VersionId: versionId }),
  invalidVersionId: (versionId: string) =>
    new S3Error('InvalidArgument', 400, 'Invalid version id specified', {
      ArgumentName: 'versionId',
      ArgumentValue: versionId,
    }),
  invalidBucketName: (bucket: string) =>
    new S3Error('InvalidBucketName', 400, 'The specified bucket is not valid.', { BucketName: bucket }),
  keyTooLong: () => new S3Error('KeyTooLongError', 400, 'Your key is too long'),
  notImplemented: (what: string) =>
    new S3Error('NotImplemented', 501, `A header or query you provided implies functionality that is not implemented: ${what}`),
  methodNotAllowed: (method: string) =>
    new S3Error('MethodNotAllowed', 405, 'The specified method is not allowed against this resource.', { Method: method }),
  incompleteBody: () =>
    new S3Error('IncompleteBody', 400, 'You did not provide the number of bytes specified by the Content-Length HTTP header.'),
  missingContentLength: () => new S3Error('MissingContentLength', 411, 'You must provide the Content-Length HTTP header.'),
  invalidRange: (size: number) =>
    new S3Error('InvalidRange', 416, 'The requested range is not satisfiable', { ActualObjectSize: String(size) }),
  badDigest: () => new S3Error('BadDigest', 400, 'The Content-MD5 you specified did not match what we received.'),
  invalidDigest: () => new S3Error('InvalidDigest', 400, 'The Content-MD5 you specified is not valid.'),
  malformedXml: () =>
    new S3Error('MalformedXML', 400, 'The XML you provided was not well-formed or did not validate against our published schema.'),
  internal: () => new S3Error('InternalError', 500, 'We encountered an internal error. Please try again.'),
  noSuchUpload: (uploadId: string) =>
    new S3Error(
      'NoSuchUpload',
      404,
      'The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.',
      { UploadId: uploadId },
    ),
  invalidPart: (uploadId: string, partNumber: number, etag: string) =>
    new S3Error(
      'InvalidPart',
      400,
      "One or more of the specified parts could not be found.  The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.",
      { UploadId: uploadId, PartNumber: String(partNumber), ETag: etag },
    ),
  invalidPartOrder: (uploadId: string) =>
    new S3Error('InvalidPartOrder', 400, 'The list of parts was not in ascending order. Parts must be ordered by part number.', {
      UploadId: uploadId,
    }),
  /** A part other than the last below the least part size, as S3 names it at CompleteMultipartUpload. */
  entityTooSmall: (proposed: number, min: number, partNumber: number, etag: string) =>
    new S3Error('EntityTooSmall', 400, 'Your proposed upload is smaller than the minimum allowed size', {
      ProposedSize: String(proposed),
      MinSizeAllowed: String(min),
      PartNumber: String(partNumber),
      ETag: etag,
    }),
  entityTooLarge: (proposed: number, max: number) =>
    new S3Error('EntityTooLarge', 400, 'Your proposed upload exceeds the maximum allowed size', {
      ProposedSize: String(proposed),
      MaxSizeAllowed: String(max),
    }),
};

export function errorResponse(err: S3Error, resource: string, requestId: string, method: string): Response {
  const headers: Record<string, string> = { ...err.headers, 'x-amz-request-id': requestId };
  if (method === 'HEAD') {
    // HEAD responses have no body; S3 still says what went wrong in headers.
    return new Response(null, { status: err.status, headers: { ...headers, 'x-amz-error-code': err.code } });
  }
  const body = xmlDocument('Error', { Code: err.code, Message: err.message, ...err.extra, Resource: resource, RequestId: requestId }, null);
  return new Response(body, { status: err.status, headers: { ...headers, 'content-type': 'application/xml' } });
}
