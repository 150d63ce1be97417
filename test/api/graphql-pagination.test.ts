/**
 * Pagination through both doors (or a deployed stack's endpoint): 1000
 * deploys paged through (each seen once, newest first, no empty last page),
 * a team's sites in creation order, page sizes, and nextToken tampering and
 * reuse. Teams and sites are made through the API; 1000 finished deploys
 * can only be written to the store, so the deploy listings run locally.
 */
import type { Deploy } from '../../functions/core/data/deploys.js';
import { newSortableId } from '../../functions/core/ids.js';
import { apiTarget, localTest, type ApiTarget } from '../support/api-target.js';
import { dataOf, graphqlClient, newTeam, onlyError, seedDeploys, targetGraphqlDoors, type TeamFixture } from '../support/graphql.js';
import { doorsFor } from '../support/test-set.js';

let target: ApiTarget;
const savedEnv = { ...process.env };
let a: TeamFixture;
let b: TeamFixture;
let busy: { id: string; createdAt: string };
let quiet: { id: string; createdAt: string };
let deploys: Deploy[];
const SITES = 45;
let sites: Array<{ id: string; createdAt: string }>;
const doors = targetGraphqlDoors(() => target);

const DEPLOYS =
  'query ($s: ID!, $l: Int, $t: String) { getDeploysBySite(siteId: $s, limit: $l, nextToken: $t) { deploys { id completedAt } nextToken } }';
const TEAM_SITES =
  'query ($t: ID!, $l: Int, $n: String) { getSitesByTeam(teamId: $t, limit: $l, nextToken: $n) { sites { id createdAt } nextToken } }';

const CREATE = 'mutation { createSite(input: { deploySettings: { source: { ipfs: {} } } }) { id createdAt } }';

beforeAll(async () => {
  target = await apiTarget();
  const client = graphqlClient(doors[0]!, target.endpoints.graphql);
  a = await newTeam(client, target.account, 'pages-a');
  b = await newTeam(client, target.other, 'pages-b');
  const create = async (key: string): Promise<{ id: string; createdAt: string }> => dataOf(await client.gql(key, CREATE)).createSite;
  busy = await create(a.apiKey);
  quiet = await create(a.apiKey);
  await create(b.apiKey);
  await target.whenLocal(async (service) => {
    deploys = await seedDeploys(service, busy.id, 1000);
    await seedDeploys(service, quiet.id, 3);
  });
  sites = [busy, quiet];
  for (let i = 0; i < SITES - 2; i++) sites.push(await create(a.apiKey));
});

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
});

describe.each(doorsFor(doors))('pagination through the $name', (door) => {
  let client: ReturnType<typeof graphqlClient>;
  beforeAll(() => {
    client = graphqlClient(door, target.endpoints.graphql);
  });

  async function allDeploys(limit: number | undefined) {
    const seen: string[] = [];
    const sizes: number[] = [];
    let token: string | null = null;
    do {
      const page: { deploys: Array<{ id: string }>; nextToken: string | null } = dataOf(
        await client.gql(a.apiKey, DEPLOYS, { s: busy.id, l: limit, t: token }),
      ).getDeploysBySite;
      sizes.push(page.deploys.length);
      seen.push(...page.deploys.map((d) => d.id));
      token = page.nextToken;
    } while (token);
    return { seen, sizes };
  }

  localTest.each([
    [100, 10],
    [37, 28],
  ])('1000 deploys, %i to a page: every deploy once, newest first, no empty last page', async (limit, pages) => {
    const { seen, sizes } = await allDeploys(limit);
    expect(seen).toEqual(deploys.map((d) => d.id).reverse());
    expect(sizes).toHaveLength(pages);
    expect(sizes.every((n) => n > 0)).toBe(true);
    expect(sizes.slice(0, -1).every((n) => n === limit)).toBe(true);
  });

  localTest('limit defaults to 20 and is capped at 100; below 1 it is BAD_USER_INPUT', async () => {
    expect(dataOf(await client.gql(a.apiKey, DEPLOYS, { s: busy.id })).getDeploysBySite.deploys).toHaveLength(20);
    expect(dataOf(await client.gql(a.apiKey, DEPLOYS, { s: busy.id, l: 5000 })).getDeploysBySite.deploys).toHaveLength(100);
    for (const l of [0, -3])
      expect(onlyError(await client.gql(a.apiKey, DEPLOYS, { s: busy.id, l })).extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        field: 'limit',
      });
  });

  localTest('a listing that fits one page has no nextToken', async () => {
    expect(dataOf(await client.gql(a.apiKey, DEPLOYS, { s: quiet.id, l: 3 })).getDeploysBySite.nextToken).toBeNull();
  });

  test('a site without deploys has an empty list', async () => {
    const lonely = dataOf(await client.gql(a.apiKey, CREATE)).createSite;
    expect(dataOf(await client.gql(a.apiKey, DEPLOYS, { s: lonely.id })).getDeploysBySite).toEqual({ deploys: [], nextToken: null });
    dataOf(await client.gql(a.apiKey, 'mutation ($s: ID!) { deleteSite(siteId: $s) }', { s: lonely.id }));
  });

  test("a team's sites come in creation order, each once, 20 to a page by default", async () => {
    const seen: Array<{ id: string; createdAt: string }> = [];
    const sizes: number[] = [];
    let token: string | null = null;
    do {
      const page: { sites: Array<{ id: string; createdAt: string }>; nextToken: string | null } = dataOf(
        await client.gql(a.apiKey, TEAM_SITES, { t: a.team.id, n: token }),
      ).getSitesByTeam;
      sizes.push(page.sites.length);
      seen.push(...page.sites);
      token = page.nextToken;
    } while (token);
    expect(sizes).toEqual([20, 20, 5]);
    const order = [...sites].sort((x, y) => (x.createdAt === y.createdAt ? (x.id < y.id ? -1 : 1) : x.createdAt < y.createdAt ? -1 : 1));
    expect(seen.map((s) => s.id)).toEqual(order.map((s) => s.id));
  });

  localTest('a token is good again (the same page), and the limit may change between pages', async () => {
    const first = dataOf(await client.gql(a.apiKey, DEPLOYS, { s: busy.id, l: 10 })).getDeploysBySite;
    const again1 = dataOf(await client.gql(a.apiKey, DEPLOYS, { s: busy.id, l: 10, t: first.nextToken })).getDeploysBySite;
    const again2 = dataOf(await client.gql(a.apiKey, DEPLOYS, { s: busy.id, l: 10, t: first.nextToken })).getDeploysBySite;
    expect(again2).toEqual(again1);
    const wider = dataOf(await client.gql(a.apiKey, DEPLOYS, { s: busy.id, l: 30, t: first.nextToken })).getDeploysBySite;
    expect(wider.deploys.map((d: { id: string }) => d.id)).toEqual(
      deploys
        .map((d) => d.id)
        .reverse()
        .slice(10, 40),
    );
  });

  localTest("a token from another site, another query, another team or another door's twin is handled by its binding", async () => {
    const deployToken = dataOf(await client.gql(a.apiKey, DEPLOYS, { s: busy.id, l: 1 })).getDeploysBySite.nextToken;
    const siteToken = dataOf(await client.gql(a.apiKey, TEAM_SITES, { t: a.team.id, l: 1 })).getSitesByTeam.nextToken;
    // Another site's listing, another query's: BAD_USER_INPUT.
    const otherSite = await client.gql(a.apiKey, DEPLOYS, { s: quiet.id, t: deployToken });
    expect(onlyError(otherSite).extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'nextToken' });
    expect(otherSite.data).toEqual({ getDeploysBySite: null });
    expect(onlyError(await client.gql(a.apiKey, TEAM_SITES, { t: a.team.id, n: deployToken })).extensions.code).toBe('BAD_USER_INPUT');
    expect(onlyError(await client.gql(a.apiKey, DEPLOYS, { s: busy.id, t: siteToken })).extensions.code).toBe('BAD_USER_INPUT');
    // Another team holding a's token still sees nothing of a's.
    expect(dataOf(await client.gql(b.apiKey, DEPLOYS, { s: busy.id, t: deployToken })).getDeploysBySite).toBeNull();
    expect(dataOf(await client.gql(b.apiKey, TEAM_SITES, { t: a.team.id, n: siteToken })).getSitesByTeam).toBeNull();
    // The other door issued tokens with the same key: they work here too.
    const other = doors.find((d) => d.name !== door.name)!;
    const twin = dataOf(await graphqlClient(other, target.endpoints.graphql).gql(a.apiKey, DEPLOYS, { s: busy.id, l: 1 })).getDeploysBySite
      .nextToken;
    expect(dataOf(await client.gql(a.apiKey, DEPLOYS, { s: busy.id, l: 1, t: twin })).getDeploysBySite.deploys[0].id).toBe(
      deploys[998]!.id,
    );
  });

  localTest('a tampered token is BAD_USER_INPUT: changed payload, changed signature, forged, truncated, garbage', async () => {
    const token: string = dataOf(await client.gql(a.apiKey, DEPLOYS, { s: busy.id, l: 1 })).getDeploysBySite.nextToken;
    const [payload, mac] = token.split('.') as [string, string];
    const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...decoded, p: newSortableId(Date.UTC(2030, 0, 1)) })).toString('base64url');
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
    for (const bad of [
      `${forged}.${mac}`,
      `${flip(payload, 4)}.${mac}`,
      `${payload}.${flip(mac, 7)}`,
      token.slice(0, -3),
      payload,
      'garbage',
      `${token}${token}`,
    ]) {
      const result = await client.gql(a.apiKey, DEPLOYS, { s: busy.id, t: bad });
      expect(onlyError(result).extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'nextToken' });
      expect(result.text).not.toContain(deploys[0]!.id);
    }
  });
});
