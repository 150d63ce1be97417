/**
 * Deploys from git hosts as they run in AWS, with the AWS calls recorded by
 * aws-sdk-client-mock. The GraphQL Lambda in its AWS configuration (the
 * deploy queue's URL set, secrets sealed with KMS) takes a signed GitHub
 * event, as API Gateway hands it over (a JSON body as plain text), and puts
 * exactly that deploy on SQS; a pull request puts a preview there; a bad
 * signature sends nothing. The webhook secret and the repository token are
 * sealed by KMS Encrypt under their encryption contexts and opened by
 * Decrypt, in the hook and in the deploy worker's clone; no other recorded
 * call carries either in the clear.
 *
 * KMS is a stand-in that really encrypts (AES-GCM, the encryption context
 * bound as associated data), so a value opened under another context fails
 * as it would in KMS. The records are in the embedded DynamoDB, blocks and
 * logs in a bucket on Cairn's own local S3 endpoint, the repositories on a
 * local git server.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DecryptCommand, EncryptCommand, KMSClient, type DecryptCommandInput, type EncryptCommandInput } from '@aws-sdk/client-kms';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { startTestService, type TestService } from '../support/service.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { importGraphqlLambda } from '../support/graphql.js';
import { lambdaFetch } from '../support/lambda-door.js';
import { lambdaEnv, QUEUE_URL, sqsEvent, stackBucketEnv, startLambdas, type AwsLambdas } from '../support/aws-mocks.js';
import { aesSealer } from '../../functions/core/auth/secrets.js';

const KEY_ID = 'arn:aws:kms:us-east-1:123456789012:key/0b5a7c1e-6f2d-4c83-9e41-2f7d8a9b0c11';
const BUCKET = 'cairn-hooks-bucket';

const sqs = mockClient(SQSClient);
const kms = mockClient(KMSClient);
/** The stand-in's own key: what KMS holds and never hands out. */
const kmsKey = aesSealer(randomBytes(32));
const contextOf = (context: Record<string, string> | undefined) => JSON.stringify(context ?? {});

let service: TestService;
let git: GitServer;
let lambdas: AwsLambdas;
/** A POST through the GraphQL Lambda as API Gateway sends a JSON body: plain text, not base64. */
let hook: (path: string, headers: Record<string, string>, body: string) => Promise<Response>;

beforeAll(async () => {
  [service, git] = await Promise.all([startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_PREVIEW: 'off' }), startGitServer()]);
  mockAws();
  // The stack's configuration: a KMS key, no local sealing key.
  const env = lambdaEnv(service, 'hooks-', {
    ...(await stackBucketEnv(service, BUCKET)),
    CAIRN_KMS_KEY_ID: KEY_ID,
  });
  delete env.CAIRN_SECRET_KEY;
  lambdas = await startLambdas(env, 'aws-hooks', ['CAIRN_SECRET_KEY']);
  const graphqlLambda = await importGraphqlLambda();
  hook = (path, headers, body) =>
    lambdaFetch(graphqlLambda, { bodies: 'text' })(`https://api.example.com${path}`, { method: 'POST', headers, body });
}, 60_000);

afterAll(async () => {
  await lambdas?.close();
  await service?.close();
  await git?.close();
});

/** SQS takes every message; KMS encrypts and decrypts for real, refusing another key or another context. */
function mockAws() {
  sqs.reset();
  kms.reset();
  sqs.on(SendMessageCommand).resolves({ MessageId: randomUUID() });
  kms.on(EncryptCommand).callsFake(async (input: EncryptCommandInput) => {
    if (input.KeyId !== KEY_ID) throw Object.assign(new Error(`no key ${input.KeyId}`), { name: 'NotFoundException' });
    const sealed = await kmsKey.seal(Buffer.from(input.Plaintext!).toString('utf8'), contextOf(input.EncryptionContext));
    return { KeyId: KEY_ID, CiphertextBlob: Buffer.from(sealed) };
  });
  kms.on(DecryptCommand).callsFake(async (input: DecryptCommandInput) => {
    try {
      const plain = await kmsKey.open(Buffer.from(input.CiphertextBlob!).toString('utf8'), contextOf(input.EncryptionContext));
      return { KeyId: KEY_ID, Plaintext: Buffer.from(plain) };
    } catch {
      throw Object.assign(new Error('the ciphertext does not open under this encryption context'), { name: 'InvalidCiphertextException' });
    }
  });
}

beforeEach(() => {
  sqs.resetHistory();
  kms.resetHistory();
});

const gql = (query: string, variables: Record<string, unknown> = {}) => lambdas.gql(query, variables);
const messages = () =>
  sqs.commandCalls(SendMessageCommand).map((c) => ({ queue: c.args[0].input.QueueUrl, body: JSON.parse(c.args[0].input.MessageBody!) }));
const encrypts = () => kms.commandCalls(EncryptCommand).map((c) => c.args[0].input);
const decrypts = () => kms.commandCalls(DecryptCommand).map((c) => c.args[0].input);

/**
 * Every recorded call's input as text, byte arrays both as text and as
 * base64, leaving out Encrypt's Plaintext (the one place a secret is given
 * to KMS): a secret found here has left in the clear.
 */
function recordedInputs(): string {
  const calls = [...sqs.calls(), ...kms.calls()];
  return calls
    .map((call) => {
      const input = { ...(call.args[0] as any).input };
      if (call.args[0] instanceof EncryptCommand) delete input.Plaintext;
      return JSON.stringify(input, (_, v) =>
        v instanceof Uint8Array || (v && v.type === 'Buffer')
          ? `${Buffer.from(v.data ?? v).toString('utf8')} ${Buffer.from(v.data ?? v).toString('base64')}`
          : v,
      );
    })
    .join('\n');
}

let repos = 0;
async function gitSite(files: Record<string, string>, deploy: Record<string, unknown> = {}) {
  const repo = `acme/aws-hooked-${++repos}`;
  const commit = await git.commit(repo, files, 'the site');
  const input = {
    buildSettings: { publishDirectoryPath: 'public' },
    deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'main' } }, ...deploy },
  };
  const site = (await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', { input })).createSite as {
    id: string;
    slug: string;
  };
  return { repo, commit, site };
}

async function webhookSecret(siteId: string): Promise<string> {
  return (await gql('mutation ($s: ID!) { createWebhookSecret(siteId: $s) { secret } }', { s: siteId })).createWebhookSecret.secret;
}

const signed = (secret: string, event: string, body: string) => ({
  'content-type': 'application/json',
  'x-github-event': event,
  'x-github-delivery': randomUUID(),
  'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
});
const pushEvent = (ref: string, after: string) => JSON.stringify({ ref, before: '0'.repeat(40), after, deleted: false });

/** Runs the one queued message through the deploy worker, and the deploy it names to its end. */
async function runQueued(siteId: string, deployId: string) {
  const [message] = sqs.commandCalls(SendMessageCommand);
  expect(await lambdas.worker(sqsEvent(message!.args[0].input.MessageBody!))).toEqual({ batchItemFailures: [] });
  return lambdas.aws.deploys.get(siteId, deployId);
}

test("setting the webhook secret is one KMS Encrypt under the site's webhook context; what is stored is the ciphertext", async () => {
  const { site } = await gitSite({ 'public/index.html': 'x' });
  kms.resetHistory();
  const secret = await webhookSecret(site.id);
  expect(encrypts()).toEqual([{ KeyId: KEY_ID, Plaintext: Buffer.from(secret), EncryptionContext: { cairn: `site-webhook:${site.id}` } }]);
  expect(decrypts()).toEqual([]);
  const item = (
    await lambdas.aws.db.doc.send(
      new GetCommand({ TableName: lambdas.aws.config.tables.sites, Key: { pk: `SITE#${site.id}`, sk: 'SECRETS' } }),
    )
  ).Item!;
  expect(item.webhookSecret).toMatch(/^kms\./);
  expect(JSON.stringify(item)).not.toContain(secret);
  expect(recordedInputs()).not.toContain(secret);
});

test('a signed push through the GraphQL Lambda opens the secret with KMS Decrypt and sends exactly that deploy to SQS', async () => {
  const { commit, site } = await gitSite({ 'public/index.html': 'pushed' });
  const secret = await webhookSecret(site.id);
  kms.resetHistory();
  const body = pushEvent('refs/heads/main', commit);
  const res = await hook(`/hooks/git/${site.id}`, signed(secret, 'push', body), body);
  expect(res.status).toBe(200);
  const answer = await res.json();
  expect(answer).toEqual({
    ok: true,
    deployId: expect.any(String),
    url: expect.stringContaining(`//${answer.deployId.toLowerCase()}--${site.slug}.`),
  });
  expect(decrypts()).toEqual([{ CiphertextBlob: expect.any(Uint8Array), EncryptionContext: { cairn: `site-webhook:${site.id}` } }]);
  expect(encrypts()).toEqual([]);
  expect(messages()).toEqual([{ queue: QUEUE_URL, body: { siteId: site.id, deployId: answer.deployId } }]);
  expect(await lambdas.aws.deploys.get(site.id, answer.deployId)).toMatchObject({
    status: 'IN_PROGRESS',
    phase: 'queued',
    repository: { commit, branch: 'main' },
  });
  // The worker given that message deploys that commit and publishes it.
  expect(await runQueued(site.id, answer.deployId)).toMatchObject({ status: 'DEPLOYED', repository: { commit, branch: 'main' } });
  expect((await lambdas.aws.sites.getById(site.id))?.publishedDeployId).toBe(answer.deployId);
  expect(recordedInputs()).not.toContain(secret);
});

test("a pull-request event sends a preview deploy of the PR's head to SQS, which the worker builds and does not publish", async () => {
  const { repo, site } = await gitSite({ 'public/index.html': 'main' }, { prDeployPreviews: true });
  const head = await git.commit(repo, { 'public/index.html': 'feature' }, 'feature work', 'feature');
  const secret = await webhookSecret(site.id);
  const body = JSON.stringify({
    action: 'opened',
    number: 5,
    pull_request: {
      number: 5,
      title: 'A feature',
      html_url: `https://github.example/${repo}/pull/5`,
      head: { ref: 'feature', sha: head, repo: { id: 1, full_name: repo, clone_url: git.repoUrl(repo) } },
      base: { ref: 'main', repo: { id: 1, full_name: repo, clone_url: git.repoUrl(repo) } },
    },
  });
  const res = await hook(`/hooks/git/${site.id}`, signed(secret, 'pull_request', body), body);
  expect(res.status).toBe(200);
  const { deployId } = await res.json();
  expect(messages()).toEqual([{ queue: QUEUE_URL, body: { siteId: site.id, deployId } }]);
  expect(await lambdas.aws.deploys.get(site.id, deployId)).toMatchObject({
    preview: true,
    pullRequest: { number: 5, title: 'A feature', fork: false },
    repository: { commit: head, branch: 'feature' },
  });
  expect(await runQueued(site.id, deployId)).toMatchObject({
    status: 'DEPLOYED',
    preview: true,
    repository: { commit: head, branch: 'feature' },
  });
  expect((await lambdas.aws.sites.getById(site.id))?.publishedDeployId).toBeFalsy();
  expect(recordedInputs()).not.toContain(secret);
});

test('a wrong or missing signature, or a wrong GitLab token, is 401 and sends nothing to SQS', async () => {
  const { commit, site } = await gitSite({ 'public/index.html': 'x' });
  const secret = await webhookSecret(site.id);
  const body = pushEvent('refs/heads/main', commit);
  const { 'x-hub-signature-256': _, ...unsigned } = signed(secret, 'push', body);
  for (const headers of [
    signed('not-the-secret', 'push', body),
    unsigned,
    { 'content-type': 'application/json', 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': `${secret}x` },
  ]) {
    const res = await hook(`/hooks/git/${site.id}`, headers, body);
    expect(res.status).toBe(401);
  }
  expect(sqs.commandCalls(SendMessageCommand)).toEqual([]);
  expect((await lambdas.aws.deploys.listBySite(site.id, 10)).items).toEqual([]);
});

test('the repository token is sealed by KMS Encrypt under its own context and opened by Decrypt in the worker, whose clone uses it', async () => {
  const { repo, commit, site } = await gitSite({ 'public/index.html': 'private' });
  const token = `ghp_${randomBytes(18).toString('hex')}`;
  await git.requireCredentials(repo, 'x-access-token', token);
  kms.resetHistory();
  await gql('mutation ($s: ID!, $t: String) { setRepositoryToken(siteId: $s, token: $t) { id } }', { s: site.id, t: token });
  expect(encrypts()).toEqual([
    { KeyId: KEY_ID, Plaintext: Buffer.from(token), EncryptionContext: { cairn: `site-repository-token:${site.id}` } },
  ]);
  const secret = await webhookSecret(site.id);
  kms.resetHistory();
  const body = pushEvent('refs/heads/main', commit);
  const { deployId } = await (await hook(`/hooks/git/${site.id}`, signed(secret, 'push', body), body)).json();
  // The hook opens only the webhook secret; the token is the worker's to open, when it clones.
  expect(decrypts().map((d) => d.EncryptionContext)).toEqual([{ cairn: `site-webhook:${site.id}` }]);
  const done = await runQueued(site.id, deployId);
  expect(done).toMatchObject({ status: 'DEPLOYED', repository: { commit } });
  expect(decrypts().map((d) => d.EncryptionContext)).toEqual([
    { cairn: `site-webhook:${site.id}` },
    { cairn: `site-repository-token:${site.id}` },
  ]);
  const basic = `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
  expect((await git.authorizations()).some((x) => x.authorization === basic)).toBe(true);
  const inputs = recordedInputs();
  expect(inputs).not.toContain(token);
  expect(inputs).not.toContain(secret);
  expect(JSON.stringify(done)).not.toContain(token);
});

/** Runs the queued message naming `deployId` through the deploy worker, and that deploy to its end. */
async function runMessageOf(siteId: string, deployId: string) {
  const message = sqs.commandCalls(SendMessageCommand).find((c) => JSON.parse(c.args[0].input.MessageBody!).deployId === deployId);
  expect(message).toBeDefined();
  expect(await lambdas.worker(sqsEvent(message!.args[0].input.MessageBody!))).toEqual({ batchItemFailures: [] });
  return lambdas.aws.deploys.get(siteId, deployId);
}

test('an old push sent again under a new delivery id is built by the worker Lambda but not published over the newer commit of the private repository', async () => {
  const { repo, commit: one, site } = await gitSite({ 'public/index.html': 'one' });
  const token = `ghp_${randomBytes(18).toString('hex')}`;
  await git.requireCredentials(repo, 'x-access-token', token);
  await gql('mutation ($s: ID!, $t: String) { setRepositoryToken(siteId: $s, token: $t) { id } }', { s: site.id, t: token });
  const secret = await webhookSecret(site.id);
  const oldBody = pushEvent('refs/heads/main', one);
  const send = async (body: string) =>
    (await (await hook(`/hooks/git/${site.id}`, signed(secret, 'push', body), body)).json()).deployId as string;
  const first = await send(oldBody);
  const live = async () => (await lambdas.aws.sites.getById(site.id))?.publishedDeployId;
  expect(await runMessageOf(site.id, first)).toMatchObject({ status: 'DEPLOYED' });
  expect(await live()).toBe(first);
  const two = await git.commit(repo, { 'public/index.html': 'two' }, 'two');
  const second = await send(pushEvent('refs/heads/main', two));
  expect(await runMessageOf(site.id, second)).toMatchObject({ status: 'DEPLOYED' });
  expect(await live()).toBe(second);
  // The same body again, signed as before, under a new delivery id.
  kms.resetHistory();
  const replayed = await send(oldBody);
  expect(await runMessageOf(site.id, replayed)).toMatchObject({ status: 'DEPLOYED', repository: { commit: one } });
  expect(await live()).toBe(second);
  const log = (await lambdas.aws.deployLogs.read(`${site.id}/${replayed}`)) ?? '';
  expect(log).toContain(`Not published: ${one.slice(0, 7)} is older than the published ${two.slice(0, 7)}; publishDeploy it to roll back`);
  // The repository answers only with the site's token: the history was read with it (without it the comparison could not be made,
  // and the deploy would have gone live as before), and no recorded call carries it in the clear.
  expect(log).not.toContain('Could not tell');
  expect(recordedInputs()).not.toContain(token);
});

test('a pull request from a fork sends nothing to SQS unless the site builds fork pull requests', async () => {
  const { repo, site } = await gitSite({ 'public/index.html': 'main' }, { prDeployPreviews: true });
  const fork = `forker/aws-fork-${repos}`;
  const head = await git.commit(fork, { 'public/index.html': 'fork' }, 'fork work', 'patch');
  const secret = await webhookSecret(site.id);
  const body = JSON.stringify({
    action: 'opened',
    number: 6,
    pull_request: {
      number: 6,
      head: { ref: 'patch', sha: head, repo: { id: 2, full_name: fork, clone_url: git.repoUrl(fork) } },
      base: { ref: 'main', repo: { id: 1, full_name: repo, clone_url: git.repoUrl(repo) } },
    },
  });
  const ignored = await hook(`/hooks/git/${site.id}`, signed(secret, 'pull_request', body), body);
  expect(ignored.status).toBe(200);
  expect((await ignored.json()).ignored).toMatch(/^pull request #6 comes from a fork: fork pull requests are not built for this site/);
  expect(sqs.commandCalls(SendMessageCommand)).toEqual([]);
  expect((await lambdas.aws.deploys.listBySite(site.id, 10)).items).toEqual([]);
  await gql('mutation ($s: ID!, $i: UpdateSiteInput!) { updateSite(siteId: $s, input: $i) { id } }', {
    s: site.id,
    i: { deploySettings: { forkPullRequests: 'BUILT_WITHOUT_SECRETS' } },
  });
  const built = await (await hook(`/hooks/git/${site.id}`, signed(secret, 'pull_request', body), body)).json();
  expect(await runMessageOf(site.id, built.deployId)).toMatchObject({
    status: 'DEPLOYED',
    preview: true,
    pullRequest: { number: 6, fork: true },
    repository: { commit: head },
  });
  expect((await lambdas.aws.sites.getById(site.id))?.publishedDeployId).toBeFalsy();
});
