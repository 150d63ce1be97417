/**
 * The GraphQL hosting API: the GraphQL function (which also answers the
 * git and build hooks, the CAR import endpoint and the web app, by path:
 * functions/graphql/routes.ts) and the API Gateway HTTP API in front of it,
 * with one JSON access log line per request.
 *
 * Both are made in the stack's own scope, not in a construct of their own:
 * their logical ids stay those of the stacks already deployed, so an update
 * changes nothing rather than replacing the function and the API (and the
 * hook URLs handed to git hosts with it).
 */
import * as path from 'node:path';
import { Duration, type Stack, Validations } from 'aws-cdk-lib';
import { AccessLogField, AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { CorsHttpMethod, HttpApi, HttpMethod, HttpStage, LogGroupLogDestination } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { PLAYGROUND_ASSETS, PLAYGROUND_BUNDLE_DIR } from '../functions/graphql/playground-assets.js';
import { buildWebApp, WEB_APP_BUNDLE_DIR } from '../functions/web-app/build.js';
import type { CairnData } from './data.js';
import { CairnFunction, LAMBDA_SCHEMA_PATH, PROJECT_ROOT } from './functions.js';
import { acknowledgeBucketGrant, acknowledgeTableGrants } from './grant-acknowledgements.js';

/** Where the synth writes the web app's files before they are copied into the GraphQL function's bundle. */
const WEB_APP_BUILD_DIR = 'cdk.out/web-app';

/** The GraphiQL playground's files, copied into the GraphQL function's bundle. */
const PLAYGROUND_FILES = Object.entries(PLAYGROUND_ASSETS).map(([name, modulePath]) => ({
  from: `node_modules/${modulePath}`,
  to: `${PLAYGROUND_BUNDLE_DIR}/${name}`,
}));

export interface GraphqlFunctionProps {
  readonly data: CairnData;
  /** The functions' common environment (lib/stack-options.ts). */
  readonly environment: Record<string, string>;
  /** @default - the `cairn:graphqlIntrospection` context value, else off */
  readonly introspection?: boolean;
  /** Who may sign up (CAIRN_SIGNUP, docs/accounts.md). @default - the `cairn:signup` context value, else 'invite' */
  readonly signup?: SignupPolicy;
}

export type SignupPolicy = 'open' | 'invite' | 'closed';
const SIGNUP_POLICIES: readonly string[] = ['open', 'invite', 'closed'];

/** The sign-up policy from the prop or the context, checked at synthesis (the function would refuse to start on a bad one). */
function signupOf(stack: Stack, prop: SignupPolicy | undefined): SignupPolicy {
  const value: unknown = prop ?? stack.node.tryGetContext('cairn:signup') ?? 'invite';
  if (typeof value !== 'string' || !SIGNUP_POLICIES.includes(value))
    throw new Error(`cairn:signup must be "open", "invite" or "closed", got ${JSON.stringify(value)}`);
  return value as SignupPolicy;
}

/** The GraphQL function (`Graphql`), with the schema, the playground and the web app in its bundle, and its grants. */
export function addGraphqlFunction(stack: Stack, props: GraphqlFunctionProps): NodejsFunction {
  const { tables, blockBucket, secretsKey } = props.data;
  const introspectionContext: unknown = stack.node.tryGetContext('cairn:graphqlIntrospection');
  const introspection = props.introspection ?? (introspectionContext === true || introspectionContext === 'true');
  const signup = signupOf(stack, props.signup);
  // The web app, built at synth and copied into the GraphQL function's
  // bundle, which serves it at / and /app/ (functions/web-app/serve.ts).
  const webAppFiles = buildWebApp(path.join(PROJECT_ROOT, WEB_APP_BUILD_DIR)).map((name) => ({
    from: `${WEB_APP_BUILD_DIR}/${name}`,
    to: `${WEB_APP_BUNDLE_DIR}/${name}`,
  }));
  const graphql = new CairnFunction(stack, 'Graphql', {
    name: 'graphql',
    tracing: true,
    description: 'Cairn: GraphQL hosting API',
    memorySize: 512,
    timeout: Duration.seconds(29),
    environment: {
      ...props.environment,
      CAIRN_SCHEMA_PATH: LAMBDA_SCHEMA_PATH,
      CAIRN_GRAPHQL_PLAYGROUND_DIR: `/var/task/${PLAYGROUND_BUNDLE_DIR}`,
      CAIRN_GRAPHQL_INTROSPECTION: String(introspection),
      // Signing up, in and out are the GraphQL function's /auth/ routes (functions/graphql/accounts-http.ts).
      CAIRN_SIGNUP: signup,
    },
    extraFiles: ['schema.graphql', ...PLAYGROUND_FILES, ...webAppFiles],
  }).function;

  // Least privilege: what the API's resolvers and endpoints use.
  tables.accounts.grantReadWriteData(graphql);
  tables.sites.grantReadWriteData(graphql);
  tables.deploys.grantReadWriteData(graphql);
  // The CAR import endpoint stores blocks and records import pins (functions/core/hosting/imports.ts).
  tables.objects.grantReadWriteData(graphql);
  blockBucket.grantReadWrite(graphql);
  // Sealing and opening storage secrets and site tokens is Encrypt and Decrypt, nothing more (functions/core/auth/secrets.ts).
  secretsKey.grant(graphql, 'kms:Encrypt', 'kms:Decrypt');
  acknowledgeTableGrants(graphql, [tables.accounts, tables.sites, tables.deploys, tables.objects]);
  acknowledgeBucketGrant(graphql, blockBucket, 'readWrite'); // the CAR import endpoint's blocks and import pins
  return graphql;
}

export interface GraphqlApi {
  readonly api: HttpApi;
  /** The default stage, with its access logs. */
  readonly stage: HttpStage;
}

/** The HTTP API (`Api`) routing /graphql, /hooks, /imports and the web app to the GraphQL function. */
export function addGraphqlApi(stack: Stack, graphql: NodejsFunction): GraphqlApi {
  const api = new HttpApi(stack, 'Api', {
    apiName: `${stack.stackName}-api`,
    description: 'Cairn: GraphQL hosting API',
    corsPreflight: {
      allowOrigins: ['*'],
      allowHeaders: ['authorization', 'content-type'],
      allowMethods: [CorsHttpMethod.GET, CorsHttpMethod.POST, CorsHttpMethod.OPTIONS],
      maxAge: Duration.days(1),
    },
    // Made below, with access logs (same id, so the same stage).
    createDefaultStage: false,
  });
  // One JSON line per request. The route, not the path: a build hook's
  // path is its secret (/hooks/build/<hookId>).
  const accessLogs = new LogGroup(stack, 'ApiAccessLogs', { retention: RetentionDays.ONE_MONTH });
  const stage = new HttpStage(api, 'DefaultStage', {
    httpApi: api,
    autoDeploy: true,
    accessLogSettings: {
      destination: new LogGroupLogDestination(accessLogs),
      format: AccessLogFormat.custom(
        JSON.stringify({
          requestId: AccessLogField.contextRequestId(),
          ip: AccessLogField.contextIdentitySourceIp(),
          requestTime: AccessLogField.contextRequestTime(),
          routeKey: '$context.routeKey',
          status: AccessLogField.contextStatus(),
          protocol: AccessLogField.contextProtocol(),
          responseLength: AccessLogField.contextResponseLength(),
          responseLatency: AccessLogField.contextResponseLatency(),
          integrationLatency: AccessLogField.contextIntegrationLatency(),
          integrationError: '$context.integrationErrorMessage',
          userAgent: AccessLogField.contextIdentityUserAgent(),
        }),
      ),
    },
  });
  Validations.of(api).acknowledge({
    id: 'AwsSolutions-APIG4',
    reason:
      'The GraphQL function authorises every request itself: API keys (Authorization header) for /graphql and /imports, signatures (HMAC with the site secret) or secret URLs for /hooks; the web app (/ and /app) is public static files. An API Gateway authorizer would only repeat the key lookup',
  });
  const integration = new HttpLambdaIntegration('GraphqlIntegration', graphql);
  api.addRoutes({ path: '/graphql', methods: [HttpMethod.ANY, HttpMethod.GET], integration });
  // Git host webhooks (/hooks/git/<siteId>) and build hooks
  // (/hooks/build/<hookId>): the GraphQL function answers them by path.
  // ANY, so that a GET reaches the function and is told 405, as locally.
  api.addRoutes({ path: '/hooks/{proxy+}', methods: [HttpMethod.ANY], integration });
  // The CAR import endpoint (/imports/...) and the web app (/ and /app/...):
  // the GraphQL function answers them by path too (functions/graphql/routes.ts).
  api.addRoutes({ path: '/imports/{proxy+}', methods: [HttpMethod.ANY], integration });
  // Signing in and out and the command line's browser login (/auth/...; functions/graphql/accounts-http.ts, device-http.ts).
  api.addRoutes({ path: '/auth/{proxy+}', methods: [HttpMethod.ANY], integration });
  api.addRoutes({ path: '/', methods: [HttpMethod.GET, HttpMethod.HEAD], integration });
  api.addRoutes({ path: '/app/{proxy+}', methods: [HttpMethod.GET, HttpMethod.HEAD], integration });
  return { api, stage };
}
