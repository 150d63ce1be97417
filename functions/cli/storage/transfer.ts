/**
 * `cairn storage ls|cp|rm|url`: files in the team's buckets through the
 * S3-compatible API, with the storage SDK (packages/storage-sdk) and its
 * S3 client (which reads the CIDs the service answers each object with).
 * Remote paths are `s3://<bucket>/<key>`; every file sent or fetched is
 * printed with its CID.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { S3Client } from '@aws-sdk/client-s3';
import type { Command } from 'commander';
import { typeFromName } from '../core/http/content-type.js';
import { eachLimit } from '../core/task-limit.js';
import { CairnStorageError, toStorageError } from '../../packages/storage-sdk/src/errors.js';
import type { Settings } from './config-store.js';
import type { Context } from './context.js';
import { CliError, formatBytes, formatTime, table } from './output.js';
import type { Progress } from './progress.js';
import { positiveInt } from './sites.js';

interface Remote {
  bucket: string;
  key: string;
}

/** `s3://bucket/key`; where only a remote path makes sense, `bucket/key` too. */
function parseRemote(text: string, bareAllowed: boolean): Remote | undefined {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(text) ?? (bareAllowed ? /^([^/]+)\/?(.*)$/.exec(text) : null);
  if (!m) return undefined;
  return { bucket: m[1]!, key: m[2]! };
}

function needRemote(text: string): Remote {
  const remote = parseRemote(text, true);
  if (!remote) throw new CliError(`"${text}" is not a remote path: s3://<bucket>/<key>`);
  return remote;
}

const show = (r: Remote) => `s3://${r.bucket}/${r.key}`;

/** The type the gateway would give the file by its name; anything else is stored without one (the service answers application/octet-stream). */
export const contentTypeOf = (path: string): string | undefined => typeFromName(basename(path));

/** The SDK and the S3 client, loaded when a storage command runs (they take a while to load, and the other commands need neither). */
async function loadSdk() {
  const [node, client, s3] = await Promise.all([
    import('../../packages/storage-sdk/src/node.js'),
    import('../../packages/storage-sdk/src/client.js'),
    import('@aws-sdk/client-s3'),
  ]);
  return {
    createStorage: node.createStorage,
    ...client,
    GetObjectCommand: s3.GetObjectCommand,
    CopyObjectCommand: s3.CopyObjectCommand,
    HeadObjectCommand: s3.HeadObjectCommand,
  };
}

type Sdk = Awaited<ReturnType<typeof loadSdk>>;

async function storageOf(settings: Settings) {
  if (!settings.accessKeyId || !settings.secretAccessKey) {
    throw new CliError('no storage key pair: run cairn login (it makes one), or set CAIRN_ACCESS_KEY_ID and CAIRN_SECRET_ACCESS_KEY');
  }
  const sdk = await loadSdk();
  const storage = sdk.createStorage({
    endpoint: settings.storageEndpoint,
    gatewayUrl: settings.gatewayUrl,
    publicDomain: settings.storagePublicDomain,
    apiKey: settings.accessKeyId,
    apiSecret: settings.secretAccessKey,
  });
  const s3 = sdk.createS3Client(storage.options, { apiKey: settings.accessKeyId, apiSecret: settings.secretAccessKey });
  return {
    sdk,
    storage,
    s3,
    destroy() {
      storage.destroy();
      s3.destroy();
    },
  };
}

/** A storage failure as the one line the user sees. */
function storageFailure(err: unknown, operation: string): CliError {
  if (err instanceof CliError) return err;
  const e = err instanceof CairnStorageError ? err : toStorageError(err, operation);
  return new CliError(e.message);
}

interface Listed {
  key: string;
  size: number;
  lastModified: string | null;
  hash: string | null;
  hashV0: string | null;
}

/** Every object under `prefix` (one level with `delimiter`), with its CIDs from Cairn's listing extension. */
async function listAll(
  sdk: Sdk,
  s3: S3Client,
  bucket: string,
  prefix: string,
  delimiter?: string,
): Promise<{ files: Listed[]; directories: string[] }> {
  const files: Listed[] = [];
  const directories: string[] = [];
  let token: string | undefined;
  try {
    do {
      const page = await sdk.listPage(
        s3,
        { Bucket: bucket, Prefix: prefix || undefined, Delimiter: delimiter, ContinuationToken: token },
        true,
      );
      (page.output.Contents ?? []).forEach((c, i) =>
        files.push({
          key: c.Key!,
          size: c.Size ?? 0,
          lastModified: c.LastModified?.toISOString() ?? null,
          hash: page.hashes?.[i]?.hash ?? null,
          hashV0: page.hashes?.[i]?.hashV0 ?? null,
        }),
      );
      for (const p of page.output.CommonPrefixes ?? []) if (p.Prefix) directories.push(p.Prefix);
      token = page.output.IsTruncated ? page.output.NextContinuationToken : undefined;
    } while (token);
  } catch (err) {
    throw storageFailure(err, `listing s3://${bucket}/${prefix}`);
  }
  return { files, directories };
}

async function ls(path: string | undefined, options: { recursive?: boolean }, ctx: Context): Promise<void> {
  const client = await storageOf(await ctx.settings());
  try {
    if (path === undefined) {
      const buckets = await client.storage.listBuckets({}).catch((err: unknown) => {
        throw storageFailure(err, 'listing buckets');
      });
      ctx.out.result(buckets, () => buckets.map((b) => b.name));
      return;
    }
    const remote = needRemote(path);
    const { files, directories } = await listAll(client.sdk, client.s3, remote.bucket, remote.key, options.recursive ? undefined : '/');
    ctx.out.result({ bucket: remote.bucket, prefix: remote.key, directories, files }, () => [
      ...directories.map((d) => `${'PRE'.padStart(30)}  ${d}`),
      ...(files.length
        ? table(
            ['MODIFIED', 'SIZE', 'CID', 'KEY'],
            files.map((f) => [formatTime(f.lastModified), formatBytes(f.size), f.hash ?? '-', f.key]),
          ).slice(1) // as aws s3 ls: no header
        : directories.length
          ? []
          : [`Nothing under ${show(remote)}`]),
    ]);
  } finally {
    client.destroy();
  }
}

interface CopyOptions {
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

async function upload(sources: string, destination: Remote, options: CopyOptions, ctx: Context): Promise<void> {
  const source = resolve(sources);
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
      const shown = relative(process.cwd(), file.path) || file.path;
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
    if (body) await pipeline(body, counter, process.stdout, { end: false });
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

async function download(source: Remote, destination: string, options: CopyOptions, ctx: Context): Promise<void> {
  const toStdout = destination === '-';
  if (toStdout && (options.recursive || ctx.out.json)) throw new CliError('"-" (stdout) takes one file, without -r or --json');
  const concurrency = options.concurrency === undefined ? 4 : positiveInt(options.concurrency, '--concurrency');
  const client = await storageOf(await ctx.settings());
  const progress = toStdout ? { live: false, bar: () => ({ update() {}, setTotal() {} }), line() {}, stop() {} } : ctx.progress();
  const results: Copied[] = [];
  try {
    let jobs: Array<{ remote: Remote; path: string; size: number }>;
    const target = resolve(destination);
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
      const got = await fetchObject(client.sdk, client.s3, job.remote, job.path, (n) => bar.set(job.remote.key, n));
      bar.finished(job.remote.key, got.size);
      const shown = job.path === '-' ? '-' : relative(process.cwd(), job.path) || job.path;
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
async function copyRemote(source: Remote, destination: Remote, options: CopyOptions, ctx: Context): Promise<void> {
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

async function cp(source: string, destination: string, options: CopyOptions, ctx: Context): Promise<void> {
  const from = parseRemote(source, false);
  const to = parseRemote(destination, false);
  if (!from && !to) throw new CliError('one side must be a remote path: s3://<bucket>/<key>');
  if (from && to) return copyRemote(from, to, options, ctx);
  if (to) return upload(source, to, options, ctx);
  return download(from!, destination, options, ctx);
}

async function rmCommand(path: string, options: { recursive?: boolean }, ctx: Context): Promise<void> {
  const remote = needRemote(path);
  const client = await storageOf(await ctx.settings());
  try {
    let keys: string[];
    if (options.recursive) {
      const prefix = remote.key === '' || remote.key.endsWith('/') ? remote.key : `${remote.key}/`;
      keys = (await listAll(client.sdk, client.s3, remote.bucket, prefix)).files.map((f) => f.key);
      if (keys.length === 0) throw new CliError(`nothing under s3://${remote.bucket}/${prefix}`);
    } else {
      if (remote.key === '') throw new CliError(`${show(remote)} names a bucket: add -r to remove everything in it`);
      // S3 deletes a missing key without a word; a typo deserves one.
      await client.storage.get({ bucket: remote.bucket, key: remote.key, getOptions: ['hash'] }).catch((err: unknown) => {
        if (err instanceof CairnStorageError && err.code === 'NoSuchKey') throw new CliError(`${show(remote)} does not exist`);
        throw storageFailure(err, `removing ${show(remote)}`);
      });
      keys = [remote.key];
    }
    const progress = ctx.progress();
    await eachLimit(keys, 8, async (key) => {
      await client.storage.deleteFile({ bucket: remote.bucket, key }).catch((err: unknown) => {
        throw storageFailure(err, `removing s3://${remote.bucket}/${key}`);
      });
      progress.line(`delete: s3://${remote.bucket}/${key}`);
    });
    ctx.out.result({ bucket: remote.bucket, deleted: keys }, () => `${keys.length} file${keys.length === 1 ? '' : 's'} removed.`);
  } finally {
    client.destroy();
  }
}

async function url(path: string, ctx: Context): Promise<void> {
  const remote = needRemote(path);
  const settings = await ctx.settings();
  const client = await storageOf(settings);
  try {
    const file = await client.storage
      .get({ bucket: remote.bucket, key: remote.key, getOptions: ['hash', 'hashV0', 'publicUrl'] })
      .catch((err: unknown) => {
        if (err instanceof CairnStorageError && err.code === 'NoSuchKey') throw new CliError(`${show(remote)} does not exist`);
        throw storageFailure(err, `reading ${show(remote)}`);
      });
    const gatewayUrl = `${settings.gatewayUrl}/ipfs/${file.hash}`;
    ctx.out.result(
      { bucket: remote.bucket, key: remote.key, hash: file.hash, hashV0: file.hashV0, publicUrl: file.publicUrl, gatewayUrl },
      () => [
        `Public URL:  ${file.publicUrl}  (served when the file is public-read)`,
        `Gateway URL: ${gatewayUrl}`,
        `CID:         ${file.hash} (v0 ${file.hashV0})`,
      ],
    );
  } finally {
    client.destroy();
  }
}

export function registerStorage(program: Command, context: (command: Command) => Context): void {
  const storage = program.command('storage').description('files in your buckets (the S3-compatible API), with their CIDs');

  storage
    .command('ls [path]')
    .description('your buckets, or the files under s3://<bucket>/<prefix> with their sizes and CIDs')
    .option('-r, --recursive', 'everything under the prefix, not one level')
    .addHelpText('after', '\nExamples:\n  cairn storage ls\n  cairn storage ls s3://default-bucket/site/ -r')
    .action(async (path: string | undefined, options: { recursive?: boolean }, command: Command) => ls(path, options, context(command)));

  storage
    .command('cp <source> <destination>')
    .description(
      'upload (local -> s3://), download (s3:// -> local, or - for stdout) or copy (s3:// -> s3://, by the service); prints each CID',
    )
    .option('-r, --recursive', 'copy a folder and everything in it')
    .option('--public', 'uploads are public-read (served at their public URL); default private')
    .option('--content-type <type>', "uploads' Content-Type (default: from each file's extension)")
    .option('--concurrency <n>', 'files at once (default 4)')
    .addHelpText(
      'after',
      '\nExamples:\n  cairn storage cp ./photo.jpg s3://default-bucket/photos/\n  cairn storage cp -r ./public s3://default-bucket/site --public\n  cairn storage cp -r s3://default-bucket/site ./site-copy\n  cairn storage cp -r s3://default-bucket/site s3://backup-bucket/site',
    )
    .action(async (source: string, destination: string, options: CopyOptions, command: Command) =>
      cp(source, destination, options, context(command)),
    );

  storage
    .command('rm <path>')
    .description('remove a file (or, with -r, everything under a prefix)')
    .option('-r, --recursive', 'everything under the prefix')
    .action(async (path: string, options: { recursive?: boolean }, command: Command) => rmCommand(path, options, context(command)));

  storage
    .command('url <path>')
    .description("a file's public URL, its gateway URL and its CIDs")
    .action(async (path: string, _options: unknown, command: Command) => url(path, context(command)));
}
