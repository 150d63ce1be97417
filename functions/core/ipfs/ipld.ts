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
import { base32 } from 'multiformats/bases/base32';
import { CID } from 'multiformats/cid';
import { workSlices } from '../work-slices.js';

import { CODEC_NAMES, DAG_CBOR, DAG_JSON, isLinkingCodec, multihashOffset } from './ipld-codecs.js';

// The codes and their names live apart, without the codecs, for the callers that only tell codecs apart (ipld-codecs.ts).
export { CBOR, CODEC_NAMES, DAG_CBOR, DAG_JSON, isIpldCodec, isLinkingCodec, JSON_CODEC, multihashOffset } from './ipld-codecs.js';

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
 * The open arrays, maps and tags of a block being read token by token, and
 * the bounds on them: throws IpldBlockError when it nests past MAX_NESTING
 * or an array or map declares more entries than the bytes left can hold.
 */
class Shape {
  /** Items each open container still expects (Infinity: until a break, as JSON's do). */
  private readonly open: number[] = [];
  /** Items the open containers of known length still expect, together. */
  private owed = 0;
  constructor(
    private readonly code: number,
    private readonly length: number,
  ) {}

  /** Notes one token (`name` its type, `pos` where the reading stands after it); true once the block's one value is whole. */
  see(name: string, value: unknown, pos: number): boolean {
    const open = this.open;
    if (name === 'break') {
      if (open.pop() !== Infinity) throw new IpldBlockError(`not valid ${CODEC_NAMES[this.code]} (an unexpected break)`);
    } else {
      const top = open.length - 1;
      if (top >= 0 && open[top] !== Infinity) {
        open[top]!--;
        this.owed--;
      }
      const size = value as number;
      const items = name === 'array' ? size : name === 'map' ? size * 2 : name === 'tag' ? 1 : 0;
      if (name === 'array' || name === 'map' || name === 'tag') {
        if (open.length >= MAX_NESTING) throw new IpldBlockError(`it nests deeper than ${MAX_NESTING} levels`);
        open.push(items);
        if (items !== Infinity) this.owed += items;
      }
    }
    while (open.length && open[open.length - 1] === 0) open.pop();
    if (this.owed > this.length - pos)
      throw new IpldBlockError(`not valid ${CODEC_NAMES[this.code]} (it declares more entries than it holds)`);
    return open.length === 0;
  }
}

const JSON_OPTIONS = { allowIndefinite: true, allowUndefined: false, allowNaN: false, allowInfinity: false, strict: true };

/** The next token, or IpldBlockError for bytes that are none. */
function nextToken(code: number, tokens: CborTokenizer): Token {
  try {
    return tokens.next();
  } catch (err) {
    throw new IpldBlockError(`not valid ${CODEC_NAMES[code]} (${(err as Error).message})`);
  }
}

/**
 * Scans the block's tokens without building anything: throws IpldBlockError
 * when it nests past MAX_NESTING or an array or map declares more entries
 * than the bytes left can hold. The decoder that follows checks the rest.
 */
function checkShape(code: number, bytes: Uint8Array): void {
  const tokens = code === DAG_CBOR ? new CborTokenizer(bytes, dagCbor.decodeOptions) : new JsonTokenizer(bytes, JSON_OPTIONS);
  const shape = new Shape(code, bytes.length);
  while (!tokens.done()) {
    const token = nextToken(code, tokens);
    // One value per block: the decoder says so for what follows it.
    if (shape.see(token.type.name, token.value, tokens.pos())) return;
  }
}

/** A dag-json link's text (a multibase CID) as the CID's bytes. */
function linkBytes(text: string): Uint8Array {
  // base32, the default of every CIDv1 tool, without building a CID; any other base (a CIDv0's base58btc) through CID.parse.
  const bytes = text[0] === 'b' ? base32.decode(text) : CID.parse(text).bytes;
  if (multihashOffset(bytes) === undefined) throw new Error('not a CID');
  return bytes;
}

/** Tokens read between two looks at the clock in scanLinks. */
const TOKENS_PER_LOOK = 256;

/**
 * The links of a dag-cbor or dag-json block, as the CIDs' bytes, in
 * document order (repeats included), found in one pass over its tokens
 * within the bounds above, without decoding it: no value is built, nor a
 * CID object a link (a DAG walk needs only the CIDs' bytes, and building
 * each CID was most of the cost: decoding a 2 MiB block of 50,000 links
 * and walking its value took 100 to 700 ms of CPU in one go, nearly all of
 * it in the CIDs). Its work is linear in the block's size, and it gives
 * the event loop a turn every SLICE_MS (work-slices.ts).
 *
 * A link is what the codecs' decoders make one: in dag-cbor, tag 42 around
 * bytes that are 0x00 and a CID (a block may hold no other tag); in
 * dag-json, a map whose one key is `/` with a string value (the rules of
 * @ipld/dag-json's tokenizer: `{"/": {"bytes": "..."}}` is bytes, `/` with
 * any other value an ordinary map). Throws IpldBlockError for a block it
 * cannot read so; the codecs' stricter checks (canonical order, duplicate
 * keys) are the import's (decodeIpld), and what follows the block's one
 * value is not read. A dag-cbor link is a view into `bytes`.
 */
export async function scanLinks(code: number, bytes: Uint8Array, signal?: AbortSignal): Promise<Uint8Array[]> {
  if (!isLinkingCodec(code)) throw new IpldBlockError(`codec 0x${code.toString(16)} is not decoded here`);
  const invalid = (why: string) => new IpldBlockError(`not valid ${CODEC_NAMES[code]} (${why})`);
  const tokens = code === DAG_CBOR ? new CborTokenizer(bytes, dagCbor.decodeOptions) : new JsonTokenizer(bytes, JSON_OPTIONS);
  /** Tokens read ahead in dag-json and put back, the next on top. */
  const back: Token[] = [];
  const read = (): Token => {
    if (back.length) return back.pop()!;
    if (tokens.done()) throw invalid('it ends inside a value');
    return nextToken(code, tokens);
  };
  const is = (token: Token, name: string, value?: unknown) => token.type.name === name && (value === undefined || token.value === value);
  const shape = new Shape(code, bytes.length);
  const links: Uint8Array[] = [];
  const pause = workSlices();
  for (let count = 1; ; count++) {
    const token = read();
    let name = token.type.name;
    if (code === DAG_CBOR && name === 'tag') {
      if (token.value !== 42) throw invalid(`tag ${String(token.value)}; dag-cbor has only tag 42, a link`);
      const cid = read();
      const value = cid.value as Uint8Array;
      if (!is(cid, 'bytes') || value[0] !== 0 || multihashOffset(value.subarray(1)) === undefined) throw invalid('tag 42 holds no CID');
      links.push(value.subarray(1));
      name = 'link';
    } else if (code === DAG_JSON && name === 'map') {
      const key = read();
      if (is(key, 'string', '/')) {
        const value = read();
        if (is(value, 'string')) {
          if (!is(read(), 'break')) throw invalid('a link {"/": ...} with other keys');
          try {
            links.push(linkBytes(value.value as string));
          } catch (err) {
            throw invalid(`a link that is no CID: ${(err as Error).message}`);
          }
          name = 'link';
        } else if (is(value, 'map')) {
          const inner = read();
          if (is(inner, 'string', 'bytes')) {
            const data = read();
            if (!is(data, 'string') || !is(read(), 'break') || !is(read(), 'break')) throw invalid('malformed {"/": {"bytes": ...}}');
            name = 'bytes';
          } else back.push(inner, value, key);
        } else back.push(value, key);
      } else back.push(key);
    }
    if (shape.see(name, name === 'link' || name === 'bytes' ? 0 : token.value, tokens.pos())) return links;
    if (count % TOKENS_PER_LOOK === 0) {
      const paused = pause();
      if (paused) {
        await paused;
        signal?.throwIfAborted();
      }
    }
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
