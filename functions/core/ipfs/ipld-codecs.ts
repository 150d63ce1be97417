/**
 * The IPLD codecs served and stored beside dag-pb and raw, by code and
 * name, without their encoders and decoders (ipld.ts, which loads cborg and
 * both codecs). Telling a block's codec from its CID is on the path of
 * every object read and copy; decoding a dag-cbor or dag-json block is
 * rare, so the modules that only tell codecs apart on their common path
 * (core/ipfs/paths.ts, core/storage/dag-walk.ts) import this, and ipld.ts
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
