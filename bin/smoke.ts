/**
 * `npm run smoke -- --stack <name>`: what a team runs after `cdk deploy`,
 * against its real stack (or, with the endpoints and credentials given, a
 * server started with `npm start`): GraphQL reads, S3 put and get of 1 MiB
 * and 50 MiB with the AWS CLI's default settings, each object's bytes on
 * the gateway, a site deployed from a public repository and answering at
 * its address, a purge, and cleanup of what it made. Each check prints one
 * line, `ok   <check> (<figures>)` or `FAIL <check>: <reason>` (`skip` when
 * a check it needs failed); the last line counts them. Exit status 1 when
 * any check failed, 2 when it could not start (a missing flag, a stack it
 * cannot read).
 *
 * Every request and every command has a deadline, so a hung endpoint is a
 * FAIL line with its reason, never a hung script. Credentials are never
 * printed: every reason is scrubbed of them before it is written.
 *
 * The AWS CLI runs with its defaults but for path-style addressing (the
 * endpoint is a URL with a path on AWS): no multipart threshold or part
 * size is set, since what a team's own `aws s3 cp` meets is the point.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  DEFAULT_BRANCH,
  DEFAULT_REPOSITORY,
  envName,
  mergeEnv,
  stackOptions,
  TARGET_FLAGS,
  TargetError,
  targetOf,
  type SmokeTarget,
  type TargetOptions,
} from './smoke-target.js';

const MiB = 1024 * 1024;
/** The AWS CLI's default `multipart_chunksize` and `multipart_threshold` (https://docs.aws.amazon.com/cli/latest/topic/s3-config.html). */
const AWS_CLI_DEFAULT_PART = 8 * MiB;
const SECOND = 1000;

const USAGE = `usage: npm run smoke -- --stack <name> [--region <region>]
       npm run smoke -- --graphql <url> --s3 <url> --gateway <url> --api-key <key>
                        --access-key-id <id> --secret-access-key <secret> [--bucket <name>]
                        [--sites-domain <domain>] [--region <region>]
options: --repository <git url> --branch <name> (default: ${DEFAULT_REPOSITORY} ${DEFAULT_BRANCH})
each flag can also be given as CAIRN_SMOKE_<FLAG> (--api-key: CAIRN_SMOKE_API_KEY)`;

// ------------------------------------------------------------------ output

type Verdict = 'ok' | 'FAIL' | 'skip';
const counts: Record<Verdict, number> = { ok: 0, FAIL: 0, skip: 0 };
let secrets: string[] = [];

/** A reason with every credential replaced, on one line. */
function scrub(text: string): string {
  let out = text.replace(/\s+/g, ' ').trim();
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join('***');
  return out.length > 600 ? `${out.slice(0, 600)}...` : out;
}

function report(verdict: Verdict, check: string, detail: string): void {
  counts[verdict]++;
  const line = verdict === 'ok' ? `ok   ${check} (${scrub(detail)})` : `${verdict === 'FAIL' ? 'FAIL' : 'skip'} ${check}: ${scrub(detail)}`;
  process.stdout.write(`${line}\n`);
}

/** A check's failure: its message is the verdict line's reason. */
class CheckFailed extends Error {}

/** Runs one check: `ok` with the figures it returns, or `FAIL` with the reason it threw. */
async function check<T>(name: string, body: () => Promise<{ figures: string; value: T }>): Promise<T | undefined> {
  try {
    const { figures, value } = await body();
    report('ok', name, figures);
    return value;
  } catch (err) {
    report('FAIL', name, reasonOf(err));
    return undefined;
  }
}

function reasonOf(err: unknown): string {
  if (err instanceof CheckFailed || err instanceof TargetError) return err.message;
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError') return `no answer in time (${e.message ?? 'timed out'})`;
  const cause = e?.cause?.code ?? e?.cause?.message;
  return `${e?.message ?? String(err)}${cause ? ` (${cause})` : ''}`;
}

const seconds = (ms: number) => `${(ms / SECOND).toFixed(1)} s`;
const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

// ---------------------------------------------------------------- requests

/** A fetch with a deadline over the whole answer, body included. */
async function fetchBytes(url: string, init: RequestInit, timeoutMs: number): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const signal = AbortSignal.timeout(timeoutMs);
  const res = await fetch(url, { ...init, signal, redirect: 'manual' });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, body };
}

/**
 * GET of a site's address. A name under `localhost` is the loopback
 * interface (RFC 6761, section 6.3), which is how the local service's
 * `<slug>.sites.localhost:<port>` names are meant, though the system's
 * resolver may not know them: those are asked of 127.0.0.1 with the name as
 * Host.
 */
async function getSite(url: string, timeoutMs: number): Promise<{ status: number; body: Buffer }> {
  const u = new URL(url);
  if (!(u.hostname === 'localhost' || u.hostname.endsWith('.localhost'))) return fetchBytes(url, {}, timeoutMs);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: u.port || 80, path: u.pathname + u.search, headers: { host: u.host }, timeout: timeoutMs },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts) }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new CheckFailed(`${u.host} gave no answer in ${seconds(timeoutMs)}`)));
    req.on('error', reject);
    req.end();
  });
}

async function graphql<T>(
  target: SmokeTarget,
  query: string,
  variables: Record<string, unknown> = {},
  timeoutMs = 30 * SECOND,
): Promise<T> {
  const res = await fetchBytes(
    target.graphqlUrl,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: target.apiKey },
      body: JSON.stringify({ query, variables }),
    },
    timeoutMs,
  );
  let answer: { data?: T; errors?: Array<{ message: string; extensions?: { code?: string } }> };
  try {
    answer = JSON.parse(res.body.toString('utf8')) as typeof answer;
  } catch {
    throw new CheckFailed(`GraphQL answered ${res.status} with no JSON: ${res.body.toString('utf8').slice(0, 200)}`);
  }
  if (answer.errors?.length) {
    const e = answer.errors[0]!;
    throw new CheckFailed(`GraphQL ${res.status}: ${e.extensions?.code ? `${e.extensions.code}: ` : ''}${e.message}`);
  }
  if (!answer.data) throw new CheckFailed(`GraphQL answered ${res.status} without data`);
  return answer.data;
}

// ----------------------------------------------------------------- AWS CLI

interface CliRun {
  code: number | string | null;
  stdout: string;
  stderr: string;
}

/** The AWS CLI, with the target's credentials in its environment only (never on its command line) and nothing of ~/.aws. */
function awsCli(target: SmokeTarget, home: string, args: string[], timeoutMs: number): Promise<CliRun> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    LANG: 'C.UTF-8',
    AWS_ACCESS_KEY_ID: target.accessKeyId,
    AWS_SECRET_ACCESS_KEY: target.secretAccessKey,
    AWS_DEFAULT_REGION: target.region,
    AWS_REGION: target.region,
    AWS_CONFIG_FILE: join(home, 'aws-config'),
    AWS_SHARED_CREDENTIALS_FILE: join(home, 'aws-credentials'),
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_PAGER: '',
  };
  return new Promise((resolve) => {
    execFile(
      'aws',
      ['--endpoint-url', target.s3Endpoint, ...args],
      { env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 16 * MiB, encoding: 'utf8' },
      (err, stdout, stderr) => {
        const e = err as (Error & { code?: number | string; killed?: boolean }) | null;
        if (e?.killed) resolve({ code: 'timeout', stdout, stderr: `no end in ${seconds(timeoutMs)}; ${stderr}` });
        else resolve({ code: e ? (e.code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

/** The CLI's last words on a failure (its error line, not its traceback). */
function cliError(run: CliRun): string {
  const lines = run.stderr.trim().split('\n').filter(Boolean);
  const line = lines.findLast((l) => /error|failed|denied|could not|timeout|no end/i.test(l)) ?? lines.at(-1) ?? '';
  // "upload failed: <local path> to s3://... An error occurred (Code) ...": the paths say nothing the check's name does not.
  const at = line.indexOf('An error occurred');
  return `aws exited ${run.code}: ${at > 0 ? line.slice(at) : line}`;
}

/**
 * The request-body limit the S3 endpoint states on every answer
 * (`x-cairn-max-request-body`, docs/aws-s3-clients.md), read from an
 * unsigned request, which is answered (AccessDenied) with the header too.
 */
async function requestBodyLimit(target: SmokeTarget): Promise<number | undefined> {
  try {
    const res = await fetchBytes(`${target.s3Endpoint}/`, {}, 15 * SECOND);
    const value = Number(res.headers.get('x-cairn-max-request-body'));
    return Number.isFinite(value) && value > 0 ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Why a put the CLI failed on did not pass, said as a team needs it: the endpoint's limit against the CLI's 8 MiB parts, and what to use. */
async function putFailure(target: SmokeTarget, size: number, run: CliRun): Promise<string> {
  const said = cliError(run);
  const limit = await requestBodyLimit(target);
  if (limit === undefined || size <= limit) return said;
  const part = Math.min(size, AWS_CLI_DEFAULT_PART);
  if (part <= limit) return said;
  return (
    `the endpoint takes at most ${limit} bytes per request (x-cairn-max-request-body) and the AWS CLI sends ${part / MiB} MiB ` +
    `${size >= AWS_CLI_DEFAULT_PART ? 'parts (its default multipart_chunksize)' : 'in one PUT'}; ` +
    `it will not send parts under 5 MiB, so no AWS CLI setting fits: upload files over ${(limit / MiB).toFixed(0)} MiB with ` +
    `\`cairn storage cp\` (it sizes its parts to the limit), see docs/aws-s3-clients.md (${said})`
  );
}

// ------------------------------------------------------------------ checks

interface Stored {
  key: string;
  size: number;
  hash: string;
  cid: string;
  putMs: number;
  getMs: number;
}

/** The object's CID as the S3 API reports it (`x-service-ipfs-hash` on HEAD, docs/storage.md), from a HEAD signed by the SDK. */
async function objectCid(target: SmokeTarget, bucket: string, key: string): Promise<string> {
  const { S3Client, HeadObjectCommand } = await import('@aws-sdk/client-s3');
  const client = new S3Client({
    endpoint: target.s3Endpoint,
    region: target.region,
    forcePathStyle: true,
    credentials: { accessKeyId: target.accessKeyId, secretAccessKey: target.secretAccessKey },
    maxAttempts: 2,
  });
  let headers: Record<string, string> = {};
  client.middlewareStack.add(
    (next) => async (args) => {
      const out = await next(args);
      headers = (out.response as { headers?: Record<string, string> }).headers ?? {};
      return out;
    },
    { step: 'deserialize', name: 'smokeHeaders' },
  );
  try {
    await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: AbortSignal.timeout(30 * SECOND) });
  } finally {
    client.destroy();
  }
  const cid = headers['x-service-ipfs-hash'];
  if (!cid) throw new CheckFailed('HEAD of the object carried no x-service-ipfs-hash');
  return cid;
}

async function s3RoundTrip(
  target: SmokeTarget,
  home: string,
  dir: string,
  bucket: string,
  size: number,
  created: string[],
): Promise<Stored> {
  const key = `cairn-smoke/${Date.now().toString(36)}-${randomBytes(4).toString('hex')}-${size / MiB}mib.bin`;
  const file = join(dir, `up-${size}`);
  const back = join(dir, `down-${size}`);
  const data = randomBytes(size);
  const hash = sha256(data);
  await writeFile(file, data);
  // Minutes, not seconds: 50 MiB through a Lambda door streams at about 2 MB/s after its first 6 MB
  // (https://docs.aws.amazon.com/lambda/latest/dg/configuration-response-streaming.html).
  const timeoutMs = Math.max(60 * SECOND, (size / MiB) * 6 * SECOND);
  const t0 = Date.now();
  const put = await awsCli(target, home, ['s3', 'cp', '--only-show-errors', file, `s3://${bucket}/${key}`], timeoutMs);
  if (put.code !== 0) {
    // A half-made multipart upload or object is cleanup's to remove too.
    created.push(key);
    throw new CheckFailed(await putFailure(target, size, put));
  }
  created.push(key);
  const putMs = Date.now() - t0;
  const t1 = Date.now();
  const get = await awsCli(target, home, ['s3', 'cp', '--only-show-errors', `s3://${bucket}/${key}`, back], timeoutMs);
  if (get.code !== 0) throw new CheckFailed(`put in ${seconds(putMs)}, get failed: ${cliError(get)}`);
  const getMs = Date.now() - t1;
  const readBack = await hashFile(back);
  if (readBack.hash !== hash)
    throw new CheckFailed(
      `the bytes read back differ: ${readBack.size} bytes, sha256 ${readBack.hash.slice(0, 12)}..., sent ${hash.slice(0, 12)}...`,
    );
  const cid = await objectCid(target, bucket, key);
  return { key, size, hash, cid, putMs, getMs };
}

async function hashFile(path: string): Promise<{ hash: string; size: number }> {
  const h = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path)) {
    h.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { hash: h.digest('hex'), size };
}

interface DeployView {
  id: string;
  status: string;
  phase: string | null;
  ipfsHash: string | null;
  published: boolean;
  url: string;
  log: string | null;
}

const DEPLOY_FIELDS = 'id status phase ipfsHash published url log';

async function followDeploy(target: SmokeTarget, siteId: string, deployId: string, timeoutMs: number): Promise<DeployView> {
  const deadline = Date.now() + timeoutMs;
  let last: DeployView | null = null;
  for (;;) {
    const data = await graphql<{ getDeployById: DeployView | null }>(
      target,
      `query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { ${DEPLOY_FIELDS} } }`,
      { s: siteId, d: deployId },
    );
    last = data.getDeployById;
    if (!last) throw new CheckFailed(`the deploy ${deployId} is gone`);
    if (last.status !== 'IN_PROGRESS') return last;
    if (Date.now() > deadline) throw new CheckFailed(`still ${last.phase ?? 'IN_PROGRESS'} after ${seconds(timeoutMs)}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** The site's own address: `<slug>.<sites domain>`, with the scheme (and, when not given, the domain) of the deploy's own address. */
function siteAddress(target: SmokeTarget, slug: string, deploy: DeployView): string {
  const own = new URL(deploy.url);
  const domain = target.sitesDomain ?? own.host.slice(own.host.indexOf('.') + 1);
  return `${own.protocol}//${slug}.${domain}/`;
}

// -------------------------------------------------------------------- main

async function resolveTarget(argv: string[]): Promise<SmokeTarget> {
  const options: Record<string, { type: 'string' }> = { stack: { type: 'string' } };
  for (const flag of TARGET_FLAGS) options[flag] = { type: 'string' };
  let flags: TargetOptions;
  try {
    flags = parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values as TargetOptions;
  } catch (err) {
    throw new TargetError(`${(err as Error).message}\n${USAGE}`);
  }
  const given = mergeEnv(flags, process.env);
  if (!given.stack) return targetOf(given);
  const region = given.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
  const { CloudFormationClient } = await import('@aws-sdk/client-cloudformation');
  const { SecretsManagerClient } = await import('@aws-sdk/client-secrets-manager');
  const cloudFormation = new CloudFormationClient({ region });
  const secretsManager = new SecretsManagerClient({ region });
  try {
    const fromStack = await stackOptions(given.stack, { cloudFormation, secretsManager });
    return targetOf({ ...fromStack, ...given });
  } catch (err) {
    if (err instanceof TargetError) throw err;
    throw new TargetError(`reading the stack ${given.stack}: ${reasonOf(err)}`);
  } finally {
    cloudFormation.destroy();
    secretsManager.destroy();
  }
}

async function main(argv: string[]): Promise<number> {
  let target: SmokeTarget;
  try {
    target = await resolveTarget(argv);
  } catch (err) {
    process.stderr.write(`cairn smoke: ${err instanceof TargetError ? err.message : reasonOf(err)}\n`);
    return 2;
  }
  secrets = [target.apiKey, target.secretAccessKey, target.accessKeyId];
  process.stdout.write(`Cairn smoke test of ${new URL(target.graphqlUrl).host} (S3 ${target.s3Endpoint})\n`);

  const dir = await mkdtemp(join(tmpdir(), 'cairn-smoke-'));
  const home = join(dir, 'home');
  const created: string[] = [];
  let siteId: string | undefined;
  let bucket = target.bucket;
  try {
    await mkdir(home);
    // Path style: on AWS the endpoint is the API's URL with its stage as a path (docs/aws.md).
    await writeFile(join(home, 'aws-config'), '[default]\ns3 =\n  addressing_style = path\n');

    // GraphQL reads: who the key acts for, its team, the team's sites.
    const team = await check('GraphQL reads', async () => {
      const t0 = Date.now();
      const me = await graphql<{ getCurrentTeam: { id: string; name: string }; getCurrentMember: { accountName: string; role: string } }>(
        target,
        '{ getCurrentTeam { id name } getCurrentMember { accountName role } }',
      );
      const sites = await graphql<{ getSitesByTeam: { sites: Array<{ id: string }>; nextToken: string | null } | null }>(
        target,
        'query ($t: ID!) { getSitesByTeam(teamId: $t, limit: 100) { sites { id } nextToken } }',
        { t: me.getCurrentTeam.id },
      );
      const n = sites.getSitesByTeam?.sites.length ?? 0;
      return {
        figures: `team ${me.getCurrentTeam.name}, ${me.getCurrentMember.accountName} as ${me.getCurrentMember.role}, ${n}${sites.getSitesByTeam?.nextToken ? '+' : ''} sites, ${Date.now() - t0} ms`,
        value: me.getCurrentTeam,
      };
    });

    // S3 through the AWS CLI, then each object's bytes by CID on the gateway.
    if (!bucket) {
      bucket = await check('S3 bucket', async () => {
        const run = await awsCli(target, home, ['s3api', 'list-buckets', '--output', 'json'], 60 * SECOND);
        if (run.code !== 0) throw new CheckFailed(cliError(run));
        const name = (JSON.parse(run.stdout) as { Buckets?: Array<{ Name: string }> }).Buckets?.[0]?.Name;
        if (!name) throw new CheckFailed('the key pair has no bucket; give one with --bucket');
        return { figures: `${name}, the first the key pair lists`, value: name };
      });
    }
    for (const size of [1 * MiB, 50 * MiB]) {
      const name = `S3 put+get ${size / MiB} MiB with aws s3 cp defaults`;
      const gatewayName = `gateway /ipfs/<cid> ${size / MiB} MiB`;
      if (!bucket) {
        report('skip', name, 'no bucket');
        report('skip', gatewayName, 'no object');
        continue;
      }
      const stored = await check(name, async () => {
        const s = await s3RoundTrip(target, home, dir, bucket!, size, created);
        return { figures: `put ${seconds(s.putMs)}, get ${seconds(s.getMs)}, sha256 equal, cid ${s.cid}`, value: s };
      });
      if (!stored) {
        report('skip', gatewayName, 'the object was not stored');
        continue;
      }
      await check(gatewayName, async () => {
        const t1 = Date.now();
        const res = await fetchBytes(`${target.gatewayUrl}/ipfs/${stored.cid}`, {}, Math.max(60, (size / MiB) * 6) * SECOND);
        if (res.status !== 200) throw new CheckFailed(`${res.status} for /ipfs/${stored.cid}`);
        if (sha256(res.body) !== stored.hash)
          throw new CheckFailed(
            `${res.body.length} bytes that differ from the ${stored.size} stored (content-length ${res.headers.get('content-length')})`,
          );
        return { figures: `${res.body.length} bytes, sha256 equal, ${seconds(Date.now() - t1)}`, value: true };
      });
    }

    // A site from the public repository, deployed, answering at its address, purged.
    const deployName = 'deploy to DEPLOYED';
    const site = !team
      ? (report('skip', `site created from ${target.repository}`, 'GraphQL reads failed'), undefined)
      : await check(`site created from ${target.repository}`, async () => {
          const name = `cairn-smoke-${randomBytes(4).toString('hex')}`;
          const data = await graphql<{ createSite: { id: string; slug: string } | null }>(
            target,
            'mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }',
            {
              input: {
                name,
                description: 'made by npm run smoke; deleted when it ends',
                deploySettings: { source: { repository: { type: 'GIT_HOST', url: target.repository, branch: target.branch } } },
              },
            },
          );
          if (!data.createSite) throw new CheckFailed('createSite answered null');
          siteId = data.createSite.id;
          return { figures: `${data.createSite.slug}, branch ${target.branch}`, value: data.createSite };
        });
    const deploy = !site
      ? (report('skip', deployName, 'no site'), undefined)
      : await check(deployName, async () => {
          const t0 = Date.now();
          const queued = await graphql<{ triggerDeploy: DeployView | null }>(
            target,
            `mutation ($s: ID!) { triggerDeploy(siteId: $s) { ${DEPLOY_FIELDS} } }`,
            { s: site.id },
          );
          if (!queued.triggerDeploy) throw new CheckFailed('triggerDeploy answered null');
          // A build on CodeBuild takes a minute or more to start; ten is a broken pipeline.
          const done = await followDeploy(target, site.id, queued.triggerDeploy.id, 10 * 60 * SECOND);
          if (done.status !== 'DEPLOYED') {
            const lastLine = (done.log ?? '').trim().split('\n').at(-1) ?? '';
            throw new CheckFailed(`${done.status} after ${seconds(Date.now() - t0)}: ${lastLine}`);
          }
          return { figures: `${seconds(Date.now() - t0)}, ${done.ipfsHash}${done.published ? ', published' : ''}`, value: done };
        });
    const address = site && deploy ? siteAddress(target, site.slug, deploy) : undefined;
    const answerName = `site answers at its address${address ? ` ${address}` : ''}`;
    if (!site || !deploy || !address) report('skip', answerName, 'no deployed site');
    else
      await check(answerName, async () => {
        // Publication reaches the edge within seconds (a key-value store on AWS); a minute is a fault.
        const deadline = Date.now() + 60 * SECOND;
        const t0 = Date.now();
        let last = '';
        for (;;) {
          try {
            const res = await getSite(address, 20 * SECOND);
            if (res.status === 200) return { figures: `200, ${res.body.length} bytes, ${seconds(Date.now() - t0)}`, value: true };
            last = `answered ${res.status}`;
          } catch (err) {
            last = reasonOf(err);
          }
          if (Date.now() > deadline) throw new CheckFailed(`${last} for 60 s`);
          await new Promise((r) => setTimeout(r, 2000));
        }
      });
    if (!site) report('skip', 'purge', 'no site');
    else
      await check('purge', async () => {
        const t0 = Date.now();
        const data = await graphql<{ purgeCache: boolean | null }>(
          target,
          'mutation ($input: PurgeCacheInput!) { purgeCache(input: $input) }',
          { input: { siteId: site.id } },
        );
        if (data.purgeCache !== true) throw new CheckFailed(`purgeCache answered ${String(data.purgeCache)}`);
        return { figures: `purgeCache answered true, ${Date.now() - t0} ms`, value: true };
      });
  } finally {
    // What it made goes, whatever failed; a cleanup failure is a verdict of its own.
    await check('cleanup', async () => {
      const problems: string[] = [];
      for (const key of created) {
        const run = await awsCli(target, home, ['s3', 'rm', '--only-show-errors', `s3://${bucket}/${key}`], 60 * SECOND);
        if (run.code !== 0) problems.push(`${key}: ${cliError(run)}`);
      }
      if (siteId) {
        try {
          const data = await graphql<{ deleteSite: boolean | null }>(target, 'mutation ($s: ID!) { deleteSite(siteId: $s) }', {
            s: siteId,
          });
          if (data.deleteSite !== true) problems.push(`site ${siteId}: deleteSite answered ${String(data.deleteSite)}`);
        } catch (err) {
          problems.push(`site ${siteId}: ${reasonOf(err)}`);
        }
      }
      await rm(dir, { recursive: true, force: true });
      if (problems.length) throw new CheckFailed(`left behind: ${problems.join('; ')}`);
      return { figures: `${created.length} objects${siteId ? ' and the site' : ''} removed`, value: true };
    });
  }
  process.stdout.write(`${counts.ok} ok, ${counts.FAIL} failed${counts.skip ? `, ${counts.skip} skipped` : ''}\n`);
  return counts.FAIL > 0 ? 1 : 0;
}

// Named here so `--help` output and the docs agree on the variable names.
if (process.argv.includes('--help')) {
  process.stdout.write(`${USAGE}\n(${envName('api-key')}, ${envName('secret-access-key')}, ...)\n`);
  process.exit(0);
}
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`cairn smoke: ${scrub(reasonOf(err))}\n`);
    process.exit(1);
  },
);
