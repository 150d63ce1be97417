/**
 * A fake of the commit status endpoints of GitHub's and GitLab's REST APIs
 * for tests, on this machine's loopback: it records every request whole
 * (method, path, headers, raw body) and answers as the test plans, by
 * default as the hosts do (201 with the status it made). GitHub's is under
 * `/github` (`POST /repos/{owner}/{repo}/statuses/{sha}`), GitLab's under
 * `/gitlab` (`POST /projects/{id}/statuses/{sha}`); anything else is 404.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StatusRequest {
  api: 'github' | 'gitlab';
  method: string;
  /** The path as sent, under the API's base (`/repos/acme/site/statuses/<sha>`). */
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  /** The JSON body, parsed. */
  body: Record<string, unknown>;
  at: number;
}

/** What to answer a request: a status code and a JSON body, or 'hang' (never answer). */
export type Answer = { status: number; body?: unknown } | 'hang';

export interface GitHostApi {
  /** The base URL of the fake GitHub API (what CAIRN_GIT_HOST_APIS names). */
  githubUrl: string;
  /** The base URL of the fake GitLab API. */
  gitlabUrl: string;
  /** Every request so far, oldest first. */
  requests(): StatusRequest[];
  /** From now on, requests are answered by `plan` (undefined: the default answer). */
  answer(plan: (request: StatusRequest) => Answer | undefined): void;
  close(): Promise<void>;
}

export async function startGitHostApi(): Promise<GitHostApi> {
  const seen: StatusRequest[] = [];
  let plan: (request: StatusRequest) => Answer | undefined = () => undefined;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const m = /^\/(github|gitlab)(\/.*)$/.exec(req.url ?? '');
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        // recorded as it came
      }
      if (!m) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not Found"}');
      const request: StatusRequest = {
        api: m[1] as 'github' | 'gitlab',
        method: req.method ?? '',
        path: m[2]!,
        headers: req.headers,
        raw,
        body,
        at: Date.now(),
      };
      seen.push(request);
      const answer = plan(request) ?? { status: 201, body: { id: seen.length, state: body.state, context: body.context ?? body.name } };
      if (answer === 'hang') return;
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body ?? {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    githubUrl: `${url}/github`,
    gitlabUrl: `${url}/gitlab`,
    requests: () => [...seen],
    answer(next) {
      plan = next;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
