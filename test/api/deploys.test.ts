/**
 * Deploys end to end through the GraphQL API of a local service: a real git
 * server, real clones, builds in the bubblewrap sandbox, the publish
 * directory imported and pinned, the site's published deploy moved. Every
 * wait is a poll with a deadline on what the API reports.
 *
 * Local only (jest.config.js leaves it out against a deployed stack): the
 * repositories are served by a git server this test starts on loopback,
 * which a deployed stack's builders cannot reach; most checks also read
 * the node's pins, run collection, or restart the service on its data.
 */
import { randomBytes } from 'node:crypto';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { exporter } from 'ipfs-unixfs-exporter';
import { CID } from 'multiformats/cid';
import { startTestService, type TestService } from '../support/service.js';
import { captureHeaders } from '../support/s3-doors.js';
import { dataOf, graphqlClient, newAccount, onlyError, type AccountFixture } from '../support/graphql.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { collectGarbage } from '../../functions/core/storage/collect.js';
import { isRootPinned } from '../../functions/core/storage/pins.js';

let service: TestService;
let git: GitServer;
let a: AccountFixture;
let client: ReturnType<typeof graphqlClient>;

beforeAll(async () => {
  [service, git] = await Promise.all([startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_BUILD_TIMEOUT: '20' }), startGitServer()]);
  a = await newAccount(service, 'deployer');
  client = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
});
afterAll(async () => {
  await service?.close();
  await git?.close();
});

const DEPLOY =
  'id status phase ipfsHash startedAt completedAt totalTime log published autoPublish repository { commit branch owner name message }';
const gql = async (query: string, variables: Record<string, unknown> = {}, key = a.apiKey) => client.gql(key, query, variables);

let repos = 0;
async function newRepo(files: Record<string, string>, message = 'first commit'): Promise<{ repo: string; commit: string }> {
  const repo = `acme/site-${++repos}`;
  return { repo, commit: await git.commit(repo, files, message) };
}

async function createSite(input: Record<string, unknown>): Promise<{ id: string; slug: string }> {
  return dataOf(await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', { input })).createSite;
}

function gitSite(repo: string, build: Record<string, unknown> = {}, deploy: Record<string, unknown> = {}) {
  return createSite({
    buildSettings: build,
    deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'main' } }, ...deploy },
  });
}

async function trigger(siteId: string, commit?: string) {
  return dataOf(
    await gql(`mutation ($s: ID!, $c: String) { triggerDeploy(siteId: $s, commit: $c) { ${DEPLOY} } }`, { s: siteId, c: commit }),
  ).triggerDeploy;
}

async function getDeploy(siteId: string, deployId: string) {
  return dataOf(await gql(`query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { ${DEPLOY} } }`, { s: siteId, d: deployId }))
    .getDeployById;
}

/** Polls the deploy until `done` says so (default: it ended), failing after `ms`. */
async function waitFor(siteId: string, deployId: string, done = (d: any) => d.status !== 'IN_PROGRESS', ms = 30_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const deploy = await getDeploy(siteId, deployId);
    if (done(deploy)) return deploy;
    if (Date.now() > deadline)
      throw new Error(`deploy ${deployId} did not get there in ${ms} ms: ${JSON.stringify(deploy).slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A file of the deployed DAG, as text. */
async function fileOf(ipfsHash: string, path: string): Promise<string> {
  const node = await service.services.ipfs();
  const entry = await exporter(`${ipfsHash}/${path}`, node.blockstore);
  const parts: Uint8Array[] = [];
  if (entry.type !== 'file' && entry.type !== 'raw') throw new Error(`${path} is a ${entry.type}`);
  for await (const chunk of entry.content()) parts.push(chunk as Uint8Array);
  return Buffer.concat(parts).toString('utf8');
}

const lastLine = (log: string) => log.trim().split('\n').at(-1) ?? '';

test('a site without a build command deploys its publish directory, goes live, and reports the commit it built', async () => {
  const { repo, commit } = await newRepo(
    { 'public/index.html': '<h1>hello</h1>', 'public/.well-known/x.txt': 'kept', 'README.md': 'not published' },
    'Add the site\n\nWith a body.',
  );
  const site = await gitSite(repo, { publishDirectoryPath: 'public' });
  const started = Date.now();
  const queued = await trigger(site.id);
  expect(Date.now() - started).toBeLessThan(2000);
  expect(queued.status).toBe('IN_PROGRESS');
  // DEPLOYED and published land together; the log's line saying so follows within its next write.
  const deploy = await waitFor(site.id, queued.id, (d) => d.status !== 'IN_PROGRESS' && /Published/.test(d.log ?? ''));
  expect(deploy).toMatchObject({
    status: 'DEPLOYED',
    published: true,
    autoPublish: true,
    repository: { commit, branch: 'main', owner: 'acme', name: repo.split('/')[1], message: 'Add the site' },
  });
  expect(deploy.ipfsHash).toMatch(/^bafybei[a-z2-7]+$/);
  expect(deploy.totalTime).toBeGreaterThan(0);
  expect(Date.parse(deploy.completedAt)).toBeGreaterThanOrEqual(Date.parse(deploy.startedAt));
  expect(await fileOf(deploy.ipfsHash, 'index.html')).toBe('<h1>hello</h1>');
  expect(await fileOf(deploy.ipfsHash, '.well-known/x.txt')).toBe('kept');
  await expect(fileOf(deploy.ipfsHash, 'README.md')).rejects.toThrow();
  expect(await isRootPinned(await service.services.ipfs(), CID.parse(deploy.ipfsHash))).toBe(true);
  for (const phase of ['Cloning', 'Checked out', 'No build command', 'Uploading', 'Pinned', 'Published'])
    expect(deploy.log).toContain(phase);
  const got = dataOf(
    await gql('query ($s: ID!) { getSiteById(siteId: $s) { publishedDeploy { id } latestDeploy { id } } }', { s: site.id }),
  ).getSiteById;
  expect(got).toEqual({ publishedDeploy: { id: deploy.id }, latestDeploy: { id: deploy.id } });
});

test("a build runs in the sandbox with the site's variables and CI's, and none of the service's own environment", async () => {
  process.env.CAIRN_TEST_LEAK = 'the service process only';
  const { repo, commit } = await newRepo({ 'app/src.txt': 'source' });
  const site = await gitSite(repo, {
    baseDirectoryPath: 'app',
    publishDirectoryPath: 'dist',
    buildCommand:
      'mkdir -p dist && echo "<p>$GREETING from $BRANCH</p>" > dist/index.html && env | sort > dist/env.txt && pwd > dist/pwd.txt',
    environmentVariables: [{ name: 'GREETING', value: 'hi' }],
  });
  const deploy = await waitFor(site.id, (await trigger(site.id)).id);
  expect(deploy.status).toBe('DEPLOYED');
  expect(await fileOf(deploy.ipfsHash, 'index.html')).toBe('<p>hi from main</p>\n');
  const env = await fileOf(deploy.ipfsHash, 'env.txt');
  expect(env).toContain('CI=true\n');
  expect(env).toContain(`CAIRN_DEPLOY_ID=${deploy.id}\n`);
  expect(env).toContain(`COMMIT_REF=${commit}\n`);
  expect(env).toContain('BRANCH=main\n');
  expect(env).toMatch(/^PATH=.*node/m);
  expect(env).not.toMatch(/CAIRN_SECRET|CAIRN_BOOTSTRAP|CAIRN_DATA_DIR|AWS_|CAIRN_TEST_LEAK/);
  expect((await fileOf(deploy.ipfsHash, 'pwd.txt')).trim()).toMatch(/\/checkout\/app$/);
  delete process.env.CAIRN_TEST_LEAK;
});

test('a given older commit is built, found by deepening the shallow clone', async () => {
  const { repo, commit: first } = await newRepo({ 'index.html': 'one' }, 'one');
  for (const n of ['two', 'three', 'four']) await git.commit(repo, { 'index.html': n }, n);
  const site = await gitSite(repo);
  const deploy = await waitFor(site.id, (await trigger(site.id, first)).id);
  expect(deploy.status).toBe('DEPLOYED');
  expect(deploy.repository).toMatchObject({ commit: first, message: 'one' });
  expect(await fileOf(deploy.ipfsHash, 'index.html')).toBe('one');
});

test.each([
  ['a build that exits non-zero', { 'index.html': 'x' }, { buildCommand: 'echo building; exit 3' }, /exit code 3/],
  ['a missing publish directory', { 'index.html': 'x' }, { publishDirectoryPath: 'nowhere' }, /publish directory "nowhere" does not exist/],
  [
    'an empty publish directory',
    { 'index.html': 'x' },
    { buildCommand: 'mkdir -p empty', publishDirectoryPath: 'empty' },
    /publish directory "empty" is empty/,
  ],
  [
    'a publish directory that is a symlink out of the repository',
    { 'index.html': 'x' },
    { buildCommand: 'ln -s /etc out', publishDirectoryPath: 'out' },
    /leads out of the repository/,
  ],
])("%s ends FAILED with the reason as the log's last line", async (_, files, build, reason) => {
  const { repo } = await newRepo(files);
  const site = await gitSite(repo, build);
  const deploy = await waitFor(site.id, (await trigger(site.id)).id);
  expect(deploy.status).toBe('FAILED');
  expect(lastLine(deploy.log)).toMatch(reason);
  expect(deploy.published).toBe(false);
});

test('a missing branch and a repository that asks for credentials each fail with one clear line', async () => {
  const { repo } = await newRepo({ 'index.html': 'x' });
  const missing = await createSite({
    deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'nope' } } },
  });
  const privateSite = await createSite({
    deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl('acme/private-x'), branch: 'main' } } },
  });
  const [m, p] = await Promise.all([
    waitFor(missing.id, (await trigger(missing.id)).id),
    waitFor(privateSite.id, (await trigger(privateSite.id)).id),
  ]);
  expect(m.status).toBe('FAILED');
  expect(lastLine(m.log)).toMatch(/branch nope not found/);
  expect(p.status).toBe('FAILED');
  expect(lastLine(p.log)).toMatch(/asks for credentials/);
});

test('a site whose source is a CID deploys that content when the node holds it, and fails clearly when not', async () => {
  const s3 = service.s3();
  const seen = captureHeaders(s3);
  await s3.send(new PutObjectCommand({ Bucket: 'default-bucket', Key: 'deploy-me.html', Body: '<h1>from S3</h1>' }));
  const cid = seen.headers['x-service-ipfs-hash']!;
  const held = await createSite({ deploySettings: { source: { ipfs: { cid } } } });
  const deploy = await waitFor(held.id, (await trigger(held.id)).id);
  expect(deploy).toMatchObject({ status: 'DEPLOYED', ipfsHash: cid, published: true });

  const absent = await createSite({
    deploySettings: { source: { ipfs: { cid: 'bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi' } } },
  });
  const failed = await waitFor(absent.id, (await trigger(absent.id)).id);
  expect(failed.status).toBe('FAILED');
  expect(lastLine(failed.log)).toMatch(/not held by this node/);
});

test('the log grows while the build runs, and cancelDeploy stops it at once', async () => {
  const { repo } = await newRepo({ 'index.html': 'x' });
  const site = await gitSite(repo, { buildCommand: 'echo first line; sleep 60; echo never' });
  const queued = await trigger(site.id);
  expect(queued.phase).toBe('QUEUED');
  const running = await waitFor(site.id, queued.id, (d) => (d.log ?? '').includes('first line'));
  expect(running.status).toBe('IN_PROGRESS');
  expect(running.phase).toBe('BUILDING');
  const asked = Date.now();
  dataOf(await gql('mutation ($s: ID!, $d: ID!) { cancelDeploy(siteId: $s, deployId: $d) { id } }', { s: site.id, d: queued.id }));
  const cancelled = await waitFor(site.id, queued.id);
  expect(Date.now() - asked).toBeLessThan(10_000);
  expect(cancelled.status).toBe('CANCELLED');
  expect(cancelled.phase).toBeNull();
  expect(cancelled.log).not.toMatch(/^never$/m); // the build's last echo never ran
  expect(lastLine(cancelled.log)).toMatch(/Cancelled: cancelled by request/);
  const again = onlyError(
    await gql('mutation ($s: ID!, $d: ID!) { cancelDeploy(siteId: $s, deployId: $d) { id } }', { s: site.id, d: queued.id }),
  );
  expect(again.extensions.code).toBe('BAD_USER_INPUT');
});

test('a second deploy of the same tree copies the kept checkout and reads no unchanged file again; what the build changes is read', async () => {
  const { repo } = await newRepo({ 'public/index.html': 'home', 'public/a.html': 'a', 'public/b.html': 'b' });
  // The build rewrites a.html in place on every run: that file must be read again each time.
  const site = await gitSite(repo, { buildCommand: 'echo " built" >> public/a.html', publishDirectoryPath: 'public' });
  const first = await waitFor(site.id, (await trigger(site.id)).id, (d) => d.status !== 'IN_PROGRESS' && /Published/.test(d.log ?? ''));
  expect(first.status).toBe('DEPLOYED');
  const second = await waitFor(site.id, (await trigger(site.id)).id, (d) => d.status !== 'IN_PROGRESS' && /Published/.test(d.log ?? ''));
  expect(second.status).toBe('DEPLOYED');
  expect(second.log).toContain('Same files as the last deploy of this branch');
  expect(second.log).toMatch(/Imported 3 files \([0-9.]+ MB\) \(2 unchanged since the last deploy, not read again\)/);
  expect(second.ipfsHash).toBe(first.ipfsHash);
  expect(await fileOf(second.ipfsHash, 'a.html')).toBe('a built\n');
  // A new commit: the changed file is read, the others are not.
  await git.commit(repo, { 'public/b.html': 'b2' }, 'change b');
  const third = await waitFor(site.id, (await trigger(site.id)).id, (d) => d.status !== 'IN_PROGRESS' && /Published/.test(d.log ?? ''));
  expect(third.log).toMatch(/\(1 unchanged since the last deploy, not read again\)/);
  expect(await fileOf(third.ipfsHash, 'b.html')).toBe('b2');
  expect(await fileOf(third.ipfsHash, 'index.html')).toBe('home');
});

test('a file taken as imported before whose blocks are gone is imported again when the pin finds the hole', async () => {
  const big = randomBytes(600 * 1024).toString('base64'); // several 256 KiB leaves under one root
  const { repo } = await newRepo({ 'public/big.txt': big, 'public/index.html': 'v1' });
  const site = await gitSite(repo, { publishDirectoryPath: 'public' });
  const first = await waitFor(site.id, (await trigger(site.id)).id);
  expect(first.status).toBe('DEPLOYED');
  // Damage as a collection cut short leaves it: the file's root block stays, a leaf goes.
  const node = await service.services.ipfs();
  const file = await exporter(`${first.ipfsHash}/big.txt`, node.blockstore);
  if (file.type !== 'file' || file.node.Links.length < 2) throw new Error('expected a file of several blocks');
  await node.blockstore.delete(file.node.Links[1]!.Hash);
  await git.commit(repo, { 'public/index.html': 'v2' }, 'change index');
  const second = await waitFor(site.id, (await trigger(site.id)).id);
  expect(second.status).toBe('DEPLOYED');
  expect(second.log).toMatch(/of a file taken as imported before is gone; importing every file again/);
  expect(await fileOf(second.ipfsHash, 'big.txt')).toBe(big);
  expect(await fileOf(second.ipfsHash, 'index.html')).toBe('v2');
});

test('retryDeploy builds the same commit again as a new deploy; the old one stays as it was', async () => {
  const { repo, commit } = await newRepo({ 'index.html': 'x' });
  const site = await gitSite(repo, { buildCommand: 'test -f fixed || exit 9' });
  const failed = await waitFor(site.id, (await trigger(site.id)).id);
  expect(failed.status).toBe('FAILED');
  await git.commit(repo, { fixed: 'later commit' }, 'later');
  await gql('mutation ($s: ID!, $i: UpdateSiteInput!) { updateSite(siteId: $s, input: $i) { id } }', {
    s: site.id,
    i: { buildSettings: { buildCommand: 'echo retried' } },
  });
  const retry = dataOf(
    await gql(`mutation ($s: ID!, $d: ID!) { retryDeploy(siteId: $s, deployId: $d) { ${DEPLOY} } }`, { s: site.id, d: failed.id }),
  ).retryDeploy;
  expect(retry.id).not.toBe(failed.id);
  const done = await waitFor(site.id, retry.id);
  expect(done.status).toBe('DEPLOYED');
  expect(done.repository.commit).toBe(commit); // the same commit, not the branch's newer head
  expect(done.log).toContain('retried'); // with the site's current settings
  expect(await getDeploy(site.id, failed.id)).toEqual(failed);
});

test('with auto-publishing off a deploy is not published until publishDeploy, which also rolls back', async () => {
  const { repo } = await newRepo({ 'index.html': 'v1' });
  const site = await gitSite(repo, {}, { autoPublishing: false });
  const first = await waitFor(site.id, (await trigger(site.id)).id);
  expect(first).toMatchObject({ status: 'DEPLOYED', published: false, autoPublish: false });
  await git.commit(repo, { 'index.html': 'v2' }, 'v2');
  const second = await waitFor(site.id, (await trigger(site.id)).id);
  const publish = (d: string) =>
    gql('mutation ($s: ID!, $d: ID!) { publishDeploy(siteId: $s, deployId: $d) { id published } }', { s: site.id, d });
  expect(dataOf(await publish(second.id)).publishDeploy).toEqual({ id: second.id, published: true });
  expect(dataOf(await publish(first.id)).publishDeploy).toEqual({ id: first.id, published: true });
  expect((await getDeploy(site.id, second.id)).published).toBe(false);

  const { repo: bad } = await newRepo({ 'index.html': 'x' });
  const failing = await gitSite(bad, { buildCommand: 'exit 1' });
  const failed = await waitFor(failing.id, (await trigger(failing.id)).id);
  expect(
    onlyError(await gql('mutation ($s: ID!, $d: ID!) { publishDeploy(siteId: $s, deployId: $d) { id } }', { s: failing.id, d: failed.id }))
      .extensions.code,
  ).toBe('BAD_USER_INPUT');
});

test('20 triggers at once on one site: each is answered, older queued ones are superseded, the newest goes live', async () => {
  const { repo } = await newRepo({ 'index.html': 'x' });
  const site = await gitSite(repo, { buildCommand: 'sleep 1' });
  const deploys = await Promise.all(Array.from({ length: 20 }, () => trigger(site.id)));
  expect(new Set(deploys.map((d) => d.id)).size).toBe(20);
  await Promise.all(deploys.map((d) => waitFor(site.id, d.id, undefined, 60_000)));
  // Read once all have ended: a deploy that went live before the newest did was published until then.
  const ended = await Promise.all(deploys.map((d) => getDeploy(site.id, d.id)));
  const newest = [...ended].sort((x, y) => (x.id < y.id ? 1 : -1))[0];
  expect(newest.status).toBe('DEPLOYED');
  expect(newest.published).toBe(true);
  const superseded = ended.filter((d) => d.status === 'CANCELLED');
  expect(superseded.length).toBeGreaterThanOrEqual(17);
  for (const d of superseded) expect(lastLine(d.log)).toMatch(/superseded by /);
  expect(ended.filter((d) => d.published)).toHaveLength(1);
});

test("refusals: the alternative platform, a bad commit, another team's site, an unknown deploy", async () => {
  const { repo } = await newRepo({ 'index.html': 'x' });
  const alt = await createSite({
    platform: 'alt',
    deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'main' } } },
  });
  const altError = onlyError(await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: alt.id }));
  expect(altError.extensions.code).toBe('BAD_USER_INPUT');
  expect(altError.message).toMatch(/alternative platform/);
  const site = await gitSite(repo);
  expect(
    onlyError(await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s, commit: "not-a-hash") { id } }', { s: site.id })).extensions.field,
  ).toBe('commit');
  const other = await newAccount(service, 'other');
  // Another team's site: FORBIDDEN for every hosting action, and nothing is done.
  const theirs = onlyError(await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: site.id }, other.apiKey));
  expect([theirs.extensions.code, theirs.message]).toEqual([
    'FORBIDDEN',
    'The site belongs to another team; this API key cannot deploy it',
  ]);
  for (const action of ['retryDeploy', 'cancelDeploy', 'publishDeploy']) {
    expect(
      onlyError(await gql(`mutation ($s: ID!) { ${action}(siteId: $s, deployId: "nope") { id } }`, { s: site.id }, other.apiKey)).extensions
        .code,
    ).toBe('FORBIDDEN');
  }
  expect(
    dataOf(await gql('query ($s: ID!) { getDeploysBySite(siteId: $s) { deploys { id } } }', { s: site.id })).getDeploysBySite.deploys,
  ).toEqual([]);
  expect(
    onlyError(await gql('mutation { triggerDeploy(siteId: "00000000-0000-4000-8000-000000000000") { id } }', {}, other.apiKey)).extensions
      .code,
  ).toBe('NOT_FOUND');
  expect(
    onlyError(await gql('mutation ($s: ID!) { retryDeploy(siteId: $s, deployId: "nope") { id } }', { s: site.id })).extensions.code,
  ).toBe('NOT_FOUND');
  expect(
    dataOf(await gql('query ($s: ID!) { getDeployById(siteId: $s, deployId: "nope") { id } }', { s: site.id })).getDeployById,
  ).toBeNull();
});

test("deleting a site releases its deploys' content to garbage collection", async () => {
  const { repo } = await newRepo({ 'index.html': `only here ${Date.now()}` });
  const site = await gitSite(repo);
  const deploy = await waitFor(site.id, (await trigger(site.id)).id);
  const root = CID.parse(deploy.ipfsHash);
  const node = await service.services.ipfs();
  await collectGarbage(service.services);
  expect(await node.blockstore.has(root)).toBe(true);
  dataOf(await gql('mutation ($s: ID!) { deleteSite(siteId: $s) }', { s: site.id }));
  await collectGarbage(service.services);
  expect(await node.blockstore.has(root)).toBe(false);
  expect(await isRootPinned(node, root)).toBe(false);
});

test('after a restart, queued deploys run and one that was running when the process died ends FAILED', async () => {
  const { mkdtemp, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = await mkdtemp(join(tmpdir(), 'cairn-restart-'));
  try {
    const { repo } = await newRepo({ 'index.html': 'x' });
    const first = await startTestService({ CAIRN_GC_INTERVAL: '0' }, dir);
    const owner = await newAccount(first, 'restarter');
    const site = await first.services.sites.create({
      teamId: owner.team.id,
      createdBy: owner.account.id,
      buildSettings: { environmentVariables: [] },
      deploySettings: {
        autoPublishing: true,
        prDeployPreviews: false,
        source: { kind: 'repository', type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'main' },
      },
    });
    // Told of failures: the deploy the restart ends is one (nothing listens: only the recorded delivery is checked).
    const url = await first.services.notificationUrls.add(site.id, {
      url: 'http://127.0.0.1:9/hook',
      events: ['FAILED'],
      secret: 'whsec_test',
    });
    await first.stop();
    // What a crash leaves: one deploy claimed by a worker that died, one still queued.
    const { openLocalStorage } = await import('../../functions/local/service.js');
    const { loadConfig } = await import('../../functions/core/config.js');
    const { serviceEnv } = await import('../support/service.js');
    const storage = await openLocalStorage(loadConfig(await serviceEnv(dir)), service.services.logger);
    const source = { kind: 'git' as const, url: git.repoUrl(repo), branch: 'main', commit: null };
    const interrupted = await storage.services.deploys.enqueue({
      siteId: site.id,
      autoPublish: true,
      repository: {},
      source,
      build: { env: {} },
    });
    expect(await storage.services.deploys.claim(site.id, interrupted.id)).toBeDefined();
    const waiting = await storage.services.deploys.enqueue({
      siteId: site.id,
      autoPublish: true,
      repository: {},
      source,
      build: { env: {} },
    });
    await storage.close();

    const second = await startTestService({ CAIRN_GC_INTERVAL: '0' }, dir);
    try {
      const deadline = Date.now() + 30_000;
      let states: Array<string | undefined> = [];
      while (Date.now() < deadline) {
        states = await Promise.all([interrupted, waiting].map(async (d) => (await second.services.deploys.get(site.id, d.id))?.status));
        if (states.every((s) => s !== 'IN_PROGRESS')) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(states).toEqual(['FAILED', 'DEPLOYED']);
      expect((await second.services.deploys.get(site.id, interrupted.id))!.reason).toBe('interrupted by a restart of the service');
      const told = await second.services.notificationDeliveries.listOfUrl(site.id, url.id, 10);
      expect(told.map((d) => [d.event, d.deployId])).toEqual([['FAILED', interrupted.id]]);
    } finally {
      await second.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
