/**
 * Pins follow object records: a CID is pinned while any object references it
 * (the objects table's reference items are the truth, see data/objects.ts),
 * and garbage collection reclaims the blocks of CIDs that lost their last
 * reference.
 *
 * Collection must never race an upload in flight: an upload's blocks exist,
 * unpinned, between the import and the pin, and an upload may also re-use
 * blocks a collection is about to delete. So every upload holds the gate
 * shared from the start of its import until its record is committed, and a
 * collection holds it exclusively. Locally one process owns the data
 * directory, so an in-process gate is exact; in AWS the gate lives in
 * DynamoDB (data/upload-gate.ts).
 */
import type { CID } from 'multiformats/cid';
import { parseCid } from './cid.js';
import type { IpfsNode } from './node.js';
import { pullDepthFirstWalker, type PrefixReader } from './import.js';

/** Uploads hold it shared from import to commit; garbage collection holds it alone. */
export interface UploadGate {
  /** Enters shared; returns the release function (idempotent). */
  enterShared(): Promise<() => void>;
  /** Runs `fn` with no upload in flight, or throws GateBusyError if that cannot be had now. */
  withExclusive<T>(fn: () => Promise<T>): Promise<T>;
  /** Uploads in flight in this process. */
  readonly uploadsInFlight: number;
}

export class GateBusyError extends Error {
  override name = 'GateBusyError';
}

/**
 * The gate in one process (the local server owns its data directory): a
 * shared/exclusive lock in which a waiting collection holds back new uploads,
 * so it does not starve.
 */
export class LocalUploadGate implements UploadGate {
  private shared = 0;
  private exclusive = false;
  private waitingExclusive = 0;
  private wakers: Array<() => void> = [];

  private wake() {
    const wakers = this.wakers;
    this.wakers = [];
    for (const w of wakers) w();
  }

  private wait(): Promise<void> {
    return new Promise((resolve) => this.wakers.push(resolve));
  }

  /** Enters shared; returns the release function (idempotent). */
  async enterShared(): Promise<() => void> {
    while (this.exclusive || this.waitingExclusive > 0) await this.wait();
    this.shared++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.shared--;
      if (this.shared === 0) this.wake();
    };
  }

  async withExclusive<T>(fn: () => Promise<T>): Promise<T> {
    this.waitingExclusive++;
    try {
      while (this.exclusive || this.shared > 0) await this.wait();
    } finally {
      this.waitingExclusive--;
    }
    this.exclusive = true;
    try {
      return await fn();
    } finally {
      this.exclusive = false;
      this.wake();
    }
  }

  get uploadsInFlight(): number {
    return this.shared;
  }
}

/** Pins the DAG under its own root pin (a block merely covered by another pin is not enough); resolves once the pin is on disk. */
export async function pinRoot(node: IpfsNode, cid: CID, signal?: AbortSignal): Promise<void> {
  const prefixes = 'readPrefix' in node.blockstore ? (node.blockstore as unknown as PrefixReader) : undefined;
  try {
    for await (const _ of node.helia.pins.add(cid, { signal, walker: pullDepthFirstWalker(prefixes) })) {
      // pins.add is lazy: iterating it walks the DAG and records the pin
    }
  } catch (err) {
    if ((err as Error).name !== 'AlreadyPinnedError') throw err;
  } finally {
    // Even a failed pin's records must be written before anything else relies on them.
    await node.pinsWritten?.();
  }
}

export async function isRootPinned(node: IpfsNode, cid: CID): Promise<boolean> {
  try {
    await node.helia.pins.get(cid);
    return true;
  } catch {
    return false;
  }
}

/**
 * Unpins the root (if pinned) and deletes every block of its DAG that no
 * other pin covers. The caller holds the gate exclusively and has checked
 * that no object references the CID.
 */
export async function unpinAndCollect(node: IpfsNode, cid: CID): Promise<number> {
  const dag: CID[] = [];
  if (await isRootPinned(node, cid)) {
    for await (const block of node.helia.pins.rm(cid)) dag.push(block);
  } else {
    // Never pinned (an upload that failed before committing): walk what exists.
    dag.push(...(await walkPresent(node, cid)));
  }
  // The records that unpin these blocks are on disk before any block goes.
  await node.pinsWritten?.();
  let deleted = 0;
  for (const block of dag) {
    if (await node.helia.pins.isPinned(block)) continue;
    if (await node.blockstore.has(block)) {
      await node.blockstore.delete(block);
      deleted++;
    }
  }
  return deleted;
}

/** The blocks of a DAG that are present, depth first; stops at missing blocks. */
async function walkPresent(node: IpfsNode, root: CID): Promise<CID[]> {
  const { decode } = await import('@ipld/dag-pb');
  const seen: CID[] = [];
  const stack: CID[] = [root];
  while (stack.length) {
    const cid = stack.pop()!;
    if (!(await node.blockstore.has(cid))) continue;
    seen.push(cid);
    if (cid.code !== 0x70) continue;
    const bytes = await collectBytes(node.blockstore.get(cid));
    for (const link of decode(bytes).Links) stack.push(link.Hash);
  }
  return seen;
}

async function collectBytes(value: unknown): Promise<Uint8Array> {
  if (value instanceof Uint8Array) return value;
  const resolved = await (value as Promise<Uint8Array> | AsyncIterable<Uint8Array>);
  if (resolved instanceof Uint8Array) return resolved;
  const parts: Uint8Array[] = [];
  for await (const p of resolved as AsyncIterable<Uint8Array>) parts.push(p);
  return Buffer.concat(parts);
}

export function cidOf(text: string): CID {
  const cid = parseCid(text);
  if (!cid) throw new Error(`not a CID: ${text}`);
  return cid;
}
