/**
 * `npm run admin` (bin/admin.ts), as an operator runs it: against the tables the environment names (here the embedded
 * DynamoDB at DYNAMODB_ENDPOINT, as DynamoDB in AWS would be), and with
 * --local against a stopped local service's data directory. The accounts it
 * makes are checked with the stores and, for --local, used: the local
 * service started afterwards on the same directory takes the printed
 * credentials.
 *
 * The commands run in this process (functions/admin/program.ts's runAdmin,
 * what bin/admin.ts runs), given only the environment the test names; a
 * start of the script costs about a second of CPU (tsx and the modules).
 * The full run (CAIRN_TEST_SET=full, what CI runs) runs every command as
 * `npm run admin`'s child process, and so does the everyday run where the
 * process matters (a data directory in use by another process).
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Writable } from 'node:stream';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { npmScriptArgs, ROOT } from '../support/child-service.js';
import { FULL_RUN } from '../support/test-set.js';
import { runAdmin } from '../../functions/admin/program.js';
import { startEmbeddedDb, type EmbeddedDb } from '../support/embedded-db.js';
import { serviceEnv, startTestService } from '../support/service.js';
import { loadConfig } from '../../functions/core/config.js';
import { createSealer } from '../../functions/aws/kms-sealer.js';
import type { Database } from '../../functions/core/data/dynamo.js';
import { AccountStore } from '../../functions/core/data/accounts.js';
import { StorageKeyStore } from '../../functions/core/data/storage-keys.js';
import { ApiKeyStore } from '../../functions/core/data/api-keys.js';
import { TeamStore } from '../../functions/core/data/teams.js';
import { BucketStore } from '../../functions/core/data/buckets.js';
import { AccountLinkStore } from '../../functions/core/data/account-links.js';
import { PersonStore } from '../../functions/core/data/people.js';
import { PasskeyStore } from '../../functions/core/data/passkeys.js';
import { SessionStore } from '../../functions/core/data/sessions.js';

const SECRET_KEY = randomBytes(32).toString('hex');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `npm run admin`'s command with only the environment given (and PATH, HOME): nothing of this test's own. */
function admin(env: Record<string, string>, ...args: string[]): Promise<Run> {
  return FULL_RUN ? adminProcess(env, ...args) : adminHere(env, ...args);
}

/** The command in this process: runAdmin with the environment given, its output collected. */
async function adminHere(env: Record<string, string>, ...args: string[]): Promise<Run> {
  const printed = { stdout: '', stderr: '' };
  const to = (name: 'stdout' | 'stderr') =>
    new Writable({
      write(chunk: Buffer | string, _encoding, done) {
        printed[name] += chunk.toString();
        done();
      },
    });
  const code = await runAdmin(args, {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdout: to('stdout'),
    stderr: to('stderr'),
  });
  return { code, ...printed };
}

/** The command as `npm run admin` runs it: a child process. */
function adminProcess(env: Record<string, string>, ...args: string[]): Promise<Run> {
  const { nodeArgs, script } = npmScriptArgs('admin');
  return promisify(execFile)(process.execPath, [...nodeArgs, join(ROOT, script), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

/** The credentials as the text output prints them. */
function printed(stdout: string) {
  const field = (label: string) => new RegExp(`^  ${label} +(\\S+)$`, 'm').exec(stdout)?.[1];
  return {
    accessKeyId: field('access key id')!,
    secretAccessKey: field('secret access key')!,
    apiKey: field('API key \\(GraphQL\\)')!,
    defaultBucket: field('default bucket')!,
  };
}

let embedded: EmbeddedDb;
let db: Database;
let env: Record<string, string>;
let accounts: AccountStore;
let storageKeys: StorageKeyStore;
let apiKeys: ApiKeyStore;

beforeAll(async () => {
  embedded = await startEmbeddedDb();
  db = embedded.client(false);
  env = {
    DYNAMODB_ENDPOINT: embedded.endpoint,
    CAIRN_ACCOUNTS_TABLE: db.tables.accounts,
    CAIRN_SECRET_KEY: SECRET_KEY,
    AWS_REGION: 'us-east-1',
  };
  storageKeys = new StorageKeyStore(db, await createSealer(loadConfig(env)));
  accounts = new AccountStore(db, storageKeys);
  apiKeys = new ApiKeyStore(db);
}, 60_000);

afterAll(async () => {
  await embedded?.close();
});

async function expectWorkingAccount(
  name: string,
  credentials: { accessKeyId: string; secretAccessKey: string; apiKey: string; defaultBucket: string },
) {
  const account = await accounts.getAccountByName(name);
  expect(account).toBeDefined();
  expect(credentials.defaultBucket).toBe(`${name}-bucket`);
  expect(await storageKeys.get(credentials.accessKeyId)).toEqual({ accountId: account!.id, secretAccessKey: credentials.secretAccessKey });
  expect(await apiKeys.caller(credentials.apiKey)).toMatchObject({ teamId: account!.defaultTeamId, accountId: account!.id });
  expect(await new TeamStore(db, apiKeys).getMember(account!.defaultTeamId, account!.id)).toMatchObject({ role: 'OWNER' });
  expect(await new BucketStore(db).get(`${name}-bucket`)).toMatchObject({ accountId: account!.id, isDefault: true });
  return account!;
}

test('create-account makes a working account and prints its credentials once; list-accounts shows it without secrets', async () => {
  const made = await admin(env, 'create-account', 'alice');
  expect(made).toMatchObject({ code: 0, stderr: '' });
  expect(made.stdout).toContain('Account "alice" created. These secrets are shown once; keep them:');
  const credentials = printed(made.stdout);
  expect(credentials.accessKeyId).toMatch(/^CAIRN[A-Z2-7]{15}$/);
  expect(credentials.apiKey).toMatch(/^cairn_/);
  const account = await expectWorkingAccount('alice', credentials);
  expect(made.stdout).toContain(`team id            ${account.defaultTeamId}`);

  const json = await admin(env, 'create-account', 'bob-2', '--json');
  expect(json.code).toBe(0);
  const bob = JSON.parse(json.stdout);
  expect(Object.keys(bob).sort()).toEqual([
    'accessKeyId',
    'accountId',
    'accountName',
    'apiKey',
    'defaultBucket',
    'secretAccessKey',
    'teamId',
  ]);
  await expectWorkingAccount('bob-2', bob);

  const listed = await admin(env, 'list-accounts');
  expect(listed.code).toBe(0);
  const lines = listed.stdout.trim().split('\n');
  expect(lines[0]).toMatch(/^NAME +DEFAULT BUCKET +CREATED +ACCOUNT ID +TEAM ID$/);
  expect(lines.slice(1).map((l) => l.split(/ +/)[0])).toEqual(['alice', 'bob-2']);
  expect(lines[1]).toContain(account.id);
  const listedJson = JSON.parse((await admin(env, 'list-accounts', '--json')).stdout);
  expect(listedJson).toEqual([
    { id: account.id, name: 'alice', defaultBucket: 'alice-bucket', defaultTeamId: account.defaultTeamId, createdAt: account.createdAt },
    expect.objectContaining({ id: bob.accountId, name: 'bob-2' }),
  ]);
  for (const secret of [credentials.secretAccessKey, credentials.apiKey, bob.secretAccessKey, bob.apiKey]) {
    expect(listed.stdout).not.toContain(secret);
    expect(JSON.stringify(listedJson)).not.toContain(secret);
  }
}, 120_000);

test('an existing name, a taken bucket or a bad name is refused with one line, and nothing changes', async () => {
  const before = await admin(env, 'create-account', 'carol');
  expect(before.code).toBe(0);
  const carol = await accounts.getAccountByName('carol');

  const again = await admin(env, 'create-account', 'carol');
  expect(again).toEqual({ code: 1, stdout: '', stderr: 'cairn admin: account "carol" exists already\n' });
  expect((await accounts.getAccountByName('carol'))!.id).toBe(carol!.id);

  // "dave-bucket" belongs to another account: the account's one transaction is refused whole.
  await accounts.createAccount({
    name: 'squatter',
    accessKeyId: 'CAIRNSQUATTER0000001',
    secretAccessKey: 's'.repeat(40),
    apiToken: 'cairn_squatter',
    bucketName: 'dave-bucket',
  });
  const taken = await admin(env, 'create-account', 'dave');
  expect(taken.code).toBe(1);
  expect(taken.stderr).toMatch(
    /^cairn admin: account "dave" conflicts with an existing account name, access key, API token or bucket "dave-bucket"\n$/,
  );
  expect(await accounts.getAccountByName('dave')).toBeUndefined();

  // (Each child process costs seconds: one bad name here; the rule itself is isValidAccountName's.)
  const bad = await admin(env, 'create-account', 'Dave_1');
  expect(bad).toEqual({
    code: 1,
    stdout: '',
    stderr: 'cairn admin: "Dave_1": an account name is 3-42 lowercase letters, digits or hyphens\n',
  });
  expect(await accounts.getAccountByName('Dave_1')).toBeUndefined();

  const usage = await admin(env, 'create-account');
  expect(usage.code).toBe(1);
  expect(usage.stderr).toContain("missing required argument 'name'");
}, 120_000);

test('against DynamoDB in AWS it needs the table and the KMS key named, and says so before calling anything', async () => {
  const noTable = await admin({ AWS_REGION: 'us-east-1' }, 'list-accounts');
  expect(noTable).toMatchObject({ code: 1, stdout: '' });
  expect(noTable.stderr).toBe(
    "cairn admin: CAIRN_ACCOUNTS_TABLE is not set: set it to the stack's AccountsTableName output (or use --local for this machine's data directory)\n",
  );

  const noKey = await admin({ AWS_REGION: 'us-east-1', CAIRN_ACCOUNTS_TABLE: 'Cairn-DataAccountsTable-XYZ' }, 'create-account', 'erin');
  expect(noKey.code).toBe(1);
  expect(noKey.stderr).toMatch(/^cairn admin: CAIRN_KMS_KEY_ID is not set/);

  // Another DynamoDB: a key the service also has, never one made up here.
  const { CAIRN_SECRET_KEY: _unused, ...withoutKey } = env;
  const noSealing = await admin(withoutKey, 'create-account', 'erin');
  expect(noSealing.code).toBe(1);
  expect(noSealing.stderr).toBe(
    'cairn admin: set CAIRN_KMS_KEY_ID or CAIRN_SECRET_KEY to the key the service seals storage secrets with\n',
  );
  expect(await accounts.getAccountByName('erin')).toBeUndefined();

  const wrongTable = await admin({ ...env, CAIRN_ACCOUNTS_TABLE: 'no-such-table' }, 'list-accounts');
  expect(wrongTable.code).toBe(1);
  expect(wrongTable.stderr).toBe(
    `cairn admin: table no-such-table not found in ${embedded.endpoint}: check CAIRN_ACCOUNTS_TABLE and AWS_REGION\n`,
  );
}, 120_000);

test('welcome-link gives an account without an owner a new one-time link; an owned or unknown account, or no address, is refused', async () => {
  const made = await admin(env, 'create-account', 'gina');
  expect(made.code).toBe(0);
  const gina = (await accounts.getAccountByName('gina'))!;

  const noAddress = await admin(env, 'welcome-link', 'gina');
  expect(noAddress).toMatchObject({ code: 1, stdout: '' });
  expect(noAddress.stderr).toMatch(/^cairn admin: give --base-url/);

  const issued = await admin(env, 'welcome-link', 'gina', '--base-url', 'https://api.example.org/', '--json');
  expect(issued).toMatchObject({ code: 0, stderr: '' });
  const { url, expiresAt } = JSON.parse(issued.stdout) as { url: string; expiresAt: string };
  const token = /^https:\/\/api\.example\.org\/#\/welcome\/(l1\.[A-Za-z0-9_-]{43})$/.exec(url)?.[1];
  expect(token).toBeDefined();
  expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(6.9 * 86_400_000);
  // The link opens for gina's account, as the first start's does.
  const links = new AccountLinkStore(db);
  expect(await links.open('WELCOME', token)).toMatchObject({ accountId: gina.id });

  // Once the account has a person, a link could never be claimed: refused, and nothing is made.
  await new PersonStore(db).add(gina.id, 'gina@example.org', 'scrypt$not-checked-here');
  const owned = await admin(env, 'welcome-link', 'gina', '--base-url', 'https://api.example.org');
  expect(owned).toMatchObject({ code: 1, stdout: '' });
  expect(owned.stderr).toBe(
    'cairn admin: account "gina" has an owner already (gina@example.org): they can reset their password from the sign-in page\n',
  );

  const unknown = await admin(env, 'welcome-link', 'nobody-here', '--base-url', 'https://api.example.org');
  expect(unknown).toMatchObject({ code: 1, stderr: 'cairn admin: no account "nobody-here"\n' });
  const badUrl = await admin(env, 'welcome-link', 'gina', '--base-url', 'ftp://example.org');
  expect(badUrl).toMatchObject({ code: 1, stderr: 'cairn admin: --base-url "ftp://example.org" is not an http(s) address\n' });
});

test('lift-second-factor stops asking for the passkey, keeps the passkeys and signs the person out; an unknown e-mail is refused', async () => {
  expect((await admin(env, 'create-account', 'hana')).code).toBe(0);
  const hana = (await accounts.getAccountByName('hana'))!;
  await new PersonStore(db).add(hana.id, 'hana@example.org', 'scrypt$not-checked-here');
  const passkeys = new PasskeyStore(db);
  const passkey = { accountId: hana.id, publicKey: 'pQ', counter: 0, transports: ['internal'], name: 'Phone' };
  await passkeys.add({ ...passkey, credentialId: `cred-${randomBytes(8).toString('hex')}` });
  await passkeys.add({ ...passkey, credentialId: `cred-${randomBytes(8).toString('hex')}` });
  await passkeys.setRequired(hana.id, true);
  const sessions = new SessionStore(db);
  const open = [await sessions.create(hana.id, {}), await sessions.create(hana.id, {})];
  // Someone else's session is no part of it.
  const other = { id: randomUUID() };
  const bystander = await sessions.create(other.id, {});

  const lifted = await admin(env, 'lift-second-factor', ' Hana@Example.org ');
  expect(lifted).toMatchObject({ code: 0, stderr: '' });
  expect(lifted.stdout).toBe(
    [
      'hana@example.org (account "hana"):',
      '  a passkey is no longer asked for after the password: the password alone signs in',
      '  2 passkeys kept, and the recovery codes left',
      '  2 sessions signed out: every browser signs in again',
      '',
    ].join('\n'),
  );
  expect(await passkeys.settings(hana.id)).toEqual({ required: false, count: 2 });
  expect(await passkeys.list(hana.id)).toHaveLength(2);
  for (const { secret } of open) expect(await sessions.open(secret)).toMatchObject({ refused: expect.anything() });
  expect(await sessions.open(bystander.secret)).toMatchObject({ session: { accountId: other.id } });

  // Again: nothing to turn off, and it says so.
  const again = await admin(env, 'lift-second-factor', 'hana@example.org', '--json');
  expect(again.code).toBe(0);
  expect(JSON.parse(again.stdout)).toEqual({
    email: 'hana@example.org',
    accountName: 'hana',
    accountId: hana.id,
    wasRequired: false,
    passkeys: 2,
    sessionsEnded: 0,
  });

  const unknown = await admin(env, 'lift-second-factor', 'nobody@example.org');
  expect(unknown).toMatchObject({
    code: 1,
    stdout: '',
    stderr: 'cairn admin: no one signs in with the e-mail "nobody@example.org" here\n',
  });
});

describe('--local', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cairn-admin-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test("makes an account in a stopped service's data directory that the service then takes, and refuses one in use", async () => {
    const localEnv = await serviceEnv(dir);
    const made = await admin(localEnv, 'create-account', 'frank', '--local');
    expect(made).toMatchObject({ code: 0, stderr: '' });
    const frank = printed(made.stdout);

    const service = await startTestService({ CAIRN_GC_INTERVAL: '0' }, dir);
    try {
      // Another process: the lock on the data directory is the service's process's.
      const inUse = await adminProcess(localEnv, 'list-accounts', '--local');
      expect(inUse.code).toBe(1);
      expect(inUse.stderr).toContain('in use by another Cairn process');
      // The service opens the storage secret sealed by the command (the data directory's key) and checks the signature with it.
      const s3 = service.s3({ accessKeyId: frank.accessKeyId, secretAccessKey: frank.secretAccessKey });
      await s3.send(new PutObjectCommand({ Bucket: frank.defaultBucket, Key: 'hello.txt', Body: 'from frank' }));
      const got = await s3.send(new GetObjectCommand({ Bucket: frank.defaultBucket, Key: 'hello.txt' }));
      expect(await got.Body!.transformToString()).toBe('from frank');
      expect(await service.services.apiKeys.caller(frank.apiKey)).toBeDefined();
      s3.destroy();
    } finally {
      await service.close();
    }

    const listed = await admin(localEnv, 'list-accounts', '--local', '--json');
    expect(listed.code).toBe(0);
    // The service made its default account at its first start.
    expect(JSON.parse(listed.stdout).map((a: { name: string }) => a.name)).toEqual(['default', 'frank']);
  }, 180_000);
});
