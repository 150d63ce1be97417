/**
 * The S3 API's door in AWS with the request limits that shape uploads: a
 * synchronous Lambda invocation carries at most 6 MB (6,291,456 bytes) of
 * event (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html,
 * "Invocation payload (request and response)"), and API Gateway REST hands
 * a binary body over base64-encoded in that event
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-payload-encodings.html),
 * so a part's raw bytes count four thirds. The door's stand-in refuses an
 * event over the limit before the function runs, as Lambda does
 * (lambda-door.ts, LAMBDA_LIMITS in lambda-runtime.ts: the one place the
 * limit is kept).
 *
 * `recordedLambda` notes the size of every event that reaches the S3
 * handler, so a test can tell how close to the limit a client's parts came;
 * `startRestFront` puts the handler behind a real HTTP port as API Gateway
 * REST would (REST events, custom-domain addressing: no stage), for clients
 * in other processes (the CLI).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { restFetch, type LambdaFn } from './lambda-door.js';
import { LAMBDA_LIMITS } from './lambda-runtime.js';

/** The largest event one synchronous invocation carries. */
export const LAMBDA_MAX_EVENT_BYTES = LAMBDA_LIMITS.requestBytes;

export interface RecordedLambda {
  handler: LambdaFn;
  /** The size in bytes of every event that reached the handler. */
  events: number[];
}

export function recordedLambda(inner: LambdaFn): RecordedLambda {
  const events: number[] = [];
  const handler: LambdaFn = async (event, context) => {
    events.push(Buffer.byteLength(JSON.stringify(event)));
    return inner(event, context);
  };
  return { handler, events };
}

export interface RestFront {
  /** The endpoint clients are given: http://127.0.0.1:<port>. */
  url: string;
  /** Every request seen, as "METHOD /path?query <body bytes>". */
  requests: Array<{ method: string; path: string; bodyBytes: number }>;
  close(): Promise<void>;
}

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** An HTTP server whose every request reaches `handler` as an API Gateway REST event, and whose answers are the handler's. */
export async function startRestFront(handler: LambdaFn): Promise<RestFront> {
  const call = restFetch(handler);
  const requests: RestFront['requests'] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await bodyOf(req);
      requests.push({ method: req.method ?? 'GET', path: req.url ?? '/', bodyBytes: body.length });
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) {
        // Hop-by-hop headers end at API Gateway.
        if (v === undefined || k === 'connection' || k === 'transfer-encoding' || k === 'keep-alive') continue;
        headers[k] = Array.isArray(v) ? v.join(', ') : v;
      }
      const response = await call(`http://${req.headers.host ?? '127.0.0.1'}${req.url ?? '/'}`, {
        method: req.method,
        headers,
        body: body.length ? body : undefined,
      });
      const out = Buffer.from(await response.arrayBuffer());
      const answer: Record<string, string> = {};
      response.headers.forEach((value, name) => {
        if (name !== 'transfer-encoding' && name !== 'connection') answer[name] = value;
      });
      if (req.method !== 'HEAD' && answer['content-length'] === undefined) answer['content-length'] = String(out.length);
      res.writeHead(response.status, answer);
      res.end(req.method === 'HEAD' ? undefined : out);
    })().catch((err: unknown) => {
      res.destroy(err as Error);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
