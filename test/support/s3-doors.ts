/**
 * The S3 API's doors for tests. Locally there are three, which reach the
 * same data (a test can write through one and read through another): the
 * node:http server, and the Lambda handler driven in-process with Lambda's
 * runtime settings, once with HTTP API / Function URL events (payload 2.0)
 * and once with API Gateway REST API events (payload 1.0), the S3 API's
 * door in AWS. The REST door's clients talk to an execute-api endpoint with
 * the stage in its path (what they sign), its plain requests to whatever
 * host they name (a custom domain). A deployed stack has one door, its
 * endpoint.
 */
import {
  HeadObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
  type CompletedPart,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { lambdaFetch, lambdaRequestHandler, REST_API_ENDPOINT, restFetch, restRequestHandler } from './lambda-door.js';
import { REMOTE, type ApiTarget } from './api-target.js';
import type { Fetch } from './graphql.js';

export type Creds = { accessKeyId: string; secretAccessKey: string };
export interface S3Door {
  name: string;
  /** Whether this is the in-process Lambda handler. */
  lambda: boolean;
  /** A short name for keys and buckets, so the doors' tests do not meet in shared data. */
  tag: string;
  /** An SDK client through this door, as the target's account unless told otherwise. */
  client(creds?: Creds, extra?: S3ClientConfig): S3Client;
  /** A plain HTTP request through this door (an anonymous caller, a presigned URL). */
  fetch: Fetch;
}

/** The target's doors, for describe.each (known before the target starts; each resolves it when used). */
export function s3Doors(target: () => ApiTarget): S3Door[] {
  const client = (creds: Creds | undefined, extra: S3ClientConfig) => {
    const t = target();
    return new S3Client({ endpoint: t.endpoints.s3, region: t.region, forcePathStyle: true, credentials: creds ?? t.account, ...extra });
  };
  const plain: Fetch = (url, init) => fetch(url, init as RequestInit);
  if (REMOTE)
    return [{ name: 'deployed endpoint', lambda: false, tag: 'd', client: (creds, extra = {}) => client(creds, extra), fetch: plain }];
  return [
    { name: 'node:http door', lambda: false, tag: 'n', client: (creds, extra = {}) => client(creds, extra), fetch: plain },
    {
      name: 'Lambda door',
      lambda: true,
      tag: 'l',
      client: (creds, extra = {}) => client(creds, { requestHandler: lambdaRequestHandler(target().s3Lambda!) as never, ...extra }),
      fetch: (url, init) => lambdaFetch(target().s3Lambda!)(url, init),
    },
    {
      name: 'REST API door',
      lambda: true,
      tag: 'r',
      client: (creds, extra = {}) =>
        client(creds, { endpoint: REST_API_ENDPOINT, requestHandler: restRequestHandler(target().s3Lambda!) as never, ...extra }),
      fetch: (url, init) => restFetch(target().s3Lambda!)(url, init),
    },
  ];
}

/** Captures the raw response headers of every call the client makes (the latest wins). */
export function captureHeaders(client: S3Client): { headers: Record<string, string> } {
  const seen = { headers: {} as Record<string, string> };
  client.middlewareStack.add(
    (next) => async (args) => {
      const out = await next(args);
      seen.headers = (out.response as { headers: Record<string, string> }).headers;
      return out;
    },
    { step: 'deserialize' },
  );
  return seen;
}

/** The S3 error a call fails with; fails the test if it succeeds or fails otherwise. */
export async function failure(p: Promise<unknown>): Promise<S3ServiceException> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof S3ServiceException)) throw new Error(`expected an S3 error, got ${String(err)}`);
  return err;
}

/** Whether a key is absent, asked through the API (HeadObject's 404): what "stored nothing" means to a client. */
export async function absent(s3: S3Client, bucket: string, key: string): Promise<boolean> {
  const err = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then(
    () => undefined,
    (e: unknown) => e,
  );
  return (err as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode === 404;
}

/** Uploads `bodies` as parts 1, 2, ... of a multipart upload, one after another: the parts as CompleteMultipartUpload lists them. */
export async function uploadParts(
  s3: S3Client,
  upload: { Bucket: string; Key: string; UploadId: string | undefined },
  bodies: Uint8Array[],
): Promise<CompletedPart[]> {
  const parts: CompletedPart[] = [];
  for (const [i, Body] of bodies.entries()) {
    const out = await s3.send(new UploadPartCommand({ ...upload, PartNumber: i + 1, Body }));
    parts.push({ PartNumber: i + 1, ETag: out.ETag });
  }
  return parts;
}
