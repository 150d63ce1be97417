/**
 * The network between a client and the service, on this machine's
 * loopback: an HTTP proxy that forwards each request to the service unless
 * the test's plan says otherwise for it (drop the connection without an
 * answer, or answer itself, as a failing gateway would), and keeps, for
 * each request, when it came and what became of it. The plan may also
 * change what the service answered on its way back.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProxiedRequest {
  method: string;
  /** The path and query as sent. */
  path: string;
  /** The raw body. */
  body: string;
  /** When it arrived (Date.now()). */
  at: number;
  /** What became of it: the status answered, or 'dropped'. */
  outcome?: number | 'dropped';
  /** The body answered (undefined when dropped). */
  answer?: string;
}

/**
 * For one request: forward it (optionally rewriting the service's answer),
 * drop its connection, or answer it here.
 */
export type Plan =
  | { forward: true; rewrite?: (body: string) => string }
  | { drop: true }
  | { status: number; body?: string; headers?: Record<string, string> };

export interface FaultyProxy {
  /** The proxy's base URL: the service's, as the client sees it. */
  url: string;
  /** Every request so far, oldest first. */
  requests(): ProxiedRequest[];
  close(): Promise<void>;
}

export async function startFaultyProxy(
  target: string,
  plan: (request: ProxiedRequest) => Plan | Promise<Plan> = () => ({ forward: true }),
): Promise<FaultyProxy> {
  const seen: ProxiedRequest[] = [];
  const server = createServer((req, res) => {
    const at = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: ProxiedRequest = { method: req.method ?? 'GET', path: req.url ?? '/', body: Buffer.concat(chunks).toString(), at };
      seen.push(request);
      void (async () => {
        try {
          const planned = await plan(request);
          if ('drop' in planned) {
            request.outcome = 'dropped';
            req.socket.destroy();
            return;
          }
          if ('status' in planned) {
            request.outcome = planned.status;
            request.answer = planned.body ?? '';
            res.writeHead(planned.status, planned.headers).end(request.answer);
            return;
          }
          const forwarded = await fetch(`${target}${request.path}`, {
            method: request.method,
            headers: { 'content-type': req.headers['content-type'] ?? 'application/octet-stream' },
            body: request.method === 'GET' || request.method === 'HEAD' ? undefined : request.body,
          });
          const text = await forwarded.text();
          request.outcome = forwarded.status;
          request.answer = planned.rewrite ? planned.rewrite(text) : text;
          res.writeHead(forwarded.status, { 'content-type': forwarded.headers.get('content-type') ?? 'text/plain' }).end(request.answer);
        } catch (err) {
          request.outcome = 502;
          res.writeHead(502).end(String(err));
        }
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => [...seen],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
