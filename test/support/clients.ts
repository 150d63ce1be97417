/**
 * Real S3 clients against the test service: the Debian packages' binaries
 * (run with a clean, explicit environment so no user configuration leaks in)
 * and the checks every client test makes (bytes, MD5 ETags, Kubo CIDs).
 */
import { execFile as execFileCallback } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { access, constants, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { MemoryBlockstore } from 'blockstore-core/memory';
import { importFile } from '../../functions/core/ipfs/import.js';
import { cidV0, cidV1 } from '../../functions/core/ipfs/cid.js';
import { captureHeaders } from './s3-doors.js';
import { BOOT, type TestService } from './service.js';

export const execFile = promisify(execFileCallback);

/**
 * The clients CI installs from Debian (.ci/run). Their absolute paths, so a
 * pip-installed `aws` or a pyenv `python3` earlier on a developer's PATH is
 * never what a test measures.
 */
export const DEBIAN_CLIENTS = {
  aws: { bin: '/usr/bin/aws', pkg: 'awscli' },
  python3: { bin: '/usr/bin/python3', pkg: 'python3-boto3' },
  rclone: { bin: '/usr/bin/rclone', pkg: 'rclone' },
  s3cmd: { bin: '/usr/bin/s3cmd', pkg: 's3cmd' },
} as const;
export type DebianClient = keyof typeof DEBIAN_CLIENTS;

const PATH = '/usr/local/bin:/usr/bin:/bin';

function missing(client: DebianClient, why: string): Error {
  const { pkg } = DEBIAN_CLIENTS[client];
  return new Error(`${why}: install the Debian package ${pkg} (apt-get install -y --no-install-recommends ${pkg}); .ci/run installs it`);
}

/** Fails (never skips) when a client is not installed, naming the package to install. */
export async function requireClient(client: DebianClient): Promise<void> {
  const { bin } = DEBIAN_CLIENTS[client];
  try {
    await access(bin, constants.X_OK);
  } catch {
    throw missing(client, `${bin} is missing`);
  }
  if (client === 'python3') {
    try {
      await execFile(bin, ['-c', 'import boto3'], { env: { PATH, PYTHONNOUSERSITE: '1' } });
    } catch {
      throw missing(client, `${bin} cannot import boto3`);
    }
  }
}

export interface ClientWorkspace {
  /** A fresh temporary directory for the test's files. */
  dir: string;
  /** HOME for the clients: empty, so no ~/.aws, ~/.s3cfg or rclone.conf applies. */
  home: string;
  /** The environment every client runs with: the test credentials and nothing of the user's. */
  env: NodeJS.ProcessEnv;
  /** A path inside `dir`, its parent directories created. */
  file(...parts: string[]): Promise<string>;
  cleanup(): Promise<void>;
}

export async function clientWorkspace(extraEnv: NodeJS.ProcessEnv = {}): Promise<ClientWorkspace> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-clients-'));
  const home = join(dir, 'home');
  await mkdir(home);
  return {
    dir,
    home,
    env: {
      PATH,
      HOME: home,
      LANG: 'C.UTF-8',
      PYTHONNOUSERSITE: '1',
      AWS_ACCESS_KEY_ID: BOOT.accessKeyId,
      AWS_SECRET_ACCESS_KEY: BOOT.secretAccessKey,
      AWS_DEFAULT_REGION: 'us-east-1',
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_CONFIG_FILE: join(home, 'aws-config'),
      AWS_SHARED_CREDENTIALS_FILE: join(home, 'aws-credentials'),
      AWS_PAGER: '',
      ...extraEnv,
    },
    async file(...parts) {
      const path = join(dir, ...parts);
      await mkdir(dirname(path), { recursive: true });
      return path;
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

export interface RunResult {
  stdout: string;
  stderr: string;
}

/** Runs a client binary; a non-zero exit rejects with its output, so a failing test says what the client printed. */
export async function run(
  bin: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number; input?: string },
): Promise<RunResult> {
  try {
    const running = execFile(bin, args, {
      env: options.env,
      cwd: options.cwd,
      maxBuffer: 64 * 1024 * 1024,
      timeout: options.timeoutMs ?? 120_000,
      encoding: 'utf8',
    });
    running.child.stdin?.end(options.input ?? '');
    const { stdout, stderr } = await running;
    return { stdout, stderr };
  } catch (err) {
    const e = err as { code?: number | string; signal?: string; stdout?: string; stderr?: string };
    const tail = (s = '') => (s.length > 6000 ? `...${s.slice(-6000)}` : s);
    throw new Error(
      `${basename(bin)} ${args.join(' ')} failed (exit ${e.code ?? e.signal}):\n--- stderr\n${tail(e.stderr)}\n--- stdout\n${tail(e.stdout)}`,
    );
  }
}

export const md5 = (bytes: Uint8Array | string) => createHash('md5').update(bytes).digest('hex');

/** The CIDs Kubo's `ipfs add` gives these bytes, computed with Cairn's importer into a throwaway blockstore. */
export async function cidsOf(bytes: Uint8Array): Promise<{ v0: string; v1: string }> {
  const { cid } = await importFile(
    new MemoryBlockstore(),
    (async function* () {
      for (let i = 0; i < bytes.length; i += 1 << 20) yield bytes.subarray(i, i + (1 << 20));
    })(),
  );
  return { v0: cidV0(cid), v1: cidV1(cid) };
}

/** A file of random bytes at `path`; returns the bytes. */
export async function randomFile(path: string, size: number): Promise<Buffer> {
  const bytes = randomBytes(size);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, bytes);
  return bytes;
}

export interface StoredObject {
  etag: string;
  size: number;
  contentType?: string;
  cidV1?: string;
  cidV0?: string;
  headers: Record<string, string>;
}

/** What the service says about an object, read with @aws-sdk/client-s3 (for clients that cannot show custom headers). */
export async function headObject(service: TestService, bucket: string, key: string): Promise<StoredObject> {
  const s3 = service.s3();
  const seen = captureHeaders(s3);
  try {
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    return {
      etag: head.ETag!.replace(/"/g, ''),
      size: head.ContentLength!,
      contentType: head.ContentType,
      cidV1: seen.headers['x-service-ipfs-hash'],
      cidV0: seen.headers['x-service-ipfs-hash-v0'],
      headers: seen.headers,
    };
  } finally {
    s3.destroy();
  }
}

/** S3's multipart ETag for these bytes uploaded in parts of `partSize`: md5 of the part md5s, dash, part count. */
export function multipartEtag(bytes: Uint8Array, partSize: number): string {
  const digests: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += partSize)
    digests.push(
      createHash('md5')
        .update(bytes.subarray(i, i + partSize))
        .digest(),
    );
  return `${createHash('md5').update(Buffer.concat(digests)).digest('hex')}-${digests.length}`;
}

/**
 * File names that exercise every client's URL and XML encoding (SigV4's
 * canonical URI, listing encodings, DeleteObjects bodies).
 */
export const AWKWARD_NAMES = [
  'a b+c.txt',
  'pct%20x.txt',
  'tilde~eq=amp&at@.txt',
  "paren(1)!'*.txt",
  'ü日本.txt',
  'hash#q?.txt',
  'semi;colon,comma$.txt',
  'quote"d.txt',
  'lt<gt>.txt',
];

/** A directory holding one small file per awkward name (the name is the content). */
export async function awkwardTree(dir: string): Promise<Map<string, string>> {
  await mkdir(dir, { recursive: true });
  const files = new Map<string, string>();
  for (const name of AWKWARD_NAMES) {
    await writeFile(join(dir, name), `${name}\n`);
    files.set(name, `${name}\n`);
  }
  return files;
}
