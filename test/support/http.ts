/**
 * fetch() that sends the headers it is given as they are: WHATWG fetch
 * always sends the URL's host, so requests for `<bucket>.<domain>` (and a
 * browser's Origin) go through node:http, or node:https for a deployed stack.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

export function hostFetch(url: string, init: { method?: string; headers?: Record<string, string> } = {}): Promise<Response> {
  return new Promise((resolve, reject) => {
    const request = url.startsWith('https:') ? httpsRequest : httpRequest;
    const req = request(url, { method: init.method ?? 'GET', headers: init.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const headers = new Headers();
        for (let i = 0; i < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        const status = res.statusCode ?? 0;
        const body = chunks.length && status !== 204 && status !== 304 ? Buffer.concat(chunks) : null;
        resolve(new Response(body, { status, headers }));
      });
    });
    req.on('error', reject);
    req.end();
  });
}
