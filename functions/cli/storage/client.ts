/**
 * What every `cairn storage` command shares: remote paths
 * (`s3://<bucket>/<key>`), the storage SDK and its S3 client (which reads
 * the CIDs the service answers each object with), loaded only when a
 * storage command runs, listings with their CIDs, and failures as the one
 * line the user sees.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { CairnStorageError, toStorageError } from '../../../packages/storage-sdk/src/errors.js';
import type { Settings } from '../config-store.js';
import { CliError } from '../output.js';

export interface Remote {
  bucket: string;
  key: string;
}

/** `s3://bucket/key`; where only a remote path makes sense, `bucket/key` too. */
export function parseRemote(text: string, bareAllowed: boolean): Remote | undefined {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(text) ?? (bareAllowed ? /^([^/]+)\/?(.*)$/.exec(text) : null);
  if (!m) return undefined;
  return { bucket: m[1]!, key: m[2]! };
}

export function needRemote(text: string): Remote {
  const remote = parseRemote(text, true);
  if (!remote) throw new CliError(`"${text}" is not a remote path: s3://<bucket>/<key>`);
  return remote;
}

export const show = (r: Remote) => `s3://${r.bucket}/${r.key}`;

/** The SDK and the S3 client, loaded when a storage command runs (they take a while to load, and the other commands need neither). */
async function loadSdk() {
  const [node, client, s3] = await Promise.all([
    import('../../../packages/storage-sdk/src/node.js'),
    import('../../../packages/storage-sdk/src/client.js'),
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

export type Sdk = Awaited<ReturnType<typeof loadSdk>>;

export async function storageOf(settings: Settings) {
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
export function storageFailure(err: unknown, operation: string): CliError {
  if (err instanceof CliError) return err;
  const e = err instanceof CairnStorageError ? err : toStorageError(err, operation);
  return new CliError(e.message);
}

export interface Listed {
  key: string;
  size: number;
  lastModified: string | null;
  hash: string | null;
  hashV0: string | null;
}

/** Every object under `prefix` (one level with `delimiter`), with its CIDs from Cairn's listing extension. */
export async function listAll(
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
