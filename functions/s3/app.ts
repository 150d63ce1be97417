/**
 * The S3-compatible API as one HttpHandler: parse, authenticate, authorise,
 * dispatch. Every failure leaves as S3 XML with S3's code and status.
 */
import { newRequestId } from '../core/ids.js';
import type { HttpHandler, HttpRequest } from '../core/http/types.js';
import type { Config } from '../core/config.js';
import type { StorageServices } from '../core/services.js';
import { authenticate } from './auth.js';
import {
  createBucket,
  deleteBucket,
  getBucketLocation,
  getBucketVersioning,
  headBucket,
  listBuckets,
  putBucketVersioning,
} from './buckets.js';
import { listObjects, listObjectsV2, listObjectVersions } from './list.js';
import { deleteObject, deleteObjects } from './delete.js';
import { copyObject } from './copy.js';
import { checkRequestedAcl, getBucketAcl, getObjectAcl, putBucketAcl, putObjectAcl } from './acl.js';
import { bucketAclAllows, isBucketOwner, OWNER_ONLY, POLICY_MANAGEMENT, policyActionFor, verdictFor } from './access.js';
import { deleteBucketPolicy, getBucketPolicy, getBucketPolicyStatus, putBucketPolicy } from './bucket-policy.js';
import {
  deleteBucketOwnershipControls,
  deletePublicAccessBlock,
  getBucketOwnershipControls,
  getPublicAccessBlock,
  putBucketOwnershipControls,
  putPublicAccessBlock,
} from './public-access.js';
import { addCorsHeaders, deleteBucketCors, getBucketCors, preflight, putBucketCors } from './cors.js';
import type { S3Context } from './context.js';
import { errorResponse, errors, S3Error } from './errors.js';
import { getObject } from './get.js';
import { getObjectAttributes } from './attributes.js';
import {
  deleteBucketTagging,
  deleteObjectTagging,
  getBucketTagging,
  getObjectTagging,
  putBucketTagging,
  putObjectTagging,
} from './tagging.js';
import { putObject } from './put.js';
import { openPostObject, postObject } from './post/object.js';
import { abortMultipartUpload } from './multipart/abort.js';
import { completeMultipartUpload } from './multipart/complete.js';
import { createMultipartUpload } from './multipart/create.js';
import { listMultipartUploads, listParts } from './multipart/list.js';
import { uploadPart, uploadPartCopy } from './multipart/upload-part.js';
import { isValidBucketName } from './names.js';
import { deleteBucketLifecycle, getBucketLifecycle, putBucketLifecycle } from './lifecycle.js';
import { ACCESS, parseS3Request, type S3Op, type S3Request } from './router.js';
import { checkUnsupportedWriteHeaders } from './request-headers.js';
import { gatherPolicyFacts } from './policy-facts.js';

type OperationHandler = (ctx: S3Context) => Promise<Response>;

const OPERATIONS: Partial<Record<S3Op, OperationHandler>> = {
  ListBuckets: listBuckets,
  CreateBucket: createBucket,
  HeadBucket: headBucket,
  DeleteBucket: deleteBucket,
  GetBucketLocation: getBucketLocation,
  GetBucketVersioning: getBucketVersioning,
  PutBucketVersioning: putBucketVersioning,
  GetBucketAcl: getBucketAcl,
  PutBucketAcl: putBucketAcl,
  PutBucketCors: putBucketCors,
  GetBucketCors: getBucketCors,
  DeleteBucketCors: deleteBucketCors,
  GetBucketTagging: getBucketTagging,
  PutBucketTagging: putBucketTagging,
  DeleteBucketTagging: deleteBucketTagging,
  PutBucketPolicy: putBucketPolicy,
  GetBucketPolicy: getBucketPolicy,
  DeleteBucketPolicy: deleteBucketPolicy,
  GetBucketPolicyStatus: getBucketPolicyStatus,
  PutPublicAccessBlock: putPublicAccessBlock,
  GetPublicAccessBlock: getPublicAccessBlock,
  DeletePublicAccessBlock: deletePublicAccessBlock,
  PutBucketOwnershipControls: putBucketOwnershipControls,
  GetBucketOwnershipControls: getBucketOwnershipControls,
  DeleteBucketOwnershipControls: deleteBucketOwnershipControls,
  PutBucketLifecycleConfiguration: putBucketLifecycle,
  GetBucketLifecycleConfiguration: getBucketLifecycle,
  DeleteBucketLifecycle: deleteBucketLifecycle,
  ListObjects: listObjects,
  ListObjectsV2: listObjectsV2,
  ListObjectVersions: listObjectVersions,
  DeleteObjects: deleteObjects,
  PutObject: putObject,
  PostObject: postObject,
  CopyObject: copyObject,
  GetObject: getObject,
  HeadObject: getObject,
  DeleteObject: deleteObject,
  GetObjectAcl: getObjectAcl,
  GetObjectAttributes: getObjectAttributes,
  PutObjectAcl: putObjectAcl,
  GetObjectTagging: getObjectTagging,
  PutObjectTagging: putObjectTagging,
  DeleteObjectTagging: deleteObjectTagging,
  CreateMultipartUpload: createMultipartUpload,
  UploadPart: uploadPart,
  UploadPartCopy: uploadPartCopy,
  CompleteMultipartUpload: completeMultipartUpload,
  AbortMultipartUpload: abortMultipartUpload,
  ListParts: listParts,
  ListMultipartUploads: listMultipartUploads,
};

/** Operations whose body is object data, bounded by `storage.maxRequestBody`. */
const DATA_BODY_OPS: ReadonlySet<S3Op> = new Set(['PutObject', 'UploadPart', 'PostObject']);

/**
 * Every answer says how large a body one request may carry here, so that a
 * client can size its parts before it sends any (Cairn's SDK and CLI read
 * it: packages/storage-sdk/src/limits.ts). Behind Lambda that is what an
 * invocation carries, far below S3's 5 GiB.
 */
export const MAX_REQUEST_BODY_HEADER = 'x-cairn-max-request-body';

/**
 * EntityTooLarge for a body over `storage.maxRequestBody`, naming the client
 * setting that fixes it: the multipart part size (the "chunk size" of most
 * clients). S3 answers EntityTooLarge with 400 Bad Request
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html).
 */
export function bodyTooLarge(config: Config, proposed: number): S3Error {
  const max = config.storage.maxRequestBody;
  const advice =
    config.runtime === 'aws'
      ? `This endpoint runs on AWS Lambda and takes at most ${max} bytes per request. ` +
        `Upload larger objects as multipart uploads with a part size (your client's multipart chunk size) of at most ${max} bytes. ` +
        "Cairn's CLI and SDK size their parts to this endpoint by themselves; the AWS CLI, boto3, rclone, s3cmd, lib-storage and mc " +
        `never send parts under 5 MiB, so through this endpoint they upload objects of at most ${max} bytes (docs/aws-s3-clients.md).`
      : `This server takes at most ${max} bytes per request (CAIRN_MAX_REQUEST_BODY). ` +
        `Upload larger objects as multipart uploads with a part size (your client's multipart chunk size) of at most ${max} bytes.`;
  return new S3Error('EntityTooLarge', 400, `Your proposed upload exceeds the maximum allowed size. ${advice}`, {
    ProposedSize: String(proposed),
    MaxSizeAllowed: String(max),
  });
}

function checkBodySize(req: HttpRequest, op: S3Op, config: Config): void {
  if (!DATA_BODY_OPS.has(op)) return;
  const declared = Number(req.headers.get('x-amz-decoded-content-length') ?? req.headers.get('content-length') ?? '0');
  if (declared > config.storage.maxRequestBody) throw bodyTooLarge(config, declared);
}

/**
 * Who may do what, as S3 decides it (core/storage/bucket-access.ts): the
 * policy's explicit Deny first, then the owner, then a policy Allow or an
 * ACL grant for anyone else. GetObject, HeadObject and the object ACL
 * operations decide on the object version's ACL in the operation.
 */
/** The operations that write an object's bytes or make one: what they may ask for is checked before their body is read. */
const WRITES: ReadonlySet<S3Op> = new Set<S3Op>([
  'PutObject',
  'CopyObject',
  'CreateMultipartUpload',
  'UploadPart',
  'UploadPartCopy',
  'PostObject',
]);

export async function authorise(ctx: S3Context): Promise<void> {
  const access = ACCESS[ctx.s3.op];
  const principal = ctx.auth.principal;
  if (access === 'account' || ctx.s3.bucket === undefined) {
    if (principal.kind !== 'account') throw errors.accessDenied();
    return;
  }
  // A missing bucket is NoSuchBucket to every caller, as in S3.
  if (!isValidBucketName(ctx.s3.bucket)) throw errors.noSuchBucket(ctx.s3.bucket);
  const bucket = await ctx.services.buckets.get(ctx.s3.bucket);
  if (!bucket) throw errors.noSuchBucket(ctx.s3.bucket);
  ctx.bucket = bucket;
  const op = ctx.s3.op;
  const owner = isBucketOwner(ctx, bucket);
  const action = policyActionFor(ctx.s3);
  if (action && bucket.policy !== undefined) ctx.policyFacts = await gatherPolicyFacts(ctx, bucket, action);
  const verdict = action ? verdictFor(ctx, bucket, action, ctx.s3.key, { existingTags: ctx.policyFacts?.existingTags }) : 'none';
  if (verdict === 'deny' && !(owner && POLICY_MANAGEMENT.has(op))) throw errors.accessDenied();
  if (owner) return;
  if (OWNER_ONLY.has(op)) throw errors.accessDenied();
  if (verdict === 'allow') return;
  if (access === 'read') return; // the operation decides on the object version's ACL
  // DeleteObjects checks each key against the policy and the bucket's ACL (delete.ts).
  if (op === 'DeleteObjects' && bucket.policy !== undefined) return;
  if (!bucketAclAllows(ctx, bucket, verdict)) throw errors.accessDenied();
}

export function createS3Handler(services: StorageServices, now: () => Date = () => new Date()): HttpHandler {
  const { logger, config } = services;
  return async (req) => {
    const requestId = newRequestId();
    let s3: S3Request | undefined;
    let ctx: S3Context | undefined;
    let response: Response;
    try {
      s3 = parseS3Request(req, config.urls.bucketEndpointDomain);
      if (ACCESS[s3.op] === 'none') {
        response = await preflight(services, req, s3);
      } else {
        const time = now();
        if (s3.op === 'PostObject') {
          // The form carries the key and the credentials: read (bounded) before anything is decided.
          checkBodySize(req, s3.op, config);
          const post = await openPostObject(services, req, s3, time);
          s3 = post.s3;
          ctx = { services, req: post.req, s3, auth: post.auth, now: time, post: post.post };
        } else {
          const auth = await authenticate(req, s3.query, services.storageKeys, time, config.region);
          ctx = { services, req, s3, auth, now: time };
        }
        await authorise(ctx);
        checkRequestedAcl(ctx);
        if (WRITES.has(s3.op)) checkUnsupportedWriteHeaders(ctx.req.headers);
        if (s3.op === 'CreateBucket' && req.headers.get('x-amz-bucket-object-lock-enabled')?.trim().toLowerCase() === 'true') {
          throw errors.notImplemented('x-amz-bucket-object-lock-enabled (object lock: Cairn does not have it)');
        }
        checkBodySize(req, s3.op, config);
        const handler = OPERATIONS[s3.op];
        if (!handler) throw errors.notImplemented(s3.op);
        response = await handler(ctx);
      }
    } catch (err) {
      if (!(err instanceof S3Error)) {
        logger.error('s3 request failed', { err, op: s3?.op, method: req.method, path: req.rawPath, requestId });
      }
      response = errorResponse(err instanceof S3Error ? err : errors.internal(), s3?.resource ?? req.rawPath, requestId, req.method);
      // Whatever the client is still sending is not wanted (a POST's: the rest of its form).
      await (ctx?.req ?? req).body?.cancel().catch(() => {});
    }
    if (s3 && ACCESS[s3.op] !== 'none') await addCorsHeaders(services, req, s3, ctx?.bucket, response);
    response.headers.set('x-amz-request-id', requestId);
    response.headers.set('server', 'Cairn');
    response.headers.set(MAX_REQUEST_BODY_HEADER, String(config.storage.maxRequestBody));
    logger.debug('s3 request', { op: s3?.op, status: response.status, requestId });
    return response;
  };
}
