/**
 * The hooks' HTTP side, on the API port beside /graphql (both doors route
 * `/hooks/` here, routes.ts):
 *
 *   POST /hooks/git/<siteId>                  a git host's event (core/hosting/git-hooks.ts)
 *   POST /hooks/build/<hookId>?token=<token>  a build hook
 *
 * Here: the paths, POST only, the body read up to MAX_HOOK_BODY_BYTES (and
 * only for a site that takes events), and the JSON answers with their
 * statuses. What an event means and does is the core's, called with the
 * site id, the headers as a record and the body's bytes.
 */
import { readCappedBody } from '../core/http/capped-body.js';
import { queryParams, type HttpRequest } from '../core/http/types.js';
import { DeployRequestError } from '../core/hosting/deploys.js';
import {
  gitHookTarget,
  MAX_HOOK_BODY_BYTES,
  receiveGitEvent,
  runBuildHook,
  type GitHookServices,
  type HookHeaders,
  type HookOutcome,
} from '../core/hosting/git-hooks.js';

const GIT_HOOK_PATH = /^\/hooks\/git\/([^/]+)\/?$/;
const BUILD_HOOK_PATH = /^\/hooks\/build\/([^/]+)\/?$/;

/** Whether the path is one of the hooks (the GraphQL doors hand those here). */
export const isHookPath = (rawPath: string): boolean => rawPath.startsWith('/hooks/');

function json(status: number, body: Record<string, unknown>, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers },
  });
}

const refuse = (status: number, error: string, headers?: Record<string, string>) => json(status, { ok: false, error }, headers);
const notFound = () => refuse(404, 'no such hook');
const tooLarge = () => refuse(413, `the event body is larger than ${MAX_HOOK_BODY_BYTES} bytes`, { connection: 'close' });

const REFUSAL_STATUS = { 'not-found': 404, unauthorized: 401, invalid: 400, 'unsupported-type': 415 } as const;

function answer(outcome: HookOutcome): Response {
  switch (outcome.kind) {
    case 'deployed': {
      const { kind: _kind, ...rest } = outcome;
      return json(200, { ok: true, ...rest });
    }
    case 'ignored':
      return json(200, { ok: true, ignored: outcome.why, ...(outcome.alreadyHandled ? { alreadyHandled: true } : {}) });
    case 'refused':
      return refuse(REFUSAL_STATUS[outcome.reason], outcome.error);
  }
}

/** The body, or undefined once it passes the limit (read no further: the answer closes the connection). */
async function readCapped(req: HttpRequest, limit: number): Promise<Buffer | undefined> {
  const declared = Number(req.headers.get('content-length') ?? 0);
  if (declared > limit) return undefined;
  return readCappedBody(req.body, limit);
}

/** Answers a request under /hooks/. */
export async function handleHook(services: GitHookServices, req: HttpRequest): Promise<Response> {
  const git = GIT_HOOK_PATH.exec(req.rawPath);
  const build = BUILD_HOOK_PATH.exec(req.rawPath);
  if (!git && !build) return notFound();
  if (req.method.toUpperCase() !== 'POST') {
    await req.body?.cancel().catch(() => {});
    return refuse(405, 'hooks take POST only', { allow: 'POST' });
  }
  try {
    if (git) {
      const target = await gitHookTarget(services, decodeURIComponent(git[1]!));
      if (!target) {
        await req.body?.cancel().catch(() => {});
        return notFound();
      }
      const body = await readCapped(req, MAX_HOOK_BODY_BYTES);
      if (body === undefined) return tooLarge();
      const headers: HookHeaders = Object.fromEntries(req.headers);
      return answer(await receiveGitEvent(services, target, headers, body));
    }
    await req.body?.cancel().catch(() => {});
    return answer(await runBuildHook(services, decodeURIComponent(build![1]!), queryParams(req.rawQuery).get('token') ?? ''));
  } catch (err) {
    if (err instanceof DeployRequestError) return refuse(422, err.message);
    services.logger.error('a hook request failed', { path: req.rawPath.replace(/\?.*$/, ''), err });
    return refuse(500, 'internal error; the git host may deliver the event again');
  }
}
