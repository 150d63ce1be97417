/**
 * IPNS names and records (specs.ipfs.tech/ipns/ipns-record), made and read
 * with the `ipns` package Helia uses, keys with @libp2p/crypto.
 *
 * A name is the CIDv1 (libp2p-key codec) of an Ed25519 public key, printed
 * in base36 (`k51...`) as Kubo prints it. A record Cairn signs carries both
 * signatures (V1 and V2, the package's default, as Kubo still signs), an
 * EOL validity and a TTL as boxo (Kubo's library) sets them by default
 * (boxo ipns/defaults.go: `DefaultRecordLifetime = 48 * time.Hour`, "aims
 * to match the record expiration window of Amino DHT";
 * `DefaultRecordTTL = 5 * time.Minute`), and a sequence number that only
 * grows (the store's conditional write, data/ipns-records.ts).
 *
 * A record from elsewhere is checked as the routing spec's PUT asks and the
 * package's validator does: at most 10 KiB (the IPNS spec's limit), a V2
 * signature by the key the name names (an embedded key must match the name),
 * data that agrees with the protobuf fields, and an EOL not yet past.
 */
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromPrivateKey, peerIdFromString } from '@libp2p/peer-id';
import { createIPNSRecord, marshalIPNSRecord, multihashToIPNSRoutingKey, unmarshalIPNSRecord, type IPNSRecord } from 'ipns';
import { ipnsValidator, validFor } from 'ipns/validator';
import { base36 } from 'multiformats/bases/base36';

/** Record lifetime: boxo's DefaultRecordLifetime (48 h), which Kubo's `name publish --lifetime` defaults to. */
export const RECORD_LIFETIME_MS = 48 * 3600 * 1000;
/** Record TTL: boxo's DefaultRecordTTL (5 min), Kubo's `name publish --ttl` default. */
export const RECORD_TTL_MS = 5 * 60 * 1000;
/** The IPNS record spec: "Implementations MUST reject IPNS Record payloads larger than 10 KiB". */
export const MAX_RECORD_BYTES = 10 * 1024;
/** The media type of a record (the gateway's `format=ipns-record`, the routing API's GET and PUT). */
export const IPNS_RECORD_TYPE = 'application/vnd.ipfs.ipns-record';

/** The longest name text looked at: a base58 RSA peer id is about 46 characters, a base36 CIDv1 of one about 60. */
const MAX_NAME_TEXT = 200;

export interface IpnsName {
  /** The name as Kubo prints it: the key's CIDv1 (libp2p-key) in base36. */
  text: string;
  /** The routing key the record is checked against: `/ipns/` and the key's multihash. */
  routingKey: Uint8Array;
}

/** A record, marshalled as it travels, with the fields Cairn reads from it. */
export interface IpnsRecordInfo {
  bytes: Uint8Array;
  sequence: bigint;
  /** What it points at: `/ipfs/<cid>[/path]` or `/ipns/<name>[/path]`. */
  value: string;
  /** Its EOL, in ms since the epoch. */
  validUntil: number;
  /** Its TTL in ms (0 when it carries none). */
  ttlMs: number;
}

/** A name that is not one: malformed, another codec, or not a key. */
export class IpnsNameError extends Error {
  override name = 'IpnsNameError';
}

/** A record that does not hold: too large, does not decode, not signed by the name's key, expired. */
export class IpnsRecordError extends Error {
  override name = 'IpnsRecordError';
}

/** Whether `text` looks like a DNSLink name (a domain) rather than a key. */
export function isDnsLinkName(text: string): boolean {
  return text.includes('.');
}

/**
 * An IPNS name: a CIDv1 with the libp2p-key codec in any multibase (the
 * routing spec's form), or a peer id in base58 (`12D3Koo...`, `Qm...`), as
 * Kubo's gateway takes it under `/ipns/`. Throws IpnsNameError otherwise.
 */
export function parseIpnsName(text: string): IpnsName {
  if (text.length === 0 || text.length > MAX_NAME_TEXT) throw new IpnsNameError('not an IPNS name: empty or too long');
  let peerId;
  try {
    peerId = peerIdFromString(text);
  } catch (err) {
    throw new IpnsNameError(`not an IPNS name: ${(err as Error).message}`.slice(0, 200));
  }
  if (peerId.type === 'url') throw new IpnsNameError('not an IPNS name: not a key');
  return { text: peerId.toCID().toString(base36), routingKey: multihashToIPNSRoutingKey(peerId.toMultihash()) };
}

/** A new Ed25519 key, as the bytes to keep (libp2p's protobuf form, as Kubo's keystore keeps a key). */
export async function newIpnsKey(): Promise<{ key: Uint8Array; name: string }> {
  const key = await generateKeyPair('Ed25519');
  return { key: privateKeyToProtobuf(key), name: nameOfKey(key) };
}

function nameOfKey(key: PrivateKey): string {
  return peerIdFromPrivateKey(key).toCID().toString(base36);
}

/** The name a kept key signs for. */
export function ipnsNameOfKey(keyBytes: Uint8Array): string {
  return nameOfKey(privateKeyFromProtobuf(keyBytes));
}

/** A record pointing `value` (`/ipfs/<cid>`), signed with the kept key: V1 and V2 signatures, 48 h validity, 5 min TTL. */
export async function signIpnsRecord(keyBytes: Uint8Array, value: string, sequence: bigint): Promise<IpnsRecordInfo> {
  const key = privateKeyFromProtobuf(keyBytes);
  const record = await createIPNSRecord(key, value, sequence, RECORD_LIFETIME_MS, {
    v1Compatible: true,
    ttlNs: BigInt(RECORD_TTL_MS) * 1_000_000n,
  });
  return infoOf(marshalIPNSRecord(record), record);
}

function infoOf(bytes: Uint8Array, record: IPNSRecord): IpnsRecordInfo {
  const ttl = record.ttl ?? 0n;
  const ttlMs = ttl > 0n ? Number(ttl / 1_000_000n) : 0;
  return { bytes, sequence: record.sequence, value: record.value, validUntil: Date.now() + validFor(record), ttlMs };
}

/**
 * A record from elsewhere for `name`, checked (see above): its fields, or
 * IpnsRecordError saying what does not hold. An expired record is refused
 * too: no client would take it.
 */
export async function checkIpnsRecord(name: IpnsName, bytes: Uint8Array): Promise<IpnsRecordInfo> {
  if (bytes.byteLength > MAX_RECORD_BYTES) throw new IpnsRecordError(`the record is larger than ${MAX_RECORD_BYTES} bytes`);
  try {
    await ipnsValidator(name.routingKey, bytes);
    const record = unmarshalIPNSRecord(bytes);
    return infoOf(bytes, record);
  } catch (err) {
    throw new IpnsRecordError(`the record does not hold: ${(err as Error).message}`.slice(0, 300));
  }
}

/** A record Cairn holds, read back (its fields, whether or not still valid). */
export function readIpnsRecord(bytes: Uint8Array): IpnsRecordInfo {
  const record = unmarshalIPNSRecord(bytes);
  const ttl = record.ttl ?? 0n;
  // RFC 3339 with nanoseconds: Date reads milliseconds.
  const validUntil = Date.parse(record.validity.replace(/(\.\d{3})\d+/, '$1'));
  return {
    bytes,
    sequence: record.sequence,
    value: record.value,
    validUntil: Number.isFinite(validUntil) ? validUntil : 0,
    ttlMs: ttl > 0n ? Number(ttl / 1_000_000n) : 0,
  };
}
