/** `cairn storage ls`: the buckets, or the files under a prefix with their sizes and CIDs. */
import type { Context } from '../context.js';
import { formatBytes, formatTime, table } from '../output.js';
import { listAll, needRemote, show, storageFailure, storageOf } from './client.js';

export async function ls(path: string | undefined, options: { recursive?: boolean }, ctx: Context): Promise<void> {
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
