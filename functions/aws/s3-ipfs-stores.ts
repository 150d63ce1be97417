/**
 * The IPFS node's stores in AWS: blocks and the node's datastore (pin
 * records, core/storage/pins.ts) in the stack's bucket (CAIRN_BLOCK_BUCKET),
 * through blockstore-s3 and datastore-s3. The SDK and both packages are
 * imported only when a node is opened: a function that never reads blocks
 * (the GraphQL API) never loads them.
 */
import type { Key, KeyQuery } from 'interface-datastore';
import { openIpfsNode, PinNotFoundError, type IpfsNode, type IpfsStores } from '../core/ipfs/node.js';

export async function s3IpfsStores(bucket: string, region: string): Promise<IpfsStores> {
  const { S3 } = await import('@aws-sdk/client-s3');
  const { S3Blockstore } = await import('blockstore-s3');
  const { S3Datastore } = await import('datastore-s3');
  const s3 = new S3({ region });
  // datastore-s3 knows a missing key by `statusCode` 404, which SDK v3
  // errors no longer carry: it reports GetFailedError("NoSuchKey: ..."),
  // and pinning, which asks for absent records, failed on it. It also
  // takes a listing without `Contents` (S3's answer when nothing has the
  // prefix) for an error, "Not found": a query that matches nothing
  // yields nothing here.
  class S3PinDatastore extends S3Datastore {
    override async *_allKeys(q: KeyQuery, options?: { signal?: AbortSignal }): AsyncGenerator<Key> {
      try {
        yield* super._allKeys(q, options);
      } catch (err) {
        if ((err as Error).name === 'GetFailedError' && /\bNot found$/.test((err as Error).message)) return;
        throw err;
      }
    }

    override async get(key: Key, options?: { signal?: AbortSignal }): Promise<Uint8Array> {
      try {
        return await super.get(key, options);
      } catch (err) {
        if ((err as Error).name === 'GetFailedError' && /^(NoSuchKey|NotFound)\b/.test((err as Error).message))
          throw new PinNotFoundError((err as Error).message);
        throw err;
      }
    }
  }
  return {
    blockstore: new S3Blockstore(s3, bucket, { createIfMissing: false }),
    datastore: new S3PinDatastore(s3, bucket, { path: 'datastore', createIfMissing: false }),
  };
}

/** A node of this invocation's own on the bucket (nothing local to share: every instance reads the same bucket). */
export async function createS3IpfsNode(bucket: string, region: string): Promise<IpfsNode> {
  return openIpfsNode(await s3IpfsStores(bucket, region));
}
