/**
 * A stand-in of the storage API's edge in AWS (lib/part-staging.ts), as an
 * HTTPS server clients are pointed at as they would be at the
 * distribution: the viewer-request CloudFront Function (the shipped code,
 * run as CloudFront's runtime runs it), then the REST API's two ways:
 *
 * - `/_parts/...` (PUT): the Lambda REQUEST authoriser
 *   (functions/part-staging/handler.ts) with an authoriser event, then, on
 *   Allow, the S3 integration: the body stored as it came under
 *   `part-staging/<uploadId>/<partNumber>` of a bucket of an S3 stand-in
 *   (the local service's node:http door), the mapped headers as user
 *   metadata, and S3's ETag answered; on Deny, the stack's ACCESS_DENIED
 *   gateway response (S3 XML AccessDenied, 403).
 * - everything else: the S3 Lambda handler through the REST door's events
 *   (test/support/lambda-door.ts), the stage added by the origin path.
 *
 * What CloudFront does between them, as the stack configures it: the
 * origin request carries every viewer header but Host (the API's own host
 * instead), and here no Authorization (CloudFront drops it unless a policy
 * forwards it, so the function's copy is what counts), and the edge key as
 * the distribution's origin header when one is given. API Gateway's 10 MB
 * request limit answers 413 as the stack's gateway response does.
 */
import type { IncomingMessage } from 'node:http';
import { createServer, type Server } from 'node:https';
import { execFile as execFileCallback } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as vm from 'node:vm';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { STAGED_HEADERS, stagedPartKey } from '../../functions/core/ports/staged-parts.js';
import { API_GATEWAY_MAX_PAYLOAD_BYTES, restEvent, invokeThrough, lambdaContext, REST_STAGE, type LambdaFn } from './lambda-door.js';

const execFile = promisify(execFileCallback);
type Json = any;

export const EXECUTE_API_HOST = 'cairntest01.execute-api.us-east-1.amazonaws.com';

/** The integration's mapping: a staged part's metadata entry from the origin request's header (lib/part-staging.ts). */
export function stagedMetadataSource(name: string): string {
  return name === 'authorization' ? 'x-cairn-viewer-authorization' : name;
}

export interface StorageEdge {
  endpoint: string;
  /** The CA file (the server's self-signed certificate) clients trust: AWS_CA_BUNDLE, or an https agent's `ca`. */
  caFile: string;
  ca: Buffer;
  /** Requests that reached each way. */
  counts: { staged: number; refused: number; function: number };
  /** The x-amz-content-sha256 of every part staged, in order (how the client framed and signed its bodies). */
  stagedPayloads: string[];
  close(): Promise<void>;
}

async function viewerRequestHandler(code: string): Promise<(event: Json) => Json> {
  const mod = new vm.SourceTextModule(`${code}\nexport { handler };\n`, { identifier: 's3-viewer-request.js' });
  await mod.link(async (specifier) => {
    throw new Error(`the function imports ${specifier}`);
  });
  await mod.evaluate();
  return (mod.namespace as { handler: (event: Json) => Json }).handler;
}

function s3Xml(status: number, code: string, message: string): { status: number; headers: Record<string, string>; body: string } {
  return {
    status,
    headers: { 'content-type': 'application/xml' },
    body: `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>edge</RequestId></Error>`,
  };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startStorageEdge(options: {
  dir: string;
  s3Lambda: LambdaFn;
  authorizer: (event: APIGatewayRequestAuthorizerEvent) => Promise<APIGatewayAuthorizerResult>;
  standIn: S3Client;
  stagingBucket: string;
  /** The viewer-request function's code as the stack ships it. */
  functionCode: string;
  /** The origin header the distribution adds to every request (lib/part-staging.ts), when the functions are told it. */
  edgeKey?: string;
}): Promise<StorageEdge> {
  const keyFile = join(options.dir, 'edge-key.pem');
  const caFile = join(options.dir, 'edge-cert.pem');
  await execFile('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    keyFile,
    '-out',
    caFile,
  ]);
  const ca = await readFile(caFile);
  const viewerRequest = await viewerRequestHandler(options.functionCode);
  const counts = { staged: 0, refused: 0, function: 0 };
  const stagedPayloads: string[] = [];

  const server: Server = createServer({ key: await readFile(keyFile), cert: ca }, (req, res) => {
    void (async () => {
      const body = await readBody(req);
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const rawQuery = q < 0 ? '' : url.slice(q + 1);
      const headers: Record<string, { value: string }> = {};
      for (let i = 0; i < req.rawHeaders.length; i += 2) headers[req.rawHeaders[i]!.toLowerCase()] = { value: req.rawHeaders[i + 1]! };
      const querystring: Record<string, { value: string }> = {};
      for (const part of rawQuery.split('&').filter(Boolean)) {
        const eq = part.indexOf('=');
        const name = decodeURIComponent(eq < 0 ? part : part.slice(0, eq));
        querystring[name] = { value: decodeURIComponent(eq < 0 ? '' : part.slice(eq + 1)) };
      }
      const out = viewerRequest({
        version: '1.0',
        context: { eventType: 'viewer-request' },
        viewer: { ip: '127.0.0.1' },
        request: { method: req.method, uri: q < 0 ? url : url.slice(0, q), querystring, headers, cookies: {} },
      });
      if (out.statusCode !== undefined) {
        // The function answered the viewer itself (CloudFront Functions' response object).
        const fnHeaders: Record<string, string> = {};
        for (const [name, { value }] of Object.entries(out.headers as Record<string, { value: string }>)) fnHeaders[name] = value;
        const fnBody = String(out.body ?? '');
        res.writeHead(out.statusCode as number, { ...fnHeaders, 'content-length': String(Buffer.byteLength(fnBody)) });
        res.end(req.method === 'HEAD' ? undefined : fnBody);
        return;
      }
      // The origin request: every viewer header but Host and Authorization, the API's host, the stage as origin path.
      const origin: Array<[string, string]> = Object.entries(out.headers as Record<string, { value: string }>)
        .filter(([name]) => name !== 'host' && name !== 'authorization')
        .map(([name, { value }]) => [name, value]);
      origin.push(['host', EXECUTE_API_HOST]);
      if (options.edgeKey !== undefined) origin.push(['x-cairn-edge-key', options.edgeKey]);
      const sentPath = `/${REST_STAGE}${out.uri as string}`;
      let answer: { status: number; headers: Record<string, string>; body: Buffer | string };
      if (body.length > API_GATEWAY_MAX_PAYLOAD_BYTES) {
        answer = s3Xml(413, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size');
      } else if ((out.uri as string).startsWith('/_parts/') && req.method === 'PUT') {
        const proxy = restEvent('PUT', EXECUTE_API_HOST, sentPath, rawQuery, origin);
        const event = {
          ...proxy,
          type: 'REQUEST',
          methodArn: `arn:aws:execute-api:us-east-1:123456789012:cairntest01/${REST_STAGE}/PUT/_parts/${proxy.pathParameters?.proxy ?? ''}`,
          resource: '/_parts/{proxy+}',
        } as unknown as APIGatewayRequestAuthorizerEvent;
        const result = await options.authorizer(JSON.parse(JSON.stringify(event)));
        if (result.policyDocument.Statement[0]!.Effect !== 'Allow') {
          counts.refused++;
          answer = s3Xml(403, 'AccessDenied', 'Access Denied');
        } else {
          counts.staged++;
          stagedPayloads.push(headers['x-amz-content-sha256']?.value ?? '');
          // The integration's path: the query's uploadId and partNumber; its headers: the mapped ones, as metadata.
          const originHeaders = new Map(origin);
          const metadata: Record<string, string> = {};
          for (const name of STAGED_HEADERS) {
            const value = originHeaders.get(stagedMetadataSource(name));
            if (value !== undefined) metadata[name] = value;
          }
          const put = await options.standIn.send(
            new PutObjectCommand({
              Bucket: options.stagingBucket,
              Key: stagedPartKey(querystring.uploadId!.value, Number(querystring.partNumber!.value)),
              Body: body,
              Metadata: metadata,
            }),
          );
          answer = { status: 200, headers: { etag: put.ETag! }, body: '' };
        }
      } else {
        counts.function++;
        const event = restEvent(req.method!, EXECUTE_API_HOST, sentPath, rawQuery, origin, body);
        const response = await invokeThrough('rest-api', options.s3Lambda, event, lambdaContext());
        const responseHeaders: Record<string, string> = {};
        response.headers.forEach((value, name) => (responseHeaders[name] = value));
        answer = { status: response.status, headers: responseHeaders, body: Buffer.from(await response.arrayBuffer()) };
      }
      // A HEAD's answer has no body but keeps the object's size, as API Gateway passes the function's Content-Length on.
      const length =
        req.method === 'HEAD' && answer.headers['content-length'] !== undefined
          ? answer.headers['content-length']
          : String(Buffer.byteLength(answer.body));
      res.writeHead(answer.status, { ...answer.headers, 'content-length': length });
      res.end(req.method === 'HEAD' ? undefined : answer.body);
    })().catch((err: unknown) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`edge stand-in failed: ${(err as Error).stack}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    endpoint: `https://127.0.0.1:${port}`,
    caFile,
    ca,
    counts,
    stagedPayloads,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
