/**
 * The transfers behind `cairn storage cp`: uploads (local files through the
 * SDK, several at once), downloads (streamed to a temporary file beside the
 * target, renamed when whole) and copies between remote paths (CopyObject,
 * so no bytes travel through this machine), each with its progress bar and
 * each file printed with its CID.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { S3Client } from '@aws-sdk/client-s3';
import { typeFromName } from '../../core/http/content-type.js';
import { eachLimit } from '../../core/task-limit.js';
import type { Context } from '../context.js';
import { CliError, formatBytes } from '../output.js';
import type { Progress } from '../progress.js';
import { positiveInt } from '../sites.js';
import { listAll, show, storageFailure, storageOf, type Remote, type Sdk } from './client.js';

/** The type the gateway would give the file by its name; anything else is stored without one (the service answers application/octet-stream). */
export const contentTypeOf = (path: string): string | undefined => typeFromName(basename(path));

export interface CopyOptions {
  recursive?: boolean;
  public?: boolean;
  contentType?: string;
  concurrency?: string;
}

interface Copied {
  source: string;
  destination: string;
  bucket: string;
  key: string;
  size: number;
  hash: string | null;
  hashV0: string | null;
  publicUrl?: string;
}

/** Regular files under `dir` (symlinks to files followed, to folders not: a loop would never end), as [path, key suffix]. */
async function localFiles(dir: string, progress: Progress): Promise<Array<{ path: string; rel: string }>> {
  const out: Array<{ path: string; rel: string }> = [];
  const walk = async (current: string) => {
    const entries = await readdir(current, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const path = join(current, entry.name);
      let kind: 'file' | 'dir' | 'other' = entry.isFile() ? 'file' : entry.isDirectory() ? 'dir' : 'other';
      if (entry.isSymbolicLink()) {
        const target = await stat(path).catch(() => undefined);
        if (target?.isFile()) kind = 'file';
        else {
          progress.line(`skipped ${path}: a symlink ${target ? 'to a folder' : 'that leads nowhere'}`);
          continue;
        }
      }
      if (kind === 'file') out.push({ path, rel: relative(dir, path).split(sep).join('/') });
      else if (kind === 'dir') await walk(path);
    }
  };
  await walk(dir);
  return out;
}

/** A byte counter on the bar for a set of transfers. */
function transferBar(progress: Progress, total: number, files: number) {
  const bar = progress.bar({ total: Math.max(1, total), unit: 'bytes', payload: { label: `0/${files} files` } });
  const sent = new Map<string, number>();
  let done = 0;
  let sum = 0;
  return {
    set(name: string, bytes: number) {
      sum += bytes - (sent.get(name) ?? 0);
      sent.set(name, bytes);
      bar.update(Math.min(sum, Math.max(1, total)), { label: `${done}/${files} files | ${name}` });
    },
    finished(name: string, size: number) {
      done++;
      this.set(name, size);
    },
  };
}

export async function upload(sources: string, destination: Remote, options: CopyOptions, ctx: Context): Promise<void> {
  const source = resolve(ctx.cwd, sources);
  const st = await stat(source).catch(() => undefined);
  if (!st) throw new CliError(`${sources}: no such file or folder`);
  const concurrency = options.concurrency === undefined ? 4 : positiveInt(options.concurrency, '--concurrency');
  const progress = ctx.progress();
  let files: Array<{ path: string; rel: string; key: string; size: number }>;
  if (st.isDirectory()) {
    if (!options.recursive) throw new CliError(`${sources} is a folder: add -r to copy it and everything in it`);
    const prefix = destination.key === '' || destination.key.endsWith('/') ? destination.key : `${destination.key}/`;
    const found = await localFiles(source, progress);
    files = await Promise.all(found.map(async (f) => ({ ...f, key: prefix + f.rel, size: (await stat(f.path)).size })));
  } else if (st.isFile()) {
    const key = destination.key === '' || destination.key.endsWith('/') ? destination.key + basename(source) : destination.key;
    files = [{ path: source, rel: basename(source), key, size: st.size }];
  } else {
    throw new CliError(`${sources} is not a file or a folder`);
  }
  const client = await storageOf(await ctx.settings());
  const results: Copied[] = [];
  const bar = transferBar(
    progress,
    files.reduce((s, f) => s + f.size, 0),
    files.length,
  );
  try {
    await eachLimit(files, concurrency, async (file) => {
      const target = { bucket: destination.bucket, key: file.key };
      let made;
      try {
        made = await client.storage.upload({
          bucket: target.bucket,
          key: target.key,
          data: createReadStream(file.path),
          ContentType: options.contentType ?? contentTypeOf(file.path),
          ACL: options.public ? 'public-read' : 'private',
          httpUploadProgressCallback: ({ loaded }) => bar.set(file.key, loaded),
        });
      } catch (err) {
        throw storageFailure(err, `uploading ${file.path} to ${show(target)}`);
      }
      bar.finished(file.key, file.size);
      const shown = relative(ctx.cwd, file.path) || file.path;
      results.push({
        source: file.path,
        destination: show(target),
        bucket: made.bucket,
        key: made.key,
        size: file.size,
        hash: made.hash,
        hashV0: made.hashV0,
        publicUrl: made.publicUrl,
      });
      progress.line(`upload: ${shown} -> ${show(target)}  ${made.hash}`);
    });
  } finally {
    progress.stop();
    client.destroy();
  }
  results.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  ctx.out.result(
    results,
    () => `${results.length} file${results.length === 1 ? '' : 's'} uploaded (${formatBytes(results.reduce((s, r) => s + r.size, 0))}).`,
  );
}

/** Streams one object to `path` (through a temporary file beside it, renamed when whole), or to stdout for "-". */
async function fetchObject(
  sdk: Sdk,
  s3: S3Client,
  remote: Remote,
  path: string | '-',
  onBytes: (n: number) => void,
  stdout: NodeJS.WritableStream,
): Promise<{ size: number; hash: string | null; hashV0: string | null }> {
  let out;
  try {
    out = await s3.send(new sdk.GetObjectCommand({ Bucket: remote.bucket, Key: remote.key }));
  } catch (err) {
    throw storageFailure(err, `downloading ${show(remote)}`);
  }
  const headers = sdk.headersOf(out);
  let size = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length;
      onBytes(size);
      done(null, chunk);
    },
  });
  const body = out.Body as NodeJS.ReadableStream | undefined;
  if (path === '-') {
    if (body) await pipeline(body, counter, stdout, { end: false });
  } else {
    await mkdir(dirname(path), { recursive: true });
    const partial = `${path}.cairn-partial`;
    try {
      await pipeline(body ?? [], counter, createWriteStream(partial));
      await rename(partial, path);
    } catch (err) {
      await rm(partial, { force: true });
      throw err instanceof CliError ? err : new CliError(`downloading ${show(remote)} to ${path}: ${(err as Error).message}`);
    }
  }
  return { size, hash: headers[sdk.HASH_HEADER] ?? null, hashV0: headers[sdk.HASH_V0_HEADER] ?? null };
}

export async function download(source: Remote, destination: string, options: CopyOptions, ctx: Context): Promise<void> {
  const toStdout = destination === '-';
  if (toStdout && (options.recursive || ctx.out.json)) throw new CliError('"-" (stdout) takes one file, without -r or --json');
  const concurrency = options.concurrency === undefined ? 4 : positiveInt(options.concurrency, '--concurrency');
  const client = await storageOf(await ctx.settings());
  const progress = toStdout ? { live: false, bar: () => ({ update() {}, setTotal() {} }), line() {}, stop() {} } : ctx.progress();
  const results: Copied[] = [];
  try {
    let jobs: Array<{ remote: Remote; path: string; size: number }>;
    const target = resolve(ctx.cwd, destination);
    if (options.recursive) {
      const prefix = source.key === '' || source.key.endsWith('/') ? source.key : `${source.key}/`;
      const { files } = await listAll(client.sdk, client.s3, source.bucket, prefix);
      jobs = [];
      for (const f of files) {
        if (f.key.endsWith('/')) continue; // a folder marker
        const path = resolve(target, ...f.key.slice(prefix.length).split('/'));
        if (!path.startsWith(target + sep)) throw new CliError(`the key ${f.key} would be written outside ${destination}: not copied`);
        jobs.push({ remote: { bucket: source.bucket, key: f.key }, path, size: f.size });
      }
      if (jobs.length === 0) throw new CliError(`nothing under s3://${source.bucket}/${prefix}`);
    } else {
      if (source.key === '' || source.key.endsWith('/'))
        throw new CliError(`${show(source)} names a folder: add -r to copy everything under it`);
      const isDir =
        destination.endsWith('/') ||
        destination.endsWith(sep) ||
        (await stat(target).then(
          (s) => s.isDirectory(),
          () => false,
        ));
      jobs = [{ remote: source, path: toStdout ? '-' : isDir ? join(target, basename(source.key)) : target, size: 0 }];
    }
    const bar = transferBar(
      progress,
      jobs.reduce((s, j) => s + j.size, 0),
      jobs.length,
    );
    await eachLimit(jobs, concurrency, async (job) => {
      const got = await fetchObject(client.sdk, client.s3, job.remote, job.path, (n) => bar.set(job.remote.key, n), ctx.out.streams.stdout);
      bar.finished(job.remote.key, got.size);
      const shown = job.path === '-' ? '-' : relative(ctx.cwd, job.path) || job.path;
      results.push({ source: show(job.remote), destination: job.path, bucket: job.remote.bucket, key: job.remote.key, ...got });
      progress.line(`download: ${show(job.remote)} -> ${shown}  ${got.hash ?? ''}`.trimEnd());
    });
  } finally {
    progress.stop();
    client.destroy();
  }
  if (toStdout) return;
  results.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  ctx.out.result(
    results,
    () => `${results.length} file${results.length === 1 ? '' : 's'} downloaded (${formatBytes(results.reduce((s, r) => s + r.size, 0))}).`,
  );
}

/**
 * s3:// to s3://: each object copied by the service (CopyObject), so no
 * bytes travel through this machine: the copy is the same CID.
 */
export async function copyRemote(source: Remote, destination: Remote, options: CopyOptions, ctx: Context): Promise<void> {
  const concurrency = options.concurrency === undefined ? 4 : positiveInt(options.concurrency, '--concurrency');
  const intoFolder = destination.key === '' || destination.key.endsWith('/');
  const client = await storageOf(await ctx.settings());
  const progress = ctx.progress();
  const results: Copied[] = [];
  try {
    let jobs: Array<{ from: Remote; to: Remote; size: number }>;
    if (options.recursive) {
      const prefix = source.key === '' || source.key.endsWith('/') ? source.key : `${source.key}/`;
      const target = intoFolder ? destination.key : `${destination.key}/`;
      const { files } = await listAll(client.sdk, client.s3, source.bucket, prefix);
      jobs = files
        .filter((f) => !f.key.endsWith('/'))
        .map((f) => ({
          from: { bucket: source.bucket, key: f.key },
          to: { bucket: destination.bucket, key: target + f.key.slice(prefix.length) },
          size: f.size,
        }));
      if (jobs.length === 0) throw new CliError(`nothing under s3://${source.bucket}/${prefix}`);
    } else {
      if (source.key === '' || source.key.endsWith('/'))
        throw new CliError(`${show(source)} names a folder: add -r to copy everything under it`);
      const head = await client.s3
        .send(new client.sdk.HeadObjectCommand({ Bucket: source.bucket, Key: source.key }))
        .catch((err: unknown) => {
          throw (err as Error).name === 'NotFound'
            ? new CliError(`${show(source)} does not exist`)
            : storageFailure(err, `reading ${show(source)}`);
        });
      jobs = [
        {
          from: source,
          to: { bucket: destination.bucket, key: intoFolder ? destination.key + basename(source.key) : destination.key },
          size: head.ContentLength ?? 0,
        },
      ];
    }
    const bar = progress.bar({ total: jobs.length, unit: 'steps', payload: { label: `0/${jobs.length} files` } });
    await eachLimit(jobs, concurrency, async ({ from, to, size }) => {
      let out;
      try {
        out = await client.s3.send(
          new client.sdk.CopyObjectCommand({
            Bucket: to.bucket,
            Key: to.key,
            CopySource: `${from.bucket}/${from.key.split('/').map(encodeURIComponent).join('/')}`,
            ACL: options.public ? 'public-read' : 'private',
            ...(options.contentType ? { MetadataDirective: 'REPLACE' as const, ContentType: options.contentType } : {}),
          }),
        );
      } catch (err) {
        throw storageFailure(err, `copying ${show(from)} to ${show(to)}`);
      }
      const headers = client.sdk.headersOf(out);
      const hash = headers[client.sdk.HASH_HEADER] ?? null;
      results.push({
        source: show(from),
        destination: show(to),
        bucket: to.bucket,
        key: to.key,
        size,
        hash,
        hashV0: headers[client.sdk.HASH_V0_HEADER] ?? null,
      });
      bar.update(results.length, { label: `${results.length}/${jobs.length} files | ${to.key}` });
      progress.line(`copy: ${show(from)} -> ${show(to)}  ${hash ?? ''}`.trimEnd());
    });
  } finally {
    progress.stop();
    client.destroy();
  }
  results.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  ctx.out.result(
    results,
    () =>
      `${results.length} file${results.length === 1 ? '' : 's'} copied (${formatBytes(results.reduce((s, r) => s + r.size, 0))}), by the service: no bytes went through this machine.`,
  );
}
