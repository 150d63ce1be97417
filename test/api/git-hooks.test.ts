/**
 * Deploys from git hosts, end to end on a local service: a real git server,
 * GitHub- and GitLab-style webhook deliveries to /hooks/git/<siteId>
 * (through the node:http door and the GraphQL Lambda handler, its bodies
 * base64-encoded as for a binary media type and as plain text as an HTTP
 * API hands over JSON), pull-request previews, build hooks, the deploys
 * they start as the API reports them, and what the gateway then serves at
 * the site's address and at each deploy's own. Every wait is a poll with a
 * deadline.
 *
 * Local only: the git server listens on this machine's loopback.
 */
import { createHmac } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { startTestService, type TestService } from '../support/service.js';
import { dataOf, graphqlClient, importGraphqlLambda, newAccount, onlyError, type AccountFixture } from '../support/graphql.js';
import { lambdaFetch, type BodyEncoding, type LambdaFn } from '../support/lambda-door.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { hostFetch } from '../support/http.js';
import { exporter } from 'ipfs-unixfs-exporter';
import { doorsFor } from '../support/test-set.js';

let service: TestService;
let git: GitServer;
let a: AccountFixture;
let client: ReturnType<typeof graphqlClient>;
let lambdaClient: ReturnType<typeof graphqlClient>;
let graphqlLambda: LambdaFn;
const savedEnv = { ...process.env };

beforeAll(async () => {
  // Two builds at once: pushes of one site can then finish in another order than they came in.
  [service, git] = await Promise.all([
    startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_PREVIEW: 'off', CAIRN_BUILD_CONCURRENCY: '2' }),
    startGitServer(),
  ]);
  Object.assign(process.env, service.env);
  graphqlLambda = await importGraphqlLambda();
  a = await newAccount(service, 'hooks');
  client = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
  lambdaClient = graphqlClient(
    { name: 'Lambda door', fetch: (url, init) => lambdaFetch(graphqlLambda)(url, init) },
    service.endpoints.graphql,
  );
});
afterAll(async () => {
  process.env = savedEnv;
  await service?.close();
  await git?.close();
});

type Post = (path: string, init: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array }) => Promise<Response>;
interface HookDoor {
  name: string;
  post: Post;
  /** POST with no Content-Length: chunked through node:http; a Lambda event carries none anyway. */
  postUnsized: (path: string, headers: Record<string, string>, body: Buffer) => Promise<{ status: number; text: string }>;
  /** The GraphQL client of the same door. */
  graphql: () => ReturnType<typeof graphqlClient>;
}

function lambdaDoor(bodies: BodyEncoding): HookDoor {
  const post: Post = (path, init) =>
    lambdaFetch(graphqlLambda, { bodies })(`${service.config.urls.baseUrl}${path}`, {
      method: init.method ?? 'POST',
      headers: init.headers,
      body: init.body,
    });
  return {
    name: `Lambda door (${bodies === 'text' ? 'plain-text' : 'base64'} body)`,
    post,
    postUnsized: async (path, headers, body) => {
      const res = await post(path, { headers, body });
      return { status: res.status, text: await res.text() };
    },
    graphql: () => lambdaClient,
  };
}

const DOORS: HookDoor[] = [
  {
    name: 'node:http door',
    post: (path, init) =>
      fetch(`${service.config.urls.baseUrl}${path}`, { method: init.method ?? 'POST', headers: init.headers, body: init.body as BodyInit }),
    postUnsized: (path, headers, body) => postChunked(`${service.config.urls.baseUrl}${path}`, headers, body),
    graphql: () => client,
  },
  lambdaDoor('base64'),
  lambdaDoor('text'),
];
/**
 * The plain-text door differs from the base64 one only in how the Lambda
 * adapter decodes the body, which the GitHub block (signatures over raw
 * bytes, forms, size limits) covers; build hooks (a token in the query
 * string) run through the other two doors.
 */
const BUILDING_DOORS = DOORS.slice(0, 2);
/**
 * What a hook does once its request is read is the same code whichever
 * door read it (graphql/hooks-http.ts calls the core with plain values);
 * what differs by door (headers, body encodings, signatures over the raw
 * bytes, size limits, answers) the GitHub block checks through all three.
 * So the blocks whose every test clones, builds and imports real deploys
 * (GitLab events, pull requests, pushes never moving a site backwards) run
 * through one door: each of their tests costs a deploy or more, and on two
 * cores a second door doubled this suite's time.
 */
const DEPLOYING_DOORS = DOORS.slice(0, 1);

/**
 * A POST sent chunked, in 64 KiB pieces and without Content-Length, so only
 * the count of bytes read can stop it. The answer may come before all is
 * sent (and the connection then closes): errors after it are expected.
 */
function postChunked(url: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest(url, { method: 'POST', headers: { ...headers, 'transfer-encoding': 'chunked' } }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', (err) => (answered ? undefined : reject(err)));
    let offset = 0;
    const more = () => {
      while (offset < body.length && !answered) {
        const piece = body.subarray(offset, (offset += 64 * 1024));
        if (!req.write(piece)) return void req.once('drain', more);
      }
      req.end();
    };
    more();
  });
}

const DEPLOY = 'id url status published preview pullRequest { number title url fork } log repository { commit branch owner name }';
const gql = async (query: string, variables: Record<string, unknown> = {}, key = a.apiKey) => client.gql(key, query, variables);

/** What the gateway answers for `/` at a host: a site's (`<slug>.<domain>`) or a deploy's (`<deployId>--<slug>.<domain>`). */
async function served(host: string): Promise<{ status: number; text: string }> {
  const res = await hostFetch(`${service.endpoints.gateway}/`, { headers: { host } });
  return { status: res.status, text: await res.text() };
}
const siteHost = (slug: string) => `${slug}.${service.config.sites.domain}`;
/** The address a deploy answers at, as the API must give it. */
const deployAddress = (deployId: string, slug: string) =>
  `${new URL(service.config.urls.gatewayUrl).protocol}//${deployId.toLowerCase()}--${slug}.${service.config.sites.domain}`;

/** A hook's answer for a deploy it started: 200, the deploy's id and its address. */
async function started(res: Response, slug: string): Promise<{ deployId: string; url: string }> {
  expect(res.status).toBe(200);
  const answer = await res.json();
  expect(answer).toEqual({ ok: true, deployId: expect.any(String), url: deployAddress(answer.deployId, slug) });
  return answer;
}

let repos = 0;
const newRepoName = () => `acme/hooked-${++repos}`;

async function gitSite(repo: string, deploy: Record<string, unknown> = {}): Promise<{ id: string; slug: string }> {
  const input = {
    buildSettings: { publishDirectoryPath: 'public' },
    deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'main' } }, ...deploy },
  };
  return dataOf(await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', { input })).createSite;
}

/** A site deploying a new repository's main branch (its one commit holds `files`), with a webhook secret. */
async function hookedSite(
  files: Record<string, string>,
): Promise<{ repo: string; commit: string; site: { id: string; slug: string }; secret: string }> {
  const repo = newRepoName();
  const commit = await git.commit(repo, files, 'c');
  const site = await gitSite(repo);
  return { repo, commit, site, secret: (await webhookSecret(site.id)).secret };
}

async function webhookSecret(siteId: string): Promise<{ secret: string; url: string }> {
  return dataOf(await gql('mutation ($s: ID!) { createWebhookSecret(siteId: $s) { secret url } }', { s: siteId })).createWebhookSecret;
}

async function deploysOf(siteId: string): Promise<any[]> {
  // Without logs: the API's answer budget counts each log at its largest.
  return dataOf(
    await gql(`query ($s: ID!) { getDeploysBySite(siteId: $s, limit: 100) { deploys { ${DEPLOY.replace(' log ', ' ')} } } }`, {
      s: siteId,
    }),
  ).getDeploysBySite.deploys;
}

async function waitFor(
  siteId: string,
  deployId: string,
  done = (d: any) => d.status !== 'IN_PROGRESS' && /Published|not published|Failed/i.test(d.log ?? ''),
  ms = 40_000,
) {
  const deadline = Date.now() + ms;
  for (;;) {
    const deploy = dataOf(
      await gql(`query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { ${DEPLOY} } }`, { s: siteId, d: deployId }),
    ).getDeployById;
    if (done(deploy)) return deploy;
    if (Date.now() > deadline)
      throw new Error(
        `deploy ${deployId} did not get there in ${ms} ms: ${JSON.stringify(deploy).slice(0, 2000)} ${JSON.stringify(await service.services.deploys.get(siteId, deployId))}`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function fileOf(siteId: string, deployId: string, path: string): Promise<string> {
  const deploy = dataOf(
    await gql('query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { ipfsHash } }', { s: siteId, d: deployId }),
  ).getDeployById;
  const entry = await exporter(`${deploy.ipfsHash}/${path}`, (await service.services.ipfs()).blockstore);
  if (entry.type !== 'file' && entry.type !== 'raw') throw new Error(`${path} is a ${entry.type}`);
  const parts: Uint8Array[] = [];
  for await (const chunk of entry.content()) parts.push(chunk as Uint8Array);
  return Buffer.concat(parts).toString('utf8');
}

const sign = (secret: string, body: string | Buffer) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
let deliveries = 0;
const newDelivery = () => `delivery-${process.pid}-${++deliveries}`;

function githubHeaders(
  secret: string | null,
  event: string,
  body: string | Buffer,
  delivery = newDelivery(),
  contentType = 'application/json',
): Record<string, string> {
  return {
    'content-type': contentType,
    'x-github-event': event,
    'x-github-delivery': delivery,
    ...(secret !== null ? { 'x-hub-signature-256': sign(secret, body) } : {}),
  };
}

function gitlabHeaders(token: string | null, event: string, uuid = `gl-${newDelivery()}`): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-gitlab-event': event,
    'x-gitlab-event-uuid': uuid,
    ...(token !== null ? { 'x-gitlab-token': token } : {}),
  };
}

const pushEvent = (repo: string, ref: string, after: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    ref,
    before: '0'.repeat(40),
    after,
    deleted: false,
    repository: { full_name: repo, clone_url: git.repoUrl(repo) },
    ...extra,
  });

function pullRequestEvent(
  repo: string,
  init: { action: string; number: number; head: string; sha: string; base?: string; headRepo?: string; title?: string },
) {
  const headRepo = init.headRepo ?? repo;
  return JSON.stringify({
    action: init.action,
    number: init.number,
    pull_request: {
      number: init.number,
      title: init.title ?? `Change ${init.number}`,
      html_url: `https://git.example/${repo}/pull/${init.number}`,
      head: {
        ref: init.head,
        sha: init.sha,
        repo: { id: headRepo === repo ? 1 : 2, full_name: headRepo, clone_url: git.repoUrl(headRepo) },
      },
      base: { ref: init.base ?? 'main', repo: { id: 1, full_name: repo, clone_url: git.repoUrl(repo) } },
    },
  });
}

describe.each(doorsFor(DOORS))('GitHub-style events through the $name', (door) => {
  const post = door.post;

  test("a signed push to the site's branch deploys exactly the pushed commit, publishes it, and the site's address serves it", async () => {
    const repo = newRepoName();
    const pushed = await git.commit(repo, { 'public/index.html': 'pushed' }, 'the pushed commit');
    // The branch moves on before the event arrives: the deploy must still be of `after`.
    const later = await git.commit(repo, { 'public/index.html': 'later' }, 'a later commit');
    const site = await gitSite(repo);
    const { secret, url } = await webhookSecret(site.id);
    expect(url).toBe(`${service.config.urls.baseUrl}/hooks/git/${site.id}`);
    const body = pushEvent(repo, 'refs/heads/main', pushed);
    const res = await post(`/hooks/git/${site.id}`, { headers: githubHeaders(secret, 'push', body), body });
    const answer = await started(res, site.slug);
    const deploy = await waitFor(site.id, answer.deployId);
    expect(deploy).toMatchObject({
      status: 'DEPLOYED',
      published: true,
      preview: false,
      pullRequest: null,
      repository: { commit: pushed, branch: 'main' },
    });
    expect(deploy.repository.commit).not.toBe(later);
    expect(await fileOf(site.id, deploy.id, 'index.html')).toBe('pushed');
    const got = dataOf(
      await gql('query ($s: ID!) { getSiteById(siteId: $s) { publishedDeploy { id } webhookSecretSet } }', { s: site.id }),
    ).getSiteById;
    expect(got).toEqual({ publishedDeploy: { id: deploy.id }, webhookSecretSet: true });
    // The Deploy says where it is, through the same door, as the hook's answer did.
    const read = dataOf(
      await door
        .graphql()
        .gql(a.apiKey, 'query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { url } }', { s: site.id, d: deploy.id }),
    ).getDeployById;
    expect(read.url).toBe(answer.url);
    // Both addresses serve the pushed commit's content, not the later one's.
    expect(await served(siteHost(site.slug))).toEqual({ status: 200, text: 'pushed' });
    expect(await served(new URL(answer.url).host)).toEqual({ status: 200, text: 'pushed' });
  });

  test('a wrong or missing signature is 401 and starts nothing; so is a signature over another body', async () => {
    const { repo, commit, site, secret } = await hookedSite({ 'public/index.html': 'x' });
    const body = pushEvent(repo, 'refs/heads/main', commit);
    const cases: Array<Record<string, string>> = [
      githubHeaders(null, 'push', body),
      githubHeaders('not-the-secret', 'push', body),
      {
        ...githubHeaders(secret, 'push', body),
        'x-hub-signature-256': sign(secret, body).slice(0, -1) + (sign(secret, body).endsWith('0') ? '1' : '0'),
      },
      githubHeaders(secret, 'push', body + ' '),
      { ...githubHeaders(secret, 'push', body), 'x-hub-signature-256': 'sha1=' + createHmac('sha1', secret).update(body).digest('hex') },
    ];
    for (const headers of cases) {
      const res = await post(`/hooks/git/${site.id}`, { headers, body });
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ ok: false, error: expect.stringMatching(/X-Hub-Signature-256/) });
    }
    expect(await deploysOf(site.id)).toEqual([]);
  });

  test('a body that is not JSON is 401 unless signed (the signature is checked before the body is parsed); signed, it is 400', async () => {
    const { site, secret } = await hookedSite({ 'public/index.html': 'x' });
    const junk = '\u0000not json at all {{{';
    for (const headers of [
      githubHeaders(null, 'push', junk),
      githubHeaders('wrong', 'push', junk),
      gitlabHeaders(null, 'Push Hook'),
      gitlabHeaders('wrong', 'Push Hook'),
    ]) {
      const res = await post(`/hooks/git/${site.id}`, { headers, body: junk });
      expect(res.status).toBe(401);
      expect((await res.json()).error).toMatch(/X-Hub-Signature-256|X-Gitlab-Token/);
    }
    for (const headers of [githubHeaders(secret, 'push', junk), gitlabHeaders(secret, 'Push Hook')]) {
      const res = await post(`/hooks/git/${site.id}`, { headers, body: junk });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ ok: false, error: 'the event body is not JSON' });
    }
    expect(await deploysOf(site.id)).toEqual([]);
  });

  test('a body over 1 MiB is 413, even correctly signed; exactly 1 MiB is read', async () => {
    const { repo, commit, site, secret } = await hookedSite({ 'public/index.html': 'x' });
    const base = pushEvent(repo, 'refs/heads/other', commit);
    const pad = (size: number) => base.slice(0, -1) + `,"pad":"${'x'.repeat(size - base.length - 9)}"}`;
    const over = pad(1024 * 1024 + 1);
    expect(Buffer.byteLength(over)).toBe(1024 * 1024 + 1);
    const res = await post(`/hooks/git/${site.id}`, { headers: githubHeaders(secret, 'push', over), body: over });
    expect(res.status).toBe(413);
    const exact = pad(1024 * 1024);
    expect(Buffer.byteLength(exact)).toBe(1024 * 1024);
    const ok = await post(`/hooks/git/${site.id}`, { headers: githubHeaders(secret, 'push', exact), body: exact });
    expect(ok.status).toBe(200);
    expect((await ok.json()).ignored).toMatch(/branch other/);
    expect(await deploysOf(site.id)).toEqual([]);
  });

  test('a body over 1 MiB with no Content-Length (sent chunked) is 413 from GitHub and GitLab alike, and deploys nothing', async () => {
    const { repo, commit, site, secret } = await hookedSite({ 'public/index.html': 'x' });
    // A push to the site's branch, correctly signed: were it read, it would deploy.
    const base = pushEvent(repo, 'refs/heads/main', commit);
    const over = Buffer.from(base.slice(0, -1) + `,"pad":"${'x'.repeat(2 * 1024 * 1024)}"}`);
    const send = door.postUnsized;
    for (const headers of [githubHeaders(secret, 'push', over), gitlabHeaders(secret, 'Push Hook')]) {
      expect(headers['content-length']).toBeUndefined();
      const res = await send(`/hooks/git/${site.id}`, headers, over);
      expect(res.status).toBe(413);
      expect(JSON.parse(res.text)).toEqual({ ok: false, error: `the event body is larger than ${1024 * 1024} bytes` });
    }
    expect(await deploysOf(site.id)).toEqual([]);
    // The door still takes the next event.
    const small = Buffer.from(base);
    const after = await send(`/hooks/git/${site.id}`, githubHeaders(secret, 'push', small), small);
    expect(after.status).toBe(200);
    expect(JSON.parse(after.text).deployId).toEqual(expect.any(String));
  });

  test('an unknown site and a site without a secret are the same 404; GET is 405; JSON that does not parse is 400', async () => {
    const repo = newRepoName();
    const commit = await git.commit(repo, { 'public/index.html': 'x' }, 'c');
    const site = await gitSite(repo);
    const body = pushEvent(repo, 'refs/heads/main', commit);
    const noSecret = await post(`/hooks/git/${site.id}`, { headers: githubHeaders('anything', 'push', body), body });
    const unknown = await post(`/hooks/git/00000000-0000-4000-8000-000000000000`, {
      headers: githubHeaders('anything', 'push', body),
      body,
    });
    expect([noSecret.status, unknown.status]).toEqual([404, 404]);
    expect(await noSecret.text()).toBe(await unknown.text());
    const { secret } = await webhookSecret(site.id);
    const get = await post(`/hooks/git/${site.id}`, { method: 'GET', headers: {} });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const bad = '{"ref": "refs/heads/main", ';
    const res = await post(`/hooks/git/${site.id}`, { headers: githubHeaders(secret, 'push', bad), body: bad });
    expect(res.status).toBe(400);
    expect(await deploysOf(site.id)).toEqual([]);
  });

  test("GitHub's default content type (a form with the JSON in payload=) deploys, signed over the raw form; other content types are 415", async () => {
    const { repo, commit, site, secret } = await hookedSite({ 'public/index.html': 'from a form' });
    const json = pushEvent(repo, 'refs/heads/main', commit);
    // As GitHub sends it: the JSON percent-encoded (spaces as +) in the one field `payload`.
    const form = new URLSearchParams({ payload: json }).toString();
    expect(form).toMatch(/^payload=%7B/);
    const formType = 'application/x-www-form-urlencoded';
    // Signed over the JSON instead of the form bytes: refused.
    expect(
      (await post(`/hooks/git/${site.id}`, { headers: { ...githubHeaders(secret, 'push', json, newDelivery(), formType) }, body: form }))
        .status,
    ).toBe(401);
    expect(await deploysOf(site.id)).toEqual([]);
    const res = await post(`/hooks/git/${site.id}`, { headers: githubHeaders(secret, 'push', form, newDelivery(), formType), body: form });
    const answer = await started(res, site.slug);
    const deploy = await waitFor(site.id, answer.deployId);
    expect(deploy).toMatchObject({ status: 'DEPLOYED', published: true, repository: { commit, branch: 'main' } });
    expect(await fileOf(site.id, deploy.id, 'index.html')).toBe('from a form');
    // A form without payload is 400; a type that is neither is 415, saying what is taken.
    const empty = 'other=1';
    const missing = await post(`/hooks/git/${site.id}`, {
      headers: githubHeaders(secret, 'push', empty, newDelivery(), formType),
      body: empty,
    });
    expect(missing.status).toBe(400);
    expect((await missing.json()).error).toBe('the application/x-www-form-urlencoded event has no payload field');
    for (const type of ['text/plain', 'application/xml; charset=utf-8', 'multipart/form-data; boundary=x']) {
      const wrong = await post(`/hooks/git/${site.id}`, { headers: githubHeaders(secret, 'push', json, newDelivery(), type), body: json });
      expect(wrong.status).toBe(415);
      expect(await wrong.json()).toEqual({
        ok: false,
        error: `the content type ${type.split(';')[0]} is not taken: send the event as application/json or application/x-www-form-urlencoded`,
      });
    }
    // No content type at all is read as JSON (a Buffer body, so fetch adds none).
    const bare = pushEvent(repo, 'refs/heads/other', commit);
    const { 'content-type': _, ...untyped } = githubHeaders(secret, 'push', bare);
    const plain = await post(`/hooks/git/${site.id}`, { headers: untyped, body: Buffer.from(bare) });
    expect(await plain.json()).toEqual({ ok: true, ignored: 'a push to branch other: this site deploys branch main' });
    // GitLab only ever sends JSON: a form from it is 415 too.
    const gitlab = await post(`/hooks/git/${site.id}`, {
      headers: { ...gitlabHeaders(secret, 'Push Hook'), 'content-type': formType },
      body: form,
    });
    expect(gitlab.status).toBe(415);
    expect((await gitlab.json()).error).toBe(`the content type ${formType} is not taken: send the event as application/json`);
    expect(await deploysOf(site.id)).toHaveLength(1);
  });

  test('a delivery id seen before is acknowledged and not acted on twice, even when both arrive at once', async () => {
    const { repo, commit, site, secret } = await hookedSite({ 'public/index.html': 'once' });
    const body = pushEvent(repo, 'refs/heads/main', commit);
    const headers = githubHeaders(secret, 'push', body);
    const [first, second] = await Promise.all([
      post(`/hooks/git/${site.id}`, { headers, body }),
      post(`/hooks/git/${site.id}`, { headers, body }),
    ]);
    const answers = [await first.json(), await second.json()];
    expect([first.status, second.status]).toEqual([200, 200]);
    const acted = answers.filter((x) => !x.alreadyHandled);
    expect(acted).toHaveLength(1);
    const third = await post(`/hooks/git/${site.id}`, { headers, body });
    const repeat = await third.json();
    expect(repeat).toMatchObject({
      ok: true,
      alreadyHandled: true,
      ignored: expect.stringMatching(/already handled/),
      deployId: acted[0].deployId,
      url: deployAddress(acted[0].deployId, site.slug),
    });
    expect((await deploysOf(site.id)).map((d) => d.id)).toEqual([acted[0].deployId]);
    // A new delivery of the same event is a new request to act.
    const again = await post(`/hooks/git/${site.id}`, { headers: githubHeaders(secret, 'push', body), body });
    expect((await again.json()).deployId).toEqual(expect.any(String));
    expect(await deploysOf(site.id)).toHaveLength(2);
  });

  test('a push to another branch, a tag, a branch deletion and a ping are acknowledged and ignored, saying why', async () => {
    const { repo, commit, site, secret } = await hookedSite({ 'public/index.html': 'x' });
    const send = async (event: string, body: string) => {
      const res = await post(`/hooks/git/${site.id}`, { headers: githubHeaders(secret, event, body), body });
      expect(res.status).toBe(200);
      return res.json();
    };
    expect(await send('push', pushEvent(repo, 'refs/heads/feature', commit))).toEqual({
      ok: true,
      ignored: 'a push to branch feature: this site deploys branch main',
    });
    expect(await send('push', pushEvent(repo, 'refs/tags/v1.0', commit))).toEqual({
      ok: true,
      ignored: 'a tag push (v1.0): only pushes to branch main deploy',
    });
    expect(await send('push', pushEvent(repo, 'refs/heads/main', '0'.repeat(40), { deleted: true }))).toEqual({
      ok: true,
      ignored: 'branch main was deleted: nothing to deploy',
    });
    expect(await send('ping', JSON.stringify({ zen: 'Keep it logically awesome.', hook_id: 1 }))).toEqual({
      ok: true,
      ignored: 'ping: the webhook is set up',
    });
    expect(await send('issues', JSON.stringify({ action: 'opened' }))).toMatchObject({
      ok: true,
      ignored: expect.stringMatching(/issues event is not acted on/),
    });
    expect(await deploysOf(site.id)).toEqual([]);
  });
});

test('a rotated webhook secret replaces the old one at once, and no response ever shows a secret again', async () => {
  const repo = newRepoName();
  const commit = await git.commit(repo, { 'public/index.html': 'x' }, 'c');
  const site = await gitSite(repo);
  const first = await webhookSecret(site.id);
  const second = await webhookSecret(site.id);
  expect(second.secret).not.toBe(first.secret);
  expect(Buffer.from(second.secret, 'base64url').length).toBeGreaterThanOrEqual(32);
  const body = pushEvent(repo, 'refs/heads/feature', commit);
  const post = (secret: string) =>
    fetch(`${service.config.urls.baseUrl}/hooks/git/${site.id}`, { method: 'POST', headers: githubHeaders(secret, 'push', body), body });
  expect((await post(first.secret)).status).toBe(401);
  expect((await post(second.secret)).status).toBe(200);
  const read = await gql(
    'query ($s: ID!) { getSiteById(siteId: $s) { id webhookUrl webhookSecretSet repositoryTokenSet buildHooks { id } } }',
    { s: site.id },
  );
  expect(read.text).not.toContain(second.secret);
  expect(dataOf(read).getSiteById).toMatchObject({ webhookSecretSet: true, repositoryTokenSet: false });
  // Sealed at rest: the plaintext is nowhere in the sites table's item.
  const raw = await service.services.db.doc.send(
    new (await import('@aws-sdk/lib-dynamodb')).GetCommand({
      TableName: service.config.tables.sites,
      Key: { pk: `SITE#${site.id}`, sk: 'SECRETS' },
    }),
  );
  expect(raw.Item?.webhookSecret).toEqual(expect.stringMatching(/^v1\./));
  expect(JSON.stringify(raw.Item)).not.toContain(second.secret);
  expect(dataOf(await gql('mutation ($s: ID!) { deleteWebhookSecret(siteId: $s) }', { s: site.id })).deleteWebhookSecret).toBe(true);
  expect((await post(second.secret)).status).toBe(404);
  expect(
    dataOf(await gql('query ($s: ID!) { getSiteById(siteId: $s) { webhookSecretSet } }', { s: site.id })).getSiteById.webhookSecretSet,
  ).toBe(false);
});

test("another team cannot create or read a site's webhook secret", async () => {
  const repo = newRepoName();
  await git.commit(repo, { 'public/index.html': 'x' }, 'c');
  const site = await gitSite(repo);
  const b = await newAccount(service, 'hooks-other');
  const res = await gql('mutation ($s: ID!) { createWebhookSecret(siteId: $s) { secret } }', { s: site.id }, b.apiKey);
  expect(onlyError(res).extensions.code).toBe('FORBIDDEN');
  expect(await service.services.siteSecrets.webhookSecret(site.id)).toBeUndefined();
});

describe.each(DEPLOYING_DOORS)('GitLab events through the $name', (door) => {
  const post = door.post;

  test('a push hook with the right token deploys the pushed commit; a wrong or missing token is 401 and starts nothing', async () => {
    const { repo, commit, site, secret } = await hookedSite({ 'public/index.html': 'from gitlab' });
    const body = JSON.stringify({
      object_kind: 'push',
      ref: 'refs/heads/main',
      before: '0'.repeat(40),
      after: commit,
      checkout_sha: commit,
      project: { git_http_url: git.repoUrl(repo) },
    });
    const path = `/hooks/git/${site.id}`;
    for (const headers of [
      gitlabHeaders(`${secret}x`, 'Push Hook'),
      gitlabHeaders(secret.slice(1), 'Push Hook'),
      gitlabHeaders(null, 'Push Hook'),
      gitlabHeaders('', 'Push Hook'),
    ]) {
      const refused = await post(path, { headers, body });
      expect(refused.status).toBe(401);
      expect(await refused.json()).toEqual({ ok: false, error: "X-Gitlab-Token is missing or does not match the site's webhook secret" });
    }
    expect(await deploysOf(site.id)).toEqual([]);
    const uuid = `gl-${newDelivery()}`;
    const res = await post(path, { headers: gitlabHeaders(secret, 'Push Hook', uuid), body });
    const answer = await started(res, site.slug);
    const deploy = await waitFor(site.id, answer.deployId);
    expect(deploy).toMatchObject({ status: 'DEPLOYED', published: true, repository: { commit, branch: 'main' } });
    expect(await fileOf(site.id, answer.deployId, 'index.html')).toBe('from gitlab');
    const repeat = await post(path, { headers: gitlabHeaders(secret, 'Push Hook', uuid), body });
    expect(await repeat.json()).toMatchObject({ alreadyHandled: true, deployId: answer.deployId });
    expect(await deploysOf(site.id)).toHaveLength(1);
  });

  test('a tag push, a push to another branch and a branch deletion are acknowledged and ignored, saying why', async () => {
    const { commit, site, secret } = await hookedSite({ 'public/index.html': 'x' });
    const send = async (event: string, payload: Record<string, unknown>) => {
      const res = await post(`/hooks/git/${site.id}`, { headers: gitlabHeaders(secret, event), body: JSON.stringify(payload) });
      expect(res.status).toBe(200);
      return res.json();
    };
    expect(
      await send('Tag Push Hook', {
        object_kind: 'tag_push',
        ref: 'refs/tags/v2.1',
        before: '0'.repeat(40),
        after: commit,
        checkout_sha: commit,
      }),
    ).toEqual({
      ok: true,
      ignored: 'a tag push (v2.1): only pushes to branch main deploy',
    });
    expect(
      await send('Push Hook', {
        object_kind: 'push',
        ref: 'refs/heads/develop',
        before: '0'.repeat(40),
        after: commit,
        checkout_sha: commit,
      }),
    ).toEqual({
      ok: true,
      ignored: 'a push to branch develop: this site deploys branch main',
    });
    // A deletion: after all zeros, no checkout_sha.
    expect(
      await send('Push Hook', { object_kind: 'push', ref: 'refs/heads/main', before: commit, after: '0'.repeat(40), checkout_sha: null }),
    ).toEqual({
      ok: true,
      ignored: 'branch main was deleted: nothing to deploy',
    });
    expect(await deploysOf(site.id)).toEqual([]);
  });

  test('a merge request (open, reopen, update with new commits) builds previews at their addresses; an update without commits and a merge do not', async () => {
    const repo = newRepoName();
    await git.commit(repo, { 'public/index.html': 'main' }, 'main');
    const head = await git.commit(repo, { 'public/index.html': 'mr' }, 'mr work', 'topic');
    const site = await gitSite(repo, { prDeployPreviews: true });
    const { secret } = await webhookSecret(site.id);
    const mr = (action: string, extra: Record<string, unknown> = {}) =>
      JSON.stringify({
        object_kind: 'merge_request',
        object_attributes: {
          iid: 4,
          title: 'Topic',
          url: `https://gitlab.example/${repo}/-/merge_requests/4`,
          action,
          source_branch: 'topic',
          target_branch: 'main',
          source_project_id: 9,
          target_project_id: 9,
          last_commit: { id: head },
          source: { git_http_url: git.repoUrl(repo) },
          ...extra,
        },
      });
    const send = async (body: string) =>
      (await post(`/hooks/git/${site.id}`, { headers: gitlabHeaders(secret, 'Merge Request Hook'), body })).json();
    const opened = await send(mr('open'));
    expect(opened.url).toBe(deployAddress(opened.deployId, site.slug));
    const deploy = await waitFor(site.id, opened.deployId);
    expect(deploy).toMatchObject({
      status: 'DEPLOYED',
      published: false,
      preview: true,
      pullRequest: { number: 4, title: 'Topic', fork: false },
      repository: { commit: head, branch: 'topic' },
    });
    expect(await served(new URL(opened.url).host)).toEqual({ status: 200, text: 'mr' });
    expect(await send(mr('update'))).toEqual({ ok: true, ignored: 'merge request !4 updated without new commits: nothing to build' });
    expect(await send(mr('merge'))).toMatchObject({ ok: true, ignored: expect.stringMatching(/^merge request !4 merge:/) });
    const updated = await send(mr('update', { oldrev: '1'.repeat(40) }));
    expect(updated.deployId).toEqual(expect.any(String));
    expect(await send(mr('close'))).toMatchObject({ ok: true, ignored: expect.stringMatching(/^merge request !4 close:/) });
    const reopened = await send(mr('reopen'));
    expect(await waitFor(site.id, reopened.deployId)).toMatchObject({
      status: 'DEPLOYED',
      published: false,
      preview: true,
      repository: { commit: head, branch: 'topic' },
    });
    expect(await deploysOf(site.id)).toHaveLength(3);
    expect(
      dataOf(await gql('query ($s: ID!) { getSiteById(siteId: $s) { publishedDeploy { id } } }', { s: site.id })).getSiteById
        .publishedDeploy,
    ).toBeNull();
  });
});

describe.each(DEPLOYING_DOORS)('pull requests through the $name', (door) => {
  const hookPost = door.post;
  const post = (siteId: string, secret: string, body: string) =>
    hookPost(`/hooks/git/${siteId}`, { headers: githubHeaders(secret, 'pull_request', body), body });

  test("an opened pull request against the site's branch builds an unpublished preview of its head, served at its own address", async () => {
    const repo = newRepoName();
    const main = await git.commit(repo, { 'public/index.html': 'main' }, 'main');
    const head = await git.commit(repo, { 'public/index.html': 'feature' }, 'feature work', 'feature');
    const site = await gitSite(repo, { prDeployPreviews: true });
    const { secret } = await webhookSecret(site.id);
    // The site's own deploy first, so that "not published" is seen against a published one.
    const pushBody = pushEvent(repo, 'refs/heads/main', main);
    const live = await (
      await hookPost(`/hooks/git/${site.id}`, { headers: githubHeaders(secret, 'push', pushBody), body: pushBody })
    ).json();
    await waitFor(site.id, live.deployId);

    const res = await post(
      site.id,
      secret,
      pullRequestEvent(repo, { action: 'opened', number: 7, head: 'feature', sha: head, title: 'Add the feature' }),
    );
    const answer = await started(res, site.slug);
    const { deployId } = answer;
    const deploy = await waitFor(site.id, deployId);
    expect(deploy).toMatchObject({
      url: answer.url,
      status: 'DEPLOYED',
      published: false,
      preview: true,
      pullRequest: { number: 7, title: 'Add the feature', url: `https://git.example/${repo}/pull/7`, fork: false },
      repository: { commit: head, branch: 'feature' },
    });
    expect(deploy.log).toContain('A preview: not published');
    expect(await fileOf(site.id, deployId, 'index.html')).toBe('feature');
    const got = dataOf(await gql('query ($s: ID!) { getSiteById(siteId: $s) { publishedDeploy { id } } }', { s: site.id })).getSiteById;
    expect(got.publishedDeploy.id).toBe(live.deployId);
    // The preview at its address, the published deploy still at the site's.
    expect(await served(`${deployId.toLowerCase()}--${site.slug}.${service.config.sites.domain}`)).toEqual({
      status: 200,
      text: 'feature',
    });
    expect(await served(siteHost(site.slug))).toEqual({ status: 200, text: 'main' });
    // A preview cannot be published by hand either.
    const publish = await gql('mutation ($s: ID!, $d: ID!) { publishDeploy(siteId: $s, deployId: $d) { id } }', {
      s: site.id,
      d: deployId,
    });
    expect(onlyError(publish).extensions.code).toBe('BAD_USER_INPUT');

    // synchronize builds the new head; closed, and PRs against other branches, build nothing; reopened builds again.
    const next = await git.commit(repo, { 'public/index.html': 'feature 2' }, 'more work', 'feature');
    const sync = await (
      await post(site.id, secret, pullRequestEvent(repo, { action: 'synchronize', number: 7, head: 'feature', sha: next }))
    ).json();
    expect((await waitFor(site.id, sync.deployId)).repository).toMatchObject({ commit: next, branch: 'feature' });
    expect(
      await (await post(site.id, secret, pullRequestEvent(repo, { action: 'closed', number: 7, head: 'feature', sha: next }))).json(),
    ).toEqual({
      ok: true,
      ignored: 'pull request #7 closed: only opened, reopened and synchronize build a preview',
    });
    expect(
      await (
        await post(site.id, secret, pullRequestEvent(repo, { action: 'opened', number: 8, head: 'feature', sha: next, base: 'develop' }))
      ).json(),
    ).toEqual({
      ok: true,
      ignored: 'pull request #8 is against branch develop: this site deploys branch main',
    });
    const reopened = await (
      await post(site.id, secret, pullRequestEvent(repo, { action: 'reopened', number: 7, head: 'feature', sha: next }))
    ).json();
    expect(await waitFor(site.id, reopened.deployId)).toMatchObject({
      status: 'DEPLOYED',
      published: false,
      preview: true,
      pullRequest: { number: 7 },
      repository: { commit: next, branch: 'feature' },
    });
    expect(await served(new URL(reopened.url).host)).toEqual({ status: 200, text: 'feature 2' });
    expect(await served(siteHost(site.slug))).toEqual({ status: 200, text: 'main' });
    expect(await deploysOf(site.id)).toHaveLength(4);
  });

  test('with pull-request previews off, a pull request builds nothing and says why', async () => {
    const repo = newRepoName();
    const head = await git.commit(repo, { 'public/index.html': 'feature' }, 'feature', 'feature');
    const site = await gitSite(repo);
    const { secret } = await webhookSecret(site.id);
    const res = await post(site.id, secret, pullRequestEvent(repo, { action: 'opened', number: 3, head: 'feature', sha: head }));
    expect(await res.json()).toEqual({
      ok: true,
      ignored: 'pull request #3: pull-request previews are off for this site (deploySettings.prDeployPreviews)',
    });
    expect(await deploysOf(site.id)).toEqual([]);
  });

  test('by default a pull request from a fork builds nothing, saying why, from GitHub and GitLab alike', async () => {
    const repo = newRepoName();
    await git.commit(repo, { 'public/index.html': 'main' }, 'main');
    const fork = `forker/hooked-fork-${repos}`;
    const head = await git.commit(fork, { 'public/index.html': 'from the fork' }, 'fork work', 'patch-1');
    const site = await gitSite(repo, { prDeployPreviews: true });
    const token = `fork-default-token-${process.pid}-${repos}`;
    dataOf(await gql('mutation ($s: ID!, $t: String) { setRepositoryToken(siteId: $s, token: $t) { id } }', { s: site.id, t: token }));
    const { secret } = await webhookSecret(site.id);
    const before = await git.requests();
    const res = await post(
      site.id,
      secret,
      pullRequestEvent(repo, { action: 'opened', number: 21, head: 'patch-1', sha: head, headRepo: fork }),
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      ok: true,
      ignored:
        "pull request #21 comes from a fork: fork pull requests are not built for this site (deploySettings.forkPullRequests is NOT_BUILT; BUILT_WITHOUT_SECRETS builds them without the site's secret variables)",
    });
    // GitLab: a merge request from another project is a fork's.
    const mr = JSON.stringify({
      object_kind: 'merge_request',
      object_attributes: {
        iid: 22,
        title: 'From a fork',
        action: 'open',
        source_branch: 'patch-1',
        target_branch: 'main',
        source_project_id: 77,
        target_project_id: 9,
        last_commit: { id: head },
        source: { git_http_url: git.repoUrl(fork) },
      },
    });
    const gitlab = await hookPost(`/hooks/git/${site.id}`, { headers: gitlabHeaders(secret, 'Merge Request Hook'), body: mr });
    expect(gitlab.status).toBe(200);
    expect((await gitlab.json()).ignored).toMatch(/^pull request #22 comes from a fork: fork pull requests are not built for this site/);
    // Nothing was queued, nothing was fetched from anywhere.
    expect(await deploysOf(site.id)).toEqual([]);
    expect(await git.requests()).toBe(before);
  });

  test("a pull request from a fork, on a site that builds them, is built from the fork, without the site's access token, and the log says so", async () => {
    const repo = newRepoName();
    await git.commit(repo, { 'public/index.html': 'main' }, 'main');
    const fork = `forker/hooked-fork-${repos}`;
    await git.commit(fork, { 'public/index.html': 'main' }, 'main'); // a fork has the default branch too
    const head = await git.commit(fork, { 'public/index.html': 'from the fork' }, 'fork work', 'patch-1');
    const site = await gitSite(repo, { prDeployPreviews: true, forkPullRequests: 'BUILT_WITHOUT_SECRETS' });
    const token = `fork-guard-token-${process.pid}-${repos}`;
    dataOf(await gql('mutation ($s: ID!, $t: String) { setRepositoryToken(siteId: $s, token: $t) { id } }', { s: site.id, t: token }));
    const { secret } = await webhookSecret(site.id);
    const res = await post(
      site.id,
      secret,
      pullRequestEvent(repo, { action: 'opened', number: 12, head: 'patch-1', sha: head, headRepo: fork }),
    );
    const { deployId } = await res.json();
    const deploy = await waitFor(site.id, deployId);
    expect(deploy).toMatchObject({
      status: 'DEPLOYED',
      published: false,
      preview: true,
      pullRequest: { number: 12, fork: true },
      repository: { commit: head, branch: 'patch-1', owner: 'forker' },
    });
    expect(deploy.log).toContain(
      `Pull request #12 comes from a fork: cloning ${git.repoUrl(fork)} as a public repository, without the site's access token`,
    );
    expect(await fileOf(site.id, deployId, 'index.html')).toBe('from the fork');
    // A fork that asks for credentials is not offered the site's token: it fails as a private repository would.
    const closed = `forker/hooked-closed-${repos}`;
    await git.commit(closed, { 'public/index.html': 'main' }, 'main');
    const closedHead = await git.commit(closed, { 'public/index.html': 'x' }, 'x', 'patch-2');
    await git.requireCredentials(closed, 'x-access-token', "the fork owner's own token");
    const second = await (
      await post(
        site.id,
        secret,
        pullRequestEvent(repo, { action: 'opened', number: 13, head: 'patch-2', sha: closedHead, headRepo: closed }),
      )
    ).json();
    const refused = await waitFor(site.id, second.deployId);
    expect(refused.status).toBe('FAILED');
    expect(refused.log).toMatch(/the repository asks for credentials/);
    const encoded = Buffer.from(`x-access-token:${token}`).toString('base64');
    expect((await git.authorizations()).filter((x) => x.authorization.includes(encoded))).toEqual([]);
    // Nothing a fork's host was sent carried any credentials at all.
    expect((await git.authorizations()).filter((x) => x.path.startsWith('/forker/'))).toEqual([]);
  });

  test("an old pull-request event sent again builds the old head at a new address; the newer head's preview is untouched", async () => {
    const repo = newRepoName();
    await git.commit(repo, { 'public/index.html': 'main' }, 'main');
    const first = await git.commit(repo, { 'public/index.html': 'first' }, 'first', 'feature');
    const second = await git.commit(repo, { 'public/index.html': 'second' }, 'second', 'feature');
    const site = await gitSite(repo, { prDeployPreviews: true });
    const { secret } = await webhookSecret(site.id);
    const oldEvent = pullRequestEvent(repo, { action: 'opened', number: 31, head: 'feature', sha: first });
    await waitFor(site.id, (await (await post(site.id, secret, oldEvent)).json()).deployId);
    const newer = await (
      await post(site.id, secret, pullRequestEvent(repo, { action: 'synchronize', number: 31, head: 'feature', sha: second }))
    ).json();
    await waitFor(site.id, newer.deployId);
    // The old event again, under a new delivery id: a preview of the old head, at its own address.
    const replayed = await (await post(site.id, secret, oldEvent)).json();
    expect(replayed.deployId).not.toBe(newer.deployId);
    expect(await waitFor(site.id, replayed.deployId)).toMatchObject({
      status: 'DEPLOYED',
      published: false,
      preview: true,
      repository: { commit: first },
    });
    expect(await served(new URL(newer.url).host)).toEqual({ status: 200, text: 'second' });
    expect(await served(new URL(replayed.url).host)).toEqual({ status: 200, text: 'first' });
    expect(
      dataOf(await gql('query ($s: ID!) { getSiteById(siteId: $s) { publishedDeploy { id } } }', { s: site.id })).getSiteById
        .publishedDeploy,
    ).toBeNull();
  });
});

describe.each(DEPLOYING_DOORS)('pushes never move a site backwards, through the $name', (door) => {
  const post = door.post;
  const push = async (
    site: { id: string },
    secret: string,
    repo: string,
    commit: string,
    body = pushEvent(repo, 'refs/heads/main', commit),
  ) => (await post(`/hooks/git/${site.id}`, { headers: githubHeaders(secret, 'push', body), body })).json();
  const publishedId = async (siteId: string) =>
    dataOf(await gql('query ($s: ID!) { getSiteById(siteId: $s) { publishedDeploy { id } } }', { s: siteId })).getSiteById.publishedDeploy
      ?.id;
  const short = (commit: string) => commit.slice(0, 7);

  /** Every build slot (two) held by a site whose build sleeps: deploys asked for meanwhile wait in the queue. */
  async function holdBuildSlots(): Promise<{ ended(): Promise<void> }> {
    const blockers = await Promise.all(
      [0, 1].map(async () => {
        const blockerRepo = newRepoName();
        await git.commit(blockerRepo, { 'public/index.html': 'busy' }, 'busy');
        const input = {
          buildSettings: { buildCommand: 'sleep 3', publishDirectoryPath: 'public' },
          deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(blockerRepo), branch: 'main' } } },
        };
        const blocker = dataOf(await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id } }', { input })).createSite;
        const deploy = dataOf(await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: blocker.id })).triggerDeploy;
        return { siteId: blocker.id as string, deployId: deploy.id as string };
      }),
    );
    const busy = async () =>
      (await Promise.all(blockers.map((b) => service.services.deploys.get(b.siteId, b.deployId)))).every(
        (d) => d?.status === 'IN_PROGRESS' && d.phase !== 'queued',
      );
    for (const deadline = Date.now() + 20_000; !(await busy()); await new Promise((r) => setTimeout(r, 50)))
      if (Date.now() > deadline) throw new Error('the blocking builds never started');
    return {
      async ended() {
        for (const b of blockers) await waitFor(b.siteId, b.deployId);
      },
    };
  }

  test('an old push sent again under a new delivery id builds but is not published, saying why; publishDeploy still rolls back', async () => {
    const { repo, commit: one, site, secret } = await hookedSite({ 'public/index.html': 'one' });
    const oldBody = pushEvent(repo, 'refs/heads/main', one);
    const first = await push(site, secret, repo, one, oldBody);
    expect(await waitFor(site.id, first.deployId)).toMatchObject({ status: 'DEPLOYED', published: true });
    const two = await git.commit(repo, { 'public/index.html': 'two' }, 'two');
    const second = await push(site, secret, repo, two);
    const newer = await waitFor(site.id, second.deployId);
    expect(newer).toMatchObject({ status: 'DEPLOYED', published: true });
    expect(newer.log).toContain(`${short(two)} comes after ${short(one)}, the live deploy's commit, in branch main`);
    expect(await served(siteHost(site.slug))).toEqual({ status: 200, text: 'two' });

    // The first push's body, byte for byte, with its valid signature and a delivery id never seen.
    const replayed = await push(site, secret, repo, one, oldBody);
    const old = await waitFor(site.id, replayed.deployId);
    expect(old).toMatchObject({ status: 'DEPLOYED', published: false, repository: { commit: one } });
    expect(old.log).toContain(`Not published: ${short(one)} is older than the published ${short(two)}; publishDeploy it to roll back`);
    expect(await publishedId(site.id)).toBe(second.deployId);
    expect(await served(siteHost(site.slug))).toEqual({ status: 200, text: 'two' });
    // Its own address serves what it built.
    expect(await served(new URL(replayed.url).host)).toEqual({ status: 200, text: 'one' });

    // A person rolls back: that is publishDeploy's to do, and it does.
    dataOf(
      await gql('mutation ($s: ID!, $d: ID!) { publishDeploy(siteId: $s, deployId: $d) { id } }', { s: site.id, d: replayed.deployId }),
    );
    expect(await publishedId(site.id)).toBe(replayed.deployId);
    expect(await served(siteHost(site.slug))).toEqual({ status: 200, text: 'one' });
  });

  test('two pushes that finish out of order leave the newer commit published', async () => {
    const repo = newRepoName();
    const build = 'if [ -f slow ]; then sleep 6; fi; true';
    const zero = await git.commit(repo, { 'public/index.html': 'zero' }, 'zero');
    const input = {
      buildSettings: { buildCommand: build, publishDirectoryPath: 'public' },
      deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'main' } } },
    };
    const site = dataOf(await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', { input })).createSite;
    const { secret } = await webhookSecret(site.id);
    expect(await waitFor(site.id, (await push(site, secret, repo, zero)).deployId)).toMatchObject({ published: true });
    const older = await git.commit(repo, { 'public/index.html': 'older' }, 'older');
    const newer = await git.commit(repo, { 'public/index.html': 'newer', slow: 'the build sleeps' }, 'newer');
    // The newer push's event comes first (its deploy is created first) and builds slowly; the older one's comes late and builds at once.
    const late = await push(site, secret, repo, newer);
    // Running before the older push comes in (a waiting deploy would be skipped for the later-created one).
    for (const deadline = Date.now() + 20_000; (await service.services.deploys.get(site.id, late.deployId))?.phase === 'queued';) {
      if (Date.now() > deadline) throw new Error("the newer push's deploy never started");
      await new Promise((r) => setTimeout(r, 100));
    }
    const early = await push(site, secret, repo, older);
    const olderDeploy = await waitFor(site.id, early.deployId);
    const newerDeploy = await waitFor(site.id, late.deployId);
    expect(olderDeploy).toMatchObject({ status: 'DEPLOYED', repository: { commit: older } });
    expect(newerDeploy).toMatchObject({ status: 'DEPLOYED', published: true, repository: { commit: newer } });
    if (olderDeploy.published) {
      // As planned (the newer one builds slowly): the older was published first, and the newer over it, though created before it.
      expect(newerDeploy.log).toContain(`${short(newer)} comes after ${short(older)}, the live deploy's commit, in branch main`);
    } else {
      // A machine too busy for the plan: the newer ended first, and the older, created after it, was not published over it.
      expect(olderDeploy.log).toContain(`Not published: ${short(older)} is older than the published ${short(newer)}`);
    }
    expect(await publishedId(site.id)).toBe(late.deployId);
    expect(await served(siteHost(site.slug))).toEqual({ status: 200, text: 'newer' });
  });

  /** A site live at its first commit, two more commits (older, then newer) and every build slot held: its next pushes wait. */
  async function twoPushesWaiting() {
    const { repo, commit: one, site, secret } = await hookedSite({ 'public/index.html': 'one' });
    expect(await waitFor(site.id, (await push(site, secret, repo, one)).deployId)).toMatchObject({ published: true });
    const older = await git.commit(repo, { 'public/index.html': 'older' }, 'older');
    const newer = await git.commit(repo, { 'public/index.html': 'newer' }, 'newer');
    return { repo, site, secret, older, newer, blockers: await holdBuildSlots() };
  }

  test('a late push that skipped the newer push still queued: the newer commit is deployed again and goes live', async () => {
    const { repo, site, secret, older, newer, blockers } = await twoPushesWaiting();
    // The newer push's event first; the older one's late, while the newer one's deploy still waits: it skips it.
    const first = await push(site, secret, repo, newer);
    const late = await push(site, secret, repo, older);
    expect(await service.services.deploys.get(site.id, first.deployId)).toMatchObject({
      status: 'CANCELLED',
      reason: `superseded by ${late.deployId}`,
    });
    // Once it has its commit, the late deploy finds the one it skipped newer: that is deployed again, and it stops.
    const stale = await waitFor(site.id, late.deployId, (d) => d.status !== 'IN_PROGRESS' && /Cancelled/.test(d.log ?? ''), 60_000);
    expect(stale).toMatchObject({ status: 'CANCELLED', published: false });
    const said = new RegExp(
      `${short(newer)} \\(deploy ${first.deployId}\\), skipped for this deploy, comes after ${short(older)}: deploying it again as (\\S+)$`,
      'm',
    );
    const againId = stale.log.match(said)?.[1];
    expect(againId).toBeDefined();
    expect((await service.services.deploys.get(site.id, againId))?.retryOf).toBe(first.deployId);
    const again = await waitFor(site.id, againId);
    expect(again).toMatchObject({ status: 'DEPLOYED', published: true, repository: { commit: newer } });
    expect(await publishedId(site.id)).toBe(againId);
    expect(await served(siteHost(site.slug))).toEqual({ status: 200, text: 'newer' });
    await blockers.ended();
  });

  test('a newer push that skipped an older one still queued goes on as before', async () => {
    const { repo, site, secret, older, newer, blockers } = await twoPushesWaiting();
    // In order this time: the newer push skips the older one, finds it older, and goes on.
    const first = await push(site, secret, repo, older);
    const second = await push(site, secret, repo, newer);
    expect(await service.services.deploys.get(site.id, first.deployId)).toMatchObject({
      status: 'CANCELLED',
      reason: `superseded by ${second.deployId}`,
    });
    const deployed = await waitFor(site.id, second.deployId, undefined, 60_000);
    expect(deployed).toMatchObject({ status: 'DEPLOYED', published: true, repository: { commit: newer } });
    expect(deployed.log).not.toMatch(/skipped for this deploy|deploying it again/);
    await blockers.ended();
    expect(await served(siteHost(site.slug))).toEqual({ status: 200, text: 'newer' });
  });

  test('a force-push publishes: back to an older commit, and to an unrelated one', async () => {
    const { repo, commit: one, site, secret } = await hookedSite({ 'public/index.html': 'one' });
    const two = await git.commit(repo, { 'public/index.html': 'two' }, 'two');
    expect(await waitFor(site.id, (await push(site, secret, repo, two)).deployId)).toMatchObject({ published: true });
    // Forced back to the first commit (a person moved the branch there): the branch no longer holds the published one.
    await git.shell(repo, `git push -q -f origin ${one}:main`);
    const back = await waitFor(site.id, (await push(site, secret, repo, one)).deployId);
    expect(back).toMatchObject({ status: 'DEPLOYED', published: true, repository: { commit: one } });
    expect(back.log).toContain(
      `Branch main no longer holds ${short(two)}, the live deploy's commit (it was force-pushed): ${short(one)} is not a rollback`,
    );
    expect(await served(siteHost(site.slug))).toEqual({ status: 200, text: 'one' });
    // A new history: nothing in common with the published commit.
    const fresh = await git.shell(
      repo,
      'git checkout -q --orphan fresh && mkdir -p public && printf fresh > public/index.html && git add -A && git commit -q -m fresh && git push -q -f origin fresh:main && git rev-parse HEAD',
    );
    const unrelated = await waitFor(site.id, (await push(site, secret, repo, fresh)).deployId);
    expect(unrelated).toMatchObject({ status: 'DEPLOYED', published: true, repository: { commit: fresh } });
    expect(unrelated.log).toContain(
      `Branch main no longer holds ${short(one)}, the live deploy's commit (it was force-pushed): ${short(fresh)} is not a rollback`,
    );
    expect(await served(siteHost(site.slug))).toEqual({ status: 200, text: 'fresh' });
  });
});

describe.each(doorsFor(BUILDING_DOORS))('build hooks through the $name', (door) => {
  test('a build hook URL deploys the branch head on POST; a wrong token is 404, GET is 405, a deleted hook is 404', async () => {
    const post = door.post;
    const repo = newRepoName();
    await git.commit(repo, { 'public/index.html': 'one' }, 'one');
    const site = await gitSite(repo);
    const created = dataOf(
      await gql('mutation ($s: ID!) { createBuildHook(siteId: $s, name: "CMS") { buildHook { id name branch createdAt } url } }', {
        s: site.id,
      }),
    ).createBuildHook;
    const { buildHook, url } = created;
    expect(buildHook).toMatchObject({ name: 'CMS', branch: null });
    const u = new URL(url);
    expect(`${u.origin}${u.pathname}`).toBe(`${service.config.urls.baseUrl}/hooks/build/${buildHook.id}`);
    const token = u.searchParams.get('token')!;
    expect(Buffer.from(token, 'base64url').length).toBeGreaterThanOrEqual(16);
    const listed = await gql('query ($s: ID!) { getSiteById(siteId: $s) { buildHooks { id name branch } } }', { s: site.id });
    expect(dataOf(listed).getSiteById.buildHooks).toEqual([{ id: buildHook.id, name: 'CMS', branch: null }]);
    expect(listed.text).not.toContain(token);

    const head = await git.commit(repo, { 'public/index.html': 'two' }, 'two');
    const path = `${u.pathname}${u.search}`;
    const res = await post(path, { body: '{}' });
    const answer = await started(res, site.slug);
    const { deployId } = answer;
    const deploy = await waitFor(site.id, deployId);
    expect(deploy).toMatchObject({ status: 'DEPLOYED', published: true, repository: { commit: head, branch: 'main' } });

    const flipped = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    expect((await post(`${u.pathname}?token=${flipped}`, {})).status).toBe(404);
    expect((await post(u.pathname, {})).status).toBe(404);
    expect((await post(path, { method: 'GET' })).status).toBe(405);
    expect(await deploysOf(site.id)).toHaveLength(1);
    expect(
      dataOf(await gql('mutation ($s: ID!, $h: ID!) { deleteBuildHook(siteId: $s, buildHookId: $h) }', { s: site.id, h: buildHook.id }))
        .deleteBuildHook,
    ).toBe(true);
    expect((await post(path, {})).status).toBe(404);
    expect(
      dataOf(await gql('query ($s: ID!) { getSiteById(siteId: $s) { buildHooks { id } } }', { s: site.id })).getSiteById.buildHooks,
    ).toEqual([]);
  });
});

test("a build hook for another branch builds that branch's head as an unpublished preview", async () => {
  const repo = newRepoName();
  await git.commit(repo, { 'public/index.html': 'main' }, 'main');
  const head = await git.commit(repo, { 'public/index.html': 'staging' }, 'staging', 'staging');
  const site = await gitSite(repo);
  const { url } = dataOf(
    await gql('mutation ($s: ID!) { createBuildHook(siteId: $s, name: "stage", branch: "staging") { url buildHook { branch } } }', {
      s: site.id,
    }),
  ).createBuildHook;
  const { deployId } = await (await fetch(url, { method: 'POST' })).json();
  const deploy = await waitFor(site.id, deployId);
  expect(deploy).toMatchObject({
    status: 'DEPLOYED',
    published: false,
    preview: true,
    pullRequest: null,
    repository: { commit: head, branch: 'staging' },
  });
  const bad = await gql('mutation ($s: ID!) { createBuildHook(siteId: $s, name: "x", branch: "a..b") { url } }', { s: site.id });
  expect(onlyError(bad)).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'branch' } });
});

describe.each([
  { name: 'node:http door', graphql: () => client },
  { name: 'Lambda door', graphql: () => lambdaClient },
])('build hook names through the GraphQL $name', ({ graphql }) => {
  test.each([
    ['empty', ''],
    ['only spaces', '   '],
    ['over 100 characters', 'n'.repeat(101)],
  ])('a name that is %s is BAD_USER_INPUT naming name, and makes no hook', async (_, name) => {
    const repo = newRepoName();
    await git.commit(repo, { 'public/index.html': 'x' }, 'c');
    const site = await gitSite(repo);
    const res = await graphql().gql(a.apiKey, 'mutation ($s: ID!, $n: String!) { createBuildHook(siteId: $s, name: $n) { url } }', {
      s: site.id,
      n: name,
    });
    expect(res.status).toBe(200);
    expect(res.data).toEqual({ createBuildHook: null });
    expect(onlyError(res)).toMatchObject({
      message: 'name must be 1 to 100 characters',
      path: ['createBuildHook'],
      extensions: { code: 'BAD_USER_INPUT', field: 'name' },
    });
    expect(
      dataOf(await gql('query ($s: ID!) { getSiteById(siteId: $s) { buildHooks { id } } }', { s: site.id })).getSiteById.buildHooks,
    ).toEqual([]);
    // 100 characters is the most taken.
    const longest = await graphql().gql(
      a.apiKey,
      'mutation ($s: ID!, $n: String!) { createBuildHook(siteId: $s, name: $n) { buildHook { name } } }',
      { s: site.id, n: 'n'.repeat(100) },
    );
    expect(dataOf(longest).createBuildHook.buildHook.name).toBe('n'.repeat(100));
  });
});
