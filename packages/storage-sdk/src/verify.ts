/**
 * Checks bytes from a gateway against the CID they were asked for, by
 * rebuilding the UnixFS DAG the way it was most likely built and comparing
 * root multihashes (a CIDv1 and its CIDv0 share one).
 *
 * Cairn imports every file with Kubo's `ipfs add` defaults, so that profile
 * is tried first; the two other profiles Kubo and Helia users commonly
 * produce are tried only when it does not match. The Kubo profile is the
 * same definition the server imports (./kubo-profile.ts).
 */
import { CID } from 'multiformats/cid';
import { sha256 } from 'multiformats/hashes/sha2';
import { identity } from 'multiformats/hashes/identity';
import { equals } from 'multiformats/bytes';
import { importBytes, type ImporterOptions } from 'ipfs-unixfs-importer';
import { fixedSize } from 'ipfs-unixfs-importer/chunker';
import { balanced } from 'ipfs-unixfs-importer/layout';
import { BlackHoleBlockstore } from 'blockstore-core/black-hole';
import { kuboImportOptions } from './kubo-profile.js';

const RAW = 0x55;
const DAG_PB = 0x70;

const OTHER_PROFILES: Array<() => ImporterOptions> = [
  // `ipfs add --cid-version=1`: raw leaves, same chunks and width.
  () => ({ ...kuboImportOptions(), cidVersion: 1, rawLeaves: true }),
  // unixfs-v1-2025 (Kubo's newer profile, @helia/unixfs defaults): 1 MiB chunks, 1024 links.
  () => ({
    ...kuboImportOptions(),
    cidVersion: 1,
    rawLeaves: true,
    chunker: fixedSize({ chunkSize: 1048576 }),
    layout: balanced({ maxChildrenPerNode: 1024 }),
  }),
];

export type Verdict = 'match' | 'mismatch' | 'unverifiable';

async function rootOf(bytes: Uint8Array, options: ImporterOptions): Promise<CID> {
  // Only the root is needed: blocks are hashed and dropped, so memory does not double.
  const entry = await importBytes(bytes, new BlackHoleBlockstore(), options);
  return entry.cid;
}

export async function verifyBytes(cid: CID, bytes: Uint8Array): Promise<Verdict> {
  const { multihash } = cid;
  if (multihash.code === identity.code) {
    return cid.code === RAW && equals(multihash.digest, bytes) ? 'match' : cid.code === RAW ? 'mismatch' : 'unverifiable';
  }
  if (multihash.code !== sha256.code) return 'unverifiable';
  if (cid.code === RAW) {
    const digest = await sha256.digest(bytes);
    return equals(digest.bytes, multihash.bytes) ? 'match' : 'mismatch';
  }
  if (cid.code !== DAG_PB) return 'unverifiable';
  for (const profile of [kuboImportOptions, ...OTHER_PROFILES]) {
    const root = await rootOf(bytes, profile());
    if (equals(root.multihash.bytes, multihash.bytes)) return 'match';
  }
  return 'mismatch';
}
