/**
 * A real OpenID Connect provider for the tests (`oidc-provider`, the
 * certified implementation), on a loopback port, with its development
 * login and consent pages (any login name, any password): the name is
 * the subject, whose e-mail claims the test sets in `people`.
 *
 * It listens before it knows its client's redirect URI, so that the
 * service under test can be started with its issuer first; `register`
 * then makes the provider with the one client.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The e-mail claims of each login name (its `sub`); a name not here has none. */
  people: Map<string, { email: string; email_verified: boolean }>;
  /** Makes the provider, its one client sent back to `redirectUri`. */
  register(redirectUri: string): void;
  close(): Promise<void>;
}

/** The service's settings for this provider, shown as "Test ID" on the sign-in page. */
export const oidcEnv = (provider: TestOidcProvider): Record<string, string> => ({
  CAIRN_OIDC_ISSUER: provider.issuer,
  CAIRN_OIDC_CLIENT_ID: provider.clientId,
  CAIRN_OIDC_CLIENT_SECRET: provider.clientSecret,
  CAIRN_OIDC_NAME: 'Test ID',
});

export async function startOidcProvider(): Promise<TestOidcProvider> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server: Server = createServer((req, res) => {
    if (handler) return handler(req, res);
    res.writeHead(503).end('no client registered yet');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const people = new Map<string, { email: string; email_verified: boolean }>();
  const clientId = 'cairn-test';
  const clientSecret = 'a test client secret, long enough for HS256';
  return {
    issuer,
    clientId,
    clientSecret,
    people,
    register(redirectUri) {
      const provider = new Provider(issuer, {
        clients: [
          {
            client_id: clientId,
            client_secret: clientSecret,
            redirect_uris: [redirectUri],
            response_types: ['code'],
            grant_types: ['authorization_code'],
            token_endpoint_auth_method: 'client_secret_post',
          },
        ],
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
        cookies: { keys: ['a test cookie key'] },
        features: { devInteractions: { enabled: true } },
        pkce: { required: () => true },
        async findAccount(_ctx, sub) {
          return { accountId: sub, claims: () => ({ sub, name: sub, ...(people.get(sub) ?? {}) }) };
        },
      });
      handler = provider.callback();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A small cookie jar for one client of one host: name to value, as Set-Cookie leaves them. */
export class CookieJar {
  private readonly cookies = new Map<string, string>();
  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (value === '' || /max-age=0\b/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.cookies].map(([n, v]) => `${n}=${v}`).join('; ');
  }
  get(name: string): string | undefined {
    return this.cookies.get(name);
  }
}

/**
 * Through the provider's pages as a browser would, from its authorization
 * URL: the login form (as `login`), the consent form, until the provider
 * sends the browser to `callbackPrefix`; that URL (`?code&state&iss`).
 */
export async function throughProvider(authorizationUrl: string, login: string, callbackPrefix: string): Promise<string> {
  const jar = new CookieJar();
  let url = authorizationUrl;
  for (let step = 0; step < 12; step++) {
    if (url.startsWith(callbackPrefix)) return url;
    const res = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header() } });
    jar.take(res);
    const location = res.headers.get('location');
    if (location) {
      await res.body?.cancel();
      url = new URL(location, url).href;
      continue;
    }
    const html = await res.text();
    const prompt = /name="prompt" value="(login|consent)"/.exec(html)?.[1];
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    if (!prompt || !action) throw new Error(`the provider answered ${res.status} without a form: ${html.slice(0, 300)}`);
    const form = new URLSearchParams(prompt === 'login' ? { prompt, login, password: 'any' } : { prompt });
    const posted = await fetch(new URL(action, url), {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    });
    jar.take(posted);
    await posted.body?.cancel();
    url = new URL(posted.headers.get('location') ?? url, url).href;
  }
  throw new Error('the provider never sent the browser back');
}
