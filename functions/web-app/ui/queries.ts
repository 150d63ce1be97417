/** The GraphQL operations the app sends, with the shapes of their answers (schema.graphql). */

export type DeployStatus = 'IN_PROGRESS' | 'DEPLOYED' | 'FAILED' | 'CANCELLED';
export type DeployPhase = 'QUEUED' | 'CLONING' | 'BUILDING' | 'UPLOADING' | 'PUBLISHING';

export interface Team {
  id: string;
  name: string;
}

export interface DeploySummary {
  id: string;
  status: DeployStatus;
  /** Where an IN_PROGRESS deploy is; null once it has ended. */
  phase: DeployPhase | null;
  startedAt: string | null;
  completedAt: string | null;
  totalTime: number | null;
  ipfsHash: string | null;
  previewImage: string | null;
  published: boolean;
  preview: boolean;
  repository: { commit: string | null; branch: string | null; owner: string | null; name: string | null; message: string | null };
}

export interface Deploy extends DeploySummary {
  log: string | null;
  autoPublish: boolean;
  pullRequest: { number: number; title: string | null; url: string | null } | null;
}

export interface SiteSource {
  __typename: 'Repository' | 'IpfsSource';
  url?: string;
  branch?: string;
  cid?: string | null;
}

export interface SiteSummary {
  id: string;
  name: string;
  slug: string;
  description: string | null;
  createdAt: string;
  deploySettings: { autoPublishing: boolean; source: SiteSource };
  latestDeploy: DeploySummary | null;
  publishedDeploy: DeploySummary | null;
}

export interface Site extends SiteSummary {
  buildSettings: {
    buildCommand: string | null;
    baseDirectoryPath: string | null;
    publishDirectoryPath: string | null;
    environmentVariables: Array<{ name: string; value: string | null }>;
  };
}

export interface Member {
  accountId: string;
  accountName: string;
  role: 'OWNER' | 'MEMBER';
  createdAt: string;
}

export interface ApiKey {
  id: string;
  name: string | null;
  keyPrefix: string | null;
  createdBy: string;
  createdAt: string;
  revokedAt: string | null;
}

export interface StorageKeyPair {
  accessKeyId: string;
  createdAt: string;
  revokedAt: string | null;
}

const DEPLOY_SUMMARY = `
  id status phase startedAt completedAt totalTime ipfsHash previewImage published preview
  repository { commit branch owner name message }`;

const SITE_SUMMARY = `
  id name slug description createdAt
  deploySettings { autoPublishing source { __typename ... on Repository { url branch } ... on IpfsSource { cid } } }
  latestDeploy { ${DEPLOY_SUMMARY} }
  publishedDeploy { ${DEPLOY_SUMMARY} }`;

export const CURRENT_TEAM = 'query CurrentTeam { getCurrentTeam { id name } }';

export const SITES = `query Sites($teamId: ID!, $nextToken: String) {
  getSitesByTeam(teamId: $teamId, limit: 50, nextToken: $nextToken) { sites { ${SITE_SUMMARY} } nextToken }
}`;

export const SITE = `query Site($siteId: ID!) {
  getSiteById(siteId: $siteId) {
    ${SITE_SUMMARY}
    buildSettings { buildCommand baseDirectoryPath publishDirectoryPath environmentVariables { name value } }
  }
}`;

export const DEPLOYS = `query Deploys($siteId: ID!, $limit: Int, $nextToken: String) {
  getDeploysBySite(siteId: $siteId, limit: $limit, nextToken: $nextToken) { deploys { ${DEPLOY_SUMMARY} } nextToken }
}`;

export const DEPLOY_SUMMARY_QUERY = `query DeploySummary($siteId: ID!, $deployId: ID!) { getDeployById(siteId: $siteId, deployId: $deployId) { ${DEPLOY_SUMMARY} } }`;

export const DEPLOY = `query Deploy($siteId: ID!, $deployId: ID!) {
  getDeployById(siteId: $siteId, deployId: $deployId) { ${DEPLOY_SUMMARY} log autoPublish pullRequest { number title url } }
}`;

export const CREATE_SITE = `mutation CreateSite($input: CreateSiteInput!) { createSite(input: $input) { id slug } }`;
export const UPDATE_SITE = `mutation UpdateSite($siteId: ID!, $input: UpdateSiteInput!) { updateSite(siteId: $siteId, input: $input) { id slug } }`;
export const DELETE_SITE = `mutation DeleteSite($siteId: ID!) { deleteSite(siteId: $siteId) }`;

export const TRIGGER_DEPLOY = `mutation Trigger($siteId: ID!, $commit: String) { triggerDeploy(siteId: $siteId, commit: $commit) { ${DEPLOY_SUMMARY} } }`;
export const RETRY_DEPLOY = `mutation Retry($siteId: ID!, $deployId: ID!) { retryDeploy(siteId: $siteId, deployId: $deployId) { ${DEPLOY_SUMMARY} } }`;
export const CANCEL_DEPLOY = `mutation Cancel($siteId: ID!, $deployId: ID!) { cancelDeploy(siteId: $siteId, deployId: $deployId) { ${DEPLOY_SUMMARY} } }`;
export const PUBLISH_DEPLOY = `mutation Publish($siteId: ID!, $deployId: ID!) { publishDeploy(siteId: $siteId, deployId: $deployId) { ${DEPLOY_SUMMARY} } }`;
export const PURGE_CACHE = `mutation Purge($siteId: String!) { purgeCache(input: { siteId: $siteId }) }`;

export const TEAM = `query Team($teamId: ID!) {
  getMembersByTeam(teamId: $teamId) { accountId accountName role createdAt }
  getApiKeysByTeam(teamId: $teamId) { id name keyPrefix createdBy createdAt revokedAt }
  getStorageKeyPairs { accessKeyId createdAt revokedAt }
}`;

export const CREATE_API_KEY = `mutation CreateApiKey($teamId: ID!, $name: String) { createApiKey(teamId: $teamId, name: $name) { key apiKey { id } } }`;
export const REVOKE_API_KEY = `mutation RevokeApiKey($teamId: ID!, $apiKeyId: ID!) { revokeApiKey(teamId: $teamId, apiKeyId: $apiKeyId) { id revokedAt } }`;
export const CREATE_STORAGE_KEY = `mutation CreateStorageKey { createStorageKeyPair { secretAccessKey keyPair { accessKeyId } } }`;
export const REVOKE_STORAGE_KEY = `mutation RevokeStorageKey($accessKeyId: ID!) { revokeStorageKeyPair(accessKeyId: $accessKeyId) { accessKeyId revokedAt } }`;
