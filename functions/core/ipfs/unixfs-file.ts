/**
 * Decodes the one kind of dag-pb block a file read meets below its root: a
 * UnixFS file (or raw) node, its data and its links with their block sizes.
 *
 * The exporter decodes blocks just as well, but fetches each one through
 * it-to-buffer, which copies every block once more (a 256 KiB allocation
 * per block on top of the read); reading a 1 GiB file that way allocated
 * 2 GiB. Checked against the exporter in test/unit/unixfs-file.test.ts.
 */
import { CID } from 'multiformats/cid';

export interface FileNode {
  /** Bytes held by this node itself (a leaf's chunk), if any. */
  data?: Uint8Array;
  /** Children in order, with the number of file bytes under each. */
  links: Array<{ cid: CID; fileSize: number }>;
  /** The UnixFS filesize field: the bytes of the whole subtree. */
  fileSize?: number;
}

export class MalformedBlockError extends Error {
  override name = 'MalformedBlockError';
}

const UNIXFS_RAW = 0;
const UNIXFS_FILE = 2;

class Reader {
  at = 0;
  constructor(readonly bytes: Uint8Array) {}
  get done(): boolean {
    return this.at >= this.bytes.length;
  }
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      if (this.at >= this.bytes.length) throw new MalformedBlockError('truncated varint');
      const b = this.bytes[this.at++]!;
      value += (b & 0x7f) * scale;
      if (b < 0x80) return value;
      scale *= 128;
    }
    throw new MalformedBlockError('varint too long');
  }
  bytesField(): Uint8Array {
    const length = this.varint();
    const end = this.at + length;
    if (end > this.bytes.length) throw new MalformedBlockError('truncated field');
    const out = this.bytes.subarray(this.at, end);
    this.at = end;
    return out;
  }
  skip(wireType: number): void {
    if (wireType === 0) this.varint();
    else if (wireType === 2) this.bytesField();
    else if (wireType === 1) this.at += 8;
    else if (wireType === 5) this.at += 4;
    else throw new MalformedBlockError(`unsupported wire type ${wireType}`);
    if (this.at > this.bytes.length) throw new MalformedBlockError('truncated field');
  }
}

function decodeLink(bytes: Uint8Array): CID {
  const r = new Reader(bytes);
  let hash: Uint8Array | undefined;
  while (!r.done) {
    const key = r.varint();
    if (key >>> 3 === 1 && (key & 7) === 2) hash = r.bytesField();
    else r.skip(key & 7);
  }
  if (!hash) throw new MalformedBlockError('link without a hash');
  return CID.decode(hash);
}

/** Decodes a dag-pb block that must be a UnixFS file or raw node. */
export function decodeFileNode(block: Uint8Array): FileNode {
  const node = new Reader(block);
  const cids: CID[] = [];
  let unixfs: Uint8Array | undefined;
  while (!node.done) {
    const key = node.varint();
    const field = key >>> 3;
    if (field === 2 && (key & 7) === 2) cids.push(decodeLink(node.bytesField()));
    else if (field === 1 && (key & 7) === 2) unixfs = node.bytesField();
    else node.skip(key & 7);
  }
  if (!unixfs) throw new MalformedBlockError('dag-pb node without UnixFS data');
  const r = new Reader(unixfs);
  let type: number | undefined;
  let data: Uint8Array | undefined;
  let fileSize: number | undefined;
  const sizes: number[] = [];
  while (!r.done) {
    const key = r.varint();
    const field = key >>> 3;
    const wire = key & 7;
    if (field === 1 && wire === 0) type = r.varint();
    else if (field === 2 && wire === 2) data = r.bytesField();
    else if (field === 3 && wire === 0) fileSize = r.varint();
    else if (field === 4 && wire === 0) sizes.push(r.varint());
    else if (field === 4 && wire === 2) {
      const packed = new Reader(r.bytesField());
      while (!packed.done) sizes.push(packed.varint());
    } else r.skip(wire);
  }
  if (type !== UNIXFS_FILE && type !== UNIXFS_RAW) throw new MalformedBlockError(`UnixFS type ${type} is not a file`);
  if (sizes.length !== cids.length) throw new MalformedBlockError(`${cids.length} links but ${sizes.length} block sizes`);
  return { data, fileSize, links: cids.map((cid, i) => ({ cid, fileSize: sizes[i]! })) };
}

/**
 * A dag-pb block read as far as a path walk needs: its Data field (the
 * UnixFS message) and where each link's bytes lie, none of them decoded
 * yet. A directory of thousands of entries is looked up by decoding the
 * few links a binary search visits, not all of them into CIDs and strings.
 */
export interface DagPbView {
  block: Uint8Array;
  /** PBNode.Data, if the block has it. */
  data?: Uint8Array;
  /** Link i's bytes are `block[starts[i], ends[i])`. */
  starts: number[];
  ends: number[];
}

export function viewDagPb(block: Uint8Array): DagPbView {
  const r = new Reader(block);
  const starts: number[] = [];
  const ends: number[] = [];
  let data: Uint8Array | undefined;
  while (!r.done) {
    const key = r.varint();
    const field = key >>> 3;
    if (field === 2 && (key & 7) === 2) {
      const length = r.varint();
      const end = r.at + length;
      if (end > block.length) throw new MalformedBlockError('truncated link');
      starts.push(r.at);
      ends.push(end);
      r.at = end;
    } else if (field === 1 && (key & 7) === 2) data = r.bytesField();
    else r.skip(key & 7);
  }
  return { block, data, starts, ends };
}

/** Link i's name: its bytes' start and end in the block (equal for a link without one). */
function nameSpan(view: DagPbView, i: number): [number, number] {
  const r = new Reader(view.block);
  r.at = view.starts[i]!;
  const end = view.ends[i]!;
  let span: [number, number] = [r.at, r.at];
  while (r.at < end) {
    const key = r.varint();
    if (key >>> 3 === 2 && (key & 7) === 2) {
      const length = r.varint();
      if (r.at + length > end) throw new MalformedBlockError('truncated link name');
      span = [r.at, r.at + length];
      r.at += length;
    } else r.skip(key & 7);
  }
  if (r.at !== end) throw new MalformedBlockError('truncated link');
  return span;
}

/** Link i's name as bytes (a view of the block). */
export function linkName(view: DagPbView, i: number): Uint8Array {
  const [start, end] = nameSpan(view, i);
  return view.block.subarray(start, end);
}

/** Link i's CID. */
export function linkCid(view: DagPbView, i: number): CID {
  return decodeLink(view.block.subarray(view.starts[i]!, view.ends[i]!));
}

/** The bytes `a` against `b`, as dag-pb sorts link names. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** Below this many links a directory is scanned in order (as the exporter does); above, binary searched. */
const SCAN_LINKS = 16;

/**
 * The index of the first link named `name`, or -1. Links are sorted by
 * name bytes (the dag-pb spec asks it of every encoder, and Kubo's and
 * import-directory.ts's directories are), so a large directory is binary
 * searched; a block whose links are not in order is still looked through
 * in full before a name is called missing.
 */
export function findLink(view: DagPbView, name: Uint8Array): number {
  const count = view.starts.length;
  const scan = () => {
    for (let i = 0; i < count; i++) if (compareBytes(linkName(view, i), name) === 0) return i;
    return -1;
  };
  if (count <= SCAN_LINKS) return scan();
  let lo = 0;
  let hi = count;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareBytes(linkName(view, mid), name) < 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo < count && compareBytes(linkName(view, lo), name) === 0) return lo;
  return scan();
}

/** UnixFS Data types, as unixfs.proto numbers them. */
export const UnixfsType = { raw: 0, directory: 1, file: 2, metadata: 3, symlink: 4, hamtShard: 5 } as const;

/** A UnixFS Data message's fields that reading and path walking use. */
export interface UnixfsData {
  type: number;
  data?: Uint8Array;
  blockSizes: number[];
  fanout?: number;
  hashType?: number;
}

/** Decodes the UnixFS message of a dag-pb node (its Data field). */
export function decodeUnixfs(bytes: Uint8Array): UnixfsData {
  const r = new Reader(bytes);
  let type: number | undefined;
  let data: Uint8Array | undefined;
  let fanout: number | undefined;
  let hashType: number | undefined;
  const blockSizes: number[] = [];
  while (!r.done) {
    const key = r.varint();
    const field = key >>> 3;
    const wire = key & 7;
    if (field === 1 && wire === 0) type = r.varint();
    else if (field === 2 && wire === 2) data = r.bytesField();
    else if (field === 4 && wire === 0) blockSizes.push(r.varint());
    else if (field === 4 && wire === 2) {
      const packed = new Reader(r.bytesField());
      while (!packed.done) blockSizes.push(packed.varint());
    } else if (field === 5 && wire === 0) hashType = r.varint();
    else if (field === 6 && wire === 0) fanout = r.varint();
    else r.skip(wire);
  }
  if (type === undefined || type < 0 || type > 5) throw new MalformedBlockError(`UnixFS type ${type} is not one of unixfs.proto's`);
  return { type, data, blockSizes, fanout, hashType };
}
