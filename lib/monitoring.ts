/**
 * What tells an operator that Cairn is broken, and where to look: CloudWatch
 * alarms on the functions, the deploy dead-letter queue and the APIs, all
 * sent to one SNS topic (KMS-encrypted, TLS-only; an email address from
 * `-c cairn:alarmEmail=<address>` is subscribed to it), and one dashboard.
 *
 * Thresholds (each alarm's description says what it means and what to do;
 * docs/operations.md has the same in full):
 * - a function's Errors: any in 5 minutes. The HTTP doors answer their own
 *   failures (S3 errors, GraphQL errors, 500s), so an invocation error is
 *   a crash, a timeout or an out-of-memory: worth a look every time.
 * - a function's Throttles: in 2 of 3 five-minute periods. A single burst
 *   is retried by the caller (S3 clients, SQS, EventBridge); throttling
 *   that lasts means the concurrency limits are too low for the load.
 * - the deploy dead-letter queue: any message visible (a deploy message the
 *   worker failed on three times).
 * - each API's 5xx rate: above 5% of at least 10 requests in 2 of 3
 *   five-minute periods, so a lone failure on a quiet API does not page.
 * Missing data is "not breaching" everywhere: no invocations, no messages
 * and no requests are a healthy, idle stack (SQS stops reporting a queue
 * that has been empty and unused for six hours).
 */
import { CfnOutput, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { RestApiBase } from 'aws-cdk-lib/aws-apigateway';
import type { IHttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  MathExpression,
  Metric,
  Stats,
  TextWidget,
  TreatMissingData,
  type IMetric,
  type MetricOptions,
  type IWidget,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key, type IKey } from 'aws-cdk-lib/aws-kms';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

/**
 * The namespace and `service` dimension the functions' Powertools metrics
 * use (functions/core/observability.ts; a test keeps the two equal without
 * loading Powertools into the CDK app).
 */
export const METRICS_NAMESPACE = 'Cairn';
export const METRICS_SERVICE = 'cairn';

/** The stack outputs this construct adds (logical ids kept short and stable for scripts). */
export const ALARM_TOPIC_OUTPUT = 'AlarmTopicArn';
export const DASHBOARD_OUTPUT = 'DashboardUrl';

/** The context key whose value (an email address) is subscribed to the alarm topic. */
export const ALARM_EMAIL_CONTEXT = 'cairn:alarmEmail';

/** Every alarm looks at five-minute periods. */
export const ALARM_PERIOD = Duration.minutes(5);
/** The share of 5xx answers (percent) above which an API alarms. */
export const API_5XX_PERCENT = 5;
/** Below this many requests in a period an API's 5xx rate counts as 0. */
export const API_MIN_REQUESTS = 10;

/** What the 5xx alarm reads of an API: the HTTP API's and the REST API's metric methods alike. */
interface ApiMetrics {
  metricServerError(props?: MetricOptions): IMetric;
  metricCount(props?: MetricOptions): IMetric;
}

export interface CairnMonitoringProps {
  /** The functions to watch, by their short name (`graphql`, `s3`, ...): alarm and widget names come from it. */
  readonly functions: Readonly<Record<string, IFunction>>;
  /** The deploy queue's dead-letter queue. */
  readonly deployDeadLetterQueue: IQueue;
  /** The GraphQL API (API Gateway HTTP API). @default - no alarm or widget for it */
  readonly httpApi?: IHttpApi;
  /** The S3 API (API Gateway REST API). @default - no alarm or widget for it */
  readonly restApi?: RestApiBase;
  /** The public object URLs' REST API (there with custom domains only). @default - no alarm or rate for it */
  readonly publicObjectsApi?: RestApiBase;
  /** The tables whose throttles the dashboard shows, by logical name. @default - none */
  readonly tables?: Readonly<Record<string, ITable>>;
  /**
   * An email address subscribed to the alarm topic (it must confirm the
   * subscription from the message AWS sends).
   * @default - the `cairn:alarmEmail` context value, else no subscription
   */
  readonly alarmEmail?: string;
  /**
   * The key that encrypts the topic; CloudWatch is allowed to use it.
   * @default - a key of its own, with rotation
   */
  readonly topicKey?: IKey;
  /** @default - the stack's name */
  readonly dashboardName?: string;
}

/** The percent of an API's answers that were 5xx, 0 with too few requests to mean something. */
export function api5xxRateExpression(prefix: string): string {
  const errors = `${prefix}Errors`;
  const requests = `${prefix}Requests`;
  return `IF(${requests} >= ${API_MIN_REQUESTS}, 100 * FILL(${errors}, 0) / ${requests}, 0)`;
}

/** `deployWorker` → `DeployWorker`, `s3` → `S3`: construct ids and alarm names. */
function pascal(name: string): string {
  return name.replace(/(^|[-_])(\w)/g, (_, __, c: string) => c.toUpperCase());
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export class CairnMonitoring extends Construct {
  /** Where every alarm (and its return to OK) is sent. */
  readonly topic: Topic;
  readonly topicKey: IKey;
  /** Every alarm, by a readable name: `graphqlErrors`, `deployDeadLetters`, `httpApi5xx`, ... */
  readonly alarms: Readonly<Record<string, Alarm>>;
  readonly dashboard: Dashboard;

  constructor(scope: Construct, id: string, props: CairnMonitoringProps) {
    super(scope, id);
    const stack = Stack.of(this);

    if (props.topicKey) {
      this.topicKey = props.topicKey;
    } else {
      const key = new Key(this, 'TopicKey', {
        description: 'Cairn: encrypts the alarm topic',
        enableKeyRotation: true,
        // It protects nothing kept: alarm messages are delivered and gone.
        removalPolicy: RemovalPolicy.DESTROY,
        pendingWindow: Duration.days(7),
      });
      this.topicKey = key;
    }
    // CloudWatch publishes to an encrypted topic only with the key's consent
    // (the AWS managed aws/sns key never gives it).
    this.topicKey.addToResourcePolicy(
      new PolicyStatement({
        sid: 'AllowCloudWatchAlarmsToPublish',
        principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
      }),
    );

    this.topic = new Topic(this, 'AlarmTopic', {
      displayName: `Cairn alarms (${stack.stackName})`,
      masterKey: this.topicKey,
      enforceSSL: true,
    });
    // A topic policy replaces SNS's default one, so CloudWatch's alarms in
    // this account are allowed by name.
    this.topic.addToResourcePolicy(
      new PolicyStatement({
        sid: 'AllowCloudWatchAlarmsOfThisAccount',
        principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [this.topic.topicArn],
        conditions: {
          ArnLike: { 'aws:SourceArn': `arn:${stack.partition}:cloudwatch:${stack.region}:${stack.account}:alarm:*` },
          StringEquals: { 'aws:SourceAccount': stack.account },
        },
      }),
    );

    const contextEmail: unknown = this.node.tryGetContext(ALARM_EMAIL_CONTEXT);
    const email = (props.alarmEmail ?? (typeof contextEmail === 'string' ? contextEmail : undefined))?.trim();
    if (email) {
      if (!EMAIL.test(email)) throw new Error(`${ALARM_EMAIL_CONTEXT}: "${email}" is not an email address`);
      this.topic.addSubscription(new EmailSubscription(email));
    }

    const action = new SnsAction(this.topic);
    const alarms: Record<string, Alarm> = {};
    const alarm = (key: string, constructId: string, alarmProps: ConstructorParameters<typeof Alarm>[2]) => {
      const made = new Alarm(this, constructId, {
        ...alarmProps,
        alarmName: `${stack.stackName}-${alarmProps.alarmName}`,
        actionsEnabled: true,
      });
      made.addAlarmAction(action);
      made.addOkAction(action);
      alarms[key] = made;
      return made;
    };

    for (const [name, fn] of Object.entries(props.functions)) {
      const id = pascal(name);
      alarm(`${name}Errors`, `${id}Errors`, {
        alarmName: `${name}-errors`,
        alarmDescription: `The ${name} function failed (a crash, a timeout or running out of memory) at least once in 5 minutes. Its log group has the error; see docs/operations.md.`,
        metric: fn.metricErrors({ period: ALARM_PERIOD, statistic: Stats.SUM }),
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        threshold: 1,
        evaluationPeriods: 1,
        datapointsToAlarm: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      alarm(`${name}Throttles`, `${id}Throttles`, {
        alarmName: `${name}-throttles`,
        alarmDescription: `The ${name} function was throttled in 2 of the last 3 five-minute periods: its concurrency (reserved, or the account's) is too low for the load. See docs/operations.md.`,
        metric: fn.metricThrottles({ period: ALARM_PERIOD, statistic: Stats.SUM }),
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        threshold: 1,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
    }

    const deadLetters = props.deployDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
      period: ALARM_PERIOD,
      statistic: Stats.MAXIMUM,
    });
    alarm('deployDeadLetters', 'DeployDeadLetters', {
      alarmName: 'deploy-dead-letters',
      alarmDescription:
        "A deploy message reached the dead-letter queue (the worker failed on it three times). Read the message and the worker's log; see docs/operations.md.",
      metric: deadLetters,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      threshold: 0,
      evaluationPeriods: 1,
      datapointsToAlarm: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });

    // `prefix` keeps each API's metric ids apart where both rates share a graph.
    const rate = (prefix: string, label: string, errors: IMetric, requests: IMetric) =>
      new MathExpression({
        label,
        expression: api5xxRateExpression(prefix),
        usingMetrics: { [`${prefix}Errors`]: errors, [`${prefix}Requests`]: requests },
        period: ALARM_PERIOD,
      });
    const apiAlarm = (key: string, constructId: string, name: string, what: string, expression: MathExpression) =>
      alarm(key, constructId, {
        alarmName: name,
        alarmDescription: `More than ${API_5XX_PERCENT}% of the ${what}'s answers were 5xx (with at least ${API_MIN_REQUESTS} requests) in 2 of the last 3 five-minute periods. See docs/operations.md.`,
        metric: expression,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        threshold: API_5XX_PERCENT,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });

    // Each API's 5xx rate: alarmed on, and graphed below.
    const apiRate = (
      api: ApiMetrics | undefined,
      prefix: string,
      label: string,
      key: string,
      constructId: string,
      name: string,
      what: string,
    ) => {
      if (!api) return undefined;
      const expression = rate(
        prefix,
        label,
        api.metricServerError({ period: ALARM_PERIOD, statistic: Stats.SUM }),
        api.metricCount({ period: ALARM_PERIOD, statistic: Stats.SUM }),
      );
      apiAlarm(key, constructId, name, what, expression);
      return expression;
    };
    const httpApiRate = apiRate(
      props.httpApi,
      'http',
      'GraphQL API 5xx %',
      'httpApi5xx',
      'HttpApi5xxRate',
      'graphql-api-5xx-rate',
      'GraphQL API (HTTP API)',
    );
    const restApiRate = apiRate(
      props.restApi,
      'rest',
      'S3 API 5xx %',
      'restApi5xx',
      'RestApi5xxRate',
      's3-api-5xx-rate',
      'S3 API (REST API)',
    );
    const publicRate = apiRate(
      props.publicObjectsApi,
      'pub',
      'Public URLs 5xx %',
      'publicObjectsApi5xx',
      'PublicObjectsApi5xxRate',
      'public-objects-api-5xx-rate',
      "public object URLs' API (REST API)",
    );
    this.alarms = alarms;

    // The dashboard: alarms first, then functions, APIs, the queue, the tables.
    const functions = Object.entries(props.functions);
    const byFunction = (metric: (name: string, fn: IFunction) => IMetric) => functions.map(([name, fn]) => metric(name, fn));
    const widgets: IWidget[][] = [
      [
        new TextWidget({
          markdown: `# Cairn (${stack.stackName})\nAlarms and their recoveries go to the SNS topic \`${this.topic.topicName}\`. What each alarm means and what to do: docs/operations.md in the repository.`,
          width: 24,
          height: 2,
        }),
      ],
      [new AlarmStatusWidget({ title: 'Alarms', alarms: Object.values(alarms), width: 24, height: 4 })],
      [
        new GraphWidget({
          title: 'Invocations (sum per 5 minutes)',
          left: byFunction((name, fn) => fn.metricInvocations({ label: name, period: ALARM_PERIOD, statistic: Stats.SUM })),
          width: 8,
        }),
        new GraphWidget({
          title: 'Errors and throttles (sum per 5 minutes)',
          left: byFunction((name, fn) => fn.metricErrors({ label: `${name} errors`, period: ALARM_PERIOD, statistic: Stats.SUM })),
          right: byFunction((name, fn) => fn.metricThrottles({ label: `${name} throttles`, period: ALARM_PERIOD, statistic: Stats.SUM })),
          width: 8,
        }),
        new GraphWidget({
          title: 'Duration p99 (ms)',
          left: byFunction((name, fn) => fn.metricDuration({ label: name, period: ALARM_PERIOD, statistic: Stats.p(99) })),
          width: 8,
        }),
      ],
      [
        new GraphWidget({
          title: 'Cold starts (Powertools, sum per 5 minutes)',
          left: byFunction(
            (name, fn) =>
              new Metric({
                namespace: METRICS_NAMESPACE,
                metricName: 'ColdStart',
                dimensionsMap: { service: METRICS_SERVICE, fn: name, function_name: fn.functionName },
                label: name,
                period: ALARM_PERIOD,
                statistic: Stats.SUM,
              }),
          ),
          width: 8,
        }),
        ...this.apiWidgets(props, [httpApiRate, restApiRate, publicRate]),
      ],
      [
        new GraphWidget({
          title: 'Deploy dead-letter queue (messages visible)',
          left: [
            props.deployDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
              label: 'dead letters',
              period: ALARM_PERIOD,
              statistic: Stats.MAXIMUM,
            }),
          ],
          width: 8,
        }),
        new GraphWidget({
          title: 'DynamoDB throttled reads and writes (sum per 5 minutes)',
          left: Object.entries(props.tables ?? {}).flatMap(([name, table]) => [
            table.metric('ReadThrottleEvents', { label: `${name} reads`, period: ALARM_PERIOD, statistic: Stats.SUM }),
            table.metric('WriteThrottleEvents', { label: `${name} writes`, period: ALARM_PERIOD, statistic: Stats.SUM }),
          ]),
          width: 16,
        }),
      ],
    ];
    const dashboardName = props.dashboardName ?? stack.stackName;
    this.dashboard = new Dashboard(this, 'Dashboard', {
      dashboardName,
      defaultInterval: Duration.hours(3),
      widgets,
    });

    new CfnOutput(this, 'AlarmTopicArnOutput', {
      description: 'The SNS topic every alarm is sent to: subscribe an email with -c cairn:alarmEmail=<address>, or aws sns subscribe',
      value: this.topic.topicArn,
    }).overrideLogicalId(ALARM_TOPIC_OUTPUT);
    new CfnOutput(this, 'DashboardUrlOutput', {
      description: "The stack's CloudWatch dashboard",
      value: `https://${stack.region}.console.aws.amazon.com/cloudwatch/home?region=${stack.region}#dashboards/dashboard/${dashboardName}`,
    }).overrideLogicalId(DASHBOARD_OUTPUT);
  }

  private apiWidgets(props: CairnMonitoringProps, apiRates: Array<MathExpression | undefined>): IWidget[] {
    const latency: IMetric[] = [];
    const errors: IMetric[] = [];
    if (props.httpApi) {
      latency.push(props.httpApi.metricLatency({ label: 'GraphQL API p99', period: ALARM_PERIOD, statistic: Stats.p(99) }));
      latency.push(props.httpApi.metricLatency({ label: 'GraphQL API p50', period: ALARM_PERIOD, statistic: Stats.p(50) }));
      errors.push(props.httpApi.metricServerError({ label: 'GraphQL API 5xx', period: ALARM_PERIOD, statistic: Stats.SUM }));
    }
    if (props.restApi) {
      latency.push(props.restApi.metricLatency({ label: 'S3 API p99', period: ALARM_PERIOD, statistic: Stats.p(99) }));
      latency.push(props.restApi.metricLatency({ label: 'S3 API p50', period: ALARM_PERIOD, statistic: Stats.p(50) }));
      errors.push(props.restApi.metricServerError({ label: 'S3 API 5xx', period: ALARM_PERIOD, statistic: Stats.SUM }));
    }
    if (latency.length === 0) return [];
    const rates = apiRates.filter((r): r is MathExpression => r !== undefined);
    return [
      new GraphWidget({ title: 'API latency (ms)', left: latency, width: 8 }),
      new GraphWidget({ title: 'API 5xx (sum) and 5xx rate (%)', left: errors, right: rates, width: 8 }),
    ];
  }
}
