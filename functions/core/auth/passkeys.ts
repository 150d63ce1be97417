/**
 * Passkeys (WebAuthn), with @simplewebauthn/server: registering one while
 * signed in, signing in with one instead of a password, and one asked for
 * after the password (a second factor). The rules, called with plain
 * values (functions/graphql/passkeys-http.ts is the HTTP side).
 *
 * - The relying party is the service's own base URL (CAIRN_BASE_URL, the
 *   one sessions and OIDC use): its origin is the only origin accepted and
 *   its host the RP ID, never a request's Host header, which a client
 *   sets as it likes. WebAuthn wants the RP ID to be a domain, not an IP
 *   address (https://www.w3.org/TR/webauthn-3/#rp-id, "a valid domain
 *   string"), so a service at `http://127.0.0.1:4000` offers no passkeys;
 *   at `http://localhost:4000` it does (a secure context, as loopback http
 *   is: https://w3c.github.io/webappsec-secure-contexts/#localhost).
 * - Every challenge is made here, kept in the table (data/passkeys.ts) for
 *   five minutes, and taken (deleted) by the one answer that uses it: a
 *   replayed answer finds none. A registration's is bound to the session
 *   it was handed to.
 * - Sign-in with a passkey alone is usernameless (a discoverable
 *   credential: the browser offers the person's passkeys for this site,
 *   and the answer names the credential): nothing is asked for an e-mail,
 *   so the options say nothing of which e-mails have passkeys, as
 *   allowCredentials for a typed e-mail would. It asks the authenticator
 *   to verify its user (PIN, biometrics): the passkey then stands for
 *   both factors, which is what lets it replace the password. As a second
 *   factor after the password, presence is enough.
 * - The signature counter must move forward (or stay 0, for
 *   authenticators that keep none): the library refuses a counter that
 *   goes back, and the store moves it only from the value checked, so two
 *   uses of one signature cannot both pass.
 * - Failures count as failed sign-ins (data/sign-in-attempts.ts): per
 *   client address always, and per e-mail for a second factor, whose
 *   account is known from the password; a locked-out address or e-mail is
 *   refused before any passkey is looked at.
 */
import { isIP } from 'node:net';
import type {
  AuthenticationResponseJSON,
  AuthenticatorTransport,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import type { Config } from '../config.js';
import { PASSKEY_LIMITS, PasskeyConflictError, type ChallengePurpose, type Passkey } from '../data/passkeys.js';
import type { AttemptKey } from '../data/sign-in-attempts.js';
import type { Session } from '../data/sessions.js';
import { addressKey, locked, type AuthRefusal, type AuthServices, type ClientInfo, type SignedIn } from './sign-in-results.js';

/**
 * The WebAuthn library, loaded with the first request that needs it: its
 * ASN.1 and X.509 packages (for attestation certificates) are no part of
 * a GraphQL function's start-up, which every container pays.
 */
let library: Promise<typeof import('@simplewebauthn/server')> | undefined;
const webauthn = () => (library ??= import('@simplewebauthn/server'));

/** The relying party of the service's base URL, or undefined where its host is an IP address (no passkeys there). */
export function relyingParty(config: Pick<Config, 'urls'>): { id: string; origin: string; name: string } | undefined {
  const url = new URL(config.urls.baseUrl);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) return undefined;
  return { id: host, origin: url.origin, name: 'Cairn' };
}

export type PasskeyRefusal =
  | AuthRefusal
  /** Passkeys are not offered here (the base URL is an IP address). */
  | { kind: 'unavailable'; message: string }
  /** The change contradicts what is (a passkey registered already, the last one while one is required, none to require). */
  | { kind: 'conflict'; message: string };

export const PASSKEYS_UNAVAILABLE =
  'This service offers no passkeys: browsers allow them only at a domain name, and its address (CAIRN_BASE_URL) is an IP address';

export const PASSKEY_WRONG =
  'This passkey did not sign you in: it is not registered here (or was removed), or its answer did not check out';

export const PASSKEY_STALE = 'This passkey request has expired (5 minutes) or was used already: start again';

/** What the answer to a challenge says it answers: the challenge in its client data, or undefined for anything else. */
function answeredChallenge(response: unknown): string | undefined {
  const clientDataJSON = (response as { response?: { clientDataJSON?: unknown } } | null)?.response?.clientDataJSON;
  if (typeof clientDataJSON !== 'string' || clientDataJSON.length > 4096) return undefined;
  try {
    const challenge = (JSON.parse(Buffer.from(clientDataJSON, 'base64url').toString('utf8')) as { challenge?: unknown }).challenge;
    return typeof challenge === 'string' && challenge.length > 0 && challenge.length <= 256 ? challenge : undefined;
  } catch {
    return undefined;
  }
}

/** A credential's answer as the browser sends it: an object whose `id` is a base64url string. */
const isCredentialAnswer = (response: unknown): response is { id: string } =>
  typeof response === 'object' &&
  response !== null &&
  typeof (response as { id?: unknown }).id === 'string' &&
  /^[A-Za-z0-9_-]{1,1400}$/.test((response as { id: string }).id);

/** The WebAuthn user handle of an account: its id (opaque, no personal data, as the handle must be). */
const userHandle = (accountId: string) => new TextEncoder().encode(accountId);

/** A passkey as Settings lists it (no key material). */
export const passkeyView = (p: Passkey) => ({
  id: p.credentialId,
  name: p.name,
  transports: p.transports,
  createdAt: p.createdAt,
  lastUsedAt: p.lastUsedAt,
});

/** Why a passkey's name will not do (trimmed, 1 to 64 characters, no control characters), or undefined when it will. */
export function passkeyNameProblem(name: unknown): string | undefined {
  const max = PASSKEY_LIMITS.nameLength;
  if (typeof name !== 'string' || name.trim() === '' || [...name.trim()].length > max) return `name must be 1 to ${max} characters`;
  if (/\p{Cc}/u.test(name)) return 'name must not hold control characters (line breaks, tabs and the like)';
  return undefined;
}

/** Renames one of the session's account's passkeys; another account's, or none, is not found. */
export async function renamePasskey(
  services: AuthServices,
  session: Session,
  input: { id?: unknown; name?: unknown },
): Promise<{ kind: 'renamed'; passkey: Passkey } | { kind: 'not-found' } | PasskeyRefusal> {
  if (typeof input.id !== 'string' || input.id === '' || input.id.length > 1400)
    return { kind: 'invalid', message: 'id (the passkey to rename) is required', field: 'id' };
  const problem = passkeyNameProblem(input.name);
  if (problem) return { kind: 'invalid', message: problem, field: 'name' };
  const passkey = await services.passkeys.rename(session.accountId, input.id, (input.name as string).trim());
  return passkey ? { kind: 'renamed', passkey } : { kind: 'not-found' };
}

/** The options for registering a passkey to the session's account, its challenge kept for this session. */
export async function registrationOptions(
  services: AuthServices,
  session: Session,
): Promise<{ kind: 'options'; options: PublicKeyCredentialCreationOptionsJSON } | PasskeyRefusal> {
  const rp = relyingParty(services.config);
  if (!rp) return { kind: 'unavailable', message: PASSKEYS_UNAVAILABLE };
  const [account, email, existing] = await Promise.all([
    services.accounts.getAccount(session.accountId),
    services.people.emailOf(session.accountId),
    services.passkeys.list(session.accountId),
  ]);
  if (!account) return { kind: 'wrong', message: 'No such account' };
  if (existing.length >= PASSKEY_LIMITS.perAccount)
    return { kind: 'conflict', message: `An account has ${PASSKEY_LIMITS.perAccount} passkeys at most: remove one first` };
  const options = await (
    await webauthn()
  ).generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userID: userHandle(account.id),
    userName: email ?? account.name,
    userDisplayName: account.name,
    attestationType: 'none',
    // The same authenticator twice would be one passkey listed twice.
    excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: p.transports })),
    // Discoverable, so that it can sign in without an e-mail typed first.
    authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
    // EdDSA, ES256, RS256: named, rather than the library's default, which adds ML-DSA-44 where the runtime has it.
    supportedAlgorithmIDs: [-8, -7, -257],
    timeout: 60_000,
  });
  await services.passkeys.putChallenge({ purpose: 'register', challenge: options.challenge, accountId: account.id, sessionId: session.id });
  return { kind: 'options', options };
}

/** Verifies a registration answered to this session's challenge, and keeps the passkey. */
export async function registerPasskey(
  services: AuthServices,
  session: Session,
  input: { response?: unknown; name?: unknown },
): Promise<{ kind: 'registered'; passkey: Passkey } | PasskeyRefusal> {
  const rp = relyingParty(services.config);
  if (!rp) return { kind: 'unavailable', message: PASSKEYS_UNAVAILABLE };
  const name = input.name === undefined || input.name === null || input.name === '' ? 'Passkey' : input.name;
  const problem = passkeyNameProblem(name);
  if (problem || typeof name !== 'string') return { kind: 'invalid', message: problem ?? 'name must be a string', field: 'name' };
  const challenge = answeredChallenge(input.response);
  if (!challenge || !isCredentialAnswer(input.response))
    return { kind: 'invalid', message: "response must be the browser's answer to the registration options", field: 'response' };
  const taken = await services.passkeys.takeChallenge(challenge, ['register'], session.id);
  if (!taken) return { kind: 'invalid', message: PASSKEY_STALE, field: 'response' };
  // Loaded before the try: a library that cannot load is the service's fault, not the answer's.
  const library = await webauthn();
  let info;
  try {
    const verified = await library.verifyRegistrationResponse({
      response: input.response as RegistrationResponseJSON,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      requireUserVerification: false,
    });
    if (!verified.verified) throw new Error('not verified');
    info = verified.registrationInfo;
  } catch (err) {
    services.logger.info('a passkey registration did not check out', { accountId: session.accountId, problem: (err as Error).message });
    return { kind: 'invalid', message: "The passkey's answer did not check out: try again", field: 'response' };
  }
  try {
    const passkey = await services.passkeys.add({
      accountId: session.accountId,
      credentialId: info.credential.id,
      publicKey: Buffer.from(info.credential.publicKey).toString('base64url'),
      counter: info.credential.counter,
      transports: info.credential.transports ?? [],
      name: name.trim(),
    });
    return { kind: 'registered', passkey };
  } catch (err) {
    if (err instanceof PasskeyConflictError) return { kind: 'conflict', message: err.message };
    throw err;
  }
}

/** The options for signing in with a passkey alone (usernameless); the address must not be locked out. */
export async function signInOptions(
  services: AuthServices,
  client: ClientInfo,
): Promise<{ kind: 'options'; options: PublicKeyCredentialRequestOptionsJSON } | PasskeyRefusal> {
  const rp = relyingParty(services.config);
  if (!rp) return { kind: 'unavailable', message: PASSKEYS_UNAVAILABLE };
  const wait = await services.signInAttempts.retryAfter(addressKey(client));
  if (wait > 0) return locked(wait);
  const options = await (await webauthn()).generateAuthenticationOptions({ rpID: rp.id, userVerification: 'required', timeout: 60_000 });
  await services.passkeys.putChallenge({ purpose: 'sign-in', challenge: options.challenge });
  return { kind: 'options', options };
}

/** The second step of a sign-in whose password was right, for an account that asks for a passkey after it. */
export interface SecondFactorStep {
  kind: 'second-factor';
  message: string;
  options: PublicKeyCredentialRequestOptionsJSON;
  /** Whether the account has recovery codes left, which stand in for the passkey (recovery-codes.ts). */
  recoveryCodes: boolean;
}

export const SECOND_FACTOR_ASKED = 'The password is right; this account asks for one of its passkeys too';

/** Options for a second factor of the account: its own passkeys only, under a challenge bound to it. */
export async function secondFactorStep(services: AuthServices, accountId: string): Promise<SecondFactorStep | undefined> {
  const rp = relyingParty(services.config);
  const settings = await services.passkeys.settings(accountId);
  // Where no passkey can be used (the base URL became an IP address), the password alone signs in, as before they were offered.
  if (!rp || !settings.required) return undefined;
  const [passkeys, codes] = await Promise.all([services.passkeys.list(accountId), services.recoveryCodes.status(accountId)]);
  if (passkeys.length === 0) return undefined;
  const options = await (
    await webauthn()
  ).generateAuthenticationOptions({
    rpID: rp.id,
    allowCredentials: passkeys.map((p) => ({ id: p.credentialId, transports: p.transports })),
    userVerification: 'preferred',
    timeout: 60_000,
  });
  await services.passkeys.putChallenge({ purpose: 'second-factor', challenge: options.challenge, accountId });
  return { kind: 'second-factor', message: SECOND_FACTOR_ASKED, options, recoveryCodes: codes.remaining > 0 };
}

/**
 * Signs in with a passkey's answer: to a usernameless challenge (the
 * passkey's account), or to a second factor's (only a passkey of the
 * account whose password was right). The same session as a password's.
 */
export async function passkeySignIn(
  services: AuthServices,
  input: { response?: unknown },
  client: ClientInfo,
): Promise<SignedIn | PasskeyRefusal> {
  const rp = relyingParty(services.config);
  if (!rp) return { kind: 'unavailable', message: PASSKEYS_UNAVAILABLE };
  const addressKeys = addressKey(client);
  const wait = await services.signInAttempts.retryAfter(addressKeys);
  if (wait > 0) return locked(wait);
  const challenge = answeredChallenge(input.response);
  if (!challenge || !isCredentialAnswer(input.response)) {
    await services.signInAttempts.fail(addressKeys);
    return { kind: 'invalid', message: "response must be the browser's answer to the sign-in options", field: 'response' };
  }
  const response = input.response as AuthenticationResponseJSON;
  const taken = await services.passkeys.takeChallenge(challenge, ['sign-in', 'second-factor'] satisfies ChallengePurpose[]);
  if (!taken) {
    await services.signInAttempts.fail(addressKeys);
    return { kind: 'wrong', message: PASSKEY_STALE };
  }
  // A second factor's account is known from its password: its e-mail is counted too, and checked.
  const email = taken.accountId ? await services.people.emailOf(taken.accountId) : undefined;
  const keys: AttemptKey[] = [...(email ? [{ scope: 'email' as const, value: email }] : []), ...addressKeys];
  if (email) {
    const emailWait = await services.signInAttempts.retryAfter(keys);
    if (emailWait > 0) return locked(emailWait);
  }
  const passkey = await services.passkeys.get(response.id);
  const refused = async (problem: string): Promise<PasskeyRefusal> => {
    services.logger.info('a passkey sign-in was refused', { purpose: taken.purpose, problem });
    await services.signInAttempts.fail(keys);
    return { kind: 'wrong', message: PASSKEY_WRONG };
  };
  if (!passkey) return refused('no such passkey');
  if (taken.accountId && passkey.accountId !== taken.accountId) return refused("another account's passkey");
  // The user handle, where the authenticator gives one, is the account the passkey was made for.
  if (response.response.userHandle && response.response.userHandle !== Buffer.from(userHandle(passkey.accountId)).toString('base64url'))
    return refused("the user handle is not the passkey's account");
  const library = await webauthn();
  let newCounter: number;
  try {
    const verified = await library.verifyAuthenticationResponse({
      response,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: {
        id: passkey.credentialId,
        publicKey: Buffer.from(passkey.publicKey, 'base64url'),
        counter: passkey.counter,
        transports: passkey.transports as AuthenticatorTransport[],
      },
      requireUserVerification: taken.purpose === 'sign-in',
    });
    if (!verified.verified) return refused('not verified');
    newCounter = verified.authenticationInfo.newCounter;
  } catch (err) {
    return refused((err as Error).message);
  }
  if (!(await services.passkeys.recordUse(passkey, newCounter))) return refused('used at once elsewhere, or removed');
  const account = await services.accounts.getAccount(passkey.accountId);
  if (!account) return refused('no such account');
  const signedInEmail = email ?? (await services.people.emailOf(account.id));
  if (email) await services.signInAttempts.clear(keys[0]!);
  const { session, secret } = await services.sessions.create(account.id, client);
  return { kind: 'signed-in', account, email: signedInEmail ?? '', session, secret };
}
