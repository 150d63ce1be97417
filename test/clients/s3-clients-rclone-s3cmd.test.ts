/**
 * rclone and s3cmd (Debian's packages) against Cairn. Both compare the ETag
 * of a single-part upload with the MD5 they computed, so a wrong ETag shows
 * up here as a reported corruption; rclone's `check` and `--checksum` and
 * s3cmd's sync compare MD5s of every file.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { URL } from 'node:url';
import { BOOT, startTestService, type TestService } from '../support/service.js';
import {
  AWKWARD_NAMES,
  DEBIAN_CLIENTS,
  awkwardTree,
  cidsOf,
  clientWorkspace,
  headObject,
  md5,
  multipartEtag,
  randomFile,
  requireClient,
  run,
  type ClientWorkspace,
} from '../support/clients.js';
import { bytesOf, vectorNamed } from '../support/vectors.js';

let service: TestService;
let ws: ClientWorkspace;

beforeAll(async () => {
  await Promise.all([requireClient('rclone'), requireClient('s3cmd')]);
  [service, ws] = await Promise.all([startTestService(), clientWorkspace()]);
});

afterAll(async () => {
  await service?.close();
  await ws?.cleanup();
});

const hello = vectorNamed('"hello world\\n"');

describe('rclone', () => {
  /** rclone with an S3 remote named `cairn` defined in its environment (no config file). */
  function rclone(...args: string[]) {
    return run(DEBIAN_CLIENTS.rclone.bin, [...args, '--retries', '1', '--low-level-retries', '1'], {
      env: {
        ...ws.env,
        RCLONE_CONFIG: join(ws.home, 'rclone.conf'),
        RCLONE_CONFIG_CAIRN_TYPE: 's3',
        RCLONE_CONFIG_CAIRN_PROVIDER: 'Other',
        RCLONE_CONFIG_CAIRN_ACCESS_KEY_ID: BOOT.accessKeyId,
        RCLONE_CONFIG_CAIRN_SECRET_ACCESS_KEY: BOOT.secretAccessKey,
        RCLONE_CONFIG_CAIRN_ENDPOINT: service.endpoints.s3,
        RCLONE_CONFIG_CAIRN_REGION: 'us-east-1',
        RCLONE_CONFIG_CAIRN_FORCE_PATH_STYLE: 'true',
      },
    });
  }

  const src = () => join(ws.dir, 'rclone-src');

  async function expectChecked(remote: string, files: number) {
    const { stderr } = await rclone('check', src(), remote, '--checksum');
    expect(stderr).toMatch(/0 differences found/);
    expect(stderr).toMatch(new RegExp(`${files} matching files`));
    expect(stderr).not.toMatch(/could not be checked/);
  }

  test('copy --checksum uploads a tree; check compares every MD5; lsjson shows them; the CIDs are Kubo', async () => {
    await randomFile(join(src(), 'one.bin'), 5000);
    await randomFile(join(src(), 'dir', 'two.bin'), 300_000);
    await writeFile(join(src(), 'dir', 'hello.txt'), bytesOf(hello));
    const { stderr } = await rclone('copy', src(), 'cairn:default-bucket/rc', '--checksum', '-v');
    expect(stderr).not.toMatch(/corrupt|hash differ|ERROR/i);
    await expectChecked('cairn:default-bucket/rc', 3);

    const { stdout } = await rclone('lsjson', 'cairn:default-bucket/rc', '-R', '--hash', '--files-only');
    const listed = (JSON.parse(stdout) as Array<{ Path: string; Size: number; Hashes: { md5: string } }>).sort((a, b) =>
      a.Path.localeCompare(b.Path),
    );
    expect(listed.map((e) => e.Path)).toEqual(['dir/hello.txt', 'dir/two.bin', 'one.bin']);
    for (const e of listed) {
      const bytes = await readFile(join(src(), e.Path));
      expect(e.Size).toBe(bytes.length);
      expect(e.Hashes.md5).toBe(md5(bytes));
    }
    const stored = await headObject(service, 'default-bucket', 'rc/dir/hello.txt');
    expect(stored.cidV1).toBe(hello.cidV1);
    expect(stored.cidV0).toBe(hello.cidV0);
    const two = await readFile(join(src(), 'dir', 'two.bin'));
    expect((await headObject(service, 'default-bucket', 'rc/dir/two.bin')).cidV1).toBe((await cidsOf(two)).v1);
  });

  test('ls and cat show the sizes and bytes', async () => {
    const { stdout } = await rclone('ls', 'cairn:default-bucket/rc');
    expect(
      stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => l.trim())
        .sort(),
    ).toEqual(['12 dir/hello.txt', '300000 dir/two.bin', '5000 one.bin']);
    const cat = await rclone('cat', 'cairn:default-bucket/rc/dir/hello.txt');
    expect(cat.stdout).toBe('hello world\n');
  });

  test('sync --checksum uploads only what changed, deletes what went, and check agrees', async () => {
    await writeFile(join(src(), 'one.bin'), 'new content, same name\n');
    await rm(join(src(), 'dir', 'two.bin'));
    await randomFile(join(src(), 'three.bin'), 1234);
    const { stderr } = await rclone('sync', src(), 'cairn:default-bucket/rc', '--checksum', '-v');
    expect(stderr).toMatch(/one\.bin: Copied \(replaced existing\)/);
    expect(stderr).toMatch(/three\.bin: Copied \(new\)/);
    expect(stderr).toMatch(/dir\/two\.bin: Deleted/);
    expect(stderr).not.toMatch(/hello\.txt: Copied/);
    await expectChecked('cairn:default-bucket/rc', 3);
    const dest = join(ws.dir, 'rclone-back');
    await rclone('copy', 'cairn:default-bucket/rc', dest, '--checksum');
    expect(await readFile(join(dest, 'one.bin'), 'utf8')).toBe('new content, same name\n');
    expect(md5(await readFile(join(dest, 'three.bin')))).toBe(md5(await readFile(join(src(), 'three.bin'))));
  });

  test('awkward key names: copy, check --checksum, lsf, delete', async () => {
    const dir = join(ws.dir, 'rclone-awkward');
    await awkwardTree(dir);
    await rclone('copy', dir, 'cairn:default-bucket/rc-awkward', '--checksum');
    const { stderr } = await rclone('check', dir, 'cairn:default-bucket/rc-awkward', '--checksum');
    expect(stderr).toMatch(/0 differences found/);
    expect(stderr).toMatch(new RegExp(`${AWKWARD_NAMES.length} matching files`));
    const listed = await rclone('lsf', 'cairn:default-bucket/rc-awkward');
    expect(listed.stdout.split('\n').filter(Boolean).sort()).toEqual([...AWKWARD_NAMES].sort());
    await rclone('delete', 'cairn:default-bucket/rc-awkward');
    expect((await rclone('lsf', 'cairn:default-bucket/rc-awkward')).stdout).toBe('');
  });

  test('mkdir makes a bucket, deletefile and purge delete, rmdir removes the bucket', async () => {
    await rclone('mkdir', 'cairn:rclone-bucket');
    await rclone('copyto', join(src(), 'three.bin'), 'cairn:rclone-bucket/x/three.bin', '--checksum');
    await rclone('copyto', join(src(), 'one.bin'), 'cairn:rclone-bucket/one.bin', '--checksum');
    await rclone('deletefile', 'cairn:rclone-bucket/one.bin');
    const left = await rclone('lsf', 'cairn:rclone-bucket', '-R', '--files-only');
    expect(left.stdout).toBe('x/three.bin\n');
    await rclone('purge', 'cairn:rclone-bucket/x');
    await rclone('rmdir', 'cairn:rclone-bucket');
    const buckets = await rclone('lsd', 'cairn:');
    expect(buckets.stdout).toMatch(/ default-bucket\n/);
    expect(buckets.stdout).not.toMatch(/rclone-bucket/);
    await rclone('delete', 'cairn:default-bucket/rc');
    expect((await rclone('lsf', 'cairn:default-bucket/rc', '-R')).stdout).toBe('');
  });

  test('multipart (12 MiB past a 5 MiB --s3-upload-cutoff, 5 MiB chunks): check --checksum passes, whole-file CID', async () => {
    // rclone's default cutoff is 200 MiB; a lower one exercises the same multipart path on a small file.
    const big = join(ws.dir, 'rclone-big', 'big.bin');
    const bytes = await randomFile(big, 12 * 1024 * 1024);
    await rclone(
      'copy',
      join(ws.dir, 'rclone-big'),
      'cairn:default-bucket/rcbig',
      '--checksum',
      '--s3-upload-cutoff',
      '5M',
      '--s3-chunk-size',
      '5M',
    );
    const { stderr } = await rclone('check', join(ws.dir, 'rclone-big'), 'cairn:default-bucket/rcbig', '--checksum');
    expect(stderr).toMatch(/0 differences found/);
    expect(stderr).toMatch(/1 matching files/);
    const stored = await headObject(service, 'default-bucket', 'rcbig/big.bin');
    expect(stored.etag).toBe(multipartEtag(bytes, 5 * 1024 * 1024));
    expect(stored.cidV1).toBe((await cidsOf(bytes)).v1);
    await rclone('copyto', 'cairn:default-bucket/rcbig/big.bin', join(ws.dir, 'rclone-big-back.bin'));
    expect(md5(await readFile(join(ws.dir, 'rclone-big-back.bin')))).toBe(md5(bytes));
  });
});

describe('s3cmd', () => {
  let config: string;

  beforeAll(async () => {
    const { host } = new URL(service.endpoints.s3);
    config = await ws.file('s3cmd.cfg');
    await writeFile(
      config,
      [
        '[default]',
        `access_key = ${BOOT.accessKeyId}`,
        `secret_key = ${BOOT.secretAccessKey}`,
        `host_base = ${host}`,
        `host_bucket = ${host}`,
        'use_https = False',
        'signature_v2 = False',
        'bucket_location = us-east-1',
        'check_ssl_certificate = False',
        'progress_meter = False',
        '',
      ].join('\n'),
    );
  });

  const s3cmd = async (...args: string[]) => {
    const out = await run(DEBIAN_CLIENTS.s3cmd.bin, ['-c', config, ...args], { env: ws.env });
    // s3cmd compares each upload's ETag with its MD5 and warns (then retries) when they differ.
    expect(out.stderr).not.toMatch(/MD5 Sums don't match|MD5 sum mismatch/i);
    return out;
  };

  test('put, info (MD5 from the ETag), get, ls, del', async () => {
    const local = await ws.file('s3cmd', 'hello.txt');
    await writeFile(local, bytesOf(hello));
    await s3cmd('put', local, 's3://default-bucket/s3cmd/hello.txt', '--mime-type', 'text/plain');
    const info = await s3cmd('info', 's3://default-bucket/s3cmd/hello.txt');
    expect(info.stdout).toMatch(new RegExp(`MD5 sum:\\s+${md5(bytesOf(hello))}`));
    expect(info.stdout).toMatch(/File size:\s+12/);
    expect(info.stdout).toMatch(/MIME type:\s+text\/plain/);
    const stored = await headObject(service, 'default-bucket', 's3cmd/hello.txt');
    expect(stored.cidV1).toBe(hello.cidV1);

    const back = await ws.file('s3cmd', 'back.txt');
    await s3cmd('get', 's3://default-bucket/s3cmd/hello.txt', back);
    expect(await readFile(back)).toEqual(bytesOf(hello));

    const ls = await s3cmd('ls', 's3://default-bucket/s3cmd/');
    expect(ls.stdout).toMatch(/\s12\s+s3:\/\/default-bucket\/s3cmd\/hello\.txt\n/);
    const buckets = await s3cmd('ls');
    expect(buckets.stdout).toMatch(/s3:\/\/default-bucket\n/);

    await s3cmd('del', 's3://default-bucket/s3cmd/hello.txt');
    expect((await s3cmd('ls', 's3://default-bucket/s3cmd/')).stdout).toBe('');
  });

  test('sync up (MD5s compared), sync again uploads nothing, --delete-removed, sync down byte-for-byte', async () => {
    const dir = join(ws.dir, 's3cmd-sync');
    await randomFile(join(dir, 'a.bin'), 40_000);
    await randomFile(join(dir, 'nested', 'b.bin'), 600_000);
    await writeFile(join(dir, 'nested', 'c.txt'), 'see\n');
    const first = await s3cmd('sync', `${dir}/`, 's3://default-bucket/s3cmd-sync/');
    expect(first.stdout.match(/^upload:/gm)).toHaveLength(3);

    const again = await s3cmd('sync', '--check-md5', `${dir}/`, 's3://default-bucket/s3cmd-sync/');
    expect(again.stdout).not.toMatch(/^upload:/m);

    await writeFile(join(dir, 'a.bin'), 'changed\n');
    await rm(join(dir, 'nested', 'c.txt'));
    const third = await s3cmd('sync', '--check-md5', '--delete-removed', `${dir}/`, 's3://default-bucket/s3cmd-sync/');
    expect(third.stdout).toMatch(/^upload: .*a\.bin' -> 's3:\/\/default-bucket\/s3cmd-sync\/a\.bin'/m);
    expect(third.stdout).toMatch(/^delete: 's3:\/\/default-bucket\/s3cmd-sync\/nested\/c\.txt'/m);
    expect(third.stdout.match(/^upload:/gm)).toHaveLength(1);

    const down = join(ws.dir, 's3cmd-down');
    await s3cmd('sync', 's3://default-bucket/s3cmd-sync/', `${down}/`);
    expect(await readFile(join(down, 'a.bin'), 'utf8')).toBe('changed\n');
    expect(md5(await readFile(join(down, 'nested', 'b.bin')))).toBe(md5(await readFile(join(dir, 'nested', 'b.bin'))));

    const ls = await s3cmd('ls', '--recursive', 's3://default-bucket/s3cmd-sync/');
    expect(ls.stdout.trim().split('\n')).toHaveLength(2);
    await s3cmd('del', '--recursive', '--force', 's3://default-bucket/s3cmd-sync/');
    expect((await s3cmd('ls', '--recursive', 's3://default-bucket/s3cmd-sync/')).stdout).toBe('');
  });

  test('awkward key names: sync, ls, get, del --recursive', async () => {
    const dir = join(ws.dir, 's3cmd-awkward');
    const files = await awkwardTree(dir);
    await s3cmd('sync', `${dir}/`, 's3://default-bucket/s3cmd-awkward/');
    const ls = await s3cmd('ls', 's3://default-bucket/s3cmd-awkward/');
    const prefix = 's3://default-bucket/s3cmd-awkward/';
    const names = ls.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => l.slice(l.indexOf(prefix) + prefix.length));
    expect(names.sort()).toEqual([...files.keys()].sort());
    const back = await ws.file('s3cmd-awkward-back');
    await s3cmd('get', 's3://default-bucket/s3cmd-awkward/quote"d.txt', back);
    expect(await readFile(back, 'utf8')).toBe('quote"d.txt\n');
    await s3cmd('del', '--recursive', '--force', 's3://default-bucket/s3cmd-awkward/');
    expect((await s3cmd('ls', 's3://default-bucket/s3cmd-awkward/')).stdout).toBe('');
  });

  test('mb and rb make and remove a bucket', async () => {
    await s3cmd('mb', 's3://s3cmd-bucket');
    expect((await s3cmd('ls')).stdout).toMatch(/s3:\/\/s3cmd-bucket\n/);
    await s3cmd('rb', 's3://s3cmd-bucket');
    expect((await s3cmd('ls')).stdout).not.toMatch(/s3cmd-bucket/);
  });

  test('put of 16 MiB (multipart past its 15 MiB chunk size): MD5 kept, multipart ETag, whole-file CID, get back', async () => {
    const local = await ws.file('s3cmd', 'big.bin');
    const bytes = await randomFile(local, 16 * 1024 * 1024);
    await s3cmd('put', local, 's3://default-bucket/s3cmd/big.bin');
    const stored = await headObject(service, 'default-bucket', 's3cmd/big.bin');
    expect(stored.etag).toBe(multipartEtag(bytes, 15 * 1024 * 1024));
    expect(stored.cidV1).toBe((await cidsOf(bytes)).v1);
    const info = await s3cmd('info', 's3://default-bucket/s3cmd/big.bin');
    expect(info.stdout).toMatch(new RegExp(`MD5 sum:\\s+${md5(bytes)}`)); // from s3cmd's own metadata
    const back = await ws.file('s3cmd', 'big.back');
    await s3cmd('get', 's3://default-bucket/s3cmd/big.bin', back);
    expect(md5(await readFile(back))).toBe(md5(bytes));
  });
});
