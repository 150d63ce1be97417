/**
 * Signing up, in and out with an e-mail and a password: the rules, called
 * with plain values (functions/graphql/accounts-http.ts is the HTTP side).
 *
 * - Sign-up is allowed where the operator opened it (CAIRN_SIGNUP=open),
 *   or (CAIRN_SIGNUP=invite) with a valid invitation for the e-mail signed
 *   up with, which the new account joins in the same transaction; it makes an account with its team and bucket, as the operator's
 *   create-account does, but without keys (the person makes those when
 *   they want them), and the person's identity, in one transaction.
 * - Sign-in answers the same for an unknown e-mail and a wrong password,
 *   after the same work: an unknown e-mail is checked against a dummy hash.
 * - Failures are counted per e-mail and per client address
 *   (data/sign-in-attempts.ts); at the limit, sign-in is refused for the
 *   rest of the window without looking at the password.
 * - An account that asks for a passkey after the password gets, for the
 *   right password, no session but a second step (passkeys.ts): the
 *   options for one of its passkeys, under a challenge that lasts five
 *   minutes and is the only way to finish this sign-in.
 */
import { isValidAccountName } from '../bootstrap.js';
import type { Account } from '../data/accounts.js';
import { AccountConflictError } from '../data/accounts.js';
import { ConflictError } from '../data/errors.js';
import { isPlausibleEmail, normaliseEmail, personItems } from '../data/people.js';
import type { AttemptKey } from '../data/sign-in-attempts.js';
import { INVITATION_PROBLEMS, joinWrites } from './invitations.js';
import { secondFactorStep, type SecondFactorStep } from './passkeys.js';
import { addressKey, locked, type AuthRefusal, type AuthServices, type ClientInfo, type SignedIn } from './sign-in-results.js';
import { dummyPasswordHash, hashPassword, needsRehash, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, verifyPassword } from './passwords.js';

export { addressKey, locked, type AuthRefusal, type AuthServices, type ClientInfo, type SignedIn } from './sign-in-results.js';

export const WRONG_CREDENTIALS = 'The e-mail address or the password is not right';

export function passwordProblem(password: unknown): string | undefined {
  if (typeof password !== 'string') return 'password is required';
  if (password.length < PASSWORD_MIN_LENGTH) return `password must be at least ${PASSWORD_MIN_LENGTH} characters`;
  if (password.length > PASSWORD_MAX_LENGTH) return `password must be at most ${PASSWORD_MAX_LENGTH} characters`;
  return undefined;
}

export async function signUp(
  services: AuthServices,
  input: { email?: unknown; password?: unknown; name?: unknown; invitation?: unknown },
  client: ClientInfo,
): Promise<SignedIn | AuthRefusal> {
  const policy = services.config.signup;
  const invited = typeof input.invitation === 'string' && input.invitation !== '';
  if (policy === 'closed') return { kind: 'closed', message: 'Sign-up is closed on this service: ask its operator for an account' };
  if (policy === 'invite' && !invited)
    return { kind: 'closed', message: 'Sign-up is by invitation on this service: ask an owner of a team to invite you' };
  if (typeof input.email !== 'string' || !isPlausibleEmail(normaliseEmail(input.email)))
    return { kind: 'invalid', message: 'email must be an e-mail address', field: 'email' };
  const problem = passwordProblem(input.password);
  if (problem) return { kind: 'invalid', message: problem, field: 'password' };
  if (typeof input.name !== 'string' || !isValidAccountName(input.name))
    return { kind: 'invalid', message: 'name (the account name) must be 3 to 42 lower-case letters, digits or hyphens', field: 'name' };
  // Counted like sign-in failures per address: trying e-mails here must not be a way round the limit there.
  const wait = await services.signInAttempts.retryAfter(addressKey(client));
  if (wait > 0) return locked(wait);
  const email = normaliseEmail(input.email);
  // With an invitation, the account joins its team in the transaction that makes it (and uses the link up).
  const opened = invited ? await services.invitations.open(input.invitation as string) : undefined;
  if (opened && 'refused' in opened) return { kind: 'invalid', message: INVITATION_PROBLEMS[opened.refused].message, field: 'invitation' };
  if (opened && opened.invitation.email !== email)
    return {
      kind: 'invalid',
      message: 'The invitation is for another e-mail address: sign up with the one it was sent to',
      field: 'email',
    };
  const password = input.password as string;
  const passwordHash = await hashPassword(password);
  const name = input.name;
  let account: Account;
  try {
    account = (
      await services.accounts.createAccount({
        name,
        alsoPut: ({ accountId, createdAt }) => personItems({ accountId, email, passwordHash, createdAt }),
        alsoWrite: opened ? ({ accountId, createdAt }) => joinWrites(services, opened, { id: accountId, name }, createdAt) : undefined,
      })
    ).account;
  } catch (err) {
    if (!(err instanceof ConflictError)) throw err;
    if (opened && err instanceof AccountConflictError && err.what === 'also') {
      // The invitation was used, revoked or replaced meanwhile (or its team is gone): nothing was made.
      const again = await services.invitations.open(input.invitation as string);
      const problem = 'refused' in again ? again.refused : 'team-gone';
      return { kind: 'invalid', message: INVITATION_PROBLEMS[problem].message, field: 'invitation' };
    }
    await services.signInAttempts.fail(addressKey(client));
    // Not the e-mail: the name, or the bucket named after it (`<name>-bucket`), is someone else's.
    if (!(err instanceof AccountConflictError) || err.what === 'name')
      return { kind: 'invalid', message: `the account name "${input.name}" is taken: choose another`, field: 'name' };
    return { kind: 'invalid', message: 'an account with this e-mail address exists already: sign in instead', field: 'email' };
  }
  const { session, secret } = await services.sessions.create(account.id, client);
  return { kind: 'signed-in', account, email, session, secret };
}

export async function signIn(
  services: AuthServices,
  input: { email?: unknown; password?: unknown },
  client: ClientInfo,
): Promise<SignedIn | SecondFactorStep | AuthRefusal> {
  if (typeof input.email !== 'string' || typeof input.password !== 'string' || input.password.length > PASSWORD_MAX_LENGTH)
    return { kind: 'wrong', message: WRONG_CREDENTIALS };
  const email = normaliseEmail(input.email);
  const keys: AttemptKey[] = [{ scope: 'email', value: email }, ...addressKey(client)];
  const wait = await services.signInAttempts.retryAfter(keys);
  if (wait > 0) return locked(wait);
  const identity = await services.people.byEmail(email);
  // The same scrypt work whether or not the e-mail has an account.
  const matches = await verifyPassword(input.password, identity?.passwordHash ?? (await dummyPasswordHash()));
  const account = identity && matches ? await services.accounts.getAccount(identity.accountId) : undefined;
  if (!identity || !account) {
    await services.signInAttempts.fail(keys);
    return { kind: 'wrong', message: WRONG_CREDENTIALS };
  }
  if (needsRehash(identity.passwordHash)) {
    // Made under weaker parameters than today's: replaced now that the password is at hand.
    await services.people.replaceHash(identity, await hashPassword(input.password));
  }
  // An account that asks for a passkey too gets no session yet, and keeps its failures counted: the passkey's
  // failures count against the same e-mail, and a right password must not wipe them (passkeys.ts).
  const step = await secondFactorStep(services, account.id);
  if (step) return step;
  await services.signInAttempts.clear(keys[0]!);
  const { session, secret } = await services.sessions.create(account.id, client);
  return { kind: 'signed-in', account, email, session, secret };
}
