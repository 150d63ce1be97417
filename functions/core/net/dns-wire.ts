/**
 * DNS messages on the wire (RFC 1035 section 4), as much as Cairn sends
 * and reads: a query, an RFC 2136 update, the records of an answer, and
 * one exchange over TCP (RFC 1035 section 4.2.2: each message after its
 * two-byte length; RFC 7766 makes TCP a resolver's duty, and an answer
 * that does not fit UDP needs it anyway).
 *
 * An answer comes from a server that relays strangers' zones: it is read
 * with every bound checked. One exchange is at most `MAX_MESSAGE` bytes
 * and `deadlineMs` of time, a name at most 255 bytes through at most 64
 * compression pointers that only point backwards, at most `MAX_RECORDS`
 * records: hostile answers cost nothing more than that.
 */
import { connect } from 'node:net';

export const TYPE = { A: 1, CNAME: 5, SOA: 6, TXT: 16, OPT: 41, TSIG: 250, ANY: 255 } as const;
export const CLASS = { IN: 1, NONE: 254, ANY: 255 } as const;
export const OPCODE = { QUERY: 0, UPDATE: 5 } as const;
export const RCODE_NAMES: Record<number, string> = {
  0: 'NOERROR',
  1: 'FORMERR',
  2: 'SERVFAIL',
  3: 'NXDOMAIN',
  4: 'NOTIMP',
  5: 'REFUSED',
  6: 'YXDOMAIN',
  7: 'YXRRSET',
  8: 'NXRRSET',
  9: 'NOTAUTH',
  10: 'NOTZONE',
  16: 'BADSIG',
  17: 'BADKEY',
  18: 'BADTIME',
  22: 'BADTRUNC',
};

/** The largest message read: an answer is cut off (and refused) past it. */
export const MAX_MESSAGE = 16 * 1024;
/** Records read of one message, all sections together. */
export const MAX_RECORDS = 64;

export class DnsWireError extends Error {
  override name = 'DnsWireError';
}

/** A name in wire form (lower case; no compression: the canonical form TSIG signs). */
export function encodeName(name: string): Buffer {
  const trimmed = name.replace(/\.$/, '').toLowerCase();
  const parts: Buffer[] = [];
  if (trimmed !== '')
    for (const label of trimmed.split('.')) {
      const bytes = Buffer.from(label, 'ascii');
      if (bytes.length === 0 || bytes.length > 63) throw new DnsWireError(`"${name.slice(0, 80)}" has an empty or over-long label`);
      parts.push(Buffer.from([bytes.length]), bytes);
    }
  parts.push(Buffer.from([0]));
  const out = Buffer.concat(parts);
  if (out.length > 255) throw new DnsWireError('a DNS name is at most 255 bytes');
  return out;
}

export interface ResourceRecord {
  name: string;
  type: number;
  klass: number;
  ttl: number;
  rdata: Buffer;
}

/** A record in wire form. */
export function encodeRecord(r: ResourceRecord): Buffer {
  const fixed = Buffer.alloc(10);
  fixed.writeUInt16BE(r.type, 0);
  fixed.writeUInt16BE(r.klass, 2);
  fixed.writeUInt32BE(r.ttl, 4);
  fixed.writeUInt16BE(r.rdata.length, 8);
  return Buffer.concat([encodeName(r.name), fixed, r.rdata]);
}

/** A TXT record's data: the text in strings of at most 255 bytes (RFC 1035 section 3.3.14). */
export function txtData(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  const parts: Buffer[] = [];
  for (let i = 0; i < bytes.length || i === 0; i += 255) {
    const chunk = bytes.subarray(i, i + 255);
    parts.push(Buffer.from([chunk.length]), chunk);
  }
  return Buffer.concat(parts);
}

export interface MessageParts {
  id: number;
  opcode: number;
  /** Recursion desired (queries). */
  rd?: boolean;
  /** The question section (an update's zone section). */
  questions: Array<{ name: string; type: number; klass: number }>;
  answers?: ResourceRecord[];
  /** The authority section (an update's update section). */
  authority?: ResourceRecord[];
  additional?: ResourceRecord[];
}

export function encodeMessage(m: MessageParts): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(m.id, 0);
  header.writeUInt16BE(((m.opcode & 0xf) << 11) | (m.rd ? 0x0100 : 0), 2);
  header.writeUInt16BE(m.questions.length, 4);
  header.writeUInt16BE(m.answers?.length ?? 0, 6);
  header.writeUInt16BE(m.authority?.length ?? 0, 8);
  header.writeUInt16BE(m.additional?.length ?? 0, 10);
  const question = (q: MessageParts['questions'][number]) => {
    const fixed = Buffer.alloc(4);
    fixed.writeUInt16BE(q.type, 0);
    fixed.writeUInt16BE(q.klass, 2);
    return Buffer.concat([encodeName(q.name), fixed]);
  };
  return Buffer.concat([
    header,
    ...m.questions.map(question),
    ...[...(m.answers ?? []), ...(m.authority ?? []), ...(m.additional ?? [])].map(encodeRecord),
  ]);
}

/** A name read at `offset`, and where the bytes after it (not after a pointer's target) start. */
export function readName(buf: Buffer, offset: number): { name: string; next: number } {
  const labels: string[] = [];
  let pos = offset;
  let next = -1;
  let length = 0;
  for (let jumps = 0; ;) {
    if (pos >= buf.length) throw new DnsWireError('a name runs past the message');
    const len = buf[pos]!;
    if (len === 0) {
      if (next < 0) next = pos + 1;
      break;
    }
    if ((len & 0xc0) === 0xc0) {
      if (pos + 1 >= buf.length) throw new DnsWireError('a name runs past the message');
      const target = ((len & 0x3f) << 8) | buf[pos + 1]!;
      // Only backwards, and a bounded number of times: no loop, no quadratic walk.
      if (target >= pos || ++jumps > 64) throw new DnsWireError('a name has a compression loop');
      if (next < 0) next = pos + 2;
      pos = target;
      continue;
    }
    if (len & 0xc0) throw new DnsWireError('a name has an unknown label type');
    if (pos + 1 + len > buf.length) throw new DnsWireError('a name runs past the message');
    length += len + 1;
    if (length > 255) throw new DnsWireError('a name is longer than 255 bytes');
    labels.push(buf.toString('latin1', pos + 1, pos + 1 + len).toLowerCase());
    pos += 1 + len;
  }
  return { name: labels.join('.'), next };
}

export interface ParsedRecord extends ResourceRecord {
  /** Where the record starts in the message (TSIG verification cuts the message there). */
  start: number;
  /** Where its data starts. */
  rdataStart: number;
}

export interface ParsedMessage {
  id: number;
  opcode: number;
  rcode: number;
  truncated: boolean;
  isResponse: boolean;
  questions: Array<{ name: string; type: number; klass: number }>;
  answers: ParsedRecord[];
  authority: ParsedRecord[];
  additional: ParsedRecord[];
}

export function parseMessage(buf: Buffer): ParsedMessage {
  if (buf.length < 12) throw new DnsWireError('a DNS message is at least 12 bytes');
  const flags = buf.readUInt16BE(2);
  const counts = [4, 6, 8, 10].map((o) => buf.readUInt16BE(o)) as [number, number, number, number];
  if (counts[0] > 4 || counts[1] + counts[2] + counts[3] > MAX_RECORDS)
    throw new DnsWireError(`the answer has ${counts[1] + counts[2] + counts[3]} records, over the ${MAX_RECORDS} read`);
  let pos = 12;
  const questions: ParsedMessage['questions'] = [];
  for (let i = 0; i < counts[0]; i++) {
    const { name, next } = readName(buf, pos);
    if (next + 4 > buf.length) throw new DnsWireError('a question runs past the message');
    questions.push({ name, type: buf.readUInt16BE(next), klass: buf.readUInt16BE(next + 2) });
    pos = next + 4;
  }
  const section = (count: number): ParsedRecord[] => {
    const records: ParsedRecord[] = [];
    for (let i = 0; i < count; i++) {
      const start = pos;
      const { name, next } = readName(buf, pos);
      if (next + 10 > buf.length) throw new DnsWireError('a record runs past the message');
      const rdlength = buf.readUInt16BE(next + 8);
      const rdataStart = next + 10;
      if (rdataStart + rdlength > buf.length) throw new DnsWireError('a record runs past the message');
      records.push({
        name,
        type: buf.readUInt16BE(next),
        klass: buf.readUInt16BE(next + 2),
        ttl: buf.readUInt32BE(next + 4),
        rdata: buf.subarray(rdataStart, rdataStart + rdlength),
        start,
        rdataStart,
      });
      pos = rdataStart + rdlength;
    }
    return records;
  };
  const answers = section(counts[1]);
  const authority = section(counts[2]);
  const additional = section(counts[3]);
  return {
    id: buf.readUInt16BE(0),
    opcode: (flags >> 11) & 0xf,
    rcode: flags & 0xf,
    truncated: (flags & 0x0200) !== 0,
    isResponse: (flags & 0x8000) !== 0,
    questions,
    answers,
    authority,
    additional,
  };
}

/** A TXT record's strings joined (RFC 7208 section 3.3 and the DNSLink spec join them the same way). */
export function readTxt(rdata: Buffer): string {
  const parts: string[] = [];
  for (let pos = 0; pos < rdata.length;) {
    const len = rdata[pos]!;
    if (pos + 1 + len > rdata.length) throw new DnsWireError('a TXT record runs past its data');
    parts.push(rdata.toString('utf8', pos + 1, pos + 1 + len));
    pos += 1 + len;
  }
  return parts.join('');
}

/**
 * Sends one message over TCP and reads one answer: at most `MAX_MESSAGE`
 * bytes within `deadlineMs` from the start, else a DnsWireError. The
 * connection is closed either way.
 */
export function exchangeTcp(server: { host: string; port: number }, message: Buffer, deadlineMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: server.host, port: server.port });
    const chunks: Buffer[] = [];
    let received = 0;
    let done = false;
    const finish = (err: Error | undefined, value?: Buffer) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(value!);
    };
    const timer = setTimeout(
      () => finish(new DnsWireError(`the DNS server ${server.host}:${server.port} did not answer within ${deadlineMs / 1000} s`)),
      deadlineMs,
    );
    socket.on('connect', () => {
      const length = Buffer.alloc(2);
      length.writeUInt16BE(message.length, 0);
      socket.write(Buffer.concat([length, message]));
    });
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      received += chunk.length;
      const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      if (all.length < 2) return;
      const want = all.readUInt16BE(0);
      if (want > MAX_MESSAGE) return finish(new DnsWireError(`the DNS answer is ${want} bytes, over the ${MAX_MESSAGE} read`));
      if (received >= 2 + want) finish(undefined, all.subarray(2, 2 + want));
    });
    socket.on('error', (err) => finish(new DnsWireError(`the DNS server ${server.host}:${server.port}: ${err.message}`)));
    socket.on('close', () => finish(new DnsWireError(`the DNS server ${server.host}:${server.port} closed the connection unanswered`)));
  });
}
