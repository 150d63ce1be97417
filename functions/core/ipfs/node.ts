/**
 * The embedded Helia node: a filesystem blockstore and datastore under the
 * data directory locally, an S3 bucket in AWS. It runs without libp2p
 * networking (Helia "light"): it stores, pins and serves blocks; content is
 * reachable by CID through Cairn's gateway.
 */
import { join } from 'node:path';
import { createHeliaLight, type Helia } from 'helia';
import type { Blockstore } from 'interface-blockstore';
import type { Datastore } from 'interface-datastore';
import type { Config } from '../config.js';

export interface IpfsNode {
  helia: Helia;
  /** The raw blockstore: imports write here directly (Helia's own layer checks has() per put). */
  blockstore: Blockstore;
  stop(): Promise<void>;
}

async function stores(config: Config): Promise<{ blockstore: Blockstore; datastore: Datastore }> {
  if (config.blockBucket) {
    const { S3 } = await import('@aws-sdk/client-s3');
    const { S3Blockstore } = await import('blockstore-s3');
    const { S3Datastore } = await import('datastore-s3');
    const s3 = new S3({ region: config.region });
    return {
      blockstore: new S3Blockstore(s3, config.blockBucket, { createIfMissing: false }),
      datastore: new S3Datastore(s3, config.blockBucket, { path: 'datastore', createIfMissing: false }),
    };
  }
  const { FileBlockstore } = await import('./file-blockstore.js');
  const { FsDatastore } = await import('datastore-fs');
  return {
    blockstore: new FileBlockstore(join(config.dataDir, 'ipfs', 'blocks')),
    datastore: new FsDatastore(join(config.dataDir, 'ipfs', 'datastore')),
  };
}

export async function createIpfsNode(config: Config): Promise<IpfsNode> {
  const { blockstore, datastore } = await stores(config);
  const helia = createHeliaLight({ blockstore, datastore });
  await helia.start();
  return {
    helia,
    blockstore,
    stop: async () => {
      await helia.stop();
    },
  };
}
