/**
 * The integrity check (`npm run fsck`): every object of every bucket has
 * every block of its DAG, each block's bytes hash to its CID, and the pin
 * index (pins.ts) says exactly what the objects table references.
 *
 * It runs with the upload gate held exclusively (no upload or collection
 * meanwhile) and, unless asked only to look, repairs what it can:
 * - rebuilds every referenced root's block references (a missing one is
 *   added, a DAG with holes is pinned as DAMAGED so its remaining blocks stay);
 * - drops references whose root is no longer pinned, and root records no
 *   object references (they become collection candidates);
 * - deletes blocks whose bytes do not match their CID, so that uploading
 *   the content again stores them afresh (an existing block is never
 *   rewritten);
 * - marks objects whose content is damaged, so GET and HEAD answer a clear
 *   error instead of failing half-way, and clears the mark once whole again;
 * - gives collection back the candidates it had set aside;
 * - removes Helia's own pin records, which Cairn no longer reads.
 */
import { Key } from 'interface-datastore';
import { sha256 } from 'multiformats/hashes/sha2';
import { equals } from 'uint8arrays/equals';
import type { CID } from 'multiformats/cid';
import type { IntegrityServices, Services } from '../services.js';
import { ObjectReferences } from '../data/object-references.js';
import type { IpfsNode } from '../ipfs/node.js';
import { cidOf } from '../ipfs/cid.js';
import { blockKey, readBlock, walkDag } from './dag-walk.js';
import { INDEX_MARKER, listRefs, listRoots, pinRoot, rootState } from './pins.js';

const SHA2_256 = 0x12;
const IDENTITY = 0x00;
const DAG_PB = 0x70;
/** Helia's pin records (helia/src/pins.ts), written by Cairn before it kept its own index. */
const HELIA_PREFIXES = ['/pin/', '/pinned-block/'];

export interface DamagedObject {
  bucket: string;
  key: string;
  cid: string;
  problem: string;
}

export interface IntegrityReport {
  objects: number;
  /** Distinct CIDs referenced by objects and multipart parts. */
  cids: number;
  /** Distinct blocks read and hashed. */
  blocks: number;
  damaged: DamagedObject[];
  /** Blocks missing from a referenced DAG. */
  missingBlocks: string[];
  /** Blocks whose bytes do not hash to their CID (deleted when repairing). */
  corruptBlocks: string[];
  /** Block references whose root is not a referenced CID (dropped when repairing). */
  staleRefs: number;
  /** Root records no object references (made collection candidates when repairing). */
  staleRoots: number;
  /** Referenced CIDs whose pin records were missing or incomplete. */
  rebuiltPins: number;
  /** Set-aside collection candidates given back to collection. */
  requeued: number;
  /** Helia pin records removed. */
  heliaRecords: number;
  repaired: boolean;
}

/** What is wrong with the DAG under `root`, if anything: the first missing or corrupt block. */
async function verifyDag(
  node: IpfsNode,
  root: CID,
  blocks: Map<string, string | undefined>,
  report: IntegrityReport,
): Promise<string | undefined> {
  let problem: string | undefined;
  const missing: CID[] = [];
  const onDamage = (cid: CID, damage: 'missing' | 'undecodable') => damage === 'missing' && missing.push(cid);
  for await (const cid of walkDag(node.blockstore, root, { missing: 'skip', onDamage })) {
    const key = blockKey(cid);
    if (!blocks.has(key)) {
      blocks.set(key, await verifyBlock(node, cid));
      report.blocks++;
      if (blocks.get(key)) report.corruptBlocks.push(cid.toString());
    }
    problem ??= blocks.get(key);
  }
  for (const cid of missing) {
    const key = `missing:${blockKey(cid)}`;
    if (!blocks.has(key)) {
      blocks.set(key, undefined);
      report.missingBlocks.push(cid.toString());
    }
  }
  return missing.length ? `block ${missing[0]} is missing` : problem;
}

async function verifyBlock(node: IpfsNode, cid: CID): Promise<string | undefined> {
  const { code, digest } = cid.multihash;
  if (code === IDENTITY) return undefined;
  if (code !== SHA2_256) return `block ${cid} uses hash 0x${code.toString(16)}, which Cairn does not write`;
  const bytes = await readBlock(node.blockstore, cid);
  const actual = await sha256.digest(bytes);
  return equals(actual.digest, digest) ? undefined : `block ${cid} does not match its CID`;
}

/**
 * Makes sure the pin index covers every referenced CID: a data directory
 * written before Cairn kept its own index has Helia's records only, and
 * collecting there would take blocks that objects still use. Run under the
 * gate held exclusively; cheap once done (one record says so).
 */
export async function ensureIndexed(services: Pick<Services, 'db' | 'logger'>, node: IpfsNode): Promise<void> {
  if (await node.datastore.has(INDEX_MARKER)) return;
  for (const cid of (await new ObjectReferences(services.db).referencedCids()).keys()) {
    const missing = await pinRoot(node, cidOf(cid), { tolerateMissing: true });
    if (missing.length)
      services.logger.error('a referenced DAG has missing blocks; run npm run fsck', { cid, missing: missing.map(String) });
  }
  await node.datastore.put(INDEX_MARKER, new Uint8Array(0));
  await node.pinsWritten?.();
}

export async function checkIntegrity(services: IntegrityServices, options: { repair: boolean }): Promise<IntegrityReport> {
  const report: IntegrityReport = {
    objects: 0,
    cids: 0,
    blocks: 0,
    damaged: [],
    missingBlocks: [],
    corruptBlocks: [],
    staleRefs: 0,
    staleRoots: 0,
    rebuiltPins: 0,
    requeued: 0,
    heliaRecords: 0,
    repaired: options.repair,
  };
  const node = await services.ipfs();
  const { datastore } = node;
  const references = new ObjectReferences(services.db);
  await services.gate.withExclusive(async () => {
    const referenced = await references.referencedCids();
    report.cids = referenced.size;
    const blocks = new Map<string, string | undefined>();
    const problems = new Map<string, string | undefined>();
    const referencedRoots = new Set<string>();
    for (const text of referenced.keys()) {
      const cid = cidOf(text);
      referencedRoots.add(cid.toV1().toString());
      problems.set(text, await verifyDag(node, cid, blocks, report));
    }

    for await (const record of services.objects.allRecords()) {
      report.objects++;
      const problem = problems.get(record.cid) ?? (referenced.has(record.cid) ? undefined : 'its CID is not referenced');
      if (problem) report.damaged.push({ bucket: record.bucket, key: record.key, cid: record.cid, problem });
      if (options.repair && problem !== record.damaged) await services.objects.markDamaged(record.bucket, record.key, record.cid, problem);
    }
    const { repair } = options;
    if (repair) for (const text of report.corruptBlocks) await node.blockstore.delete(cidOf(text));
    for (const text of referenced.keys()) {
      const cid = cidOf(text);
      const before = await rootState(datastore, cid);
      if (!repair) {
        if (before !== 'pinned' || problems.get(text)) report.rebuiltPins++;
        continue;
      }
      const missing = await pinRoot(node, cid, { force: true, tolerateMissing: true });
      if (before !== (missing.length ? 'damaged' : 'pinned')) report.rebuiltPins++;
    }
    await node.pinsWritten?.();
    const pinnedRoots = new Set<string>();
    for await (const { root } of listRoots(datastore)) {
      pinnedRoots.add(root);
      if (referencedRoots.has(root)) continue;
      report.staleRoots++;
      const cid = cidOf(root);
      if (repair) await services.objects.addCandidate((cid.code === DAG_PB ? cid.toV0() : cid).toString());
    }
    if (!repair) for (const root of referencedRoots) pinnedRoots.add(root); // what a repair would pin
    for await (const { root, key } of listRefs(datastore)) {
      if (pinnedRoots.has(root)) continue;
      report.staleRefs++;
      if (repair) await datastore.delete(key);
    }
    for (const prefix of HELIA_PREFIXES) {
      for await (const key of datastore.queryKeys({ prefix })) {
        report.heliaRecords++;
        if (repair) await datastore.delete(new Key(key.toString()));
      }
    }
    for (const { cid } of await references.quarantined()) {
      report.requeued++;
      if (repair) await references.requeueQuarantined(cid);
    }
    if (!repair) return;
    await datastore.put(INDEX_MARKER, new Uint8Array(0));
    await node.pinsWritten?.();
  });
  return report;
}
