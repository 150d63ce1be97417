/**
 * Where the service's data is kept, as the configuration places it: the
 * one choice both compositions make alike (functions/aws/adapters.ts for a
 * Lambda function, functions/local/adapters.ts for the service on one
 * machine), so it sits beside the two adapter folders and neither of them
 * imports the other. A named block bucket puts the IPFS node's stores and
 * the deploy logs in S3, a named KMS key seals secrets with KMS; without
 * them the data directory keeps both and the local key seals, which is how
 * the test/aws suites run the Lambda handlers on this machine.
 *
 * Each store's code is imported only when the configuration asks for it:
 * a Lambda bundle puts what is imported here in chunks of its own, read
 * when the import runs (lib/functions.ts), so a function given a bucket
 * never loads the file stores and the IPFS node's code (Helia, the
 * blockstores) is read only when the node is first opened, which the
 * GraphQL function never does.
 */
import { join } from 'node:path';
import type { Config } from '../core/config.js';
import type { SecretSealer } from '../core/auth/secrets.js';
import type { IpfsNode } from '../core/ipfs/node.js';
import type { LogStore } from '../core/ports/log-store.js';
import { createSealer } from '../aws/kms-sealer.js';
import type { Mailer } from '../core/ports/mail.js';
import { createLogger } from '../core/logger.js';
import { smtpMailer } from './smtp-mailer.js';

/** Where the service's data is kept, wherever it runs: what the configuration names (a KMS key, a block bucket), the data directory otherwise. */
export interface DataStores {
  sealer: SecretSealer;
  openIpfs(): Promise<IpfsNode>;
  deployLogs: LogStore;
  /** Mail goes out the same way from either: over SMTP when CAIRN_SMTP_URL names a server, nowhere otherwise. */
  mailer: Mailer;
}

/**
 * The sealer, the IPFS node's stores and the deploy logs as the
 * configuration places them. The local server takes these too: given a
 * block bucket or a KMS key, it keeps its data there as a Lambda does.
 */
export async function configuredStores(config: Config): Promise<DataStores> {
  const { blockBucket, region } = config;
  return {
    sealer: await createSealer(config),
    openIpfs: blockBucket
      ? async () => (await import('../aws/s3-ipfs-stores.js')).createS3IpfsNode(blockBucket, region)
      : async () => (await import('../core/ipfs/node.js')).createIpfsNode(config),
    deployLogs: await createLogStore(config),
    mailer: smtpMailer(config.mail, createLogger(config.logLevel, { fn: 'mail' })),
  };
}

/** The stack's bucket in AWS, files under the data directory otherwise. */
async function createLogStore(config: Config): Promise<LogStore> {
  if (config.blockBucket) {
    const { S3Client } = await import('@aws-sdk/client-s3');
    const { S3LogStore } = await import('../aws/s3-log-store.js');
    return new S3LogStore(new S3Client({ region: config.region }), config.blockBucket);
  }
  const { FileLogStore } = await import('../local/file-log-store.js');
  return new FileLogStore(join(config.dataDir, 'deploy-logs'));
}
