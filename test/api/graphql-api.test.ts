/**
 * The GraphQL API through both doors (or a deployed stack's endpoint):
 * transport and authentication, sites (every field, every input rule),
 * deploys' fields, error codes, the request limits, and the schema by
 * introspection against the service description. Each door works in a team
 * of its own, made with createTeam; deploys in every state can only be
 * written through the stores, so the checks of their fields run locally.
 */
import {
  buildClientSchema,
  getIntrospectionQuery,
  isEnumType,
  isInputObjectType,
  isObjectType,
  isUnionType,
  type IntrospectionQuery,
} from 'graphql';
import { newSortableId } from '../../functions/core/ids.js';
import { deployLogKey } from '../../functions/core/ports/log-store.js';
import { MAX_LOG_BYTES } from '../../functions/core/logs/deploy-log.js';
import { answerGate } from '../../functions/graphql/answer.js';
import { LIMITS } from '../../functions/graphql/limits.js';
import { apiTarget, INTROSPECTION, localTest, REMOTE, type ApiTarget } from '../support/api-target.js';
import {
  dataOf,
  graphqlClient,
  ISO_MS_UTC,
  newTeam,
  onlyError,
  seedDeploys,
  SITE_FIELDS,
  targetGraphqlDoors,
  type TeamFixture,
} from '../support/graphql.js';
import { ENUMS, fieldsWithAdditions, INPUTS, MUTATIONS, OBJECTS, QUERIES, UNIONS } from '../support/service-description.js';
import { doorsFor } from '../support/test-set.js';

let target: ApiTarget;
const savedEnv = { ...process.env };

beforeAll(async () => {
  // This suite reads the schema by introspection through both doors, so its
  // Lambda function is deployed with introspection on (it is off by
  // default in AWS: graphql-playground.test.ts checks that).
  target = await apiTarget({ CAIRN_GRAPHQL_INTROSPECTION: 'true' });
});

afterAll(async () => {
  process.env = savedEnv;
  await target?.close();
});

/** A check that reads the schema: against a stack whose introspection is off (AWS's default), skipped. */
const introspectionTest = INTROSPECTION ? test : test.skip;

const CREATE = `mutation ($input: CreateSiteInput!) { createSite(input: $input) { ...SiteFields } } ${SITE_FIELDS}`;
const UPDATE = `mutation ($id: ID!, $input: UpdateSiteInput!) { updateSite(siteId: $id, input: $input) { ...SiteFields } } ${SITE_FIELDS}`;
const BY_ID = `query ($id: ID!) { getSiteById(siteId: $id) { ...SiteFields } } ${SITE_FIELDS}`;
const BY_SLUG = `query ($slug: String!) { getSiteBySlug(slug: $slug) { ...SiteFields } } ${SITE_FIELDS}`;
const REPO = { repository: { type: 'GIT_HOST', url: 'https://git.example.com/team/docs.git', branch: 'main' } };
const CID_V1 = 'bafybeihykld7uyxzogax6vgyvag42y7464eywpf55gxi5qpoisibh3c5wa';

describe.each(doorsFor(targetGraphqlDoors(() => target)))('GraphQL API through the $name', (door) => {
  let endpoint: string;
  let client: ReturnType<typeof graphqlClient>;
  let a: TeamFixture;
  const tag = REMOTE ? 'd' : door.name.startsWith('node') ? 'n' : 'l';
  let names = 0;
  const uniqueName = (base: string) => `${base}-${tag}-${process.pid}-${++names}`;
  const createSite = async (input: Record<string, unknown> = {}, key = a.apiKey) =>
    dataOf(await client.gql(key, CREATE, { input: { deploySettings: { source: REPO }, ...input } })).createSite;

  beforeAll(async () => {
    endpoint = target.endpoints.graphql;
    client = graphqlClient(door, endpoint);
    a = await newTeam(client, target.account, `api-${tag}`);
  });

  describe('transport and authentication', () => {
    const TEAM = '{ getCurrentTeam { id name } }';

    test('the raw key, the raw key with spaces, and Bearer (any case) all authenticate', async () => {
      for (const key of [a.apiKey, `  ${a.apiKey}  `, `Bearer ${a.apiKey}`, `bearer   ${a.apiKey} `]) {
        expect(dataOf(await client.gql(key, TEAM)).getCurrentTeam).toEqual({ id: a.team.id, name: a.team.name });
      }
    });

    test('no key, an unknown key and an empty key are UNAUTHENTICATED with HTTP 401 and no data', async () => {
      for (const key of [null, 'cairn_unknown_key_0000000000000000000000000000', '   ', 'Bearer ']) {
        const result = await client.gql(key, TEAM);
        expect(result.status).toBe(401);
        expect(onlyError(result).extensions.code).toBe('UNAUTHENTICATED');
        expect(result.data).toBeUndefined();
      }
    });

    test('GET ?query= runs queries (with variables), and refuses mutations with 405', async () => {
      const site = await createSite();
      const q = encodeURIComponent('query ($id: ID!) { getSiteById(siteId: $id) { id slug } }');
      const v = encodeURIComponent(JSON.stringify({ id: site.id }));
      const res = await client.send({ method: 'GET', headers: { authorization: a.apiKey } }, `${endpoint}?query=${q}&variables=${v}`);
      expect(res.status).toBe(200);
      expect(res.data.getSiteById).toEqual({ id: site.id, slug: site.slug });
      const mutation = await client.send(
        { method: 'GET', headers: { authorization: a.apiKey } },
        `${endpoint}?query=${encodeURIComponent('mutation { deleteSite(siteId: "x") }')}`,
      );
      expect(mutation.status).toBe(405);
    });

    test("a JSON body without a Content-Type (or as text/plain, or curl -d's form type) is read as JSON", async () => {
      for (const type of [undefined, 'text/plain', 'application/x-www-form-urlencoded']) {
        const res = await client.send({
          method: 'POST',
          headers: { authorization: a.apiKey, ...(type ? { 'content-type': type } : {}) },
          body: JSON.stringify({ query: TEAM }),
        });
        expect(res.status).toBe(200);
        expect(res.data.getCurrentTeam.id).toBe(a.team.id);
      }
    });

    test('a body that is not JSON is a 400 in GraphQL error shape', async () => {
      const res = await client.send({ method: 'POST', headers: { authorization: a.apiKey }, body: '{"query": ' });
      expect(res.status).toBe(400);
      expect(onlyError(res).extensions.code).toBe('BAD_REQUEST');
    });

    test('a body over 1 MiB is refused with 413 before it is parsed', async () => {
      const big = JSON.stringify({ query: TEAM, variables: { pad: 'x'.repeat(1024 * 1024) } });
      const res = await client.send({
        method: 'POST',
        headers: { authorization: a.apiKey, 'content-type': 'application/json' },
        body: big,
      });
      expect(res.status).toBe(413);
      expect(onlyError(res).extensions.code).toBe('BAD_REQUEST');
    });

    introspectionTest(
      'introspection needs no key (the playground shows the schema before one is typed in); anything else does',
      async () => {
        const open = await client.gql(null, '{ __schema { queryType { name } } __typename }');
        expect(dataOf(open)).toEqual({ __schema: { queryType: { name: 'Query' } }, __typename: 'Query' });
        const mixed = await client.gql(null, '{ __typename getCurrentTeam { id } }');
        expect(mixed.status).toBe(401);
        expect(onlyError(mixed).extensions.code).toBe('UNAUTHENTICATED');
      },
    );

    test('a syntax error is GRAPHQL_PARSE_FAILED and an unknown field GRAPHQL_VALIDATION_FAILED, both 400', async () => {
      const parse = await client.gql(a.apiKey, '{ getCurrentTeam { id ');
      expect(parse.status).toBe(400);
      expect(onlyError(parse).extensions.code).toBe('GRAPHQL_PARSE_FAILED');
      const validation = await client.gql(a.apiKey, '{ getCurrentTeam { id secret } }');
      expect(validation.status).toBe(400);
      expect(onlyError(validation).extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    });
  });

  describe('sites', () => {
    test('createSite returns every field of the new site, with the described defaults', async () => {
      const name = uniqueName('docs');
      const before = Date.now();
      const site = await createSite({
        name,
        description: 'The team docs',
        buildSettings: {
          buildCommand: 'npm ci && npm run build',
          baseDirectoryPath: 'site',
          publishDirectoryPath: 'dist',
          dockerImage: 'node:20-slim',
          environmentVariables: [{ name: 'NODE_ENV', value: 'production' }, { name: 'EMPTY' }],
        },
        deploySettings: { source: REPO, altUseProxy: true },
      });
      expect(site).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        createdBy: a.account.id,
        createdAt: expect.stringMatching(ISO_MS_UTC),
        updatedAt: null,
        teamId: a.team.id,
        team: { id: a.team.id, name: a.team.name },
        name,
        description: 'The team docs',
        slug: name,
        platform: 'ipfs',
        buildSettings: {
          buildCommand: 'npm ci && npm run build',
          baseDirectoryPath: 'site',
          publishDirectoryPath: 'dist',
          dockerImage: 'node:20-slim',
          environmentVariables: [
            { name: 'NODE_ENV', value: 'production' },
            { name: 'EMPTY', value: null },
          ],
        },
        deploySettings: {
          autoPublishing: true,
          prDeployPreviews: false,
          altUseProxy: true,
          source: { __typename: 'Repository', type: 'GIT_HOST', url: REPO.repository.url, branch: 'main' },
        },
        publishedDeploy: null,
        latestDeploy: null,
        altCanisterId: null,
      });
      expect(Date.parse(site.createdAt)).toBeGreaterThanOrEqual(before - 1000);
    });

    test('without a name, the slug is generated like hidden-waterfall-6189 and the name is the slug', async () => {
      const site = await createSite({
        platform: 'alt',
        deploySettings: { source: { ipfs: { cid: CID_V1 } }, autoPublishing: false, prDeployPreviews: true },
      });
      expect(site.slug).toMatch(/^[a-z]+-[a-z]+-\d{4}$/);
      expect(site.name).toBe(site.slug);
      expect(site.platform).toBe('alt');
      expect(site.description).toBeNull();
      expect(site.buildSettings).toEqual({
        buildCommand: null,
        baseDirectoryPath: null,
        publishDirectoryPath: null,
        dockerImage: null,
        environmentVariables: [],
      });
      expect(site.deploySettings).toEqual({
        autoPublishing: false,
        prDeployPreviews: true,
        altUseProxy: null,
        source: { __typename: 'IpfsSource', cid: CID_V1 },
      });
      const empty = await createSite({ deploySettings: { source: { ipfs: {} } } });
      expect(empty.deploySettings.source).toEqual({ __typename: 'IpfsSource', cid: null });
    });

    test("getSiteById and getSiteBySlug find the team's site; unknown ones are null", async () => {
      const site = await createSite({ name: uniqueName('lookup') });
      expect(dataOf(await client.gql(a.apiKey, BY_ID, { id: site.id })).getSiteById).toEqual(site);
      expect(dataOf(await client.gql(a.apiKey, BY_SLUG, { slug: site.slug })).getSiteBySlug).toEqual(site);
      expect(dataOf(await client.gql(a.apiKey, BY_ID, { id: '00000000-0000-4000-8000-000000000000' })).getSiteById).toBeNull();
      expect(dataOf(await client.gql(a.apiKey, BY_SLUG, { slug: 'no-such-site-here' })).getSiteBySlug).toBeNull();
    });

    test('updateSite changes what it is given, keeps the rest, and null clears optional fields', async () => {
      const site = await createSite({
        description: 'before',
        buildSettings: { buildCommand: 'make', publishDirectoryPath: 'public', environmentVariables: [{ name: 'A', value: '1' }] },
      });
      const updated = dataOf(
        await client.gql(a.apiKey, UPDATE, {
          id: site.id,
          input: {
            description: null,
            platform: 'alt',
            buildSettings: { buildCommand: null, environmentVariables: [{ name: 'B', value: '2' }] },
            deploySettings: { prDeployPreviews: true, source: { ipfs: { cid: CID_V1 } } },
          },
        }),
      ).updateSite;
      expect(updated).toEqual({
        ...site,
        updatedAt: expect.stringMatching(ISO_MS_UTC),
        description: null,
        platform: 'alt',
        buildSettings: { ...site.buildSettings, buildCommand: null, environmentVariables: [{ name: 'B', value: '2' }] },
        deploySettings: { ...site.deploySettings, prDeployPreviews: true, source: { __typename: 'IpfsSource', cid: CID_V1 } },
      });
      expect(dataOf(await client.gql(a.apiKey, BY_ID, { id: site.id })).getSiteById).toEqual(updated);
      const cleared = dataOf(
        await client.gql(a.apiKey, UPDATE, { id: site.id, input: { platform: null, buildSettings: { environmentVariables: null } } }),
      ).updateSite;
      expect(cleared.platform).toBeNull();
      expect(cleared.buildSettings.environmentVariables).toEqual([]);
      expect(cleared.buildSettings.publishDirectoryPath).toBe('public');
    });

    test('renaming moves the slug: the new slug finds the site at once and the old one is free', async () => {
      const site = await createSite({ name: uniqueName('before') });
      const newName = uniqueName('after');
      const renamed = dataOf(await client.gql(a.apiKey, UPDATE, { id: site.id, input: { name: newName } })).updateSite;
      expect(renamed).toMatchObject({ id: site.id, name: newName, slug: newName });
      expect(dataOf(await client.gql(a.apiKey, BY_SLUG, { slug: newName })).getSiteBySlug.id).toBe(site.id);
      expect(dataOf(await client.gql(a.apiKey, BY_SLUG, { slug: site.slug })).getSiteBySlug).toBeNull();
      const reuse = await createSite({ name: site.slug });
      expect(reuse.id).not.toBe(site.id);
    });

    test('a name that is taken, or is not a slug, is BAD_USER_INPUT on input.name and changes nothing', async () => {
      const first = await createSite({ name: uniqueName('taken') });
      const second = await createSite({ name: uniqueName('other') });
      const dup = onlyError(await client.gql(a.apiKey, CREATE, { input: { name: first.name, deploySettings: { source: REPO } } }));
      expect(dup.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.name' });
      const rename = await client.gql(a.apiKey, UPDATE, { id: second.id, input: { name: first.name, description: 'changed' } });
      expect(onlyError(rename).extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.name' });
      expect(dataOf(await client.gql(a.apiKey, BY_ID, { id: second.id })).getSiteById).toEqual(second);
      for (const name of ['Has Spaces', 'UPPER', '-leading', 'trailing-', 'a'.repeat(64), 'dots.in.name', '']) {
        const err = onlyError(await client.gql(a.apiKey, CREATE, { input: { name, deploySettings: { source: REPO } } }));
        expect(err.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.name' });
      }
    });

    test.each([
      [
        'an environment variable name that is not one',
        { buildSettings: { environmentVariables: [{ name: '1BAD', value: 'x' }] } },
        'input.buildSettings.environmentVariables[0].name',
      ],
      [
        'a duplicate environment variable',
        { buildSettings: { environmentVariables: [{ name: 'A' }, { name: 'A' }] } },
        'input.buildSettings.environmentVariables[1].name',
      ],
      [
        '101 environment variables',
        { buildSettings: { environmentVariables: Array.from({ length: 101 }, (_, i) => ({ name: `V${i}` })) } },
        'input.buildSettings.environmentVariables',
      ],
      ['a publish path that climbs out', { buildSettings: { publishDirectoryPath: '../etc' } }, 'input.buildSettings.publishDirectoryPath'],
      ['an absolute base path', { buildSettings: { baseDirectoryPath: '/root' } }, 'input.buildSettings.baseDirectoryPath'],
      ['a docker image with spaces', { buildSettings: { dockerImage: 'node slim' } }, 'input.buildSettings.dockerImage'],
      ['a description over 1000 characters', { description: 'x'.repeat(1001) }, 'input.description'],
      [
        'a repository URL that is not one',
        { deploySettings: { source: { repository: { type: 'GIT_HOST', url: 'not a url', branch: 'main' } } } },
        'input.deploySettings.source.repository.url',
      ],
      [
        'a branch with spaces',
        { deploySettings: { source: { repository: { type: 'GIT_HOST', url: 'https://x.example/o/r.git', branch: 'my branch' } } } },
        'input.deploySettings.source.repository.branch',
      ],
      ['a CID that is not one', { deploySettings: { source: { ipfs: { cid: 'not-a-cid' } } } }, 'input.deploySettings.source.ipfs.cid'],
      ['no source', { deploySettings: {} }, 'input.deploySettings.source'],
      ['autoPublishing null', { deploySettings: { source: REPO, autoPublishing: null } }, 'input.deploySettings.autoPublishing'],
    ])('%s is BAD_USER_INPUT naming the field', async (_, input, field) => {
      const result = await client.gql(a.apiKey, CREATE, { input: { deploySettings: { source: REPO }, ...input } });
      expect(onlyError(result).extensions).toMatchObject({ code: 'BAD_USER_INPUT', field });
      expect(result.data).toEqual({ createSite: null });
    });

    test('a source with both a repository and a CID, or neither, is refused (@oneOf)', async () => {
      for (const source of [{ ...REPO, ipfs: { cid: CID_V1 } }, {}]) {
        const result = await client.gql(a.apiKey, CREATE, { input: { deploySettings: { source } } });
        expect(result.status).toBe(400);
        expect(onlyError(result).extensions.code).toBe('BAD_USER_INPUT');
      }
    });

    test('a wrong enum value or type in variables is BAD_USER_INPUT (400)', async () => {
      const result = await client.gql(a.apiKey, CREATE, { input: { platform: 'netlify', deploySettings: { source: REPO } } });
      expect(result.status).toBe(400);
      expect(onlyError(result).extensions.code).toBe('BAD_USER_INPUT');
    });

    test('updateSite of an unknown site is NOT_FOUND', async () => {
      const result = await client.gql(a.apiKey, UPDATE, { id: '00000000-0000-4000-8000-000000000000', input: { description: 'x' } });
      expect(onlyError(result).extensions.code).toBe('NOT_FOUND');
      expect(result.data).toEqual({ updateSite: null });
    });

    test('deleteSite removes the site, frees its slug and deletes its deploys', async () => {
      const site = await createSite({ name: uniqueName('doomed') });
      await target.whenLocal((service) =>
        service.services.deploys.putMany(
          Array.from({ length: 30 }, (_, i) => ({
            id: newSortableId(Date.UTC(2024, 1, 1) + i),
            siteId: site.id,
            status: 'DEPLOYED' as const,
            createdAt: new Date().toISOString(),
            published: false,
            autoPublish: true,
            repository: {},
          })),
        ),
      );
      expect(dataOf(await client.gql(a.apiKey, 'mutation ($id: ID!) { deleteSite(siteId: $id) }', { id: site.id }))).toEqual({
        deleteSite: true,
      });
      expect(dataOf(await client.gql(a.apiKey, BY_ID, { id: site.id })).getSiteById).toBeNull();
      expect(dataOf(await client.gql(a.apiKey, BY_SLUG, { slug: site.slug })).getSiteBySlug).toBeNull();
      await target.whenLocal(async (service) => expect((await service.services.deploys.listBySite(site.id, 100)).items).toEqual([]));
      expect((await createSite({ name: site.slug })).slug).toBe(site.slug);
      const again = await client.gql(a.apiKey, 'mutation ($id: ID!) { deleteSite(siteId: $id) }', { id: site.id });
      expect(onlyError(again).extensions.code).toBe('NOT_FOUND');
    });
  });

  describe('deploys', () => {
    // Deploys in each state, with every field set, are written to the store:
    // through the API they come only from real builds.
    localTest("every field of Deploy, and the site's latestDeploy and publishedDeploy", async () => {
      const service = target.local!;
      const site = await createSite();
      const full = {
        id: newSortableId(Date.UTC(2024, 4, 1, 12)),
        siteId: site.id,
        status: 'DEPLOYED' as const,
        createdAt: '2024-05-01T12:00:00.000Z',
        startedAt: '2024-05-01T12:00:01.000Z',
        completedAt: '2024-05-01T12:01:02.345Z',
        ipfsHash: CID_V1,
        previewImage: 'https://gateway.example/ipfs/preview.png',
        totalTime: 61345,
        log: 'npm ci\nnpm run build\ndone',
        published: true,
        autoPublish: true,
        repository: { commit: 'abc123', branch: 'main', owner: 'team', name: 'docs', message: 'Fix typo' },
      };
      const bare = {
        id: newSortableId(Date.UTC(2024, 4, 2)),
        siteId: site.id,
        status: 'IN_PROGRESS' as const,
        createdAt: '2024-05-02T00:00:00.000Z',
        published: false,
        autoPublish: false,
        repository: {},
      };
      await service.services.deploys.putMany([full, bare]);
      await service.services.sites.update(site.id, a.team.id, (s) => ({ ...s, publishedDeployId: full.id, latestDeployId: bare.id }));
      const { siteId: _fullSite, createdAt: _fullCreated, ...fullFields } = full;
      const bareFields = {
        id: bare.id,
        startedAt: null,
        completedAt: null,
        status: 'IN_PROGRESS',
        ipfsHash: null,
        previewImage: null,
        totalTime: null,
        log: null,
        published: false,
        repository: { commit: null, branch: null, owner: null, name: null, message: null },
        autoPublish: false,
      };
      const got = dataOf(await client.gql(a.apiKey, BY_ID, { id: site.id })).getSiteById;
      expect(got.publishedDeploy).toEqual(fullFields);
      expect(got.latestDeploy).toEqual(bareFields);
      const list = dataOf(
        // A page of 10: each log counts as its largest size, and the default page of 20 logs is over the estimate's limit.
        await client.gql(
          a.apiKey,
          `query ($id: ID!) { getDeploysBySite(siteId: $id, limit: 10) { deploys { ...DeployFields } nextToken } } ${SITE_FIELDS.split('fragment SiteFields')[0]}`,
          { id: site.id },
        ),
      ).getDeploysBySite;
      expect(list).toEqual({ deploys: [bareFields, fullFields], nextToken: null });
    });

    (REMOTE ? test.skip : test).each(['IN_PROGRESS', 'DEPLOYED', 'FAILED', 'CANCELLED'])('status %s goes out as itself', async (status) => {
      const service = target.local!;
      const site = await createSite();
      await service.services.deploys.putMany([
        {
          id: newSortableId(),
          siteId: site.id,
          status: status as 'FAILED',
          createdAt: new Date().toISOString(),
          published: false,
          autoPublish: false,
          repository: {},
        },
      ]);
      const got = dataOf(
        await client.gql(a.apiKey, 'query ($id: ID!) { getDeploysBySite(siteId: $id) { deploys { status } } }', { id: site.id }),
      );
      expect(got.getDeploysBySite.deploys).toEqual([{ status }]);
    });

    localTest('a fault inside the service is INTERNAL_SERVER_ERROR, said without internals', async () => {
      const service = target.local!;
      const site = await createSite();
      await service.services.deploys.putMany([
        {
          id: newSortableId(),
          siteId: site.id,
          status: 'EXPLODED' as 'FAILED',
          createdAt: new Date().toISOString(),
          published: false,
          autoPublish: false,
          repository: {},
        },
      ]);
      const result = await client.gql(a.apiKey, 'query ($id: ID!) { getDeploysBySite(siteId: $id) { deploys { id status } } }', {
        id: site.id,
      });
      const error = onlyError(result);
      expect(error).toEqual({ message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } });
      expect(result.text).not.toMatch(/EXPLODED|stack|at [A-Za-z]+ \(/);
    });

    test('purgeCache answers true for an own site with nothing cached, NOT_FOUND otherwise; deploy mutations check the site first', async () => {
      const site = await createSite();
      expect(
        onlyError(await client.gql(a.apiKey, 'mutation ($id: ID!) { retryDeploy(siteId: $id, deployId: "d") { id } }', { id: site.id }))
          .extensions.code,
      ).toBe('NOT_FOUND');
      for (const [query, variables] of [['mutation ($id: String!) { purgeCache(input: { siteId: $id }) }', { id: site.id }]] as const) {
        expect((await client.gql(a.apiKey, query, variables)).data).toEqual({ purgeCache: true });
        expect(onlyError(await client.gql(a.apiKey, query, { id: '00000000-0000-4000-8000-000000000000' })).extensions.code).toBe(
          'NOT_FOUND',
        );
      }
    });
  });

  describe('limits', () => {
    introspectionTest('the standard introspection query passes every limit', async () => {
      const result = await client.gql(null, getIntrospectionQuery({ inputValueDeprecation: true, specifiedByUrl: true, oneOf: true }));
      expect(result.status).toBe(200);
      expect(result.errors).toBeUndefined();
    });

    introspectionTest('a query deeper than 16 levels is refused before it runs', async () => {
      const deep = `{ __type(name: "Site") { ${'ofType { '.repeat(16)}name${' }'.repeat(16)} } }`;
      const result = await client.gql(a.apiKey, deep);
      expect(result.status).toBe(400);
      const error = onlyError(result);
      expect(error.extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED', limit: { what: 'Query depth', max: 16 } });
    });

    introspectionTest('introspection that nests lists deeply is refused', async () => {
      const result = await client.gql(null, '{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }');
      expect(result.status).toBe(400);
      expect(onlyError(result).extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    });

    test('more than 20 aliases are refused', async () => {
      const aliased = `{ ${Array.from({ length: 21 }, (_, i) => `t${i}: __typename`).join(' ')} }`;
      const result = await client.gql(a.apiKey, aliased);
      expect(result.status).toBe(400);
      expect(onlyError(result).extensions).toMatchObject({
        code: 'GRAPHQL_VALIDATION_FAILED',
        limit: { what: 'Number of aliases', max: 20 },
      });
      const twenty = `{ ${Array.from({ length: 20 }, (_, i) => `t${i}: __typename`).join(' ')} }`;
      expect((await client.gql(a.apiKey, twenty)).status).toBe(200);
    });

    test('a query whose estimated cost is over 10000 is refused; one full page of 100 full sites (without logs) is not', async () => {
      const page = (alias: string, limit: string) =>
        `${alias}: getSitesByTeam(teamId: "${a.team.id}", limit: ${limit}) { sites { ...SiteFields } nextToken }`;
      const fields = SITE_FIELDS.replace(' log ', ' ');
      const one = await client.gql(a.apiKey, `query { ${page('a', '100')} } ${fields}`);
      expect(one.status).toBe(200);
      expect(one.errors).toBeUndefined();
      const two = await client.gql(a.apiKey, `query { ${page('a', '100')} ${page('b', '100')} } ${fields}`);
      expect(two.status).toBe(400);
      expect(onlyError(two).extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED', limit: { what: 'Query cost', max: 10000 } });
      // A variable limit counts as the largest page.
      const variable = await client.gql(a.apiKey, `query ($n: Int) { ${page('a', '$n')} ${page('b', '$n')} } ${fields}`, { n: 1 });
      expect(variable.status).toBe(400);
    });

    test("the issue's attack (20 aliases of 100 deploys' logs) and a page of 100 sites with their deploys' logs are refused for their answer size before they run", async () => {
      const attack = `{ ${Array.from({ length: 20 }, (_, i) => `d${i}: getDeploysBySite(siteId: "x", limit: 100) { deploys { log } }`).join(' ')} }`;
      const result = await client.gql(a.apiKey, attack);
      expect(result.status).toBe(400);
      expect(onlyError(result)).toMatchObject({
        message: expect.stringMatching(/^Estimated answer size 8000 MiB exceeds the limit of 64 MiB: a deploy's log counts as 4 MiB/),
        extensions: {
          code: 'GRAPHQL_VALIDATION_FAILED',
          limit: { what: 'Answer bytes', actual: 20 * 100 * 4 * 1024 * 1024, max: 64 * 1024 * 1024 },
        },
      });
      expect(result.data).toBeUndefined();
      const sites = await client.gql(
        a.apiKey,
        `query { getSitesByTeam(teamId: "${a.team.id}", limit: 100) { sites { ...SiteFields } } } ${SITE_FIELDS}`,
      );
      expect(sites.status).toBe(400);
      expect(onlyError(sites).extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED', limit: { what: 'Answer bytes' } });
    });

    // Logs are written to the log store directly: through the API they come only from real builds.
    const withLogs = async (logs: string[]) => {
      const service = target.local!;
      const site = await createSite();
      const deploys = await seedDeploys(service, site.id, logs.length);
      await Promise.all(deploys.map((d, i) => service.services.deployLogs.write(deployLogKey(site.id, d.id), logs[i]!)));
      // Newest first, as the listing answers.
      return { site, ids: deploys.map((d) => d.id).reverse(), logs: [...logs].reverse() };
    };
    // A literal page size: a variable one counts as 100 logs in the estimate.
    const page = (n: number) => `query ($s: ID!) { getDeploysBySite(siteId: $s, limit: ${n}) { deploys { id log } } }`;

    const oneLog = (site: { id: string }, id: string) =>
      client.gql(a.apiKey, 'query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { id log } }', { s: site.id, d: id });
    const largest = (line: string) => line.repeat(Math.floor(MAX_LOG_BYTES / Buffer.byteLength(line)));

    localTest('a log of the largest size, of text beyond ASCII with quotes and tabs, reads back exactly', async () => {
      const log = largest('npm ok "done" \\ é 😀\tbuilt in 3 s\n');
      const { site, ids } = await withLogs([log]);
      const result = await oneLog(site, ids[0]!);
      expect(result.status).toBe(200);
      expect(dataOf(result).getDeployById.log === log).toBe(true);
      expect(answerGate.inUse).toBe(0);
    });

    localTest(
      door.name.startsWith('node')
        ? 'a log of the largest size, dense with control characters, reads back exactly'
        : "a log of the largest size, dense with control characters, is over Lambda's 6 MB payload once escaped: RESPONSE_TOO_LARGE (400), not a bare 500",
      async () => {
        const log = largest('\u001b[32mok\u001b[0m\r\n');
        const { site, ids } = await withLogs([log]);
        const result = await oneLog(site, ids[0]!);
        if (door.name.startsWith('node')) {
          expect(result.status).toBe(200);
          expect(dataOf(result).getDeployById.log === log).toBe(true);
        } else {
          expect(result.status).toBe(400);
          expect(result.data).toBeUndefined();
          expect(onlyError(result)).toMatchObject({
            message: expect.stringContaining('ask for fewer deploy logs at a time'),
            extensions: { code: 'RESPONSE_TOO_LARGE', limit: { what: 'Answer bytes', max: 6 * 1024 * 1024 } },
          });
        }
        expect(answerGate.inUse).toBe(0);
      },
    );

    // The door's budget: 16 MiB here, one log at its largest in AWS (Lambda's 6 MB response payload; limits.ts).
    const budget = door.name.startsWith('node') ? LIMITS.answerBytes : LIMITS.lambdaAnswerBytes;

    localTest(
      'logs over the answer budget (16 MiB as read, 4 MiB in AWS) fail the query whole with RESPONSE_TOO_LARGE (400, no data); under it they pass',
      async () => {
        // 10 logs of 2 MiB: the estimate (10 x 4 MiB) passes, what is read does not.
        const logs = Array.from({ length: 10 }, (_, i) => `${i}`.repeat(2 * 1024 * 1024));
        const { site, ids, logs: newestFirst } = await withLogs(logs);
        const over = await client.gql(a.apiKey, page(10), { s: site.id });
        expect(over.status).toBe(400);
        expect(over.data).toBeUndefined();
        expect(onlyError(over)).toMatchObject({
          message: expect.stringContaining(`larger than the limit of ${budget / 1024 / 1024} MiB`),
          extensions: { code: 'RESPONSE_TOO_LARGE', limit: { what: 'Answer bytes', max: budget } },
        });
        expect(over.text.length).toBeLessThan(2000);
        const fit = Math.min(5, budget / (2 * 1024 * 1024) - 1);
        const under = dataOf(await client.gql(a.apiKey, page(fit), { s: site.id })).getDeploysBySite.deploys;
        expect(under.map((d: { id: string }) => d.id)).toEqual(ids.slice(0, fit));
        expect(under.map((d: { log: string }) => d.log === newestFirst[under.indexOf(d)])).toEqual(Array(fit).fill(true));
        expect(answerGate.inUse).toBe(0);
      },
    );

    localTest(
      'a mutation whose answer goes over the budget keeps its data (what it did, it did): the log that did not fit is null beside the error',
      async () => {
        // Mutations run one after another: the logs that fill the budget (four here, one in AWS) come back, the next is refused.
        const fits = budget / MAX_LOG_BYTES;
        const logs = Array.from({ length: fits + 1 }, (_, i) => `${i}`.repeat(MAX_LOG_BYTES));
        const { site, ids } = await withLogs(logs);
        const order = [...ids].reverse();
        const mutation = `mutation ($s: ID!) { ${order.map((d, i) => `p${i}: publishDeploy(siteId: $s, deployId: "${d}") { id log }`).join(' ')} }`;
        const result = await client.gql(a.apiKey, mutation, { s: site.id });
        expect(result.status).toBe(200);
        expect(onlyError(result)).toMatchObject({ path: [`p${fits}`, 'log'], extensions: { code: 'RESPONSE_TOO_LARGE' } });
        for (let i = 0; i < fits; i++) expect(result.data[`p${i}`].log === logs[i]).toBe(true);
        expect(result.data[`p${fits}`]).toEqual({ id: order[fits], log: null });
        const published = dataOf(
          await client.gql(a.apiKey, 'query ($s: ID!) { getSiteById(siteId: $s) { publishedDeploy { id } } }', { s: site.id }),
        );
        expect(published.getSiteById.publishedDeploy.id).toBe(order[fits]);
        expect(answerGate.inUse).toBe(0);
      },
    );

    localTest(
      'when the process holds all the large answers it may, a request with a log waits its turn; one without a log does not wait',
      async () => {
        const { site, ids } = await withLogs(['the log\n']);
        const ONE = 'query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { log } }';
        expect(answerGate.tryAcquire(answerGate.capacity)).toBe(true);
        try {
          const started = Date.now();
          const waiting = client.gql(a.apiKey, ONE, { s: site.id, d: ids[0] });
          const plain = await client.gql(a.apiKey, 'query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { id status } }', {
            s: site.id,
            d: ids[0],
          });
          expect(dataOf(plain).getDeployById).toEqual({ id: ids[0], status: 'DEPLOYED' });
          setTimeout(() => answerGate.release(answerGate.capacity), 300);
          const result = await waiting;
          expect(Date.now() - started).toBeGreaterThanOrEqual(290);
          expect(dataOf(result).getDeployById.log).toBe('the log\n');
        } finally {
          if (answerGate.inUse >= answerGate.capacity) answerGate.release(answerGate.capacity);
        }
        expect(answerGate.inUse).toBe(0);
      },
    );

    localTest(
      `one that gets no room within ${LIMITS.answerWaitMs / 1000} s is SERVICE_UNAVAILABLE (503, Retry-After) and reads nothing`,
      async () => {
        const { site, ids } = await withLogs(['the log\n']);
        expect(answerGate.tryAcquire(answerGate.capacity)).toBe(true);
        try {
          const result = await client.gql(a.apiKey, 'query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { log } }', {
            s: site.id,
            d: ids[0],
          });
          expect(result.status).toBe(503);
          expect(result.headers.get('retry-after')).toBe('1');
          expect(result.data).toBeUndefined();
          expect(onlyError(result).extensions.code).toBe('SERVICE_UNAVAILABLE');
        } finally {
          answerGate.release(answerGate.capacity);
        }
        expect(answerGate.inUse).toBe(0);
      },
      LIMITS.answerWaitMs + 30_000,
    );

    test('a document of more than 2500 tokens is refused unparsed', async () => {
      const result = await client.gql(a.apiKey, `{ ${'__typename '.repeat(2600)}}`);
      expect(result.status).toBe(400);
      expect(onlyError(result)).toMatchObject({ extensions: { code: 'GRAPHQL_PARSE_FAILED' }, message: expect.stringContaining('tokens') });
    });
  });

  introspectionTest("the schema, read by introspection, has the service description's types, fields, enums and operations", async () => {
    const result = await client.gql(a.apiKey, getIntrospectionQuery());
    const schema = buildClientSchema(dataOf<IntrospectionQuery>(result));
    for (const [name, fields] of Object.entries(OBJECTS)) {
      const type = schema.getType(name);
      expect(isObjectType(type)).toBe(true);
      if (isObjectType(type))
        expect(Object.fromEntries(Object.entries(type.getFields()).map(([n, f]) => [n, String(f.type)]))).toEqual(
          fieldsWithAdditions(name, fields),
        );
    }
    for (const [name, members] of Object.entries(UNIONS)) {
      const type = schema.getType(name);
      expect(isUnionType(type) && type.getTypes().map(String).sort()).toEqual(members);
    }
    for (const [name, fields] of Object.entries(INPUTS)) {
      const type = schema.getType(name);
      expect(isInputObjectType(type) && Object.fromEntries(Object.entries(type.getFields()).map(([n, f]) => [n, String(f.type)]))).toEqual(
        fields,
      );
    }
    for (const [name, values] of Object.entries(ENUMS)) {
      const type = schema.getType(name);
      expect(isEnumType(type) && type.getValues().map((v) => v.name)).toEqual(values);
    }
    const sig = (f: { args: readonly { name: string; type: unknown }[]; type: unknown }) =>
      `(${f.args.map((x) => `${x.name}: ${String(x.type)}`).join(', ')}): ${String(f.type)}`;
    const queries = schema.getQueryType()!.getFields();
    for (const [name, signature] of Object.entries(QUERIES)) expect(sig(queries[name]!)).toBe(signature);
    const mutations = schema.getMutationType()!.getFields();
    for (const [name, signature] of Object.entries(MUTATIONS)) expect(sig(mutations[name]!)).toBe(signature);
  });
});
