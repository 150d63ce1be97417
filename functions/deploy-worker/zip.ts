/**
 * A directory as a ZIP file, streamed to disk: how a checkout travels to
 * CodeBuild (an S3 source is a ZIP file, which CodeBuild unpacks before the
 * build). Unix modes are kept, so scripts stay executable, and symlinks stay
 * links. Files are deflated as they are read, each followed by a data
 * descriptor, so memory does not grow with the checkout. No ZIP64: a
 * checkout past 4 GiB or 65,535 entries is refused.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32, createDeflateRaw } from 'node:zlib';

export class ZipTooLarge extends Error {
  override name = 'ZipTooLarge';
}

const UTF8 = 0x0800;
const DESCRIPTOR = 0x0008;
const STORED = 0;
const DEFLATED = 8;
/** 1980-01-01 00:00 in DOS time: the same checkout makes the same file. */
const DOS_DATE = (0 << 9) | (1 << 5) | 1;
const MAX_U32 = 0xffffffff;

interface Entry {
  name: Buffer;
  flags: number;
  method: number;
  crc: number;
  compressed: number;
  size: number;
  mode: number;
  offset: number;
}

class Output {
  offset = 0;
  constructor(private readonly out: WriteStream) {}
  async write(data: Buffer): Promise<void> {
    this.offset += data.length;
    if (this.offset > MAX_U32) throw new ZipTooLarge('the checkout is larger than 4 GiB, more than a ZIP without ZIP64 holds');
    if (!this.out.write(data)) await once(this.out, 'drain');
  }
}

function localHeader(e: Entry): Buffer {
  const h = Buffer.alloc(30);
  h.writeUInt32LE(0x04034b50, 0);
  h.writeUInt16LE(20, 4);
  h.writeUInt16LE(e.flags, 6);
  h.writeUInt16LE(e.method, 8);
  h.writeUInt16LE(0, 10);
  h.writeUInt16LE(DOS_DATE, 12);
  // With a data descriptor these three follow the data instead.
  const known = !(e.flags & DESCRIPTOR);
  h.writeUInt32LE(known ? e.crc : 0, 14);
  h.writeUInt32LE(known ? e.compressed : 0, 18);
  h.writeUInt32LE(known ? e.size : 0, 22);
  h.writeUInt16LE(e.name.length, 26);
  h.writeUInt16LE(0, 28);
  return Buffer.concat([h, e.name]);
}

function centralHeader(e: Entry): Buffer {
  const h = Buffer.alloc(46);
  h.writeUInt32LE(0x02014b50, 0);
  h.writeUInt16LE((3 << 8) | 20, 4); // made on Unix: the external attributes carry the mode
  h.writeUInt16LE(20, 6);
  h.writeUInt16LE(e.flags, 8);
  h.writeUInt16LE(e.method, 10);
  h.writeUInt16LE(0, 12);
  h.writeUInt16LE(DOS_DATE, 14);
  h.writeUInt32LE(e.crc, 16);
  h.writeUInt32LE(e.compressed, 20);
  h.writeUInt32LE(e.size, 24);
  h.writeUInt16LE(e.name.length, 28);
  h.writeUInt32LE(((e.mode << 16) | ((e.mode & 0o170000) === 0o040000 ? 0x10 : 0)) >>> 0, 38);
  h.writeUInt32LE(e.offset, 42);
  return Buffer.concat([h, e.name]);
}

async function* walk(root: string, dir = ''): AsyncGenerator<{ rel: string; path: string }> {
  const names = (await readdir(join(root, dir))).sort();
  for (const name of names) {
    const rel = dir ? `${dir}/${name}` : name;
    yield { rel, path: join(root, rel) };
    if ((await lstat(join(root, rel))).isDirectory()) yield* walk(root, rel);
  }
}

async function addFile(out: Output, e: Entry, path: string): Promise<void> {
  await out.write(localHeader(e));
  const deflate = createDeflateRaw();
  const source = createReadStream(path);
  source.on('data', (chunk) => {
    e.crc = crc32(chunk as Buffer, e.crc);
    e.size += (chunk as Buffer).length;
  });
  source.on('error', (err) => deflate.destroy(err));
  source.pipe(deflate);
  for await (const chunk of deflate) {
    e.compressed += (chunk as Buffer).length;
    await out.write(chunk as Buffer);
  }
  if (e.size > MAX_U32) throw new ZipTooLarge('a file of the checkout is larger than 4 GiB');
  const d = Buffer.alloc(16);
  d.writeUInt32LE(0x08074b50, 0);
  d.writeUInt32LE(e.crc, 4);
  d.writeUInt32LE(e.compressed, 8);
  d.writeUInt32LE(e.size, 12);
  await out.write(d);
}

/** Writes `dir` (its contents, not itself) as the ZIP file `file`; resolves with the number of entries. */
export async function zipDirectory(dir: string, file: string): Promise<number> {
  const stream = createWriteStream(file);
  const out = new Output(stream);
  const entries: Entry[] = [];
  try {
    for await (const { rel, path } of walk(dir)) {
      const info = await lstat(path);
      const kind = info.isDirectory() ? 'dir' : info.isSymbolicLink() ? 'link' : info.isFile() ? 'file' : undefined;
      if (!kind) continue; // sockets and devices are no part of a site
      if (entries.length === 0xffff)
        throw new ZipTooLarge('the checkout has more than 65,535 files and directories, more than a ZIP without ZIP64 holds');
      const e: Entry = {
        name: Buffer.from(kind === 'dir' ? `${rel}/` : rel),
        flags: UTF8,
        method: STORED,
        crc: 0,
        compressed: 0,
        size: 0,
        mode: info.mode & 0xffff,
        offset: out.offset,
      };
      if (kind === 'file') {
        e.flags |= DESCRIPTOR;
        e.method = DEFLATED;
        await addFile(out, e, path);
      } else {
        const data = kind === 'link' ? Buffer.from(await readlink(path)) : Buffer.alloc(0);
        e.crc = crc32(data);
        e.size = e.compressed = data.length;
        await out.write(localHeader(e));
        await out.write(data);
      }
      entries.push(e);
    }
    const start = out.offset;
    for (const e of entries) await out.write(centralHeader(e));
    const end = Buffer.alloc(22);
    end.writeUInt32LE(0x06054b50, 0);
    end.writeUInt16LE(entries.length, 8);
    end.writeUInt16LE(entries.length, 10);
    end.writeUInt32LE(out.offset - start, 12);
    end.writeUInt32LE(start, 16);
    await out.write(end);
    stream.end();
    await once(stream, 'close');
    return entries.length;
  } catch (err) {
    stream.destroy();
    throw err;
  }
}
