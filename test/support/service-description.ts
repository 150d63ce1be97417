/**
 * The service description's GraphQL tables (sections 2.1, 2.2 and 4.1),
 * transcribed field by field: the schema is checked against these both as
 * SDL (test/unit/schema.test.ts) and by introspection through each door.
 */
export const OBJECTS: Record<string, Record<string, string>> = {
  Site: {
    id: 'ID!',
    createdBy: 'ID!',
    createdAt: 'DateTime!',
    updatedAt: 'DateTime',
    teamId: 'ID!',
    team: 'Team!',
    name: 'String!',
    description: 'String',
    slug: 'String!',
    platform: 'SitePlatform',
    buildSettings: 'BuildSettings!',
    deploySettings: 'DeploySettings!',
    publishedDeploy: 'Deploy',
    latestDeploy: 'Deploy',
    altCanisterId: 'String',
  },
  Team: { id: 'ID!', name: 'String!' },
  BuildSettings: {
    buildCommand: 'String',
    baseDirectoryPath: 'String',
    publishDirectoryPath: 'String',
    dockerImage: 'String',
    environmentVariables: '[EnvironmentVariable!]!',
  },
  EnvironmentVariable: { name: 'String!', value: 'String' },
  DeploySettings: { autoPublishing: 'Boolean!', prDeployPreviews: 'Boolean!', altUseProxy: 'Boolean', source: 'SiteSource!' },
  Repository: { type: 'RepositoryType!', url: 'String!', branch: 'String!' },
  IpfsSource: { cid: 'String' },
  Deploy: {
    id: 'ID!',
    startedAt: 'DateTime',
    completedAt: 'DateTime',
    status: 'DeployStatus!',
    ipfsHash: 'String',
    previewImage: 'String',
    totalTime: 'Int',
    log: 'String',
    published: 'Boolean!',
    repository: 'DeployRepository!',
    autoPublish: 'Boolean!',
  },
  DeployRepository: { commit: 'String', branch: 'String', owner: 'String', name: 'String', message: 'String' },
  SiteConnection: { sites: '[Site!]!', nextToken: 'String' },
  DeployConnection: { deploys: '[Deploy!]!', nextToken: 'String' },
};

/** Fields Cairn adds to the described types (issue 22: previews, hooks, private repositories). */
export const ADDED_FIELDS: Record<string, Record<string, string>> = {
  Site: {
    webhookUrl: 'String!',
    webhookSecretSet: 'Boolean!',
    repositoryTokenSet: 'Boolean!',
    repositoryUsername: 'String',
    buildHooks: '[BuildHook!]!',
    notificationUrls: '[NotificationUrl!]!',
    // Issue 34: the site's IPNS name.
    ipnsName: 'String',
  },
  Deploy: { preview: 'Boolean!', pullRequest: 'PullRequest', phase: 'DeployPhase', url: 'String!' },
  // Issue 29: variables with scopes and secrecy; forks' pull requests.
  EnvironmentVariable: { secret: 'Boolean!', scope: 'VariableScope!' },
  DeploySettings: { forkPullRequests: 'ForkPullRequests!' },
};

/** A described type's fields with Cairn's additions. */
export const fieldsWithAdditions = (name: string, fields: Record<string, string>): Record<string, string> => ({
  ...fields,
  ...(ADDED_FIELDS[name] ?? {}),
});

export const UNIONS: Record<string, string[]> = { SiteSource: ['IpfsSource', 'Repository'] };

export const INPUTS: Record<string, Record<string, string>> = { PurgeCacheInput: { siteId: 'String!' } };

export const ENUMS: Record<string, string[]> = {
  RepositoryType: ['GIT_HOST'],
  SitePlatform: ['ipfs', 'alt'],
  DeployStatus: ['IN_PROGRESS', 'DEPLOYED', 'FAILED', 'CANCELLED'],
};

export const SCALARS = ['DateTime'];

/** Operation → `(args): result`, as section 4.1 gives them. */
export const QUERIES: Record<string, string> = {
  getSiteById: '(siteId: ID!): Site',
  getSiteBySlug: '(slug: String!): Site',
  getDeploysBySite: '(siteId: ID!, limit: Int, nextToken: String): DeployConnection',
  getSitesByTeam: '(teamId: ID!, limit: Int, nextToken: String): SiteConnection',
};

export const MUTATIONS: Record<string, string> = {
  triggerDeploy: '(siteId: ID!, commit: String): Deploy',
  retryDeploy: '(siteId: ID!, deployId: ID!): Deploy',
  purgeCache: '(input: PurgeCacheInput!): Boolean',
};

/** What Cairn adds beyond the description (issue 5), in the same style. */
export const ADDED_QUERIES: Record<string, string> = {
  getCurrentTeam: '(): Team!',
  getCurrentMember: '(): TeamMember!',
  getMembersByTeam: '(teamId: ID!): [TeamMember!]',
  getApiKeysByTeam: '(teamId: ID!): [ApiKey!]',
  getStorageKeyPairs: '(): [StorageKeyPair!]!',
  getDeployById: '(siteId: ID!, deployId: ID!): Deploy',
  getSessions: '(): [Session!]!',
  getInvitations: '(teamId: ID!): [Invitation!]',
};

export const ADDED_MUTATIONS: Record<string, string> = {
  createSite: '(input: CreateSiteInput!): Site',
  updateSite: '(siteId: ID!, input: UpdateSiteInput!): Site',
  deleteSite: '(siteId: ID!): Boolean',
  cancelDeploy: '(siteId: ID!, deployId: ID!): Deploy',
  publishDeploy: '(siteId: ID!, deployId: ID!): Deploy',
  createTeam: '(name: String!): NewTeam',
  updateTeam: '(teamId: ID!, name: String!): Team',
  addTeamMember: '(teamId: ID!, accountName: String!, role: TeamRole): TeamMember',
  updateTeamMember: '(teamId: ID!, accountId: ID!, role: TeamRole!): TeamMember',
  removeTeamMember: '(teamId: ID!, accountId: ID!): Boolean',
  createApiKey: '(teamId: ID!, name: String): NewApiKey',
  revokeApiKey: '(teamId: ID!, apiKeyId: ID!): ApiKey',
  createStorageKeyPair: '(): NewStorageKeyPair',
  revokeStorageKeyPair: '(accessKeyId: ID!): StorageKeyPair',
  createWebhookSecret: '(siteId: ID!): NewWebhookSecret',
  deleteWebhookSecret: '(siteId: ID!): Boolean',
  setRepositoryToken: '(siteId: ID!, token: String, username: String): Site',
  createBuildHook: '(siteId: ID!, name: String!, branch: String): NewBuildHook',
  deleteBuildHook: '(siteId: ID!, buildHookId: ID!): Boolean',
  addNotificationUrl: '(siteId: ID!, url: String!, events: [DeployEvent!]): NewNotificationUrl',
  removeNotificationUrl: '(siteId: ID!, notificationUrlId: ID!): Boolean',
  deployCid: '(siteId: ID!, cid: String!): Deploy',
  revokeSession: '(sessionId: ID!): Boolean',
  inviteTeamMember: '(teamId: ID!, email: String!, role: TeamRole): NewInvitation',
  revokeInvitation: '(teamId: ID!, invitationId: ID!): Invitation',
};
