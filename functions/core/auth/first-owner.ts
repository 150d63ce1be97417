/**
 * The first owner: the person who runs a new service. Its first start
 * makes the default account with keys (for automation) and a one-time
 * welcome link (7 days) with which a person gives that account an e-mail
 * and a password, and so becomes its owner in the web app. The link's
 * item is made in the account's own transaction (core/bootstrap.ts), so a
 * new account never lacks one nobody was told of.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { isPlausibleEmail, normaliseEmail, personItems } from '../data/people.js';
import type { Services } from '../services.js';
import { hashPassword } from './passwords.js';
import { passwordProblem, type AuthRefusal, type ClientInfo, type SignedIn } from './sign-in.js';

export { welcomeLink } from '../data/account-links.js';

const LINK_GONE = 'This welcome link is not valid, used, or expired (it lasts 7 days)';

export async function claimFirstOwner(
  services: Pick<Services, 'accountLinks' | 'accounts' | 'db' | 'people' | 'sessions'>,
  input: { token?: unknown; email?: unknown; password?: unknown },
  client: ClientInfo,
): Promise<SignedIn | AuthRefusal | { kind: 'gone'; message: string }> {
  if (typeof input.email !== 'string' || !isPlausibleEmail(normaliseEmail(input.email)))
    return { kind: 'invalid', message: 'email must be an e-mail address', field: 'email' };
  const problem = passwordProblem(input.password);
  if (problem) return { kind: 'invalid', message: problem, field: 'password' };
  const link = await services.accountLinks.open('WELCOME', input.token);
  const account = link ? await services.accounts.getAccount(link.accountId) : undefined;
  if (!link || !account) return { kind: 'gone', message: LINK_GONE };
  const email = normaliseEmail(input.email);
  const passwordHash = await hashPassword(input.password as string);
  const createdAt = new Date().toISOString();
  const items = personItems({ accountId: account.id, email, passwordHash, createdAt });
  try {
    await services.db.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          services.accountLinks.use('WELCOME', input.token as string),
          ...items.map((Item) => ({
            Put: { TableName: services.db.tables.accounts, Item, ConditionExpression: 'attribute_not_exists(pk)' },
          })),
        ],
      }),
    );
  } catch (err) {
    if (!(err instanceof TransactionCanceledException)) throw err;
    const reasons = err.CancellationReasons ?? [];
    if (reasons[0]?.Code === 'ConditionalCheckFailed') return { kind: 'gone', message: LINK_GONE };
    if (reasons[1]?.Code === 'ConditionalCheckFailed')
      return { kind: 'invalid', message: 'An account with this e-mail address exists already: choose another', field: 'email' };
    if (reasons[2]?.Code === 'ConditionalCheckFailed') return { kind: 'gone', message: 'The first account has an owner already: sign in' };
    return { kind: 'gone', message: LINK_GONE };
  }
  const { session, secret } = await services.sessions.create(account.id, client);
  return { kind: 'signed-in', account, email, session, secret };
}
