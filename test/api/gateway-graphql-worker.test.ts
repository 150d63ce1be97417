/**
 * The gateway, GraphQL and deploy-worker slices, each through both doors
 * (or a deployed stack's endpoints). The deploy worker's check runs its
 * handler in this process, so it is local only.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { lambdaFetch } from '../support/lambda-door.js';
import { apiTarget, localTest, REMOTE, type ApiTarget } from '../support/api-target.js';
import { dataOf, graphqlClient, newTeam, targetGraphqlDoors, type TeamFixture } from '../support/graphql.js';

let target: ApiTarget;
const savedEnv = { ...process.env };
let a: TeamFixture;
let site: { id: string; slug: string; name: string; teamId: string; createdAt: string };

beforeAll(async () => {
  target = await apiTarget();
  await target
    .s3()
    .send(new PutObjectCommand({ Bucket: target.account.bucket, Key: 'hello.txt', Body: 'hello world', ContentType: 'text/plain' }));
  const client = graphqlClient(targetGraphqlDoors(() => target)[0]!, target.endpoints.graphql);
  a = await newTeam(client, target.account, 'slice');
  const source = { repository: { type: 'GIT_HOST', url: 'https://example.com/team/docs.git', branch: 'main' } };
  site = dataOf(
    await client.gql(a.apiKey, 'mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug name teamId createdAt } }', {
      input: { buildSettings: { buildCommand: 'npm run build', publishDirectoryPath: 'dist' }, deploySettings: { source } },
    }),
  ).createSite;
});

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
});

type Fetch = (url: string, init?: { method?: string; headers?: Record<string, string>; body?: string }) => Promise<Response>;
const door = (name: string, lambda: () => Fetch) =>
  (REMOTE
    ? [{ name: 'deployed endpoint', fetch: (url: string, init?: Parameters<Fetch>[1]) => fetch(url, init) }]
    : [
        { name: 'node:http door', fetch: (url: string, init?: Parameters<Fetch>[1]) => fetch(url, init) },
        { name: 'Lambda door', fetch: (url: string, init?: Parameters<Fetch>[1]) => lambda()(url, init) },
      ]
  ).map((d) => ({ ...d, what: name }));

describe.each(door('gateway', () => lambdaFetch(target.gatewayLambda!)))('gateway through the $name', ({ fetch: get }) => {
  test('GET /ipfs/<cid> returns the bytes, v0 and v1 alike, with immutable caching', async () => {
    for (const cid of ['Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD', 'bafybeihykld7uyxzogax6vgyvag42y7464eywpf55gxi5qpoisibh3c5wa']) {
      const res = await get(`${target.endpoints.gateway}/ipfs/${cid}`);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('hello world');
      expect(res.headers.get('etag')).toBe(`"${cid}"`);
      expect(res.headers.get('cache-control')).toContain('immutable');
      expect(res.headers.get('content-type')).toBe('text/plain');
    }
  });

  test('a range request gets 206 and the slice', async () => {
    const res = await get(`${target.endpoints.gateway}/ipfs/Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD`, {
      headers: { range: 'bytes=6-' },
    });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe('bytes 6-10/11');
    expect(await res.text()).toBe('world');
  });

  test('a malformed CID is 400 and an unknown one 404', async () => {
    expect((await get(`${target.endpoints.gateway}/ipfs/not-a-cid`)).status).toBe(400);
    const unknown = await get(`${target.endpoints.gateway}/ipfs/QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o`);
    expect(unknown.status).toBe(404);
  });
});

const SITE_QUERY = `query ($id: ID!) { getSiteById(siteId: $id) {
  id name slug teamId createdBy createdAt team { id name }
  buildSettings { buildCommand publishDirectoryPath environmentVariables { name value } }
  deploySettings { autoPublishing prDeployPreviews source { __typename ... on Repository { type url branch } ... on IpfsSource { cid } } }
  publishedDeploy { id } latestDeploy { id }
} }`;

describe.each(door('graphql', () => lambdaFetch(target.graphqlLambda!)))('GraphQL through the $name', ({ fetch: post }) => {
  const gql = (query: string, variables: Record<string, unknown>, authorization: string | null = a.apiKey) =>
    post(target.endpoints.graphql, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization !== null ? { authorization } : {}) },
      body: JSON.stringify({ query, variables }),
    });

  test("getSiteById answers for a site of the caller's team", async () => {
    const res = await gql(SITE_QUERY, { id: site.id });
    expect(res.status).toBe(200);
    const { data, errors } = (await res.json()) as { data: any; errors?: unknown };
    expect(errors).toBeUndefined();
    expect(data.getSiteById).toMatchObject({
      id: site.id,
      name: site.slug,
      slug: site.slug,
      teamId: a.team.id,
      createdBy: a.account.id,
      createdAt: site.createdAt,
      team: { id: a.team.id, name: a.team.name },
      buildSettings: { buildCommand: 'npm run build', publishDirectoryPath: 'dist', environmentVariables: [] },
      deploySettings: {
        autoPublishing: true,
        prDeployPreviews: false,
        source: { __typename: 'Repository', type: 'GIT_HOST', url: 'https://example.com/team/docs.git', branch: 'main' },
      },
      publishedDeploy: null,
      latestDeploy: null,
    });
    expect(site.slug).toMatch(/^[a-z]+-[a-z]+-\d{4}$/);
  });

  test('getSiteById is null for an unknown id', async () => {
    const { data } = (await (await gql(SITE_QUERY, { id: '00000000-0000-0000-0000-000000000000' })).json()) as { data: any };
    expect(data.getSiteById).toBeNull();
  });

  test('a missing or unknown API key is UNAUTHENTICATED', async () => {
    for (const auth of [null, 'cairn_not_a_real_key']) {
      const res = await gql(SITE_QUERY, { id: site.id }, auth);
      const body = (await res.json()) as { errors: Array<{ extensions: { code: string } }> };
      expect(res.status).toBe(401);
      expect(body.errors[0]!.extensions.code).toBe('UNAUTHENTICATED');
      expect(JSON.stringify(body)).not.toContain(site.id);
    }
  });

  test('the raw key, with spaces, and Bearer both authenticate', async () => {
    for (const auth of [`  ${a.apiKey} `, `Bearer ${a.apiKey}`]) {
      const { data } = (await (await gql(SITE_QUERY, { id: site.id }, auth)).json()) as { data: any };
      expect(data.getSiteById.id).toBe(site.id);
    }
  });
});

localTest('the deploy worker runs on schedule, finds nothing to do and says so in its structured log', async () => {
  const workerLambda = ((await import('../../functions/deploy-worker/handler.js')) as unknown as { handler: () => Promise<unknown> })
    .handler;
  const lines: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  process.env.CAIRN_LOG_LEVEL = 'info';
  try {
    const result = await workerLambda();
    expect(result).toMatchObject({ queued: 0, requeued: [], timedOut: [] });
  } finally {
    process.stdout.write = write;
  }
  const records = lines
    .flatMap((l) => l.split('\n'))
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  expect(records).toContainEqual(
    expect.objectContaining({ level: 'info', fn: 'deploy-worker', msg: 'no deploys waiting; nothing to do', queued: 0 }),
  );
});
