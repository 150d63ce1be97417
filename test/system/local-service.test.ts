/**
 * `npm start` behaviour: bad configuration stops start-up with one line
 * naming the variable; a restart keeps every account and object.
 */
import { mkdtemp, readFile, rm, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, PutObjectCommand, ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { startTestService, freePort } from '../support/service.js';
import { ROOT, spawnService, startChildService } from '../support/child-service.js';

function runLocal(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawnService(env, { stdout: 'ignore' });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    // A deadline, not a pause: these start-ups fail within a second or two.
    const timer = setTimeout(() => child.kill('SIGKILL'), 30000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

test("a child service (the tests' and the benchmark's) runs npm start's Node command line", async () => {
  const start = (JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start!;
  const service = await startChildService();
  try {
    const argv = (await readFile(`/proc/${service.pid}/cmdline`, 'utf8')).split('\0').filter(Boolean);
    expect(argv[0]).toBe(process.execPath);
    expect(['node', ...argv.slice(1, -1), 'bin/local.ts'].join(' ')).toBe(start.trim().split(/\s+/).join(' '));
    expect(argv.at(-1)).toBe(join(ROOT, 'bin/local.ts'));
  } finally {
    await service.stop();
  }
});

describe('configuration', () => {
  test('npm start with a port out of range prints one line naming it and exits non-zero', async () => {
    const { code, stderr } = await runLocal({ CAIRN_API_PORT: '99999' });
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toEqual(['cairn: CAIRN_API_PORT: must be a port number from 0 to 65535, got "99999"']);
  });

  test('npm start with an unwritable data directory says so', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cairn-ro-'));
    const file = join(dir, 'a-file');
    await writeFile(file, 'not a directory');
    await chmod(file, 0o444);
    const { code, stderr } = await runLocal({ CAIRN_DATA_DIR: join(file, 'data') });
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/^cairn: CAIRN_DATA_DIR: /);
    await rm(dir, { recursive: true, force: true });
  });

  test('npm start with a port in use names the port variable', async () => {
    const blocker = await startTestService();
    try {
      const { code, stderr } = await runLocal({
        CAIRN_DATA_DIR: await mkdtemp(join(tmpdir(), 'cairn-busy-')),
        CAIRN_API_PORT: String(await freePort()),
        CAIRN_S3_PORT: blocker.env.CAIRN_S3_PORT!,
        CAIRN_GATEWAY_PORT: String(await freePort()),
      });
      expect(code).toBe(1);
      expect(stderr).toMatch(/^cairn: CAIRN_S3_PORT: port \d+ on 127\.0\.0\.1 is already in use\n$/);
    } finally {
      await blocker.close();
    }
  });
});

describe('persistence', () => {
  test('a restart keeps the accounts, buckets and objects', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cairn-restart-'));
    const first = await startTestService({}, dir);
    await first.s3().send(new PutObjectCommand({ Bucket: 'default-bucket', Key: 'kept.txt', Body: 'still here' }));
    await first.close();

    const second = await startTestService({}, dir);
    try {
      expect(second.bootstrap.created).toEqual([]);
      const got = await second.s3().send(new GetObjectCommand({ Bucket: 'default-bucket', Key: 'kept.txt' }));
      expect(await got.Body!.transformToString()).toBe('still here');
    } finally {
      await second.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('without bootstrap credentials they are generated once, and the file adds more accounts', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cairn-gen-'));
    const file = join(dir, 'accounts.json');
    const extra = {
      name: 'second',
      accessKeyId: 'CAIRNSECONDKEY000001',
      secretAccessKey: 'second-secret-0123456789012345678901234',
      apiToken: 'cairn_second_token',
    };
    await writeFile(file, JSON.stringify([extra]));
    const env = {
      CAIRN_BOOTSTRAP_ACCESS_KEY: '',
      CAIRN_BOOTSTRAP_SECRET_KEY: '',
      CAIRN_BOOTSTRAP_API_TOKEN: '',
      CAIRN_BOOTSTRAP_FILE: file,
    };
    const service = await startTestService(env, join(dir, 'data'));
    try {
      const generated = service.bootstrap.generated!;
      expect(generated.accessKeyId).toMatch(/^CAIRN[A-Z2-7]{15}$/);
      expect(service.bootstrap.created).toEqual(['default', 'second']);
      const own = (creds: { accessKeyId: string; secretAccessKey: string }) =>
        new S3Client({ endpoint: service.endpoints.s3, region: 'us-east-1', forcePathStyle: true, credentials: creds });
      expect((await own(generated).send(new ListBucketsCommand({}))).Buckets?.map((b) => b.Name)).toEqual(['default-bucket']);
      expect((await own(extra).send(new ListBucketsCommand({}))).Buckets?.map((b) => b.Name)).toEqual(['second-bucket']);
      // The other account's bucket is out of reach.
      const err = await own(extra)
        .send(new GetObjectCommand({ Bucket: 'default-bucket', Key: 'x' }))
        .catch((e: Error) => e);
      expect((err as Error).name).toBe('AccessDenied');
    } finally {
      await service.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
