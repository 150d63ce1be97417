/**
 * Teams, members, hosting API keys and storage key pairs through both
 * doors (or a deployed stack's endpoint), and every operation tried against
 * another team's things. The target's two accounts play three parts, each
 * in teams made for the run with createTeam: the owner is one account, the
 * member and the outsider are the other (an outsider is a team, not an
 * account: its key reaches that team's things only).
 */
import { ListBucketsCommand } from '@aws-sdk/client-s3';
import { apiTarget, REMOTE, type ApiTarget } from '../support/api-target.js';
import {
  dataOf,
  graphqlClient,
  ISO_MS_UTC,
  newTeam,
  onlyError,
  seedDeploys,
  targetGraphqlDoors,
  type TeamFixture,
} from '../support/graphql.js';

let target: ApiTarget;
const savedEnv = { ...process.env };

/** Teams one account may make: above what the suite's tests make (about 8 per door), so only the last test meets it. */
const TEAMS_PER_ACCOUNT = 60;

beforeAll(async () => {
  target = await apiTarget({ CAIRN_TEAMS_PER_ACCOUNT: String(TEAMS_PER_ACCOUNT) });
});

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
});

const TEAM = '{ getCurrentTeam { id name } }';
const CID_V1 = 'bafybeihykld7uyxzogax6vgyvag42y7464eywpf55gxi5qpoisibh3c5wa';
const MEMBERS = 'query ($t: ID!) { getMembersByTeam(teamId: $t) { accountId accountName role createdAt } }';
const KEYS = 'query ($t: ID!) { getApiKeysByTeam(teamId: $t) { id teamId name keyPrefix createdBy createdAt revokedAt } }';
const NEW_KEY =
  'mutation ($t: ID!, $name: String) { createApiKey(teamId: $t, name: $name) { key apiKey { id teamId name keyPrefix createdBy createdAt revokedAt } } }';
const REVOKE_KEY = 'mutation ($t: ID!, $k: ID!) { revokeApiKey(teamId: $t, apiKeyId: $k) { id revokedAt } }';
const ADD =
  'mutation ($t: ID!, $n: String!, $r: TeamRole) { addTeamMember(teamId: $t, accountName: $n, role: $r) { accountId accountName role createdAt } }';
const ROLE = 'mutation ($t: ID!, $a: ID!, $r: TeamRole!) { updateTeamMember(teamId: $t, accountId: $a, role: $r) { accountId role } }';
const REMOVE = 'mutation ($t: ID!, $a: ID!) { removeTeamMember(teamId: $t, accountId: $a) }';
const RENAME = 'mutation ($t: ID!, $n: String!) { updateTeam(teamId: $t, name: $n) { id name } }';
const CREATE_TEAM =
  'mutation ($n: String!) { createTeam(name: $n) { team { id name } apiKey { key apiKey { id teamId keyPrefix createdBy revokedAt } } } }';
const PAIRS = '{ getStorageKeyPairs { accessKeyId createdAt revokedAt } }';
const NEW_PAIR = 'mutation { createStorageKeyPair { secretAccessKey keyPair { accessKeyId createdAt revokedAt } } }';
const REVOKE_PAIR = 'mutation ($k: ID!) { revokeStorageKeyPair(accessKeyId: $k) { accessKeyId revokedAt } }';

describe.each(targetGraphqlDoors(() => target))('teams and keys through the $name', (door) => {
  let client: ReturnType<typeof graphqlClient>;
  let owner: TeamFixture;
  let member: TeamFixture;
  let outsider: TeamFixture;
  const tag = REMOTE ? 'd' : door.name.startsWith('node') ? 'n' : 'l';

  beforeAll(async () => {
    client = graphqlClient(door, target.endpoints.graphql);
    owner = await newTeam(client, target.account, `owner-${tag}`);
    member = await newTeam(client, target.other, `member-${tag}`);
    outsider = await newTeam(client, target.other, `outsider-${tag}`);
  });

  const createTeam = async (key: string, name: string) => dataOf(await client.gql(key, CREATE_TEAM, { n: name })).createTeam;
  const code = async (key: string, query: string, variables?: Record<string, unknown>) =>
    onlyError(await client.gql(key, query, variables)).extensions.code;

  test('getCurrentTeam is the team of the key in use', async () => {
    expect(dataOf(await client.gql(owner.apiKey, TEAM)).getCurrentTeam).toEqual({ id: owner.team.id, name: owner.team.name });
  });

  test('createTeam: the caller owns a new team, with a first key for it that is shown once and works', async () => {
    const created = await createTeam(owner.apiKey, 'Docs team');
    expect(created.team).toEqual({ id: expect.any(String), name: 'Docs team' });
    expect(created.apiKey.key).toMatch(/^cairn_[0-9A-Za-z]{40}$/);
    expect(created.apiKey.apiKey).toEqual({
      id: expect.any(String),
      teamId: created.team.id,
      keyPrefix: created.apiKey.key.slice(0, 10),
      createdBy: owner.account.id,
      revokedAt: null,
    });
    const key = created.apiKey.key;
    expect(dataOf(await client.gql(key, TEAM)).getCurrentTeam).toEqual(created.team);
    expect(dataOf(await client.gql(key, MEMBERS, { t: created.team.id })).getMembersByTeam).toEqual([
      { accountId: owner.account.id, accountName: owner.account.name, role: 'OWNER', createdAt: expect.stringMatching(ISO_MS_UTC) },
    ]);
    const keys = await client.gql(key, KEYS, { t: created.team.id });
    expect(dataOf(keys).getApiKeysByTeam).toEqual([
      { ...created.apiKey.apiKey, name: 'first key', createdAt: expect.stringMatching(ISO_MS_UTC) },
    ]);
    expect(keys.text).not.toContain(key);
  });

  test('updateTeam renames the team; a blank or over-long name is BAD_USER_INPUT', async () => {
    const { team, apiKey } = await createTeam(owner.apiKey, 'Before');
    expect(dataOf(await client.gql(apiKey.key, RENAME, { t: team.id, n: '  After  ' })).updateTeam).toEqual({ id: team.id, name: 'After' });
    expect(dataOf(await client.gql(apiKey.key, TEAM)).getCurrentTeam.name).toBe('After');
    for (const n of ['   ', 'x'.repeat(101)]) expect(await code(apiKey.key, RENAME, { t: team.id, n })).toBe('BAD_USER_INPUT');
    expect(await code(owner.apiKey, CREATE_TEAM, { n: '' })).toBe('BAD_USER_INPUT');
  });

  test('members: owners add them by account name, list them and change roles; a member mints itself a key for the team', async () => {
    const { team, apiKey } = await createTeam(owner.apiKey, 'Members');
    const ownerKey = apiKey.key;
    // An account that is not (yet) a member has no role to change.
    expect(await code(ownerKey, ROLE, { t: team.id, a: member.account.id, r: 'OWNER' })).toBe('NOT_FOUND');
    const added = dataOf(await client.gql(ownerKey, ADD, { t: team.id, n: member.account.name })).addTeamMember;
    expect(added).toEqual({
      accountId: member.account.id,
      accountName: member.account.name,
      role: 'MEMBER',
      createdAt: expect.stringMatching(ISO_MS_UTC),
    });
    expect(await code(ownerKey, ADD, { t: team.id, n: member.account.name })).toBe('BAD_USER_INPUT');
    expect(await code(ownerKey, ADD, { t: team.id, n: 'nobody-by-this-name' })).toBe('NOT_FOUND');
    const listed = dataOf(await client.gql(ownerKey, MEMBERS, { t: team.id })).getMembersByTeam;
    expect(listed.map((m: { accountId: string; role: string }) => [m.accountId, m.role]).sort()).toEqual(
      [
        [owner.account.id, 'OWNER'],
        [member.account.id, 'MEMBER'],
      ].sort(),
    );

    // The member has no key for the team yet: it mints one with a key of its own team.
    const minted = dataOf(await client.gql(member.apiKey, NEW_KEY, { t: team.id, name: 'ci' })).createApiKey;
    expect(minted.apiKey).toMatchObject({ teamId: team.id, name: 'ci', createdBy: member.account.id });
    const memberKey = minted.key;
    expect(dataOf(await client.gql(memberKey, TEAM)).getCurrentTeam.id).toBe(team.id);

    // A member works on sites but does not manage the team.
    const site = await client.gql(
      memberKey,
      'mutation { createSite(input: { deploySettings: { source: { ipfs: {} } } }) { id teamId createdBy } }',
    );
    expect(dataOf(site).createSite).toMatchObject({ teamId: team.id, createdBy: member.account.id });
    expect(await code(memberKey, RENAME, { t: team.id, n: 'Mine now' })).toBe('FORBIDDEN');
    expect(await code(memberKey, ADD, { t: team.id, n: outsider.account.name })).toBe('FORBIDDEN');
    expect(await code(memberKey, ROLE, { t: team.id, a: member.account.id, r: 'OWNER' })).toBe('FORBIDDEN');
    expect(await code(memberKey, REMOVE, { t: team.id, a: owner.account.id })).toBe('FORBIDDEN');
    expect(await code(memberKey, REVOKE_KEY, { t: team.id, k: apiKey.apiKey.id })).toBe('FORBIDDEN');
    expect(dataOf(await client.gql(ownerKey, TEAM)).getCurrentTeam.name).toBe('Members');

    // Each key says whom it acts for, and with which role.
    const ME = '{ getCurrentMember { accountId accountName role } }';
    expect(dataOf(await client.gql(memberKey, ME)).getCurrentMember).toEqual({
      accountId: member.account.id,
      accountName: member.account.name,
      role: 'MEMBER',
    });
    expect(dataOf(await client.gql(ownerKey, ME)).getCurrentMember).toEqual({
      accountId: owner.account.id,
      accountName: owner.account.name,
      role: 'OWNER',
    });

    // Promoted, the member manages the team.
    expect(dataOf(await client.gql(ownerKey, ROLE, { t: team.id, a: member.account.id, r: 'OWNER' })).updateTeamMember).toEqual({
      accountId: member.account.id,
      role: 'OWNER',
    });
    expect(dataOf(await client.gql(memberKey, ME)).getCurrentMember.role).toBe('OWNER');
    expect(dataOf(await client.gql(memberKey, RENAME, { t: team.id, n: 'Shared' })).updateTeam.name).toBe('Shared');
  });

  test('a team always keeps an owner', async () => {
    const { team, apiKey } = await createTeam(owner.apiKey, 'One owner');
    expect(await code(apiKey.key, ROLE, { t: team.id, a: owner.account.id, r: 'MEMBER' })).toBe('BAD_USER_INPUT');
    expect(await code(apiKey.key, REMOVE, { t: team.id, a: owner.account.id })).toBe('BAD_USER_INPUT');
    dataOf(await client.gql(apiKey.key, ADD, { t: team.id, n: member.account.name, r: 'OWNER' }));
    expect(dataOf(await client.gql(apiKey.key, ROLE, { t: team.id, a: owner.account.id, r: 'MEMBER' })).updateTeamMember.role).toBe(
      'MEMBER',
    );
    const memberKey = dataOf(await client.gql(member.apiKey, NEW_KEY, { t: team.id })).createApiKey.key;
    expect(await code(memberKey, REMOVE, { t: team.id, a: member.account.id })).toBe('BAD_USER_INPUT');
    const members = dataOf(await client.gql(memberKey, MEMBERS, { t: team.id })).getMembersByTeam;
    expect(members.filter((m: { role: string }) => m.role === 'OWNER')).toHaveLength(1);
  });

  test('removing a member, or a member leaving, revokes at once the keys they made for the team', async () => {
    const { team, apiKey } = await createTeam(owner.apiKey, 'Revocations');
    dataOf(await client.gql(apiKey.key, ADD, { t: team.id, n: member.account.name }));
    const first = dataOf(await client.gql(member.apiKey, NEW_KEY, { t: team.id })).createApiKey.key;
    const second = dataOf(await client.gql(first, NEW_KEY, { t: team.id })).createApiKey.key;
    expect(dataOf(await client.gql(apiKey.key, REMOVE, { t: team.id, a: member.account.id }))).toEqual({ removeTeamMember: true });
    for (const key of [first, second]) expect((await client.gql(key, TEAM)).status).toBe(401);
    expect(dataOf(await client.gql(member.apiKey, TEAM)).getCurrentTeam.id).toBe(member.team.id);
    expect(await code(member.apiKey, NEW_KEY, { t: team.id })).toBe('NOT_FOUND');
    const keys = dataOf(await client.gql(apiKey.key, KEYS, { t: team.id })).getApiKeysByTeam;
    expect(
      keys.filter((k: { createdBy: string }) => k.createdBy === member.account.id).map((k: { revokedAt: string }) => k.revokedAt),
    ).toEqual([expect.stringMatching(ISO_MS_UTC), expect.stringMatching(ISO_MS_UTC)]);

    dataOf(await client.gql(apiKey.key, ADD, { t: team.id, n: member.account.name }));
    const again = dataOf(await client.gql(member.apiKey, NEW_KEY, { t: team.id })).createApiKey.key;
    expect(dataOf(await client.gql(again, REMOVE, { t: team.id, a: member.account.id }))).toEqual({ removeTeamMember: true });
    expect((await client.gql(again, TEAM)).status).toBe(401);
    expect(await code(apiKey.key, REMOVE, { t: team.id, a: member.account.id })).toBe('NOT_FOUND');
  });

  test('API keys: created (the key once), listed without the key, revoked at once; members revoke their own', async () => {
    const { team, apiKey } = await createTeam(owner.apiKey, 'Keys');
    const made = dataOf(await client.gql(apiKey.key, NEW_KEY, { t: team.id, name: 'deploy bot' })).createApiKey;
    expect(made).toEqual({
      key: expect.stringMatching(/^cairn_/),
      apiKey: {
        id: expect.any(String),
        teamId: team.id,
        name: 'deploy bot',
        keyPrefix: made.key.slice(0, 10),
        createdBy: owner.account.id,
        createdAt: expect.stringMatching(ISO_MS_UTC),
        revokedAt: null,
      },
    });
    const listing = await client.gql(apiKey.key, KEYS, { t: team.id });
    expect(dataOf(listing).getApiKeysByTeam.map((k: { id: string }) => k.id)).toEqual([apiKey.apiKey.id, made.apiKey.id]);
    expect(listing.text).not.toContain(made.key);
    expect(listing.text).not.toContain(apiKey.key);

    expect(dataOf(await client.gql(made.key, TEAM)).getCurrentTeam.id).toBe(team.id);
    const revoked = dataOf(await client.gql(apiKey.key, REVOKE_KEY, { t: team.id, k: made.apiKey.id })).revokeApiKey;
    expect(revoked).toEqual({ id: made.apiKey.id, revokedAt: expect.stringMatching(ISO_MS_UTC) });
    const refused = await client.gql(made.key, TEAM);
    expect(refused.status).toBe(401);
    expect(onlyError(refused).extensions.code).toBe('UNAUTHENTICATED');
    // Revoking again changes nothing; an unknown key id is NOT_FOUND.
    expect(dataOf(await client.gql(apiKey.key, REVOKE_KEY, { t: team.id, k: made.apiKey.id })).revokeApiKey).toEqual(revoked);
    expect(await code(apiKey.key, REVOKE_KEY, { t: team.id, k: 'no-such-key' })).toBe('NOT_FOUND');
    expect(await code(apiKey.key, NEW_KEY, { t: team.id, name: 'x'.repeat(101) })).toBe('BAD_USER_INPUT');

    dataOf(await client.gql(apiKey.key, ADD, { t: team.id, n: member.account.name }));
    const memberKey = dataOf(await client.gql(member.apiKey, NEW_KEY, { t: team.id })).createApiKey;
    expect(dataOf(await client.gql(memberKey.key, REVOKE_KEY, { t: team.id, k: memberKey.apiKey.id })).revokeApiKey.id).toBe(
      memberKey.apiKey.id,
    );
    // A key may revoke itself: the next request is refused.
    expect((await client.gql(memberKey.key, TEAM)).status).toBe(401);
  });

  test('storage key pairs: the secret once, good for the S3 API until revoked; never listed', async () => {
    const s3 = (accessKeyId: string, secretAccessKey: string) => target.s3({ accessKeyId, secretAccessKey });
    // The account's pairs are shared with every run (and the other door's
    // test): the listing must be exactly what it was, plus the new pair.
    const accessKeyIds = (pairs: Array<{ accessKeyId: string }>) => pairs.map((p) => p.accessKeyId).sort();
    const before = accessKeyIds(dataOf(await client.gql(owner.apiKey, PAIRS)).getStorageKeyPairs);
    expect(before).toContain(target.account.accessKeyId);
    const made = dataOf(await client.gql(owner.apiKey, NEW_PAIR)).createStorageKeyPair;
    expect(made).toEqual({
      secretAccessKey: expect.stringMatching(/^[0-9A-Za-z]{40}$/),
      keyPair: { accessKeyId: expect.stringMatching(/^CAIRN[A-Z2-7]{15}$/), createdAt: expect.stringMatching(ISO_MS_UTC), revokedAt: null },
    });
    const buckets = await s3(made.keyPair.accessKeyId, made.secretAccessKey).send(new ListBucketsCommand({}));
    expect(buckets.Buckets?.map((b) => b.Name)).toContain(target.account.bucket);

    const listing = await client.gql(owner.apiKey, PAIRS);
    expect(accessKeyIds(dataOf(listing).getStorageKeyPairs)).toEqual([...before, made.keyPair.accessKeyId].sort());
    expect(listing.text).not.toContain(made.secretAccessKey);
    expect(listing.text).not.toContain(target.account.secretAccessKey);

    expect(dataOf(await client.gql(owner.apiKey, REVOKE_PAIR, { k: made.keyPair.accessKeyId })).revokeStorageKeyPair).toEqual({
      accessKeyId: made.keyPair.accessKeyId,
      revokedAt: expect.stringMatching(ISO_MS_UTC),
    });
    await expect(s3(made.keyPair.accessKeyId, made.secretAccessKey).send(new ListBucketsCommand({}))).rejects.toMatchObject({
      name: 'InvalidAccessKeyId',
    });
    expect(await code(owner.apiKey, REVOKE_PAIR, { k: 'CAIRNNOSUCHKEY000000' })).toBe('NOT_FOUND');
  });

  test("another team's things answer like things that do not exist (hosting actions on its site: FORBIDDEN), and stay unchanged", async () => {
    const site = dataOf(
      await client.gql(
        owner.apiKey,
        `mutation { createSite(input: { description: "private", deploySettings: { source: { ipfs: { cid: "${CID_V1}" } } } }) { id slug } }`,
      ),
    ).createSite;
    // A deploy for retryDeploy to name: written to the store locally; a
    // deployed stack gets a real one (its build may run or fail: only its
    // id matters here).
    const deployId: string = target.local
      ? (await seedDeploys(target.local, site.id, 1))[0]!.id
      : dataOf(await client.gql(owner.apiKey, 'mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: site.id })).triggerDeploy.id;
    const ownerKeys = dataOf(await client.gql(owner.apiKey, KEYS, { t: owner.team.id })).getApiKeysByTeam;
    const asOwnerSees = async () => ({
      site: dataOf(
        await client.gql(owner.apiKey, 'query ($s: ID!) { getSiteById(siteId: $s) { id name slug description updatedAt teamId } }', {
          s: site.id,
        }),
      ).getSiteById,
      team: dataOf(await client.gql(owner.apiKey, TEAM)).getCurrentTeam,
      members: dataOf(await client.gql(owner.apiKey, MEMBERS, { t: owner.team.id })).getMembersByTeam,
      keys: dataOf(await client.gql(owner.apiKey, KEYS, { t: owner.team.id })).getApiKeysByTeam,
      pairs: dataOf(await client.gql(owner.apiKey, PAIRS)).getStorageKeyPairs,
    });
    const asStoresHold = async () => {
      const { services } = target.local!;
      return {
        site: await services.sites.getById(site.id),
        team: await services.teams.get(owner.team.id),
        members: await services.teams.listMembers(owner.team.id),
        keys: await services.apiKeys.list(owner.team.id),
        pairs: await services.storageKeys.list(owner.account.id),
      };
    };
    const seen = await asOwnerSees();
    let held: unknown;
    await target.whenLocal(async () => {
      held = await asStoresHold();
    });
    const missing = {
      site: '00000000-0000-4000-8000-000000000000',
      slug: 'no-such-slug-at-all',
      team: '00000000-0000-4000-8000-0000000000aa',
      account: '00000000-0000-4000-8000-0000000000bb',
    };
    const real = { site: site.id, slug: site.slug, team: owner.team.id, account: owner.account.id };
    const operations: Array<[string, (t: typeof real) => Record<string, unknown>, 'null' | 'NOT_FOUND' | 'FORBIDDEN']> = [
      ['query ($s: ID!) { getSiteById(siteId: $s) { id } }', (t) => ({ s: t.site }), 'null'],
      ['query ($s: String!) { getSiteBySlug(slug: $s) { id } }', (t) => ({ s: t.slug }), 'null'],
      ['query ($s: ID!) { getDeploysBySite(siteId: $s) { deploys { id } nextToken } }', (t) => ({ s: t.site }), 'null'],
      ['query ($t: ID!) { getSitesByTeam(teamId: $t) { sites { id } nextToken } }', (t) => ({ t: t.team }), 'null'],
      [MEMBERS, (t) => ({ t: t.team }), 'null'],
      [KEYS, (t) => ({ t: t.team }), 'null'],
      ['mutation ($s: ID!) { updateSite(siteId: $s, input: { description: "mine" }) { id } }', (t) => ({ s: t.site }), 'NOT_FOUND'],
      ['mutation ($s: ID!) { deleteSite(siteId: $s) }', (t) => ({ s: t.site }), 'NOT_FOUND'],
      ['mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', (t) => ({ s: t.site }), 'FORBIDDEN'],
      [`mutation ($s: ID!) { retryDeploy(siteId: $s, deployId: "${deployId}") { id } }`, (t) => ({ s: t.site }), 'FORBIDDEN'],
      ['mutation ($s: String!) { purgeCache(input: { siteId: $s }) }', (t) => ({ s: t.site }), 'FORBIDDEN'],
      [RENAME, (t) => ({ t: t.team, n: 'taken over' }), 'NOT_FOUND'],
      [ADD, (t) => ({ t: t.team, n: outsider.account.name, r: 'OWNER' }), 'NOT_FOUND'],
      [ROLE, (t) => ({ t: t.team, a: t.account, r: 'MEMBER' }), 'NOT_FOUND'],
      [REMOVE, (t) => ({ t: t.team, a: t.account }), 'NOT_FOUND'],
      [NEW_KEY, (t) => ({ t: t.team }), 'NOT_FOUND'],
      [REVOKE_KEY, (t) => ({ t: t.team, k: ownerKeys[0].id }), 'NOT_FOUND'],
      [REVOKE_PAIR, () => ({ k: target.account.accessKeyId }), 'NOT_FOUND'],
    ];
    for (const [query, vars, expected] of operations) {
      const attempt = await client.gql(outsider.apiKey, query, vars(real));
      const control = await client.gql(outsider.apiKey, query, vars(missing));
      if (expected === 'null') {
        expect(attempt.errors).toBeUndefined();
        expect(Object.values(attempt.data)).toEqual([null]);
      } else if (expected === 'FORBIDDEN') {
        // The hosting actions on a site say "wrong key" (the deploy and sites issues ask for it); a missing site is still NOT_FOUND.
        expect(onlyError(attempt).extensions.code).toBe('FORBIDDEN');
        expect(onlyError(control).extensions.code).toBe('NOT_FOUND');
        expect(attempt.text).not.toContain('private');
        continue;
      } else {
        expect(onlyError(attempt).extensions.code).toBe('NOT_FOUND');
      }
      // Indistinguishable from a thing that does not exist: same status, same errors, same data.
      expect({ status: attempt.status, data: attempt.data, errors: attempt.errors?.map((e) => [e.message, e.extensions]) }).toEqual({
        status: control.status,
        data: control.data,
        errors: control.errors?.map((e) => [e.message, e.extensions]),
      });
      expect(attempt.text).not.toContain('private');
    }
    // What has no target acts on the caller's own things only.
    const pairs = await client.gql(outsider.apiKey, PAIRS);
    expect(pairs.text).not.toContain(target.account.accessKeyId);
    expect(dataOf(await client.gql(outsider.apiKey, TEAM)).getCurrentTeam.id).toBe(outsider.team.id);

    expect(await asOwnerSees()).toEqual(seen);
    expect(
      dataOf(await client.gql(owner.apiKey, 'query ($s: ID!) { getDeploysBySite(siteId: $s) { deploys { id } } }', { s: site.id }))
        .getDeploysBySite.deploys,
    ).toEqual([{ id: deployId }]);
    await target.whenLocal(async (service) => {
      expect(await asStoresHold()).toEqual(held);
      expect((await service.services.deploys.listBySite(site.id, 10)).items).toHaveLength(1);
    });
  });
});

describe('in one request', () => {
  test('a membership changed by a mutation is read afresh by the next one', async () => {
    const client = graphqlClient(targetGraphqlDoors(() => target)[0]!, target.endpoints.graphql);
    const owner = await newTeam(client, target.account, 'one-request');
    const other = await newTeam(client, target.other, 'one-request-other');
    const { team, apiKey } = dataOf(await client.gql(owner.apiKey, CREATE_TEAM, { n: 'Mutations in a row' })).createTeam;
    // Add an owner, step down, then try an owner's operation: refused, because the role was read again.
    const result = await client.gql(
      apiKey.key,
      `mutation ($t: ID!, $n: String!, $me: ID!) {
        add: addTeamMember(teamId: $t, accountName: $n, role: OWNER) { role }
        down: updateTeamMember(teamId: $t, accountId: $me, role: MEMBER) { role }
        rename: updateTeam(teamId: $t, name: "Renamed") { name }
      }`,
      { t: team.id, n: other.account.name, me: owner.account.id },
    );
    expect(result.data).toEqual({ add: { role: 'OWNER' }, down: { role: 'MEMBER' }, rename: null });
    expect(onlyError(result).extensions.code).toBe('FORBIDDEN');
  });
});

// Last: it uses up the owner account's teams. A deployed stack keeps its own limit.
(REMOTE ? describe.skip : describe)('teams one account makes', () => {
  test("createTeam past the account's limit is BAD_USER_INPUT naming it, and makes nothing", async () => {
    const client = graphqlClient(targetGraphqlDoors(() => target)[0]!, target.endpoints.graphql);
    const owner = await newTeam(client, target.account, 'limit');
    const memberships = async () => (await target.local!.services.teams.listByAccount(owner.account.id)).length;
    let refused: ReturnType<typeof onlyError> | undefined;
    for (let i = 0; i <= TEAMS_PER_ACCOUNT && !refused; i++) {
      const result = await client.gql(owner.apiKey, CREATE_TEAM, { n: `Limit ${i}` });
      if (result.errors) refused = onlyError(result);
    }
    expect(refused?.extensions.code).toBe('BAD_USER_INPUT');
    expect(refused?.message).toContain(`an account makes at most ${TEAMS_PER_ACCOUNT} teams`);
    // Nothing of a refused team is left (no team, membership or key), and the next is refused the same way.
    const before = await memberships();
    const again = await client.gql(owner.apiKey, CREATE_TEAM, { n: 'One more' });
    expect(onlyError(again).extensions.code).toBe('BAD_USER_INPUT');
    expect(await memberships()).toBe(before);
    // The account's own first team is not among the counted: it made exactly the limit with createTeam.
    expect(before).toBe(TEAMS_PER_ACCOUNT + 1);
  });
});
