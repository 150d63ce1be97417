/** `cairn storage rm`: a file, or with -r everything under a prefix. */
import { CairnStorageError } from '../../../packages/storage-sdk/src/errors.js';
import { eachLimit } from '../../core/task-limit.js';
import type { Context } from '../context.js';
import { CliError } from '../output.js';
import { listAll, needRemote, show, storageFailure, storageOf } from './client.js';

export async function rmCommand(path: string, options: { recursive?: boolean }, ctx: Context): Promise<void> {
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
