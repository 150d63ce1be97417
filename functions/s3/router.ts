/**
 * The router is data: every S3 request is parsed here, once, into one
 * S3Request value (addressing, bucket, key, operation); handlers dispatch on
 * `op`. Each operation declares the access it needs.
 */
import { errors, S3Error } from './errors.js';
import { queryParams, type HttpRequest } from '../core/http/types.js';

export type S3Op =
  | 'ListBuckets'
  | 'CreateBucket'
  | 'HeadBucket'
  | 'DeleteBucket'
  | 'GetBucketLocation'
  | 'GetBucketVersioning'
  | 'PutBucketVersioning'
  | 'GetBucketAcl'
  | 'PutBucketAcl'
  | 'PutBucketCors'
  | 'GetBucketCors'
  | 'DeleteBucketCors'
  | 'GetBucketTagging'
  | 'PutBucketTagging'
  | 'DeleteBucketTagging'
  | 'PutBucketPolicy'
  | 'GetBucketPolicy'
  | 'DeleteBucketPolicy'
  | 'GetBucketPolicyStatus'
  | 'PutPublicAccessBlock'
  | 'GetPublicAccessBlock'
  | 'DeletePublicAccessBlock'
  | 'PutBucketOwnershipControls'
  | 'GetBucketOwnershipControls'
  | 'DeleteBucketOwnershipControls'
  | 'PutBucketLifecycleConfiguration'
  | 'GetBucketLifecycleConfiguration'
  | 'DeleteBucketLifecycle'
  | 'PreflightCors'
  | 'ListObjects'
  | 'ListObjectsV2'
  | 'ListObjectVersions'
  | 'ListMultipartUploads'
  | 'DeleteObjects'
  | 'PutObject'
  | 'PostObject'
  | 'CopyObject'
  | 'GetObject'
  | 'HeadObject'
  | 'DeleteObject'
  | 'GetObjectAcl'
  | 'GetObjectAttributes'
  | 'PutObjectAcl'
  | 'GetObjectTagging'
  | 'PutObjectTagging'
  | 'DeleteObjectTagging'
  | 'CreateMultipartUpload'
  | 'UploadPart'
  | 'UploadPartCopy'
  | 'CompleteMultipartUpload'
  | 'AbortMultipartUpload'
  | 'ListParts';

/**
 * What an operation needs: `read` is decided in the operation on the
 * object version's ACL (READ, or READ_ACP / WRITE_ACP for its ACL);
 * `bucket-read`, `bucket-write`, `bucket-read-acp` and `bucket-write-acp`
 * by the bucket's ACL (READ, WRITE, READ_ACP, WRITE_ACP); `none` is
 * answered before authentication (CORS preflights carry no credentials).
 */
export type Access = 'account' | 'bucket-owner' | 'bucket-read' | 'bucket-write' | 'bucket-read-acp' | 'bucket-write-acp' | 'read' | 'none';

export const ACCESS: Record<S3Op, Access> = {
  ListBuckets: 'account',
  CreateBucket: 'account',
  HeadBucket: 'bucket-read',
  DeleteBucket: 'bucket-owner',
  GetBucketLocation: 'bucket-owner',
  GetBucketVersioning: 'bucket-owner',
  PutBucketVersioning: 'bucket-owner',
  GetBucketAcl: 'bucket-read-acp',
  PutBucketAcl: 'bucket-write-acp',
  PutBucketCors: 'bucket-owner',
  GetBucketCors: 'bucket-owner',
  DeleteBucketCors: 'bucket-owner',
  GetBucketTagging: 'bucket-owner',
  PutBucketTagging: 'bucket-owner',
  DeleteBucketTagging: 'bucket-owner',
  PutBucketPolicy: 'bucket-owner',
  GetBucketPolicy: 'bucket-owner',
  DeleteBucketPolicy: 'bucket-owner',
  GetBucketPolicyStatus: 'bucket-owner',
  PutPublicAccessBlock: 'bucket-owner',
  GetPublicAccessBlock: 'bucket-owner',
  DeletePublicAccessBlock: 'bucket-owner',
  PutBucketOwnershipControls: 'bucket-owner',
  GetBucketOwnershipControls: 'bucket-owner',
  DeleteBucketOwnershipControls: 'bucket-owner',
  PutBucketLifecycleConfiguration: 'bucket-owner',
  GetBucketLifecycleConfiguration: 'bucket-owner',
  DeleteBucketLifecycle: 'bucket-owner',
  PreflightCors: 'none',
  ListObjects: 'bucket-read',
  ListObjectsV2: 'bucket-read',
  ListObjectVersions: 'bucket-read',
  ListMultipartUploads: 'bucket-read',
  DeleteObjects: 'bucket-write',
  PutObject: 'bucket-write',
  PostObject: 'bucket-write',
  CopyObject: 'bucket-write',
  GetObject: 'read',
  HeadObject: 'read',
  DeleteObject: 'bucket-write',
  GetObjectAcl: 'read',
  GetObjectAttributes: 'read',
  GetObjectTagging: 'bucket-owner',
  PutObjectTagging: 'bucket-owner',
  DeleteObjectTagging: 'bucket-owner',
  PutObjectAcl: 'read',
  CreateMultipartUpload: 'bucket-write',
  UploadPart: 'bucket-write',
  UploadPartCopy: 'bucket-write',
  CompleteMultipartUpload: 'bucket-write',
  AbortMultipartUpload: 'bucket-write',
  ListParts: 'bucket-write',
};

export interface S3Request {
  op: S3Op;
  /** Absent only for ListBuckets. */
  bucket?: string;
  /** Decoded object key, for object operations. */
  key?: string;
  query: Map<string, string>;
  addressing: 'path' | 'virtual-host';
  /** The path S3 errors report as the resource. */
  resource: string;
}

const BUCKET_SUBRESOURCES_UNSUPPORTED = [
  'website',
  'logging',
  'notification',
  'replication',
  'encryption',
  'object-lock',
  'requestPayment',
  'accelerate',
  'inventory',
  'analytics',
  'metrics',
  'intelligent-tiering',
];
const OBJECT_SUBRESOURCES_UNSUPPORTED = ['retention', 'legal-hold', 'torrent', 'restore', 'select'];

function hostWithoutPort(host: string): string {
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
  const colon = host.lastIndexOf(':');
  return colon < 0 ? host : host.slice(0, colon);
}

function decodePath(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new S3Error('InvalidURI', 400, "Couldn't parse the specified URI.");
  }
}

export function parseS3Request(req: HttpRequest, bucketEndpointDomain: string): S3Request {
  const query = queryParams(req.rawQuery);
  const host = hostWithoutPort((req.headers.get('host') ?? '').toLowerCase());
  const domain = hostWithoutPort(bucketEndpointDomain);
  let bucket: string | undefined;
  let rawKey: string | undefined;
  let addressing: S3Request['addressing'] = 'path';
  if (host.endsWith(`.${domain}`) && host.length > domain.length + 1) {
    addressing = 'virtual-host';
    bucket = host.slice(0, host.length - domain.length - 1);
    rawKey = req.rawPath.length > 1 ? req.rawPath.slice(1) : undefined;
  } else {
    const path = req.rawPath.startsWith('/') ? req.rawPath.slice(1) : req.rawPath;
    const slash = path.indexOf('/');
    const first = slash < 0 ? path : path.slice(0, slash);
    bucket = first ? decodePath(first) : undefined;
    rawKey = slash < 0 || slash === path.length - 1 ? undefined : path.slice(slash + 1);
  }
  const key = rawKey === undefined ? undefined : decodePath(rawKey);
  const resource = bucket ? `/${bucket}${key !== undefined ? `/${key}` : ''}` : '/';
  const base = { bucket, key, query, addressing, resource };
  const method = req.method.toUpperCase();
  const has = (name: string) => query.has(name);

  // Before any subresource check: a preflight names the actual request's URL, whatever its query
  // (the service root's too: ListBuckets, which only the web app's origin is allowed).
  if (method === 'OPTIONS') return { op: 'PreflightCors', ...base };
  if (!bucket) {
    if (method === 'GET') return { op: 'ListBuckets', ...base };
    throw errors.methodNotAllowed(method);
  }
  if (key === undefined) {
    for (const sub of BUCKET_SUBRESOURCES_UNSUPPORTED) if (has(sub)) throw errors.notImplemented(`?${sub}`);
    switch (method) {
      case 'PUT':
        if (has('acl')) return { op: 'PutBucketAcl', ...base };
        if (has('cors')) return { op: 'PutBucketCors', ...base };
        if (has('tagging')) return { op: 'PutBucketTagging', ...base };
        if (has('policy')) return { op: 'PutBucketPolicy', ...base };
        if (has('publicAccessBlock')) return { op: 'PutPublicAccessBlock', ...base };
        if (has('ownershipControls')) return { op: 'PutBucketOwnershipControls', ...base };
        if (has('versioning')) return { op: 'PutBucketVersioning', ...base };
        if (has('lifecycle')) return { op: 'PutBucketLifecycleConfiguration', ...base };
        return { op: 'CreateBucket', ...base };
      case 'HEAD':
        return { op: 'HeadBucket', ...base };
      case 'DELETE':
        if (has('cors')) return { op: 'DeleteBucketCors', ...base };
        if (has('tagging')) return { op: 'DeleteBucketTagging', ...base };
        if (has('policy')) return { op: 'DeleteBucketPolicy', ...base };
        if (has('publicAccessBlock')) return { op: 'DeletePublicAccessBlock', ...base };
        if (has('ownershipControls')) return { op: 'DeleteBucketOwnershipControls', ...base };
        if (has('lifecycle')) return { op: 'DeleteBucketLifecycle', ...base };
        return { op: 'DeleteBucket', ...base };
      case 'POST':
        if (has('delete')) return { op: 'DeleteObjects', ...base };
        // A browser's form upload (post/object.ts); its key is in the form.
        return { op: 'PostObject', ...base };
      case 'GET':
        if (has('location')) return { op: 'GetBucketLocation', ...base };
        if (has('versioning')) return { op: 'GetBucketVersioning', ...base };
        if (has('acl')) return { op: 'GetBucketAcl', ...base };
        if (has('cors')) return { op: 'GetBucketCors', ...base };
        if (has('tagging')) return { op: 'GetBucketTagging', ...base };
        if (has('policyStatus')) return { op: 'GetBucketPolicyStatus', ...base };
        if (has('policy')) return { op: 'GetBucketPolicy', ...base };
        if (has('publicAccessBlock')) return { op: 'GetPublicAccessBlock', ...base };
        if (has('ownershipControls')) return { op: 'GetBucketOwnershipControls', ...base };
        if (has('lifecycle')) return { op: 'GetBucketLifecycleConfiguration', ...base };
        if (has('versions')) return { op: 'ListObjectVersions', ...base };
        if (has('uploads')) return { op: 'ListMultipartUploads', ...base };
        if (query.get('list-type') === '2') return { op: 'ListObjectsV2', ...base };
        return { op: 'ListObjects', ...base };
      default:
        throw errors.methodNotAllowed(method);
    }
  }
  if (Buffer.byteLength(key) > 1024) throw errors.keyTooLong();
  for (const sub of OBJECT_SUBRESOURCES_UNSUPPORTED) if (has(sub)) throw errors.notImplemented(`?${sub}`);
  const copy = req.headers.has('x-amz-copy-source');
  switch (method) {
    case 'PUT':
      if (has('uploadId') && has('partNumber')) return { op: copy ? 'UploadPartCopy' : 'UploadPart', ...base };
      if (has('acl')) return { op: 'PutObjectAcl', ...base };
      if (has('tagging')) return { op: 'PutObjectTagging', ...base };
      return { op: copy ? 'CopyObject' : 'PutObject', ...base };
    case 'GET':
      if (has('uploadId')) return { op: 'ListParts', ...base };
      if (has('acl')) return { op: 'GetObjectAcl', ...base };
      if (has('tagging')) return { op: 'GetObjectTagging', ...base };
      if (has('attributes')) return { op: 'GetObjectAttributes', ...base };
      return { op: 'GetObject', ...base };
    case 'HEAD':
      return { op: 'HeadObject', ...base };
    case 'POST':
      if (has('uploads')) return { op: 'CreateMultipartUpload', ...base };
      if (has('uploadId')) return { op: 'CompleteMultipartUpload', ...base };
      throw errors.methodNotAllowed(method);
    case 'DELETE':
      if (has('uploadId')) return { op: 'AbortMultipartUpload', ...base };
      if (has('tagging')) return { op: 'DeleteObjectTagging', ...base };
      return { op: 'DeleteObject', ...base };
    default:
      throw errors.methodNotAllowed(method);
  }
}
