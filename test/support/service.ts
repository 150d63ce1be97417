/**
 * Test fixtures: a real local service (embedded DynamoDB, IPFS node on disk,
 * three HTTP servers) in a temporary data directory, and clients for it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { loadConfig } from '../../functions/core/config.js';
import { startLocalService, type LocalService } from '../../functions/local/service.js';
import { BOOT, serviceEnv } from './service-env.js';

export { BOOT, freePort, serviceEnv } from './service-env.js';

export const LAMBDA_FUNCTION_NAME = 'cairn-test';

export interface TestService extends LocalService {
  dataDir: string;
  /**
   * The environment of a Lambda function of this service, for a handler
   * loaded in this process: Lambda's runtime (AWS_LAMBDA_FUNCTION_NAME
   * makes loadConfig choose it: the DynamoDB upload gate, the 4 MiB body
   * limit, GraphQL introspection off unless asked for, hashing inline) on
   * the same embedded DynamoDB and data directory. Its blocks stay in the
   * data directory, not an S3 block bucket: the two doors must share
   * blocks, and the local server has no S3 to keep them in offline.
   */
  env: Record<string, string>;
  s3(credentials?: { accessKeyId: string; secretAccessKey: string }, extra?: Partial<S3ClientConfig>): S3Client;
  close(): Promise<void>;
}

export async function startTestService(extraEnv: Record<string, string> = {}, dataDir?: string): Promise<TestService> {
  const dir = dataDir ?? (await mkdtemp(join(tmpdir(), 'cairn-test-')));
  const env = await serviceEnv(dir, extraEnv);
  // As the local server's config is read from its process's environment, so is the rule a deploy's clone follows
  // where the pipeline hands it none (functions/deploy-worker/steps/clone/): the two must agree here too.
  process.env.CAIRN_OUTBOUND_PRIVATE = env.CAIRN_OUTBOUND_PRIVATE;
  const service = await startLocalService(loadConfig(env));
  return {
    ...service,
    dataDir: dir,
    env: { ...env, DYNAMODB_ENDPOINT: service.config.dynamodb.endpoint!, AWS_LAMBDA_FUNCTION_NAME: LAMBDA_FUNCTION_NAME },
    s3(credentials = BOOT, extra = {}) {
      return new S3Client({
        endpoint: service.endpoints.s3,
        region: 'us-east-1',
        forcePathStyle: true,
        credentials,
        ...extra,
      });
    },
    async close() {
      await service.stop();
      if (!dataDir) await rm(dir, { recursive: true, force: true });
    },
  };
}
