/**
 * lib/monitoring.ts and lib/data.ts in a small stack of their own: the
 * alarm topic (KMS-encrypted, TLS-only, CloudWatch allowed, an email from
 * context), every alarm with its metric, threshold, periods, missing-data
 * rule and actions, the dashboard's widgets, the tables' and bucket's
 * protection, and cdk-nag's AwsSolutions checks over both constructs.
 */
import { App, Stack, type CfnElement } from 'aws-cdk-lib';
import { LambdaIntegration, RestApi } from 'aws-cdk-lib/aws-apigateway';
import { HttpApi, HttpMethod } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Architecture, Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { TABLES } from '../../functions/core/data/tables.js';
import { METRICS_NAMESPACE as RUNTIME_NAMESPACE, METRICS_SERVICE as RUNTIME_SERVICE } from '../../functions/core/observability.js';
import { CairnData } from '../../lib/data.js';
import {
  ALARM_EMAIL_CONTEXT,
  ALARM_TOPIC_OUTPUT,
  API_5XX_PERCENT,
  DASHBOARD_OUTPUT,
  API_MIN_REQUESTS,
  CairnMonitoring,
  METRICS_NAMESPACE,
  METRICS_SERVICE,
} from '../../lib/monitoring.js';

type Json = any;

const FUNCTION_NAMES = ['graphql', 's3', 'gateway', 'deployWorker', 'preview'] as const;

interface Fixture {
  stack: Stack;
  data: CairnData;
  monitoring: CairnMonitoring;
  functions: Record<string, LambdaFunction>;
  deadLetters: Queue;
  httpApi?: HttpApi;
  restApi?: RestApi;
  template: Template;
  resources: Record<string, Json>;
}

function build(options: { context?: Record<string, unknown>; apis?: boolean; publicObjects?: boolean; alarmEmail?: string } = {}): Fixture {
  const app = new App({ context: options.context ?? {} });
  const stack = new Stack(app, 'MonitoringTest', { env: { account: '123456789012', region: 'us-east-1' } });
  const data = new CairnData(stack, 'Data');
  const functions: Record<string, LambdaFunction> = {};
  for (const name of FUNCTION_NAMES) {
    functions[name] = new LambdaFunction(stack, `Fn${name}`, {
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      handler: 'index.handler',
      code: Code.fromInline('exports.handler = async () => ({ statusCode: 200 });'),
    });
  }
  const deadLetters = new Queue(stack, 'DeployDeadLetters');
  let httpApi: HttpApi | undefined;
  let restApi: RestApi | undefined;
  if (options.apis !== false) {
    httpApi = new HttpApi(stack, 'Api');
    httpApi.addRoutes({
      path: '/graphql',
      methods: [HttpMethod.ANY],
      integration: new HttpLambdaIntegration('Graphql', functions.graphql!),
    });
    restApi = new RestApi(stack, 'StorageApi');
    restApi.root.addProxy({ defaultIntegration: new LambdaIntegration(functions.s3!) });
  }
  let publicObjectsApi: RestApi | undefined;
  if (options.publicObjects) {
    publicObjectsApi = new RestApi(stack, 'PublicObjects');
    publicObjectsApi.root.addProxy({ defaultIntegration: new LambdaIntegration(functions.gateway!) });
  }
  const monitoring = new CairnMonitoring(stack, 'Monitoring', {
    functions,
    deployDeadLetterQueue: deadLetters,
    httpApi,
    restApi,
    publicObjectsApi,
    tables: data.tables,
    alarmEmail: options.alarmEmail,
  });
  const template = Template.fromStack(stack);
  return { stack, data, monitoring, functions, deadLetters, httpApi, restApi, template, resources: template.toJSON().Resources };
}

const idOf = (stack: Stack, construct: { node: { defaultChild?: unknown } } | CfnElement) =>
  stack.resolve(
    stack.getLogicalId(('node' in construct && construct.node.defaultChild ? construct.node.defaultChild : construct) as CfnElement),
  ) as string;

let f: Fixture;
beforeAll(() => {
  f = build({ context: { [ALARM_EMAIL_CONTEXT]: 'ops@example.com' } });
});

const alarmsOf = (fx: Fixture) => Object.entries(fx.resources).filter(([, r]) => r.Type === 'AWS::CloudWatch::Alarm');
const alarmProps = (fx: Fixture, key: string) => fx.resources[idOf(fx.stack, fx.monitoring.alarms[key]!)].Properties;

describe('the alarm topic', () => {
  test('encrypted with a rotating key CloudWatch may use, and TLS-only', () => {
    const topicId = idOf(f.stack, f.monitoring.topic);
    const keyId = idOf(f.stack, f.monitoring.topicKey as unknown as CfnElement);
    const topic = f.resources[topicId];
    expect(topic.Properties.KmsMasterKeyId).toEqual({ 'Fn::GetAtt': [keyId, 'Arn'] });
    const key = f.resources[keyId];
    expect(key.Properties.EnableKeyRotation).toBe(true);
    expect(key.Properties.KeyPolicy.Statement).toContainEqual(
      expect.objectContaining({
        Effect: 'Allow',
        Principal: { Service: 'cloudwatch.amazonaws.com' },
        Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
      }),
    );
    // The topic's key is the monitoring's own: removed with the stack (after AWS's waiting period), unlike the data's.
    expect(key.DeletionPolicy).toBe('Delete');
    expect(key.Properties.PendingWindowInDays).toBe(7);

    const [policy] = Object.values(f.resources).filter((r: Json) => r.Type === 'AWS::SNS::TopicPolicy');
    expect(policy.Properties.Topics).toEqual([{ Ref: topicId }]);
    const statements: Json[] = policy.Properties.PolicyDocument.Statement;
    expect(statements).toContainEqual(
      expect.objectContaining({
        Effect: 'Deny',
        Action: 'sns:Publish',
        Condition: { Bool: { 'aws:SecureTransport': 'false' } },
        Principal: '*',
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Effect: 'Allow',
        Action: 'sns:Publish',
        Principal: { Service: 'cloudwatch.amazonaws.com' },
        Condition: {
          ArnLike: {
            'aws:SourceArn': { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':cloudwatch:us-east-1:123456789012:alarm:*']] },
          },
          StringEquals: { 'aws:SourceAccount': '123456789012' },
        },
      }),
    );
  });

  test("the topic's ARN and the dashboard's address are stack outputs", () => {
    const outputs = f.template.toJSON().Outputs;
    expect(outputs[ALARM_TOPIC_OUTPUT].Value).toEqual({ Ref: idOf(f.stack, f.monitoring.topic) });
    expect(outputs[DASHBOARD_OUTPUT].Value).toBe(
      'https://us-east-1.console.aws.amazon.com/cloudwatch/home?region=us-east-1#dashboards/dashboard/MonitoringTest',
    );
  });

  test('the cairn:alarmEmail context address is subscribed by email', () => {
    f.template.resourceCountIs('AWS::SNS::Subscription', 1);
    f.template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'ops@example.com',
      TopicArn: { Ref: idOf(f.stack, f.monitoring.topic) },
    });
  });

  test('without an address nothing is subscribed; a prop wins over context; a bad address stops synthesis', () => {
    build({ apis: false }).template.resourceCountIs('AWS::SNS::Subscription', 0);
    const both = build({ apis: false, context: { [ALARM_EMAIL_CONTEXT]: 'ctx@example.com' }, alarmEmail: 'prop@example.com' });
    both.template.hasResourceProperties('AWS::SNS::Subscription', { Endpoint: 'prop@example.com' });
    expect(() => build({ apis: false, context: { [ALARM_EMAIL_CONTEXT]: 'not an address' } })).toThrow(
      /cairn:alarmEmail: "not an address" is not an email address/,
    );
  });
});

describe('alarms', () => {
  test('two per function, one for the dead letters, one per API: 13, every one to the topic on alarm and on recovery, missing data not breaching', () => {
    const alarms = alarmsOf(f);
    expect(alarms).toHaveLength(FUNCTION_NAMES.length * 2 + 1 + 2);
    const topic = { Ref: idOf(f.stack, f.monitoring.topic) };
    for (const [, alarm] of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([topic]);
      expect(alarm.Properties.OKActions).toEqual([topic]);
      expect(alarm.Properties.ActionsEnabled).toBe(true);
      expect(alarm.Properties.TreatMissingData).toBe('notBreaching');
      expect(alarm.Properties.AlarmName).toMatch(/^MonitoringTest-/);
      expect(alarm.Properties.AlarmDescription).toContain('docs/operations.md');
    }
  });

  test.each(FUNCTION_NAMES.map((n) => [n]))('%s: Errors at the first one in 5 minutes, Throttles in 2 of 3 periods', (name) => {
    const fnRef = { Ref: idOf(f.stack, f.functions[name]!) };
    expect(alarmProps(f, `${name}Errors`)).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: fnRef }],
      Statistic: 'Sum',
      Period: 300,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      Threshold: 1,
      EvaluationPeriods: 1,
      DatapointsToAlarm: 1,
    });
    expect(alarmProps(f, `${name}Throttles`)).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Throttles',
      Dimensions: [{ Name: 'FunctionName', Value: fnRef }],
      Statistic: 'Sum',
      Period: 300,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      Threshold: 1,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
    });
  });

  test('the dead-letter queue: any visible message', () => {
    expect(alarmProps(f, 'deployDeadLetters')).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [idOf(f.stack, f.deadLetters), 'QueueName'] } }],
      Statistic: 'Maximum',
      Period: 300,
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
      EvaluationPeriods: 1,
    });
  });

  const rateAlarm = (key: string, prefix: string) => {
    const p = alarmProps(f, key);
    expect(p).toMatchObject({
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: API_5XX_PERCENT,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
    });
    expect(p.MetricName).toBeUndefined();
    const expression = p.Metrics.find((m: Json) => m.Expression !== undefined);
    expect(expression.ReturnData).not.toBe(false);
    expect(expression.Expression).toBe(
      `IF(${prefix}Requests >= ${API_MIN_REQUESTS}, 100 * FILL(${prefix}Errors, 0) / ${prefix}Requests, 0)`,
    );
    const byId = Object.fromEntries(
      p.Metrics.filter((m: Json) => m.MetricStat).map((m: Json) => [m.Id.replace(prefix, '').toLowerCase(), m.MetricStat]),
    );
    expect(Object.keys(byId).sort()).toEqual(['errors', 'requests']);
    expect(byId.errors).toMatchObject({ Stat: 'Sum', Period: 300 });
    expect(byId.requests).toMatchObject({ Stat: 'Sum', Period: 300 });
    return byId;
  };

  test("the GraphQL HTTP API: 5xx over 5% of at least 10 requests, from the API's own metrics", () => {
    const byId = rateAlarm('httpApi5xx', 'http');
    const apiId = [{ Name: 'ApiId', Value: { Ref: idOf(f.stack, f.httpApi!) } }];
    expect(byId.errors.Metric).toEqual({ Namespace: 'AWS/ApiGateway', MetricName: '5xx', Dimensions: apiId });
    expect(byId.requests.Metric).toEqual({ Namespace: 'AWS/ApiGateway', MetricName: 'Count', Dimensions: apiId });
  });

  test('the S3 REST API: the same rule on 5XXError and Count by API name', () => {
    const byId = rateAlarm('restApi5xx', 'rest');
    expect(byId.errors.Metric).toMatchObject({
      Namespace: 'AWS/ApiGateway',
      MetricName: '5XXError',
      Dimensions: [{ Name: 'ApiName', Value: 'StorageApi' }],
    });
    expect(byId.requests.Metric).toMatchObject({
      Namespace: 'AWS/ApiGateway',
      MetricName: 'Count',
      Dimensions: [{ Name: 'ApiName', Value: 'StorageApi' }],
    });
  });

  test("with custom domains, the public object URLs' REST API: the same rule, one alarm more, its rate on the dashboard", () => {
    const withPublic = build({ publicObjects: true });
    expect(alarmsOf(withPublic)).toHaveLength(alarmsOf(f).length + 1);
    const p = alarmProps(withPublic, 'publicObjectsApi5xx');
    expect(p).toMatchObject({
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: API_5XX_PERCENT,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
      AlarmName: 'MonitoringTest-public-objects-api-5xx-rate',
    });
    const stats = p.Metrics.filter((m: Json) => m.MetricStat).map((m: Json) => m.MetricStat.Metric);
    expect(stats).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ MetricName: '5XXError', Dimensions: [{ Name: 'ApiName', Value: 'PublicObjects' }] }),
        expect.objectContaining({ MetricName: 'Count', Dimensions: [{ Name: 'ApiName', Value: 'PublicObjects' }] }),
      ]),
    );
    expect(JSON.stringify(withPublic.template.toJSON())).toContain('Public URLs 5xx %');
    expect(f.monitoring.alarms.publicObjectsApi5xx).toBeUndefined();
  });

  test('without the APIs (the REST API is optional) there are no API alarms', () => {
    const bare = build({ apis: false });
    expect(alarmsOf(bare)).toHaveLength(FUNCTION_NAMES.length * 2 + 1);
    expect(bare.monitoring.alarms.httpApi5xx).toBeUndefined();
    expect(bare.monitoring.alarms.restApi5xx).toBeUndefined();
  });
});

describe('the dashboard', () => {
  /** The body with every token replaced by a placeholder string, parsed. */
  function body(fx: Fixture): Json {
    const [dashboard] = Object.values(fx.resources).filter((r: Json) => r.Type === 'AWS::CloudWatch::Dashboard');
    const raw = dashboard.Properties.DashboardBody;
    const text =
      typeof raw === 'string'
        ? raw
        : raw['Fn::Join'][1]
            .map((part: Json) => (typeof part === 'string' ? part : `TOKEN:${JSON.stringify(part).replace(/"/g, "'")}`))
            .join('');
    return JSON.parse(text);
  }
  const metricRows = (widget: Json): Json[] => (widget.properties.metrics ?? []) as Json[];
  const titled = (b: Json, title: string) => b.widgets.find((w: Json) => w.properties.title === title);

  test('named after the stack, with the alarms, the functions, the APIs, the queue and the tables', () => {
    f.template.hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: 'MonitoringTest' });
    const b = body(f);
    expect(titled(b, 'Alarms').properties.alarms).toHaveLength(alarmsOf(f).length);
    const named = (title: string) => metricRows(titled(b, title));
    for (const [title, metric, stat] of [
      ['Invocations (sum per 5 minutes)', 'Invocations', 'Sum'],
      ['Duration p99 (ms)', 'Duration', 'p99'],
    ] as const) {
      const rows = named(title);
      expect(rows).toHaveLength(FUNCTION_NAMES.length);
      for (const row of rows) {
        expect(row.slice(0, 3)).toEqual(['AWS/Lambda', metric, 'FunctionName']);
        expect(row[4]).toMatchObject({ stat });
      }
    }
    expect(
      named('Errors and throttles (sum per 5 minutes)')
        .map((r: Json) => r[1])
        .sort(),
    ).toEqual([...Array(5).fill('Errors'), ...Array(5).fill('Throttles')]);
    const coldStarts = named('Cold starts (Powertools, sum per 5 minutes)');
    expect(coldStarts.map((r: Json) => r.slice(0, 2))).toEqual(FUNCTION_NAMES.map(() => [RUNTIME_NAMESPACE, 'ColdStart']));
    expect(coldStarts.map((r: Json) => r[r.indexOf('fn') + 1])).toEqual([...FUNCTION_NAMES]);
    expect(coldStarts.every((r: Json) => r[r.indexOf('service') + 1] === RUNTIME_SERVICE)).toBe(true);

    const latency = named('API latency (ms)');
    expect(latency.map((r: Json) => [r[1], r[2], r[r.length - 1].stat])).toEqual([
      ['Latency', 'ApiId', 'p99'],
      ['Latency', 'ApiId', 'p50'],
      ['Latency', 'ApiName', 'p99'],
      ['Latency', 'ApiName', 'p50'],
    ]);
    const errors = named('API 5xx (sum) and 5xx rate (%)');
    expect(errors.filter((r: Json) => typeof r[0] === 'string').map((r: Json) => r[1])).toEqual(
      expect.arrayContaining(['5xx', '5XXError']),
    );
    expect(errors.filter((r: Json) => r[0]?.expression).map((r: Json) => r[0].label)).toEqual(['GraphQL API 5xx %', 'S3 API 5xx %']);

    expect(named('Deploy dead-letter queue (messages visible)')[0].slice(0, 3)).toEqual([
      'AWS/SQS',
      'ApproximateNumberOfMessagesVisible',
      'QueueName',
    ]);
    const throttles = named('DynamoDB throttled reads and writes (sum per 5 minutes)');
    expect(throttles).toHaveLength(TABLES.length * 2);
    expect(new Set(throttles.map((r: Json) => r[1]))).toEqual(new Set(['ReadThrottleEvents', 'WriteThrottleEvents']));
    expect(throttles.every((r: Json) => r[0] === 'AWS/DynamoDB' && r[2] === 'TableName')).toBe(true);
  });

  test("stays within CloudWatch's free dashboard size (50 metrics), as docs/cost.md counts it", () => {
    const b = body(f);
    const metrics = b.widgets.flatMap(metricRows).filter((row: Json) => typeof row[0] === 'string');
    expect(metrics.length).toBeGreaterThan(30);
    expect(metrics.length).toBeLessThanOrEqual(50);
  });

  test('the metric names agree with what the functions emit (functions/core/observability.ts)', () => {
    expect(METRICS_NAMESPACE).toBe(RUNTIME_NAMESPACE);
    expect(METRICS_SERVICE).toBe(RUNTIME_SERVICE);
  });
});

describe('data protection (lib/data.ts)', () => {
  test('every table: point-in-time recovery, deletion protection, retained on stack deletion and replacement', () => {
    const tables = Object.values(f.resources).filter((r: Json) => r.Type === 'AWS::DynamoDB::Table');
    expect(tables).toHaveLength(TABLES.length);
    for (const table of tables) {
      expect(table.DeletionPolicy).toBe('Retain');
      expect(table.UpdateReplacePolicy).toBe('Retain');
      expect(table.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
      expect(table.Properties.DeletionProtectionEnabled).toBe(true);
    }
  });

  test('the block bucket and the secrets key are retained on stack deletion', () => {
    const bucket = f.resources[idOf(f.stack, f.data.blockBucket)];
    expect(bucket.DeletionPolicy).toBe('Retain');
    expect(bucket.UpdateReplacePolicy).toBe('Retain');
    const key = f.resources[idOf(f.stack, f.data.secretsKey)];
    expect(key.DeletionPolicy).toBe('Retain');
    // Nothing would empty the bucket on the way out.
    f.template.resourceCountIs('Custom::S3AutoDeleteObjects', 0);
    f.template.hasResource('AWS::S3::Bucket', Match.objectLike({ DeletionPolicy: 'Retain' }));
  });
});

test("cdk-nag's AwsSolutions checks find nothing unacknowledged in the monitoring and the data", () => {
  const report = new AwsSolutionsChecks().validateScope(f.stack);
  const ours = report.violations.flatMap((v) =>
    v.violatingResources
      .filter((r) => /^MonitoringTest\/(Monitoring|Data)\//.test(r.constructPath ?? ''))
      .map((r) => `${v.ruleName} at ${r.constructPath}`),
  );
  expect(ours).toEqual([]);
  // The checks did run: the test's own stand-in functions and APIs have findings (not these constructs' to fix).
  expect(report.violations.some((v) => v.violatingResources.some((r) => r.constructPath?.startsWith('MonitoringTest/Fn')))).toBe(true);
});
