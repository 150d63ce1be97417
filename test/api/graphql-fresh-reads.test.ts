/**
 * The sites and finished deploys a door's process remembers between
 * requests (functions/core/data/recent-reads.ts) never hide a change made
 * through the same door: each test reads first, so the records are
 * remembered, then changes them with a mutation, then reads again at once
 * (by id, by slug, the team's page, the deploys' `published`). Each door is
 * its own process here as in AWS (the Lambda handler has services of its
 * own); what another process's write takes to show is in
 * test/components/recent-reads.test.ts. The service and the Lambda door
 * remember for a minute here (CAIRN_RECENT_READS_MS), so a busy machine's
 * slow request cannot let a record lapse and pass a test the write's
 * forgetting should have passed.
 */
import { apiTarget, type ApiTarget } from '../support/api-target.js';
import { dataOf, graphqlClient, newAccount, seedDeploys, targetGraphqlDoors, type AccountFixture } from '../support/graphql.js';
import { doorsFor } from '../support/test-set.js';

let target: ApiTarget;

beforeAll(async () => {
  // Remembered a minute here, not half a second: what a read sees at once is then the write's doing, never a lapse.
  target = await apiTarget({ CAIRN_RECENT_READS_MS: '60000' });
}, 120_000);
afterAll(async () => {
  await target?.close();
});

const SITE = `id name slug description publishedDeploy { id published } latestDeploy { id published }`;
const READ = `query ($id: ID!, $slug: String!, $team: ID!) {
  byId: getSiteById(siteId: $id) { ${SITE} }
  bySlug: getSiteBySlug(slug: $slug) { ${SITE} }
  page: getSitesByTeam(teamId: $team, limit: 20) { sites { ${SITE} } }
}`;
const CREATE = `mutation ($name: String) { createSite(input: { name: $name, description: "first", deploySettings: { source: { ipfs: {} } } }) { id slug } }`;

describe.each(doorsFor(targetGraphqlDoors(() => target)))('reads after a change through the $name', (door) => {
  let client: ReturnType<typeof graphqlClient>;
  let owner: AccountFixture;
  let site: { id: string; slug: string };
  const read = async (slug = site.slug) =>
    dataOf(await client.gql(owner.apiKey, READ, { id: site.id, slug, team: owner.team.id })) as {
      byId: Record<string, any> | null;
      bySlug: Record<string, any> | null;
      page: { sites: Array<Record<string, any>> };
    };

  beforeAll(async () => {
    client = graphqlClient(door, target.endpoints.graphql);
  });
  beforeEach(async () => {
    // A team of its own per test: the page holds only what the test made.
    owner = await newAccount(target.local!, 'fresh');
    site = dataOf(await client.gql(owner.apiKey, CREATE)).createSite;
  });

  test('updateSite: the new description and slug by id, by slug and in the page; the old slug names nothing', async () => {
    expect((await read()).byId?.description).toBe('first');
    const renamed = `${site.slug}-renamed`;
    dataOf(
      await client.gql(
        owner.apiKey,
        'mutation ($id: ID!, $name: String!) { updateSite(siteId: $id, input: { name: $name, description: "changed" }) { id } }',
        {
          id: site.id,
          name: renamed,
        },
      ),
    );
    const after = await read(renamed);
    expect([after.byId?.description, after.bySlug?.description, after.page.sites[0]?.description]).toEqual([
      'changed',
      'changed',
      'changed',
    ]);
    expect(after.bySlug?.slug).toBe(renamed);
    expect((await read(site.slug)).bySlug).toBeNull();
  });

  test('createSite and deleteSite: the page gains and loses the site at once', async () => {
    expect((await read()).page.sites.map((s) => s.id)).toEqual([site.id]);
    const second = dataOf(await client.gql(owner.apiKey, CREATE)).createSite as { id: string };
    expect((await read()).page.sites.map((s) => s.id)).toEqual([site.id, second.id]);
    dataOf(await client.gql(owner.apiKey, 'mutation ($id: ID!) { deleteSite(siteId: $id) }', { id: site.id }));
    const after = await read();
    expect(after.page.sites.map((s) => s.id)).toEqual([second.id]);
    expect([after.byId, after.bySlug]).toEqual([null, null]);
  });

  test("publishDeploy: the site's published deploy and each deploy's `published`, by id, by slug and in the page", async () => {
    const [older, newer] = await seedDeploys(target.local!, site.id, 2);
    const publish = (deployId: string) =>
      client.gql(owner.apiKey, 'mutation ($s: ID!, $d: ID!) { publishDeploy(siteId: $s, deployId: $d) { id published } }', {
        s: site.id,
        d: deployId,
      });
    expect(dataOf(await publish(newer!.id)).publishDeploy).toEqual({ id: newer!.id, published: true });
    const first = await read();
    expect(first.byId?.publishedDeploy).toEqual({ id: newer!.id, published: true });
    // Back to the older one: every read shows it, and the newer one no longer published.
    expect(dataOf(await publish(older!.id)).publishDeploy).toEqual({ id: older!.id, published: true });
    const after = await read();
    for (const shown of [after.byId, after.bySlug, after.page.sites[0]])
      expect(shown?.publishedDeploy).toEqual({ id: older!.id, published: true });
  });
});
