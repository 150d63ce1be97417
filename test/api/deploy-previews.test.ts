/**
 * A deploy's preview image, end to end on a local service with previews on
 * (the test services take none unless asked, test/support/service-env.ts):
 * a real git server, a build in the sandbox, then Chromium's picture of the
 * published index page, pinned, served by the gateway, and released with
 * the site; a publish directory without index.html gets none and says why.
 *
 * Local only: the git server listens on this machine's loopback, and the
 * checks read the node's pins and run collection.
 */
import { CID } from 'multiformats/cid';
import { startTestService, type TestService } from '../support/service.js';
import { dataOf, graphqlClient, newAccount, type AccountFixture } from '../support/graphql.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { waitFor } from '../support/wait.js';
import { collectGarbage } from '../../functions/core/storage/collect.js';
import { isRootPinned } from '../../functions/core/storage/pins.js';
import { decodePng } from '../support/png.js';

let service: TestService;
let git: GitServer;
let a: AccountFixture;
let client: ReturnType<typeof graphqlClient>;

beforeAll(async () => {
  [service, git] = await Promise.all([
    startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_BUILD_TIMEOUT: '20', CAIRN_PREVIEW: 'on' }),
    startGitServer(),
  ]);
  a = await newAccount(service, 'previewer');
  client = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
});
afterAll(async () => {
  await service?.close();
  await git?.close();
});

const gql = async (query: string, variables: Record<string, unknown> = {}) => client.gql(a.apiKey, query, variables);

let repos = 0;
/** A site on a new repository of `files`, built from `publishDirectoryPath`, and its first deploy once its log tells of the picture. */
async function deployed(files: Record<string, string>, publishDirectoryPath?: string) {
  const repo = `acme/previewed-${++repos}`;
  await git.commit(repo, files, 'first commit');
  const site = dataOf(
    await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id } }', {
      input: {
        buildSettings: publishDirectoryPath ? { publishDirectoryPath } : {},
        deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'main' } } },
      },
    }),
  ).createSite as { id: string };
  const queued = dataOf(await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: site.id })).triggerDeploy as {
    id: string;
  };
  const deploy = await waitFor(
    async () => {
      const d = dataOf(
        await gql('query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { id status log previewImage } }', {
          s: site.id,
          d: queued.id,
        }),
      ).getDeployById;
      return d.status !== 'IN_PROGRESS' && /preview image/i.test(d.log ?? '') ? d : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100, what: `deploy ${queued.id} to end and tell of its preview image` },
  );
  return { site, deploy: deploy as { id: string; status: string; log: string; previewImage: string | null } };
}

test('a deployed site gets a preview image: a 1280×800 picture of its index page, pinned, served by the gateway, kept until the site goes', async () => {
  const { site, deploy } = await deployed(
    {
      // Its load outlasts the worker's 2 s poll, which must leave a deploy that ended DEPLOYED to take its picture.
      'site/index.html':
        '<!doctype html><link rel="stylesheet" href="/style.css"><body><h1>hello</h1><script>for (const t = Date.now(); Date.now() - t < 2500;);</script></body>',
      'site/style.css': 'html, body { margin: 0; background: rgb(255, 0, 0); } h1 { display: none; }',
    },
    'site',
  );
  expect(deploy.status).toBe('DEPLOYED');
  const { previewImage } = deploy;
  const prefix = `${service.config.urls.gatewayUrl}/ipfs/`;
  expect(previewImage).toMatch(new RegExp(`^${prefix.replace(/[.]/g, '\\.')}bafy[a-z2-7]+$`));
  expect(deploy.log).toContain(`Preview image (`);
  expect(deploy.log).toContain(previewImage);
  const cid = CID.parse(previewImage!.slice(prefix.length));
  const node = await service.services.ipfs();
  expect(await isRootPinned(node, cid)).toBe(true);
  const response = await fetch(previewImage!);
  expect(response.status).toBe(200);
  const picture = decodePng(new Uint8Array(await response.arrayBuffer()));
  expect([picture.width, picture.height]).toEqual([1280, 800]);
  expect(picture.pixel(640, 400)).toEqual([255, 0, 0]); // the site's stylesheet, loaded by its absolute path

  // A candidate (as when another holder of the same CID lets go): the deploy's reference keeps it.
  await service.services.objects.addCandidate(cid.toV0().toString());
  await collectGarbage(service.services);
  expect(await node.blockstore.has(cid)).toBe(true);
  dataOf(await gql('mutation ($s: ID!) { deleteSite(siteId: $s) }', { s: site.id }));
  await collectGarbage(service.services);
  expect(await node.blockstore.has(cid)).toBe(false);
  expect(await isRootPinned(node, cid)).toBe(false);
});

test('a publish directory without index.html deploys all the same, with no preview image and a log line saying why', async () => {
  const { deploy } = await deployed({ 'about.html': '<h1>no index</h1>' });
  expect(deploy.status).toBe('DEPLOYED');
  expect(deploy.log.trim().split('\n').at(-1)).toMatch(/No preview image: the publish directory has no index\.html$/);
  expect(deploy.previewImage).toBeNull();
});
