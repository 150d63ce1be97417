/**
 * The S3-compatible endpoint: the S3 function and the REST API that
 * streams every request to it (lib/storage-api.ts). The function verifies
 * SigV4 itself, against the host and path the client signed, so its
 * methods have no authorizer (the part-staging resource, which bypasses
 * the function, has its own: lib/part-staging.ts).
 *
 * Made in the stack's own scope, not in a construct of their own: their
 * logical ids stay those of the stacks already deployed (a new id would
 * replace the API, and with it the endpoint clients were given).
 */
import type { Stack } from 'aws-cdk-lib';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { CairnData } from './data.js';
import { CairnFunction } from './functions.js';
import { acknowledgeBucketGrant, acknowledgeTableGrants } from './grant-acknowledgements.js';
import { REST_MAX_REQUEST_BODY, STORAGE_API_STAGE, STREAMING_TIMEOUT, StreamingRestApi } from './storage-api.js';

export interface S3EndpointProps {
  readonly data: CairnData;
  /** The functions' common environment (lib/stack-options.ts). */
  readonly environment: Record<string, string>;
}

export interface S3Endpoint {
  readonly function: NodejsFunction;
  readonly api: StreamingRestApi;
}

/**
 * The S3 function's CAIRN_S3_MIN_PART_SIZE from the `cairn:s3MinPartSize`
 * context value, or none (the function's default: 4 MiB here, the REST
 * API's largest body). A stack that the tiny-part S3 suites run against
 * takes `0` (docs/testing.md). Checked at synthesis in the config's own
 * form, since the function would refuse to start on a bad one.
 */
function minPartSizeOf(stack: Stack): Record<string, string> {
  const value: unknown = stack.node.tryGetContext('cairn:s3MinPartSize');
  if (value === undefined || value === null || value === '') return {};
  if (!/^(0+|0*[1-9]\d*\s*(|b|k|kib|m|mib|g|gib))$/i.test(String(value)))
    throw new Error(`cairn:s3MinPartSize must be a size such as 0, 64KiB or a number of bytes, got ${JSON.stringify(value)}`);
  return { CAIRN_S3_MIN_PART_SIZE: String(value) };
}

export function addS3Endpoint(stack: Stack, props: S3EndpointProps): S3Endpoint {
  const { tables, blockBucket, secretsKey } = props.data;
  // A GET streams for as long as the function runs (lib/storage-api.ts).
  const timeout = STREAMING_TIMEOUT;
  const s3 = new CairnFunction(stack, 'S3', {
    name: 's3',
    tracing: true,
    description: 'Cairn: S3-compatible storage endpoint',
    memorySize: 1024,
    timeout,
    // What one request through the REST API can carry to Lambda (lib/storage-api.ts).
    environment: { ...props.environment, CAIRN_MAX_REQUEST_BODY: String(REST_MAX_REQUEST_BODY), ...minPartSizeOf(stack) },
  }).function;

  tables.accounts.grantReadWriteData(s3);
  tables.objects.grantReadWriteData(s3);
  blockBucket.grantReadWrite(s3);
  secretsKey.grant(s3, 'kms:Encrypt', 'kms:Decrypt');
  acknowledgeTableGrants(s3, [tables.accounts, tables.objects]);
  acknowledgeBucketGrant(s3, blockBucket, 'readWrite');

  const api = new StreamingRestApi(stack, 'StorageApi', {
    handler: s3,
    restApiName: `${stack.stackName}-storage`,
    description: 'Cairn: S3-compatible storage endpoint',
    stageName: STORAGE_API_STAGE,
    integrationTimeout: timeout,
    errorShape: 's3',
    authorization:
      "The S3 function authenticates every request itself, with S3's SigV4 (header, presigned or streaming) against the storage key pairs Cairn issues, verified against the host and path the client signed; unsigned requests get only what S3 gives anonymous callers (public-read buckets and objects)",
  });
  return { function: s3, api };
}
