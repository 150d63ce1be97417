/**
 * What the API suites talk to, as endpoints and credentials only, so the
 * same suite can run against the local service (the default) or a deployed
 * stack. For a deployed stack, set:
 *   CAIRN_TEST_S3_ENDPOINT, CAIRN_TEST_GATEWAY_URL, CAIRN_TEST_GRAPHQL_URL
 *   CAIRN_TEST_ACCESS_KEY_ID, CAIRN_TEST_SECRET_ACCESS_KEY (an account whose
 *     default bucket is CAIRN_TEST_BUCKET, "default-bucket" unless set)
 *   CAIRN_TEST_OTHER_ACCESS_KEY_ID, CAIRN_TEST_OTHER_SECRET_ACCESS_KEY,
 *     CAIRN_TEST_OTHER_BUCKET (a second account, for what one account may
 *     not do to another's things)
 *   CAIRN_TEST_REGION ("us-east-1" unless set)
 *   CAIRN_TEST_API_KEY, CAIRN_TEST_OTHER_API_KEY (a hosting API key of each
 *     of those accounts, for the GraphQL suites: they make their own teams
 *     and keys with it)
 *   CAIRN_TEST_STORAGE_PUBLIC_DOMAIN, CAIRN_TEST_BUCKET_ENDPOINT_DOMAIN (the
 *     stack's public object URLs, `<bucket>.<domain>`, for the gateway suites)
 *   CAIRN_TEST_GRAPHQL_INTROSPECTION=true when the stack's GraphQL function
 *     has introspection on (it is off in AWS unless configured): the checks
 *     that read the schema run only then
 * Checks that look inside the service (its stores, its IPFS node, its
 * configuration) run only against the local one: `localTest` and
 * `target.whenLocal` skip them against a deployed stack.
 */
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import type { LambdaFn } from './lambda-door.js';
import { BOOT, startTestService, type TestService } from './service.js';

export interface Account {
  accessKeyId: string;
  secretAccessKey: string;
  /** The account's own bucket, which it has from the start. */
  bucket: string;
  /** A hosting API key of the account's own team (GraphQL). */
  apiKey: string;
}

export interface ApiTarget {
  name: string;
  endpoints: { s3: string; gateway: string; graphql: string };
  /** Public object URLs are `<bucket>.<storagePublic>/<key>`, bucket addresses `<bucket>.<bucketEndpoint>/<key>`. */
  domains: { storagePublic: string; bucketEndpoint: string };
  region: string;
  account: Account;
  /** Another account, which owns none of `account`'s things. */
  other: Account;
  s3(credentials?: { accessKeyId: string; secretAccessKey: string }, extra?: Partial<S3ClientConfig>): S3Client;
  /** The local service behind the endpoints; undefined against a deployed stack. */
  local?: TestService;
  /** The S3 Lambda handler, loaded in this process on the local service's data (local only). */
  s3Lambda?: LambdaFn;
  /** The GraphQL and gateway Lambda handlers, likewise (local only). */
  graphqlLambda?: LambdaFn;
  gatewayLambda?: LambdaFn;
  /** Runs a check that looks inside the local service; against a deployed stack, nothing. */
  whenLocal(check: (service: TestService) => unknown): Promise<void>;
  close(): Promise<void>;
}

const env = process.env;
/** Whether the suites run against a deployed stack (known when tests are declared). */
export const REMOTE = Boolean(env.CAIRN_TEST_S3_ENDPOINT);
/** test(), skipped against a deployed stack: for a test that looks inside the service. */
export const localTest = REMOTE ? test.skip : test;
/** describe(), skipped against a deployed stack. */
export const localDescribe = REMOTE ? describe.skip : describe;
/** Whether the GraphQL API answers introspection (a deployed stack's is off unless the variable says otherwise). */
export const INTROSPECTION = !REMOTE || env.CAIRN_TEST_GRAPHQL_INTROSPECTION === 'true';

/** The second account of the local service. */
const OTHER = {
  name: 'other',
  accessKeyId: 'CAIRNOTHERKEY0000001',
  secretAccessKey: 'other-secret-0123456789012345678901234',
  apiToken: 'cairn_other_token_0123456789',
};

function required(name: string): string {
  const value = env[name];
  if (!value) throw new Error(`${name} is not set: a deployed target (CAIRN_TEST_S3_ENDPOINT is set) needs it`);
  return value;
}

function client(
  endpoint: string,
  region: string,
  credentials: { accessKeyId: string; secretAccessKey: string },
  extra: Partial<S3ClientConfig>,
): S3Client {
  return new S3Client({ endpoint, region, forcePathStyle: true, credentials, ...extra });
}

/**
 * The target of this run: the deployed stack the environment names, or a
 * new local service (`localEnv` adds to its environment) with a second
 * account and the S3 Lambda handler loaded over the same data.
 */
export async function apiTarget(localEnv: Record<string, string> = {}): Promise<ApiTarget> {
  if (REMOTE) {
    const s3 = required('CAIRN_TEST_S3_ENDPOINT').replace(/\/+$/, '');
    const region = env.CAIRN_TEST_REGION ?? 'us-east-1';
    // The S3 suites need no API keys and the gateway suites no domains, so
    // those are checked where they are used (apiKeyOf, publicHost).
    const account = {
      accessKeyId: required('CAIRN_TEST_ACCESS_KEY_ID'),
      secretAccessKey: required('CAIRN_TEST_SECRET_ACCESS_KEY'),
      bucket: env.CAIRN_TEST_BUCKET ?? 'default-bucket',
      apiKey: env.CAIRN_TEST_API_KEY ?? '',
    };
    const other = {
      accessKeyId: required('CAIRN_TEST_OTHER_ACCESS_KEY_ID'),
      secretAccessKey: required('CAIRN_TEST_OTHER_SECRET_ACCESS_KEY'),
      bucket: required('CAIRN_TEST_OTHER_BUCKET'),
      apiKey: env.CAIRN_TEST_OTHER_API_KEY ?? '',
    };
    return {
      name: 'deployed stack',
      endpoints: { s3, gateway: required('CAIRN_TEST_GATEWAY_URL').replace(/\/+$/, ''), graphql: required('CAIRN_TEST_GRAPHQL_URL') },
      domains: { storagePublic: env.CAIRN_TEST_STORAGE_PUBLIC_DOMAIN ?? '', bucketEndpoint: env.CAIRN_TEST_BUCKET_ENDPOINT_DOMAIN ?? '' },
      region,
      account,
      other,
      s3: (credentials = account, extra = {}) => client(s3, region, credentials, extra),
      async whenLocal() {},
      async close() {},
    };
  }
  // Collection off unless asked for: the local server collects under its
  // in-process upload gate, which does not see the Lambda door's uploads
  // (in AWS the collector takes the DynamoDB gate the Lambda functions hold).
  const service = await startTestService({ CAIRN_GC_INTERVAL: '0', ...localEnv });
  await service.services.accounts.createAccount(OTHER);
  Object.assign(process.env, service.env);
  const handler = (module: unknown) => (module as { handler: LambdaFn }).handler;
  const s3Lambda = handler(await import('../../functions/s3/handler.js'));
  const graphqlLambda = handler(await import('../../functions/graphql/handler.js'));
  const gatewayLambda = handler(await import('../../functions/gateway/handler.js'));
  const account = { accessKeyId: BOOT.accessKeyId, secretAccessKey: BOOT.secretAccessKey, bucket: 'default-bucket', apiKey: BOOT.apiToken };
  return {
    name: 'local service',
    endpoints: { s3: service.endpoints.s3, gateway: service.endpoints.gateway, graphql: service.endpoints.graphql },
    domains: { storagePublic: service.config.urls.storagePublicDomain, bucketEndpoint: service.config.urls.bucketEndpointDomain },
    region: service.config.region,
    account,
    other: {
      accessKeyId: OTHER.accessKeyId,
      secretAccessKey: OTHER.secretAccessKey,
      bucket: `${OTHER.name}-bucket`,
      apiKey: OTHER.apiToken,
    },
    s3: (credentials = account, extra = {}) => client(service.endpoints.s3, service.config.region, credentials, extra),
    local: service,
    s3Lambda,
    graphqlLambda,
    gatewayLambda,
    async whenLocal(check) {
      await check(service);
    },
    close: () => service.close(),
  };
}
