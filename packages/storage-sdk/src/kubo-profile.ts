/**
 * The importer options that make a CID equal what Kubo's `ipfs add` prints
 * with its defaults (the unixfs-v0-2015 profile): CIDv0, dag-pb leaves,
 * 256 KiB chunks, balanced DAGs of 174 links. This is the one definition:
 * the server (functions/core/ipfs/cid.ts and its importers) imports it from
 * here, and the SDK checks downloads with it. It lives in the SDK because
 * the SDK must build and ship on its own (it cannot import server code),
 * while the server can import a file of the SDK's; it depends only on
 * ipfs-unixfs-importer, a dependency of both.
 */
import type { ImporterOptions } from 'ipfs-unixfs-importer';
import { fixedSize } from 'ipfs-unixfs-importer/chunker';
import { balanced } from 'ipfs-unixfs-importer/layout';

/** Kubo's chunk: 256 KiB. */
export const KUBO_CHUNK_SIZE = 262144;
/** Links per node of Kubo's balanced file DAG. */
export const KUBO_MAX_CHILDREN = 174;
/** A directory becomes a HAMT shard when its links would take more than this many bytes (Kubo's rule). */
export const KUBO_SHARD_SPLIT_THRESHOLD = 262144;

/** Importer options that reproduce `ipfs add` (CIDv0, dag-pb leaves, 256 KiB chunks, 174 links). */
export function kuboImportOptions(): ImporterOptions {
  return {
    cidVersion: 0,
    rawLeaves: false,
    leafType: 'file',
    reduceSingleLeafToSelf: true,
    chunker: fixedSize({ chunkSize: KUBO_CHUNK_SIZE }),
    layout: balanced({ maxChildrenPerNode: KUBO_MAX_CHILDREN }),
    shardSplitThresholdBytes: KUBO_SHARD_SPLIT_THRESHOLD,
    shardSplitStrategy: 'links-bytes',
    shardFanoutBits: 8,
    wrapWithDirectory: false,
  };
}
