/**
 * Reading a CAR someone sends (POST /imports/car): CARv1 as it streams in,
 * its one root, then each block checked against its CID before anyone may
 * store it. @ipld/car's decoder parses; what it leaves to its caller is
 * done here:
 * - a block is never longer than MAX_BLOCK_BYTES, checked from its
 *   section's length prefix before it is read (the decoder would otherwise
 *   gather a section of any declared length in memory);
 * - the header names exactly one root, of a codec below, hashed with sha2-256;
 * - every block is dag-pb, raw, dag-cbor, dag-json, cbor or json (what the
 *   gateway, pinning and collection follow: ipld.ts) and hashed with
 *   sha2-256, or an identity CID whose digest is the block itself; its
 *   bytes must hash to its CID, and a dag-pb, dag-cbor or dag-json block
 *   must decode (the latter two within ipld.ts's bounds on nesting: a
 *   block that would take a decoder's recursion down is refused here, so
 *   no walk of a stored DAG ever meets one). Plain cbor and json blocks
 *   are served as they are, like raw ones (the path gateway spec: "Works
 *   exactly the same as `raw`"), and are not decoded.
 * A CAR that fails any of these is a CarImportError, whose message is one
 * sentence for the client (a CARv2 is refused: its index is of no use
 * here, and a CARv1 is what any tool writes); errors of the byte source itself (a client gone,
 * a body over its limit) pass through as they are.
 *
 * A body that is all in memory already (the Lambda door's, or a fast
 * client's) is read without waiting for anything, and hashing its blocks
 * is the request's CPU work: the event loop gets a turn every few
 * milliseconds of it (work-slices.ts).
 */
import { asyncIterableReader, readBlockHead, readHeader } from '@ipld/car/decoder';
import { decode as decodeDagPb } from '@ipld/dag-pb';
import { CID } from 'multiformats/cid';
import { sha256 } from 'multiformats/hashes/sha2';
import { equals } from 'uint8arrays/equals';
import { workSlices } from '../work-slices.js';
import { CODEC_NAMES, decodeIpld, IpldBlockError, isIpldCodec, isLinkingCodec } from './ipld.js';
import { CarImportError } from './car-import-error.js';

const DAG_PB = 0x70;
const RAW = 0x55;
const SHA2_256 = 0x12;
const IDENTITY = 0x00;

/**
 * The largest block (or header) taken. Kubo refuses blocks over 2 MiB
 * (bitswap's limit), and builds none over 1 MiB with its defaults.
 */
export const MAX_BLOCK_BYTES = 2 * 1024 * 1024;

export { CarImportError };

/** A byte source's own failure (the client went away, the body passed its limit): never taken for a malformed CAR. */
class SourceFailure {
  constructor(readonly error: unknown) {}
}

export interface CarBlock {
  cid: CID;
  bytes: Uint8Array;
}

export interface VerifiedCar {
  /** The header's one root. */
  root: CID;
  /** The blocks in the order sent, each verified against its CID (read once). */
  blocks: AsyncIterable<CarBlock>;
}

const hex = (n: number) => `0x${n.toString(16)}`;

/** The codecs of the blocks taken, by name, for the messages. */
const STORED = 'dag-pb, raw, dag-cbor, dag-json, cbor and json';
const stored = (code: number) => code === DAG_PB || code === RAW || isIpldCodec(code);

/**
 * Why a CID cannot be the root of a site's deploy, or undefined when it can:
 * a site is a UnixFS directory or file (`deployCid`).
 */
export function rootProblem(cid: CID): string | undefined {
  if (cid.code !== DAG_PB && cid.code !== RAW) return `the root ${cid} has codec ${hex(cid.code)}; a root must be dag-pb or raw`;
  return hashProblem(cid);
}

function hashProblem(cid: CID): string | undefined {
  if (cid.multihash.code !== SHA2_256) return `the root ${cid} uses hash ${hex(cid.multihash.code)}; a root must be hashed with sha2-256`;
  return undefined;
}

/** Why a CID cannot be the root of an imported CAR (any DAG the gateway serves), or undefined when it can. */
export function importRootProblem(cid: CID): string | undefined {
  if (!stored(cid.code)) return `the root ${cid} has codec ${hex(cid.code)}; a root must be ${STORED.replace(' and ', ' or ')}`;
  return hashProblem(cid);
}

/** Checks one block against its CID; throws CarImportError naming it. */
export async function verifyBlock(cid: CID, bytes: Uint8Array): Promise<void> {
  if (!stored(cid.code)) throw new CarImportError(`block ${cid} has codec ${hex(cid.code)}; this service stores ${STORED} blocks only`);
  const { code, digest } = cid.multihash;
  if (code === SHA2_256) {
    if (digest.length !== 32 || !equals((await sha256.digest(bytes)).digest, digest))
      throw new CarImportError(`block ${cid} does not match its content`);
  } else if (code === IDENTITY) {
    if (!equals(digest, bytes)) throw new CarImportError(`block ${cid} does not match its content`);
  } else {
    throw new CarImportError(`block ${cid} uses hash ${hex(code)}; only sha2-256 (and identity) CIDs are accepted`);
  }
  if (cid.code === DAG_PB) {
    try {
      decodeDagPb(bytes);
    } catch (err) {
      throw new CarImportError(`block ${cid} is not valid dag-pb (${(err as Error).message})`);
    }
  }
  if (isLinkingCodec(cid.code)) {
    try {
      decodeIpld(cid.code, bytes);
    } catch (err) {
      if (!(err instanceof IpldBlockError)) throw err;
      throw new CarImportError(`block ${cid} is refused as ${CODEC_NAMES[cid.code]}: ${err.message}`);
    }
  }
}

/**
 * Reads a CARv1 from `source`: resolves once the header is read and its
 * root checked; the blocks follow as they arrive. Throws CarImportError for
 * a CAR that is not acceptable, at the header or at the block that makes it so.
 */
export async function readVerifiedCar(source: AsyncIterable<Uint8Array>): Promise<VerifiedCar> {
  async function* guarded(): AsyncGenerator<Uint8Array> {
    try {
      for await (const chunk of source) yield chunk;
    } catch (err) {
      throw new SourceFailure(err);
    }
  }
  const base = asyncIterableReader(guarded());
  const reader = {
    upTo: (length: number) => base.upTo(length),
    exactly(length: number, seek?: boolean) {
      if (!Number.isSafeInteger(length) || length < 0)
        throw new CarImportError('the body is not a valid CAR (a section length is malformed)');
      if (length > MAX_BLOCK_BYTES)
        throw new CarImportError(`the CAR has a section of ${length} bytes or more; a block may be at most 2 MiB`);
      return base.exactly(length, seek);
    },
    seek: (length: number) => base.seek(length),
    get pos() {
      return base.pos;
    },
  };
  let roots: CID[];
  try {
    roots = (await readHeader(reader, 1)).roots;
  } catch (err) {
    throw carError(err);
  }
  if (roots.length !== 1) throw new CarImportError(`the CAR header must name exactly one root; it names ${roots.length}`);
  const root = roots[0]!;
  const problem = importRootProblem(root);
  if (problem) throw new CarImportError(problem);
  async function* blocks(): AsyncGenerator<CarBlock> {
    const pause = workSlices();
    for (;;) {
      let block: CarBlock;
      try {
        if ((await reader.upTo(8)).length === 0) return;
        const head = await readBlockHead(reader);
        block = { cid: CID.asCID(head.cid) ?? CID.decode(head.cid.bytes), bytes: await reader.exactly(head.blockLength, true) };
      } catch (err) {
        throw carError(err);
      }
      await verifyBlock(block.cid, block.bytes);
      await pause();
      yield block;
    }
  }
  return { root, blocks: blocks() };
}

/** The decoder's failure in the client's words; a source's own failure as it was. */
function carError(err: unknown): unknown {
  if (err instanceof SourceFailure) return err.error;
  if (err instanceof CarImportError) return err;
  const message = (err as Error)?.message ?? String(err);
  const version = /Invalid CAR version: (\d+)/.exec(message);
  if (version) return new CarImportError(`the body is a CAR of version ${version[1]}; send a CARv1`);
  if (/end of data/i.test(message)) return new CarImportError('the body ends before the CAR does (it is empty or cut short)');
  return new CarImportError(`the body is not a valid CARv1 (${message.replace(/\.$/, '')})`);
}
