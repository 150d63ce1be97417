/**
 * What the test/aws suites share: the Lambda environment the stack gives a
 * function, pointed at this machine (its own tables, under a prefix the
 * local server never reads, in the embedded DynamoDB), and the Lambdas
 * built on it: the services a handler builds, an account, the GraphQL
 * Lambda door and the deploy worker's handler. The AWS services themselves
 * (SQS, CodeBuild, CloudFront, Lambda) are aws-sdk-client-mock stand-ins,
 * each suite mocking the clients it records; Secrets Manager's keeps its
 * secrets, so a suite sees what is left in it (secretsManagerStandIn).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { SQSEvent } from 'aws-lambda';
import {
  CreateSecretCommand,
  DeleteSecretCommand,
  GetSecretValueCommand,
  ListSecretsCommand,
  PutSecretValueCommand,
  ResourceExistsException,
  ResourceNotFoundException,
  SecretsManagerClient,
  type CreateSecretCommandInput,
  type DeleteSecretCommandInput,
  type GetSecretValueCommandInput,
  type ListSecretsCommandInput,
  type PutSecretValueCommandInput,
} from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { BOOT, type TestService } from './service.js';
import { dataOf, finishedDeploy, graphqlClient, importGraphqlLambda, newAccount, type AccountFixture } from './graphql.js';
import { lambdaFetch } from './lambda-door.js';
import { loadConfig } from '../../functions/core/config.js';
import { createServices, type Services } from '../../functions/core/services.js';
import { awsAdapters } from '../../functions/aws/adapters.js';
import { createLogger } from '../../functions/core/logger.js';
import { ensureTables } from '../../functions/core/data/dynamo.js';

export const QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/cairn-deploys';

/**
 * A function's environment as the stack sets it, on `service`'s embedded
 * DynamoDB and data directory, with tables under `tablePrefix`; `extra`
 * adds or overrides (a block bucket, a CDN, credentials for Cairn's own S3).
 */
export function lambdaEnv(service: TestService, tablePrefix: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    AWS_LAMBDA_FUNCTION_NAME: 'cairn-test',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
    AWS_SECRET_ACCESS_KEY: 'secret',
    DYNAMODB_ENDPOINT: service.env.DYNAMODB_ENDPOINT!,
    CAIRN_TABLE_PREFIX: tablePrefix,
    CAIRN_DATA_DIR: service.dataDir,
    CAIRN_SECRET_KEY: randomBytes(32).toString('hex'),
    CAIRN_DEPLOY_QUEUE_URL: QUEUE_URL,
    CAIRN_LOG_LEVEL: process.env.CAIRN_TEST_LOG_LEVEL ?? 'error',
    CAIRN_SCHEMA_PATH: join(process.cwd(), 'schema.graphql'),
    // The suites' git servers and receivers listen on 127.0.0.1; a suite that shows the refusals says "refuse".
    CAIRN_OUTBOUND_PRIVATE: 'allow',
    ...extra,
  };
}

/**
 * The stack's bucket as a bucket `name` on `service`'s own S3 endpoint
 * (made here), and what points a function at it (its block bucket, and
 * Cairn's credentials as the function's): blocks, logs and build files
 * become real objects a suite can list. Spread into lambdaEnv's `extra`.
 */
export async function stackBucketEnv(service: TestService, name: string): Promise<Record<string, string>> {
  await service.s3().send(new CreateBucketCommand({ Bucket: name }));
  return {
    AWS_ACCESS_KEY_ID: BOOT.accessKeyId,
    AWS_SECRET_ACCESS_KEY: BOOT.secretAccessKey,
    AWS_ENDPOINT_URL_S3: service.endpoints.s3,
    CAIRN_BLOCK_BUCKET: name,
  };
}

/** The services a Lambda handler builds from `env`, composed the same way (functions/aws/adapters.ts). */
export async function lambdaServices(env: Record<string, string>): Promise<Services> {
  const config = loadConfig(env);
  const logger = createLogger(config.logLevel);
  return createServices(config, await awsAdapters(config, logger), { logger });
}

export interface AwsLambdas {
  /** The services a handler builds from that environment (its tables made). */
  aws: Services;
  account: AccountFixture;
  /** The GraphQL Lambda door. */
  client: ReturnType<typeof graphqlClient>;
  /** A query through the GraphQL Lambda door as the account: its data, failing on errors. */
  gql(query: string, variables?: Record<string, unknown>): Promise<any>;
  /** The deploy worker's handler (SQS messages, CodeBuild events, the tick). */
  worker(event: unknown): Promise<any>;
  /** The deploy worker's minute tick, as EventBridge's schedule invokes it. */
  tick(): Promise<any>;
  /** A finished deploy of `cid` (finishedDeploy), published through publishDeploy at the door: its id. */
  publish(siteId: string, cid: string): Promise<string>;
  /** Closes the services and puts process.env back as it was. */
  close(): Promise<void>;
}

/**
 * Puts `env` in process.env (what the handler modules read when they build
 * their services; `unset` names variables a function would not have),
 * builds those services, their tables and one account, and loads the
 * GraphQL and deploy-worker handlers.
 */
export async function startLambdas(env: Record<string, string>, accountPrefix: string, unset: string[] = []): Promise<AwsLambdas> {
  const saved = { ...process.env };
  for (const name of ['AWS_PROFILE', ...unset]) delete process.env[name];
  Object.assign(process.env, env);
  const aws = await lambdaServices(env);
  await ensureTables(aws.db);
  const account = await newAccount({ services: aws } as TestService, accountPrefix);
  const client = graphqlClient({ name: 'Lambda door', fetch: lambdaFetch(await importGraphqlLambda()) }, 'https://api.example.com/graphql');
  const worker = ((await import('../../functions/deploy-worker/handler.js')) as any).handler;
  const gql: AwsLambdas['gql'] = async (query, variables = {}) => dataOf(await client.gql(account.apiKey, query, variables));
  return {
    aws,
    account,
    client,
    gql,
    worker,
    tick: () => worker({ source: 'aws.events', 'detail-type': 'Scheduled Event', detail: {} }),
    async publish(siteId, cid) {
      const id = await finishedDeploy(aws, siteId, cid);
      await gql('mutation ($s: ID!, $d: ID!) { publishDeploy(siteId: $s, deployId: $d) { id } }', { s: siteId, d: id });
      return id;
    },
    async close() {
      await aws.close();
      process.env = saved;
    },
  };
}

/** One SQS message for the deploy worker, as the event source mapping delivers it: `body` as it is, or as JSON. */
export function sqsEvent(body: unknown): SQSEvent {
  return {
    Records: [
      {
        messageId: randomUUID(),
        receiptHandle: 'r',
        body: typeof body === 'string' ? body : JSON.stringify(body),
        attributes: {} as never,
        messageAttributes: {},
        md5OfBody: '',
        eventSource: 'aws:sqs',
        eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:cairn-deploys',
        awsRegion: 'us-east-1',
      },
    ],
  };
}

/** One secret of the Secrets Manager stand-in: its current value, the version tokens it was written with, when it was made. */
export interface StoodInSecret {
  value: string;
  versions: Map<string, string>;
  created: Date;
}

/**
 * Secrets Manager for the suites that write secrets: an aws-sdk-client-mock
 * of the client answering as the service does for what Cairn calls
 * (https://docs.aws.amazon.com/secretsmanager/latest/apireference/):
 * CreateSecret refuses a name in use (ResourceExistsException);
 * PutSecretValue with a token already used ignores the same value and
 * refuses another; DeleteSecret with ForceDeleteWithoutRecovery removes the
 * secret at once and answers for one already gone too; GetSecretValue reads
 * the current value; ListSecrets lists names and creation dates (never
 * values), filtered by a case-sensitive name prefix
 * (https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_Filter.html),
 * by creation date, MaxResults (at most 100) at a time with a NextToken
 * (https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_ListSecrets.html). `secrets` is the service's state by name. `stackSecrets`
 * are the stack's own secrets by ARN (the key naming build secrets), which
 * GetSecretValue also reads and a reset keeps.
 */
export function secretsManagerStandIn(stackSecrets: Record<string, string> = {}): {
  client: ReturnType<typeof mockClient>;
  secrets: Map<string, StoodInSecret>;
  reset(): void;
} {
  const client = mockClient(SecretsManagerClient);
  const secrets = new Map<string, StoodInSecret>();
  const arn = (name: string) => `arn:aws:secretsmanager:us-east-1:123456789012:secret:${name}-AbCdEf`;
  const wire = () => {
    client.on(CreateSecretCommand).callsFake((input: CreateSecretCommandInput) => {
      const name = input.Name!;
      if (secrets.has(name)) {
        throw new ResourceExistsException({ message: `The operation failed because the secret ${name} already exists.`, $metadata: {} });
      }
      const token = input.ClientRequestToken ?? randomUUID();
      secrets.set(name, { value: input.SecretString!, versions: new Map([[token, input.SecretString!]]), created: new Date() });
      return { ARN: arn(name), Name: name, VersionId: token };
    });
    client.on(PutSecretValueCommand).callsFake((input: PutSecretValueCommandInput) => {
      const secret = secrets.get(input.SecretId!);
      if (!secret) throw new ResourceNotFoundException({ message: "Secrets Manager can't find the specified secret.", $metadata: {} });
      const token = input.ClientRequestToken ?? randomUUID();
      const had = secret.versions.get(token);
      if (had !== undefined && had !== input.SecretString) {
        throw new ResourceExistsException({
          message: `A version with the token ${token} already exists with another value.`,
          $metadata: {},
        });
      }
      secret.versions.set(token, input.SecretString!);
      secret.value = input.SecretString!;
      return { ARN: arn(input.SecretId!), Name: input.SecretId, VersionId: token };
    });
    client.on(DeleteSecretCommand).callsFake((input: DeleteSecretCommandInput) => {
      if (!input.ForceDeleteWithoutRecovery) throw new Error('the stand-in deletes only with ForceDeleteWithoutRecovery');
      secrets.delete(input.SecretId!);
      return { ARN: arn(input.SecretId!), Name: input.SecretId, DeletionDate: new Date() };
    });
    client.on(ListSecretsCommand).callsFake(async (input: ListSecretsCommandInput) => {
      const max = input.MaxResults ?? 100;
      if (max < 1 || max > 100) throw new Error('the stand-in takes MaxResults from 1 to 100, as the service does');
      const prefixes = (input.Filters ?? []).flatMap((f) => {
        if (f.Key !== 'name') throw new Error(`the stand-in filters by name only, not ${f.Key}`);
        return f.Values ?? [];
      });
      const listed = [...secrets]
        .filter(([name]) => !prefixes.length || prefixes.some((p) => name.startsWith(p)))
        .sort(([, a], [, b]) => (a.created.getTime() - b.created.getTime()) * (input.SortOrder === 'desc' ? -1 : 1));
      const from = Number(input.NextToken ?? 0);
      const page = listed.slice(from, from + max);
      return {
        SecretList: page.map(([name, secret]) => ({ ARN: arn(name), Name: name, CreatedDate: secret.created })),
        NextToken: from + max < listed.length ? String(from + max) : undefined,
      };
    });
    client.on(GetSecretValueCommand).callsFake((input: GetSecretValueCommandInput) => {
      const own = stackSecrets[input.SecretId!];
      if (own !== undefined) return { ARN: input.SecretId, Name: input.SecretId!.split(':').at(-1), SecretString: own };
      const secret = secrets.get(input.SecretId!);
      if (!secret) throw new ResourceNotFoundException({ message: "Secrets Manager can't find the specified secret.", $metadata: {} });
      return { ARN: arn(input.SecretId!), Name: input.SecretId, SecretString: secret.value };
    });
  };
  wire();
  return {
    client,
    secrets,
    reset() {
      client.reset();
      secrets.clear();
      wire();
    },
  };
}
