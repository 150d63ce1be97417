/**
 * POST Object: a browser's upload through an HTML form
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/RESTObjectPOST.html,
 * "Browser-Based Uploads Using POST",
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-UsingHTTPPOST.html).
 *
 * The form's fields are read first (bounded: form.ts), the uploader is
 * authenticated by the signature over the policy (or is anonymous, without
 * one), the policy is checked against the fields, and then the request is
 * what a PutObject would be: the fields become its headers (Content-Type,
 * Cache-Control, x-amz-meta-*, acl as x-amz-acl, x-amz-checksum-*), the file
 * part its body, streamed through the same import, and it is authorised as
 * s3:PutObject by the same bucket policy and ACL decisions.
 */
import { ipfsHeaders } from '../../core/http/object-headers.js';
import type { HttpRequest } from '../../core/http/types.js';
import type { StorageServices } from '../../core/services.js';
import { requestedObjectAcl } from '../acl.js';
import type { Authenticated } from '../auth.js';
import { checksumHeaders, checksumPlan } from '../checksums.js';
import { presentedEtag, versionHeader, type PostUpload, type S3Context } from '../context.js';
import { errors, S3Error } from '../errors.js';
import { isValidBucketName } from '../names.js';
import { contentMd5, objectHeaders } from '../request-headers.js';
import type { S3Request } from '../router.js';
import { requestBody } from '../sigv4/payload.js';
import { storeObject } from '../store.js';
import { uploadedRecord } from '../put.js';
import { MAX_OBJECT_TAGS, parseTagging } from '../tagging.js';
import { xmlDocument } from '../xml.js';
import { formBoundary, readPostForm, type PostFile } from './form.js';
import { authenticatePost, checkPostPolicy } from './policy.js';

/** Form fields that become the PutObject headers of the same name. */
const HEADER_FIELDS = [
  'content-type',
  'cache-control',
  'content-disposition',
  'content-encoding',
  'content-language',
  'expires',
  'content-md5',
  'x-amz-storage-class',
  'x-amz-website-redirect-location',
  // Asked for in a form, these are refused as on PutObject (request-headers.ts: checkUnsupportedWriteHeaders).
  'x-amz-server-side-encryption',
  'x-amz-server-side-encryption-aws-kms-key-id',
  'x-amz-server-side-encryption-context',
  'x-amz-server-side-encryption-bucket-key-enabled',
  'x-amz-server-side-encryption-customer-algorithm',
  'x-amz-server-side-encryption-customer-key',
  'x-amz-object-lock-mode',
  'x-amz-object-lock-retain-until-date',
  'x-amz-object-lock-legal-hold',
];
/** Request headers the upload keeps from the POST itself: what CORS and a bucket policy's conditions read. */
const KEPT_HEADERS = ['host', 'origin', 'referer', 'user-agent'];

const missingKey = () =>
  new S3Error(
    'InvalidArgument',
    400,
    "Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields.",
    {
      ArgumentName: 'key',
      ArgumentValue: '',
    },
  );

/**
 * Reads and checks the form of a POST Object: returns the request it is
 * (its fields as headers, its file as the body), the key and the uploader.
 * A missing bucket is refused before the body is read.
 */
export async function openPostObject(
  services: StorageServices,
  req: HttpRequest,
  s3: S3Request,
  now: Date,
): Promise<{ req: HttpRequest; s3: S3Request; auth: Authenticated; post: PostUpload }> {
  const boundary = formBoundary(req.headers.get('content-type'));
  if (boundary === undefined) {
    throw new S3Error('PreconditionFailed', 412, 'Bucket POST must be of the enclosure-type multipart/form-data', {
      Condition: 'Bucket POST must be of the enclosure-type-multipart/form-data',
    });
  }
  const bucket = s3.bucket!;
  if (!isValidBucketName(bucket) || !(await services.buckets.get(bucket))) throw errors.noSuchBucket(bucket);
  const { fields, bytes, file } = await readPostForm(req.body, boundary);
  try {
    const rawKey = fields.get('key');
    if (rawKey === undefined) throw missingKey();
    const key = rawKey.replaceAll('${filename}', file.filename);
    if (key === '') throw errors.invalidArgument('User key must have a length greater than 0.', 'key', '');
    if (Buffer.byteLength(key) > 1024) throw errors.keyTooLong();
    // The policy's conditions see the key as it will be stored, and the bucket the request is addressed to.
    fields.set('key', key);
    fields.set('bucket', bucket);
    const { auth, policy } = await authenticatePost(fields, services.storageKeys, now, services.config.region);
    const range = policy ? checkPostPolicy(policy, fields, now) : undefined;
    const post: PostUpload = {
      ...(range ? { range } : {}),
      ...(fields.has('success_action_status') ? { status: fields.get('success_action_status')! } : {}),
    };
    const redirect = fields.get('success_action_redirect') ?? fields.get('redirect');
    if (redirect !== undefined) post.redirect = redirect;
    const tagging = fields.get('tagging');
    if (tagging !== undefined) post.tags = parseTagging(Buffer.from(tagging), MAX_OBJECT_TAGS);
    return {
      req: { ...req, headers: uploadHeaders(req.headers, bytes), body: fileBody(file) },
      s3: { ...s3, key, resource: `/${bucket}/${key}` },
      auth,
      post,
    };
  } catch (err) {
    await file.discard();
    throw err;
  }
}

/**
 * The headers the upload would have had as a PutObject: each field's value
 * as the bytes the form carried, as a header's are, so objectHeaders reads
 * them as it reads PutObject's (user metadata as UTF-8, encoded-words
 * decoded, the 2 KB counted after; other headers kept as their bytes).
 */
function uploadHeaders(sent: Headers, fields: Map<string, string>): Headers {
  const headers = new Headers();
  for (const name of KEPT_HEADERS) {
    const value = sent.get(name);
    if (value !== null) headers.set(name, value);
  }
  for (const [name, value] of fields) {
    const header =
      name === 'acl'
        ? 'x-amz-acl'
        : name === 'x-amz-checksum-algorithm'
          ? 'x-amz-sdk-checksum-algorithm'
          : HEADER_FIELDS.includes(name) || name.startsWith('x-amz-meta-') || name.startsWith('x-amz-checksum-')
            ? name
            : undefined;
    if (header === undefined) continue;
    try {
      headers.set(header, value);
    } catch {
      throw errors.invalidArgument(`The POST form field ${name} is not a valid header value.`, name, '');
    }
  }
  return headers;
}

/** The file's bytes as a request body: cancelling it stops reading the POST. */
function fileBody(file: PostFile): ReadableStream<Uint8Array> {
  const chunks = file.content[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { done, value } = await chunks.next();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      async cancel() {
        await chunks.return?.(undefined);
        await file.discard();
      },
    },
    { highWaterMark: 0 },
  );
}

/** The URL S3 gives an uploaded object (the 201 answer's Location): the request's own address. */
function objectUrl(ctx: S3Context): string {
  const { req, s3 } = ctx;
  const scheme = req.secure || ctx.services.config.urls.storageEndpoint.startsWith('https:') ? 'https' : 'http';
  const path = s3.key!.split('/').map(encodeURIComponent).join('/');
  const host = req.headers.get('host') ?? new URL(ctx.services.config.urls.storageEndpoint).host;
  return s3.addressing === 'virtual-host' ? `${scheme}://${host}/${path}` : `${scheme}://${host}/${encodeURIComponent(s3.bucket!)}/${path}`;
}

/** A redirect S3 follows: an absolute http(s) URL; anything else is ignored, and the status answers. */
function redirectUrl(target: string | undefined): URL | undefined {
  if (!target) return undefined;
  try {
    const url = new URL(target);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

export async function postObject(ctx: S3Context): Promise<Response> {
  const { req, services } = ctx;
  const post = ctx.post!;
  // The ACL the form asks for, as the bucket's ownership and public access block allow PutObject's.
  const acl = await requestedObjectAcl(ctx);
  const stored = objectHeaders(req.headers);
  const expectedMd5 = contentMd5(req.headers);
  const checksum = checksumPlan(req.headers);
  const max = Math.min(post.range?.max ?? Infinity, services.config.storage.maxRequestBody);
  const { record } = await storeObject(
    services,
    {
      content: requestBody(req, { kind: 'unsigned' }),
      checksum,
      signal: req.signal,
      maxSize: max,
      verify: ({ md5, size }) => {
        if (post.range && size < post.range.min) {
          throw new S3Error('EntityTooSmall', 400, 'Your proposed upload is smaller than the minimum allowed size', {
            ProposedSize: String(size),
            MinSizeAllowed: String(post.range.min),
          });
        }
        if (expectedMd5 !== undefined && expectedMd5 !== md5) throw errors.badDigest();
      },
    },
    uploadedRecord(ctx, { acl, stored, tags: post.tags }),
    undefined,
    ctx.bucket!.versioning,
  );
  const etag = presentedEtag(ctx, record);
  const location = objectUrl(ctx);
  const headers: Record<string, string> = {
    etag,
    location,
    ...ipfsHeaders(record.cid),
    ...checksumHeaders(record.checksums),
    ...versionHeader(ctx, record),
  };
  const redirect = redirectUrl(post.redirect);
  if (redirect) {
    redirect.searchParams.append('bucket', ctx.s3.bucket!);
    redirect.searchParams.append('key', ctx.s3.key!);
    redirect.searchParams.append('etag', etag);
    return new Response(null, { status: 303, headers: { ...headers, location: redirect.href } });
  }
  if (post.status === '201') {
    const body = xmlDocument('PostResponse', { Location: location, Bucket: ctx.s3.bucket!, Key: ctx.s3.key!, ETag: etag }, null);
    return new Response(body, { status: 201, headers: { ...headers, 'content-type': 'application/xml' } });
  }
  return new Response(null, { status: post.status === '200' ? 200 : 204, headers });
}
