/**
 * IPLD blocks beside UnixFS's: dag-cbor (0x71) and dag-json (0x0129), whose
 * data links to other blocks (CBOR tag 42; `{"/": "<cid>"}` in JSON), and
 * plain cbor (0x51) and json (0x0200), which cannot link (the path gateway
 * spec: they work "exactly the same as raw", with their own Content-Type).
 *
 * A dag-cbor or dag-json block is someone else's data (a CAR they sent), and
 * the codecs' decoders (cborg underneath) recurse once per level of nesting
 * with no bound of their own: a 2 MiB block of `[[[[...` would take the call
 * stack down. So a block is first scanned token by token (cborg's
 * tokenizers, which are iterative), with an explicit count of open arrays
 * and maps: deeper than MAX_NESTING, or declaring more entries than it has
 * bytes left to hold them (each needs one at least), it is refused before
 * the decoder sees it. The scan and the decode are linear in the block's
 * size, and so is every walk of a decoded value here (an explicit stack, no
 * recursion): its links, and a path through its maps and lists.
 */
import * as dagCbor from '@ipld/dag-cbor';
import * as dagJson from '@ipld/dag-json';
import { Tokenizer as CborTokenizer, type Token } from 'cborg';
import { Tokenizer as JsonTokenizer } from 'cborg/json';
import { CID } from 'multiformats/cid';

import { CODEC_NAMES, DAG_CBOR, isLinkingCodec } from './ipld-codecs.js';

// The codes and their names live apart, without the codecs, for the callers that only tell codecs apart (ipld-codecs.ts).
export { CBOR, CODEC_NAMES, DAG_CBOR, DAG_JSON, isIpldCodec, isLinkingCodec, JSON_CODEC } from './ipld-codecs.js';

/**
 * Levels of arrays, maps and tags a block may nest. IPLD documents in use
 * (ATProto records, Filecoin's state, signed envelopes) nest a few dozen
 * levels; the decoders' recursion is two or three frames a level, so this
 * stays far from the call stack's limit wherever the decode is called.
 */
export const MAX_NESTING = 512;

/** A block that is not valid data of its codec, or nests past MAX_NESTING; the message says why. */
export class IpldBlockError extends Error {
  override name = 'IpldBlockError';
}

/** A decoded IPLD value: what @ipld/dag-cbor and @ipld/dag-json give. */
export type IpldValue = unknown;

/**
 * Scans the block's tokens without building anything: throws IpldBlockError
 * when it nests past MAX_NESTING or an array or map declares more entries
 * than the bytes left can hold. The decoder that follows checks the rest.
 */
function checkShape(code: number, bytes: Uint8Array): void {
  const tokens =
    code === DAG_CBOR
      ? new CborTokenizer(bytes, dagCbor.decodeOptions)
      : new JsonTokenizer(bytes, { allowIndefinite: true, allowUndefined: false, allowNaN: false, allowInfinity: false, strict: true });
  /** Items each open container still expects (Infinity: until a break, as JSON's do). */
  const open: number[] = [];
  /** Items the open containers of known length still expect, together. */
  let owed = 0;
  while (!tokens.done()) {
    let token: Token;
    try {
      token = tokens.next();
    } catch (err) {
      throw new IpldBlockError(`not valid ${CODEC_NAMES[code]} (${(err as Error).message})`);
    }
    const name = token.type.name;
    if (name === 'break') {
      if (open.pop() !== Infinity) throw new IpldBlockError(`not valid ${CODEC_NAMES[code]} (an unexpected break)`);
    } else {
      const top = open.length - 1;
      if (top >= 0 && open[top] !== Infinity) {
        open[top]!--;
        owed--;
      }
      const size = token.value as number;
      const items = name === 'array' ? size : name === 'map' ? size * 2 : name === 'tag' ? 1 : 0;
      if (name === 'array' || name === 'map' || name === 'tag') {
        if (open.length >= MAX_NESTING) throw new IpldBlockError(`it nests deeper than ${MAX_NESTING} levels`);
        open.push(items);
        if (items !== Infinity) owed += items;
      }
    }
    while (open.length && open[open.length - 1] === 0) open.pop();
    if (owed > bytes.length - tokens.pos())
      throw new IpldBlockError(`not valid ${CODEC_NAMES[code]} (it declares more entries than it holds)`);
    // One value per block: the decoder says so for what follows it.
    if (open.length === 0) return;
  }
}

/**
 * A dag-cbor or dag-json block, decoded within the bounds above; throws
 * IpldBlockError for one that is not valid (the codecs' own checks: strict
 * CBOR, canonical map order, no duplicate keys, CIDs that parse).
 */
export function decodeIpld(code: number, bytes: Uint8Array): IpldValue {
  if (!isLinkingCodec(code)) throw new IpldBlockError(`codec 0x${code.toString(16)} is not decoded here`);
  checkShape(code, bytes);
  try {
    return code === DAG_CBOR ? dagCbor.decode(bytes) : dagJson.decode(bytes);
  } catch (err) {
    throw new IpldBlockError(`not valid ${CODEC_NAMES[code]} (${(err as Error).message})`);
  }
}

/** The children of a list or map to look at, or none for anything else (a link, bytes, a scalar). */
function childrenOf(value: IpldValue): IpldValue[] {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array || CID.asCID(value)) return [];
  return Array.isArray(value) ? value : Object.values(value);
}

/** Every link in a decoded value, in document order (depth first), repeats included. */
export function linksIn(value: IpldValue): CID[] {
  const links: CID[] = [];
  const stack: IpldValue[] = [value];
  while (stack.length) {
    const next = stack.pop();
    const cid = CID.asCID(next);
    if (cid) {
      links.push(cid);
      continue;
    }
    const children = childrenOf(next);
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }
  return links;
}

/** Where a path's segments lead inside one decoded block. */
export type NodeStep =
  /** A link, reached after `consumed` segments (counted from the start of the whole path). */
  | { kind: 'link'; cid: CID; consumed: number }
  /** The path ends inside the block, at data that is not a link (`consumed` is then the path's length). */
  | { kind: 'end'; consumed: number }
  /** A segment names no key or index there. */
  | { kind: 'missing' };

const INDEX = /^(0|[1-9][0-9]{0,15})$/;

/**
 * Follows `segments` from `at` through a block's maps (by key) and lists
 * (by index), as IPLD pathing does, to the first link or the path's end.
 * A link at the block's root with segments left is followed too.
 */
export function followInNode(value: IpldValue, segments: readonly string[], at: number): NodeStep {
  let current = value;
  for (let i = at; ; i++) {
    const link = CID.asCID(current);
    if (link && (i > at || i < segments.length)) return { kind: 'link', cid: link, consumed: i };
    if (i === segments.length) return { kind: 'end', consumed: i };
    const segment = segments[i]!;
    if (current === null || typeof current !== 'object' || current instanceof Uint8Array || link) return { kind: 'missing' };
    if (Array.isArray(current)) {
      if (!INDEX.test(segment) || Number(segment) >= current.length) return { kind: 'missing' };
      current = current[Number(segment)];
    } else {
      if (!Object.hasOwn(current, segment)) return { kind: 'missing' };
      current = (current as Record<string, IpldValue>)[segment];
    }
  }
}
