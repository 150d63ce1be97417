/**
 * DNSLink records written by RFC 2136 dynamic updates, signed with TSIG
 * (RFC 8945), to the DNS server CAIRN_DNSLINK_SERVER names for the zones
 * CAIRN_DNSLINK_ZONES lists: what knot, BIND, PowerDNS and most DNS
 * hosts' APIs for self-hosters take.
 *
 * Setting a domain's record is one update (RFC 2136 section 2.5): delete
 * the TXT RRset of `_dnslink.<domain>` (class ANY), then add the one
 * record (class IN); the server applies an update's changes all or none
 * (section 3.4.2), so no resolver sees the name empty in between. Removing
 * it is the delete alone. Each update is signed with the key (hmac-sha256,
 * RFC 8945 section 4.3) and the server's answer must carry a TSIG that
 * verifies against it (section 5.3.1: the request's MAC, then the answer,
 * then its TSIG variables): an answer nobody holding the key signed is not
 * taken as done. One update goes over TCP within 5 s. The same adapter
 * serves both compositions (a Lambda function reaches a DNS server as the
 * local server does), so it sits beside them; in AWS, without a server,
 * Route 53 (functions/aws/route53-dnslink-zone.ts).
 */
import { randomInt } from 'node:crypto';
import type { Config, TsigKey } from '../core/config.js';
import { DNSLINK_TTL, dnsLinkName, zoneOf, type DnsLinkZone } from '../core/ports/dnslink-zone.js';
import {
  CLASS,
  DnsWireError,
  encodeMessage,
  encodeName,
  exchangeTcp,
  OPCODE,
  parseMessage,
  RCODE_NAMES,
  txtData,
  TYPE,
  type ResourceRecord,
} from '../core/net/dns-wire.js';

/** Seconds of clock difference the server may allow (RFC 8945 section 10: 300 recommended). */
const FUDGE = 300;
const UPDATE_MS = 5000;

export class DnsUpdateError extends Error {
  override name = 'DnsUpdateError';
}

const u16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n, 0);
  return b;
};
const u48 = (n: number) => {
  const b = Buffer.alloc(6);
  b.writeUIntBE(n, 0, 6);
  return b;
};

/** The TSIG variables (RFC 8945 section 4.3.3) of a signature made at `time`. */
function tsigVariables(key: TsigKey, time: number, error: number, other: Buffer): Buffer {
  return Buffer.concat([
    encodeName(key.name),
    u16(CLASS.ANY),
    Buffer.alloc(4), // TTL 0
    encodeName(key.algorithm),
    u48(time),
    u16(FUDGE),
    u16(error),
    u16(other.length),
    other,
  ]);
}

/** The message with its TSIG record added (ARCOUNT one higher), and the MAC made. */
export function signMessage(message: Buffer, key: TsigKey, time = Math.floor(Date.now() / 1000)): { signed: Buffer; mac: Buffer } {
  const mac = key.mac(Buffer.concat([message, tsigVariables(key, time, 0, Buffer.alloc(0))]));
  const rdata = Buffer.concat([
    encodeName(key.algorithm),
    u48(time),
    u16(FUDGE),
    u16(mac.length),
    mac,
    u16(message.readUInt16BE(0)),
    u16(0),
    u16(0),
  ]);
  const tsig: ResourceRecord = { name: key.name, type: TYPE.TSIG, klass: CLASS.ANY, ttl: 0, rdata };
  const signed = Buffer.concat([message, encodeRecordBytes(tsig)]);
  signed.writeUInt16BE(message.readUInt16BE(10) + 1, 10);
  return { signed, mac };
}

function encodeRecordBytes(r: ResourceRecord): Buffer {
  return encodeMessage({ id: 0, opcode: 0, questions: [], additional: [r] }).subarray(12);
}

/**
 * Checks the answer to a signed request: its last record is a TSIG by the
 * same key whose MAC covers the request's MAC, the answer without the TSIG
 * and the TSIG's variables. Throws a DnsUpdateError saying what is wrong.
 */
export function verifyAnswer(answer: Buffer, requestMac: Buffer, key: TsigKey, what: string): ReturnType<typeof parseMessage> {
  const parsed = parseMessage(answer);
  const tsig = parsed.additional.at(-1);
  const rcodeName = (n: number) => RCODE_NAMES[n] ?? String(n);
  if (!tsig || tsig.type !== TYPE.TSIG) {
    if (parsed.rcode !== 0) throw new DnsUpdateError(`the DNS server refused ${what}: ${rcodeName(parsed.rcode)}`);
    throw new DnsUpdateError(`the DNS server's answer to ${what} is not signed`);
  }
  // The TSIG's RDATA: algorithm, time, fudge, MAC, original id, error, other data.
  const rd = tsig.rdata;
  let pos = 0;
  const algoEnd = (() => {
    let p = 0;
    while (p < rd.length && rd[p] !== 0) p += rd[p]! + 1;
    return p + 1;
  })();
  if (algoEnd + 10 > rd.length) throw new DnsUpdateError(`the DNS server's TSIG for ${what} is malformed`);
  pos = algoEnd;
  const time = rd.readUIntBE(pos, 6);
  const macSize = rd.readUInt16BE(pos + 8);
  const mac = rd.subarray(pos + 10, pos + 10 + macSize);
  pos += 10 + macSize;
  if (pos + 6 > rd.length) throw new DnsUpdateError(`the DNS server's TSIG for ${what} is malformed`);
  const originalId = rd.readUInt16BE(pos);
  const error = rd.readUInt16BE(pos + 2);
  const otherLen = rd.readUInt16BE(pos + 4);
  const other = rd.subarray(pos + 6, pos + 6 + otherLen);
  if (error !== 0) throw new DnsUpdateError(`the DNS server refused ${what}: ${rcodeName(parsed.rcode)}, TSIG ${rcodeName(error)}`);
  if (tsig.name !== key.name || macSize === 0) throw new DnsUpdateError(`the DNS server's answer to ${what} is not signed with the key`);
  const unsigned = Buffer.from(answer.subarray(0, tsig.start));
  unsigned.writeUInt16BE(originalId, 0);
  unsigned.writeUInt16BE(unsigned.readUInt16BE(10) - 1, 10);
  const expected = key.mac(Buffer.concat([u16(requestMac.length), requestMac, unsigned, tsigVariables(key, time, 0, other)]));
  if (expected.length !== mac.length || !expected.equals(mac))
    throw new DnsUpdateError(`the DNS server's answer to ${what} does not verify with the key`);
  if (Math.abs(Date.now() / 1000 - time) > FUDGE)
    throw new DnsUpdateError(`the DNS server's answer to ${what} is signed at a time too far off`);
  if (parsed.rcode !== 0) throw new DnsUpdateError(`the DNS server refused ${what}: ${rcodeName(parsed.rcode)}`);
  return parsed;
}

export class Rfc2136DnsLinkZone implements DnsLinkZone {
  readonly managesAny = true;
  constructor(
    private readonly server: { host: string; port: number },
    private readonly zones: readonly string[],
    private readonly key: TsigKey,
  ) {}

  manages(domain: string): boolean {
    return zoneOf(this.zones, dnsLinkName(domain)) !== undefined;
  }

  set(domain: string, path: string): Promise<void> {
    const name = dnsLinkName(domain);
    return this.update(domain, [
      { name, type: TYPE.TXT, klass: CLASS.ANY, ttl: 0, rdata: Buffer.alloc(0) },
      { name, type: TYPE.TXT, klass: CLASS.IN, ttl: DNSLINK_TTL, rdata: txtData(`dnslink=${path}`) },
    ]);
  }

  remove(domain: string): Promise<void> {
    return this.update(domain, [{ name: dnsLinkName(domain), type: TYPE.TXT, klass: CLASS.ANY, ttl: 0, rdata: Buffer.alloc(0) }]);
  }

  private async update(domain: string, changes: ResourceRecord[]): Promise<void> {
    const name = dnsLinkName(domain);
    const zone = zoneOf(this.zones, name);
    if (!zone) throw new DnsUpdateError(`${name} is in none of the zones CAIRN_DNSLINK_ZONES names`);
    const what = `the update of ${name}`;
    const id = randomInt(0, 0x10000);
    const message = encodeMessage({
      id,
      opcode: OPCODE.UPDATE,
      questions: [{ name: zone, type: TYPE.SOA, klass: CLASS.IN }],
      authority: changes,
    });
    const { signed, mac } = signMessage(message, this.key);
    let answer: Buffer;
    try {
      answer = await exchangeTcp(this.server, signed, UPDATE_MS);
    } catch (err) {
      throw new DnsUpdateError(`${what} failed: ${(err as Error).message}`);
    }
    let parsed;
    try {
      parsed = verifyAnswer(answer, mac, this.key, what);
    } catch (err) {
      if (err instanceof DnsWireError) throw new DnsUpdateError(`the DNS server's answer to ${what} is malformed: ${err.message}`);
      throw err;
    }
    if (parsed.id !== id || !parsed.isResponse || parsed.opcode !== OPCODE.UPDATE)
      throw new DnsUpdateError(`the DNS server's answer to ${what} is not an answer to it`);
  }
}

/** The configured RFC 2136 zone, when CAIRN_DNSLINK_SERVER is set. */
export function rfc2136Zone(config: Pick<Config, 'domains'>): Rfc2136DnsLinkZone | undefined {
  const { server, tsig, zones } = config.domains.dnslink;
  return server && tsig ? new Rfc2136DnsLinkZone(server, zones, tsig) : undefined;
}
