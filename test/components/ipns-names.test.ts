/**
 * IPNS records and names (functions/core/ipfs/ipns.ts) and their store
 * (functions/core/data/ipns-records.ts) against the embedded DynamoDB:
 * records Cairn signs, checked by the `ipns` package's own validator and
 * decoder rather than Cairn's; names in each form a client sends; records
 * from elsewhere refused when tampered with, signed by another key, too
 * large or expired; sites' keys sealed, made once, and bound to their
 * site; sequences that only grow, one write winning a race.
 */
import { randomBytes } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { generateKeyPair, privateKeyFromProtobuf } from '@libp2p/crypto/keys';
import { peerIdFromString } from '@libp2p/peer-id';
import { createIPNSRecord, marshalIPNSRecord, unmarshalIPNSRecord } from 'ipns';
import { ipnsValidator, validate } from 'ipns/validator';
import { base32 } from 'multiformats/bases/base32';
import { aesSealer } from '../../functions/core/auth/secrets.js';
import type { Database } from '../../functions/core/data/dynamo.js';
import { FOREIGN_RECORD_KEPT_MS, IpnsNameStore } from '../../functions/core/data/ipns-records.js';
import {
  checkIpnsRecord,
  IpnsNameError,
  IpnsRecordError,
  ipnsNameOfKey,
  isDnsLinkName,
  MAX_RECORD_BYTES,
  newIpnsKey,
  parseIpnsName,
  RECORD_LIFETIME_MS,
  RECORD_TTL_MS,
  signIpnsRecord,
} from '../../functions/core/ipfs/ipns.js';
import { startEmbeddedDb, type EmbeddedDb } from '../support/embedded-db.js';

let embedded: EmbeddedDb;
let db: Database;
const sealer = aesSealer(randomBytes(32));
const CID = 'bafybeihykld7uyxzogax6vgyvag42y7464eywpf55gxi5qpoisibh3c5wa';

beforeAll(async () => {
  embedded = await startEmbeddedDb();
  db = embedded.client(true);
});
afterAll(async () => {
  await embedded?.close();
});

describe('records Cairn signs', () => {
  test('validate with the ipns package: V1 and V2 signatures, the value, the sequence, 48 h validity and a 5 min TTL', async () => {
    const { key, name } = await newIpnsKey();
    const before = Date.now();
    const signed = await signIpnsRecord(key, `/ipfs/${CID}`, 7n);
    const publicKey = privateKeyFromProtobuf(key).publicKey;
    // The package's own checks, with the key and with the routing key the name gives.
    await validate(publicKey, signed.bytes);
    await ipnsValidator(parseIpnsName(name).routingKey, signed.bytes);
    const record = unmarshalIPNSRecord(signed.bytes);
    expect(record.value).toBe(`/ipfs/${CID}`);
    expect(record.sequence).toBe(7n);
    expect(record.ttl).toBe(BigInt(RECORD_TTL_MS) * 1_000_000n);
    expect(RECORD_TTL_MS).toBe(5 * 60_000);
    expect('signatureV1' in record && record.signatureV1.byteLength).toBe(64);
    expect(record.signatureV2.byteLength).toBe(64);
    const eol = Date.parse(record.validity.replace(/(\.\d{3})\d+/, '$1'));
    expect(eol).toBeGreaterThanOrEqual(before + RECORD_LIFETIME_MS - 1000);
    expect(eol).toBeLessThanOrEqual(Date.now() + RECORD_LIFETIME_MS + 1000);
    expect(signed).toMatchObject({ sequence: 7n, value: `/ipfs/${CID}`, ttlMs: RECORD_TTL_MS });
    // The name is the key's CIDv1 (libp2p-key) in base36, as Kubo prints it.
    expect(name).toMatch(/^k51[0-9a-z]+$/);
    expect(peerIdFromString(name).publicKey?.equals(publicKey)).toBe(true);
    expect(ipnsNameOfKey(key)).toBe(name);
  });
});

describe('names', () => {
  test('a key in each form a client sends is the one base36 name', async () => {
    const { name } = await newIpnsKey();
    const peerId = peerIdFromString(name);
    for (const form of [name, peerId.toCID().toString(base32), peerId.toString()]) {
      expect(parseIpnsName(form).text).toBe(name);
    }
  });

  test('anything else is refused: a CID of content, junk, an overlong text, an empty one', () => {
    for (const bad of [CID, 'k51-not-a-key', 'x'.repeat(500), '', 'QmNotBase58!!']) {
      expect(() => parseIpnsName(bad)).toThrow(IpnsNameError);
    }
    expect(isDnsLinkName('en.wikipedia-on-ipfs.org')).toBe(true);
    expect(isDnsLinkName('k51qzi5uqu5dlvj2baxnqndepeb86cbk3ng7n3i46uzyxzyqj2xjonzllnv0v8')).toBe(false);
  });
});

describe('records from elsewhere', () => {
  test('a record signed by the name key passes; tampered, another key, too large or expired does not', async () => {
    const key = await generateKeyPair('Ed25519');
    const name = parseIpnsName(key.publicKey.toCID().toString());
    const good = marshalIPNSRecord(await createIPNSRecord(key, `/ipfs/${CID}`, 3n, 60_000));
    expect((await checkIpnsRecord(name, good)).sequence).toBe(3n);

    // The record ends with its signed CBOR data: a bit flipped there breaks the V2 signature.
    const tampered = Uint8Array.from(good);
    tampered[tampered.length - 1]! ^= 0x01;
    await expect(checkIpnsRecord(name, tampered)).rejects.toThrow(IpnsRecordError);
    // The protobuf's own value (what V1 signs) changed to another CID's: it no longer agrees with the signed data.
    const swapped = Buffer.from(good);
    const at = swapped.indexOf(Buffer.from(CID));
    expect(at).toBeGreaterThan(0);
    swapped.write('bafkqaaa', at + CID.length - 8);
    await expect(checkIpnsRecord(name, swapped)).rejects.toThrow(IpnsRecordError);

    const other = await generateKeyPair('Ed25519');
    const foreign = marshalIPNSRecord(await createIPNSRecord(other, `/ipfs/${CID}`, 9n, 60_000));
    await expect(checkIpnsRecord(name, foreign)).rejects.toThrow(/does not hold/);

    const large = marshalIPNSRecord(await createIPNSRecord(key, `/ipfs/${CID}/${'a'.repeat(MAX_RECORD_BYTES)}`, 4n, 60_000));
    await expect(checkIpnsRecord(name, large)).rejects.toThrow(/larger than 10240 bytes/);

    const expired = marshalIPNSRecord(await createIPNSRecord(key, `/ipfs/${CID}`, 5n, -1000));
    await expect(checkIpnsRecord(name, expired)).rejects.toThrow(/expired/);

    await expect(checkIpnsRecord(name, randomBytes(200))).rejects.toThrow(IpnsRecordError);
  });
});

describe('the store', () => {
  let now: number;
  let store: IpnsNameStore;
  beforeEach(() => {
    now = Date.now();
    store = new IpnsNameStore(db, sealer, () => new Date(now));
  });
  const item = async (pk: string, sk: string) =>
    (await db.doc.send(new GetCommand({ TableName: db.tables.sites, Key: { pk, sk }, ConsistentRead: true }))).Item;

  test("a site's key is made once, even by two first publishes at once, and kept sealed", async () => {
    const siteId = `site-${randomBytes(4).toString('hex')}`;
    let made = 0;
    const make = async () => {
      made++;
      return newIpnsKey();
    };
    const [a, b] = await Promise.all([store.siteKey(siteId, make), store.siteKey(siteId, make)]);
    expect(made).toBe(2);
    expect(a.name).toBe(b.name);
    expect(Buffer.from(a.key).equals(Buffer.from(b.key))).toBe(true);
    expect(await store.nameOfSite(siteId)).toBe(a.name);
    const kept = await item(`SITE#${siteId}`, 'IPNSKEY');
    expect(kept?.name).toBe(a.name);
    // Sealed: neither the key's bytes nor their base64 are in the item.
    const text = JSON.stringify(kept);
    expect(text).not.toContain(Buffer.from(a.key).toString('base64'));
    expect(text).not.toContain(Buffer.from(a.key).toString('hex'));
    expect(Object.keys(kept!).sort()).toEqual(['createdAt', 'name', 'pk', 'sealedKey', 'sk']);
    // The same again reads it back; a sealed key copied to another site does not open there.
    expect((await store.siteKey(siteId, make)).name).toBe(a.name);
    expect(made).toBe(2);
    const thief = `site-${randomBytes(4).toString('hex')}`;
    await db.doc.send(new PutCommand({ TableName: db.tables.sites, Item: { ...kept, pk: `SITE#${thief}` } }));
    await expect(store.siteKey(thief, make)).rejects.toThrow();
  });

  test('a record is replaced only by a higher sequence; of two writes of one sequence at once, one wins', async () => {
    const { key, name } = await newIpnsKey();
    const put = async (sequence: bigint, cid = CID) =>
      store.put({ name, siteId: 'site-x', ...(await signIpnsRecord(key, `/ipfs/${cid}`, sequence)) }, { republishAt: new Date(now) });
    expect(await put(1n)).toBe(true);
    expect(await put(1n)).toBe(false);
    expect(await put(5n)).toBe(true);
    expect(await put(4n)).toBe(false);
    // Numbers compare as numbers, past a digit's change and up to uint64's end.
    expect(await put(10n)).toBe(true);
    expect(await put(9n)).toBe(false);
    expect(await put(2n ** 64n - 1n)).toBe(true);
    expect((await store.get(name))?.sequence).toBe(2n ** 64n - 1n);

    const other = await newIpnsKey();
    const racers = await Promise.all(
      ['bafkqaaa', CID].map(async (cid) =>
        store.put(
          { name: other.name, siteId: 'site-y', ...(await signIpnsRecord(other.key, `/ipfs/${cid}`, 1n)) },
          { republishAt: new Date(now) },
        ),
      ),
    );
    expect(racers.filter(Boolean)).toHaveLength(1);
    const held = await store.get(other.name);
    expect(held?.sequence).toBe(1n);
    expect(unmarshalIPNSRecord(held!.bytes).value).toBe(held!.value);
  });

  test("a record from elsewhere is kept until its EOL or 48 hours, and a site's is due for signing again", async () => {
    const { key, name } = await newIpnsKey();
    const signed = await signIpnsRecord(key, `/ipfs/${CID}`, 1n);
    expect(await store.put({ name, ...signed })).toBe(true);
    const kept = await item(`IPNS#${name}`, 'RECORD');
    expect(kept?.expiresAt).toBe(Math.ceil((now + FOREIGN_RECORD_KEPT_MS) / 1000));
    expect(kept?.gsi1pk).toBeUndefined();
    expect(Buffer.from((await store.get(name))!.bytes).equals(Buffer.from(signed.bytes))).toBe(true);
    now += FOREIGN_RECORD_KEPT_MS + 1000;
    expect(await store.get(name)).toBeUndefined();
    // An expired item, still in the table, is no obstacle to a new one of any sequence.
    expect(await store.put({ name, ...(await signIpnsRecord(key, `/ipfs/${CID}`, 1n)) })).toBe(true);

    const site = await newIpnsKey();
    const siteId = `site-${randomBytes(4).toString('hex')}`;
    const soon = new Date(now + 60_000);
    await store.put({ name: site.name, siteId, ...(await signIpnsRecord(site.key, `/ipfs/${CID}`, 1n)) }, { republishAt: soon });
    expect((await store.dueForRepublish(new Date(now), 100)).map((d) => d.name)).not.toContain(site.name);
    expect(await store.dueForRepublish(new Date(soon.getTime() + 1), 1000)).toContainEqual({ name: site.name, siteId });
  });

  test("deleting a site's name drops its key and record, not another's", async () => {
    const siteId = `site-${randomBytes(4).toString('hex')}`;
    const { key, name } = await store.siteKey(siteId, newIpnsKey);
    await store.put({ name, siteId, ...(await signIpnsRecord(key, `/ipfs/${CID}`, 1n)) }, { republishAt: new Date(now) });
    const other = await newIpnsKey();
    await store.put({ name: other.name, ...(await signIpnsRecord(other.key, `/ipfs/${CID}`, 1n)) });
    await store.deleteOfSite(siteId);
    expect(await store.nameOfSite(siteId)).toBeUndefined();
    expect(await store.get(name)).toBeUndefined();
    expect(await store.get(other.name)).toBeDefined();
  });
});
