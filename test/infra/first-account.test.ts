/**
 * The first-account construct (lib/first-account.ts) in a small stack of
 * its own beside the data it needs (lib/data.ts): the secret (the stack's
 * KMS key, the fixed placeholder, retained), the handler (bundled as the
 * other functions are, and run from its bundle), exactly its grants, the
 * provider and the custom resource, the output, and cdk-nag's AwsSolutions
 * checks with no finding left unacknowledged.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { App, Stack, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { CairnData } from '../../lib/data.js';
import { FIRST_ACCOUNT_SECRET_OUTPUT, FirstAccount, SECRETS_KEY_OUTPUT } from '../../lib/first-account.js';
import { PROJECT_ROOT } from '../../lib/functions.js';
import { PENDING_VALUE } from '../../functions/first-account/secret-value.js';

type Json = any;

const cdkContext = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'cdk.json'), 'utf8')).context;
const apps: App[] = [];
let stack: Stack;
let data: CairnData;
let firstAccount: FirstAccount;
let resources: Record<string, Json>;
let outputs: Record<string, Json>;
let assemblyDir: string;

beforeAll(() => {
  const app = new App({ context: cdkContext });
  apps.push(app);
  stack = new Stack(app, 'FirstAccountTest');
  data = new CairnData(stack, 'Data');
  firstAccount = new FirstAccount(stack, 'FirstAccount', {
    data,
    endpoints: {
      storageEndpoint: 'https://s3.example.com',
      graphqlUrl: 'https://api.example.com/graphql',
      gatewayUrl: 'https://ipfs.example.com',
    },
  });
  const json = Template.fromStack(stack).toJSON();
  resources = json.Resources;
  outputs = json.Outputs;
  assemblyDir = app.synth().directory;
}, 120_000);

afterAll(() => {
  for (const app of apps) fs.rmSync(app.outdir, { recursive: true, force: true });
});

function id(construct: IConstruct): string {
  return stack.resolve(stack.getLogicalId(construct.node.defaultChild as CfnElement));
}

const ref = (construct: IConstruct) => ({ Ref: id(construct) });
const arn = (construct: IConstruct) => ({ 'Fn::GetAtt': [id(construct), 'Arn'] });

function statementsOf(role: IConstruct): Json[] {
  const policies = Object.values(resources).filter(
    (r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((x: Json) => x.Ref === id(role)),
  );
  return policies.flatMap((p) => p.Properties.PolicyDocument.Statement);
}

test('the secret: encrypted with the stack key, created with the fixed placeholder, retained', () => {
  const secret = resources[id(firstAccount.secret)];
  expect(secret.Type).toBe('AWS::SecretsManager::Secret');
  expect(secret.Properties.KmsKeyId).toEqual(arn(data.secretsKey));
  // CloudFormation writes the value again only when this changes: it must stay what the handler recognises.
  expect(secret.Properties.SecretString).toBe(PENDING_VALUE);
  expect(PENDING_VALUE).toBe('{"cairn":"first-account","status":"pending"}');
  expect(secret.Properties.GenerateSecretString).toBeUndefined();
  expect(secret.DeletionPolicy).toBe('Retain');
  expect(secret.UpdateReplacePolicy).toBe('Retain');
});

test('the handler: bundled like the other functions, on arm64 Node 24, told only the accounts table and the key', () => {
  const fn = resources[id(firstAccount.function)];
  expect(fn.Properties).toMatchObject({
    Runtime: 'nodejs24.x',
    Architectures: ['arm64'],
    Handler: 'index.handler',
    Timeout: 60,
    MemorySize: 256,
  });
  expect(fn.Properties.Environment.Variables).toEqual({
    CAIRN_ACCOUNTS_TABLE: ref(data.tables.accounts),
    CAIRN_KMS_KEY_ID: ref(data.secretsKey),
    CAIRN_LOG_LEVEL: 'info',
  });
  const logGroup = resources[fn.Properties.LoggingConfig.LogGroup.Ref];
  expect(logGroup).toMatchObject({ Type: 'AWS::Logs::LogGroup', Properties: { RetentionInDays: 30 } });
});

test("the handler's grants are exactly what making the account takes", () => {
  const region = { 'Fn::Join': ['', ['secretsmanager.', { Ref: 'AWS::Region' }, '.amazonaws.com']] };
  const statements = statementsOf(firstAccount.function.role!);
  expect(statements).toHaveLength(4);
  expect(statements).toEqual(
    expect.arrayContaining([
      // The accounts table alone: no index, no other table, no delete or update.
      { Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:PutItem'], Resource: arn(data.tables.accounts) },
      // Sealing the storage secret.
      { Effect: 'Allow', Action: 'kms:Encrypt', Resource: arn(data.secretsKey) },
      // This secret's value, read and put; not its metadata, policy or deletion.
      { Effect: 'Allow', Action: ['secretsmanager:GetSecretValue', 'secretsmanager:PutSecretValue'], Resource: ref(firstAccount.secret) },
      // The key's data keys only through Secrets Manager: the handler cannot open the storage secrets it seals.
      {
        Effect: 'Allow',
        Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
        Resource: arn(data.secretsKey),
        Condition: { StringEquals: { 'kms:ViaService': region } },
      },
    ]),
  );
  for (const table of ['sites', 'deploys', 'objects'] as const) expect(JSON.stringify(statements)).not.toContain(id(data.tables[table]));
  expect(JSON.stringify(statements)).not.toContain('"*"');
});

test('the custom resource: through the provider, with the secret and the endpoints, after its grants, failing in 10 minutes', () => {
  const resource = resources[id(firstAccount.resource)];
  expect(resource.Type).toBe('Custom::CairnFirstAccount');
  const framework = Object.entries(resources).find(
    ([, r]) => r.Type === 'AWS::Lambda::Function' && r.Properties.Handler === 'framework.onEvent',
  )!;
  expect(resource.Properties).toEqual({
    ServiceToken: { 'Fn::GetAtt': [framework[0], 'Arn'] },
    ServiceTimeout: '600',
    SecretArn: ref(firstAccount.secret),
    AccountName: 'default',
    StorageEndpoint: 'https://s3.example.com',
    GraphqlUrl: 'https://api.example.com/graphql',
    GatewayUrl: 'https://ipfs.example.com',
  });
  // Its data is left alone on Delete by the handler; the resource itself needs no retention.
  expect(resource.DeletionPolicy).toBe('Delete');
  const role = firstAccount.function.role!;
  const policy = Object.entries(resources).find(
    ([, r]) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((x: Json) => x.Ref === id(role)),
  )![0];
  expect(resource.DependsOn).toEqual(expect.arrayContaining([id(role), policy]));
  // The framework function invokes the handler and nothing else.
  const frameworkStatements = statementsOf(firstAccount.provider.node.findAll().find((c) => c.node.id === 'ServiceRole')!);
  const invoke = frameworkStatements.find((s) => s.Action === 'lambda:InvokeFunction');
  expect(invoke.Resource).toEqual([arn(firstAccount.function), { 'Fn::Join': ['', [arn(firstAccount.function), ':*']] }]);
});

test('the outputs name the secret, with the command that reads it, and the key npm run admin seals with', () => {
  expect(outputs[FIRST_ACCOUNT_SECRET_OUTPUT]).toEqual({
    Description: expect.stringContaining('aws secretsmanager get-secret-value --secret-id <this ARN> --query SecretString --output text'),
    Value: ref(firstAccount.secret),
  });
  expect(outputs[SECRETS_KEY_OUTPUT]).toEqual({ Description: expect.stringContaining('CAIRN_KMS_KEY_ID'), Value: ref(data.secretsKey) });
  expect(Object.keys(outputs).sort()).toEqual([FIRST_ACCOUNT_SECRET_OUTPUT, SECRETS_KEY_OUTPUT].sort());
});

test('another name and no endpoints: the properties say only what is known', () => {
  const app = new App({ context: { ...cdkContext, 'aws:cdk:bundling-stacks': [] } });
  apps.push(app);
  const other = new Stack(app, 'FirstAccountNamed');
  const named = new FirstAccount(other, 'FirstAccount', { data: new CairnData(other, 'Data'), accountName: 'acme', logLevel: 'warn' });
  const json = Template.fromStack(other).toJSON();
  const props = json.Resources[other.resolve(other.getLogicalId(named.resource.node.defaultChild as CfnElement))].Properties;
  expect(Object.keys(props).sort()).toEqual(['AccountName', 'SecretArn', 'ServiceTimeout', 'ServiceToken']);
  expect(props.AccountName).toBe('acme');
  const fnId = other.resolve(other.getLogicalId(named.function.node.defaultChild as CfnElement));
  expect(json.Resources[fnId].Properties.Environment.Variables.CAIRN_LOG_LEVEL).toBe('warn');
});

test("cdk-nag's AwsSolutions checks find nothing unacknowledged in the construct", () => {
  const report = new AwsSolutionsChecks().validateScope(stack);
  const ours = report.violations.flatMap((v) =>
    v.violatingResources
      .filter((r) => r.constructPath?.startsWith(`${stack.stackName}/FirstAccount/`))
      .map((r) => `${v.ruleName} at ${r.constructPath}`),
  );
  expect(ours).toEqual([]);
  // The same checks do find what the construct acknowledges: a secret without rotation, unacknowledged.
  const app = new App({ context: { ...cdkContext, 'aws:cdk:bundling-stacks': [] } });
  apps.push(app);
  const bare = new Stack(app, 'BareSecret');
  new Secret(bare, 'Unrotated');
  Template.fromStack(bare);
  expect(new AwsSolutionsChecks().validateScope(bare).violations.map((v) => v.ruleName)).toContain('AwsSolutions-SMG4');
});

test('the bundle loads as ESM and answers a Delete without touching AWS', async () => {
  const key: string = resources[id(firstAccount.function)].Properties.Code.S3Key;
  const dir = path.join(assemblyDir, `asset.${key.replace(/\.zip$/, '')}`);
  expect(fs.existsSync(path.join(dir, 'index.mjs'))).toBe(true);
  expect(fs.existsSync(path.join(dir, 'index.mjs.map'))).toBe(true);
  const event = {
    RequestType: 'Delete',
    PhysicalResourceId: 'first-account:default',
    RequestId: 'r-1',
    LogicalResourceId: 'FirstAccount',
    StackId: 'arn:aws:cloudformation:us-east-1:123456789012:stack/Cairn/x',
    ResourceType: 'Custom::CairnFirstAccount',
    ServiceToken: 'arn:aws:lambda:us-east-1:123456789012:function:framework',
    ResponseURL: 'https://example.com/',
    ResourceProperties: { ServiceToken: 'x', SecretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:s', AccountName: 'default' },
  };
  const script = `const { handler } = await import(${JSON.stringify(path.join(dir, 'index.mjs'))}); process.stderr.write(JSON.stringify(await handler(${JSON.stringify(event)}, {})));`;
  const { stderr } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    cwd: dir,
    env: {
      PATH: process.env.PATH,
      AWS_LAMBDA_FUNCTION_NAME: 'first-account',
      AWS_REGION: 'us-east-1',
      CAIRN_ACCOUNTS_TABLE: 'accounts',
      CAIRN_KMS_KEY_ID: 'key-id',
      CAIRN_LOG_LEVEL: 'silent',
    },
  });
  expect(JSON.parse(stderr)).toEqual({ PhysicalResourceId: 'first-account:default' });
}, 60_000);
