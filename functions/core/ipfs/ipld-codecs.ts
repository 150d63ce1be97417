/**
 * The IPLD codecs served and stored beside dag-pb and raw, by code and
 * name, without their encoders and decoders (ipld.ts, which loads cborg and
 * both codecs). Telling a block's codec from its CID is on the path of
 * every object read and copy; decoding a dag-cbor or dag-json block is
 * rare, so the modules that only tell codecs apart on their common path
 * (core/ipfs/paths.ts, core/storage/dag-walk.ts) import this (with
 * multihashOffset, which the walk reads its links' block keys with), and ipld.ts
 * only where such a block is met: the S3 function's start-up then carries
 * no CBOR or JSON codec (test/infra/cold-bundles.test.ts).
 */

export const DAG_CBOR = 0x71;
export const DAG_JSON = 0x0129;
export const CBOR = 0x51;
export const JSON_CODEC = 0x0200;

/** The codecs of IPLD data served and stored beside dag-pb and raw. */
export const isIpldCodec = (code: number): boolean => code === DAG_CBOR || code === DAG_JSON || code === CBOR || code === JSON_CODEC;

/** The codecs whose blocks may link to others, and so are decoded to be walked. */
export const isLinkingCodec = (code: number): boolean => code === DAG_CBOR || code === DAG_JSON;

/** The multicodec names, as the specs and the HTML page name them. */
export const CODEC_NAMES: Readonly<Record<number, string>> = {
  [DAG_CBOR]: 'dag-cbor',
  [DAG_JSON]: 'dag-json',
  [CBOR]: 'cbor',
  [JSON_CODEC]: 'json',
};

/**
 * An unsigned varint at `at` in `bytes`: its value and where the next field
 * starts, or undefined when it is cut short or longer than a safe integer.
 */
function varint(bytes: Uint8Array, at: number): { value: number; next: number } | undefined {
  let value = 0;
  for (let i = at, shift = 1; i < bytes.length && i - at < 7; i++, shift *= 128) {
    value += (bytes[i]! & 0x7f) * shift;
    if (bytes[i]! < 0x80) return { value, next: i + 1 };
  }
  return undefined;
}

/**
 * Where a CID's multihash starts in its binary form (0 for a CIDv0, which
 * is a bare sha2-256 multihash), or undefined for bytes that are not one
 * whole CID: the checks CID.decode makes of the bytes, without building one.
 */
export function multihashOffset(bytes: Uint8Array): number | undefined {
  let start = 0;
  if (!(bytes.length === 34 && bytes[0] === 0x12 && bytes[1] === 0x20)) {
    const version = varint(bytes, 0);
    if (version?.value !== 1) return undefined;
    const codec = varint(bytes, version.next);
    if (!codec) return undefined;
    start = codec.next;
  }
  const code = varint(bytes, start);
  const length = code && varint(bytes, code.next);
  return length && length.next + length.value === bytes.length ? start : undefined;
}
