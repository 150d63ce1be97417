/**
 * CIDs exactly as Kubo's `ipfs add` prints them with its defaults
 * (the unixfs-v0-2015 profile); the vectors in test/fixtures/cid-vectors.json pin them down.
 */
import { CID } from 'multiformats/cid';

// The options themselves are defined once, in the SDK (which must build on its own), and used by both.
export { KUBO_CHUNK_SIZE, KUBO_MAX_CHILDREN, kuboImportOptions } from '../../../packages/storage-sdk/src/kubo-profile.js';

/** The CIDv1 the service reports: the v0 converted (same DAG), in base32. */
export function cidV1(cid: CID | string): string {
  const parsed = typeof cid === 'string' ? CID.parse(cid) : cid;
  return parsed.toV1().toString();
}

export interface CidForms {
  readonly v1: string;
  readonly v0: string;
}

/** How many CIDs' forms are remembered (the oldest goes first). */
const FORMS_REMEMBERED = 1024;
const rememberedForms = new Map<string, CidForms>();

function remember(text: string, forms: CidForms): CidForms {
  if (rememberedForms.size >= FORMS_REMEMBERED) rememberedForms.delete(rememberedForms.keys().next().value!);
  rememberedForms.set(text, forms);
  return forms;
}

/**
 * Both forms of a CID string, for response headers and listings. A v0
 * string's base58 decoding and the base32 encoding cost more than the rest
 * of a small PUT's CID work, and the same CIDs come back (the upload just
 * made, an object read again), so recent answers are remembered.
 */
export function cidForms(cid: string): CidForms {
  const known = rememberedForms.get(cid);
  if (known) return known;
  const parsed = CID.parse(cid);
  return remember(cid, Object.freeze({ v1: parsed.toV1().toString(), v0: parsed.version === 0 ? cid : parsed.toV0().toString() }));
}

/** The CID as `ipfs add` prints it; an imported (v0) CID's forms are remembered on the way, without parsing the string back. */
export function cidText(cid: CID): string {
  const text = cid.toString();
  if (cid.version === 0 && !rememberedForms.has(text)) remember(text, Object.freeze({ v1: cid.toV1().toString(), v0: text }));
  return text;
}

export function cidV0(cid: CID | string): string {
  const parsed = typeof cid === 'string' ? CID.parse(cid) : cid;
  return parsed.version === 0 ? parsed.toString() : parsed.toV0().toString();
}

/** Parses a v0 or v1 CID string, or returns undefined when it is not one. */
export function parseCid(text: string): CID | undefined {
  try {
    return CID.parse(text);
  } catch {
    try {
      // base32 v1 CIDs are case-insensitive in practice (subdomain gateways lowercase them)
      return /^B[A-Z2-7]+$/.test(text) ? CID.parse(text.toLowerCase()) : undefined;
    } catch {
      return undefined;
    }
  }
}

/** Parses a CID this service wrote itself (a record's); a malformed one is a bug, so it throws. */
export function cidOf(text: string): CID {
  const cid = parseCid(text);
  if (!cid) throw new Error(`not a CID: ${text}`);
  return cid;
}
