/**
 * Deploy notifications end to end on a local service: real deploys from a
 * real git server, and a receiver on this machine's loopback (allowed by
 * the test services' CAIRN_OUTBOUND_PRIVATE=allow; refused by default, as
 * test/api/outbound-policy.test.ts and test/unit/notification-urls.test.ts
 * show) that checks every delivery's signature with the secret it was
 * given, computed here independently of the service's code. Retries use a
 * 1 s back-off base (CAIRN_NOTIFICATION_RETRY_BASE) so they take seconds.
 * Every wait is a poll with a deadline.
 */
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { startTestService, type TestService } from '../support/service.js';
import { dataOf, graphqlClient, newAccount, onlyError, type AccountFixture } from '../support/graphql.js';
import { startGitServer, type GitServer } from '../support/git-server.js';

let service: TestService;
let git: GitServer;
let a: AccountFixture;
let b: AccountFixture;
let client: ReturnType<typeof graphqlClient>;

interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  raw: string;
  body: any;
  at: number;
  /** The signature checked here with the URL's secret; the reason when it did not verify. */
  verified: true | string;
}

/** What the receiver answers on a path, in turn (the last one from then on): a status code, or 'hang' (never answer). */
const plans = new Map<string, Array<number | 'hang'>>();
const secrets = new Map<string, string>();
const received: Received[] = [];
let receiver: Server;
let receiverUrl: string;

function verify(secret: string | undefined, header: string | undefined, raw: string): true | string {
  if (!secret) return 'no secret for this path';
  const m = /^t=(\d+),sha256=([0-9a-f]{64})$/.exec(header ?? '');
  if (!m) return `malformed signature header ${header}`;
  const expected = createHmac('sha256', secret).update(`${m[1]}.${raw}`).digest('hex');
  if (expected !== m[2]) return 'signature mismatch';
  if (Math.abs(Date.now() / 1000 - Number(m[1])) > 300) return 'timestamp outside the window';
  return true;
}

/** What a receiver does with a request: records it, checks its signature, answers by the path's plan. */
function receive(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks).toString('utf8');
    const path = req.url ?? '/';
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      body = undefined;
    }
    received.push({
      path,
      headers: req.headers,
      raw,
      body,
      at: Date.now(),
      verified: verify(secrets.get(path), req.headers['x-cairn-signature'] as string | undefined, raw),
    });
    const plan = plans.get(path) ?? [200];
    const answer = plan.length > 1 ? plan.shift()! : plan[0]!;
    if (answer === 'hang') return; // never answers
    res.writeHead(answer).end(answer >= 300 ? 'no' : 'ok');
  });
}

/** A receiver listening on 127.0.0.1:`port` (0: any free port). */
async function listen(port: number): Promise<Server> {
  const server = createServer(receive);
  await new Promise<void>((r, reject) => server.once('error', reject).listen(port, '127.0.0.1', () => r()));
  return server;
}

async function stop(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
}

async function startReceiver(): Promise<void> {
  receiver = await listen(0);
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  [service, git] = await Promise.all([
    startTestService({ CAIRN_GC_INTERVAL: '0', CAIRN_PREVIEW: 'off', CAIRN_BUILD_TIMEOUT: '20', CAIRN_NOTIFICATION_RETRY_BASE: '1' }),
    startGitServer(),
    startReceiver(),
  ]);
  a = await newAccount(service, 'notified');
  b = await newAccount(service, 'other');
  client = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, service.endpoints.graphql);
});
afterAll(async () => {
  await service?.close();
  await git?.close();
  if (receiver) await stop(receiver);
});

const gql = async (query: string, variables: Record<string, unknown> = {}, key = a.apiKey) => client.gql(key, query, variables);
const DELIVERY = 'id deployId event status attempt at statusCode error nextAttemptAt';

let repos = 0;
let paths = 0;
const newPath = () => `/hook-${++paths}`;

async function gitSite(
  files: Record<string, string>,
  build: Record<string, unknown> = {},
): Promise<{ id: string; slug: string; commit: string; repo: string }> {
  const repo = `acme/notified-${++repos}`;
  const commit = await git.commit(repo, files, 'the commit');
  const input = {
    buildSettings: build,
    deploySettings: { source: { repository: { type: 'GIT_HOST', url: git.repoUrl(repo), branch: 'main' } } },
  };
  const site = dataOf(await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', { input })).createSite;
  return { ...site, commit, repo };
}

async function addUrl(siteId: string, path: string, events?: string[], base = receiverUrl): Promise<{ id: string; secret: string }> {
  const res = dataOf(
    await gql(
      'mutation ($s: ID!, $u: String!, $e: [DeployEvent!]) { addNotificationUrl(siteId: $s, url: $u, events: $e) { notificationUrl { id url events } secret } }',
      { s: siteId, u: `${base}${path}`, e: events },
    ),
  ).addNotificationUrl;
  secrets.set(path, res.secret);
  return { id: res.notificationUrl.id, secret: res.secret };
}

async function trigger(siteId: string): Promise<{ id: string }> {
  return dataOf(await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: siteId })).triggerDeploy;
}

async function poll<T>(what: string, get: () => Promise<T> | T, done: (v: T) => boolean, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await get();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen in ${ms} ms: ${JSON.stringify(value).slice(0, 3000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const at = (path: string) => received.filter((r) => r.path === path);

async function deliveriesOf(siteId: string, urlId: string, limit = 10): Promise<any[]> {
  const site = dataOf(
    await gql(
      `query ($s: ID!, $l: Int) { getSiteById(siteId: $s) { notificationUrls { id lastDeliveries(limit: $l) { ${DELIVERY} } } } }`,
      { s: siteId, l: limit },
    ),
  ).getSiteById;
  return site.notificationUrls.find((u: any) => u.id === urlId).lastDeliveries;
}

async function deployOf(siteId: string, deployId: string): Promise<any> {
  return dataOf(
    await gql(
      'query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { id status ipfsHash published completedAt log repository { commit branch } } }',
      { s: siteId, d: deployId },
    ),
  ).getDeployById;
}

test("a failing build delivers a signed FAILED notification with the log's last 50 lines", async () => {
  const lines = Array.from({ length: 80 }, (_, i) => `echo build-line-${i + 1}`).join('; ');
  const site = await gitSite({ 'index.html': 'x' }, { buildCommand: `${lines}; exit 3` });
  const path = newPath();
  const url = await addUrl(site.id, path, ['FAILED']);
  const deploy = await trigger(site.id);
  const [delivery] = await poll(
    'the FAILED notification',
    () => at(path),
    (r) => r.length >= 1,
  );
  expect(delivery!.verified).toBe(true);
  expect(delivery!.headers['content-type']).toBe('application/json');
  expect(delivery!.headers['x-cairn-event']).toBe('FAILED');
  const body = delivery!.body;
  expect(body.event).toBe('FAILED');
  expect(body.site).toEqual({ id: site.id, slug: site.slug, name: expect.any(String), url: expect.stringContaining(`//${site.slug}.`) });
  expect(body.deploy).toMatchObject({
    id: deploy.id,
    siteId: site.id,
    status: 'FAILED',
    commit: site.commit,
    branch: 'main',
    ipfsHash: null,
    reason: 'the build command failed (exit code 3)',
  });
  expect(body.deploy.url).toContain(`//${deploy.id.toLowerCase()}--${site.slug}.`);
  expect(body.deploy.completedAt).toEqual(expect.any(String));
  // The log's last 50 lines: its end, the reason last, and not its beginning.
  expect(body.logTail).toHaveLength(50);
  expect(body.logTail[49]).toMatch(/Failed: the build command failed \(exit code 3\)$/);
  expect(body.logTail.join('\n')).toContain('build-line-80');
  expect(body.logTail.join('\n')).not.toContain(`Deploy ${deploy.id} started`);
  const log = (await deployOf(site.id, deploy.id)).log.trimEnd().split('\n');
  expect(body.logTail).toEqual(log.slice(-50));
  // Only the event asked for, and it is readable through GraphQL as delivered.
  await new Promise((r) => setTimeout(r, 500));
  expect(at(path)).toHaveLength(1);
  const [recorded] = await deliveriesOf(site.id, url.id);
  expect(recorded).toMatchObject({
    id: delivery!.headers['x-cairn-delivery'],
    deployId: deploy.id,
    event: 'FAILED',
    status: 'DELIVERED',
    attempt: 1,
    statusCode: 200,
    error: null,
    nextAttemptAt: null,
  });
});

test('a good deploy delivers CREATED, BUILDING, SUCCEEDED and PUBLISHED in order, readable through GraphQL', async () => {
  const site = await gitSite({ 'public/index.html': '<p>hello</p>' }, { buildCommand: 'echo building', publishDirectoryPath: 'public' });
  const path = newPath();
  const url = await addUrl(site.id, path);
  const deploy = await trigger(site.id);
  const got = await poll(
    'four notifications',
    () => at(path),
    (r) => r.length >= 4,
  );
  expect(got.map((r) => r.body.event)).toEqual(['CREATED', 'BUILDING', 'SUCCEEDED', 'PUBLISHED']);
  expect(got.map((r) => r.headers['x-cairn-event'])).toEqual(['CREATED', 'BUILDING', 'SUCCEEDED', 'PUBLISHED']);
  for (const r of got) {
    expect(r.verified).toBe(true);
    expect(r.body.deploy.id).toBe(deploy.id);
    expect(r.body.logTail).toBeUndefined();
  }
  expect(new Set(got.map((r) => r.headers['x-cairn-delivery'])).size).toBe(4);
  const done = await deployOf(site.id, deploy.id);
  expect(done).toMatchObject({ status: 'DEPLOYED', published: true });
  expect(got[0]!.body.deploy).toMatchObject({ status: 'IN_PROGRESS', ipfsHash: null });
  expect(got[1]!.body.deploy).toMatchObject({ status: 'IN_PROGRESS', commit: site.commit });
  expect(got[2]!.body.deploy).toMatchObject({ status: 'DEPLOYED', ipfsHash: done.ipfsHash, commit: site.commit });
  expect(got[3]!.body.deploy).toMatchObject({ status: 'DEPLOYED', ipfsHash: done.ipfsHash, published: true });
  const recorded = await poll(
    'four deliveries recorded',
    () => deliveriesOf(site.id, url.id),
    (d) => d.length === 4 && d.every((x: any) => x.status === 'DELIVERED'),
  );
  // Newest first, each delivered at its first attempt with the receiver's status code.
  expect(recorded.map((d: any) => [d.event, d.statusCode, d.attempt])).toEqual([
    ['PUBLISHED', 200, 1],
    ['SUCCEEDED', 200, 1],
    ['BUILDING', 200, 1],
    ['CREATED', 200, 1],
  ]);
  expect(recorded.map((d: any) => d.id)).toEqual(got.map((r) => r.headers['x-cairn-delivery']).reverse());
  expect(await deliveriesOf(site.id, url.id, 2)).toHaveLength(2);
});

test('a receiver that answers 500 gets the delivery again, signed anew, until it answers 200', async () => {
  const site = await gitSite({ 'index.html': 'x' });
  const path = newPath();
  plans.set(path, [500, 500, 200]);
  const url = await addUrl(site.id, path, ['CREATED']);
  const deploy = await trigger(site.id);
  // After the second 500 the next attempt is 2 s away (1 s base, doubled): the record says why meanwhile.
  const pending = await poll(
    'the second failed attempt recorded',
    () => deliveriesOf(site.id, url.id),
    (d) => d[0]?.attempt === 2,
  );
  expect(pending[0]).toMatchObject({
    deployId: deploy.id,
    event: 'CREATED',
    status: 'PENDING',
    attempt: 2,
    statusCode: 500,
    error: 'the receiver answered 500',
  });
  expect(Date.parse(pending[0].nextAttemptAt) - Date.parse(pending[0].at)).toBeGreaterThanOrEqual(1900);
  const [done] = await poll(
    'the delivery delivered',
    () => deliveriesOf(site.id, url.id),
    (d) => d[0]?.status === 'DELIVERED',
  );
  expect(done).toMatchObject({ status: 'DELIVERED', attempt: 3, statusCode: 200, error: null });
  const got = at(path);
  expect(got).toHaveLength(3);
  expect(got.every((r) => r.verified === true)).toBe(true);
  expect(new Set(got.map((r) => r.headers['x-cairn-delivery']))).toEqual(new Set([done.id]));
  expect(new Set(got.map((r) => r.raw)).size).toBe(1);
  expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(900);
  expect(got[2]!.at - got[1]!.at).toBeGreaterThanOrEqual(1900);
});

test('a receiver that never answers times out after 5 s, and the deploy does not wait for it', async () => {
  const site = await gitSite({ 'index.html': 'x' });
  const path = newPath();
  plans.set(path, ['hang', 200]);
  const url = await addUrl(site.id, path, ['CREATED', 'SUCCEEDED']);
  const deploy = await trigger(site.id);
  await poll(
    'the hung delivery arriving',
    () => at(path),
    (r) => r.length >= 1,
  );
  const ended = await poll(
    'the deploy ending',
    () => deployOf(site.id, deploy.id),
    (d) => d.status !== 'IN_PROGRESS',
    20_000,
  );
  expect(ended.status).toBe('DEPLOYED');
  const timedOut = await poll(
    'the attempt timing out',
    () => deliveriesOf(site.id, url.id),
    (d) => d.find((x: any) => x.event === 'CREATED')?.attempt >= 1,
    10_000,
  );
  const first = timedOut.find((x: any) => x.event === 'CREATED');
  // The deploy ended while the receiver still held the first delivery: its own record says
  // when, so a slow clone on a loaded machine moves both times, not the order.
  expect(Date.parse(ended.completedAt)).toBeLessThan(Date.parse(first.at));
  expect(first.error).toBe('no answer within 5 s');
  expect(first.statusCode).toBeNull();
  expect(Date.parse(first.at) - at(path)[0]!.at).toBeGreaterThanOrEqual(4900);
  // One delivery per URL at a time: SUCCEEDED waited while CREATED was in flight, then went
  // while CREATED waited for its retry; tried again, CREATED is delivered too.
  const all = await poll(
    'both delivered',
    () => deliveriesOf(site.id, url.id),
    (d) => d.length === 2 && d.every((x: any) => x.status === 'DELIVERED'),
    10_000,
  );
  expect(all.find((x: any) => x.event === 'CREATED')).toMatchObject({ attempt: 2, statusCode: 200 });
  expect(all.find((x: any) => x.event === 'SUCCEEDED')).toMatchObject({ attempt: 1, statusCode: 200 });
  const got = at(path);
  expect(got.map((r) => r.body.event)).toEqual(['CREATED', 'SUCCEEDED', 'CREATED']);
  expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(4900);
  expect(got.every((r) => r.verified === true)).toBe(true);
});

test('a manual publishDeploy (a rollback) delivers PUBLISHED for the deploy it puts back', async () => {
  const site = await gitSite({ 'index.html': 'one' });
  const first = await trigger(site.id);
  await poll(
    'the first deploy published',
    () => deployOf(site.id, first.id),
    (d) => d.status === 'DEPLOYED' && d.published,
  );
  const second = await git.commit(site.repo, { 'index.html': 'two' }, 'the second commit');
  const next = await trigger(site.id);
  await poll(
    'the second deploy published',
    () => deployOf(site.id, next.id),
    (d) => d.status === 'DEPLOYED' && d.published,
  );
  // Only what happens from here on is heard.
  const path = newPath();
  const url = await addUrl(site.id, path, ['PUBLISHED']);
  const rolledBack = dataOf(
    await gql('mutation ($s: ID!, $d: ID!) { publishDeploy(siteId: $s, deployId: $d) { id published } }', { s: site.id, d: first.id }),
  ).publishDeploy;
  expect(rolledBack).toEqual({ id: first.id, published: true });
  const [delivery] = await poll(
    'the PUBLISHED notification',
    () => at(path),
    (r) => r.length >= 1,
  );
  expect(delivery!.verified).toBe(true);
  expect(delivery!.headers['x-cairn-event']).toBe('PUBLISHED');
  expect(delivery!.body).toMatchObject({
    event: 'PUBLISHED',
    site: { id: site.id },
    deploy: { id: first.id, status: 'DEPLOYED', published: true, commit: site.commit },
  });
  expect(delivery!.body.deploy.commit).not.toBe(second);
  await new Promise((r) => setTimeout(r, 300));
  expect(at(path)).toHaveLength(1);
  const [recorded] = await poll(
    'the delivery recorded',
    () => deliveriesOf(site.id, url.id),
    (d) => d[0]?.status === 'DELIVERED',
  );
  expect(recorded).toMatchObject({ deployId: first.id, event: 'PUBLISHED', attempt: 1, statusCode: 200 });
});

test('a URL nobody listens on (connection refused) is retried with the error recorded, and delivered once a receiver listens there', async () => {
  // A port that was free a moment ago: nothing listens on it until this test starts a receiver there.
  const probe = await listen(0);
  const port = (probe.address() as AddressInfo).port;
  await stop(probe);
  const site = await gitSite({ 'index.html': 'x' });
  const path = newPath();
  const url = await addUrl(site.id, path, ['CREATED'], `http://127.0.0.1:${port}`);
  const deploy = await trigger(site.id);
  const refused = await poll(
    'a refused attempt recorded',
    () => deliveriesOf(site.id, url.id),
    (d) => d[0]?.attempt >= 1,
  );
  expect(refused[0]).toMatchObject({
    deployId: deploy.id,
    event: 'CREATED',
    status: 'PENDING',
    statusCode: null,
    error: expect.stringMatching(/ECONNREFUSED/),
    nextAttemptAt: expect.any(String),
  });
  expect(at(path)).toEqual([]);
  const late = await listen(port);
  try {
    const [done] = await poll(
      'the delivery delivered',
      () => deliveriesOf(site.id, url.id),
      (d) => d[0]?.status === 'DELIVERED',
      20_000,
    );
    expect(done).toMatchObject({ status: 'DELIVERED', statusCode: 200, error: null, nextAttemptAt: null });
    expect(done.attempt).toBeGreaterThanOrEqual(2);
    const got = at(path);
    expect(got).toHaveLength(1);
    expect(got[0]!.verified).toBe(true);
    expect(got[0]!.headers['x-cairn-delivery']).toBe(done.id);
  } finally {
    await stop(late);
  }
});

describe('adding and removing URLs', () => {
  let site: { id: string; slug: string };
  beforeAll(async () => {
    site = await gitSite({ 'index.html': 'x' });
  });

  const add = (url: string, events?: string[], key = a.apiKey, siteId = site.id) =>
    gql(
      'mutation ($s: ID!, $u: String!, $e: [DeployEvent!]) { addNotificationUrl(siteId: $s, url: $u, events: $e) { notificationUrl { id } secret } }',
      { s: siteId, u: url, e: events },
      key,
    );

  test.each([
    ['not a URL', 'hooks.example.com/x', /absolute URL/],
    ['an ftp URL', 'ftp://example.com/x', /http:\/\/ or https:\/\//],
    ['credentials in the URL', 'https://alice:s3cr3t@example.com/x', /credentials/],
    ['a URL over 2048 characters', `https://example.com/${'a'.repeat(2040)}`, /2048/],
    ['an empty URL', '', /empty/],
  ])('%s is BAD_USER_INPUT naming url', async (_, url, why) => {
    const err = onlyError(await add(url));
    expect(err.extensions.code).toBe('BAD_USER_INPUT');
    expect(err.extensions.field).toBe('url');
    expect(err.message).toMatch(why);
    expect(err.message).not.toContain('s3cr3t');
  });

  test('an empty events list, or an unknown event, is refused', async () => {
    const empty = onlyError(await add(`${receiverUrl}/x`, []));
    expect(empty.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'events' });
    expect(onlyError(await add(`${receiverUrl}/x`, ['EXPLODED'])).extensions.code).toBe('BAD_USER_INPUT');
  });

  test('an unknown site is NOT_FOUND; a lastDeliveries limit below 1 is BAD_USER_INPUT', async () => {
    expect(onlyError(await add(`${receiverUrl}/x`, undefined, a.apiKey, '00000000-0000-4000-8000-000000000000')).extensions.code).toBe(
      'NOT_FOUND',
    );
    const own = await gitSite({ 'index.html': 'x' });
    await addUrl(own.id, newPath());
    const err = onlyError(
      await gql('query ($s: ID!) { getSiteById(siteId: $s) { notificationUrls { lastDeliveries(limit: 0) { id } } } }', { s: own.id }),
    );
    expect(err.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'limit' });
  });

  test('ten URLs per site at most; the secret is shown once and sealed at rest', async () => {
    const own = await gitSite({ 'index.html': 'x' });
    const secretsSeen: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = dataOf(await add(`${receiverUrl}/many-${i}`, undefined, a.apiKey, own.id)).addNotificationUrl;
      expect(res.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
      secretsSeen.push(res.secret);
    }
    expect(new Set(secretsSeen).size).toBe(10);
    const eleventh = onlyError(await add(`${receiverUrl}/many-10`, undefined, a.apiKey, own.id));
    expect(eleventh.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'url' });
    expect(eleventh.message).toMatch(/at most 10/);
    const listed = dataOf(
      await gql('query ($s: ID!) { getSiteById(siteId: $s) { notificationUrls { id url events createdAt } } }', { s: own.id }),
    ).getSiteById.notificationUrls;
    expect(listed).toHaveLength(10);
    expect(listed[0]).toMatchObject({ url: `${receiverUrl}/many-0`, events: ['CREATED', 'BUILDING', 'FAILED', 'SUCCEEDED', 'PUBLISHED'] });
    expect(
      onlyError(await gql('query ($s: ID!) { getSiteById(siteId: $s) { notificationUrls { secret } } }', { s: own.id })).extensions.code,
    ).toBe('GRAPHQL_VALIDATION_FAILED');
    const item = await service.services.db.doc.send(
      new GetCommand({ TableName: service.config.tables.sites, Key: { pk: `SITE#${own.id}`, sk: `NOTIFYURL#${listed[0].id}` } }),
    );
    expect(typeof item.Item?.secret).toBe('string');
    expect(item.Item!.secret).not.toContain(secretsSeen[0]!.slice(6));
    expect(JSON.stringify(item.Item)).not.toContain(secretsSeen[0]);
    // One removed makes room again.
    expect(
      dataOf(
        await gql('mutation ($s: ID!, $n: ID!) { removeNotificationUrl(siteId: $s, notificationUrlId: $n) }', {
          s: own.id,
          n: listed[0].id,
        }),
      ).removeNotificationUrl,
    ).toBe(true);
    expect(dataOf(await add(`${receiverUrl}/many-10`, undefined, a.apiKey, own.id)).addNotificationUrl.secret).toMatch(/^whsec_/);
  });

  test('a removed URL gets nothing more; removing an unknown one is NOT_FOUND', async () => {
    const own = await gitSite({ 'index.html': 'x' });
    const kept = newPath();
    const removed = newPath();
    await addUrl(own.id, kept, ['CREATED']);
    const gone = await addUrl(own.id, removed, ['CREATED']);
    expect(
      dataOf(
        await gql('mutation ($s: ID!, $n: ID!) { removeNotificationUrl(siteId: $s, notificationUrlId: $n) }', { s: own.id, n: gone.id }),
      ).removeNotificationUrl,
    ).toBe(true);
    const again = onlyError(
      await gql('mutation ($s: ID!, $n: ID!) { removeNotificationUrl(siteId: $s, notificationUrlId: $n) }', { s: own.id, n: gone.id }),
    );
    expect(again.extensions.code).toBe('NOT_FOUND');
    await trigger(own.id);
    await poll(
      'the kept URL notified',
      () => at(kept),
      (r) => r.length >= 1,
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(at(removed)).toHaveLength(0);
  });

  test('deleting a site removes its notification URLs and their sealed secrets', async () => {
    const own = await gitSite({ 'index.html': 'x' });
    await addUrl(own.id, newPath(), ['CREATED']);
    expect(await service.services.notificationUrls.list(own.id)).toHaveLength(1);
    expect(dataOf(await gql('mutation ($s: ID!) { deleteSite(siteId: $s) }', { s: own.id })).deleteSite).toBe(true);
    expect(await service.services.notificationUrls.list(own.id)).toEqual([]);
  });

  test("another team's site: FORBIDDEN to add or remove, and its URLs unreadable", async () => {
    const path = newPath();
    const url = await addUrl(site.id, path);
    const forbiddenAdd = onlyError(await add(`${receiverUrl}/intruder`, undefined, b.apiKey));
    expect(forbiddenAdd.extensions.code).toBe('FORBIDDEN');
    const forbiddenRemove = onlyError(
      await gql(
        'mutation ($s: ID!, $n: ID!) { removeNotificationUrl(siteId: $s, notificationUrlId: $n) }',
        { s: site.id, n: url.id },
        b.apiKey,
      ),
    );
    expect(forbiddenRemove.extensions.code).toBe('FORBIDDEN');
    const read = dataOf(await gql('query ($s: ID!) { getSiteById(siteId: $s) { notificationUrls { id url } } }', { s: site.id }, b.apiKey));
    expect(read.getSiteById).toBeNull();
    // Untouched by the other team.
    const own = dataOf(await gql('query ($s: ID!) { getSiteById(siteId: $s) { notificationUrls { id url } } }', { s: site.id })).getSiteById
      .notificationUrls;
    expect(own).toEqual([{ id: url.id, url: `${receiverUrl}${path}` }]);
  });
});
