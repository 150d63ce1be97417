/**
 * `cairn storage ls|cp|rm|url`: files in the team's buckets through the
 * S3-compatible API, with the storage SDK (packages/storage-sdk) and its
 * S3 client. Remote paths are `s3://<bucket>/<key>`; every file sent or
 * fetched is printed with its CID. One file per command; what they share is
 * in client.ts, the transfers of `cp` in transfer.ts.
 */
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { cp } from './cp.js';
import { ls } from './ls.js';
import { rmCommand } from './rm.js';
import type { CopyOptions } from './transfer.js';
import { url } from './url.js';

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
