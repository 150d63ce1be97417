/**
 * Signing in and out with an e-mail and a password: the JSON routes under
 * `/auth/` on the app's own origin (functions/graphql/accounts-http.ts).
 * The session's secret is the HttpOnly cookie those routes set, which this
 * code never sees; what the page keeps, in memory only, is the session's
 * CSRF token, which `GET /auth/session` gives again after a reload.
 *
 * Passkeys go through @simplewebauthn/browser, which turns the service's
 * options (JSON, base64url) into `navigator.credentials` calls and their
 * answers back into JSON (functions/graphql/passkeys-http.ts takes them).
 */
import { browserSupportsWebAuthn, startAuthentication, startRegistration } from '@simplewebauthn/browser';

/** One of the account's teams: X-Cairn-Team picks the one a request acts in. */
export interface SessionTeam {
  id: string;
  name: string;
  role: 'OWNER' | 'MEMBER';
}

/** What the page knows of a person signed in: never the session's secret. */
export interface PersonSession {
  account: { id: string; name: string; defaultTeamId: string };
  email: string | null;
  /** Whether the person has a password they know (not one who signed up through a provider and set none). */
  passwordSet: boolean;
  session: { id: string; createdAt: string; lastSeenAt: string; expiresAt: string };
  csrfToken: string;
  teams: SessionTeam[];
}

/** A refusal from /auth/, in the server's own words (`error`), with the field to fix or the seconds to wait when it gives them. */
export class AuthError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly field?: string,
    readonly retryAfter?: number,
    /** The whole answer, for a refusal that carries more (a second factor's options). */
    readonly answer?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'AuthError';
  }
}

const UNREACHABLE = 'The service could not be reached. Check your connection and try again.';

async function call(method: 'GET' | 'POST', path: string, body?: unknown, csrfToken?: string): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      // The cookie is the session: sent and set on this origin only.
      credentials: 'same-origin',
      headers: {
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(csrfToken ? { 'x-csrf-token': csrfToken } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new AuthError(UNREACHABLE, 0);
  }
  let answer: Record<string, unknown>;
  try {
    answer = (await res.json()) as Record<string, unknown>;
  } catch {
    throw new AuthError(`The service answered ${res.status} without the JSON it should have.`, res.status);
  }
  if (!res.ok || answer.ok !== true) {
    const retry = Number(res.headers.get('retry-after'));
    throw new AuthError(
      typeof answer.error === 'string' ? answer.error : `The service answered ${res.status}.`,
      res.status,
      typeof answer.field === 'string' ? answer.field : undefined,
      Number.isFinite(retry) && retry > 0 ? retry : undefined,
      answer,
    );
  }
  return answer;
}

/** The session this browser's cookie opens, or null when there is none (never signed in, signed out, or ended). */
export async function currentSession(): Promise<PersonSession | null> {
  try {
    return (await call('GET', '/auth/session')) as unknown as PersonSession;
  } catch (err) {
    if (err instanceof AuthError && err.status === 401) return null;
    throw err;
  }
}

/**
 * Signs in; the answer lacks the teams, so the session is read again whole.
 * An account that asks for a passkey after the password answers the right
 * password with that step's options: the browser asks for the passkey at
 * once (`onPasskeyAsked` lets the page say why), and its answer signs in.
 */
export async function signIn(email: string, password: string, onPasskeyAsked?: () => void): Promise<PersonSession> {
  try {
    await call('POST', '/auth/sign-in', { email, password });
  } catch (err) {
    if (!(err instanceof AuthError) || err.answer?.secondFactor !== 'passkey') throw err;
    onPasskeyAsked?.();
    const options = err.answer.options as { challenge?: unknown };
    try {
      await call('POST', '/auth/passkeys/sign-in', { response: await askForPasskey(options) });
    } catch (failed) {
      // Without the passkey, a recovery code may finish this sign-in: the step's challenge goes with it.
      if (!(failed instanceof AuthError) || err.answer.recoveryCodes !== true || typeof options.challenge !== 'string') throw failed;
      throw new SecondStepPending(failed, options.challenge);
    }
  }
  return sessionAfterSignIn();
}

/** The password was right, the passkey did not come: a recovery code with `challenge` can still sign in (within 5 minutes). */
export class SecondStepPending extends AuthError {
  constructor(
    cause: AuthError,
    readonly challenge: string,
  ) {
    super(cause.message, cause.status, cause.field, cause.retryAfter, cause.answer);
    this.name = 'SecondStepPending';
  }
}

/** Finishes a sign-in whose password was right with one of the account's recovery codes instead of its passkey. */
export async function signInWithRecoveryCode(challenge: string, code: string): Promise<PersonSession> {
  await call('POST', '/auth/recovery-codes/sign-in', { challenge, code });
  return sessionAfterSignIn();
}

/** How many recovery codes the account has left, and when they were made. */
export async function recoveryCodeStatus(): Promise<{ remaining: number; createdAt: string | null }> {
  const answer = await call('GET', '/auth/recovery-codes');
  return { remaining: Number(answer.remaining ?? 0), createdAt: typeof answer.createdAt === 'string' ? answer.createdAt : null };
}

/** Makes ten new recovery codes in place of the old ones: the codes, this once. */
export async function makeRecoveryCodes(csrfToken: string): Promise<string[]> {
  return (await call('POST', '/auth/recovery-codes', {}, csrfToken)).codes as string[];
}

/** Whether this browser can use passkeys at all (WebAuthn, in a secure context). */
export const passkeysSupported = (): boolean => browserSupportsWebAuthn();

const PASSKEY_CANCELLED = 'No passkey was given (cancelled, timed out, or none of yours is on this device). Try again.';

/** The browser's answer to the service's options, or an AuthError in words when the person cancels or the device has none. */
async function askForPasskey(options: unknown) {
  try {
    return await startAuthentication({ optionsJSON: options as Parameters<typeof startAuthentication>[0]['optionsJSON'] });
  } catch (err) {
    throw new AuthError(
      (err as Error).name === 'NotAllowedError' ? PASSKEY_CANCELLED : `The passkey could not be used: ${(err as Error).message}`,
      0,
    );
  }
}

/** Signs in with a passkey alone: the browser offers the person's passkeys for this site (no e-mail typed). */
export async function signInWithPasskey(): Promise<PersonSession> {
  const { options } = await call('POST', '/auth/passkeys/sign-in/options', {});
  await call('POST', '/auth/passkeys/sign-in', { response: await askForPasskey(options) });
  return sessionAfterSignIn();
}

/** One of the account's passkeys, as Settings lists it. */
export interface PasskeyInfo {
  id: string;
  name: string;
  transports: string[];
  createdAt: string;
  lastUsedAt: string | null;
}

/** The account's passkeys, and whether it asks for one after the password. */
export async function listPasskeys(): Promise<{ passkeys: PasskeyInfo[]; required: boolean }> {
  const answer = await call('GET', '/auth/passkeys');
  return { passkeys: answer.passkeys as PasskeyInfo[], required: answer.required === true };
}

/** Registers a passkey of this device (or a security key, a phone) to the account, under `name`. */
export async function registerPasskey(csrfToken: string, name: string): Promise<PasskeyInfo> {
  const { options } = await call('POST', '/auth/passkeys/registration/options', {}, csrfToken);
  let response;
  try {
    response = await startRegistration({ optionsJSON: options as Parameters<typeof startRegistration>[0]['optionsJSON'] });
  } catch (err) {
    const name = (err as Error).name;
    throw new AuthError(
      name === 'InvalidStateError'
        ? 'This device has a passkey for your account already.'
        : name === 'NotAllowedError'
          ? 'No passkey was made (cancelled or timed out).'
          : `No passkey was made: ${(err as Error).message}`,
      0,
    );
  }
  return (await call('POST', '/auth/passkeys/registration', { response, name }, csrfToken)).passkey as PasskeyInfo;
}

export async function removePasskey(csrfToken: string, id: string): Promise<void> {
  await call('POST', '/auth/passkeys/remove', { id }, csrfToken);
}

/** Turns "ask for a passkey after the password" on or off. */
export async function setPasskeyRequired(csrfToken: string, required: boolean): Promise<string[] | undefined> {
  // Turned on for an account with no recovery code left, the service makes ten: here once.
  const answer = await call('POST', '/auth/passkeys/required', { required }, csrfToken);
  return Array.isArray(answer.recoveryCodes) ? (answer.recoveryCodes as string[]) : undefined;
}

/** Renames one of the account's passkeys. */
export async function renamePasskey(csrfToken: string, id: string, name: string): Promise<PasskeyInfo> {
  return (await call('POST', '/auth/passkeys/rename', { id, name }, csrfToken)).passkey as PasskeyInfo;
}

export async function signUp(input: { email: string; password: string; name: string }): Promise<PersonSession> {
  await call('POST', '/auth/sign-up', input);
  return sessionAfterSignIn();
}

async function sessionAfterSignIn(): Promise<PersonSession> {
  const session = await currentSession();
  // The cookie was just set: a browser that refused it (cookies blocked) has no session.
  if (!session) throw new AuthError('Signed in, but this browser did not keep the session cookie: allow cookies for this site.', 0);
  return session;
}

/** Ends this session, or every session of the account (`everywhere`, this one included); the cookie is cleared either way. */
export async function signOut(csrfToken: string, everywhere = false): Promise<void> {
  await call('POST', '/auth/sign-out', everywhere ? { everywhere: true } : {}, csrfToken);
}

/** Changes the password of the signed-in account; the service signs out its other sessions and answers how many it ended. */
export async function changePassword(csrfToken: string, currentPassword: string, newPassword: string): Promise<number> {
  const answer = await call('POST', '/auth/password', { currentPassword, newPassword }, csrfToken);
  return typeof answer.ended === 'number' ? answer.ended : 0;
}

/** Asks for a link to set a new password, mailed to `email`: the service's words on what happens next. */
export async function requestPasswordLink(email: string): Promise<string> {
  const answer = await call('POST', '/auth/password-reset/request', { email });
  return typeof answer.message === 'string' ? answer.message : 'A link is on its way.';
}

/** Starts a sign-in with the service's OpenID Connect provider (with an invitation's token, to sign up by it): the provider's page to go to. */
export async function startProviderSignIn(invitation?: string): Promise<string> {
  const answer = await call('POST', '/auth/oidc/start', invitation ? { invitation } : {});
  if (typeof answer.url !== 'string') throw new AuthError('The service gave no address to sign in at.', 0);
  return answer.url;
}

/** What the service's `?sign_in_error=` after a provider's sign-in means (graphql/oidc-http.ts), in words for the person. */
export function providerProblem(problem: string, name: string): string {
  const words: Record<string, string> = {
    denied: `You declined at ${name}: you are not signed in.`,
    failed: `Signing in with ${name} did not work: its answer could not be checked. Try again.`,
    expired: 'That sign-in took too long, or was started in another browser. Try again.',
    unavailable: `${name} cannot be reached now. Try again later.`,
    'email-taken': `An account with the e-mail address ${name} gave exists already, and is not linked to it: sign in with your e-mail and password.`,
    'email-unverified': `${name} did not say your e-mail address is confirmed: confirm it there, then try again.`,
    closed: "There is no account for you here, and new accounts are made by the service's operator.",
    'invite-only':
      'There is no account for you here, and new accounts are by invitation: ask an owner of a team to invite you, then use the link of the invitation.',
    invitation: 'The invitation could not be used: it is used, withdrawn, expired, or for another e-mail address.',
    locked: 'Too many failed sign-ins from this address: try again in 15 minutes.',
  };
  return words[problem] ?? `Signing in with ${name} did not work. Try again.`;
}

/** A provider's identity linked to the account (Settings). */
export interface LinkedIdentity {
  id: string;
  issuer: string;
  email: string;
  createdAt: string;
}

export async function listLinkedIdentities(): Promise<LinkedIdentity[]> {
  return (await call('GET', '/auth/oidc/identities')).identities as LinkedIdentity[];
}

/** Starts linking the service's provider to this account: the provider's page to go to (it sends the browser back to Settings). */
export async function startProviderLink(csrfToken: string): Promise<string> {
  const answer = await call('POST', '/auth/oidc/link', {}, csrfToken);
  if (typeof answer.url !== 'string') throw new AuthError('The service gave no address to go to.', 0);
  return answer.url;
}

export async function unlinkIdentity(csrfToken: string, id: string): Promise<void> {
  await call('POST', '/auth/oidc/unlink', { id }, csrfToken);
}

/** What `?link=` after linking a provider means (graphql/oidc-http.ts), in words for the person. */
export function linkOutcome(outcome: string, name: string): { ok: boolean; text: string } {
  const words: Record<string, [boolean, string]> = {
    linked: [true, `${name} is linked: you can sign in with it too.`],
    already: [true, `${name} was linked to your account already.`],
    taken: [false, `That ${name} identity is linked to another account: it stays there. Sign in to ${name} as yourself and try again.`],
    session: [false, 'Linking was started in another session, or you were signed out meanwhile: nothing was linked. Try again.'],
    denied: [false, `You declined at ${name}: nothing was linked.`],
    failed: [false, `Linking ${name} did not work: its answer could not be checked. Try again.`],
    expired: [false, 'Linking took too long, or was started in another browser. Try again.'],
    unavailable: [false, `${name} cannot be reached now. Try again later.`],
  };
  const [ok, text] = words[outcome] ?? [false, `Linking ${name} did not work. Try again.`];
  return { ok, text };
}
