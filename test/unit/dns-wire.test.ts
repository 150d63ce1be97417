/**
 * DNS messages as Cairn reads them from a server (core/net/dns-wire.ts):
 * names, records and TXT data round-trip; hostile answers (compression
 * loops, pointers forward, records past the end, too many records,
 * over-long names) are refused with a DnsWireError, in bounded work.
 * TSIG signatures (functions/adapters/rfc2136-dnslink-zone.ts) verify, and a
 * changed byte or another key does not.
 */
import { randomBytes } from 'node:crypto';
import {
  CLASS,
  DnsWireError,
  encodeMessage,
  encodeName,
  MAX_RECORDS,
  parseMessage,
  readName,
  readTxt,
  txtData,
  TYPE,
} from '../../functions/core/net/dns-wire.js';
import { TsigKey } from '../../functions/core/config.js';
import { signMessage, verifyAnswer, DnsUpdateError } from '../../functions/adapters/rfc2136-dnslink-zone.js';

const header = (counts: [number, number, number, number], flags = 0x8000) => {
  const h = Buffer.alloc(12);
  h.writeUInt16BE(7, 0);
  h.writeUInt16BE(flags, 2);
  counts.forEach((c, i) => h.writeUInt16BE(c, 4 + 2 * i));
  return h;
};

test('a message round-trips: question, records, TXT data over 255 bytes', () => {
  const long = `dnslink=/ipfs/${'b'.repeat(300)}`;
  const message = encodeMessage({
    id: 42,
    opcode: 5,
    questions: [{ name: 'Example.TEST.', type: TYPE.SOA, klass: CLASS.IN }],
    authority: [{ name: '_dnslink.www.example.test', type: TYPE.TXT, klass: CLASS.IN, ttl: 60, rdata: txtData(long) }],
  });
  const parsed = parseMessage(message);
  expect(parsed).toMatchObject({ id: 42, opcode: 5, rcode: 0, isResponse: false });
  expect(parsed.questions).toEqual([{ name: 'example.test', type: TYPE.SOA, klass: CLASS.IN }]);
  expect(parsed.authority[0]).toMatchObject({ name: '_dnslink.www.example.test', type: TYPE.TXT, ttl: 60 });
  expect(readTxt(parsed.authority[0]!.rdata)).toBe(long);
});

test('names: pointers back are followed; loops, pointers forward and over-long names are refused', () => {
  const name = encodeName('www.example.test');
  // A second name that is "a" then a pointer to the first (offset 0).
  const pointed = Buffer.concat([name, Buffer.from([1, 0x61, 0xc0, 0x00])]);
  expect(readName(pointed, name.length)).toEqual({ name: 'a.www.example.test', next: pointed.length });
  const loop = Buffer.from([0xc0, 0x00]);
  expect(() => readName(loop, 0)).toThrow(DnsWireError);
  const forward = Buffer.from([0xc0, 0x02, 0x00]);
  expect(() => readName(forward, 0)).toThrow(/compression loop/);
  // Pointers each one step back, past the hop bound.
  const chain: number[] = [0];
  for (let i = 0; i < 100; i++) chain.push(0xc0, i === 0 ? 0 : 1 + (i - 1) * 2);
  expect(() => readName(Buffer.from(chain), chain.length - 2)).toThrow(DnsWireError);
  const tooLong = Buffer.concat([
    ...Array.from({ length: 5 }, () => Buffer.concat([Buffer.from([63]), Buffer.alloc(63, 0x61)])),
    Buffer.from([0]),
  ]);
  expect(() => readName(tooLong, 0)).toThrow(/longer than 255/);
  expect(() => encodeName(`${'a'.repeat(64)}.test`)).toThrow(DnsWireError);
  expect(() => readName(Buffer.from([5, 0x61]), 0)).toThrow(/past the message/);
});

test('answers: too many records, records past the end and truncated headers are refused', () => {
  expect(() => parseMessage(Buffer.alloc(5))).toThrow(DnsWireError);
  expect(() => parseMessage(header([0, MAX_RECORDS + 1, 0, 0]))).toThrow(/over the 64 read/);
  expect(() => parseMessage(header([0, 0xffff, 0xffff, 0xffff]))).toThrow(DnsWireError);
  const record = Buffer.concat([encodeName('a.test'), Buffer.from([0, 16, 0, 1, 0, 0, 0, 60, 0xff, 0xff, 1])]);
  expect(() => parseMessage(Buffer.concat([header([0, 1, 0, 0]), record]))).toThrow(/past the message/);
  expect(() => readTxt(Buffer.from([10, 0x61]))).toThrow(DnsWireError);
});

test('a TSIG answer verifies with the key, and not after a changed byte or with another key', () => {
  const key = new TsigKey('cairn-key', 'hmac-sha256', randomBytes(32));
  const request = encodeMessage({ id: 9, opcode: 5, questions: [{ name: 'example.test', type: TYPE.SOA, klass: CLASS.IN }] });
  const { mac: requestMac } = signMessage(request, key);
  // The server's answer: the request's header as a response, signed over the request's MAC (RFC 8945 section 5.3).
  const answer = Buffer.from(request);
  answer.writeUInt16BE(0x8000 | (5 << 11), 2);
  const serverKey = { name: key.name, algorithm: key.algorithm, mac: (d: Buffer) => key.mac(d) } as TsigKey;
  const macLength = Buffer.alloc(2);
  macLength.writeUInt16BE(requestMac.length, 0);
  const fakeKey = Object.assign(Object.create(TsigKey.prototype) as TsigKey, {
    name: key.name,
    algorithm: key.algorithm,
    mac: (d: Buffer) => key.mac(Buffer.concat([macLength, requestMac, d])),
  });
  const { signed } = signMessage(answer, fakeKey);
  expect(verifyAnswer(signed, requestMac, serverKey, 'the update').rcode).toBe(0);
  const changed = Buffer.from(signed);
  changed[13] ^= 1;
  expect(() => verifyAnswer(changed, requestMac, serverKey, 'the update')).toThrow(/does not verify|malformed|DnsWireError/);
  const other = new TsigKey('cairn-key', 'hmac-sha256', randomBytes(32));
  expect(() => verifyAnswer(signed, requestMac, other, 'the update')).toThrow(DnsUpdateError);
  expect(() => verifyAnswer(answer, requestMac, key, 'the update')).toThrow(/not signed/);
});
