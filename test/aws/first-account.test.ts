/**
 * The first account on deploy: the custom resource's handler
 * (functions/first-account/handler.ts), given CloudFormation's events as the
 * CDK provider framework passes them, against the embedded DynamoDB, with
 * AWS Secrets Manager recorded by aws-sdk-client-mock (a small model of one
 * secret: its current value and its versions by token, refusing a second
 * value under the same token as Secrets Manager does).
 *
 * What it proves: the first Create makes a working account (its key pair
 * opens, its API key speaks for its team, it owns its team and bucket) and
 * puts its credentials in the secret once; every later Create or Update is a
 * no-op; Delete touches nothing; an account made otherwise, or a secret
 * Cairn did not write, is never overwritten; a failure after the secret is
 * written or before leaves no half-made account, and the retry succeeds;
 * no secret ever reaches the logs or CloudFormation's answer. With the
 * credentials, the secret holds the first owner's one-time welcome link,
 * which works once (after a retry too).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import {
  GetSecretValueCommand,
  PutSecretValueCommand,
  ResourceExistsException,
  ResourceNotFoundException,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import type { CdkCustomResourceEvent, Context } from 'aws-lambda';
import { startEmbeddedDb, type EmbeddedDb } from '../support/embedded-db.js';
import { loadConfig } from '../../functions/core/config.js';
import { createSealer } from '../../functions/aws/kms-sealer.js';
import type { Database } from '../../functions/core/data/dynamo.js';
import { AccountStore } from '../../functions/core/data/accounts.js';
import { StorageKeyStore } from '../../functions/core/data/storage-keys.js';
import { ApiKeyStore } from '../../functions/core/data/api-keys.js';
import { TeamStore } from '../../functions/core/data/teams.js';
import { BucketStore } from '../../functions/core/data/buckets.js';
import { withNewCredentials } from '../../functions/core/bootstrap.js';
import { PENDING_VALUE, type FirstAccountSecret } from '../../functions/first-account/secret-value.js';
import { credentialsVersionToken } from '../../functions/aws/secrets-manager.js';
import type { FirstAccountProperties } from '../../functions/first-account/handler.js';
import { AccountLinkStore } from '../../functions/core/data/account-links.js';
import { PersonStore } from '../../functions/core/data/people.js';
import { SessionStore } from '../../functions/core/data/sessions.js';
import { claimFirstOwner } from '../../functions/core/auth/first-owner.js';

const SECRET_KEY = randomBytes(32).toString('hex');
const STACK_ID = 'arn:aws:cloudformation:us-east-1:123456789012:stack/Cairn/5b2c6a10-0000-4000-8000-000000000000';
const SERVICE_TOKEN = 'arn:aws:lambda:us-east-1:123456789012:function:Cairn-FirstAccountProviderframeworkonEvent';
const ENDPOINTS = {
  StorageEndpoint: 'https://abc123.execute-api.us-east-1.amazonaws.com/prod',
  GraphqlUrl: 'https://def456.execute-api.us-east-1.amazonaws.com/graphql',
  GatewayUrl: 'https://gw.lambda-url.us-east-1.on.aws',
};

/** One secret as Secrets Manager keeps it: a current value and versions by client request token. */
class SecretModel {
  current: string = PENDING_VALUE;
  readonly versions = new Map<string, string>();
  puts = 0;
  failNextPut = false;
  constructor(readonly arn: string) {}
}

const sm = mockClient(SecretsManagerClient);
const secrets = new Map<string, SecretModel>();

function newSecret(): SecretModel {
  const model = new SecretModel(`arn:aws:secretsmanager:us-east-1:123456789012:secret:FirstAccountSecret-${randomUUID().slice(0, 6)}`);
  secrets.set(model.arn, model);
  return model;
}

function installSecretsManager() {
  sm.reset();
  sm.on(GetSecretValueCommand).callsFake((input: { SecretId: string }) => {
    const model = secrets.get(input.SecretId);
    if (!model) throw new ResourceNotFoundException({ message: "Secrets Manager can't find the specified secret.", $metadata: {} });
    return { ARN: model.arn, Name: model.arn.split(':').pop(), SecretString: model.current, VersionStages: ['AWSCURRENT'] };
  });
  sm.on(PutSecretValueCommand).callsFake((input: { SecretId: string; SecretString: string; ClientRequestToken?: string }) => {
    const model = secrets.get(input.SecretId);
    if (!model) throw new ResourceNotFoundException({ message: "Secrets Manager can't find the specified secret.", $metadata: {} });
    if (model.failNextPut) {
      model.failNextPut = false;
      throw new Error('Rate exceeded');
    }
    const token = input.ClientRequestToken ?? randomUUID();
    const earlier = model.versions.get(token);
    if (earlier !== undefined && earlier !== input.SecretString) {
      throw new ResourceExistsException({
        message: `A resource with the ID you requested already exists. (version ${token})`,
        $metadata: {},
      });
    }
    model.versions.set(token, input.SecretString);
    model.current = input.SecretString;
    model.puts++;
    return { ARN: model.arn, VersionId: token, VersionStages: ['AWSCURRENT'] };
  });
}

let embedded: EmbeddedDb;
let db: Database;
let accounts: AccountStore;
let storageKeys: StorageKeyStore;
let apiKeys: ApiKeyStore;
let teams: TeamStore;
let handler: (event: CdkCustomResourceEvent<FirstAccountProperties>, context: Context) => Promise<any>;
/** Everything written to stdout or stderr while the handler ran (the logger writes JSON lines to stdout, kept off the terminal). */
let captured = '';
const saved = { ...process.env };
const restoreWrites: Array<() => void> = [];

beforeAll(async () => {
  embedded = await startEmbeddedDb();
  db = embedded.client(false);
  const config = loadConfig({ DYNAMODB_ENDPOINT: embedded.endpoint, CAIRN_SECRET_KEY: SECRET_KEY });
  storageKeys = new StorageKeyStore(db, await createSealer(config));
  accounts = new AccountStore(db, storageKeys);
  apiKeys = new ApiKeyStore(db);
  teams = new TeamStore(db, apiKeys);
  Object.assign(process.env, {
    AWS_LAMBDA_FUNCTION_NAME: 'Cairn-FirstAccountHandler',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
    AWS_SECRET_ACCESS_KEY: 'not-used-the-client-is-mocked',
    DYNAMODB_ENDPOINT: embedded.endpoint,
    CAIRN_SECRET_KEY: SECRET_KEY,
    CAIRN_LOG_LEVEL: 'debug',
  });
  delete process.env.AWS_PROFILE;
  delete process.env.CAIRN_KMS_KEY_ID;
  ({ handler } = await import('../../functions/first-account/handler.js'));
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream);
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
      captured += text;
      if (text.startsWith('{"level"')) return true;
      return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof stream.write;
    restoreWrites.push(() => {
      stream.write = write;
    });
  }
}, 60_000);

afterAll(async () => {
  for (const restore of restoreWrites) restore();
  process.env = saved;
  sm.restore();
  await embedded?.close();
});

beforeEach(() => installSecretsManager());

const context = {
  functionName: 'Cairn-FirstAccountHandler',
  awsRequestId: 'lambda-request',
  getRemainingTimeInMillis: () => 60_000,
} as unknown as Context;

function event(
  type: 'Create' | 'Update' | 'Delete',
  secret: SecretModel,
  accountName: string,
  physicalResourceId?: string,
): CdkCustomResourceEvent<FirstAccountProperties> {
  const ResourceProperties: FirstAccountProperties = {
    ServiceToken: SERVICE_TOKEN,
    SecretArn: secret.arn,
    AccountName: accountName,
    ...ENDPOINTS,
  };
  const common = {
    ServiceToken: SERVICE_TOKEN,
    ResponseURL: 'https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/signed',
    StackId: STACK_ID,
    RequestId: randomUUID(),
    LogicalResourceId: 'FirstAccount3429539E',
    ResourceType: 'Custom::CairnFirstAccount',
    ResourceProperties,
  };
  if (type === 'Create') return { ...common, RequestType: 'Create' };
  if (type === 'Update')
    return { ...common, RequestType: 'Update', PhysicalResourceId: physicalResourceId!, OldResourceProperties: ResourceProperties };
  return { ...common, RequestType: 'Delete', PhysicalResourceId: physicalResourceId! };
}

function storedCredentials(secret: SecretModel): FirstAccountSecret {
  return JSON.parse(secret.current) as FirstAccountSecret;
}

/** The account the secret's credentials name works: its key pair opens, its API key speaks for its team, it owns the team and the bucket. */
async function expectWorkingAccount(stored: FirstAccountSecret) {
  const account = await accounts.getAccountByName(stored.accountName);
  expect(account).toBeDefined();
  expect(account!.defaultBucket).toBe(stored.defaultBucket);
  expect(await storageKeys.get(stored.accessKeyId)).toEqual({ accountId: account!.id, secretAccessKey: stored.secretAccessKey });
  expect(await apiKeys.caller(stored.apiKey)).toMatchObject({ teamId: account!.defaultTeamId, accountId: account!.id });
  expect(await teams.getMember(account!.defaultTeamId, account!.id)).toMatchObject({ role: 'OWNER' });
  expect(await new BucketStore(db).get(stored.defaultBucket)).toMatchObject({ accountId: account!.id, isDefault: true });
  return account!;
}

function expectNoSecretIn(text: string, stored: FirstAccountSecret) {
  expect(text).not.toContain(stored.secretAccessKey);
  expect(text).not.toContain(stored.apiKey);
  expect(text).not.toContain(stored.accessKeyId);
}

test('Create makes the first account, its team, bucket, key pair and API key, and puts the credentials in the secret once', async () => {
  const secret = newSecret();
  const logStart = captured.length;
  const answer = await handler(event('Create', secret, 'default'), context);

  expect(secret.puts).toBe(1);
  const stored = storedCredentials(secret);
  expect(stored).toMatchObject({
    cairn: 'first-account',
    accountName: 'default',
    defaultBucket: 'default-bucket',
    region: 'us-east-1',
    storageEndpoint: ENDPOINTS.StorageEndpoint,
    graphqlUrl: ENDPOINTS.GraphqlUrl,
    gatewayUrl: ENDPOINTS.GatewayUrl,
  });
  expect(stored.accessKeyId).toMatch(/^CAIRN[A-Z2-7]{15}$/);
  expect(stored.secretAccessKey).toMatch(/^[0-9A-Za-z]{40}$/);
  expect(stored.apiKey).toMatch(/^cairn_[0-9A-Za-z]{40}$/);
  // Written under the one token derived from the secret, so a second, different value would be refused.
  expect(sm.commandCalls(PutSecretValueCommand)[0]!.args[0].input.ClientRequestToken).toBe(credentialsVersionToken(secret.arn));
  await expectWorkingAccount(stored);

  expect(answer).toEqual({
    PhysicalResourceId: 'first-account:default',
    Data: {
      AccountName: 'default',
      DefaultBucket: 'default-bucket',
      SecretArn: secret.arn,
      Outcome: 'created',
      SecretHoldsCredentials: 'true',
    },
  });
  expectNoSecretIn(JSON.stringify(answer), stored);
  // One structured line for the request, naming it, with no secret in it.
  const lines = captured
    .slice(logStart)
    .split('\n')
    .filter((l) => l.startsWith('{'));
  expect(lines.map((l) => JSON.parse(l))).toContainEqual(
    expect.objectContaining({ level: 'info', fn: 'first-account', requestType: 'Create', accountName: 'default', secret: secret.arn }),
  );
  expectNoSecretIn(captured, stored);
});

test('a second Create and any Update are no-ops: nothing is written again, the account is the same', async () => {
  const secret = newSecret();
  const created = await handler(event('Create', secret, 'second-run'), context);
  const stored = storedCredentials(secret);
  const account = await expectWorkingAccount(stored);

  // CloudFormation repeating the Create (a retried request) and later deploys' Updates.
  const again = await handler(event('Create', secret, 'second-run'), context);
  const updated = await handler(event('Update', secret, 'second-run', created.PhysicalResourceId), context);
  // An Update that renames the account leaves the first one, whose credentials the secret holds.
  const renamed = await handler(event('Update', secret, 'another-name', created.PhysicalResourceId), context);

  expect(secret.puts).toBe(1);
  expect(storedCredentials(secret)).toEqual(stored);
  expect(again.Data).toMatchObject({ Outcome: 'exists', AccountName: 'second-run', SecretHoldsCredentials: 'true' });
  expect(updated).toEqual({ PhysicalResourceId: 'first-account:second-run', Data: expect.objectContaining({ Outcome: 'exists' }) });
  expect(renamed).toEqual({
    PhysicalResourceId: 'first-account:second-run',
    Data: expect.objectContaining({ Outcome: 'exists', AccountName: 'second-run' }),
  });
  expect(await accounts.getAccountByName('another-name')).toBeUndefined();
  expect((await accounts.getAccountByName('second-run'))!.id).toBe(account.id);
  expect((await accounts.list()).filter((a) => a.name === 'second-run')).toHaveLength(1);
  expectNoSecretIn(captured, stored);
});

test('Delete removes nothing and calls nothing: the account and the secret stay', async () => {
  const secret = newSecret();
  const created = await handler(event('Create', secret, 'kept'), context);
  const stored = storedCredentials(secret);
  sm.resetHistory();

  const answer = await handler(event('Delete', secret, 'kept', created.PhysicalResourceId), context);

  expect(answer).toEqual({ PhysicalResourceId: 'first-account:kept' });
  expect(sm.calls()).toHaveLength(0);
  expect(secret.current).toBe(JSON.stringify(stored));
  await expectWorkingAccount(stored);
});

test('an account of that name made otherwise is left alone, and the secret is not written', async () => {
  const made = await accounts.createAccount(withNewCredentials('made-by-admin'));
  const secret = newSecret();
  const logStart = captured.length;

  const answer = await handler(event('Create', secret, 'made-by-admin'), context);

  expect(answer.Data).toMatchObject({ Outcome: 'exists', SecretHoldsCredentials: 'false', DefaultBucket: 'made-by-admin-bucket' });
  expect(sm.commandCalls(PutSecretValueCommand)).toHaveLength(0);
  expect(secret.current).toBe(PENDING_VALUE);
  expect((await accounts.getAccountByName('made-by-admin'))!.id).toBe(made.account.id);
  expect(captured.slice(logStart)).toContain('"level":"warn"');
});

test('a secret holding a value Cairn did not write is never overwritten, and no account is made', async () => {
  const secret = newSecret();
  secret.current = JSON.stringify({ username: 'someone', password: 'theirs' });

  await expect(handler(event('Create', secret, 'foreign'), context)).rejects.toThrow(/holds a value Cairn did not write/);

  expect(sm.commandCalls(PutSecretValueCommand)).toHaveLength(0);
  expect(secret.current).toBe(JSON.stringify({ username: 'someone', password: 'theirs' }));
  expect(await accounts.getAccountByName('foreign')).toBeUndefined();
});

test('a bad account name fails the request before anything is written', async () => {
  const secret = newSecret();
  await expect(handler(event('Create', secret, 'Not_A_Name'), context)).rejects.toThrow(/3-42 lowercase letters/);
  expect(sm.calls()).toHaveLength(0);
});

test('a failure after the secret is written leaves no half-made account; a retry makes it with the same credentials', async () => {
  // The account's bucket name is taken: its transaction is refused after the secret was written.
  const blocker = await accounts.createAccount({ ...withNewCredentials('blocker'), bucketName: 'midway-bucket' });
  const secret = newSecret();
  const logStart = captured.length;

  await expect(handler(event('Create', secret, 'midway'), context)).rejects.toThrow(/conflicts with an existing/);

  const stored = storedCredentials(secret);
  expect(stored.accountName).toBe('midway');
  // Nothing of the account exists: not its name, key pair, API key or team.
  expect(await accounts.getAccountByName('midway')).toBeUndefined();
  expect(await storageKeys.has(stored.accessKeyId)).toBe(false);
  expect(await apiKeys.caller(stored.apiKey)).toBeUndefined();
  expect((await accounts.list()).map((a) => a.name)).not.toContain('midway');
  expectNoSecretIn(captured.slice(logStart), stored);

  // The operator frees the name; the next run makes the account with the credentials already in the secret.
  await db.doc.send(new DeleteCommand({ TableName: db.tables.accounts, Key: { pk: 'BUCKET#midway-bucket', sk: 'BUCKET' } }));
  const answer = await handler(event('Update', secret, 'midway', 'first-account:midway'), context);

  expect(answer.Data).toMatchObject({ Outcome: 'created', AccountName: 'midway' });
  expect(secret.puts).toBe(1);
  expect(storedCredentials(secret)).toEqual(stored);
  const account = await expectWorkingAccount(stored);
  expect(account.id).not.toBe(blocker.account.id);
  expectNoSecretIn(captured, stored);
  // The welcome link drawn before the failure is the one the retry made.
  expect(await new AccountLinkStore(db).open('WELCOME', welcomeToken(stored))).toMatchObject({ accountId: account.id });
});

const welcomeToken = (stored: FirstAccountSecret) => stored.welcomeUrl!.slice(stored.welcomeUrl!.indexOf('/#/welcome/') + 11);

test("the secret holds the first owner's welcome link, which gives the account an e-mail and a password, once", async () => {
  const secret = newSecret();
  await handler(event('Create', secret, 'welcomed'), context);
  const stored = storedCredentials(secret);
  // The web app answers at the API's base, where /graphql is.
  expect(stored.welcomeUrl).toMatch(/^https:\/\/def456\.execute-api\.us-east-1\.amazonaws\.com\/#\/welcome\/l1\.[A-Za-z0-9_-]{43}$/);
  const token = welcomeToken(stored);
  const services = { accountLinks: new AccountLinkStore(db), accounts, db, people: new PersonStore(db), sessions: new SessionStore(db) };
  const claimed = await claimFirstOwner(services, { token, email: 'owner@example.org', password: 'correct horse battery staple' }, {});
  expect(claimed).toMatchObject({ kind: 'signed-in', account: { name: 'welcomed' }, email: 'owner@example.org' });
  const again = await claimFirstOwner(services, { token, email: 'other@example.org', password: 'correct horse battery staple' }, {});
  expect(again.kind).toBe('gone');
  expect(captured).not.toContain(token);
});

test('a failure before the secret is written makes nothing; the retry makes the account', async () => {
  const secret = newSecret();
  secret.failNextPut = true;

  await expect(handler(event('Create', secret, 'throttled'), context)).rejects.toThrow(/Rate exceeded/);
  expect(secret.current).toBe(PENDING_VALUE);
  expect(await accounts.getAccountByName('throttled')).toBeUndefined();

  const answer = await handler(event('Create', secret, 'throttled'), context);
  expect(answer.Data).toMatchObject({ Outcome: 'created' });
  await expectWorkingAccount(storedCredentials(secret));
});

test('a second, different value under the credentials token is refused, never written over them', async () => {
  const secret = newSecret();
  await handler(event('Create', secret, 'once-only'), context);
  const stored = storedCredentials(secret);
  // As if a concurrent run had read the placeholder: Secrets Manager refuses another value under the same token.
  secret.current = PENDING_VALUE;
  await db.doc.send(new DeleteCommand({ TableName: db.tables.accounts, Key: { pk: 'ACCOUNTNAME#once-only', sk: 'ACCOUNTNAME' } }));

  await expect(handler(event('Update', secret, 'once-only', 'first-account:once-only'), context)).rejects.toThrow(
    /already holds first-account credentials/,
  );
  expect(secret.versions.get(credentialsVersionToken(secret.arn))).toBe(JSON.stringify(stored));
  expect(secret.puts).toBe(1);
});

test('an event without the secret, or of an unknown type, fails with a reason', async () => {
  const secret = newSecret();
  const noSecret = event('Create', secret, 'default');
  delete (noSecret.ResourceProperties as Partial<FirstAccountProperties>).SecretArn;
  await expect(handler(noSecret, context)).rejects.toThrow(/no SecretArn/);
  const unknown = {
    ...event('Create', secret, 'default'),
    RequestType: 'Replace',
  } as unknown as CdkCustomResourceEvent<FirstAccountProperties>;
  await expect(handler(unknown, context)).rejects.toThrow(/unknown request type Replace/);
  expect(sm.calls()).toHaveLength(0);
});
