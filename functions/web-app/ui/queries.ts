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
  deploySettings: { autoPublishing: boolean; prDeployPreviews: boolean; forkPullRequests: ForkPullRequests; source: SiteSource };
  latestDeploy: DeploySummary | null;
  publishedDeploy: DeploySummary | null;
}

export interface Site extends SiteSummary {
  /** Null until the first publish made the site's key. */
  ipnsName: string | null;
  buildSettings: {
    buildCommand: string | null;
    baseDirectoryPath: string | null;
    publishDirectoryPath: string | null;
    environmentVariables: EnvironmentVariable[];
  };
}

export type VariableScope = 'ALL' | 'PRODUCTION' | 'PREVIEWS';
export type ForkPullRequests = 'NOT_BUILT' | 'BUILT_WITHOUT_SECRETS';

/** A site variable as the API gives it: a secret one never has its value (null). */
export interface EnvironmentVariable {
  name: string;
  value: string | null;
  secret: boolean;
  scope: VariableScope;
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
  deploySettings { autoPublishing prDeployPreviews forkPullRequests source { __typename ... on Repository { url branch } ... on IpfsSource { cid } } }
  latestDeploy { ${DEPLOY_SUMMARY} }
  publishedDeploy { ${DEPLOY_SUMMARY} }`;

export const CURRENT_TEAM = 'query CurrentTeam { getCurrentTeam { id name } }';

export const SITES = `query Sites($teamId: ID!, $nextToken: String) {
  getSitesByTeam(teamId: $teamId, limit: 50, nextToken: $nextToken) { sites { ${SITE_SUMMARY} } nextToken }
}`;

export const SITE = `query Site($siteId: ID!) {
  getSiteById(siteId: $siteId) {
    ${SITE_SUMMARY}
    ipnsName
    buildSettings { buildCommand baseDirectoryPath publishDirectoryPath environmentVariables { name value secret scope } }
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
  getCurrentMember { accountId }
  getMembersByTeam(teamId: $teamId) { accountId accountName role createdAt }
  getApiKeysByTeam(teamId: $teamId) { id name keyPrefix createdBy createdAt revokedAt }
}`;

export interface Session {
  id: string;
  createdAt: string;
  lastSeenAt: string;
  expiresAt: string;
  userAgent: string | null;
  address: string | null;
  current: boolean;
}

/** Settings: who the caller is, their sessions, their own API keys for the team (filtered by maker here) and their storage key pairs. */
export const SETTINGS = `query Settings($teamId: ID!) {
  getCurrentMember { accountId accountName role }
  getSessions { id createdAt lastSeenAt expiresAt userAgent address current }
  getApiKeysByTeam(teamId: $teamId) { id name keyPrefix createdBy createdAt revokedAt }
  getStorageKeyPairs { accessKeyId createdAt revokedAt }
}`;

export const REVOKE_SESSION = `mutation RevokeSession($sessionId: ID!) { revokeSession(sessionId: $sessionId) }`;

export const CREATE_API_KEY = `mutation CreateApiKey($teamId: ID!, $name: String) { createApiKey(teamId: $teamId, name: $name) { key apiKey { id } } }`;
export const REVOKE_API_KEY = `mutation RevokeApiKey($teamId: ID!, $apiKeyId: ID!) { revokeApiKey(teamId: $teamId, apiKeyId: $apiKeyId) { id revokedAt } }`;
export const CREATE_STORAGE_KEY = `mutation CreateStorageKey { createStorageKeyPair { secretAccessKey keyPair { accessKeyId } } }`;
export const REVOKE_STORAGE_KEY = `mutation RevokeStorageKey($accessKeyId: ID!) { revokeStorageKeyPair(accessKeyId: $accessKeyId) { accessKeyId revokedAt } }`;

export const CREATE_TEAM = `mutation CreateTeam($name: String!) { createTeam(name: $name) { team { id name } apiKey { key } } }`;
export const UPDATE_TEAM = `mutation UpdateTeam($teamId: ID!, $name: String!) { updateTeam(teamId: $teamId, name: $name) { id name } }`;
export const ADD_MEMBER = `mutation AddMember($teamId: ID!, $accountName: String!, $role: TeamRole) { addTeamMember(teamId: $teamId, accountName: $accountName, role: $role) { accountId accountName role } }`;
export const UPDATE_MEMBER = `mutation UpdateMember($teamId: ID!, $accountId: ID!, $role: TeamRole!) { updateTeamMember(teamId: $teamId, accountId: $accountId, role: $role) { accountId role } }`;
export const REMOVE_MEMBER = `mutation RemoveMember($teamId: ID!, $accountId: ID!) { removeTeamMember(teamId: $teamId, accountId: $accountId) }`;

export type DeployEvent = 'CREATED' | 'BUILDING' | 'FAILED' | 'SUCCEEDED' | 'PUBLISHED';

export interface BuildHook {
  id: string;
  name: string;
  /** null: the site's branch. */
  branch: string | null;
  createdAt: string;
}

export interface NotificationDelivery {
  id: string;
  deployId: string;
  event: DeployEvent;
  status: 'PENDING' | 'DELIVERED' | 'FAILED';
  attempt: number;
  at: string;
  statusCode: number | null;
  error: string | null;
}

export interface NotificationUrl {
  id: string;
  url: string;
  events: DeployEvent[];
  createdAt: string;
  lastDeliveries: NotificationDelivery[];
}

/** What the site's "Git & notifications" page shows: never a secret, only whether one is set. */
export interface SiteIntegrations {
  id: string;
  name: string;
  deploySettings: { autoPublishing: boolean; prDeployPreviews: boolean; forkPullRequests: ForkPullRequests; source: SiteSource };
  webhookUrl: string;
  webhookSecretSet: boolean;
  repositoryTokenSet: boolean;
  repositoryUsername: string | null;
  buildHooks: BuildHook[];
  notificationUrls: NotificationUrl[];
}

export const SITE_INTEGRATIONS = `query SiteIntegrations($siteId: ID!) {
  getSiteById(siteId: $siteId) {
    id name
    deploySettings { autoPublishing prDeployPreviews forkPullRequests source { __typename ... on Repository { url branch } ... on IpfsSource { cid } } }
    webhookUrl webhookSecretSet repositoryTokenSet repositoryUsername
    buildHooks { id name branch createdAt }
    notificationUrls { id url events createdAt lastDeliveries(limit: 5) { id deployId event status attempt at statusCode error } }
  }
}`;

export const CREATE_WEBHOOK_SECRET = `mutation CreateWebhookSecret($siteId: ID!) { createWebhookSecret(siteId: $siteId) { secret url } }`;
export const DELETE_WEBHOOK_SECRET = `mutation DeleteWebhookSecret($siteId: ID!) { deleteWebhookSecret(siteId: $siteId) }`;
export const SET_REPOSITORY_TOKEN = `mutation SetRepositoryToken($siteId: ID!, $token: String, $username: String) {
  setRepositoryToken(siteId: $siteId, token: $token, username: $username) { id repositoryTokenSet repositoryUsername }
}`;
export const CREATE_BUILD_HOOK = `mutation CreateBuildHook($siteId: ID!, $name: String!, $branch: String) { createBuildHook(siteId: $siteId, name: $name, branch: $branch) { url buildHook { id name } } }`;
export const DELETE_BUILD_HOOK = `mutation DeleteBuildHook($siteId: ID!, $buildHookId: ID!) { deleteBuildHook(siteId: $siteId, buildHookId: $buildHookId) }`;
export const ADD_NOTIFICATION_URL = `mutation AddNotificationUrl($siteId: ID!, $url: String!, $events: [DeployEvent!]) {
  addNotificationUrl(siteId: $siteId, url: $url, events: $events) { secret notificationUrl { id url } }
}`;
export const REMOVE_NOTIFICATION_URL = `mutation RemoveNotificationUrl($siteId: ID!, $notificationUrlId: ID!) { removeNotificationUrl(siteId: $siteId, notificationUrlId: $notificationUrlId) }`;

export type DomainStatus = 'PENDING_DNS' | 'VERIFYING' | 'ISSUING_CERTIFICATE' | 'ACTIVE' | 'FAILED';

export interface DnsRecord {
  type: string;
  name: string;
  value: string;
}

export interface Domain {
  domain: string;
  status: DomainStatus;
  reason: string | null;
  primary: boolean;
  dnsRecords: DnsRecord[];
  createdAt: string;
  verifiedAt: string | null;
  certificateExpiresAt: string | null;
}

const DOMAIN_FIELDS = 'domain status reason primary dnsRecords { type name value } createdAt verifiedAt certificateExpiresAt';

/** A site's domains page: the site's domains, and the caller's role (only owners change domains). */
export const SITE_DOMAINS = `query SiteDomains($siteId: ID!) {
  getCurrentMember { accountId role }
  getSiteById(siteId: $siteId) { id name slug domains { ${DOMAIN_FIELDS} } }
}`;
export const ADD_DOMAIN = `mutation AddDomain($siteId: ID!, $domain: String!) { addDomain(siteId: $siteId, domain: $domain) { ${DOMAIN_FIELDS} } }`;
export const VERIFY_DOMAIN = `mutation VerifyDomain($siteId: ID!, $domain: String!) { verifyDomain(siteId: $siteId, domain: $domain) { ${DOMAIN_FIELDS} } }`;
export const SET_PRIMARY_DOMAIN = `mutation SetPrimaryDomain($siteId: ID!, $domain: String!) { setPrimaryDomain(siteId: $siteId, domain: $domain) { ${DOMAIN_FIELDS} } }`;
export const REMOVE_DOMAIN = `mutation RemoveDomain($siteId: ID!, $domain: String!) { removeDomain(siteId: $siteId, domain: $domain) }`;
