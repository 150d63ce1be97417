/**
 * `npm run smoke` (bin/smoke.ts) as a team runs it: the real script in a
 * child process against the local service started as `npm start` starts
 * it, with the AWS CLI (Debian's awscli) and a site deployed from a real
 * git server on loopback. Then a run that must fail: a wrong API key and a
 * service that takes at most 4 MiB per request, as the Lambda door does,
 * so the 50 MiB put's verdict must name the limit and what to use. And the
 * `--stack` path: the outputs of a synthesized template and the first
 * account's secret, read through stand-ins for CloudFormation and Secrets
 * Manager, so an output renamed in lib/ breaks this test.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { mockClient } from 'aws-sdk-client-mock';
import { ROOT, startChildService, type ChildService } from '../support/child-service.js';
import { DEBIAN_CLIENTS, requireClient } from '../support/clients.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { BOOT } from '../support/service-env.js';
import { CairnStack } from '../../lib/cairn-stack.js';
import { PENDING_VALUE } from '../../functions/first-account/secret-value.js';
import { STACK_OUTPUTS, stackOptions, targetOf, TargetError } from '../../bin/smoke-target.js';

let service: ChildService;
let git: GitServer;
let repoUrl: string;

beforeAll(async () => {
  await requireClient('aws');
  [service, git] = await Promise.all([startChildService({ env: { CAIRN_GC_INTERVAL: '0' } }), startGitServer()]);
  await git.commit('acme/smoke-site', { 'index.html': '<h1>smoke</h1>', 'style.css': 'h1 { color: teal }' }, 'A site');
  repoUrl = git.repoUrl('acme/smoke-site');
}, 90_000);

afterAll(async () => {
  await service?.stop();
  await git?.close();
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** bin/smoke.ts as `npm run smoke` runs it, with `env` and the AWS CLI of the Debian package first on PATH. */
function smoke(env: Record<string, string>, args: string[] = [], timeoutMs = 150_000): Promise<Run> {
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bin/smoke.ts'), ...args], {
    cwd: ROOT,
    env: { PATH: `${path.dirname(DEBIAN_CLIENTS.aws.bin)}:/usr/local/bin:/usr/bin:/bin`, HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the smoke run did not end in ${timeoutMs} ms:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

function targetEnv(s: ChildService, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    CAIRN_SMOKE_GRAPHQL: s.endpoints.graphql,
    CAIRN_SMOKE_S3: s.endpoints.s3,
    CAIRN_SMOKE_GATEWAY: s.endpoints.gateway,
    CAIRN_SMOKE_API_KEY: BOOT.apiToken,
    CAIRN_SMOKE_ACCESS_KEY_ID: BOOT.accessKeyId,
    CAIRN_SMOKE_SECRET_ACCESS_KEY: BOOT.secretAccessKey,
    CAIRN_SMOKE_REPOSITORY: repoUrl,
    ...overrides,
  };
}

/** The verdict lines, by check name (the text before its figures or reason). */
function verdicts(stdout: string): Map<string, { verdict: string; rest: string }> {
  const out = new Map<string, { verdict: string; rest: string }>();
  for (const line of stdout.split('\n')) {
    const m = /^(ok {2}|FAIL|skip) (.+?)(?: \((.*)\)|: (.*))$/.exec(line);
    if (m) out.set(m[2]!.replace(/ at its address .*/, ' at its address'), { verdict: m[1]!.trim(), rest: m[3] ?? m[4]! });
  }
  return out;
}

const CHECKS = [
  'GraphQL reads',
  'S3 bucket',
  'S3 put+get 1 MiB with aws s3 cp defaults',
  'gateway /ipfs/<cid> 1 MiB',
  'S3 put+get 50 MiB with aws s3 cp defaults',
  'gateway /ipfs/<cid> 50 MiB',
  'deploy to DEPLOYED',
  'site answers at its address',
  'purge',
  'cleanup',
];

test('against a healthy service every check says ok, it cleans up what it made, and it exits 0', async () => {
  const run = await smoke(targetEnv(service));
  const lines = verdicts(run.stdout);
  expect([...lines.keys()]).toEqual([...CHECKS.slice(0, 6), `site created from ${repoUrl}`, ...CHECKS.slice(6)]);
  for (const [name, { verdict }] of lines) expect(`${verdict} ${name}`).toBe(`ok ${name}`);
  expect(lines.get('S3 put+get 50 MiB with aws s3 cp defaults')!.rest).toMatch(/sha256 equal, cid bafybei[a-z2-7]+$/);
  expect(lines.get('gateway /ipfs/<cid> 50 MiB')!.rest).toMatch(/^52428800 bytes, sha256 equal/);
  expect(lines.get('deploy to DEPLOYED')!.rest).toMatch(/^\d+\.\d s, bafybei[a-z2-7]+, published$/);
  expect(run.stdout).toMatch(/site answers at its address http:\/\/cairn-smoke-[0-9a-f]{8}\.sites\.localhost:\d+\/ \(200, \d+ bytes/);
  expect(lines.get('cleanup')!.rest).toBe('2 objects and the site removed');
  expect(run.stdout.trim().split('\n').at(-1)).toBe('11 ok, 0 failed');
  expect(run.code).toBe(0);
  for (const secret of [BOOT.apiToken, BOOT.secretAccessKey]) expect(run.stdout + run.stderr).not.toContain(secret);

  // Cleanup is real: no object under its prefix, no site of its name.
  const s3 = service.s3();
  const left = await s3.send(new ListObjectsV2Command({ Bucket: 'default-bucket', Prefix: 'cairn-smoke/' }));
  s3.destroy();
  expect(left.KeyCount).toBe(0);
  const res = await fetch(service.endpoints.graphql, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: BOOT.apiToken },
    body: JSON.stringify({ query: '{ getCurrentTeam { id } }' }),
  });
  const teamId = ((await res.json()) as { data: { getCurrentTeam: { id: string } } }).data.getCurrentTeam.id;
  const sites = await fetch(service.endpoints.graphql, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: BOOT.apiToken },
    body: JSON.stringify({ query: `{ getSitesByTeam(teamId: "${teamId}") { sites { slug } } }` }),
  });
  const slugs = ((await sites.json()) as { data: { getSitesByTeam: { sites: Array<{ slug: string }> } } }).data.getSitesByTeam.sites;
  expect(slugs.filter((s) => s.slug.startsWith('cairn-smoke-'))).toEqual([]);
}, 200_000);

test("a wrong API key and the Lambda door's 4 MiB limit give FAIL lines with their reasons and exit 1, in bounded time", async () => {
  const limited = await startChildService({ env: { CAIRN_GC_INTERVAL: '0', CAIRN_MAX_REQUEST_BODY: '4194304' } });
  try {
    const run = await smoke(
      targetEnv(limited, { CAIRN_SMOKE_API_KEY: 'cairn_wrong_key_0123456789abcdefghijkl', CAIRN_SMOKE_BUCKET: 'default-bucket' }),
    );
    const lines = verdicts(run.stdout);
    expect(lines.get('GraphQL reads')).toEqual({ verdict: 'FAIL', rest: expect.stringMatching(/^GraphQL 401: UNAUTHENTICATED: /) });
    // S3 needs no GraphQL: the 1 MiB round trip still passes.
    expect(lines.get('S3 put+get 1 MiB with aws s3 cp defaults')?.verdict).toBe('ok');
    const big = lines.get('S3 put+get 50 MiB with aws s3 cp defaults')!;
    expect(big.verdict).toBe('FAIL');
    expect(big.rest).toMatch(
      /^the endpoint takes at most 4194304 bytes per request \(x-cairn-max-request-body\) and the AWS CLI sends 8 MiB parts \(its default multipart_chunksize\); .*no AWS CLI setting fits: upload files over 4 MiB with `cairn storage cp`.*docs\/aws-s3-clients\.md \(aws exited 1: .*EntityTooLarge/,
    );
    expect(lines.get('gateway /ipfs/<cid> 50 MiB')).toEqual({ verdict: 'skip', rest: 'the object was not stored' });
    expect(lines.get(`site created from ${repoUrl}`)).toEqual({ verdict: 'skip', rest: 'GraphQL reads failed' });
    expect(lines.get('cleanup')?.verdict).toBe('ok');
    expect(run.stdout.trim().split('\n').at(-1)).toMatch(/^\d+ ok, 2 failed, \d+ skipped$/);
    expect(run.code).toBe(1);
    expect(run.stdout + run.stderr).not.toContain('cairn_wrong_key_0123456789abcdefghijkl');
    expect(run.ms).toBeLessThan(120_000);
  } finally {
    await limited.stop();
  }
}, 200_000);

test('without an endpoint it names the flag it needs (never a value) and exits 2 at once', async () => {
  const run = await smoke({ CAIRN_SMOKE_API_KEY: BOOT.apiToken }, [], 60_000);
  expect(run.code).toBe(2);
  expect(run.stderr).toContain('--graphql (or CAIRN_SMOKE_GRAPHQL) is needed without --stack');
  expect(run.stderr).not.toContain(BOOT.apiToken);
}, 60_000);

describe('--stack: the outputs a synthesized stack has, and its first account secret', () => {
  let outputs: Record<string, { Value: unknown }>;
  const cloudFormation = mockClient(CloudFormationClient);
  const secretsManager = mockClient(SecretsManagerClient);

  beforeAll(() => {
    // Bundling skipped (the outputs do not depend on it): seconds, not a minute.
    const cdkJson = JSON.parse(fs.readFileSync(path.join(ROOT, 'cdk.json'), 'utf8'));
    const app = new App({ context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } });
    outputs = Template.fromStack(new CairnStack(app, 'Cairn')).toJSON().Outputs;
    fs.rmSync(app.outdir, { recursive: true, force: true });
  }, 120_000);

  afterAll(() => {
    for (const client of made) client.destroy();
    cloudFormation.restore();
    secretsManager.restore();
  });

  /** DescribeStacks as CloudFormation answers it: every output of the template, each with a value naming its key. */
  function standInStack(secret: string) {
    cloudFormation.reset();
    secretsManager.reset();
    cloudFormation.on(DescribeStacksCommand, { StackName: 'Cairn' }).resolves({
      Stacks: [
        {
          StackName: 'Cairn',
          StackStatus: 'CREATE_COMPLETE',
          CreationTime: new Date(),
          Outputs: Object.keys(outputs).map((key) => ({ OutputKey: key, OutputValue: `value-of-${key}` })),
        },
      ],
    });
    secretsManager
      .on(GetSecretValueCommand, { SecretId: `value-of-${STACK_OUTPUTS.firstAccountSecretArn}` })
      .resolves({ SecretString: secret });
  }

  const made: Array<{ destroy(): void }> = [];
  function clients() {
    const pair = {
      cloudFormation: new CloudFormationClient({ region: 'eu-west-1' }),
      secretsManager: new SecretsManagerClient({ region: 'eu-west-1' }),
    };
    made.push(pair.cloudFormation, pair.secretsManager);
    return pair;
  }

  test('every output it reads is one the stack has, and the credentials come from the secret that output names', async () => {
    for (const key of Object.values(STACK_OUTPUTS)) expect(Object.keys(outputs)).toContain(key);
    standInStack(
      JSON.stringify({
        cairn: 'first-account',
        accountName: 'admin',
        accessKeyId: 'AKIDSTACK',
        secretAccessKey: 'stack-secret',
        apiKey: 'stack-api-key',
        defaultBucket: 'admin-files',
        region: 'eu-west-1',
        createdAt: '2026-01-01T00:00:00.000Z',
      }),
    );
    const options = await stackOptions('Cairn', clients());
    // An explicit bucket wins over the secret's.
    expect(targetOf({ ...options, bucket: 'chosen', repository: repoUrl })).toEqual({
      graphqlUrl: 'value-of-GraphqlUrl',
      s3Endpoint: 'value-of-StorageEndpoint',
      gatewayUrl: 'value-of-GatewayUrl',
      sitesDomain: 'value-of-SitesDomain',
      region: 'eu-west-1',
      apiKey: 'stack-api-key',
      accessKeyId: 'AKIDSTACK',
      secretAccessKey: 'stack-secret',
      bucket: 'chosen',
      repository: repoUrl,
      branch: 'main',
    });
  });

  test('a secret still holding its placeholder says the first account is not made', async () => {
    standInStack(PENDING_VALUE);
    await expect(stackOptions('Cairn', clients())).rejects.toThrow(
      new TargetError("the first account's secret still holds its placeholder: the first deploy has not made the account"),
    );
  });
});
