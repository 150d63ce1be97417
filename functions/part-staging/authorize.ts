/**
 * Whether an UploadPart may be staged: the storage API's part-staging
 * resource (lib/part-staging.ts) stores the body in the bucket through an
 * S3 integration, and its Lambda REQUEST authoriser decides first, from
 * what such an authoriser is given: the headers, path and query, never the
 * body (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-lambda-authorizer-input.html).
 * It checks what the S3 function checks of an UploadPart before its body:
 * the SigV4 signature (header or presigned) against the host and path the
 * client signed, the clock, the key pair, that the caller may write to the
 * bucket, and that the upload exists for that bucket and key; the same
 * code does it (functions/s3). The body is checked when
 * CompleteMultipartUpload reads the part back (functions/s3/multipart/staged.ts).
 *
 * The integration names the staged object from the query's uploadId and
 * partNumber, so a request naming either twice is refused: API Gateway and
 * the S3 router might not read the same one of two.
 */
import type { APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import type { HttpRequest } from '../core/http/types.js';
import { restRawQuery, restPaths, VIEWER_HOST, viewerSigned } from '../core/http/api-gateway-rest.js';
import type { StorageServices } from '../core/services.js';
import { authenticate } from '../s3/auth.js';
import { authorise } from '../s3/app.js';
import type { S3Context } from '../s3/context.js';
import { errors, S3Error } from '../s3/errors.js';
import { loadUpload } from '../s3/multipart/uploads.js';
import { parseS3Request } from '../s3/router.js';
import { MAX_PART_NUMBER } from '../core/data/uploads.js';

/** The staging resource's first path segment (functions/cdn/s3-viewer-request.js puts it there). */
export const PARTS_PREFIX = '/_parts';

export type StagingDecision = { allow: true; accountId: string; uploadId: string; partNumber: number } | { allow: false; error: S3Error };

/** The authoriser's event as the S3 router's request, with the staging prefix taken off both paths. */
export function stagingRequest(event: APIGatewayRequestAuthorizerEvent, edgeKey?: string): HttpRequest {
  const headers = new Headers();
  for (const [name, values] of Object.entries(event.multiValueHeaders ?? {})) {
    for (const value of values ?? []) {
      try {
        headers.append(name, value);
      } catch {
        // A value Headers refuses is dropped; the signature then fails.
      }
    }
  }
  if (!event.multiValueHeaders) for (const [name, value] of Object.entries(event.headers ?? {})) if (value) headers.set(name, value);
  const strip = (path: string) => {
    const at = path.indexOf(`${PARTS_PREFIX}/`);
    return at >= 0 ? path.slice(0, at) + path.slice(at + PARTS_PREFIX.length) : path;
  };
  const paths = restPaths({ path: event.path, requestContext: event.requestContext as never });
  const { rawPath, signedPath, viewerAddress } = viewerSigned(
    headers,
    { rawPath: strip(paths.rawPath), signedPath: strip(paths.signedPath) },
    edgeKey,
  );
  return {
    method: event.httpMethod.toUpperCase(),
    rawPath,
    ...(signedPath !== rawPath ? { signedPath } : {}),
    rawQuery: restRawQuery({
      multiValueQueryStringParameters: event.multiValueQueryStringParameters ?? null,
      queryStringParameters: event.queryStringParameters ?? null,
    }),
    headers,
    body: null,
    signal: new AbortController().signal,
    // As the REST door takes them (core/http/api-gateway-rest.ts), so a bucket policy's aws:SourceIp and
    // aws:SecureTransport conditions decide a staged part as they decide one sent to the function: the
    // viewer's address the distribution vouches for (its edge key), else the TCP peer API Gateway saw
    // ($context.identity.sourceIp,
    // https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-mapping-template-reference.html),
    // and HTTPS, the only way API Gateway is reached.
    remoteAddress: viewerAddress ?? event.requestContext?.identity?.sourceIp ?? undefined,
    secure: true,
  };
}

export async function decideStaging(
  services: StorageServices,
  event: APIGatewayRequestAuthorizerEvent,
  now: Date,
): Promise<StagingDecision> {
  try {
    for (const name of ['uploadId', 'partNumber']) {
      if ((event.multiValueQueryStringParameters?.[name]?.length ?? 0) > 1) {
        throw errors.invalidArgument(`${name} may be given once`, name, event.multiValueQueryStringParameters![name]!.join(','));
      }
    }
    // Only the distribution's function routes here; it also hands over the Authorization the staged part keeps.
    const viewer = Object.keys(event.headers ?? {}).some((name) => name.toLowerCase() === VIEWER_HOST);
    if (!viewer) throw errors.accessDenied();
    const req = stagingRequest(event, services.config.edgeKey);
    const s3 = parseS3Request(req, services.config.urls.bucketEndpointDomain);
    if (s3.op !== 'UploadPart') throw errors.invalidRequest('Only UploadPart is staged here.');
    const auth = await authenticate(req, s3.query, services.storageKeys, now, services.config.region);
    if (auth.principal.kind !== 'account') throw errors.accessDenied();
    const ctx: S3Context = { services, req, s3, auth, now };
    await authorise(ctx);
    const raw = s3.query.get('partNumber') ?? '';
    const partNumber = /^[1-9]\d{0,4}$/.test(raw) ? Number(raw) : NaN;
    if (!(partNumber >= 1 && partNumber <= MAX_PART_NUMBER)) {
      throw errors.invalidArgument(`Part number must be an integer between 1 and ${MAX_PART_NUMBER}, inclusive`, 'partNumber', raw);
    }
    const upload = await loadUpload(ctx);
    return { allow: true, accountId: auth.principal.accountId, uploadId: upload.uploadId, partNumber };
  } catch (err) {
    if (err instanceof S3Error) return { allow: false, error: err };
    services.logger.error('part staging authorisation failed', { err });
    return { allow: false, error: errors.internal() };
  }
}
