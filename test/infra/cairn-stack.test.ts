/**
 * The synthesized Cairn stack: tables (derived from TABLES), block bucket,
 * KMS key, the five bundled functions (the preview function's with
 * Chromium beside it), least-privilege IAM, endpoints (the S3 API's REST
 * API, the GraphQL HTTP API with its access logs), the worker schedule,
 * the first account and the monitoring wired in, and the outputs.
 *
 * The stack is built once, without bundling, and shared by every test; what
 * the bundles hold is stack-bundles.test.ts's.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IConstruct } from 'constructs';
import { TABLES, indexKeys, type TableName } from '../../functions/core/data/tables.js';
import { STAGED_HEADERS } from '../../functions/core/ports/staged-parts.js';
import { CairnStack, tableEnvVar, type CairnFunctions } from '../../lib/cairn-stack.js';
import { DEFAULT_BUILD_IMAGE } from '../../functions/deploy-worker/limits.js';
import { pascal } from '../../lib/data.js';
import { ecrPublicImage } from '../../functions/deploy-worker/limits.js';
import { PROJECT_ROOT } from '../../lib/functions.js';
import { VIEWER_REQUEST_CODE_PATH } from '../../lib/site-cdn.js';

type Json = any;

let app: App;
let stack: CairnStack;
let template: Template;
let resources: Record<string, Json>;
let outputs: Record<string, Json>;

beforeAll(() => {
  // The same feature flags the CLI passes from cdk.json; no bundling: the
  // template is the same without it (the assets' hashes aside), and the
  // bundles themselves are stack-bundles.test.ts's (real esbuild, a long suite).
  const cdkJson = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'cdk.json'), 'utf8'));
  app = new App({ context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } });
  // Template.fromStack also fails on a dependency cycle (e.g. a function given its own URL).
  stack = new CairnStack(app, 'Cairn');
  template = Template.fromStack(stack);
  const json = template.toJSON();
  resources = json.Resources;
  outputs = json.Outputs;
});

// ---------------------------------------------------------------- helpers

function id(construct: IConstruct): string {
  return stack.getLogicalId(construct.node.defaultChild as CfnElement);
}

function ofType(type: string): Array<[string, Json]> {
  return Object.entries(resources).filter(([, r]) => r.Type === type);
}

/** Every resource logical id a template fragment refers to (Ref, Fn::GetAtt). */
function refs(value: Json, into: Set<string> = new Set()): Set<string> {
  if (Array.isArray(value)) {
    for (const v of value) refs(v, into);
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === 'Ref' && typeof v === 'string') into.add(v);
      else if (k === 'Fn::GetAtt') into.add(Array.isArray(v) ? v[0] : String(v).split('.')[0]);
      else refs(v, into);
    }
  }
  return into;
}

const arr = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

const FUNCTION_NAMES = ['graphql', 's3', 'gateway', 'deployWorker', 'preview'] as const;
type FunctionName = (typeof FUNCTION_NAMES)[number];

function fn(name: FunctionName): IFunction {
  return (stack.functions as CairnFunctions)[name];
}

function fnResource(name: FunctionName): Json {
  return resources[id(fn(name))];
}

/** All statements of the policies attached to a function's role. */
function statements(name: FunctionName): Json[] {
  const roleId = id(fn(name).role!);
  const role = resources[roleId];
  expect(role.Properties.Policies).toBeUndefined();
  return ofType('AWS::IAM::Policy')
    .filter(([, p]) => arr(p.Properties.Roles).some((r: Json) => r.Ref === roleId))
    .flatMap(([, p]) => arr(p.Properties.PolicyDocument.Statement));
}

const DDB_READ = ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:Scan'];
const DDB_WRITE = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:PartiQLInsert',
  'dynamodb:PartiQLUpdate',
  'dynamodb:PartiQLDelete',
];
const S3_WRITE = /^s3:(PutObject|DeleteObject|Abort|\*)/;
const S3_READ = /^s3:(GetObject|List)/;

interface Access {
  tables: TableName[];
  readTables: TableName[];
  writeTables: TableName[];
  bucketRead: boolean;
  bucketWrite: boolean;
  kmsActions: string[];
  actions: string[];
  referenced: string[];
}

function access(name: FunctionName): Access {
  const tableIds = new Map(TABLES.map((t) => [id(stack.data.tables[t.name]), t.name]));
  const bucketId = id(stack.data.blockBucket);
  const keyId = id(stack.data.secretsKey);
  const tables = new Set<TableName>();
  const read = new Set<TableName>();
  const write = new Set<TableName>();
  const kms = new Set<string>();
  const actions = new Set<string>();
  const referenced = new Set<string>();
  let bucketRead = false;
  let bucketWrite = false;
  for (const s of statements(name)) {
    expect(s.Effect).toBe('Allow');
    const acts: string[] = arr(s.Action);
    acts.forEach((a) => actions.add(a));
    const targets = refs(s.Resource);
    targets.forEach((t) => referenced.add(t));
    for (const t of targets) {
      const table = tableIds.get(t);
      if (table) {
        tables.add(table);
        if (acts.some((a) => DDB_READ.includes(a) || a === 'dynamodb:*')) read.add(table);
        if (acts.some((a) => DDB_WRITE.includes(a) || a === 'dynamodb:*')) write.add(table);
      }
      if (t === bucketId) {
        if (acts.some((a) => S3_READ.test(a))) bucketRead = true;
        if (acts.some((a) => S3_WRITE.test(a))) bucketWrite = true;
      }
      if (t === keyId) acts.forEach((a) => kms.add(a));
    }
  }
  return {
    tables: [...tables].sort(),
    readTables: [...read].sort(),
    writeTables: [...write].sort(),
    bucketRead,
    bucketWrite,
    kmsActions: [...kms].sort(),
    actions: [...actions].sort(),
    referenced: [...referenced].sort(),
  };
}

function tableIdFromOutput(name: TableName): string {
  const out = outputs[`${pascal(name)}TableName`];
  expect(out).toBeDefined();
  return out.Value.Ref;
}

// ---------------------------------------------------------------- data

describe('tables', () => {
  test('one table per TABLES entry, nothing else', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', TABLES.length);
  });

  test.each(TABLES.map((t) => [t.name, t] as const))('%s: keys, indexes, billing, PITR, encryption, retain', (name, spec) => {
    const table = resources[tableIdFromOutput(name)];
    expect(table.Type).toBe('AWS::DynamoDB::Table');
    expect(table.DeletionPolicy).toBe('Retain');
    expect(table.UpdateReplacePolicy).toBe('Retain');
    const p = table.Properties;
    expect(p.TableName).toBeUndefined(); // generated, so several stacks can share an account
    expect(p.BillingMode).toBe('PAY_PER_REQUEST');
    expect(p.ProvisionedThroughput).toBeUndefined();
    expect(p.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expect(p.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    // Webhook deliveries expire from the deploys table, sessions and sign-in failures from the accounts table, IPNS records PUT
    // from elsewhere from the sites table; the objects table has no TTL.
    const expires = name === 'deploys' || name === 'accounts' || name === 'sites';
    expect(p.TimeToLiveSpecification).toEqual(expires ? { AttributeName: 'expiresAt', Enabled: true } : undefined);
    expect(spec.ttlAttribute).toBe(expires ? 'expiresAt' : undefined);
    // AWS managed key: SSE on, no customer key.
    expect(p.SSESpecification).toEqual({ SSEEnabled: true });

    const expectedAttrs = ['pk', 'sk', ...spec.indexes.flatMap((i) => [indexKeys(i).pk, indexKeys(i).sk])].sort();
    expect(p.AttributeDefinitions.map((a: Json) => a.AttributeName).sort()).toEqual(expectedAttrs);
    for (const a of p.AttributeDefinitions) expect(a.AttributeType).toBe('S');

    const gsis: Json[] = p.GlobalSecondaryIndexes ?? [];
    expect(gsis.map((g) => g.IndexName).sort()).toEqual([...spec.indexes].sort());
    for (const index of spec.indexes) {
      const gsi = gsis.find((g) => g.IndexName === index);
      expect(gsi).toEqual({
        IndexName: index,
        KeySchema: [
          { AttributeName: indexKeys(index).pk, KeyType: 'HASH' },
          { AttributeName: indexKeys(index).sk, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      });
    }
    expect(p.LocalSecondaryIndexes).toBeUndefined();
  });

  test('every function is told every physical table name', () => {
    for (const name of FUNCTION_NAMES) {
      const vars = fnResource(name).Properties.Environment.Variables;
      for (const t of TABLES) {
        expect(vars[tableEnvVar(t.name)]).toEqual({ Ref: tableIdFromOutput(t.name) });
      }
    }
  });
});

describe('block bucket and KMS key', () => {
  test('the block bucket blocks public access, enforces SSL, is S3-encrypted and retained', () => {
    template.resourceCountIs('AWS::S3::Bucket', 1);
    const bucketId: string = outputs.BlockBucketName.Value.Ref;
    const bucket = resources[bucketId];
    expect(bucket.Type).toBe('AWS::S3::Bucket');
    expect(bucket.DeletionPolicy).toBe('Retain');
    expect(bucket.Properties.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(bucket.Properties.BucketEncryption).toEqual({
      ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
    });
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: bucketId },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 's3:*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      },
    });
  });

  test("one KMS key for secrets, rotated and retained (the other is the alarm topic's own)", () => {
    template.resourceCountIs('AWS::KMS::Key', 2);
    expect(
      ofType('AWS::KMS::Key')
        .map(([lid]) => lid)
        .sort(),
    ).toEqual([id(stack.data.secretsKey), id(stack.monitoring.topicKey)].sort());
    const key = resources[id(stack.data.secretsKey)];
    expect(key.Properties.EnableKeyRotation).toBe(true);
    expect(key.DeletionPolicy).toBe('Retain');
  });
});

// ---------------------------------------------------------------- functions

const EXPECTED: Record<FunctionName, { dir: string; memory: number; timeout: number }> = {
  graphql: { dir: 'graphql', memory: 512, timeout: 29 },
  // Lambda's longest: a streamed download lasts as long as its function may run.
  s3: { dir: 's3', memory: 1024, timeout: 900 },
  gateway: { dir: 'gateway', memory: 1024, timeout: 900 },
  deployWorker: { dir: 'deploy-worker', memory: 2048, timeout: 900 },
  preview: { dir: 'preview', memory: 1600, timeout: 60 },
};

describe('functions', () => {
  test("eight Lambda functions: Cairn's five, the part-staging authoriser, the first account's handler and its custom resource provider", () => {
    template.resourceCountIs('AWS::Lambda::Function', 8);
    const others = ofType('AWS::Lambda::Function')
      .map(([lid]) => lid)
      .filter((lid) => !FUNCTION_NAMES.some((n) => id(fn(n)) === lid));
    expect(others.sort()).toEqual(
      [
        id(stack.partStaging.authorizerFunction),
        id(stack.firstAccount.function),
        id(stack.firstAccount.provider.node.findChild('framework-onEvent')),
      ].sort(),
    );
  });

  test.each(FUNCTION_NAMES.map((n) => [n]))('%s: runtime, handler, arch, memory, timeout, logs, env', (name) => {
    const p = fnResource(name).Properties;
    expect(p.Runtime).toMatch(/^nodejs(22|24)\.x$/);
    expect(p.Handler).toBe('index.handler');
    // @sparticuz/chromium ships x64 binaries only; everything else runs on ARM.
    expect(p.Architectures).toEqual([name === 'preview' ? 'x86_64' : 'arm64']);
    expect(p.MemorySize).toBe(EXPECTED[name].memory);
    expect(p.Timeout).toBe(EXPECTED[name].timeout);
    // Powertools' Tracer records the handler and its AWS calls (functions/core/observability.ts).
    expect(p.TracingConfig).toEqual({ Mode: 'Active' });

    const logGroup = resources[p.LoggingConfig.LogGroup.Ref];
    expect(logGroup.Type).toBe('AWS::Logs::LogGroup');
    expect(logGroup.Properties.RetentionInDays).toBe(30);

    const vars = p.Environment.Variables;
    expect(vars.CAIRN_BLOCK_BUCKET).toEqual(outputs.BlockBucketName.Value);
    expect(vars.CAIRN_KMS_KEY_ID).toEqual({ Ref: id(stack.data.secretsKey) });
    expect(vars.CAIRN_LOG_LEVEL).toBe('info');
    // No --enable-source-maps: Node would parse every map at start-up (functions/aws/source-mapped-stacks.ts reads them on demand).
    expect(vars.NODE_OPTIONS).toBeUndefined();
  });

  test('the GraphQL function finds the schema next to its handler', () => {
    expect(fnResource('graphql').Properties.Environment.Variables.CAIRN_SCHEMA_PATH).toBe('/var/task/schema.graphql');
  });

  test('each function has its own role', () => {
    const roles = FUNCTION_NAMES.map((n) => JSON.stringify(fnResource(n).Properties.Role));
    expect(new Set(roles).size).toBe(FUNCTION_NAMES.length);
  });
});

// ---------------------------------------------------------------- IAM

describe('least privilege', () => {
  test("no statement allows a wildcard action or resource, but X-Ray's, which takes none", () => {
    for (const name of FUNCTION_NAMES) {
      for (const s of statements(name)) {
        for (const a of arr<string>(s.Action)) expect(a).not.toMatch(/^(\*|[a-z0-9-]+:\*)$/);
        // And the worker's ListSecrets, which takes none either (the test of the sweep's grant below).
        if (arr<Json>(s.Resource).includes('*') && !(name === 'deployWorker' && s.Sid === 'ListBuildSecrets'))
          expect(arr<string>(s.Action).sort()).toEqual(['xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
      }
    }
  });

  test('graphql: read/write accounts, sites, deploys, objects and the bucket (CAR imports); KMS encrypt/decrypt', () => {
    const a = access('graphql');
    expect(a.tables).toEqual(['accounts', 'deploys', 'objects', 'sites']);
    expect(a.writeTables).toEqual(['accounts', 'deploys', 'objects', 'sites']);
    expect(a.readTables).toEqual(['accounts', 'deploys', 'objects', 'sites']);
    // The import endpoint stores verified blocks and import pins.
    expect(a.bucketRead).toBe(true);
    expect(a.bucketWrite).toBe(true);
    // Sealing and opening secrets: Encrypt and Decrypt, no data keys or re-encryption.
    expect(a.kmsActions).toEqual(['kms:Decrypt', 'kms:Encrypt']);
  });

  test('graphql: the web app served at / and /app/, with its URL an output', () => {
    expect(outputs.WebAppUrl).toBeDefined();
    const routes = Object.values(resources)
      .filter((r: Json) => r.Type === 'AWS::ApiGatewayV2::Route')
      .map((r: Json) => r.Properties.RouteKey);
    expect(routes).toEqual(expect.arrayContaining(['GET /', 'GET /app/{proxy+}', 'ANY /imports/{proxy+}']));
  });

  test('s3: read/write accounts and objects only; bucket read/write; KMS encrypt/decrypt', () => {
    const a = access('s3');
    expect(a.tables).toEqual(['accounts', 'objects']);
    expect(a.writeTables).toEqual(['accounts', 'objects']);
    expect(a.bucketRead).toBe(true);
    expect(a.bucketWrite).toBe(true);
    expect(a.kmsActions).toEqual(['kms:Decrypt', 'kms:Encrypt']);
    // The sites and deploys tables are not even referenced.
    for (const t of ['sites', 'deploys'] as const) {
      expect(a.referenced).not.toContain(id(stack.data.tables[t]));
    }
  });

  test('gateway: reads accounts, deploys, objects, sites; writes only IPNS records and their PUT counters; the bucket read, and one object written (the datastore version); no KMS', () => {
    const a = access('gateway');
    // A site address reads its site, then its published deploy or a preview's deploy (functions/core/hosting/site-hosts.ts).
    expect(a.tables).toEqual(['accounts', 'deploys', 'objects', 'sites']);
    expect(a.readTables).toEqual(['accounts', 'deploys', 'objects', 'sites']);
    expect(a.bucketRead).toBe(true);
    expect(a.kmsActions).toEqual([]);
    for (const action of a.actions) {
      expect(action).toMatch(
        /^(dynamodb:(BatchGetItem|ConditionCheckItem|DescribeTable|GetItem|GetRecords|GetShardIterator|Query|Scan|PutItem|UpdateItem)|s3:(GetBucket\*|GetObject\*|List\*|PutObject)|xray:(PutTraceSegments|PutTelemetryRecords))$/,
      );
    }
    // Its table writes: the routing API's PUT of an IPNS record (sites table, IPNS# keys) and its rate counter (accounts
    // table, RATE#ipns-put# keys), each held to those partition keys; nothing else, and never a delete.
    const tableWrites = statements('gateway').filter((st) => arr<string>(st.Action).some((x) => DDB_WRITE.includes(x)));
    expect(
      tableWrites.map((st) => ({
        actions: arr<string>(st.Action).sort(),
        resource: st.Resource,
        keys: arr<string>(st.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys']),
      })),
    ).toEqual([
      { actions: ['dynamodb:PutItem'], resource: { 'Fn::GetAtt': [id(stack.data.tables.sites), 'Arn'] }, keys: ['IPNS#*'] },
      {
        actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
        resource: { 'Fn::GetAtt': [id(stack.data.tables.accounts), 'Arn'] },
        keys: ['RATE#ipns-put#*'],
      },
    ]);
    expect(a.actions).not.toContain('dynamodb:DeleteItem');
    expect(a.actions).not.toContain('dynamodb:BatchWriteItem');
    // Its one write: the IPFS node's datastore version record, which its first start on a fresh bucket makes (test/aws/gateway.test.ts).
    const writes = statements('gateway').filter((s) => arr<string>(s.Action).some((x) => S3_WRITE.test(x)));
    expect(writes.map((s) => arr<string>(s.Action))).toEqual([['s3:PutObject']]);
    expect(writes[0]!.Resource).toEqual({
      'Fn::Join': ['', [{ 'Fn::GetAtt': [id(stack.data.blockBucket), 'Arn'] }, '/datastore/version']],
    });
  });

  test("deploy worker: read/write sites, deploys, objects; of accounts only buckets' items and the lifecycle run's; bucket read/write; KMS decrypt and encrypt (site tokens, sites' IPNS keys)", () => {
    const a = access('deployWorker');
    expect(a.tables).toEqual(['accounts', 'deploys', 'objects', 'sites']);
    expect(a.writeTables).toEqual(['accounts', 'deploys', 'objects', 'sites']);
    // Every statement naming the accounts table is bounded by partition key: the buckets' items to read, the run's to write.
    const accountsId = id(stack.data.tables.accounts);
    const onAccounts = statements('deployWorker').filter((s) => refs(s.Resource).has(accountsId));
    expect(onAccounts.map((s) => [arr<string>(s.Action).sort(), s.Condition])).toEqual([
      [['dynamodb:ConditionCheckItem', 'dynamodb:GetItem'], { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['BUCKET#*'] } }],
      [
        ['dynamodb:DeleteItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
        { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': ['#LIFECYCLE'] } },
      ],
    ]);
    expect(a.bucketRead).toBe(true);
    expect(a.bucketWrite).toBe(true);
    // Decrypt opens a repository token or an IPNS key; Encrypt seals a site's IPNS key, made on its first publish. No data keys.
    expect(a.kmsActions).toEqual(['kms:Decrypt', 'kms:Encrypt']);
    expect(a.actions.filter((x) => x.startsWith('kms:'))).toEqual(['kms:Decrypt', 'kms:Encrypt']);
    const kms = statements('deployWorker').filter((s) => arr<string>(s.Action).some((x) => x.startsWith('kms:')));
    expect(kms.flatMap((s) => arr<Json>(s.Resource))).toEqual([{ 'Fn::GetAtt': [id(stack.data.secretsKey), 'Arn'] }]);
  });

  test('table grants cover the indexes of exactly the granted tables', () => {
    for (const name of FUNCTION_NAMES) {
      const granted = new Set(access(name).tables.map((t) => id(stack.data.tables[t])));
      for (const s of statements(name)) {
        for (const r of arr<Json>(s.Resource)) {
          const join = r?.['Fn::Join'];
          if (join && JSON.stringify(join).includes('/index/*')) {
            for (const t of refs(join)) expect(granted.has(t)).toBe(true);
          }
        }
      }
    }
  });
});

// ---------------------------------------------------------------- preview images

describe('preview images', () => {
  const previewId = () => id(fn('preview'));

  test('preview: reads sites; reads and writes deploys (previewImage) and objects (its reference, the upload gate); bucket read/write; no accounts, no KMS', () => {
    const a = access('preview');
    expect(a.tables).toEqual(['deploys', 'objects', 'sites']);
    expect(a.readTables).toEqual(['deploys', 'objects', 'sites']);
    expect(a.writeTables).toEqual(['deploys', 'objects']);
    expect(a.bucketRead).toBe(true);
    expect(a.bucketWrite).toBe(true);
    expect(a.kmsActions).toEqual([]);
    expect(a.referenced).not.toContain(id(stack.data.tables.accounts));
    expect(a.actions.filter((x) => !/^(dynamodb|s3):/.test(x))).toEqual(['xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
  });

  test('the worker may invoke the preview function and no other; no other function may invoke anything', () => {
    for (const name of FUNCTION_NAMES) {
      const invoke = statements(name).filter((s) => arr<string>(s.Action).some((x) => x.startsWith('lambda:')));
      if (name !== 'deployWorker') {
        expect(invoke).toEqual([]);
        continue;
      }
      expect(invoke.flatMap((s) => arr<string>(s.Action))).toEqual(['lambda:InvokeFunction']);
      const targets = invoke.flatMap((s) => arr<Json>(s.Resource));
      expect(targets.length).toBeGreaterThan(0);
      for (const r of targets) expect([...refs(r)]).toEqual([previewId()]);
    }
  });

  test('the worker is told CAIRN_PREVIEW=on and the function; the preview function the gateway URL its images are under; nobody else either', () => {
    const w = fnResource('deployWorker').Properties.Environment.Variables;
    expect(w.CAIRN_PREVIEW).toBe('on');
    expect(w.CAIRN_PREVIEW_FUNCTION).toEqual({ Ref: previewId() });
    for (const name of FUNCTION_NAMES.filter((n) => n !== 'deployWorker')) {
      const vars = fnResource(name).Properties.Environment.Variables;
      expect(vars.CAIRN_PREVIEW).toBeUndefined();
      expect(vars.CAIRN_PREVIEW_FUNCTION).toBeUndefined();
    }
    const [[urlId]] = ofType('AWS::Lambda::Url').filter(([, u]) => refs(u.Properties.TargetFunctionArn).has(id(fn('gateway'))));
    const p = fnResource('preview').Properties.Environment.Variables;
    expect(p.CAIRN_GATEWAY_URL).toEqual({ 'Fn::GetAtt': [urlId, 'FunctionUrl'] });
    expect(p.CAIRN_CHROMIUM_PATH).toBeUndefined(); // its own @sparticuz/chromium
  });

  test('an asynchronous request is not retried and waits at most an hour', () => {
    template.resourceCountIs('AWS::Lambda::EventInvokeConfig', 1);
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: previewId() },
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 3600,
    });
  });
});

// ---------------------------------------------------------------- endpoints

describe('endpoints', () => {
  test('HTTP API with CORS for any origin; /graphql, the hooks, imports and the web app go to the GraphQL function (payload 2.0)', () => {
    template.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
    const [[apiId, api]] = ofType('AWS::ApiGatewayV2::Api');
    expect(api.Properties.ProtocolType).toBe('HTTP');
    expect(api.Properties.CorsConfiguration.AllowOrigins).toEqual(['*']);
    expect([...api.Properties.CorsConfiguration.AllowHeaders].sort()).toEqual(['authorization', 'content-type']);

    const routes = ofType('AWS::ApiGatewayV2::Route');
    // The hooks, the import endpoint and the web app are routes of the same API, to the same function (it dispatches by path).
    expect(routes.map(([, r]) => r.Properties.RouteKey).sort()).toEqual([
      'ANY /auth/{proxy+}',
      'ANY /graphql',
      'ANY /hooks/{proxy+}',
      'ANY /imports/{proxy+}',
      'GET /',
      'GET /app/{proxy+}',
      'GET /graphql',
      'HEAD /',
      'HEAD /app/{proxy+}',
    ]);
    const graphqlId = id(fn('graphql'));
    for (const [, route] of routes) {
      expect(route.Properties.ApiId).toEqual({ Ref: apiId });
      const integrationId = [...refs(route.Properties.Target)][0];
      const integration = resources[integrationId];
      expect(integration.Type).toBe('AWS::ApiGatewayV2::Integration');
      expect(integration.Properties.IntegrationType).toBe('AWS_PROXY');
      expect(integration.Properties.PayloadFormatVersion).toBe('2.0');
      expect(integration.Properties.IntegrationUri).toEqual({ 'Fn::GetAtt': [graphqlId, 'Arn'] });
    }
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'apigateway.amazonaws.com',
      FunctionName: { 'Fn::GetAtt': [graphqlId, 'Arn'] },
    });
  });

  test("the HTTP API logs one JSON line per request, by route (a build hook's path is its secret), kept a month", () => {
    const stages = ofType('AWS::ApiGatewayV2::Stage');
    expect(stages).toHaveLength(1);
    const p = stages[0]![1].Properties;
    expect(p).toMatchObject({ StageName: '$default', AutoDeploy: true, ApiId: { Ref: ofType('AWS::ApiGatewayV2::Api')[0]![0] } });
    const logGroup = resources[[...refs(p.AccessLogSettings.DestinationArn)][0]!];
    expect(logGroup.Type).toBe('AWS::Logs::LogGroup');
    expect(logGroup.Properties.RetentionInDays).toBe(30);
    const format = JSON.parse(p.AccessLogSettings.Format);
    expect(format).toMatchObject({ requestId: '$context.requestId', routeKey: '$context.routeKey', status: '$context.status' });
    expect(p.AccessLogSettings.Format).not.toMatch(/\$context\.path|querystring/i);
  });

  describe('the S3 API: a REST API streaming to the S3 function', () => {
    const restApiId = () => id(stack.storageApi.api);
    const stageId = () => id(stack.storageApi.stage);

    test('one regional REST API, every content type passed through as binary', () => {
      template.resourceCountIs('AWS::ApiGateway::RestApi', 1);
      const p = resources[restApiId()].Properties;
      expect(p.EndpointConfiguration).toEqual({ Types: ['REGIONAL'] });
      expect(p.BinaryMediaTypes).toEqual(['*/*']);
      expect(p.DisableExecuteApiEndpoint).toBe(false);
      // No content encoding: API Gateway cannot compress a streamed response.
      expect(p.MinimumCompressionSize).toBeUndefined();
    });

    test('ANY and HEAD on / and on /{proxy+}, no authorizer (the function checks SigV4): ANY streamed for 15 minutes, HEAD buffered', () => {
      // The fifth, PUT /_parts/{proxy+}, is the part-staging path's (below).
      expect(ofType('AWS::ApiGateway::Method')).toHaveLength(5);
      const methods = ofType('AWS::ApiGateway::Method').filter(([lid]) => lid !== id(stack.partStaging.method));
      expect(methods).toHaveLength(4);
      const proxy = ofType('AWS::ApiGateway::Resource').filter(
        ([, r]) => r.Properties.ParentId['Fn::GetAtt'] && r.Properties.PathPart === '{proxy+}',
      );
      expect(proxy).toHaveLength(1);
      expect(proxy[0]![1].Properties).toEqual({
        ParentId: { 'Fn::GetAtt': [restApiId(), 'RootResourceId'] },
        PathPart: '{proxy+}',
        RestApiId: { Ref: restApiId() },
      });
      const key = (m: Json) => `${JSON.stringify(m.Properties.ResourceId)} ${m.Properties.HttpMethod}`;
      const root = JSON.stringify({ 'Fn::GetAtt': [restApiId(), 'RootResourceId'] });
      const proxyRef = JSON.stringify({ Ref: proxy[0]![0] });
      expect(methods.map(([, m]) => key(m)).sort()).toEqual([`${root} ANY`, `${root} HEAD`, `${proxyRef} ANY`, `${proxyRef} HEAD`].sort());
      const uri = (api: string, action: string) => ({
        'Fn::Join': [
          '',
          [
            'arn:',
            { Ref: 'AWS::Partition' },
            ':apigateway:',
            { Ref: 'AWS::Region' },
            `:lambda:path/${api}/functions/`,
            { 'Fn::GetAtt': [id(fn('s3')), 'Arn'] },
            `/${action}`,
          ],
        ],
      });
      for (const [, m] of methods) {
        expect(m.Properties.AuthorizationType).toBe('NONE');
        if (m.Properties.HttpMethod === 'ANY') {
          expect(m.Properties.Integration).toEqual({
            Type: 'AWS_PROXY',
            IntegrationHttpMethod: 'POST',
            ResponseTransferMode: 'STREAM',
            // A streamed response may run as long as the function: 15 minutes, streaming's longest.
            TimeoutInMillis: 900_000,
            Uri: uri('2021-11-15', 'response-streaming-invocations'),
          });
          expect(m.Properties.Integration.TimeoutInMillis).toBe(EXPECTED.s3.timeout * 1000);
        } else {
          // HEAD through Invoke, buffered: API Gateway answers the function's
          // status and headers (Content-Length, the object's size) without a body.
          expect(m.Properties.Integration).toMatchObject({
            Type: 'AWS_PROXY',
            IntegrationHttpMethod: 'POST',
            TimeoutInMillis: 29_000,
            Uri: uri('2015-03-31', 'invocations'),
          });
          expect(m.Properties.Integration.ResponseTransferMode ?? 'BUFFERED').toBe('BUFFERED');
        }
      }
    });

    test('API Gateway may invoke the S3 function from this API only; the S3 function has no Function URL', () => {
      const s3Id = id(fn('s3'));
      const permissions = ofType('AWS::Lambda::Permission').filter(([, p]) => refs(p.Properties.FunctionName).has(s3Id));
      expect(permissions).toHaveLength(1);
      expect(permissions[0]![1].Properties).toEqual({
        Action: 'lambda:InvokeFunction',
        FunctionName: { 'Fn::GetAtt': [s3Id, 'Arn'] },
        Principal: 'apigateway.amazonaws.com',
        SourceArn: {
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              ':execute-api:',
              { Ref: 'AWS::Region' },
              ':',
              { Ref: 'AWS::AccountId' },
              ':',
              { Ref: restApiId() },
              '/*/*/*',
            ],
          ],
        },
      });
      expect(ofType('AWS::Lambda::Url').filter(([, u]) => refs(u.Properties.TargetFunctionArn).has(s3Id))).toEqual([]);
    });

    test('the stage: JSON access logs (request id, no query string) kept a month, error-level execution logs without bodies, X-Ray', () => {
      const p = resources[stageId()].Properties;
      expect(p.StageName).toBe('s3');
      expect(p.TracingEnabled).toBe(true);
      expect(p.MethodSettings).toEqual([
        { DataTraceEnabled: false, HttpMethod: '*', LoggingLevel: 'ERROR', MetricsEnabled: false, ResourcePath: '/*' },
      ]);
      const logGroupId = [...refs(p.AccessLogSetting.DestinationArn)][0]!;
      expect(resources[logGroupId].Type).toBe('AWS::Logs::LogGroup');
      expect(resources[logGroupId].Properties.RetentionInDays).toBe(30);
      const format = JSON.parse(p.AccessLogSetting.Format);
      expect(format).toMatchObject({
        requestId: '$context.requestId',
        ip: '$context.identity.sourceIp',
        httpMethod: '$context.httpMethod',
        path: '$context.path',
        status: '$context.status',
      });
      // Presigned URLs carry their signature in the query string: it is never logged.
      expect(p.AccessLogSetting.Format).not.toMatch(/querystring|requestOverride|\$input/i);
      // Access and execution logs need the account's CloudWatch role, made once.
      template.resourceCountIs('AWS::ApiGateway::Account', 1);
    });

    test("the account's CloudWatch role and API Gateway's account settings outlive the stack (one per account and region, CDK's default)", () => {
      const [[accountId, account], ...others] = ofType('AWS::ApiGateway::Account');
      expect(others).toEqual([]);
      const roleId = [...refs(account.Properties.CloudWatchRoleArn)][0]!;
      const role = resources[roleId];
      expect(role.Type).toBe('AWS::IAM::Role');
      expect(JSON.stringify(role.Properties.ManagedPolicyArns)).toContain('AmazonAPIGatewayPushToCloudWatchLogs');
      for (const r of [role, resources[accountId]]) {
        expect(r.DeletionPolicy).toBe('Retain');
        expect(r.UpdateReplacePolicy).toBe('Retain');
      }
    });

    test("API Gateway's own refusals are S3 errors: a body over 10 MB is EntityTooLarge (400), throttling SlowDown (503)", () => {
      const responses = Object.fromEntries(
        ofType('AWS::ApiGateway::GatewayResponse').map(([, r]) => [r.Properties.ResponseType, r.Properties]),
      );
      // No INTEGRATION_FAILURE: a body Lambda refuses (over 6 MB) has no documented type of its own, and that one is every failed integration (docs/aws.md).
      expect(Object.keys(responses).sort()).toEqual(['ACCESS_DENIED', 'DEFAULT_4XX', 'DEFAULT_5XX', 'REQUEST_TOO_LARGE', 'THROTTLED']);
      const codes: Record<string, [string | undefined, string]> = {
        REQUEST_TOO_LARGE: ['400', 'EntityTooLarge'],
        THROTTLED: ['503', 'SlowDown'],
        ACCESS_DENIED: ['403', 'AccessDenied'],
        DEFAULT_4XX: [undefined, 'InvalidRequest'],
        DEFAULT_5XX: [undefined, 'InternalError'],
      };
      for (const [type, [status, code]] of Object.entries(codes)) {
        const r = responses[type];
        expect(r.RestApiId).toEqual({ Ref: restApiId() });
        expect(r.StatusCode).toBe(status);
        expect(r.ResponseParameters).toEqual({ 'gatewayresponse.header.Content-Type': "'application/xml'" });
        for (const body of Object.values<string>(r.ResponseTemplates)) {
          expect(body).toContain(`<Error><Code>${code}</Code>`);
          expect(body).toContain('<RequestId>$context.requestId</RequestId>');
        }
      }
      expect(responses.REQUEST_TOO_LARGE.ResponseTemplates['application/json']).toContain(`at most ${4 * 1024 * 1024} bytes`);
    });

    test('the S3 function takes bodies of 4 MiB: as base64, with headers, within a 6 MB Lambda event (API Gateway itself takes 10 MB)', () => {
      const max = Number(fnResource('s3').Properties.Environment.Variables.CAIRN_MAX_REQUEST_BODY);
      expect(max).toBe(4 * 1024 * 1024);
      expect(Math.ceil(max / 3) * 4 + 256 * 1024).toBeLessThan(6 * 1024 * 1024);
      expect(max).toBeLessThan(10 * 1000 * 1000);
      for (const name of FUNCTION_NAMES.filter((n) => n !== 's3')) {
        expect(fnResource(name).Properties.Environment.Variables.CAIRN_MAX_REQUEST_BODY).toBeUndefined();
      }
    });
  });

  test('a function URL (auth NONE, streamed responses) for the gateway only', () => {
    const urls = ofType('AWS::Lambda::Url');
    expect(urls).toHaveLength(1);
    expect([...refs(urls[0]![1].Properties.TargetFunctionArn)]).toEqual([id(fn('gateway'))]);
    expect(urls[0]![1].Properties.AuthType).toBe('NONE');
    expect(urls[0]![1].Properties.InvokeMode).toBe('RESPONSE_STREAM');
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunctionUrl',
      Principal: '*',
      FunctionUrlAuthType: 'NONE',
      FunctionName: { 'Fn::GetAtt': [id(fn('gateway')), 'Arn'] },
    });
  });

  test('URL variables: graphql knows the gateway URL, the storage endpoint and its own API (hook URLs); s3 the gateway; no function its own URL', () => {
    const [[urlId]] = ofType('AWS::Lambda::Url');
    const gatewayUrl = { 'Fn::GetAtt': [urlId, 'FunctionUrl'] };
    const g = fnResource('graphql').Properties.Environment.Variables;
    // Webhook and build hook URLs (Site.webhookUrl, createBuildHook) are <CAIRN_BASE_URL>/hooks/...: the HTTP API in front of this function.
    expect(g.CAIRN_BASE_URL).toBeDefined();
    expect([...refs(g.CAIRN_BASE_URL)]).toEqual([id(stack.api)]);
    expect(JSON.stringify(outputs.GraphqlUrl.Value)).toContain(JSON.stringify(g.CAIRN_BASE_URL).slice(1, -1));
    expect(g.CAIRN_GATEWAY_URL).toEqual(gatewayUrl);
    expect(g.CAIRN_PUBLIC_GATEWAY_URL).toEqual(gatewayUrl);
    expect(g.CAIRN_STORAGE_ENDPOINT).toEqual(outputs.StorageEndpoint.Value);
    expect(fnResource('deployWorker').Properties.Environment.Variables.CAIRN_STORAGE_ENDPOINT).toEqual(outputs.StorageEndpoint.Value);
    const s = fnResource('s3').Properties.Environment.Variables;
    expect(s.CAIRN_GATEWAY_URL).toEqual(gatewayUrl);
    expect(s.CAIRN_PUBLIC_GATEWAY_URL).toEqual(gatewayUrl);
    expect(s.CAIRN_STORAGE_ENDPOINT).toBeUndefined();
    expect(refs(fnResource('s3').Properties)).not.toContain(id(stack.storageApi.api));
    expect(refs(fnResource('gateway').Properties)).not.toContain(urlId);
  });
});

// ---------------------------------------------------------------- first account, monitoring

describe('the first account and the monitoring, wired in', () => {
  test('the first account custom resource is told the endpoints the stack outputs', () => {
    const [[, resource]] = ofType('Custom::CairnFirstAccount');
    expect(resource.Properties.StorageEndpoint).toEqual(outputs.StorageEndpoint.Value);
    expect(resource.Properties.GraphqlUrl).toEqual(outputs.GraphqlUrl.Value);
    expect(resource.Properties.GatewayUrl).toEqual(outputs.GatewayUrl.Value);
    expect(Object.keys(outputs)).toEqual(expect.arrayContaining(['FirstAccountSecretArn', 'SecretsKeyId']));
  });

  test("errors and throttles alarms for each of the five functions and the part-staging authoriser, the dead-letter queue, and both APIs' 5xx rates, all to the alarm topic", () => {
    const alarms = ofType('AWS::CloudWatch::Alarm').map(([, a]) => a.Properties);
    for (const fnId of [...FUNCTION_NAMES.map((name) => id(fn(name))), id(stack.partStaging.authorizerFunction)]) {
      const on = alarms.filter((a) => JSON.stringify(a.Dimensions ?? []).includes(JSON.stringify({ Ref: fnId })));
      expect(on.map((a) => a.MetricName).sort()).toEqual(['Errors', 'Throttles']);
    }
    const metrics = JSON.stringify(alarms.map((a) => a.Metrics ?? []));
    // REST API metrics are published by the API's name.
    expect(metrics).toContain(JSON.stringify({ Name: 'ApiName', Value: resources[id(stack.storageApi.api)].Properties.Name }));
    expect(metrics).toContain(JSON.stringify({ Ref: ofType('AWS::ApiGatewayV2::Api')[0]![0] }));
    expect(
      alarms.some(
        (a) => a.MetricName === 'ApproximateNumberOfMessagesVisible' && JSON.stringify(a.Dimensions).includes(id(stack.deployDeadLetters)),
      ),
    ).toBe(true);
    const topicId = id(stack.monitoring.topic);
    for (const a of alarms) expect(a.AlarmActions).toEqual([{ Ref: topicId }]);
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    expect(Object.keys(outputs)).toEqual(expect.arrayContaining(['AlarmTopicArn', 'DashboardUrl']));
  });
});

// ---------------------------------------------------------------- schedule

describe('deploy worker schedule', () => {
  test('EventBridge Scheduler invokes the worker every minute', () => {
    template.resourceCountIs('AWS::Scheduler::Schedule', 1);
    const [[, schedule]] = ofType('AWS::Scheduler::Schedule');
    expect(schedule.Properties.ScheduleExpression).toBe('rate(1 minute)');
    expect(schedule.Properties.State ?? 'ENABLED').toBe('ENABLED');
    expect(schedule.Properties.Target.Arn).toEqual({ 'Fn::GetAtt': [id(fn('deployWorker')), 'Arn'] });

    // Its role may invoke the worker and nothing else.
    const roleId = [...refs(schedule.Properties.Target.RoleArn)][0];
    const role = resources[roleId];
    expect(JSON.stringify(role.Properties.AssumeRolePolicyDocument)).toContain('scheduler.amazonaws.com');
    expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    const stmts = ofType('AWS::IAM::Policy')
      .filter(([, p]) => arr(p.Properties.Roles).some((r: Json) => r.Ref === roleId))
      .flatMap(([, p]) => arr(p.Properties.PolicyDocument.Statement));
    expect(stmts.length).toBeGreaterThan(0);
    for (const s of stmts) {
      expect(arr(s.Action)).toEqual(['lambda:InvokeFunction']);
      expect([...refs(s.Resource)]).toEqual([id(fn('deployWorker'))]);
    }
  });
});

// ---------------------------------------------------------------- deploy pipeline

/** All statements of the policies attached to a role, by its logical id. */
function roleStatements(roleId: string): Json[] {
  return ofType('AWS::IAM::Policy')
    .filter(([, p]) => arr(p.Properties.Roles).some((r: Json) => r.Ref === roleId))
    .flatMap(([, p]) => arr(p.Properties.PolicyDocument.Statement));
}

describe('deploy pipeline', () => {
  const queueId = () => id(stack.deployQueue);
  const dlqId = () => id(stack.deployDeadLetters);
  const projectId = () => id(stack.buildProject);

  test('an SQS queue with a dead-letter queue, visibility six times the worker timeout, encrypted, TLS only', () => {
    template.resourceCountIs('AWS::SQS::Queue', 2);
    const queue = resources[queueId()].Properties;
    expect(queue.VisibilityTimeout).toBe(6 * EXPECTED.deployWorker.timeout);
    expect(queue.RedrivePolicy).toEqual({ deadLetterTargetArn: { 'Fn::GetAtt': [dlqId(), 'Arn'] }, maxReceiveCount: 3 });
    expect(queue.SqsManagedSseEnabled).toBe(true);
    expect(resources[dlqId()].Properties.MessageRetentionPeriod).toBe(14 * 86400);
    for (const q of [queueId(), dlqId()]) {
      template.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [{ Ref: q }],
        PolicyDocument: {
          Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
        },
      });
    }
  });

  test('the worker takes the queue one message at a time, reports batch failures; no function reserves concurrency (a new account could not deploy)', () => {
    const [[, mapping], ...more] = ofType('AWS::Lambda::EventSourceMapping');
    expect(more).toHaveLength(0);
    expect(mapping.Properties).toMatchObject({
      EventSourceArn: { 'Fn::GetAtt': [queueId(), 'Arn'] },
      FunctionName: { Ref: id(fn('deployWorker')) },
      BatchSize: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 2 },
    });
    const worker = fnResource('deployWorker').Properties;
    expect(worker.EphemeralStorage).toEqual({ Size: 4096 });
    // Lambda keeps 100 executions unreserved; a new account's quota can be 10.
    const reserving = ofType('AWS::Lambda::Function').filter(([, f]) => f.Properties.ReservedConcurrentExecutions !== undefined);
    expect(reserving).toEqual([]);
  });

  test('one CodeBuild project: no source or artifacts of its own, node:slim from ECR Public by default, queued and build timeouts, its own logs', () => {
    template.resourceCountIs('AWS::CodeBuild::Project', 1);
    const p = resources[projectId()].Properties;
    expect(p.Source.Type).toBe('NO_SOURCE');
    expect(p.Artifacts.Type).toBe('NO_ARTIFACTS');
    // Docker Hub's official image, same tag, from ECR Public: no anonymous Docker Hub pull limit.
    expect(DEFAULT_BUILD_IMAGE).toBe('node:slim');
    expect(p.Environment.Image).toBe('public.ecr.aws/docker/library/node:slim');
    expect(p.Environment.ImagePullCredentialsType ?? 'SERVICE_ROLE').not.toBe('CODEBUILD');
    expect(p.Environment.Type).toBe('LINUX_CONTAINER');
    expect(p.TimeoutInMinutes).toBe(15);
    expect(p.QueuedTimeoutInMinutes).toBe(60);
    expect(resources[p.LogsConfig.CloudWatchLogs.GroupName.Ref].Properties.RetentionInDays).toBe(30);
  });

  test.each([
    ['node:slim', 'public.ecr.aws/docker/library/node:slim'],
    ['node:22-bookworm', 'public.ecr.aws/docker/library/node:22-bookworm'],
    ['library/node:22', 'public.ecr.aws/docker/library/node:22'],
    ['docker.io/library/node:22', 'public.ecr.aws/docker/library/node:22'],
    ['python@sha256:' + 'a'.repeat(64), 'public.ecr.aws/docker/library/python@sha256:' + 'a'.repeat(64)],
    // Another registry, or an owner's image ECR Public does not mirror, stays as given.
    ['public.ecr.aws/docker/library/node:20', 'public.ecr.aws/docker/library/node:20'],
    ['ghcr.io/acme/builder:1', 'ghcr.io/acme/builder:1'],
    ['localhost:5000/node:20', 'localhost:5000/node:20'],
    ['acme/builder:1', 'acme/builder:1'],
  ])('the build image %s is pulled as %s', (given, pulled) => {
    expect(ecrPublicImage(given)).toBe(pulled);
  });

  test("the project's role reaches only the build files' prefix of the bucket (and its logs)", () => {
    const roleId = [...refs(resources[projectId()].Properties.ServiceRole)][0]!;
    const bucketId = id(stack.data.blockBucket);
    const stmts = roleStatements(roleId);
    const s3 = stmts.filter((s) => arr<string>(s.Action).some((a) => a.startsWith('s3:')));
    expect(s3).toHaveLength(2);
    const objects = s3.find((s) => arr<string>(s.Action).includes('s3:PutObject'))!;
    expect([...arr<string>(objects.Action)].sort()).toEqual(['s3:GetObject', 's3:GetObjectVersion', 's3:PutObject']);
    expect(objects.Resource).toEqual({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, '/deploy-builds/*']] });
    const bucket = s3.find((s) => s !== objects)!;
    expect([...arr<string>(bucket.Action)].sort()).toEqual(['s3:GetBucketAcl', 's3:GetBucketLocation']);
    expect(bucket.Resource).toEqual({ 'Fn::GetAtt': [bucketId, 'Arn'] });
    for (const s of stmts) {
      for (const a of arr<string>(s.Action)) expect(a).toMatch(/^(s3|logs|codebuild|secretsmanager):/);
      expect(JSON.stringify(s.Resource)).not.toContain(id(stack.data.tables.deploys));
      expect(JSON.stringify(s.Resource)).not.toContain(id(stack.data.secretsKey));
    }
    expect(stmts.flatMap((s) => arr<string>(s.Action))).not.toContain('s3:DeleteObject');
  });

  /** Every secret of this stack's builds: `cairn/<project>/builds/*` (and Secrets Manager's six characters). */
  const buildSecrets = () => ({
    'Fn::Join': [
      '',
      [
        'arn:',
        { Ref: 'AWS::Partition' },
        ':secretsmanager:',
        { Ref: 'AWS::Region' },
        ':',
        { Ref: 'AWS::AccountId' },
        ':secret:cairn/',
        { Ref: projectId() },
        '/builds/*',
      ],
    ],
  });
  const secretsStatements = (stmts: Json[]) => stmts.filter((s) => arr<string>(s.Action).some((a) => a.startsWith('secretsmanager:')));

  test("the project's role reads the secrets of this stack's builds and no other secret, with no KMS permission of its own", () => {
    const roleId = [...refs(resources[projectId()].Properties.ServiceRole)][0]!;
    const stmts = roleStatements(roleId);
    expect(secretsStatements(stmts)).toEqual([{ Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: buildSecrets() }]);
    // Secrets Manager's AWS managed key is used through Secrets Manager: no kms:Decrypt here.
    expect(stmts.flatMap((s) => arr<string>(s.Action)).filter((a) => a.startsWith('kms:'))).toEqual([]);
  });

  test("the worker creates, updates and deletes the secrets of this stack's builds, and reads none; no other function touches them", () => {
    // Its other secrets statement reads the key naming them (below).
    const stmts = secretsStatements(statements('deployWorker')).filter((st) => !refs(st.Resource).has(namesKeyId()) && st.Resource !== '*');
    expect(stmts).toHaveLength(1);
    expect([...arr<string>(stmts[0].Action)].sort()).toEqual([
      'secretsmanager:CreateSecret',
      'secretsmanager:DeleteSecret',
      'secretsmanager:PutSecretValue',
    ]);
    expect(stmts[0].Resource).toEqual(buildSecrets());
    for (const name of ['graphql', 's3', 'gateway', 'preview'] as const) expect(secretsStatements(statements(name))).toEqual([]);
  });

  test('the worker alone may list secrets (for the sweep of what builds left; ListSecrets takes no resource); the project may list neither secrets nor the bucket', () => {
    const listing = everyStatement().filter(({ statement }) => arr<string>(statement.Action).includes('secretsmanager:ListSecrets'));
    expect(listing).toEqual([
      {
        roles: [id(fn('deployWorker').role!)],
        statement: { Sid: 'ListBuildSecrets', Effect: 'Allow', Action: 'secretsmanager:ListSecrets', Resource: '*' },
      },
    ]);
    const roleId = [...refs(resources[projectId()].Properties.ServiceRole)][0]!;
    const actions = roleStatements(roleId).flatMap((st) => arr<string>(st.Action));
    expect(actions.filter((a) => /^s3:List|^secretsmanager:List|^s3:\*|^secretsmanager:\*/.test(a))).toEqual([]);
  });

  /** The stack's secret holding the key that names build secrets. */
  const namesKeyId = () => id(stack.node.findChild('BuildSecretNamesKey'));
  /** Every statement of every policy in the template (role policies, inline or attached), with the roles it applies to. */
  const everyStatement = (): Array<{ roles: string[]; statement: Json }> => [
    ...ofType('AWS::IAM::Policy').flatMap(([, p]) =>
      arr(p.Properties.PolicyDocument.Statement).map((statement: Json) => ({
        roles: arr<Json>(p.Properties.Roles).map((r) => r.Ref),
        statement,
      })),
    ),
    ...ofType('AWS::IAM::Role').flatMap(([roleId, r]) =>
      arr<Json>(r.Properties.Policies).flatMap((p) =>
        arr(p.PolicyDocument.Statement).map((statement: Json) => ({ roles: [roleId], statement })),
      ),
    ),
  ];

  test('a secret of its own holds a random key naming build secrets, outside their prefix, deleted with the stack', () => {
    const key = resources[namesKeyId()];
    expect(key.Type).toBe('AWS::SecretsManager::Secret');
    // 64 letters and digits (no punctuation): about 380 bits.
    expect(key.Properties.GenerateSecretString).toEqual({ PasswordLength: 64, ExcludePunctuation: true });
    // No Name: CloudFormation names it after its logical id, which holds no `/`, so it is never under `cairn/<project>/builds/`.
    expect(key.Properties.Name).toBeUndefined();
    expect(namesKeyId()).toMatch(/^[A-Za-z0-9]+$/);
    // Secrets Manager's own key: only those granted the secret read it.
    expect(key.Properties.KmsKeyId).toBeUndefined();
    // No user data: not among what a deleted stack or a failed first deploy leaves behind.
    expect(key.DeletionPolicy).toBe('Delete');
    expect(key.UpdateReplacePolicy).toBe('Delete');
    template.resourceCountIs('AWS::SecretsManager::RotationSchedule', 0);
    template.resourceCountIs('AWS::SecretsManager::ResourcePolicy', 0);
    // Only the first account's secret is kept (lib/first-account.ts).
    expect(
      ofType('AWS::SecretsManager::Secret')
        .filter(([, r]) => r.DeletionPolicy === 'Retain')
        .map(([lid]) => lid),
    ).toEqual([id(stack.firstAccount.secret)]);
  });

  test("only the worker may read the key's secret, and do nothing else with it; the worker alone is told its ARN", () => {
    const naming = everyStatement().filter(({ statement }) => refs(statement.Resource).has(namesKeyId()));
    expect(naming).toEqual([
      {
        roles: [id(fn('deployWorker').role!)],
        statement: { Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: { Ref: namesKeyId() } },
      },
    ]);
    expect(fnResource('deployWorker').Properties.Environment.Variables.CAIRN_BUILD_SECRET_NAMES_KEY_ARN).toEqual({ Ref: namesKeyId() });
    for (const name of ['graphql', 's3', 'gateway', 'preview'] as const) {
      expect(JSON.stringify(fnResource(name).Properties.Environment.Variables)).not.toContain(namesKeyId());
    }
  });

  test("the project's role has no statement naming the key's secret: its secrets grant is the builds' prefix alone", () => {
    const roleId = [...refs(resources[projectId()].Properties.ServiceRole)][0]!;
    const stmts = roleStatements(roleId);
    for (const s of stmts) expect(refs(s.Resource).has(namesKeyId())).toBe(false);
    expect(secretsStatements(stmts).map((s) => s.Resource)).toEqual([buildSecrets()]);
    expect(resources[roleId].Properties.Policies).toBeUndefined();
  });

  test('build files and staged parts expire from the bucket after a week if nothing removed them', () => {
    const rules = resources[id(stack.data.blockBucket)].Properties.LifecycleConfiguration.Rules;
    expect(rules).toEqual([
      expect.objectContaining({ Prefix: 'deploy-builds/', ExpirationInDays: 7, Status: 'Enabled' }),
      expect.objectContaining({ Prefix: 'part-staging/', ExpirationInDays: 7, Status: 'Enabled' }),
    ]);
  });

  test("CodeBuild's state changes of this project's ended builds invoke the worker", () => {
    template.resourceCountIs('AWS::Events::Rule', 1);
    const [[, rule]] = ofType('AWS::Events::Rule');
    expect(rule.Properties.EventPattern).toEqual({
      source: ['aws.codebuild'],
      'detail-type': ['CodeBuild Build State Change'],
      detail: { 'project-name': [{ Ref: projectId() }], 'build-status': ['SUCCEEDED', 'FAILED', 'FAULT', 'STOPPED', 'TIMED_OUT'] },
    });
    expect(rule.Properties.Targets).toHaveLength(1);
    expect(rule.Properties.Targets[0].Arn).toEqual({ 'Fn::GetAtt': [id(fn('deployWorker')), 'Arn'] });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'events.amazonaws.com',
      FunctionName: { 'Fn::GetAtt': [id(fn('deployWorker')), 'Arn'] },
    });
  });

  test('graphql may send to the queue and stop builds of the project, nothing more of either', () => {
    const stmts = statements('graphql');
    const sqs = stmts.filter((s) => arr<string>(s.Action).some((a) => a.startsWith('sqs:')));
    expect(sqs.flatMap((s) => arr<string>(s.Action)).sort()).toEqual(['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage']);
    for (const s of sqs) expect([...refs(s.Resource)]).toEqual([queueId()]);
    const cb = stmts.filter((s) => arr<string>(s.Action).some((a) => a.startsWith('codebuild:')));
    expect(cb).toEqual([expect.objectContaining({ Action: 'codebuild:StopBuild', Resource: { 'Fn::GetAtt': [projectId(), 'Arn'] } })]);
  });

  test('the worker consumes and sends on the queue, starts, stops and reads builds of the project only', () => {
    const stmts = statements('deployWorker');
    const sqsActions = stmts.filter((s) => arr<string>(s.Action).some((a) => a.startsWith('sqs:')));
    for (const s of sqsActions) expect([...refs(s.Resource)]).toEqual([queueId()]);
    expect(new Set(sqsActions.flatMap((s) => arr<string>(s.Action)))).toEqual(
      new Set([
        'sqs:ReceiveMessage',
        'sqs:ChangeMessageVisibility',
        'sqs:GetQueueUrl',
        'sqs:DeleteMessage',
        'sqs:GetQueueAttributes',
        'sqs:SendMessage',
      ]),
    );
    const cb = stmts.filter((s) => arr<string>(s.Action).some((a) => a.startsWith('codebuild:')));
    expect(cb).toHaveLength(1);
    expect([...arr<string>(cb[0].Action)].sort()).toEqual(['codebuild:BatchGetBuilds', 'codebuild:StartBuild', 'codebuild:StopBuild']);
    expect(cb[0].Resource).toEqual({ 'Fn::GetAtt': [projectId(), 'Arn'] });
    // The dead-letter queue is for operators, not the functions.
    for (const name of FUNCTION_NAMES) expect(access(name).referenced).not.toContain(dlqId());
  });

  test('environment: the queue URL for graphql and the worker, the project and build timeout for the worker only', () => {
    const g = fnResource('graphql').Properties.Environment.Variables;
    const w = fnResource('deployWorker').Properties.Environment.Variables;
    expect(g.CAIRN_DEPLOY_QUEUE_URL).toEqual({ Ref: queueId() });
    expect(w.CAIRN_DEPLOY_QUEUE_URL).toEqual({ Ref: queueId() });
    expect(w.CAIRN_BUILD_PROJECT).toEqual({ Ref: projectId() });
    expect(w.CAIRN_BUILD_TIMEOUT).toBe('900');
    expect(g.CAIRN_BUILD_PROJECT).toBeUndefined();
    for (const name of ['s3', 'gateway'] as const) {
      const vars = fnResource(name).Properties.Environment.Variables;
      expect(vars.CAIRN_DEPLOY_QUEUE_URL).toBeUndefined();
      expect(vars.CAIRN_BUILD_PROJECT).toBeUndefined();
    }
  });

  test('s3, gateway and preview have no queue or CodeBuild permission', () => {
    for (const name of ['s3', 'gateway', 'preview'] as const) {
      expect(access(name).actions.filter((a) => /^(sqs|codebuild):/.test(a))).toEqual([]);
    }
  });
});

// ---------------------------------------------------------------- sites CDN

describe('sites CDN', () => {
  const distributionId = () => id(stack.siteCdn.distribution);
  const kvsId = () => id(stack.siteCdn.siteHosts);
  const functionId = () => id(stack.siteCdn.viewerRequest);
  const gatewayUrlId = () => id(stack.gatewayUrl);

  test('one distribution, one CloudFront Function, one KeyValueStore, one cache policy; no Lambda function of its own', () => {
    // The other distribution and function are the storage API's (part staging, below), with managed policies only.
    template.resourceCountIs('AWS::CloudFront::Distribution', 2);
    template.resourceCountIs('AWS::CloudFront::Function', 2);
    expect(
      ofType('AWS::CloudFront::Distribution')
        .map(([lid]) => lid)
        .sort(),
    ).toEqual([distributionId(), id(stack.partStaging.distribution)].sort());
    template.resourceCountIs('AWS::CloudFront::KeyValueStore', 1);
    template.resourceCountIs('AWS::CloudFront::CachePolicy', 1);
    template.resourceCountIs('AWS::CloudFront::OriginRequestPolicy', 0);
    template.resourceCountIs('AWS::Lambda::Function', 8);
  });

  test('the viewer-request function: JS runtime 2.0, the store associated, the code as the repository has it, published', () => {
    const p = resources[functionId()].Properties;
    expect(p.FunctionConfig.Runtime).toBe('cloudfront-js-2.0');
    expect(p.FunctionConfig.KeyValueStoreAssociations).toEqual([{ KeyValueStoreARN: { 'Fn::GetAtt': [kvsId(), 'Arn'] } }]);
    expect(p.FunctionCode).toBe(fs.readFileSync(VIEWER_REQUEST_CODE_PATH, 'utf8'));
    expect(p.AutoPublish).toBe(true);
    expect(resources[kvsId()].Properties.ImportSource).toBeUndefined();
  });

  test('the distribution: the gateway Function URL (streamed) as its only origin over HTTPS, the function on viewer request, GET/HEAD, HTTPS for viewers', () => {
    const config = resources[distributionId()].Properties.DistributionConfig;
    expect(config.Enabled).toBe(true);
    expect(config.Origins).toHaveLength(1);
    const [origin] = config.Origins;
    expect(origin.DomainName).toEqual({ 'Fn::Select': [2, { 'Fn::Split': ['/', { 'Fn::GetAtt': [gatewayUrlId(), 'FunctionUrl'] }] }] });
    expect(origin.CustomOriginConfig).toMatchObject({ OriginProtocolPolicy: 'https-only', OriginReadTimeout: 60 });
    expect(origin.OriginAccessControlId).toBeUndefined();
    expect(resources[gatewayUrlId()].Properties.InvokeMode).toBe('RESPONSE_STREAM');
    expect(config.CacheBehaviors).toBeUndefined();
    const behavior = config.DefaultCacheBehavior;
    expect(behavior).toMatchObject({
      TargetOriginId: origin.Id,
      ViewerProtocolPolicy: 'redirect-to-https',
      AllowedMethods: ['GET', 'HEAD'],
      CachedMethods: ['GET', 'HEAD'],
      Compress: true,
      CachePolicyId: { Ref: [...refs(behavior.CachePolicyId)][0] },
      FunctionAssociations: [{ EventType: 'viewer-request', FunctionARN: { 'Fn::GetAtt': [functionId(), 'FunctionARN'] } }],
    });
    expect(behavior.OriginRequestPolicyId).toBeUndefined();
    expect(behavior.ForwardedValues).toBeUndefined();
    // Without a sites domain: no alternate domain, CloudFront's own certificate.
    expect(config.Aliases).toBeUndefined();
    expect(config.ViewerCertificate).toBeUndefined();
  });

  test("the cache policy: keyed on the rewritten URI and every query string, no header (the Host stays the origin's) or cookie; TTLs from the gateway", () => {
    const policyId = [...refs(resources[distributionId()].Properties.DistributionConfig.DefaultCacheBehavior.CachePolicyId)][0]!;
    const c = resources[policyId].Properties.CachePolicyConfig;
    expect(c.MinTTL).toBe(0);
    expect(c.DefaultTTL).toBe(0);
    expect(c.MaxTTL).toBe(365 * 86400);
    expect(c.ParametersInCacheKeyAndForwardedToOrigin).toEqual({
      CookiesConfig: { CookieBehavior: 'none' },
      HeadersConfig: { HeaderBehavior: 'none' },
      QueryStringsConfig: { QueryStringBehavior: 'all' },
      EnableAcceptEncodingGzip: true,
      EnableAcceptEncodingBrotli: true,
    });
  });

  test('graphql and the worker may invalidate this distribution and read/write this store, nothing else of CloudFront', () => {
    for (const name of ['graphql', 'deployWorker'] as const) {
      const cf = statements(name).filter((s) => arr<string>(s.Action).some((a) => a.startsWith('cloudfront')));
      const invalidate = cf.filter((s) => arr<string>(s.Action).includes('cloudfront:CreateInvalidation'));
      expect(invalidate).toHaveLength(1);
      expect(arr(invalidate[0].Action)).toEqual(['cloudfront:CreateInvalidation']);
      expect(invalidate[0].Resource).toEqual({
        'Fn::Join': [
          '',
          ['arn:', { Ref: 'AWS::Partition' }, ':cloudfront::', { Ref: 'AWS::AccountId' }, ':distribution/', { Ref: distributionId() }],
        ],
      });
      const store = cf.filter((s) => s !== invalidate[0]);
      expect(store).toHaveLength(1);
      expect([...arr<string>(store[0].Action)].sort()).toEqual([
        'cloudfront-keyvaluestore:DeleteKey',
        'cloudfront-keyvaluestore:DescribeKeyValueStore',
        'cloudfront-keyvaluestore:GetKey',
        'cloudfront-keyvaluestore:PutKey',
      ]);
      expect(store[0].Resource).toEqual({ 'Fn::GetAtt': [kvsId(), 'Arn'] });
    }
  });

  test('the gateway, the S3 and the preview function have no CloudFront permission, and nothing of the CDN in their environment', () => {
    for (const name of ['gateway', 's3', 'preview'] as const) {
      expect(access(name).actions.filter((a) => a.startsWith('cloudfront'))).toEqual([]);
      const vars = fnResource(name).Properties.Environment.Variables;
      expect(vars.CAIRN_CDN_DISTRIBUTION_ID).toBeUndefined();
      expect(vars.CAIRN_SITE_HOSTS_KVS_ARN).toBeUndefined();
      expect(vars.CAIRN_SITES_DOMAIN).toBeUndefined();
      expect(refs(fnResource(name).Properties)).not.toContain(distributionId());
    }
  });

  test("graphql and the worker are told the distribution, the store and (without a sites domain) the distribution's domain", () => {
    for (const name of ['graphql', 'deployWorker'] as const) {
      const vars = fnResource(name).Properties.Environment.Variables;
      expect(vars.CAIRN_CDN_DISTRIBUTION_ID).toEqual({ Ref: distributionId() });
      expect(vars.CAIRN_SITE_HOSTS_KVS_ARN).toEqual({ 'Fn::GetAtt': [kvsId(), 'Arn'] });
      expect(vars.CAIRN_SITES_DOMAIN).toEqual({ 'Fn::GetAtt': [distributionId(), 'DomainName'] });
    }
  });

  test('outputs: the sites domain, the distribution domain to point it at, and the distribution id', () => {
    expect(outputs.SitesDomain.Value).toEqual({ 'Fn::GetAtt': [distributionId(), 'DomainName'] });
    expect(outputs.SitesCdnDomainName.Value).toEqual({ 'Fn::GetAtt': [distributionId(), 'DomainName'] });
    expect(outputs.SitesDistributionId.Value).toEqual({ Ref: distributionId() });
  });
});

describe('sites CDN with a sites domain', () => {
  const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };
  const CERT = 'arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-1111-2222-3333-444455556666';
  const apps: App[] = [];
  const synth = (props: ConstructorParameters<typeof CairnStack>[2]) => {
    const app = new App({ context: NO_BUNDLING });
    apps.push(app);
    const s = new CairnStack(app, `CairnSites${apps.length}`, props);
    return { s, json: Template.fromStack(s).toJSON() };
  };
  afterAll(() => {
    for (const a of apps) fs.rmSync(a.outdir, { recursive: true, force: true });
  });

  test('the wildcard alternate domain with the us-east-1 certificate, SNI and TLS 1.2; every function told the domain', () => {
    const { s, json } = synth({ sitesDomain: 'Sites.Example.com.', sitesCertificateArn: CERT });
    const dist = json.Resources[s.getLogicalId(s.siteCdn.distribution.node.defaultChild as CfnElement)].Properties.DistributionConfig;
    expect(dist.Aliases).toEqual(['*.sites.example.com']);
    expect(dist.ViewerCertificate).toEqual({
      AcmCertificateArn: CERT,
      SslSupportMethod: 'sni-only',
      MinimumProtocolVersion: 'TLSv1.2_2021',
    });
    for (const name of ['graphql', 's3', 'gateway', 'deployWorker'] as const) {
      const vars = json.Resources[s.getLogicalId(s.functions[name].node.defaultChild as CfnElement)].Properties.Environment.Variables;
      expect(vars.CAIRN_SITES_DOMAIN).toBe('sites.example.com');
    }
    expect(json.Outputs.SitesDomain.Value).toBe('sites.example.com');
  });

  test.each([
    [{ sitesDomain: 'sites.example.com' }, /go together/],
    [{ sitesCertificateArn: CERT }, /go together/],
    [{ sitesDomain: 'sites.example.com', sitesCertificateArn: CERT.replace('us-east-1', 'eu-west-1') }, /us-east-1/],
    [{ sitesDomain: 'https://sites.example.com', sitesCertificateArn: CERT }, /domain name/],
    [{ sitesDomain: '*.sites.example.com', sitesCertificateArn: CERT }, /domain name/],
  ])('%j is refused at synthesis', (props, message) => {
    expect(() => synth(props)).toThrow(message);
  });
});

// ---------------------------------------------------------------- sign-in and mail

describe('OIDC sign-in and e-mail: settings from context, their secrets in Secrets Manager', () => {
  const apps: App[] = [];
  const synth = (context: Record<string, string>) => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [], ...context } });
    apps.push(app);
    const s = new CairnStack(app, `CairnSignIn${apps.length}`);
    return { s, json: Template.fromStack(s).toJSON() };
  };
  afterAll(() => {
    for (const a of apps) fs.rmSync(a.outdir, { recursive: true, force: true });
  });
  const SETTINGS = {
    'cairn:oidcIssuer': 'https://accounts.example.org',
    'cairn:oidcClientId': 'cairn-web',
    'cairn:oidcName': 'Example ID',
    'cairn:mailFrom': 'Cairn <cairn@example.org>',
  };
  const EXISTING = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:ops/cairn-settings-Ab12Cd';
  const logicalId = (s: CairnStack, c: IConstruct) => s.getLogicalId(c.node.defaultChild as CfnElement);
  const variablesOf = (json: Json, s: CairnStack, f: IFunction) => json.Resources[logicalId(s, f)].Properties.Environment.Variables;
  /** Every statement of every policy in the template that names `arn` (a string or a Ref to the secret). */
  const statementsNaming = (json: Json, arn: Json) =>
    Object.entries(json.Resources as Record<string, Json>)
      .filter(([, r]) => r.Type === 'AWS::IAM::Policy')
      .flatMap(([policyId, r]) =>
        arr<Json>(r.Properties.PolicyDocument.Statement)
          .filter((st) => JSON.stringify(st.Resource).includes(JSON.stringify(arn)))
          .map((st) => ({ policyId, roles: r.Properties.Roles, st })),
      );
  const roleRefOf = (s: CairnStack, f: IFunction) => ({ Ref: s.getLogicalId(f.role!.node.defaultChild as CfnElement) });

  test('none asked for: no settings secret, no grant, no variable (the template as it was)', () => {
    expect(ofType('AWS::SecretsManager::Secret').map(([rid]) => rid)).not.toContainEqual(expect.stringMatching(/^SettingsSecret/));
    const vars = fnResource('graphql').Properties.Environment.Variables;
    for (const name of [
      'CAIRN_OIDC_ISSUER',
      'CAIRN_OIDC_CLIENT_ID',
      'CAIRN_OIDC_CLIENT_SECRET',
      'CAIRN_SMTP_URL',
      'CAIRN_MAIL_FROM',
      'CAIRN_SETTINGS_SECRET_ARN',
    ])
      expect(vars[name]).toBeUndefined();
    expect(outputs.SettingsSecretArn).toBeUndefined();
    expect(
      statements('graphql')
        .flatMap((st) => arr<string>(st.Action))
        .filter((a) => a.startsWith('secretsmanager:')),
    ).toEqual([]);
    expect(stack.signInSettings).toEqual({});
  });

  test('asked for: the GraphQL function told the issuer, client id, name and sender, and the ARN of a secret the stack makes empty', () => {
    const { s, json } = synth(SETTINGS);
    const secret = s.signInSettings.secret!;
    const secretId = logicalId(s, secret);
    expect(json.Resources[secretId].Type).toBe('AWS::SecretsManager::Secret');
    // The placeholder, no value: the operator puts the secrets in after the deploy; the AWS managed key encrypts it.
    expect(json.Resources[secretId].Properties.SecretString).toBe('{}');
    expect(json.Resources[secretId].Properties.KmsKeyId).toBeUndefined();
    expect(variablesOf(json, s, s.functions.graphql)).toMatchObject({
      CAIRN_OIDC_ISSUER: 'https://accounts.example.org',
      CAIRN_OIDC_CLIENT_ID: 'cairn-web',
      CAIRN_OIDC_NAME: 'Example ID',
      CAIRN_MAIL_FROM: 'Cairn <cairn@example.org>',
      CAIRN_SETTINGS_SECRET_ARN: { Ref: secretId },
    });
    expect(json.Outputs.SettingsSecretArn.Value).toEqual({ Ref: secretId });
    expect(json.Outputs.SettingsSecretArn.Description).toMatch(/put-secret-value/);
    // The other functions are told nothing of it.
    for (const name of ['s3', 'gateway', 'deployWorker', 'preview'] as const) {
      const vars = variablesOf(json, s, s.functions[name]);
      expect(Object.keys(vars).filter((v) => /OIDC|SMTP|MAIL|SETTINGS_SECRET/.test(v))).toEqual([]);
    }
  });

  test("the grant: GetSecretValue on exactly that secret, to the GraphQL function's role alone", () => {
    const { s, json } = synth(SETTINGS);
    const naming = statementsNaming(json, { Ref: logicalId(s, s.signInSettings.secret!) });
    expect(naming).toHaveLength(1);
    expect(naming[0]!.roles).toEqual([roleRefOf(s, s.functions.graphql)]);
    expect(naming[0]!.st).toEqual({
      Effect: 'Allow',
      Action: 'secretsmanager:GetSecretValue',
      Resource: { Ref: logicalId(s, s.signInSettings.secret!) },
    });
  });

  test("an operator's secret by ARN: none made, the grant and the variable on that ARN", () => {
    const { s, json } = synth({
      'cairn:oidcIssuer': 'https://id.example.org/realms/x',
      'cairn:oidcClientId': 'c',
      'cairn:settingsSecretArn': EXISTING,
    });
    expect(s.signInSettings.secret).toBeUndefined();
    const secrets = Object.values(json.Resources as Record<string, Json>).filter((r) => r.Type === 'AWS::SecretsManager::Secret');
    expect(secrets).toHaveLength(ofType('AWS::SecretsManager::Secret').length);
    expect(json.Outputs.SettingsSecretArn).toBeUndefined();
    expect(variablesOf(json, s, s.functions.graphql).CAIRN_SETTINGS_SECRET_ARN).toBe(EXISTING);
    const naming = statementsNaming(json, EXISTING);
    expect(naming.map((n) => [n.roles, n.st.Action])).toEqual([[[roleRefOf(s, s.functions.graphql)], 'secretsmanager:GetSecretValue']]);
    expect(naming[0]!.st.Resource).toBe(EXISTING);
  });

  test('no secret value in any environment, output or resource of the template', () => {
    for (const context of [SETTINGS, { ...SETTINGS, 'cairn:settingsSecretArn': EXISTING }]) {
      const { json } = synth(context);
      const text = JSON.stringify(json);
      expect(text).not.toMatch(/CAIRN_OIDC_CLIENT_SECRET"\s*:|CAIRN_SMTP_URL"\s*:/);
      expect(text).not.toMatch(/smtps?:\/\/[^"'\s]*@/);
      for (const r of Object.values(json.Resources as Record<string, Json>)) {
        const vars = r.Properties?.Environment?.Variables ?? {};
        expect(Object.keys(vars).filter((v) => v === 'CAIRN_OIDC_CLIENT_SECRET' || v === 'CAIRN_SMTP_URL')).toEqual([]);
      }
    }
  });

  test.each([
    [{ 'cairn:oidcIssuer': 'https://accounts.example.org' }, /go together/],
    [{ 'cairn:oidcClientId': 'c' }, /go together/],
    [{ 'cairn:oidcIssuer': 'http://accounts.example.org', 'cairn:oidcClientId': 'c' }, /https issuer/],
    [{ 'cairn:oidcName': 'Example' }, /with cairn:oidcIssuer/],
    [{ 'cairn:mailFrom': 'not an address' }, /cairn:mailFrom/],
    [
      { 'cairn:mailFrom': 'a@example.org', 'cairn:settingsSecretArn': 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:ops/cairn' },
      /complete ARN/,
    ],
  ])('%j is refused at synthesis', (context, message) => {
    expect(() => synth(context)).toThrow(message);
  });
});

// ---------------------------------------------------------------- part staging

describe('part staging: the storage API behind CloudFront, UploadParts over 4 MiB into the bucket', () => {
  const ps = () => stack.partStaging;
  const MANAGED_CACHING_DISABLED = '4135ea2d-6df8-44a3-9df3-4b5a84be39ad';
  const MANAGED_ALL_VIEWER_EXCEPT_HOST_HEADER = 'b689b0a8-53d0-40ab-baf2-68738e2966ac';

  /**
   * A template value with its intrinsic functions worked out: pseudo parameters by name, a stage's Ref as
   * its name, any other Ref as `<LogicalId>`, GetAtt as `<LogicalId.Attribute>`.
   */
  function evaluate(value: Json): Json {
    if (Array.isArray(value)) return value.map(evaluate);
    if (!value || typeof value !== 'object') return value;
    if ('Ref' in value) {
      const pseudo: Record<string, string> = {
        'AWS::Partition': 'aws',
        'AWS::Region': 'REGION',
        'AWS::URLSuffix': 'amazonaws.com',
        'AWS::AccountId': 'ACCOUNT',
      };
      if (pseudo[value.Ref]) return pseudo[value.Ref];
      const r = resources[value.Ref];
      return r?.Type === 'AWS::ApiGateway::Stage' ? r.Properties.StageName : `<${value.Ref}>`;
    }
    if ('Fn::GetAtt' in value) return `<${value['Fn::GetAtt'].join('.')}>`;
    if ('Fn::Join' in value) return (evaluate(value['Fn::Join'][1]) as string[]).join(value['Fn::Join'][0]);
    if ('Fn::Split' in value) return String(evaluate(value['Fn::Split'][1])).split(value['Fn::Split'][0]);
    if ('Fn::Select' in value) return (evaluate(value['Fn::Select'][1]) as string[])[value['Fn::Select'][0]];
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, evaluate(v)]));
  }

  /** Whether an IAM pattern (`*`, `?`) matches a value. */
  const iamMatch = (pattern: string, value: string) =>
    new RegExp(
      `^${pattern
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '.*')
        .replace(/\?/g, '.')}$`,
    ).test(value);

  /** Whether some Allow statement grants `action` on `resource` (both as evaluated). */
  function allows(stmts: Json[], action: string, resource: string): boolean {
    return stmts.some(
      (s) =>
        s.Effect === 'Allow' &&
        arr<string>(s.Action).some((a) => iamMatch(a, action)) &&
        arr<Json>(s.Resource).some((r) => iamMatch(String(evaluate(r)), resource)),
    );
  }

  const bucketArn = () => `<${id(stack.data.blockBucket)}.Arn>`;
  const restApiId = () => id(stack.storageApi.api);

  test('the distribution: the storage API as its one origin over HTTPS, its stage as the origin path; every method; nothing cached; every viewer header but Host; the function on viewer request', () => {
    const config = resources[id(ps().distribution)].Properties.DistributionConfig;
    expect(config.Enabled).toBe(true);
    expect(config.Origins).toHaveLength(1);
    const [origin] = config.Origins;
    expect(evaluate(origin.DomainName)).toBe(`<${restApiId()}>.execute-api.REGION.amazonaws.com`);
    // Clients sign /<bucket>/<key> on the distribution; the API sees /s3/<bucket>/<key>.
    expect(evaluate(origin.OriginPath)).toBe('/s3');
    expect(origin.CustomOriginConfig).toMatchObject({ OriginProtocolPolicy: 'https-only', OriginReadTimeout: 60 });
    expect(config.CacheBehaviors).toBeUndefined();
    const behavior = config.DefaultCacheBehavior;
    expect(behavior).toMatchObject({
      TargetOriginId: origin.Id,
      ViewerProtocolPolicy: 'https-only',
      CachePolicyId: MANAGED_CACHING_DISABLED,
      OriginRequestPolicyId: MANAGED_ALL_VIEWER_EXCEPT_HOST_HEADER,
      Compress: false,
      FunctionAssociations: [{ EventType: 'viewer-request', FunctionARN: { 'Fn::GetAtt': [id(ps().viewerRequest), 'FunctionARN'] } }],
    });
    expect([...behavior.AllowedMethods].sort()).toEqual(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT']);
    expect(behavior.ForwardedValues).toBeUndefined();
    expect(config.Aliases).toBeUndefined();
  });

  test('the viewer-request function: JS runtime 2.0, the code as the repository has it, no store, published', () => {
    const p = resources[id(ps().viewerRequest)].Properties;
    expect(p.FunctionConfig.Runtime).toBe('cloudfront-js-2.0');
    expect(p.FunctionConfig.KeyValueStoreAssociations).toBeUndefined();
    expect(p.FunctionCode).toBe(fs.readFileSync(path.join(PROJECT_ROOT, 'functions', 'cdn', 's3-viewer-request.js'), 'utf8'));
    expect(p.AutoPublish).toBe(true);
  });

  test('PUT /_parts/{proxy+} on the storage API, behind the REQUEST authoriser (its own function, result cache off)', () => {
    const method = resources[id(ps().method)].Properties;
    expect(method.HttpMethod).toBe('PUT');
    expect(method.RestApiId).toEqual({ Ref: restApiId() });
    const proxy = resources[method.ResourceId.Ref];
    expect(proxy.Properties.PathPart).toBe('{proxy+}');
    const parts = resources[proxy.Properties.ParentId.Ref];
    expect(parts.Properties).toEqual({
      ParentId: { 'Fn::GetAtt': [restApiId(), 'RootResourceId'] },
      PathPart: '_parts',
      RestApiId: { Ref: restApiId() },
    });
    expect(method.AuthorizationType).toBe('CUSTOM');
    const authorizer = resources[method.AuthorizerId.Ref];
    expect(authorizer.Type).toBe('AWS::ApiGateway::Authorizer');
    expect(authorizer.Properties).toMatchObject({ Type: 'REQUEST', AuthorizerResultTtlInSeconds: 0, RestApiId: { Ref: restApiId() } });
    // No identity source: every request reaches the authoriser, whose Deny is S3's AccessDenied.
    expect(authorizer.Properties.IdentitySource || '').toBe('');
    expect(authorizer.Properties.AuthorizerCredentials).toBeUndefined();
    // Invoked through Lambda's Invoke (its region and partition are read from the function's ARN).
    expect(refs(authorizer.Properties.AuthorizerUri)).toEqual(new Set([id(ps().authorizerFunction)]));
    expect(evaluate(authorizer.Properties.AuthorizerUri)).toMatch(
      new RegExp(`:lambda:path/2015-03-31/functions/<${id(ps().authorizerFunction)}\\.Arn>/invocations$`),
    );
    // API Gateway may invoke the authoriser, from this authoriser of this API only.
    const permissions = ofType('AWS::Lambda::Permission').filter(([, p]) =>
      refs(p.Properties.FunctionName).has(id(ps().authorizerFunction)),
    );
    expect(permissions).toHaveLength(1);
    expect(permissions[0]![1].Properties.Principal).toBe('apigateway.amazonaws.com');
    expect(evaluate(permissions[0]![1].Properties.SourceArn)).toBe(
      `arn:aws:execute-api:REGION:ACCOUNT:<${restApiId()}>/authorizers/<${method.AuthorizerId.Ref}>`,
    );
  });

  test('the S3 integration: PUT <bucket>/part-staging/{uploadId}/{partNumber} from the query, the staged headers as metadata, with its own role', () => {
    const method = resources[id(ps().method)].Properties;
    const integration = method.Integration;
    expect(integration.Type).toBe('AWS');
    expect(integration.IntegrationHttpMethod).toBe('PUT');
    expect(evaluate(integration.Uri)).toBe(
      `arn:aws:apigateway:REGION:s3:path/<${id(stack.data.blockBucket)}>/part-staging/{uploadId}/{partNumber}`,
    );
    expect(integration.Credentials).toEqual({ 'Fn::GetAtt': [id(ps().integrationRole), 'Arn'] });
    // The body goes as it came: no mapping template, no conversion.
    expect(integration.PassthroughBehavior).toBe('WHEN_NO_TEMPLATES');
    expect(integration.RequestTemplates).toBeUndefined();
    expect(integration.ContentHandling).toBeUndefined();
    expect(integration.RequestParameters).toEqual({
      'integration.request.path.uploadId': 'method.request.querystring.uploadId',
      'integration.request.path.partNumber': 'method.request.querystring.partNumber',
      // The Authorization the client signed comes as the CloudFront Function's copy; the rest under their own names.
      'integration.request.header.x-amz-meta-authorization': 'method.request.header.x-cairn-viewer-authorization',
      ...Object.fromEntries(
        STAGED_HEADERS.filter((h) => h !== 'authorization').map((h) => [
          `integration.request.header.x-amz-meta-${h}`,
          `method.request.header.${h}`,
        ]),
      ),
    });
    expect(Object.keys(integration.RequestParameters)).toHaveLength(2 + STAGED_HEADERS.length);
    // Every mapped source is declared on the method; the query's two are required.
    for (const source of Object.values<string>(integration.RequestParameters)) expect(method.RequestParameters).toHaveProperty([source]);
    expect(method.RequestParameters['method.request.querystring.uploadId']).toBe(true);
    expect(method.RequestParameters['method.request.querystring.partNumber']).toBe(true);
  });

  test("S3's ETag is answered on success, and any other answer of S3 is an S3 InternalError (500), never a 200 without an ETag", () => {
    const { Integration: integration, MethodResponses: methodResponses } = resources[id(ps().method)].Properties;
    const ok = integration.IntegrationResponses.find((r: Json) => r.StatusCode === '200');
    expect(ok).toEqual({
      StatusCode: '200',
      SelectionPattern: '2\\d{2}',
      ResponseParameters: { 'method.response.header.ETag': 'integration.response.header.ETag' },
    });
    expect(new RegExp(`^${ok.SelectionPattern}$`).test('200')).toBe(true);
    expect(new RegExp(`^${ok.SelectionPattern}$`).test('403')).toBe(false);
    const fallback = integration.IntegrationResponses.filter((r: Json) => r.SelectionPattern === undefined);
    expect(fallback).toHaveLength(1);
    expect(fallback[0].StatusCode).toBe('500');
    expect(fallback[0].ResponseParameters).toEqual({ 'method.response.header.Content-Type': "'application/xml'" });
    for (const body of Object.values<string>(fallback[0].ResponseTemplates)) expect(body).toContain('<Error><Code>InternalError</Code>');
    expect(methodResponses).toEqual([
      { StatusCode: '200', ResponseParameters: { 'method.response.header.ETag': true } },
      { StatusCode: '500', ResponseParameters: { 'method.response.header.Content-Type': true } },
    ]);
  });

  test("the integration's role: assumed by API Gateway, one statement, s3:PutObject under part-staging/ of the block bucket", () => {
    const roleId = id(ps().integrationRole);
    const role = resources[roleId].Properties;
    expect(role.AssumeRolePolicyDocument.Statement).toEqual([
      { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'apigateway.amazonaws.com' } },
    ]);
    expect(role.ManagedPolicyArns).toBeUndefined();
    expect(role.Policies).toBeUndefined();
    const policies = ofType('AWS::IAM::Policy').filter(([, p]) => arr(p.Properties.Roles).some((r: Json) => r.Ref === roleId));
    expect(policies).toHaveLength(1);
    const stmts = arr<Json>(policies[0]![1].Properties.PolicyDocument.Statement);
    expect(stmts.map((s) => ({ ...s, Resource: evaluate(s.Resource) }))).toEqual([
      { Action: 's3:PutObject', Effect: 'Allow', Resource: `${bucketArn()}/part-staging/*` },
    ]);
    expect(allows(stmts, 's3:PutObject', `${bucketArn()}/datastore/version`)).toBe(false);
    // No other integration or authoriser runs with a role.
    const withRoles = ofType('AWS::ApiGateway::Method').filter(([, m]) => m.Properties.Integration?.Credentials !== undefined);
    expect(withRoles.map(([lid]) => lid)).toEqual([id(ps().method)]);
  });

  test("the authoriser's function: its own role reading the accounts and objects tables, opening key pairs' secrets; no writes, no bucket", () => {
    const p = resources[id(ps().authorizerFunction)].Properties;
    expect(p.Runtime).toBe('nodejs24.x');
    expect(p.Architectures).toEqual(['arm64']);
    expect(p.TracingConfig).toEqual({ Mode: 'Active' });
    expect(p.Timeout).toBeLessThanOrEqual(29);
    expect(p.Environment.Variables.CAIRN_PART_STAGING_BUCKET).toBeUndefined();
    const roleId = id(ps().authorizerFunction.role!);
    expect(FUNCTION_NAMES.map((n) => id(fn(n).role!))).not.toContain(roleId);
    const stmts = ofType('AWS::IAM::Policy')
      .filter(([, pol]) => arr(pol.Properties.Roles).some((r: Json) => r.Ref === roleId))
      .flatMap(([, pol]) => arr<Json>(pol.Properties.PolicyDocument.Statement));
    const tableIds = new Map(TABLES.map((t) => [id(stack.data.tables[t.name]), t.name]));
    const touched = new Set(stmts.flatMap((s) => [...refs(s.Resource)].filter((r) => tableIds.has(r)).map((r) => tableIds.get(r))));
    expect([...touched].sort()).toEqual(['accounts', 'objects']);
    const actions = stmts.flatMap((s) => arr<string>(s.Action));
    expect(actions.filter((a) => DDB_WRITE.includes(a) || /^(s3|dynamodb):\*$|^s3:/.test(a))).toEqual([]);
    expect(actions.filter((a) => a.startsWith('kms:'))).toEqual(['kms:Decrypt']);
    for (const a of actions) expect(a).toMatch(/^(dynamodb:[A-Za-z]+|kms:Decrypt|xray:PutTraceSegments|xray:PutTelemetryRecords)$/);
  });

  test("the edge key: a random secret's value (by dynamic reference) sent by the distribution as an origin header, and told to the S3 function and the authoriser only", () => {
    const secretId = id(ps().edgeKey);
    const secret = resources[secretId];
    expect(secret.Type).toBe('AWS::SecretsManager::Secret');
    expect(secret.Properties.GenerateSecretString).toEqual({ PasswordLength: 64, ExcludePunctuation: true });
    expect(secret.DeletionPolicy).toBe('Delete');
    const reference = `{{resolve:secretsmanager:<${secretId}>:SecretString:::}}`;
    const [origin] = resources[id(ps().distribution)].Properties.DistributionConfig.Origins;
    expect(evaluate(origin.OriginCustomHeaders)).toEqual([{ HeaderName: 'x-cairn-edge-key', HeaderValue: reference }]);
    expect(evaluate(fnResource('s3').Properties.Environment.Variables.CAIRN_EDGE_KEY)).toBe(reference);
    expect(evaluate(resources[id(ps().authorizerFunction)].Properties.Environment.Variables.CAIRN_EDGE_KEY)).toBe(reference);
    for (const name of FUNCTION_NAMES.filter((n) => n !== 's3')) {
      expect(fnResource(name).Properties.Environment.Variables.CAIRN_EDGE_KEY).toBeUndefined();
    }
    // Nowhere else: no output, no other resource, and no role may read the secret at run time.
    const holders = Object.entries(resources)
      .filter(([, r]) => JSON.stringify(r).includes('resolve:secretsmanager'))
      .map(([lid]) => lid)
      .sort();
    expect(holders).toEqual([id(ps().distribution), id(fn('s3')), id(ps().authorizerFunction)].sort());
    expect(JSON.stringify(outputs)).not.toContain(secretId);
    expect(ofType('AWS::IAM::Policy').filter(([, p]) => refs(p.Properties.PolicyDocument).has(secretId))).toEqual([]);
  });

  test('the S3 function is told the bucket of staged parts, and may read, list and remove them', () => {
    const vars = fnResource('s3').Properties.Environment.Variables;
    expect(vars.CAIRN_PART_STAGING_BUCKET).toEqual({ Ref: id(stack.data.blockBucket) });
    for (const name of FUNCTION_NAMES.filter((n) => n !== 's3')) {
      expect(fnResource(name).Properties.Environment.Variables.CAIRN_PART_STAGING_BUCKET).toBeUndefined();
    }
    const stmts = statements('s3');
    const part = `${bucketArn()}/part-staging/upload123/2`;
    // functions/aws/s3-staged-parts.ts: HeadObject and GetObject (If-Match), ListObjectsV2 under the upload's prefix, DeleteObjects.
    expect(allows(stmts, 's3:GetObject', part)).toBe(true);
    expect(allows(stmts, 's3:DeleteObject', part)).toBe(true);
    expect(allows(stmts, 's3:ListBucket', bucketArn())).toBe(true);
    // The check itself fails on what is not granted.
    expect(allows(stmts, 's3:GetObject', '<SomeOtherBucket.Arn>/part-staging/upload123/2')).toBe(false);
  });
});

// ---------------------------------------------------------------- outputs

describe('outputs', () => {
  test('GraphqlUrl, StorageEndpoint, GatewayUrl, BlockBucketName and each table name', () => {
    const expected = ['GraphqlUrl', 'StorageEndpoint', 'GatewayUrl', 'BlockBucketName', ...TABLES.map((t) => `${pascal(t.name)}TableName`)];
    expect(Object.keys(outputs)).toEqual(expect.arrayContaining(expected));

    const [[apiId]] = ofType('AWS::ApiGatewayV2::Api');
    expect(outputs.GraphqlUrl.Value).toEqual({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [apiId, 'ApiEndpoint'] }, '/graphql']] });
    expect(outputs.BlockBucketName.Value).toEqual({ Ref: id(stack.data.blockBucket) });
    // The storage API's distribution, through which parts over 4 MiB are staged.
    const cdn = { 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [id(stack.partStaging.distribution), 'DomainName'] }]] };
    expect(outputs.StorageEndpoint.Value).toEqual(cdn);
    expect(outputs.StorageCdnUrl.Value).toEqual(cdn);
    // The S3 API's own address, still an output: the stage is part of the path clients sign.
    expect(outputs.StorageApiUrl.Value).toEqual({
      'Fn::Join': [
        '',
        [
          'https://',
          { Ref: id(stack.storageApi.api) },
          '.execute-api.',
          { Ref: 'AWS::Region' },
          '.',
          { Ref: 'AWS::URLSuffix' },
          '/',
          { Ref: id(stack.storageApi.stage) },
        ],
      ],
    });
    const urlId = [...refs(outputs.GatewayUrl.Value)][0];
    expect(resources[urlId].Type).toBe('AWS::Lambda::Url');
    expect(refs(resources[urlId].Properties.TargetFunctionArn)).toContain(id(fn('gateway')));
    for (const t of TABLES) {
      expect(outputs[`${pascal(t.name)}TableName`].Value).toEqual({ Ref: id(stack.data.tables[t.name]) });
    }
  });
});
