/**
 * The app's S3 client: the public S3 API at the storage endpoint (path
 * style), signed in the browser with the user's storage key pair. Uploads
 * go through XMLHttpRequest, the only browser API that reports upload
 * progress; files larger than one PUT may carry go up in a multipart upload.
 */
import { encodeKey, encodeRfc3986, sha256Hex, signRequest, UNSIGNED_PAYLOAD, type Credentials } from './sigv4.js';

export interface BucketInfo {
  name: string;
  createdAt: string;
}

export interface ObjectInfo {
  key: string;
  size: number;
  lastModified: string;
  etag: string;
  cid?: string;
  cidV0?: string;
}

export interface Listing {
  objects: ObjectInfo[];
  /** "Folders": common prefixes under the prefix listed, each ending in `/`. */
  prefixes: string[];
  nextToken?: string;
}

export interface Uploaded {
  cid?: string;
  cidV0?: string;
}

/** An S3 error answer (its Code and Message), or a request that never got one. */
export class S3RequestError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'S3RequestError';
  }
}

const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

function xml(text: string): Document {
  return new DOMParser().parseFromString(text, 'application/xml');
}

/** The text of each element called `name` directly under `parent` (S3's XML has no namespace prefixes). */
function childText(parent: Element | Document, name: string): string | undefined {
  for (const child of Array.from(parent.children ?? [])) if (child.localName === name) return child.textContent ?? '';
  return undefined;
}

function children(parent: Element, name: string): Element[] {
  return Array.from(parent.children).filter((c) => c.localName === name);
}

function errorOf(status: number, body: string): S3RequestError {
  if (body) {
    const doc = xml(body);
    const root = doc.documentElement;
    if (root && root.localName === 'Error') {
      const code = childText(root, 'Code') ?? 'Error';
      return new S3RequestError(childText(root, 'Message') || code, code, status);
    }
  }
  return new S3RequestError(`The storage endpoint answered ${status}.`, `HTTP${status}`, status);
}

const unreachable = () =>
  new S3RequestError(
    "The storage endpoint could not be reached (the network, or the endpoint refused this page's origin).",
    'NetworkError',
    0,
  );

interface Sent {
  status: number;
  header(name: string): string | null;
  text: string;
}

/** Sends one request with XMLHttpRequest (for upload progress and aborting). */
function send(
  method: string,
  url: URL,
  headers: Record<string, string>,
  body: Blob | string | null,
  onProgress?: (loaded: number) => void,
  signal?: AbortSignal,
): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest();
    x.open(method, url.href);
    for (const [name, value] of Object.entries(headers)) x.setRequestHeader(name, value);
    if (onProgress) x.upload.onprogress = (e) => onProgress(e.loaded);
    x.onload = () => resolve({ status: x.status, header: (n) => x.getResponseHeader(n), text: x.responseText });
    x.onerror = () => reject(unreachable());
    x.onabort = () => reject(new S3RequestError('The upload was cancelled.', 'Aborted', 0));
    if (signal) {
      if (signal.aborted) return x.abort();
      signal.addEventListener('abort', () => x.abort(), { once: true });
    }
    x.send(body);
  });
}

/**
 * A path-style S3 URL under `endpoint`, which may have a path of its own
 * (an API Gateway stage, `https://<id>.execute-api.<region>.amazonaws.com/s3`):
 * it is kept, and signed with the rest, as S3 clients do.
 */
export function s3Url(endpoint: string, bucket?: string, key?: string, query: Record<string, string> = {}): URL {
  const base = new URL(endpoint);
  const prefix = base.pathname.replace(/\/+$/, '');
  const path = bucket === undefined ? '/' : `/${encodeRfc3986(bucket)}${key === undefined ? '' : `/${encodeKey(key)}`}`;
  const url = new URL(`${base.origin}${prefix}${path}`);
  url.search = Object.entries(query)
    .map(([k, v]) => (v === '' ? encodeRfc3986(k) : `${encodeRfc3986(k)}=${encodeRfc3986(v)}`))
    .join('&');
  return url;
}

export class StorageClient {
  constructor(
    private readonly endpoint: string,
    private readonly region: string,
    private readonly credentials: Credentials,
    /** The largest body one PUT may carry (4 MiB behind Lambda). */
    private readonly maxPutBytes: number,
  ) {}

  private url(bucket?: string, key?: string, query: Record<string, string> = {}): URL {
    return s3Url(this.endpoint, bucket, key, query);
  }

  /** A signed request whose body is small text (or none); the answer when it is 2xx, else its S3 error. */
  private async call(method: string, url: URL, body: string | null = null, headers: Record<string, string> = {}): Promise<Sent> {
    const payloadHash = body === null ? EMPTY_SHA256 : await sha256Hex(body);
    const signed = await signRequest({ method, url, headers, payloadHash, region: this.region, credentials: this.credentials });
    const sent = await send(method, url, signed, body);
    if (sent.status < 200 || sent.status >= 300) throw errorOf(sent.status, sent.text);
    return sent;
  }

  async listBuckets(): Promise<BucketInfo[]> {
    const doc = xml((await this.call('GET', this.url())).text);
    return Array.from(doc.getElementsByTagName('Bucket')).map((b) => ({
      name: childText(b, 'Name') ?? '',
      createdAt: childText(b, 'CreationDate') ?? '',
    }));
  }

  async createBucket(name: string): Promise<void> {
    await this.call('PUT', this.url(name));
  }

  async deleteBucket(name: string): Promise<void> {
    await this.call('DELETE', this.url(name));
  }

  async listObjects(bucket: string, prefix: string, token?: string): Promise<Listing> {
    const query: Record<string, string> = { 'list-type': '2', delimiter: '/', 'ipfs-hashes': 'true', 'max-keys': '200' };
    if (prefix) query.prefix = prefix;
    if (token) query['continuation-token'] = token;
    const root = xml((await this.call('GET', this.url(bucket, undefined, query))).text).documentElement;
    const objects = children(root, 'Contents').map((c) => ({
      key: childText(c, 'Key') ?? '',
      size: Number(childText(c, 'Size') ?? 0),
      lastModified: childText(c, 'LastModified') ?? '',
      etag: (childText(c, 'ETag') ?? '').replace(/"/g, ''),
      cid: childText(c, 'IpfsHash'),
      cidV0: childText(c, 'IpfsHashV0'),
    }));
    const prefixes = children(root, 'CommonPrefixes').map((p) => childText(p, 'Prefix') ?? '');
    const truncated = childText(root, 'IsTruncated') === 'true';
    return { objects, prefixes, nextToken: truncated ? childText(root, 'NextContinuationToken') : undefined };
  }

  async deleteObject(bucket: string, key: string): Promise<void> {
    await this.call('DELETE', this.url(bucket, key));
  }

  /** Makes a file readable by anyone at its public URL (`public-read`), or private again. */
  async setPublic(bucket: string, key: string, isPublic: boolean): Promise<void> {
    await this.call('PUT', this.url(bucket, key, { acl: '' }), null, { 'x-amz-acl': isPublic ? 'public-read' : 'private' });
  }

  /** Uploads a file, in one PUT or in parts; `onProgress` gets the bytes sent so far. */
  async upload(
    bucket: string,
    key: string,
    file: Blob,
    options: { contentType?: string; publicRead?: boolean; onProgress?: (sent: number) => void; signal?: AbortSignal } = {},
  ): Promise<Uploaded> {
    const headers: Record<string, string> = { 'content-type': options.contentType || file.type || 'application/octet-stream' };
    if (options.publicRead) headers['x-amz-acl'] = 'public-read';
    if (file.size <= this.maxPutBytes) {
      const url = this.url(bucket, key);
      const signed = await signRequest({
        method: 'PUT',
        url,
        headers,
        payloadHash: UNSIGNED_PAYLOAD,
        region: this.region,
        credentials: this.credentials,
      });
      const sent = await send('PUT', url, signed, file, options.onProgress, options.signal);
      if (sent.status < 200 || sent.status >= 300) throw errorOf(sent.status, sent.text);
      options.onProgress?.(file.size);
      return { cid: sent.header('x-service-ipfs-hash') ?? undefined, cidV0: sent.header('x-service-ipfs-hash-v0') ?? undefined };
    }
    return this.multipart(bucket, key, file, headers, options);
  }

  private async multipart(
    bucket: string,
    key: string,
    file: Blob,
    headers: Record<string, string>,
    options: { onProgress?: (sent: number) => void; signal?: AbortSignal },
  ): Promise<Uploaded> {
    const partSize = Math.max(Math.min(this.maxPutBytes, 16 * 1024 * 1024), Math.ceil(file.size / 10_000));
    if (partSize > this.maxPutBytes)
      throw new S3RequestError('The file is too large for this endpoint: it needs more than 10,000 parts.', 'EntityTooLarge', 0);
    const created = xml((await this.call('POST', this.url(bucket, key, { uploads: '' }), null, headers)).text);
    const uploadId = childText(created.documentElement, 'UploadId');
    if (!uploadId) throw new S3RequestError('The storage endpoint did not start the multipart upload.', 'NoUploadId', 0);
    const etags: string[] = [];
    try {
      for (let start = 0, part = 1; start < file.size; start += partSize, part++) {
        const url = this.url(bucket, key, { partNumber: String(part), uploadId });
        const signed = await signRequest({
          method: 'PUT',
          url,
          headers: {},
          payloadHash: UNSIGNED_PAYLOAD,
          region: this.region,
          credentials: this.credentials,
        });
        const sent = await send(
          'PUT',
          url,
          signed,
          file.slice(start, start + partSize),
          (n) => options.onProgress?.(start + n),
          options.signal,
        );
        if (sent.status < 200 || sent.status >= 300) throw errorOf(sent.status, sent.text);
        const etag = sent.header('etag');
        if (!etag)
          throw new S3RequestError('The storage endpoint does not expose ETag to this page, so parts cannot be completed.', 'NoETag', 0);
        etags.push(etag);
      }
      const body =
        '<CompleteMultipartUpload>' +
        etags
          .map(
            (etag, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${etag.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</ETag></Part>`,
          )
          .join('') +
        '</CompleteMultipartUpload>';
      const done = await this.call('POST', this.url(bucket, key, { uploadId }), body, { 'content-type': 'application/xml' });
      // CompleteMultipartUpload can answer 200 with an error inside.
      const root = xml(done.text).documentElement;
      if (root?.localName === 'Error') throw errorOf(500, done.text);
      options.onProgress?.(file.size);
      return { cid: done.header('x-service-ipfs-hash') ?? undefined, cidV0: done.header('x-service-ipfs-hash-v0') ?? undefined };
    } catch (err) {
      await this.call('DELETE', this.url(bucket, key, { uploadId })).catch(() => {});
      throw err;
    }
  }
}
