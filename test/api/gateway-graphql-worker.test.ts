/**
 * The gateway, GraphQL and deploy-worker slices, each through both doors.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { startTestService, BOOT, type TestService } from '../support/service.js';
import { lambdaFetch, type LambdaFn } from '../support/lambda-door.js';
import type { Site } from '../../functions/core/data/sites.js';

let service: TestService;
let gatewayLambda: LambdaFn;
let graphqlLambda: LambdaFn;
let workerLambda: () => Promise<unknown>;
const savedEnv = { ...process.env };
let site: Site;

beforeAll(async () => {
  service = await startTestService();
  Object.assign(process.env, service.env);
  gatewayLambda = ((await import('../../functions/gateway/handler.js')) as unknown as { handler: LambdaFn }).handler;
  graphqlLambda = ((await import('../../functions/graphql/handler.js')) as unknown as { handler: LambdaFn }).handler;
  workerLambda = ((await import('../../functions/deploy-worker/handler.js')) as unknown as { handler: () => Promise<unknown> }).handler;
  await service.s3().send(new PutObjectCommand({ Bucket: 'default-bucket', Key: 'hello.txt', Body: 'hello world', ContentType: 'text/plain' }));
  const account = await service.services.accounts.getAccountByName('default');
  site = await service.services.sites.create({
    teamId: account!.defaultTeamId,
    createdBy: account!.id,
    name: 'docs',
    buildSettings: { buildCommand: 'npm run build', publishDirectoryPath: 'dist', environmentVariables: [] },
    deploySettings: { autoPublishing: true, prDeployPreviews: false, source: { kind: 'repository', type: 'GIT_HOST', url: 'https://example.com/team/docs.git', branch: 'main' } },
  });
});

afterAll(async () => {
  process.env = savedEnv;
  await service.close();
});

type Fetch = (url: string, init?: { method?: string; headers?: Record<string, string>; body?: string }) => Promise<Response>;
const door = (name: string, local: () => Fetch, lambda: () => Fetch) => [
  { name: 'node:http door', fetch: (url: string, init?: Parameters<Fetch>[1]) => local()(url, init) },
  { name: 'Lambda door', fetch: (url: string, init?: Parameters<Fetch>[1]) => lambda()(url, init) },
].map((d) => ({ ...d, what: name }));

describe.each(door('gateway', () => fetch as Fetch, () => lambdaFetch(gatewayLambda)))('gateway through the $name', ({ fetch: get }) => {
  test('GET /ipfs/<cid> returns the bytes, v0 and v1 alike, with immutable caching', async () => {
    for (const cid of ['Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD', 'bafybeihykld7uyxzogax6vgyvag42y7464eywpf55gxi5qpoisibh3c5wa']) {
      const res = await get(`${service.endpoints.gateway}/ipfs/${cid}`);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('hello world');
      expect(res.headers.get('etag')).toBe(`"${cid}"`);
      expect(res.headers.get('cache-control')).toContain('immutable');
      expect(res.headers.get('content-type')).toBe('text/plain');
    }
  });

  test('a range request gets 206 and the slice', async () => {
    const res = await get(`${service.endpoints.gateway}/ipfs/Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD`, { headers: { range: 'bytes=6-' } });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe('bytes 6-10/11');
    expect(await res.text()).toBe('world');
  });

  test('a malformed CID is 400 and an unknown one 404', async () => {
    expect((await get(`${service.endpoints.gateway}/ipfs/not-a-cid`)).status).toBe(400);
    const unknown = await get(`${service.endpoints.gateway}/ipfs/QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o`);
    expect(unknown.status).toBe(404);
  });
});

const SITE_QUERY = `query ($id: ID!) { getSiteById(siteId: $id) {
  id name slug teamId createdBy createdAt team { id name }
  buildSettings { buildCommand publishDirectoryPath environmentVariables { name value } }
  deploySettings { autoPublishing prDeployPreviews source { __typename ... on Repository { type url branch } ... on IpfsSource { cid } } }
  publishedDeploy { id } latestDeploy { id }
} }`;

describe.each(door('graphql', () => fetch as Fetch, () => lambdaFetch(graphqlLambda)))('GraphQL through the $name', ({ fetch: post }) => {
  const gql = (query: string, variables: Record<string, unknown>, authorization: string | null = BOOT.apiToken) =>
    post(`${service.config.urls.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization !== null ? { authorization } : {}) },
      body: JSON.stringify({ query, variables }),
    });

  test('getSiteById answers for a site of the caller\'s team', async () => {
    const res = await gql(SITE_QUERY, { id: site.id });
    expect(res.status).toBe(200);
    const { data, errors } = (await res.json()) as { data: any; errors?: unknown };
    expect(errors).toBeUndefined();
    expect(data.getSiteById).toMatchObject({
      id: site.id,
      name: 'docs',
      slug: site.slug,
      teamId: site.teamId,
      createdAt: site.createdAt,
      team: { id: site.teamId, name: 'default' },
      buildSettings: { buildCommand: 'npm run build', publishDirectoryPath: 'dist', environmentVariables: [] },
      deploySettings: { autoPublishing: true, prDeployPreviews: false, source: { __typename: 'Repository', type: 'GIT_HOST', url: 'https://example.com/team/docs.git', branch: 'main' } },
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
    for (const auth of [`  ${BOOT.apiToken} `, `Bearer ${BOOT.apiToken}`]) {
      const { data } = (await (await gql(SITE_QUERY, { id: site.id }, auth)).json()) as { data: any };
      expect(data.getSiteById.id).toBe(site.id);
    }
  });
});

test('the deploy worker runs on schedule, finds nothing to do and says so in its structured log', async () => {
  const lines: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  process.env.CAIRN_LOG_LEVEL = 'info';
  try {
    const result = await workerLambda();
    expect(result).toMatchObject({ queued: 0, started: [] });
  } finally {
    process.stdout.write = write;
  }
  const records = lines.flatMap((l) => l.split('\n')).filter(Boolean).map((l) => JSON.parse(l));
  expect(records).toContainEqual(expect.objectContaining({ level: 'info', fn: 'deploy-worker', msg: 'no deploys waiting; nothing to do', queued: 0 }));
});
