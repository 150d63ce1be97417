/**
 * The `cairn` binary against a local service: login, whoami and logout
 * (the config file, its mode, the storage key pair login makes and logout
 * revokes, the environment overriding it), the sites commands, --help on
 * every command (the binary's own; each command's from the same program
 * run in this process), and failures as one line on stderr with the
 * documented exit status.
 */
import { readFile, stat, chmod, writeFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Writable } from 'node:stream';
import { ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import type { Command } from 'commander';
import { freePort, startTestService, type TestService } from '../support/service.js';
import { dataOf, graphqlClient, newAccount, type AccountFixture } from '../support/graphql.js';
import { buildProgram, runCli } from '../../functions/cli/program.js';
import { loginArgs, newCliUser, type CliUser } from './cli-runner.js';

let service: TestService;
let a: AccountFixture;
let b: AccountFixture;
let gql: ReturnType<typeof graphqlClient>;
const users: CliUser[] = [];

beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_PREVIEW: 'off' });
  [a, b] = [await newAccount(service, 'cli-a'), await newAccount(service, 'cli-b')];
  gql = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
}, 120_000);
afterAll(async () => {
  await Promise.all(users.map((u) => u.cleanup()));
  await service?.close();
});

async function user(): Promise<CliUser> {
  const u = await newCliUser();
  users.push(u);
  return u;
}

async function loggedIn(account = a): Promise<CliUser> {
  const u = await user();
  const result = await u.run(loginArgs(service, account.apiKey));
  if (result.code !== 0) throw new Error(`login failed: ${result.stderr}`);
  return u;
}

const s3With = (accessKeyId: string, secretAccessKey: string) =>
  new S3Client({
    endpoint: service.endpoints.s3,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey },
    maxAttempts: 1,
  });

async function storagePairs(apiKey: string): Promise<Array<{ accessKeyId: string; revokedAt: string | null }>> {
  return dataOf(await gql.gql(apiKey, 'query { getStorageKeyPairs { accessKeyId revokedAt } }')).getStorageKeyPairs;
}

/** Exactly one line on stderr, prefixed with "cairn: ". */
function oneErrorLine(stderr: string): string {
  const lines = stderr.split('\n').filter(Boolean);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^cairn: /);
  return lines[0]!;
}

describe('login, whoami, logout', () => {
  test('login keeps the key and endpoints in ~/.config/cairn/config.json with mode 0600, and makes a working storage key pair', async () => {
    const u = await user();
    const out = await u.json(loginArgs(service, a.apiKey), { binary: true });
    expect(out.team).toEqual({ id: a.team.id, name: a.team.name });
    expect(out.configPath).toBe(u.configPath);
    expect(out.storage.created).toBe(true);
    expect(((await stat(u.configPath)).mode & 0o777).toString(8)).toBe('600');
    expect(((await stat(dirname(u.configPath))).mode & 0o777).toString(8)).toBe('700');
    const stored = JSON.parse(await readFile(u.configPath, 'utf8'));
    expect(stored).toMatchObject({
      apiKey: a.apiKey,
      apiUrl: service.endpoints.graphql.replace(/\/graphql$/, ''),
      storageEndpoint: service.endpoints.s3,
      gatewayUrl: service.endpoints.gateway,
    });
    expect(stored.accessKeyId).toBe(out.storage.accessKeyId);
    // The pair is the account's (the API lists it) and the S3 API takes it.
    expect(await storagePairs(a.apiKey)).toContainEqual({ accessKeyId: stored.accessKeyId, revokedAt: null });
    const buckets = await s3With(stored.accessKeyId, stored.secretAccessKey).send(new ListBucketsCommand({}));
    expect(buckets.Buckets?.map((x) => x.Name)).toContain(`${a.account.name}-bucket`);

    const who = await u.json(['whoami']);
    expect(who).toMatchObject({
      team: { id: a.team.id },
      apiKeyFrom: 'config',
      accessKeyId: stored.accessKeyId,
      sitesDomain: service.config.sites.domain,
    });
    const human = await u.run(['whoami']);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(a.team.name);
  });

  test('a config file others can read is reported, and login writes it back with mode 0600', async () => {
    const u = await loggedIn();
    await chmod(u.configPath, 0o644);
    const who = await u.run(['whoami']);
    expect(who.code).toBe(0);
    expect(oneErrorLine(who.stderr)).toMatch(/can be read by others.*chmod 600/);
    expect((await u.run(loginArgs(service, a.apiKey))).code).toBe(0);
    expect((await stat(u.configPath)).mode & 0o777).toBe(0o600);
  });

  test('the environment overrides the stored settings: CAIRN_API_KEY acts for another team', async () => {
    const u = await loggedIn(a);
    const who = await u.json(['whoami'], { env: { CAIRN_API_KEY: b.apiKey } });
    expect(who.team.id).toBe(b.team.id);
    expect(who.apiKeyFrom).toBe('environment');
    // Without a config file at all, the environment is enough.
    const bare = await user();
    const env = { CAIRN_API_KEY: b.apiKey, CAIRN_API_URL: service.endpoints.graphql };
    expect((await bare.json(['whoami'], { env })).team.id).toBe(b.team.id);
  });

  test('--api-key-stdin reads the key from a pipe, so it stays out of the process list', async () => {
    const u = await user();
    const args = loginArgs(service, 'unused').filter((arg, i, all) => arg !== '--api-key' && all[i - 1] !== '--api-key');
    const out = JSON.parse(
      (await u.run([...args, '--api-key-stdin', '--no-storage-key', '--json'], { input: `${b.apiKey}\n`, binary: true })).stdout,
    );
    expect(out).toMatchObject({ team: { id: b.team.id }, storage: null });
    expect(JSON.parse(await readFile(u.configPath, 'utf8')).apiKey).toBe(b.apiKey);
    const noKey = await u.run(args);
    expect(noKey.code).toBe(1);
    expect(oneErrorLine(noKey.stderr)).toBe(
      'cairn: no API key: pass --api-key <key>, --api-key-stdin, or set CAIRN_API_KEY (or log in in the browser: cairn login --device)',
    );
  });

  test('a key the service refuses: exit 1, one line, nothing stored', async () => {
    const u = await user();
    const result = await u.run(loginArgs(service, 'cairn_not_a_real_key_000000000000000000000000'));
    expect(result.code).toBe(1);
    expect(oneErrorLine(result.stderr)).toMatch(/not valid/);
    expect(result.stdout).toBe('');
    await expect(stat(u.configPath)).rejects.toThrow();
  });

  test('logging in again with the same key keeps the storage key pair; logout revokes it and removes the file', async () => {
    const u = await loggedIn(b);
    const first = JSON.parse(await readFile(u.configPath, 'utf8'));
    const again = await u.json(loginArgs(service, b.apiKey));
    expect(again.storage).toEqual({ accessKeyId: first.accessKeyId, created: false });
    const out = await u.json(['logout']);
    expect(out).toEqual({ loggedOut: true, configPath: u.configPath, revokedStorageKey: first.accessKeyId, revokedApiKey: null });
    await expect(stat(u.configPath)).rejects.toThrow();
    const pair = (await storagePairs(b.apiKey)).find((p) => p.accessKeyId === first.accessKeyId);
    expect(pair?.revokedAt).toEqual(expect.any(String));
    await expect(s3With(first.accessKeyId, first.secretAccessKey).send(new ListBucketsCommand({}))).rejects.toMatchObject({
      $metadata: { httpStatusCode: 403 },
    });

    const who = await u.run(['whoami']);
    expect(who.code).toBe(1);
    expect(oneErrorLine(who.stderr)).toMatch(/not logged in: run cairn login/);
    expect((await u.run(['logout'])).stdout).toMatch(/Not logged in/);
  });

  test('a storage key pair given to login is checked and kept, and logout leaves it alone', async () => {
    const u = await user();
    const wrong = await u.run([
      ...loginArgs(service, a.apiKey),
      '--access-key-id',
      a.accessKeyId,
      '--secret-access-key',
      'wrong-secret-0000000000000000000000000000',
    ]);
    expect(wrong.code).toBe(1);
    expect(oneErrorLine(wrong.stderr)).toMatch(new RegExp(`storage key pair ${a.accessKeyId} was refused`));
    await expect(stat(u.configPath)).rejects.toThrow();
    const out = await u.json([...loginArgs(service, a.apiKey), '--access-key-id', a.accessKeyId, '--secret-access-key', a.secretAccessKey]);
    expect(out.storage).toEqual({ accessKeyId: a.accessKeyId, created: false });
    expect((await u.json(['logout'])).revokedStorageKey).toBeNull();
    expect((await storagePairs(a.apiKey)).find((p) => p.accessKeyId === a.accessKeyId)?.revokedAt).toBeNull();
  });

  test('a config file that is not JSON is one line saying what to do', async () => {
    const u = await user();
    await mkdir(dirname(u.configPath), { recursive: true });
    await writeFile(u.configPath, '{ not json', { mode: 0o600 });
    const result = await u.run(['sites', 'list']);
    expect(result.code).toBe(1);
    expect(oneErrorLine(result.stderr)).toMatch(/not valid JSON: run cairn login again/);
  });
});

describe('sites', () => {
  test('create, list, show (by name and by id) and delete, as JSON', async () => {
    const u = await loggedIn(a);
    const name = `cli-site-${Date.now().toString(36)}`;
    const created = await u.json(
      [
        'sites',
        'create',
        name,
        '--repo',
        'https://git.example.com/acme/site.git',
        '--branch',
        'live',
        '--build-command',
        'npm run build',
        '--publish-dir',
        'dist',
        '--env',
        'NODE_ENV=production',
        '--env',
        'EMPTY=',
        '--no-auto-publish',
      ],
      { binary: true },
    );
    expect(created).toMatchObject({
      name,
      slug: name,
      teamId: a.team.id,
      buildSettings: {
        buildCommand: 'npm run build',
        publishDirectoryPath: 'dist',
        environmentVariables: [
          { name: 'NODE_ENV', value: 'production' },
          { name: 'EMPTY', value: '' },
        ],
      },
      deploySettings: {
        autoPublishing: false,
        source: { __typename: 'Repository', url: 'https://git.example.com/acme/site.git', branch: 'live' },
      },
    });
    expect(created.url).toBe(`http://${name}.${service.config.sites.domain}/`);
    // What the API itself says.
    const site = dataOf(
      await gql.gql(a.apiKey, 'query ($s: ID!) { getSiteById(siteId: $s) { name deploySettings { autoPublishing } } }', { s: created.id }),
    ).getSiteById;
    expect(site).toEqual({ name, deploySettings: { autoPublishing: false } });

    const dirSite = await u.json(['sites', 'create']);
    expect(dirSite.name).toMatch(/^[a-z]+-[a-z]+-\d+$/);
    expect(dirSite.deploySettings.source).toEqual({ __typename: 'IpfsSource', cid: null });

    const list = await u.json(['sites', 'list']);
    expect(list.map((s: { id: string }) => s.id)).toEqual(expect.arrayContaining([created.id, dirSite.id]));
    expect(await u.json(['sites', 'list', '--limit', '1'])).toHaveLength(1);
    const human = await u.run(['sites', 'list']);
    expect(human.stdout.split('\n')[0]).toMatch(/^NAME\s+SOURCE\s+PUBLISHED\s+LATEST\s+ID\s+IPNS NAME$/);
    expect(human.stdout).toContain(name);

    expect((await u.json(['sites', 'show', name])).id).toBe(created.id);
    // No IPNS name before the first publish.
    expect(await u.json(['sites', 'show', name])).toMatchObject({ ipnsName: null, ipnsUrl: null });
    expect((await u.run(['sites', 'show', name])).stdout).toContain('IPNS name:   - (made on the first publish)');
    expect((await u.json(['sites', 'show', created.id])).name).toBe(name);

    // Another team's site is not found, whatever it is called by.
    const other = await loggedIn(b);
    const notFound = await other.run(['sites', 'show', name]);
    expect(notFound.code).toBe(1);
    expect(oneErrorLine(notFound.stderr)).toBe(`cairn: no site named "${name}" in your team (cairn sites list shows them)`);
    expect((await other.run(['sites', 'delete', created.id, '--yes'])).code).toBe(1);

    const unconfirmed = await u.run(['sites', 'delete', name]);
    expect(unconfirmed.code).toBe(1);
    expect(oneErrorLine(unconfirmed.stderr)).toMatch(/pass --yes/);
    expect(
      dataOf(await gql.gql(a.apiKey, 'query ($s: ID!) { getSiteById(siteId: $s) { id } }', { s: created.id })).getSiteById,
    ).not.toBeNull();

    expect(await u.json(['sites', 'delete', name, '--yes'])).toEqual({ deleted: true, id: created.id, name });
    expect(dataOf(await gql.gql(a.apiKey, 'query ($s: ID!) { getSiteById(siteId: $s) { id } }', { s: created.id })).getSiteById).toBeNull();
  });

  test("the API's refusals are one line: a bad name, two sources", async () => {
    const u = await loggedIn(a);
    const bad = await u.run(['sites', 'create', 'Not A Slug']);
    expect(bad.code).toBe(1);
    expect(oneErrorLine(bad.stderr)).toMatch(/BAD_USER_INPUT/);
    const both = await u.run([
      'sites',
      'create',
      'x',
      '--repo',
      'https://example.com/a.git',
      '--cid',
      'bafybeiffndsajwhk3lwjewwdxqntmjm4b5wxaaanokonsggenkbw6slwk4',
    ]);
    expect(both.code).toBe(1);
    expect(oneErrorLine(both.stderr)).toBe('cairn: a site has one source: give --repo or --cid, not both');
  });
});

describe('the command line itself', () => {
  /** Every command's path: ['sites', 'list'], ['deploy'], ... */
  function commandPaths(command: Command, prefix: string[] = []): string[][] {
    return command.commands.flatMap((c) => [[...prefix, c.name()], ...commandPaths(c, [...prefix, c.name()])]);
  }

  /**
   * The program bin/cairn.ts runs, run here: what it prints and the exit
   * status it returns. A start of the binary is about 0.6 s of CPU (tsx,
   * the modules), the same program's answer here a few milliseconds.
   */
  async function inThisProcess(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const printed = { stdout: '', stderr: '' };
    const to = (name: 'stdout' | 'stderr') =>
      new Writable({
        write(chunk: Buffer | string, _encoding, done) {
          printed[name] += chunk.toString();
          done();
        },
      });
    const code = await runCli(args, { streams: { stdout: to('stdout'), stderr: to('stderr') } });
    return { code, ...printed };
  }

  test('--help works on every command, and npx cairn runs the binary from the checkout', async () => {
    const u = await user();
    const paths = [[], ...commandPaths(buildProgram())];
    expect(paths.length).toBeGreaterThan(12);
    // The binary's own --help; every command's from the same program in this process.
    for (let i = 0; i < paths.length; i += 4) {
      await Promise.all(
        paths.slice(i, i + 4).map(async (path) => {
          const result = path.length === 0 ? await u.run(['--help']) : await inThisProcess([...path, '--help']);
          expect({ path, code: result.code, stderr: result.stderr }).toEqual({ path, code: 0, stderr: '' });
          expect(result.stdout).toContain(`Usage: cairn${path.length ? ` ${path.join(' ')}` : ''}`);
          expect(result.stdout).toContain('--json');
        }),
      );
    }
    const { spawnSync } = await import('node:child_process');
    const npx = spawnSync('npx', ['cairn', '--version'], {
      cwd: (await import('./cli-runner.js')).ROOT,
      encoding: 'utf8',
      env: { ...process.env, CAIRN_CONFIG_DIR: u.home },
    });
    expect(npx.status).toBe(0);
    expect(npx.stdout.trim()).toBe(JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')).version);
  });

  test('bad usage exits 2 with one line on stderr', async () => {
    const u = await user();
    for (const args of [
      ['sites', 'show'],
      ['deploy', 'x', '--bogus'],
      ['storage', 'nope'],
    ]) {
      const result = await u.run(args);
      expect({ args, code: result.code }).toEqual({ args, code: 2 });
      expect(oneErrorLine(result.stderr)).toMatch(/missing required argument|unknown option|unknown command/);
      expect(result.stdout).toBe('');
    }
  });

  test('a service that cannot be reached is one line naming it', async () => {
    const u = await user();
    const port = await freePort(); // nothing listens there
    const result = await u.run(['whoami'], { env: { CAIRN_API_KEY: a.apiKey, CAIRN_API_URL: `http://127.0.0.1:${port}` } });
    expect(result.code).toBe(1);
    expect(oneErrorLine(result.stderr)).toMatch(new RegExp(`^cairn: cannot reach the API at http://127\\.0\\.0\\.1:${port}: ECONNREFUSED`));
  });
});
