/**
 * The first account of a deployment in AWS, made by the stack's custom
 * resource (handler.ts): the account, its team (with the account as owner),
 * its default bucket, a storage key pair and a GraphQL API key, made by the
 * same AccountStore.createAccount the local server's bootstrap uses, in one
 * transaction; and the credentials, stored in the stack's secret.
 *
 * The order makes every failure safe to retry:
 *   1. the secret is read: if it already holds credentials, an earlier run
 *      stopped after writing them, and the account is made with those very
 *      credentials (or is found made);
 *   2. otherwise new credentials are written into the secret first, then
 *      the account is made. The account's transaction is all or nothing, so
 *      a failure leaves either nothing or a secret whose credentials the
 *      next run makes the account with: never an account whose API key
 *      nobody was told (it is stored only as a hash).
 * With the credentials goes the first owner's one-time welcome link (the
 * web app's `/#/welcome/<token>`, as `npm start` prints it): its token is
 * drawn with them and written into the secret first, and its item (only
 * the token's digest) is made in the account's transaction, so a retry
 * makes the same link and an account never has one nobody was told.
 * An account of that name made otherwise (by `npm run admin` or `npm start`
 * against these tables) is left alone and the secret is not written; a
 * secret holding a value Cairn did not write is never overwritten.
 */
import { isValidAccountName, withNewCredentials } from '../core/bootstrap.js';
import type { AccountStore } from '../core/data/accounts.js';
import { isAccountLinkToken, newAccountLinkToken, welcomeLink, type AccountLinkStore } from '../core/data/account-links.js';
import type { Logger } from '../core/logger.js';
import type { FirstAccountSecret, SecretContent } from './secret-value.js';

/** Where the first account's credentials are kept (functions/aws/secrets-manager.ts: the stack's secret). */
export interface FirstAccountSecretStore {
  /** Which secret: its ARN, for logs and answers (never its value). */
  readonly id: string;
  read(): Promise<SecretContent>;
  /**
   * Makes `value` the secret's current value. The version's token is derived
   * from the secret, so the same call again is a no-op and a different value
   * is refused by Secrets Manager itself: written once, never overwritten.
   */
  write(value: FirstAccountSecret): Promise<void>;
}

export interface FirstAccountRequest {
  accountName: string;
  region: string;
  /** The endpoints the stack knows, stored beside the credentials. */
  endpoints: Pick<FirstAccountSecret, 'storageEndpoint' | 'graphqlUrl' | 'gatewayUrl'>;
}

export interface FirstAccountOutcome {
  /** `created`: made just now. `exists`: there already (this run changed nothing). */
  outcome: 'created' | 'exists';
  accountName: string;
  defaultBucket: string;
  /** Whether the secret holds this account's credentials. */
  secretHoldsCredentials: boolean;
}

export async function ensureFirstAccount(
  accounts: AccountStore,
  secret: FirstAccountSecretStore,
  request: FirstAccountRequest,
  logger: Logger,
  now: () => Date = () => new Date(),
  links?: AccountLinkStore,
): Promise<FirstAccountOutcome> {
  /** The welcome link's item for the account being made, from the token in its link (none without a link or a store). */
  const welcomeItems = (welcomeUrl: string | undefined) => {
    const token = welcomeUrl?.slice(welcomeUrl.lastIndexOf('/') + 1);
    return ({ accountId }: { accountId: string }) =>
      links && token && isAccountLinkToken(token) ? [links.item('WELCOME', token, { accountId })] : [];
  };
  if (!isValidAccountName(request.accountName)) {
    throw new Error(`the first account's name "${request.accountName}" must be 3-42 lowercase letters, digits or hyphens`);
  }
  const content = await secret.read();

  if (content.kind === 'credentials') {
    const stored = content.value;
    const account = await accounts.getAccountByName(stored.accountName);
    if (account) {
      logger.info('the first account exists and its credentials are in the secret; nothing to do', {
        accountName: account.name,
        secret: secret.id,
      });
      return { outcome: 'exists', accountName: account.name, defaultBucket: account.defaultBucket, secretHoldsCredentials: true };
    }
    // An earlier run wrote the secret and stopped before the account was made.
    await accounts.createAccount({
      name: stored.accountName,
      accessKeyId: stored.accessKeyId,
      secretAccessKey: stored.secretAccessKey,
      apiToken: stored.apiKey,
      bucketName: stored.defaultBucket,
      alsoPut: welcomeItems(stored.welcomeUrl),
    });
    logger.info('the first account was made with the credentials already in the secret', {
      accountName: stored.accountName,
      secret: secret.id,
    });
    return { outcome: 'created', accountName: stored.accountName, defaultBucket: stored.defaultBucket, secretHoldsCredentials: true };
  }

  const existing = await accounts.getAccountByName(request.accountName);
  if (existing) {
    logger.warn(
      "an account of the first account's name exists already (made by npm run admin, npm start or an earlier stack's secret); it is left alone and the secret is not written",
      {
        accountName: existing.name,
        secret: secret.id,
      },
    );
    return { outcome: 'exists', accountName: existing.name, defaultBucket: existing.defaultBucket, secretHoldsCredentials: false };
  }
  if (content.kind === 'foreign') {
    throw new Error(
      `the secret ${secret.id} holds a value Cairn did not write; it is never overwritten: put back its placeholder, or create accounts with npm run admin`,
    );
  }

  const credentials = withNewCredentials(request.accountName);
  const defaultBucket = `${request.accountName}-bucket`;
  // The web app answers at the API's base, where /graphql is.
  const appBase = request.endpoints.graphqlUrl?.replace(/\/graphql\/?$/, '');
  const welcomeUrl = links && appBase ? welcomeLink(appBase, newAccountLinkToken()) : undefined;
  await secret.write({
    cairn: 'first-account',
    accountName: credentials.name,
    accessKeyId: credentials.accessKeyId,
    secretAccessKey: credentials.secretAccessKey,
    apiKey: credentials.apiToken,
    defaultBucket,
    region: request.region,
    ...definedOnly(request.endpoints),
    ...(welcomeUrl ? { welcomeUrl } : {}),
    createdAt: now().toISOString(),
  });
  await accounts.createAccount({ ...credentials, bucketName: defaultBucket, alsoPut: welcomeItems(welcomeUrl) });
  logger.info('the first account was made; its credentials are in the secret', {
    accountName: credentials.name,
    defaultBucket,
    secret: secret.id,
  });
  return { outcome: 'created', accountName: credentials.name, defaultBucket, secretHoldsCredentials: true };
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => typeof v === 'string' && v !== '')) as Partial<T>;
}
