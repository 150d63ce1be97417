/** schema.graphql holds the service description's types, enums and operations exactly. */
import { buildSchema, isEnumType, isObjectType, isInputObjectType, isUnionType, type GraphQLField, type GraphQLInputField } from 'graphql';
import { loadTypeDefs } from '../../functions/graphql/schema.js';

const schema = buildSchema(loadTypeDefs());

// Field → type, transcribed from the service description's tables (section 2.1).
const OBJECTS: Record<string, Record<string, string>> = {
  Site: {
    id: 'ID!', createdBy: 'ID!', createdAt: 'DateTime!', updatedAt: 'DateTime', teamId: 'ID!', team: 'Team!', name: 'String!',
    description: 'String', slug: 'String!', platform: 'SitePlatform', buildSettings: 'BuildSettings!', deploySettings: 'DeploySettings!',
    publishedDeploy: 'Deploy', latestDeploy: 'Deploy', altCanisterId: 'String',
  },
  Team: { id: 'ID!', name: 'String!' },
  BuildSettings: {
    buildCommand: 'String', baseDirectoryPath: 'String', publishDirectoryPath: 'String', dockerImage: 'String',
    environmentVariables: '[EnvironmentVariable!]!',
  },
  EnvironmentVariable: { name: 'String!', value: 'String' },
  DeploySettings: { autoPublishing: 'Boolean!', prDeployPreviews: 'Boolean!', altUseProxy: 'Boolean', source: 'SiteSource!' },
  Repository: { type: 'RepositoryType!', url: 'String!', branch: 'String!' },
  IpfsSource: { cid: 'String' },
  Deploy: {
    id: 'ID!', startedAt: 'DateTime', completedAt: 'DateTime', status: 'DeployStatus!', ipfsHash: 'String', previewImage: 'String',
    totalTime: 'Int', log: 'String', published: 'Boolean!', repository: 'DeployRepository!', autoPublish: 'Boolean!',
  },
  DeployRepository: { commit: 'String', branch: 'String', owner: 'String', name: 'String', message: 'String' },
  SiteConnection: { sites: '[Site!]!', nextToken: 'String' },
  DeployConnection: { deploys: '[Deploy!]!', nextToken: 'String' },
};

const fieldsOf = (fields: Record<string, GraphQLField<unknown, unknown> | GraphQLInputField>) =>
  Object.fromEntries(Object.entries(fields).map(([n, f]) => [n, String(f.type)]));

test.each(Object.entries(OBJECTS))('type %s has exactly the described fields', (name, fields) => {
  const type = schema.getType(name);
  expect(isObjectType(type)).toBe(true);
  if (isObjectType(type)) expect(fieldsOf(type.getFields())).toEqual(fields);
});

test('SiteSource is the union of Repository and IpfsSource', () => {
  const type = schema.getType('SiteSource');
  expect(isUnionType(type) && type.getTypes().map(String).sort()).toEqual(['IpfsSource', 'Repository']);
});

test('PurgeCacheInput takes siteId: String!', () => {
  const type = schema.getType('PurgeCacheInput');
  expect(isInputObjectType(type) && fieldsOf(type.getFields())).toEqual({ siteId: 'String!' });
});

test.each([
  ['RepositoryType', ['GIT_HOST']],
  ['SitePlatform', ['ipfs', 'alt']],
  ['DeployStatus', ['IN_PROGRESS', 'DEPLOYED', 'FAILED', 'CANCELLED']],
])('enum %s has the described values', (name, values) => {
  const type = schema.getType(name);
  expect(isEnumType(type) && type.getValues().map((v) => v.name)).toEqual(values);
});

const signature = (field: GraphQLField<unknown, unknown>) =>
  `(${field.args.map((a) => `${a.name}: ${String(a.type)}`).join(', ')}): ${String(field.type)}`;

test('queries and mutations have the described arguments and results', () => {
  expect(Object.fromEntries(Object.entries(schema.getQueryType()!.getFields()).map(([n, f]) => [n, signature(f)]))).toEqual({
    getSiteById: '(siteId: ID!): Site',
    getSiteBySlug: '(slug: String!): Site',
    getDeploysBySite: '(siteId: ID!, limit: Int, nextToken: String): DeployConnection',
    getSitesByTeam: '(teamId: ID!, limit: Int, nextToken: String): SiteConnection',
  });
  expect(Object.fromEntries(Object.entries(schema.getMutationType()!.getFields()).map(([n, f]) => [n, signature(f)]))).toEqual({
    triggerDeploy: '(siteId: ID!, commit: String): Deploy',
    retryDeploy: '(siteId: ID!, deployId: ID!): Deploy',
    purgeCache: '(input: PurgeCacheInput!): Boolean',
  });
});
