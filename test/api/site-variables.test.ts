/**
 * Site variables with scopes and secrecy (issue 29), through both GraphQL
 * doors: a secret's value is write-only (never returned, kept when a list
 * is sent again without it), sealed in the sites and deploys tables, given
 * to the builds its scope allows (never to a fork's pull request), and
 * masked as *** wherever a build prints it. Real builds in the bubblewrap
 * sandbox from a real git server; the tables are read raw through the
 * embedded database. The build checks are local only (the repositories are
 * served on loopback; the tables are read inside the service).
 */
import { randomBytes } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { exporter } from 'ipfs-unixfs-exporter';
import { apiTarget, localDescribe, REMOTE, type ApiTarget } from '../support/api-target.js';
import { dataOf, graphqlClient, newTeam, onlyError, targetGraphqlDoors, type TeamFixture } from '../support/graphql.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { triggerPreview } from '../../functions/core/hosting/deploys.js';
import { deployLogKey } from '../../functions/core/ports/log-store.js';
import { doorsFor } from '../support/test-set.js';

let target: ApiTarget;
let git: GitServer | undefined;

beforeAll(async () => {
  target = await apiTarget({ CAIRN_BUILD_TIMEOUT: '20' });
  if (!REMOTE) git = await startGitServer();
});
afterAll(async () => {
  await target?.close();
  await git?.close();
});

const VARS = 'environmentVariables { name value secret scope }';
const SITE = `id buildSettings { ${VARS} } deploySettings { prDeployPreviews forkPullRequests }`;
const CREATE = `mutation ($input: CreateSiteInput!) { createSite(input: $input) { ${SITE} } }`;
const UPDATE = `mutation ($id: ID!, $input: UpdateSiteInput!) { updateSite(siteId: $id, input: $input) { ${SITE} } }`;
const BY_ID = `query ($id: ID!) { getSiteById(siteId: $id) { ${SITE} } }`;
const REPO = { repository: { type: 'GIT_HOST', url: 'https://git.example.com/team/docs.git', branch: 'main' } };

/** A secret nobody could guess, 24 characters: found in a table or a log only if it leaked there. */
const newSecret = () => `s3cr3t-${randomBytes(13).toString('base64url').slice(0, 17)}`;

/** The site's item as the sites table holds it. */
async function rawSite(siteId: string): Promise<Record<string, unknown>> {
  const service = target.local!;
  const out = await service.services.db.doc.send(
    new GetCommand({ TableName: service.config.tables.sites, Key: { pk: `SITE#${siteId}`, sk: 'SITE' }, ConsistentRead: true }),
  );
  return out.Item!;
}

describe.each(doorsFor(targetGraphqlDoors(() => target)))('site variables through the $name', (door) => {
  let client: ReturnType<typeof graphqlClient>;
  let a: TeamFixture;
  const gql = async (query: string, variables: Record<string, unknown>) => client.gql(a.apiKey, query, variables);
  const create = async (environmentVariables: unknown[], deploySettings: Record<string, unknown> = {}) =>
    dataOf(await gql(CREATE, { input: { buildSettings: { environmentVariables }, deploySettings: { source: REPO, ...deploySettings } } }))
      .createSite;
  const setVariables = async (id: string, environmentVariables: unknown[]) =>
    gql(UPDATE, { id, input: { buildSettings: { environmentVariables } } });

  beforeAll(async () => {
    client = graphqlClient(door, target.endpoints.graphql);
    a = await newTeam(client, target.account, 'vars');
  });

  test('a secret variable reads back without its value, with its scope; plain ones as before, ALL by default', async () => {
    const secret = newSecret();
    const result = await gql(CREATE, {
      input: {
        buildSettings: {
          environmentVariables: [
            { name: 'PLAIN', value: 'shown' },
            { name: 'TOKEN', value: secret, secret: true, scope: 'PRODUCTION' },
            { name: 'PREVIEW_ONLY', value: 'p', scope: 'PREVIEWS' },
          ],
        },
        deploySettings: { source: REPO },
      },
    });
    const created = dataOf(result);
    expect(result.text).not.toContain(secret);
    const expected = [
      { name: 'PLAIN', value: 'shown', secret: false, scope: 'ALL' },
      { name: 'TOKEN', value: null, secret: true, scope: 'PRODUCTION' },
      { name: 'PREVIEW_ONLY', value: 'p', secret: false, scope: 'PREVIEWS' },
    ];
    expect(created.createSite.buildSettings.environmentVariables).toEqual(expected);
    const read = await gql(BY_ID, { id: created.createSite.id });
    expect(dataOf(read).getSiteById.buildSettings.environmentVariables).toEqual(expected);
    expect(read.text).not.toContain(secret);
    // The service description's query, unchanged: name and value.
    const described = await gql('query ($id: ID!) { getSiteById(siteId: $id) { buildSettings { environmentVariables { name value } } } }', {
      id: created.createSite.id,
    });
    expect(dataOf(described).getSiteById.buildSettings.environmentVariables).toEqual([
      { name: 'PLAIN', value: 'shown' },
      { name: 'TOKEN', value: null },
      { name: 'PREVIEW_ONLY', value: 'p' },
    ]);
    await target.whenLocal(async () => {
      const item = JSON.stringify(await rawSite(created.createSite.id));
      expect(item).not.toContain(secret);
      expect(item).toContain('"sealed":"v1.');
      expect(item).toContain('"value":"shown"');
    });
  });

  test('the list read back can be sent again as it is: a secret without a value keeps its sealed one, its secrecy and its scope', async () => {
    const secret = newSecret();
    const site = await create([
      { name: 'TOKEN', value: secret, secret: true, scope: 'PREVIEWS' },
      { name: 'A', value: '1' },
    ]);
    const before = await target.local?.services.sites.getById(site.id);
    const sealedBefore = before?.buildSettings.environmentVariables.find((v) => v.name === 'TOKEN')?.sealed;
    // What a client read (value null), sent back with one plain variable changed.
    const read = site.buildSettings.environmentVariables.map((v: Record<string, unknown>) => (v.name === 'A' ? { ...v, value: '2' } : v));
    const updated = dataOf(await setVariables(site.id, read)).updateSite;
    expect(updated.buildSettings.environmentVariables).toEqual([
      { name: 'TOKEN', value: null, secret: true, scope: 'PREVIEWS' },
      { name: 'A', value: '2', secret: false, scope: 'ALL' },
    ]);
    // A client that knows only { name, value } (value left out, or empty as a form sends it) keeps it too.
    for (const resend of [
      [{ name: 'TOKEN' }],
      [{ name: 'TOKEN', value: '' }],
      [{ name: 'TOKEN', value: null, secret: null, scope: null }],
    ]) {
      const kept = dataOf(await setVariables(site.id, resend)).updateSite;
      expect(kept.buildSettings.environmentVariables).toEqual([{ name: 'TOKEN', value: null, secret: true, scope: 'PREVIEWS' }]);
    }
    await target.whenLocal(async (service) => {
      const after = await service.services.sites.getById(site.id);
      const token = after!.buildSettings.environmentVariables.find((v) => v.name === 'TOKEN')!;
      expect(token.sealed).toBe(sealedBefore);
      expect(await service.services.sites.openVariables(site.id, { TOKEN: token.sealed! })).toEqual({ TOKEN: secret });
      expect(JSON.stringify(await rawSite(site.id))).not.toContain(secret);
    });
  });

  test('a secret is replaced by sending a new value, dropped by leaving it out of the list or by secret: false', async () => {
    const site = await create([{ name: 'TOKEN', value: newSecret(), secret: true }]);
    const replacement = newSecret();
    dataOf(await setVariables(site.id, [{ name: 'TOKEN', value: replacement }])); // still secret: left out means as it is
    await target.whenLocal(async (service) => {
      const token = (await service.services.sites.getById(site.id))!.buildSettings.environmentVariables[0]!;
      expect(token).toMatchObject({ name: 'TOKEN', secret: true });
      expect(await service.services.sites.openVariables(site.id, { TOKEN: token.sealed! })).toEqual({ TOKEN: replacement });
    });
    // Made plain without a value: the sealed value goes, and is never turned back into clear text.
    const plain = dataOf(await setVariables(site.id, [{ name: 'TOKEN', secret: false }])).updateSite;
    expect(plain.buildSettings.environmentVariables).toEqual([{ name: 'TOKEN', value: null, secret: false, scope: 'ALL' }]);
    await target.whenLocal(async () => expect(JSON.stringify(await rawSite(site.id))).not.toMatch(/sealed|s3cr3t-/));
    // Gone from the list, gone: sending it again without a value is a new secret with none.
    const again = await setVariables(site.id, [{ name: 'TOKEN', secret: true }]);
    expect(onlyError(again).extensions).toMatchObject({
      code: 'BAD_USER_INPUT',
      field: 'input.buildSettings.environmentVariables[0].value',
    });
  });

  test('a secret sealed for one name does not carry over to another: a renamed secret needs its value again', async () => {
    const site = await create([{ name: 'OLD_NAME', value: newSecret(), secret: true }]);
    const renamed = await setVariables(site.id, [{ name: 'NEW_NAME', secret: true }]);
    expect(onlyError(renamed).extensions).toMatchObject({
      code: 'BAD_USER_INPUT',
      field: 'input.buildSettings.environmentVariables[0].value',
    });
    expect(dataOf(await gql(BY_ID, { id: site.id })).getSiteById.buildSettings.environmentVariables).toEqual([
      { name: 'OLD_NAME', value: null, secret: true, scope: 'ALL' },
    ]);
  });

  test.each([
    ['a secret with no value', [{ name: 'S', secret: true }], 'input.buildSettings.environmentVariables[0].value'],
    ['a secret with an empty value', [{ name: 'S', value: '', secret: true }], 'input.buildSettings.environmentVariables[0].value'],
    [
      'a secret shorter than 4 characters',
      [{ name: 'S', value: 'abc', secret: true }],
      'input.buildSettings.environmentVariables[0].value',
    ],
    [
      'a secret with control characters',
      [{ name: 'S', value: 'abc\u0000def', secret: true }],
      'input.buildSettings.environmentVariables[0].value',
    ],
  ])('creating a site with %s is BAD_USER_INPUT naming the field, and makes no site', async (_, environmentVariables, field) => {
    const result = await gql(CREATE, {
      input: {
        name: `bad-vars-${process.pid}-${randomBytes(3).toString('hex')}`,
        buildSettings: { environmentVariables },
        deploySettings: { source: REPO },
      },
    });
    expect(onlyError(result).extensions).toMatchObject({ code: 'BAD_USER_INPUT', field });
    expect(result.data).toEqual({ createSite: null });
  });

  test('an unknown scope or fork setting is BAD_USER_INPUT (400); a null fork setting names its field; a refused update changes nothing', async () => {
    const unknownScope = await gql(CREATE, {
      input: { buildSettings: { environmentVariables: [{ name: 'A', value: '1', scope: 'STAGING' }] }, deploySettings: { source: REPO } },
    });
    expect(unknownScope.status).toBe(400);
    expect(onlyError(unknownScope).extensions.code).toBe('BAD_USER_INPUT');
    const unknownFork = await gql(CREATE, { input: { deploySettings: { source: REPO, forkPullRequests: 'BUILT' } } });
    expect(unknownFork.status).toBe(400);
    expect(onlyError(unknownFork).extensions.code).toBe('BAD_USER_INPUT');
    const site = await create([
      { name: 'TOKEN', value: newSecret(), secret: true },
      { name: 'A', value: '1' },
    ]);
    const nullFork = await gql(UPDATE, { id: site.id, input: { deploySettings: { forkPullRequests: null } } });
    expect(onlyError(nullFork).extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.deploySettings.forkPullRequests' });
    // One bad variable refuses the whole list: the site keeps the one it had, secret and all.
    const half = await setVariables(site.id, [
      { name: 'A', value: 'changed' },
      { name: 'NEW_SECRET', value: 'ab', secret: true },
    ]);
    expect(onlyError(half).extensions).toMatchObject({
      code: 'BAD_USER_INPUT',
      field: 'input.buildSettings.environmentVariables[1].value',
    });
    expect(dataOf(await gql(BY_ID, { id: site.id })).getSiteById).toEqual(site);
  });

  test('forkPullRequests is NOT_BUILT unless set, and keeps its value when other deploy settings change', async () => {
    const site = await create([]);
    expect(site.deploySettings).toEqual({ prDeployPreviews: false, forkPullRequests: 'NOT_BUILT' });
    const set = dataOf(
      await gql(UPDATE, { id: site.id, input: { deploySettings: { prDeployPreviews: true, forkPullRequests: 'BUILT_WITHOUT_SECRETS' } } }),
    ).updateSite;
    expect(set.deploySettings).toEqual({ prDeployPreviews: true, forkPullRequests: 'BUILT_WITHOUT_SECRETS' });
    const other = dataOf(await gql(UPDATE, { id: site.id, input: { deploySettings: { autoPublishing: false } } })).updateSite;
    expect(other.deploySettings.forkPullRequests).toBe('BUILT_WITHOUT_SECRETS');
    await target.whenLocal(async () =>
      expect((await rawSite(site.id)).deploySettings).toMatchObject({ forkPullRequests: 'BUILT_WITHOUT_SECRETS' }),
    );
  });
});

localDescribe('what builds get of the site variables', () => {
  let client: ReturnType<typeof graphqlClient>;
  let a: TeamFixture;
  let repos = 0;
  const gql = async (query: string, variables: Record<string, unknown> = {}) => client.gql(a.apiKey, query, variables);
  const DEPLOY = 'id status log ipfsHash preview pullRequest { number fork }';

  beforeAll(async () => {
    client = graphqlClient({ name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) }, target.endpoints.graphql);
    a = await newTeam(client, target.account, 'vars-build');
  });

  async function getDeploy(siteId: string, deployId: string) {
    return dataOf(
      await gql(`query ($s: ID!, $d: ID!) { getDeployById(siteId: $s, deployId: $d) { ${DEPLOY} } }`, { s: siteId, d: deployId }),
    ).getDeployById;
  }

  /** Polls the deploy until it ended and its log has its last line, failing after `ms`. */
  async function ended(siteId: string, deployId: string, ms = 40_000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const deploy = await getDeploy(siteId, deployId);
      if (deploy.status !== 'IN_PROGRESS' && /Published|not published|Failed:/.test(deploy.log ?? '')) return deploy;
      if (Date.now() > deadline) throw new Error(`deploy ${deployId} did not end in ${ms} ms: ${JSON.stringify(deploy).slice(0, 2000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async function fileOf(ipfsHash: string, path: string): Promise<string> {
    const node = await target.local!.services.ipfs();
    const entry = await exporter(`${ipfsHash}/${path}`, node.blockstore);
    if (entry.type !== 'file' && entry.type !== 'raw') throw new Error(`${path} is a ${entry.type}`);
    const parts: Uint8Array[] = [];
    for await (const chunk of entry.content()) parts.push(chunk as Uint8Array);
    return Buffer.concat(parts).toString('utf8');
  }

  /** The deploy's item as the deploys table holds it. */
  async function rawDeploy(siteId: string, deployId: string): Promise<Record<string, unknown>> {
    const service = target.local!;
    const out = await service.services.db.doc.send(
      new GetCommand({
        TableName: service.config.tables.deploys,
        Key: { pk: `SITE#${siteId}`, sk: `DEPLOY#${deployId}` },
        ConsistentRead: true,
      }),
    );
    return out.Item!;
  }

  const NAMES = ['PLAIN_ALL', 'PLAIN_PROD', 'PLAIN_PREV', 'SECRET_ALL', 'SECRET_PROD', 'SECRET_PREV'];
  /**
   * Writes what the build got of each variable to out/vars.txt (published),
   * and prints SECRET_ALL to the log twice: whole, and in two halves a
   * second apart (two pieces of output, with the log written between).
   */
  const BUILD = [
    'mkdir -p out',
    `printf '${NAMES.map((n) => `${n}=%s\\n`).join('')}' ${NAMES.map((n) => `"\${${n}-unset}"`).join(' ')} > out/vars.txt`,
    'echo "the token is $SECRET_ALL, the production one ${SECRET_PROD-unset}"',
    'printf "split: %s" "${SECRET_ALL%????????????}"',
    'sleep 1.5',
    'printf "%s (end)\\n" "${SECRET_ALL#????????????}"',
  ].join(' && ');

  async function variableSite(secrets: Record<string, string>, deploySettings: Record<string, unknown> = {}) {
    const repo = `acme/vars-${process.pid}-${++repos}`;
    const commit = await git!.commit(repo, { 'README.md': 'the site' }, 'first');
    const environmentVariables = [
      { name: 'PLAIN_ALL', value: 'plain-all' },
      { name: 'PLAIN_PROD', value: 'plain-prod', scope: 'PRODUCTION' },
      { name: 'PLAIN_PREV', value: 'plain-prev', scope: 'PREVIEWS' },
      { name: 'SECRET_ALL', value: secrets.SECRET_ALL, secret: true },
      { name: 'SECRET_PROD', value: secrets.SECRET_PROD, secret: true, scope: 'PRODUCTION' },
      { name: 'SECRET_PREV', value: secrets.SECRET_PREV, secret: true, scope: 'PREVIEWS' },
    ];
    const input = {
      buildSettings: { buildCommand: BUILD, publishDirectoryPath: 'out', environmentVariables },
      deploySettings: { source: { repository: { type: 'GIT_HOST', url: git!.repoUrl(repo), branch: 'main' } }, ...deploySettings },
    };
    const site = dataOf(await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', { input })).createSite;
    return { ...site, repo, commit };
  }

  const got = (text: string) =>
    Object.fromEntries(
      text
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
  const threeSecrets = () => ({ SECRET_ALL: newSecret(), SECRET_PROD: newSecret(), SECRET_PREV: newSecret() });

  function expectMasked(log: string, secrets: Record<string, string>) {
    for (const value of Object.values(secrets)) {
      expect(value).toHaveLength(24);
      expect(log).not.toContain(value);
      expect(log).not.toContain(value.slice(0, 12));
      expect(log).not.toContain(value.slice(12));
    }
  }

  test('a production deploy gets ALL and PRODUCTION variables; the build reads the secrets, the log shows ***, the deploys table holds them sealed', async () => {
    const secrets = threeSecrets();
    const site = await variableSite(secrets);
    const queued = dataOf(await gql(`mutation ($s: ID!) { triggerDeploy(siteId: $s) { ${DEPLOY} } }`, { s: site.id })).triggerDeploy;
    const raw = JSON.stringify(await rawDeploy(site.id, queued.id));
    const deploy = await ended(site.id, queued.id);
    expect(deploy.status).toBe('DEPLOYED');
    expect(got(await fileOf(deploy.ipfsHash, 'vars.txt'))).toEqual({
      PLAIN_ALL: 'plain-all',
      PLAIN_PROD: 'plain-prod',
      PLAIN_PREV: 'unset',
      SECRET_ALL: secrets.SECRET_ALL,
      SECRET_PROD: secrets.SECRET_PROD,
      SECRET_PREV: 'unset',
    });
    expect(deploy.log).toContain('the token is ***, the production one ***\n');
    expect(deploy.log).toContain('split: *** (end)\n');
    expect(deploy.log).toContain(
      'Build variables: PLAIN_ALL, PLAIN_PROD, SECRET_ALL (secret, masked in this log), SECRET_PROD (secret, masked in this log)',
    );
    expectMasked(deploy.log, secrets);
    // The record holds the plain variables and the secrets sealed, never in clear, before and after the build.
    for (const item of [raw, JSON.stringify(await rawDeploy(site.id, deploy.id))]) {
      for (const value of Object.values(secrets)) expect(item).not.toContain(value);
      expect(item).toContain('"PLAIN_ALL":"plain-all"');
      expect(JSON.parse(item).build.secretEnv).toEqual({
        SECRET_ALL: expect.stringMatching(/^v1\./),
        SECRET_PROD: expect.stringMatching(/^v1\./),
      });
    }
    expectMasked((await target.local!.services.deployLogs.read(deployLogKey(site.id, deploy.id)))!, secrets);
  });

  test('a preview of another branch (a build hook for it) gets ALL and PREVIEWS variables', async () => {
    const secrets = threeSecrets();
    const site = await variableSite(secrets);
    await git!.commit(site.repo, { 'README.md': 'a change' }, 'a change', 'feature');
    const { url } = dataOf(
      await gql('mutation ($s: ID!) { createBuildHook(siteId: $s, name: "feature", branch: "feature") { url } }', { s: site.id }),
    ).createBuildHook;
    const res = await fetch(url, { method: 'POST', body: '{}' });
    expect(res.status).toBeLessThan(300);
    const { deployId } = (await res.json()) as { deployId: string };
    const deploy = await ended(site.id, deployId);
    expect(deploy).toMatchObject({ status: 'DEPLOYED', preview: true });
    expect(got(await fileOf(deploy.ipfsHash, 'vars.txt'))).toEqual({
      PLAIN_ALL: 'plain-all',
      PLAIN_PROD: 'unset',
      PLAIN_PREV: 'plain-prev',
      SECRET_ALL: secrets.SECRET_ALL,
      SECRET_PROD: 'unset',
      SECRET_PREV: secrets.SECRET_PREV,
    });
    expect(deploy.log).toContain('the token is ***, the production one unset\n');
    expectMasked(deploy.log, secrets);
  });

  test("a pull request from a fork (BUILT_WITHOUT_SECRETS) gets the preview's plain variables and no secret one; retrying it is refused once forks are NOT_BUILT", async () => {
    const secrets = threeSecrets();
    const site = await variableSite(secrets, { prDeployPreviews: true, forkPullRequests: 'BUILT_WITHOUT_SECRETS' });
    const fork = `forker/vars-fork-${process.pid}-${repos}`;
    await git!.commit(fork, { 'README.md': 'the fork' }, 'main');
    const head = await git!.commit(fork, { 'README.md': "the fork's change" }, 'fork work', 'patch-1');
    const record = (await target.local!.services.sites.getById(site.id))!;
    const queued = await triggerPreview(target.local!.services, record, {
      url: git!.repoUrl(fork),
      branch: 'patch-1',
      commit: head,
      pullRequest: { number: 3, title: 'from a fork', fork: true },
    });
    expect(JSON.stringify(await rawDeploy(site.id, queued.id))).not.toContain('secretEnv');
    const deploy = await ended(site.id, queued.id);
    expect(deploy).toMatchObject({ status: 'DEPLOYED', preview: true, pullRequest: { number: 3, fork: true } });
    expect(got(await fileOf(deploy.ipfsHash, 'vars.txt'))).toEqual({
      PLAIN_ALL: 'plain-all',
      PLAIN_PROD: 'unset',
      PLAIN_PREV: 'plain-prev',
      SECRET_ALL: 'unset',
      SECRET_PROD: 'unset',
      SECRET_PREV: 'unset',
    });
    expect(deploy.log).toContain("Pull request #3 comes from a fork: built without the site's secret variables");

    // The same pull request from the site's own repository gets the preview's secrets.
    const own = await git!.commit(site.repo, { 'README.md': 'own branch' }, 'own work', 'topic');
    const inside = await triggerPreview(target.local!.services, record, {
      branch: 'topic',
      commit: own,
      pullRequest: { number: 4, title: 'from inside', fork: false },
    });
    const insideDone = await ended(site.id, inside.id);
    expect(got(await fileOf(insideDone.ipfsHash, 'vars.txt'))).toMatchObject({
      SECRET_ALL: secrets.SECRET_ALL,
      SECRET_PREV: secrets.SECRET_PREV,
      SECRET_PROD: 'unset',
    });

    // Back to NOT_BUILT: the fork's deploy is not built again by a retry either.
    dataOf(
      await gql('mutation ($s: ID!) { updateSite(siteId: $s, input: { deploySettings: { forkPullRequests: NOT_BUILT } }) { id } }', {
        s: site.id,
      }),
    );
    const retry = await gql('mutation ($s: ID!, $d: ID!) { retryDeploy(siteId: $s, deployId: $d) { id } }', { s: site.id, d: deploy.id });
    expect(onlyError(retry).extensions).toMatchObject({ code: 'BAD_USER_INPUT' });
    expect(onlyError(retry).message).toMatch(/fork.*NOT_BUILT/);
  });

  test('a failing build that prints a secret: the log and its last lines (what notifications carry) show ***', async () => {
    const secret = newSecret();
    const repo = `acme/vars-fail-${process.pid}-${++repos}`;
    await git!.commit(repo, { 'README.md': 'x' }, 'first');
    const input = {
      buildSettings: {
        buildCommand: 'echo "connecting with $API_KEY" >&2; exit 4',
        environmentVariables: [{ name: 'API_KEY', value: secret, secret: true }],
      },
      deploySettings: { source: { repository: { type: 'GIT_HOST', url: git!.repoUrl(repo), branch: 'main' } } },
    };
    const site = dataOf(await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id } }', { input })).createSite;
    const queued = dataOf(await gql(`mutation ($s: ID!) { triggerDeploy(siteId: $s) { ${DEPLOY} } }`, { s: site.id })).triggerDeploy;
    const deploy = await ended(site.id, queued.id);
    expect(deploy.status).toBe('FAILED');
    expect(deploy.log).toContain('connecting with ***\n');
    expect(deploy.log).not.toContain(secret);
  });
});
