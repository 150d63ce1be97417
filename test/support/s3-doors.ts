/**
 * The S3 API's two doors for tests: the local node:http server, and the
 * Lambda handler driven in-process with API Gateway events. Both reach the
 * same data, so a test can write through one and read through the other.
 */
import { S3Client, S3ServiceException, type S3ClientConfig } from '@aws-sdk/client-s3';
import { BOOT, type TestService } from './service.js';
import { lambdaRequestHandler, type LambdaFn } from './lambda-door.js';

export type Creds = { accessKeyId: string; secretAccessKey: string };
export interface S3Door {
  name: string;
  client(creds?: Creds, extra?: S3ClientConfig): S3Client;
}

/** Loads the S3 Lambda handler with the service's environment (call in beforeAll, after the service starts). */
export async function loadS3Lambda(service: TestService): Promise<LambdaFn> {
  Object.assign(process.env, service.env);
  const mod = (await import('../../functions/s3/handler.js')) as unknown as { handler: LambdaFn };
  return mod.handler;
}

export function s3Doors(service: () => TestService, lambda: () => LambdaFn): S3Door[] {
  return [
    {
      name: 'node:http door',
      client: (creds: Creds = BOOT, extra: S3ClientConfig = {}) =>
        new S3Client({ endpoint: service().endpoints.s3, region: 'us-east-1', forcePathStyle: true, credentials: creds, ...extra }),
    },
    {
      name: 'Lambda door',
      client: (creds: Creds = BOOT, extra: S3ClientConfig = {}) =>
        new S3Client({
          endpoint: service().endpoints.s3,
          region: 'us-east-1',
          forcePathStyle: true,
          credentials: creds,
          requestHandler: lambdaRequestHandler(lambda()) as never,
          ...extra,
        }),
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
