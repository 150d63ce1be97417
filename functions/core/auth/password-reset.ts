/**
 * Setting a new password: by a one-time link sent by e-mail (reset), or
 * signed in, with the current one (change). The HTTP side is
 * functions/graphql/account-links-http.ts.
 *
 * - Asking for a reset link answers the same whether or not an account has
 *   the e-mail: the link goes to the address only, never in the answer.
 *   Asking is limited per e-mail (RESET_RATES.email: past it, no more mail
 *   goes to that address in the window, and the answer is still the same,
 *   so no one can flood a person's mailbox or tell the limit from a miss)
 *   and per client address (past it, 429).
 * - A link works once, for an hour, and only while the password is the
 *   one it was asked under. Using it sets the password and the link's use
 *   in one transaction, then signs out every session of the account.
 * - A change wants the current password (failures count against the
 *   e-mail's sign-in limit: a session left open is not a way to guess it),
 *   and signs out every other session of the account.
 * - Where the service sends no mail, asking for a link is refused the same
 *   way for every e-mail (503), so the person knows to ask the operator.
 */
import { createHash } from 'node:crypto';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { isPlausibleEmail, normaliseEmail } from '../data/people.js';
import type { AttemptKey } from '../data/sign-in-attempts.js';
import type { Services } from '../services.js';
import { hashPassword, PASSWORD_MAX_LENGTH, verifyPassword } from './passwords.js';
import { addressKey, passwordProblem, type ClientInfo } from './sign-in.js';

export type ResetServices = Pick<
  Services,
  'accountLinks' | 'config' | 'db' | 'logger' | 'mailer' | 'people' | 'rateLimits' | 'sessions' | 'signInAttempts'
>;

export const RESET_RATES = {
  /** Links asked for one e-mail in an hour (known or not, counted by its hash). */
  email: { action: 'reset-email', count: 3, windowSeconds: 3600, hashKey: true },
  /** Links asked from one client address in an hour. */
  address: { action: 'reset-address', count: 20, windowSeconds: 3600 },
};

export const RESET_ASKED =
  'If an account has this e-mail address, a link to set a new password is on its way to it. The link works once, for an hour.';

const passwordDigest = (hash: string) => createHash('sha256').update(hash).digest('hex');

/** Where a reset link leads: the web app's page (a fragment, so the token reaches no server's log). */
export const resetLink = (services: Pick<Services, 'config'>, token: string): string =>
  `${services.config.urls.baseUrl}/#/reset-password/${token}`;

export type ResetRequestOutcome =
  | { kind: 'asked' }
  | { kind: 'no-mail'; message: string }
  | { kind: 'invalid'; message: string; field: string }
  | { kind: 'locked'; message: string; retryAfter: number };

export async function requestPasswordReset(
  services: ResetServices,
  input: { email?: unknown },
  client: ClientInfo,
): Promise<ResetRequestOutcome> {
  if (!services.mailer.configured)
    return { kind: 'no-mail', message: 'This service sends no e-mail: ask its operator to set a new password for you' };
  if (typeof input.email !== 'string' || !isPlausibleEmail(normaliseEmail(input.email)))
    return { kind: 'invalid', message: 'email must be an e-mail address', field: 'email' };
  const email = normaliseEmail(input.email);
  if (client.address) {
    const wait = await services.rateLimits.take(RESET_RATES.address, client.address);
    if (wait > 0)
      return { kind: 'locked', message: `Too many reset links asked for: try again in ${Math.ceil(wait / 60)} minutes`, retryAfter: wait };
  }
  if ((await services.rateLimits.take(RESET_RATES.email, email)) > 0) return { kind: 'asked' };
  const identity = await services.people.byEmail(email);
  if (!identity) return { kind: 'asked' };
  const token = await services.accountLinks.create('RESET', {
    accountId: identity.accountId,
    email: identity.email,
    passwordDigest: passwordDigest(identity.passwordHash),
  });
  const sending = services.mailer.send({
    to: identity.email,
    subject: 'Set a new password for Cairn',
    text: [
      'Someone (we hope you) asked to set a new password for the Cairn account of this e-mail address.',
      '',
      'To set one, open this link within the hour (it works once):',
      '',
      resetLink(services, token),
      '',
      'Setting it signs your account out everywhere. If you did not ask, ignore this message: your password stays as it is.',
    ].join('\n'),
  });
  // On this machine the answer does not wait for the mail server, so how long it takes says nothing of whether the e-mail
  // has an account; a Lambda function is frozen once it answers, so there the send is awaited (docs/accounts.md).
  if (services.config.runtime === 'aws') await sending;
  else void sending;
  return { kind: 'asked' };
}

export type NewPasswordOutcome =
  | { kind: 'done'; accountId: string; email: string; ended: number }
  | { kind: 'invalid'; message: string; field: string }
  | { kind: 'gone'; message: string };

const LINK_GONE = 'This link to set a new password is not valid, used, or expired (a link lasts an hour): ask for a new one';

export async function resetPassword(services: ResetServices, input: { token?: unknown; password?: unknown }): Promise<NewPasswordOutcome> {
  const problem = passwordProblem(input.password);
  if (problem) return { kind: 'invalid', message: problem, field: 'password' };
  const link = await services.accountLinks.open('RESET', input.token);
  if (!link?.email) return { kind: 'gone', message: LINK_GONE };
  const identity = await services.people.byEmail(link.email);
  // The password changed since the link was asked for (another link, or a change): this one is over.
  if (!identity || identity.accountId !== link.accountId || passwordDigest(identity.passwordHash) !== link.passwordDigest)
    return { kind: 'gone', message: LINK_GONE };
  const passwordHash = await hashPassword(input.password as string);
  try {
    await services.db.doc.send(
      new TransactWriteCommand({
        TransactItems: [services.accountLinks.use('RESET', input.token as string), services.people.hashChange(identity, passwordHash)],
      }),
    );
  } catch (err) {
    if (err instanceof TransactionCanceledException) return { kind: 'gone', message: LINK_GONE };
    throw err;
  }
  const ended = await services.sessions.endAll(identity.accountId);
  // Whoever was locked out guessing is not the person who now holds the new password.
  await services.signInAttempts.clear({ scope: 'email', value: identity.email });
  return { kind: 'done', accountId: identity.accountId, email: identity.email, ended };
}

export type ChangeOutcome =
  | { kind: 'done'; ended: number }
  | { kind: 'invalid'; message: string; field: string }
  | { kind: 'locked'; message: string; retryAfter: number };

export async function changePassword(
  services: ResetServices,
  session: { accountId: string; id: string },
  input: { currentPassword?: unknown; newPassword?: unknown },
  client: ClientInfo,
): Promise<ChangeOutcome> {
  const email = await services.people.emailOf(session.accountId);
  const identity = email ? await services.people.byEmail(email) : undefined;
  if (!identity) return { kind: 'invalid', message: 'This account has no password to change', field: 'currentPassword' };
  const keys: AttemptKey[] = [{ scope: 'email', value: identity.email }, ...addressKey(client)];
  const wait = await services.signInAttempts.retryAfter(keys);
  if (wait > 0)
    return { kind: 'locked', message: `Too many wrong passwords: try again in ${Math.ceil(wait / 60)} minutes`, retryAfter: wait };
  const current = input.currentPassword;
  if (typeof current !== 'string' || current.length > PASSWORD_MAX_LENGTH || !(await verifyPassword(current, identity.passwordHash))) {
    await services.signInAttempts.fail(keys);
    return { kind: 'invalid', message: 'The current password is not right', field: 'currentPassword' };
  }
  const problem = passwordProblem(input.newPassword);
  if (problem) return { kind: 'invalid', message: problem.replace(/^password/, 'newPassword'), field: 'newPassword' };
  const changed = await services.people.replaceHash(identity, await hashPassword(input.newPassword as string));
  if (!changed) return { kind: 'invalid', message: 'The password changed meanwhile: try again', field: 'currentPassword' };
  return { kind: 'done', ended: await services.sessions.endAll(session.accountId, session.id) };
}
