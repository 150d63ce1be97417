/**
 * `cairn login`'s browser login: RFC 8628's device flow against the API's
 * /auth/device endpoints (functions/graphql/device-http.ts). It asks for a
 * code naming this machine, shows the person the code and the page and
 * opens their browser there, then polls at the interval the service gave,
 * slowing down when told to, until the person approves or denies in the
 * browser or the code expires. A poll that gets no answer (no connection,
 * a time-out) or a server's error (5xx, 429) is tried again after a
 * growing wait, never sooner than the interval (RFC 8628 §3.5: a client
 * slows down on a connection time-out); after POLL_FAILURES of them in a
 * row login gives up and says why. Approved, the service hands over, once, an
 * API key and a storage key pair made for this machine, and its endpoints:
 * nothing but the API's address is needed, here or against a stack on AWS.
 */
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { CliError, reasonOf, type Output } from './output.js';

export const DEVICE_CLIENT_ID = 'cairn-cli';
const GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';
const REQUEST_TIMEOUT_MS = 30_000;

/** What the token endpoint answers once the login is approved. */
export interface DeviceCredentials {
  access_token: string;
  api_key_id: string;
  team: { id: string; name: string };
  account: { id: string; name: string };
  access_key_id: string;
  secret_access_key: string;
  endpoints: { api: string; storage: string; gateway: string; storage_public_domain?: string; sites_domain?: string };
}

interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete?: string;
  expires_in: number;
  interval?: number;
}

/** The machine's name as the approval page and the keys' names show it. */
export const machineName = (): string => hostname().slice(0, 64) || 'an unnamed machine';

/** Polls that may fail in a row (no answer, or a server's error) before login gives up. */
const POLL_FAILURES = 5;
/** The longest wait after a failed poll, in seconds (unless the interval itself is longer). */
const LONGEST_RETRY_WAIT = 60;

/** What a POST got: the status and the JSON body (undefined when the body is not JSON), or why no answer came. */
type Sent = { status: number; body?: Record<string, unknown>; retryAfter?: number } | { unreachable: string };

async function send(url: string, fields: Record<string, string>): Promise<Sent> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams(fields).toString(),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    return { unreachable: `cannot reach the API at ${new URL(url).origin}: ${reasonOf(err)}` };
  }
  const retryAfter = Number(res.headers.get('retry-after')) || undefined;
  const text = await res.text().catch(() => '');
  try {
    const body: unknown = JSON.parse(text);
    if (body && typeof body === 'object' && !Array.isArray(body))
      return { status: res.status, body: body as Record<string, unknown>, retryAfter };
  } catch {
    // Not JSON: the caller decides.
  }
  return { status: res.status, retryAfter };
}

const notJson = (url: string, status: number) =>
  new CliError(`${url} answered ${status} without JSON: is it a Cairn API with browser login?`);

/** One POST whose failure ends the login. */
async function post(url: string, fields: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const sent = await send(url, fields);
  if ('unreachable' in sent) throw new CliError(sent.unreachable);
  if (!sent.body) throw notJson(url, sent.status);
  return { status: sent.status, body: sent.body };
}

/** Seconds to wait after the `failures`-th failed poll in a row: doubling from the interval, never less than it. */
function retryWait(interval: number, failures: number, retryAfter = 0): number {
  return Math.max(interval, Math.min(Math.max(interval * 2 ** failures, retryAfter), LONGEST_RETRY_WAIT));
}

/** Opens the page in the person's browser, if one can be started; never fails the login (the URL is printed anyway). */
function openBrowser(url: string, out: Output): void {
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', url.replace(/&/g, '^&')]]
        : ['xdg-open', [url]];
  try {
    const child = spawn(command, args, { stdio: 'ignore', detached: true });
    child.once('error', () => out.note(`could not open a browser (${command}): open the address above yourself`));
    child.unref();
  } catch {
    out.note(`could not open a browser (${command}): open the address above yourself`);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs the device flow against `apiUrl`; resolves to the credentials the approval gave. */
export async function deviceLogin(apiUrl: string, options: { browser: boolean }, out: Output): Promise<DeviceCredentials> {
  const started = await post(`${apiUrl}/auth/device/code`, { client_id: DEVICE_CLIENT_ID, machine: machineName() });
  if (started.status === 404)
    throw new CliError(`${apiUrl} has no browser login (no /auth/device): log in with an API key instead (cairn login --api-key <key>)`);
  if (started.status !== 200)
    throw new CliError(`${apiUrl} refused to start a browser login: ${String(started.body.error_description ?? started.body.error)}`);
  const grant = started.body as unknown as DeviceAuthorization;
  const page = grant.verification_uri_complete ?? grant.verification_uri;
  // On stderr, so that --json's stdout stays one value; a person sees both.
  out.note(`To log in, open ${grant.verification_uri} and enter the code ${grant.user_code}`);
  out.note(`  (or go straight to ${page})`);
  if (options.browser) openBrowser(page, out);
  out.note('Waiting for the login to be approved in the browser… (Ctrl-C to give up)');

  const tokenUrl = `${apiUrl}/auth/device/token`;
  let interval = Math.max(1, Number(grant.interval) || 5);
  let wait = interval;
  let failures = 0;
  const deadline = Date.now() + Math.max(1, Number(grant.expires_in) || 600) * 1000;
  for (;;) {
    await sleep(wait * 1000);
    if (Date.now() > deadline) throw new CliError('the code expired before it was approved: run cairn login again');
    const sent = await send(tokenUrl, { grant_type: GRANT_TYPE, device_code: grant.device_code, client_id: DEVICE_CLIENT_ID });
    // No answer, or the server (or a proxy in front of it) failing or throttling: worth another poll, later.
    if ('unreachable' in sent || sent.status >= 500 || sent.status === 429) {
      const trouble = 'unreachable' in sent ? sent.unreachable : `the API at ${new URL(tokenUrl).origin} answered ${sent.status}`;
      failures++;
      if (failures >= POLL_FAILURES)
        throw new CliError(`${trouble} (${failures} polls in a row failed): check the connection, then run cairn login again`);
      wait = retryWait(interval, failures, 'unreachable' in sent ? undefined : sent.retryAfter);
      out.note(`${trouble}: trying again in ${wait} s`);
      continue;
    }
    failures = 0;
    wait = interval;
    if (!sent.body) throw notJson(tokenUrl, sent.status);
    if (sent.status === 200) return sent.body as unknown as DeviceCredentials;
    const error = String(sent.body.error ?? '');
    switch (error) {
      case 'authorization_pending':
        continue;
      case 'slow_down':
        // RFC 8628 §3.5: five seconds more for this and every later poll (or what the service says).
        interval = Math.max(interval + 5, Number(sent.body.interval) || 0);
        wait = interval;
        continue;
      case 'access_denied':
        throw new CliError('the login was denied in the browser');
      case 'expired_token':
        throw new CliError('the code expired before it was approved: run cairn login again');
      default:
        throw new CliError(`the browser login failed: ${String(sent.body.error_description ?? error) || `status ${sent.status}`}`);
    }
  }
}
