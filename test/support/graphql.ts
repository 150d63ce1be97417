/**
 * GraphQL test fixtures: the doors of the API as fetch functions (a test
 * target's, or the local service's two), a small client, teams made through
 * the API with a target account's key, and accounts and deploys made
 * straight through the stores for the tests that stay local.
 */
import type { Account } from '../../functions/core/data/accounts.js';
import type { Team } from '../../functions/core/data/teams.js';
import type { Deploy } from '../../functions/core/data/deploys.js';
import { newAccessKeyId, newApiToken, newSecretAccessKey, newSortableId } from '../../functions/core/ids.js';
import { lambdaFetch, type LambdaFn } from './lambda-door.js';
import { REMOTE, type ApiTarget, type Account as TargetAccount } from './api-target.js';
import type { TestService } from './service.js';
import type { Services } from '../../functions/core/services.js';

export type Fetch = (
  url: string,
  init?: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array },
) => Promise<Response>;

export interface Door {
  name: string;
  fetch: Fetch;
}

/** Starts nothing: imports the Lambda handler for `service` (its env must already be in process.env). */
export async function importGraphqlLambda(): Promise<LambdaFn> {
  return ((await import('../../functions/graphql/handler.js')) as unknown as { handler: LambdaFn }).handler;
}

/** The node:http door and the Lambda door, for describe.each; the Lambda handler is resolved when first used. */
export function graphqlDoors(lambda: () => LambdaFn): Door[] {
  return [
    { name: 'node:http door', fetch: (url, init) => fetch(url, init as RequestInit) },
    { name: 'Lambda door', fetch: (url, init) => lambdaFetch(lambda())(url, init) },
  ];
}

/** The target's GraphQL doors, for describe.each (known before the target starts; each resolves it when used). */
export function targetGraphqlDoors(target: () => ApiTarget): Door[] {
  if (REMOTE) return [{ name: 'deployed endpoint', fetch: (url, init) => fetch(url, init as RequestInit) }];
  return graphqlDoors(() => target().graphqlLambda!);
}

export interface GraphqlError {
  message: string;
  path?: string[];
  extensions: { code: string; field?: string; [k: string]: unknown };
}

export interface GraphqlResult<T = any> {
  status: number;
  data?: T;
  errors?: GraphqlError[];
  text: string;
  headers: Headers;
}

export function graphqlClient(door: Door, endpoint: string) {
  async function send(init: Parameters<Fetch>[1], url = endpoint): Promise<GraphqlResult> {
    const res = await door.fetch(url, init);
    const text = await res.text();
    let parsed: { data?: unknown; errors?: GraphqlError[] } = {};
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = {};
    }
    return { status: res.status, data: parsed.data as any, errors: parsed.errors, text, headers: res.headers };
  }
  return {
    /** POST a query as JSON with `key` as the raw Authorization header (null: none). */
    gql(key: string | null, query: string, variables?: Record<string, unknown>): Promise<GraphqlResult> {
      return send({
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(key !== null ? { authorization: key } : {}) },
        body: JSON.stringify({ query, variables }),
      });
    },
    send,
  };
}

/** The one error of a result, failing loudly when there is not exactly one. */
export function onlyError(result: GraphqlResult): GraphqlError {
  if (result.errors?.length !== 1) throw new Error(`expected one error, got: ${result.text}`);
  return result.errors[0]!;
}

/** The data of a result, failing loudly on errors. */
export function dataOf<T = any>(result: GraphqlResult<T>): T {
  if (result.errors?.length || result.data === undefined) throw new Error(`expected data, got ${result.status}: ${result.text}`);
  return result.data;
}

export interface AccountFixture {
  account: Account;
  team: Team;
  apiKey: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** A team made through the API, owned by the account whose key made it, with its first API key. */
export interface TeamFixture {
  account: { id: string; name: string };
  team: { id: string; name: string };
  apiKey: string;
}

/** The account's hosting API key, failing loudly when a deployed target has none set. */
export function apiKeyOf(account: TargetAccount): string {
  if (!account.apiKey)
    throw new Error('CAIRN_TEST_API_KEY and CAIRN_TEST_OTHER_API_KEY must be set for the GraphQL suites against a deployed stack');
  return account.apiKey;
}

let teams = 0;
/**
 * A new team of the target account, made with createTeam (which owns it and
 * is its only member), so that a test sees no team's things but its own,
 * run after run against the same stack.
 */
export async function newTeam(client: ReturnType<typeof graphqlClient>, account: TargetAccount, prefix = 'team'): Promise<TeamFixture> {
  const name = `${prefix}-${process.pid}-${Date.now().toString(36)}-${++teams}`;
  const created = dataOf(
    await client.gql(apiKeyOf(account), 'mutation ($n: String!) { createTeam(name: $n) { team { id name } apiKey { key } } }', { n: name }),
  ).createTeam;
  const members = dataOf(
    await client.gql(created.apiKey.key, 'query ($t: ID!) { getMembersByTeam(teamId: $t) { accountId accountName } }', {
      t: created.team.id,
    }),
  ).getMembersByTeam;
  if (members.length !== 1) throw new Error(`a new team should have its maker as its one member, got ${JSON.stringify(members)}`);
  return { account: { id: members[0].accountId, name: members[0].accountName }, team: created.team, apiKey: created.apiKey.key };
}

let accounts = 0;
/** A new account with its own team, API key and storage key pair. */
export async function newAccount(service: TestService, prefix = 'acct'): Promise<AccountFixture> {
  return accountNamed(service, `${prefix}-${process.pid}-${++accounts}`.toLowerCase());
}

/** A new account named `name` (a page shows it, say), with its own team, API key and storage key pair. */
export async function accountNamed(service: TestService, name: string): Promise<AccountFixture> {
  const credentials = { accessKeyId: newAccessKeyId(), secretAccessKey: newSecretAccessKey(), apiToken: newApiToken() };
  const { account, team } = await service.services.accounts.createAccount({ name, ...credentials });
  return {
    account,
    team,
    apiKey: credentials.apiToken,
    accessKeyId: credentials.accessKeyId,
    secretAccessKey: credentials.secretAccessKey,
  };
}

/** `count` finished deploys of a site, one second apart, oldest first, written in batches. */
export async function seedDeploys(service: TestService, siteId: string, count: number, start = Date.UTC(2024, 0, 1)): Promise<Deploy[]> {
  const deploys: Deploy[] = [];
  for (let i = 0; i < count; i++) {
    const at = start + i * 1000;
    deploys.push({
      id: newSortableId(at),
      siteId,
      status: 'DEPLOYED',
      createdAt: new Date(at).toISOString(),
      startedAt: new Date(at).toISOString(),
      completedAt: new Date(at + 500).toISOString(),
      totalTime: 500,
      published: false,
      autoPublish: true,
      repository: { commit: `c${i}`, branch: 'main' },
    });
  }
  await service.services.deploys.putMany(deploys);
  return deploys;
}

/**
 * A deploy of `cid` that ended (`status`, DEPLOYED unless said) and is not
 * published, written straight into the deploys table, as a pipeline would
 * leave it: its id.
 */
export async function finishedDeploy(
  services: Pick<Services, 'deploys'>,
  siteId: string,
  cid: string,
  status: Deploy['status'] = 'DEPLOYED',
): Promise<string> {
  const id = newSortableId();
  const now = new Date().toISOString();
  await services.deploys.putMany([
    {
      id,
      siteId,
      status,
      ipfsHash: cid,
      createdAt: now,
      startedAt: now,
      completedAt: now,
      totalTime: 1,
      published: false,
      autoPublish: false,
      repository: { commit: null, branch: null },
    },
  ]);
  return id;
}

export const SITE_FIELDS = `
fragment DeployFields on Deploy {
  id startedAt completedAt status ipfsHash previewImage totalTime log published
  repository { commit branch owner name message }
  autoPublish
}
fragment SiteFields on Site {
  id createdBy createdAt updatedAt teamId team { id name } name description slug platform
  buildSettings { buildCommand baseDirectoryPath publishDirectoryPath dockerImage environmentVariables { name value } }
  deploySettings {
    autoPublishing prDeployPreviews altUseProxy
    source { __typename ... on Repository { type url branch } ... on IpfsSource { cid } }
  }
  publishedDeploy { ...DeployFields }
  latestDeploy { ...DeployFields }
  altCanisterId
}`;

export const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
