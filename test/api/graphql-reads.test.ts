/**
 * What a GraphQL read costs in database calls, through the node:http door
 * of the local service: the web app's page of a team's sites with each
 * site's latest and published deploy, the command line's site by slug, a
 * page of deploys. The calls are counted as they leave for the embedded
 * DynamoDB (the real client, each call passed on); the answers are checked
 * too, so a read saved never changes what is said. Sites and finished
 * deploys read within RECENT_READS_MS are not read again (recent-reads.ts):
 * the same request at once sends no call.
 */
import { dataOf, graphqlClient, newAccount, seedDeploys, type AccountFixture } from '../support/graphql.js';
import { newIpnsKey } from '../../functions/core/ipfs/ipns.js';
import { startTestService, type TestService } from '../support/service.js';
import { RECENT_READS_MS } from '../../functions/core/data/recent-reads.js';

let service: TestService;
let owner: AccountFixture;
let sites: Array<{ id: string; slug: string; published: string; latest: string; ipnsName: string }>;
const nodeDoor = { name: 'node:http door', fetch: (url: string, init?: object) => fetch(url, init as RequestInit) };
let client: ReturnType<typeof graphqlClient>;
const calls = new Map<string, number>();

const PAGE = `query ($t: ID!) { getSitesByTeam(teamId: $t, limit: 20) { sites { id slug
  latestDeploy { id published status } publishedDeploy { id published status } } nextToken } }`;
const BY_SLUG = `query ($s: String!) { getSiteBySlug(slug: $s) { id slug ipnsName
  latestDeploy { id published } publishedDeploy { id published } } }`;
const DEPLOYS = 'query ($s: ID!) { getDeploysBySite(siteId: $s, limit: 5) { deploys { id published } nextToken } }';
const CREATE = 'mutation { createSite(input: { deploySettings: { source: { ipfs: {} } } }) { id slug } }';

beforeAll(async () => {
  service = await startTestService();
  client = graphqlClient(nodeDoor, service.endpoints.graphql);
  owner = await newAccount(service, 'reads');
  sites = [];
  for (let i = 0; i < 5; i++) {
    const site = dataOf(await client.gql(owner.apiKey, CREATE)).createSite as { id: string; slug: string };
    const [published, latest] = await seedDeploys(service, site.id, 2, Date.UTC(2025, 0, 1 + i));
    await service.services.sites.publishDeploy(site.id, published!.id, { onlyIfNewer: false });
    await service.services.sites.setLatestDeploy(site.id, latest!.id);
    // Its IPNS key, as its first publish makes it.
    const { name } = await service.services.ipnsNames.siteKey(site.id, newIpnsKey);
    sites.push({ ...site, published: published!.id, latest: latest!.id, ipnsName: name });
  }
  // Every call the service's stores send, by command, passed on unchanged; but the key's check,
  // remembered for half a second only (test/components/api-key-checks.test.ts), which a slow
  // machine may let pass between two requests, and the local deploy queue's polls of the
  // deploys table's gsi1, which run beside the requests.
  const { db } = service.services;
  const send = db.doc.send.bind(db.doc) as (command: object) => Promise<unknown>;
  (db.doc as { send: unknown }).send = (command: { input?: { Key?: { pk?: string }; IndexName?: string; TableName?: string } }) => {
    const input = command.input ?? {};
    const queue = input.TableName === db.tables.deploys && input.IndexName === 'gsi1';
    if (!queue && !input.Key?.pk?.startsWith('TOKEN#')) calls.set(command.constructor.name, (calls.get(command.constructor.name) ?? 0) + 1);
    return send(command);
  };
}, 120_000);
afterAll(async () => {
  await service?.close();
});

/**
 * The calls one request sends once what the process remembers of sites and
 * finished deploys has lapsed (RECENT_READS_MS), after the same request
 * once (which reads what is remembered longer: which site a slug names, the
 * IPNS name); and the calls of the same request again at once
 * (`againAtOnce`: none, unless the request lists deploys). A
 * machine too busy to send the second within RECENT_READS_MS of the first
 * tries again (three times at most).
 */
async function callsOf(
  query: string,
  variables: Record<string, unknown>,
  againAtOnce: Record<string, number> = {},
): Promise<{ data: any; calls: Record<string, number> }> {
  dataOf(await client.gql(owner.apiKey, query, variables));
  for (let attempt = 1; ; attempt++) {
    await new Promise((r) => setTimeout(r, RECENT_READS_MS + 50));
    calls.clear();
    const started = performance.now();
    const data = dataOf(await client.gql(owner.apiKey, query, variables));
    const cold = Object.fromEntries(calls);
    calls.clear();
    expect(dataOf(await client.gql(owner.apiKey, query, variables))).toEqual(data);
    const again = Object.fromEntries(calls);
    if (performance.now() - started < RECENT_READS_MS || attempt === 3) {
      expect(again).toEqual(againAtOnce);
      return { data, calls: cold };
    }
  }
}

test("a page of the team's sites with their deploys: one query and one batch, whatever the page holds", async () => {
  const { data, calls: sent } = await callsOf(PAGE, { t: owner.team.id });
  expect(data.getSitesByTeam.sites).toEqual(
    sites.map((s) => ({
      id: s.id,
      slug: s.slug,
      latestDeploy: { id: s.latest, published: false, status: 'DEPLOYED' },
      publishedDeploy: { id: s.published, published: true, status: 'DEPLOYED' },
    })),
  );
  // The deploys' `published` takes the site from the page (it read 5 sites again before).
  expect(sent).toEqual({ QueryCommand: 1, BatchGetCommand: 1 });
});

test('a site by slug: the site and its deploys, the slug and the IPNS name remembered', async () => {
  const site = sites[2]!;
  const { data, calls: sent } = await callsOf(BY_SLUG, { s: site.slug });
  expect(data.getSiteBySlug).toEqual({
    id: site.id,
    slug: site.slug,
    ipnsName: site.ipnsName,
    latestDeploy: { id: site.latest, published: false },
    publishedDeploy: { id: site.published, published: true },
  });
  expect(sent).toEqual({ GetCommand: 1, BatchGetCommand: 1 });
});

test("a page of deploys: the site once and the page, each deploy's `published` from that site", async () => {
  const site = sites[0]!;
  // A site's listing of deploys changes with every deploy: it is read each time.
  const { data, calls: sent } = await callsOf(DEPLOYS, { s: site.id }, { QueryCommand: 1 });
  expect(data.getDeploysBySite.deploys).toEqual([
    { id: site.latest, published: false },
    { id: site.published, published: true },
  ]);
  expect(sent).toEqual({ GetCommand: 1, QueryCommand: 1 });
});
