/**
 * `npm run admin -- <command>`: operator commands against Cairn's tables.
 *
 *   create-account <name> [--json]   a new account, its team (it owns it), its default bucket
 *                                    `<name>-bucket`, a storage key pair and a GraphQL API key;
 *                                    the credentials are printed once
 *   list-accounts [--json]           every account (never a secret)
 *   welcome-link <name> [--base-url <url>] [--json]
 *                                    a new one-time link (7 days) with which a person gives an
 *                                    account without one an e-mail and a password, and becomes
 *                                    its owner in the web app (the first start's link, again)
 *   lift-second-factor <email> [--json]
 *                                    stops asking the person for a passkey after the password
 *                                    (their passkeys and recovery codes stay) and signs them out
 *                                    everywhere: the way back for someone who lost both
 *
 * Which tables: those the environment names with the functions' own
 * variables: in AWS, DynamoDB in AWS_REGION with CAIRN_ACCOUNTS_TABLE set to
 * the stack's AccountsTableName output and CAIRN_KMS_KEY_ID to its key
 * (storage secrets are sealed with it, as the functions seal them), with
 * the AWS credentials of the shell; DYNAMODB_ENDPOINT names another
 * DynamoDB. With `--local`, the data directory of a stopped local service
 * (CAIRN_DATA_DIR, opened as `npm run fsck` opens it).
 *
 * Exit status 0 on success, 1 on any failure (one line on stderr).
 *
 * bin/admin.ts runs it on the process's own arguments, environment and
 * streams; a caller may run it in its own process with its own (the tests).
 */
import type { Writable } from 'node:stream';
import { Command, CommanderError } from 'commander';
import { ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import { ConfigError, loadConfig, type Config } from '../core/config.js';
import { createLogger } from '../core/logger.js';
import { createDatabase } from '../core/data/dynamo.js';
import { AccountStore, type Account } from '../core/data/accounts.js';
import { StorageKeyStore } from '../core/data/storage-keys.js';
import { ConflictError } from '../core/data/errors.js';
import type { SecretSealer } from '../core/auth/secrets.js';
import { createSealer } from '../aws/kms-sealer.js';
import { isValidAccountName, withNewCredentials } from '../core/bootstrap.js';
import { ACCOUNT_LINK_SECONDS, AccountLinkStore, welcomeLink } from '../core/data/account-links.js';
import { normaliseEmail, PersonStore } from '../core/data/people.js';
import { PasskeyStore } from '../core/data/passkeys.js';
import { SessionStore } from '../core/data/sessions.js';

type Env = Record<string, string | undefined>;

/** Where a run reads its settings and writes: the process's own in bin/admin.ts. */
export interface AdminIo {
  env: Env;
  stdout: Pick<Writable, 'write'>;
  stderr: Pick<Writable, 'write'>;
}

/** A failure to report as one line. */
class AdminError extends Error {}

interface Tables {
  accounts: AccountStore;
  accountLinks: AccountLinkStore;
  people: PersonStore;
  passkeys: PasskeyStore;
  sessions: SessionStore;
  close(): Promise<void>;
}

/** Listing never opens a secret; a store that is asked to is a bug. */
const noSealing: SecretSealer = {
  seal: async () => {
    throw new Error('this command seals no secrets');
  },
  open: async () => {
    throw new Error('this command opens no secrets');
  },
};

async function openTables(config: Config, env: Env, options: { local: boolean; sealing: boolean }): Promise<Tables> {
  if (options.local) {
    // The local service's modules (the IPFS node among them) only when asked for.
    const { openLocalStorage } = await import('../local/service.js');
    const storage = await openLocalStorage(config, createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel));
    const { accounts, accountLinks, people, passkeys, sessions } = storage.services;
    return { accounts, accountLinks, people, passkeys, sessions, close: () => storage.close() };
  }
  const inAws = !config.dynamodb.endpoint;
  if (inAws && !env.CAIRN_ACCOUNTS_TABLE) {
    throw new AdminError(
      "CAIRN_ACCOUNTS_TABLE is not set: set it to the stack's AccountsTableName output (or use --local for this machine's data directory)",
    );
  }
  let sealer = noSealing;
  if (options.sealing) {
    // The functions must be able to open what is sealed here: never a key generated on this machine.
    if (inAws && !config.kmsKeyId) {
      throw new AdminError(
        "CAIRN_KMS_KEY_ID is not set: set it to the stack's SecretsKeyId output (storage secrets are sealed with the stack's KMS key)",
      );
    }
    if (!config.kmsKeyId && !config.secretKey) {
      throw new AdminError('set CAIRN_KMS_KEY_ID or CAIRN_SECRET_KEY to the key the service seals storage secrets with');
    }
    sealer = await createSealer(config);
  }
  const db = createDatabase(config);
  return {
    accounts: new AccountStore(db, new StorageKeyStore(db, sealer)),
    accountLinks: new AccountLinkStore(db),
    people: new PersonStore(db),
    passkeys: new PasskeyStore(db),
    sessions: new SessionStore(db),
    close: async () => db.client.destroy(),
  };
}

async function withTables<T>(
  io: AdminIo,
  config: Config,
  options: { local: boolean; sealing: boolean },
  run: (tables: Tables) => Promise<T>,
): Promise<T> {
  const tables = await openTables(config, io.env, options);
  try {
    return await run(tables);
  } catch (err) {
    if (err instanceof ResourceNotFoundException) {
      throw new AdminError(
        `table ${config.tables.accounts} not found in ${config.dynamodb.endpoint ?? `DynamoDB in ${config.region}`}: check CAIRN_ACCOUNTS_TABLE and AWS_REGION`,
      );
    }
    throw err;
  } finally {
    await tables.close();
  }
}

async function createAccount(io: AdminIo, name: string, options: { json?: boolean; local?: boolean }): Promise<void> {
  if (!isValidAccountName(name)) throw new AdminError(`"${name}": an account name is 3-42 lowercase letters, digits or hyphens`);
  const config = loadConfig(io.env);
  const credentials = withNewCredentials(name);
  const { account, team } = await withTables(io, config, { local: options.local === true, sealing: true }, async ({ accounts }) => {
    if (await accounts.getAccountByName(name)) throw new AdminError(`account "${name}" exists already`);
    try {
      return await accounts.createAccount(credentials);
    } catch (err) {
      if (err instanceof ConflictError) throw new AdminError(err.message);
      throw err;
    }
  });
  const out = io.stdout;
  if (options.json) {
    out.write(
      JSON.stringify({
        accountName: account.name,
        accountId: account.id,
        teamId: team.id,
        defaultBucket: account.defaultBucket,
        accessKeyId: credentials.accessKeyId,
        secretAccessKey: credentials.secretAccessKey,
        apiKey: credentials.apiToken,
      }) + '\n',
    );
    return;
  }
  out.write(
    [
      `Account "${account.name}" created. These secrets are shown once; keep them:`,
      `  access key id      ${credentials.accessKeyId}`,
      `  secret access key  ${credentials.secretAccessKey}`,
      `  API key (GraphQL)  ${credentials.apiToken}`,
      `  default bucket     ${account.defaultBucket}`,
      `  team id            ${team.id}`,
    ].join('\n') + '\n',
  );
}

async function listAccounts(io: AdminIo, options: { json?: boolean; local?: boolean }): Promise<void> {
  const config = loadConfig(io.env);
  const list = await withTables(io, config, { local: options.local === true, sealing: false }, ({ accounts }) => accounts.list());
  const out = io.stdout;
  if (options.json) {
    out.write(JSON.stringify(list) + '\n');
    return;
  }
  if (list.length === 0) {
    out.write('No accounts.\n');
    return;
  }
  const rows: string[][] = [
    ['NAME', 'DEFAULT BUCKET', 'CREATED', 'ACCOUNT ID', 'TEAM ID'],
    ...list.map((a: Account) => [a.name, a.defaultBucket, a.createdAt, a.id, a.defaultTeamId]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const row of rows) out.write(row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ') + '\n');
}

async function newWelcomeLink(io: AdminIo, name: string, options: { json?: boolean; local?: boolean; baseUrl?: string }): Promise<void> {
  const config = loadConfig(io.env);
  // Locally the service's own address; in AWS the stack's API address, which these tables do not know.
  const base = options.baseUrl ?? (options.local || io.env.CAIRN_BASE_URL ? config.urls.baseUrl : undefined);
  if (!base) throw new AdminError("give --base-url: the web app's address (the stack's ApiUrl output in AWS)");
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new AdminError(`--base-url "${base}" is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new AdminError(`--base-url "${base}" is not an http(s) address`);
  const baseUrl = `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  const token = await withTables(
    io,
    config,
    { local: options.local === true, sealing: false },
    async ({ accounts, accountLinks, people }) => {
      const account = await accounts.getAccountByName(name);
      if (!account) throw new AdminError(`no account "${name}"`);
      // A link for an account that has a person would never work (claiming it is refused): that person resets the password instead.
      const email = await people.emailOf(account.id);
      if (email)
        throw new AdminError(`account "${name}" has an owner already (${email}): they can reset their password from the sign-in page`);
      return accountLinks.create('WELCOME', { accountId: account.id });
    },
  );
  const link = welcomeLink(baseUrl, token);
  const expiresAt = new Date(Date.now() + ACCOUNT_LINK_SECONDS.WELCOME * 1000).toISOString();
  if (options.json) {
    io.stdout.write(JSON.stringify({ accountName: name, url: link, expiresAt }) + '\n');
    return;
  }
  io.stdout.write(
    [
      `A welcome link for account "${name}": open it to give the account an e-mail and a password`,
      `(it works once, until ${expiresAt.slice(0, 16).replace('T', ' ')} UTC; earlier links still work until used or expired):`,
      `  ${link}`,
    ].join('\n') + '\n',
  );
}

async function liftSecondFactor(io: AdminIo, email: string, options: { json?: boolean; local?: boolean }): Promise<void> {
  const config = loadConfig(io.env);
  const normalised = normaliseEmail(email);
  const done = await withTables(
    io,
    config,
    { local: options.local === true, sealing: false },
    async ({ accounts, people, passkeys, sessions }) => {
      const identity = await people.byEmail(normalised);
      if (!identity) throw new AdminError(`no one signs in with the e-mail "${normalised}" here`);
      const account = await accounts.getAccount(identity.accountId);
      const before = await passkeys.settings(identity.accountId);
      await passkeys.setRequired(identity.accountId, false);
      // Whoever holds a session now may be the one who took the device: everyone signs in again.
      const sessionsEnded = await sessions.endAll(identity.accountId);
      return {
        accountName: account?.name ?? null,
        accountId: identity.accountId,
        wasRequired: before.required,
        passkeys: before.count,
        sessionsEnded,
      };
    },
  );
  if (options.json) {
    io.stdout.write(JSON.stringify({ email: normalised, ...done }) + '\n');
    return;
  }
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  io.stdout.write(
    [
      `${normalised} (account "${done.accountName ?? done.accountId}"):`,
      done.wasRequired
        ? '  a passkey is no longer asked for after the password: the password alone signs in'
        : '  no passkey was asked for after the password (nothing to turn off)',
      `  ${plural(done.passkeys, 'passkey')} kept, and the recovery codes left`,
      `  ${plural(done.sessionsEnded, 'session')} signed out: every browser signs in again`,
    ].join('\n') + '\n',
  );
}

/** Runs the operator command `argv` (without node and the script); resolves to the exit status, 0 or 1. */
export async function runAdmin(argv: string[], io: AdminIo): Promise<number> {
  const program = new Command()
    .name('npm run admin --')
    .description("Cairn's operator commands, against the tables the environment names (see bin/admin.ts and docs/aws.md)")
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.stdout.write(text), writeErr: (text) => io.stderr.write(text) });
  program
    .command('create-account')
    .description(
      'create an account with its team, default bucket <name>-bucket, a storage key pair and a GraphQL API key; prints the credentials once',
    )
    .argument('<name>', 'the account name: 3-42 lowercase letters, digits or hyphens')
    .option('--json', 'print the new account and its credentials as one JSON object')
    .option('--local', "this machine's data directory (CAIRN_DATA_DIR; stop the service first)")
    .action((name: string, options: object) => createAccount(io, name, options));
  program
    .command('list-accounts')
    .description('list every account (names, default buckets, ids; never a secret)')
    .option('--json', 'print a JSON array')
    .option('--local', "this machine's data directory (CAIRN_DATA_DIR; stop the service first)")
    .action((options: object) => listAccounts(io, options));

  program
    .command('welcome-link')
    .description('a new one-time link (7 days) with which a person becomes the owner of an account that has no e-mail and password yet')
    .argument('<name>', 'the account name (the first start\'s account is "default")')
    .option('--base-url <url>', "the web app's address (default: CAIRN_BASE_URL, or this machine's with --local)")
    .option('--json', 'print the link as one JSON object')
    .option('--local', "this machine's data directory (CAIRN_DATA_DIR; stop the service first)")
    .action((name: string, options: object) => newWelcomeLink(io, name, options));

  program
    .command('lift-second-factor')
    .description(
      'stop asking a person for a passkey after the password (their passkeys and recovery codes stay) and sign them out everywhere',
    )
    .argument('<email>', 'the e-mail the person signs in with')
    .option('--json', 'print what was done as one JSON object')
    .option('--local', "this machine's data directory (CAIRN_DATA_DIR; stop the service first)")
    .action((email: string, options: object) => liftSecondFactor(io, email, options));
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    // commander has printed its own usage error (and --help its help, exit code 0).
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 1;
    const message = err instanceof AdminError || err instanceof ConfigError ? err.message : ((err as Error)?.stack ?? String(err));
    io.stderr.write(`cairn admin: ${message}\n`);
    return 1;
  }
}
