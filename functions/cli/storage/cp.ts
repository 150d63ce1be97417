/** `cairn storage cp`: which of the three transfers a pair of paths asks for. */
import type { Context } from '../context.js';
import { CliError } from '../output.js';
import { parseRemote } from './client.js';
import { copyRemote, download, upload, type CopyOptions } from './transfer.js';

export async function cp(source: string, destination: string, options: CopyOptions, ctx: Context): Promise<void> {
  const from = parseRemote(source, false);
  const to = parseRemote(destination, false);
  if (!from && !to) throw new CliError('one side must be a remote path: s3://<bucket>/<key>');
  if (from && to) return copyRemote(from, to, options, ctx);
  if (to) return upload(source, to, options, ctx);
  return download(from!, destination, options, ctx);
}
