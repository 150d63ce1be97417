/**
 * Signing in with an OpenID Connect provider (config.oidc): the
 * authorization code flow with PKCE (S256), a state and a nonce, through
 * `openid-client`, which checks all three, the ID token's signature,
 * issuer, audience and expiry. The HTTP side is graphql/oidc-http.ts.
 *
 * Who the person is: the provider's `sub` at its issuer
 * (data/oidc-identities.ts), never the e-mail alone. A first sign-in of a
 * subject makes an account, under CAIRN_SIGNUP as sign-up with a password
 * does (open: anyone; invite: only with an invitation for the e-mail;
 * closed: no one), and only for an e-mail the provider says it verified
 * (`email_verified`): the account's e-mail is what invitations and reset
 * links go to. An e-mail that has an account already is refused, not
 * linked: the provider vouching for the address is not the person proving
 * they hold that account, and linking would let whoever controls the
 * address at the provider (a reissued mailbox, a provider that verifies
 * loosely) into it.
 *
 * The issuer is the operator's setting, not a user's: its discovery,
 * token and userinfo requests go to the address the operator named, not
 * through the outbound policy for user-chosen addresses (net/outbound.ts),
 * which would refuse a provider on the operator's own network. None
 * follows a redirect (openid-client sends them with `redirect: 'manual'`).
 */
import { createHash, randomBytes } from 'node:crypto';
import * as oidc from 'openid-client';
import type { Config } from '../config.js';
import { AccountConflictError, type Account } from '../data/accounts.js';
import { ConflictError } from '../data/errors.js';
import { oidcIdentity, oidcIdentityItem } from '../data/oidc-identities.js';
import { isPlausibleEmail, normaliseEmail, personItems } from '../data/people.js';
import { joinWrites } from './invitations.js';
import { hashPassword } from './passwords.js';
import { addressKey, type AuthServices, type ClientInfo, type SignedIn } from './sign-in.js';

export type OidcSettings = NonNullable<Config['oidc']>;

/** The path the provider sends the browser back to; registered with the provider as `<base URL>/auth/oidc/callback`. */
export const OIDC_CALLBACK_PATH = '/auth/oidc/callback';

/** How long a started sign-in may take at the provider. */
export const OIDC_FLOW_SECONDS = 600;

/** Why an OIDC sign-in did not sign in; the sign-in page words each (ui/pages/SignIn.tsx). */
export type OidcProblem =
  /** The person declined at the provider. */
  | 'denied'
  /** The provider answered with an error of its own, or its answer did not check out (state, nonce, token). */
  | 'failed'
  /** No sign-in was started in this browser, or it took longer than OIDC_FLOW_SECONDS. */
  | 'expired'
  /** The provider could not be reached. */
  | 'unavailable'
  /** An account has the e-mail, and this identity is not linked to it. */
  | 'email-taken'
  /** The provider did not say the e-mail is verified (or gave none). */
  | 'email-unverified'
  /** Sign-up is closed. */
  | 'closed'
  /** Sign-up is by invitation, and there was none for this e-mail. */
  | 'invite-only'
  /** The invitation was for another e-mail, or is used, withdrawn or expired. */
  | 'invitation'
  /** Too many failures from this address. */
  | 'locked';

/** What a started sign-in keeps in the browser (an HttpOnly cookie) until the provider sends it back. */
export interface OidcFlow {
  state: string;
  nonce: string;
  verifier: string;
  /** An invitation's token, for a sign-up by invitation. */
  invitation?: string;
  /** Linking to the signed-in account (Settings), not signing in: the binding of the session that started it (oidcLinkBinding). */
  link?: string;
  /** When it started, in ms since the epoch. */
  at: number;
}

export interface OidcProvider {
  settings: OidcSettings;
  /** Starts a sign-in: the flow to keep, and the provider's URL to send the browser to. */
  start(baseUrl: string, invitation?: string): Promise<{ flow: OidcFlow; url: string }>;
  /** The provider's answer at the callback, checked against the flow: the identity it vouches for. */
  finish(flow: OidcFlow, callbackUrl: URL): Promise<{ sub: string; email?: string; emailVerified: boolean; name?: string }>;
}

/** Plain http, which config.ts allows only on a loopback address. */
const isPlainHttp = (url: URL) => url.protocol === 'http:';

/**
 * The provider, found through its discovery document once per process
 * (again after a failure). Loopback http issuers (config.ts allows no
 * other) are asked over http.
 */
export function oidcProvider(settings: OidcSettings): OidcProvider {
  let configuration: Promise<oidc.Configuration> | undefined;
  const discovered = () => {
    const issuer = new URL(settings.issuer);
    configuration ??= oidc
      .discovery(issuer, settings.clientId, settings.clientSecret, undefined, {
        execute: isPlainHttp(issuer) ? [oidc.allowInsecureRequests] : [],
        timeout: 10,
      })
      .catch((err: unknown) => {
        configuration = undefined;
        throw new OidcUnavailable(err);
      });
    return configuration;
  };
  return {
    settings,
    async start(baseUrl, invitation) {
      const config = await discovered();
      const flow: OidcFlow = {
        state: oidc.randomState(),
        nonce: oidc.randomNonce(),
        verifier: oidc.randomPKCECodeVerifier(),
        at: Date.now(),
        ...(invitation ? { invitation } : {}),
      };
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: `${baseUrl}${OIDC_CALLBACK_PATH}`,
        scope: 'openid email profile',
        code_challenge: await oidc.calculatePKCECodeChallenge(flow.verifier),
        code_challenge_method: 'S256',
        state: flow.state,
        nonce: flow.nonce,
      });
      return { flow, url: url.href };
    },
    async finish(flow, callbackUrl) {
      const config = await discovered();
      const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      });
      const claims = tokens.claims()!;
      let email = claims.email;
      let verified = claims.email_verified;
      // Many providers put the e-mail only in the userinfo answer (OpenID Connect Core 1.0, 5.4): asked for the same subject.
      if (typeof email !== 'string') {
        const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
        email = info.email;
        verified = info.email_verified;
      }
      return {
        sub: claims.sub,
        email: typeof email === 'string' ? email : undefined,
        emailVerified: verified === true,
        name: typeof claims.name === 'string' ? claims.name : undefined,
      };
    },
  };
}

/** The provider's discovery document could not be had. */
export class OidcUnavailable extends Error {
  override name = 'OidcUnavailable';
  constructor(cause: unknown) {
    super(`the OpenID Connect provider could not be reached: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** An account name from an e-mail's local part: lower-case letters, digits and hyphens, 3 to 32 of them. */
export function accountNameFrom(email: string): string {
  const base = (email.split('@')[0] ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 32)
    .replace(/-+$/, '');
  return base.length >= 3 ? base : `${base || 'user'}-${randomBytes(2).toString('hex')}`;
}

/**
 * The account the provider's identity signs in to, making it where the
 * rules allow (see the header); a session for it, or the problem.
 */
export async function signInWithIdentity(
  services: AuthServices,
  identity: { issuer: string; sub: string; email?: string; emailVerified: boolean },
  invitationToken: string | undefined,
  client: ClientInfo,
): Promise<SignedIn | { problem: OidcProblem }> {
  const linked = await oidcIdentity(services.db, identity.issuer, identity.sub);
  if (linked) {
    const account = await services.accounts.getAccount(linked.accountId);
    if (account) return session(services, account, (await services.people.emailOf(account.id)) ?? linked.email, client);
  }
  if (!identity.email || !identity.emailVerified || !isPlausibleEmail(normaliseEmail(identity.email)))
    return { problem: 'email-unverified' };
  const email = normaliseEmail(identity.email);
  if (await services.people.byEmail(email)) return { problem: 'email-taken' };
  const policy = services.config.signup;
  if (policy === 'closed') return { problem: 'closed' };
  const opened = invitationToken ? await services.invitations.open(invitationToken) : undefined;
  // The sign-in page words every invitation problem alike (used, withdrawn, expired, or for another e-mail).
  if (opened && ('refused' in opened || opened.invitation.email !== email)) return { problem: 'invitation' };
  if (policy === 'invite' && !opened) return { problem: 'invite-only' };
  // No password: one nobody knows, so the PERSON item (the e-mail's, for invitations and reset links) is whole; a reset link sets a real one.
  const passwordHash = await hashPassword(randomBytes(32).toString('base64url'));
  let name = accountNameFrom(email);
  for (let attempt = 0; ; attempt++) {
    try {
      const { account } = await services.accounts.createAccount({
        name,
        alsoPut: ({ accountId, createdAt }) => [
          ...personItems({ accountId, email, passwordHash, createdAt, passwordUnknown: true }),
          oidcIdentityItem({ accountId, issuer: identity.issuer, sub: identity.sub, email, createdAt }),
        ],
        alsoWrite: opened ? ({ accountId, createdAt }) => joinWrites(services, opened, { id: accountId, name }, createdAt) : undefined,
      });
      return session(services, account, email, client);
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      if (err instanceof AccountConflictError && err.what === 'added') return { problem: 'email-taken' };
      if (err instanceof AccountConflictError && err.what === 'also') return { problem: 'invitation' };
      // The name (or its bucket) is someone else's: the same with a random end, a few times.
      if (attempt >= 3) throw err;
      name = `${accountNameFrom(email).slice(0, 27).replace(/-+$/, '')}-${randomBytes(2).toString('hex')}`;
    }
  }
}

async function session(services: AuthServices, account: Account, email: string, client: ClientInfo): Promise<SignedIn> {
  const { session, secret } = await services.sessions.create(account.id, client);
  return { kind: 'signed-in', account, email, session, secret };
}

/**
 * What binds a linking flow to the session that started it: a digest of
 * the session's secret (which only that browser's cookie holds), so the
 * callback links only in that session; the flow cookie carries the
 * digest, never the secret.
 */
export const oidcLinkBinding = (sessionSecret: string): string =>
  createHash('sha256').update(`cairn oidc link\n${sessionSecret}`).digest('base64url');

/** What came of linking a provider from Settings; Settings words each (`/?link=<outcome>#/settings`). */
export type OidcLinkOutcome =
  | 'linked'
  /** The identity was this account's already. */
  | 'already'
  /** The identity is another account's: never moved. */
  | 'taken'
  /** No session, or not the one that started the linking. */
  | 'session'
  | 'denied'
  | 'failed'
  | 'expired'
  | 'unavailable'
  | 'locked';

/** Counts a failed callback against the client's address, as a failed sign-in is. */
export const failCallback = (services: AuthServices, client: ClientInfo) => services.signInAttempts.fail(addressKey(client));

/** Whether the client's address may not sign in now: seconds to wait, else 0. */
export const callbackWait = (services: AuthServices, client: ClientInfo) => services.signInAttempts.retryAfter(addressKey(client));
