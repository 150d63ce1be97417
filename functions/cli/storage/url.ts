/** `cairn storage url`: a file's public URL, its gateway URL and its CIDs. */
import { CairnStorageError } from '../../../packages/storage-sdk/src/errors.js';
import type { Context } from '../context.js';
import { CliError } from '../output.js';
import { needRemote, show, storageFailure, storageOf } from './client.js';

export async function url(path: string, ctx: Context): Promise<void> {
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
