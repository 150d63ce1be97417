/**
 * A regional API Gateway REST API that hands every request, whatever its
 * path and method, to one Lambda function and streams the answer back: the
 * S3-compatible endpoint (behind its distribution, lib/part-staging.ts) and, with custom domains, the
 * public object URLs in front of the gateway function (lib/domains.ts).
 *
 * - `/` and `/{proxy+}`, method ANY, Lambda proxy integration with
 *   `responseTransferMode: STREAM` (InvokeWithResponseStream): downloads are
 *   not held to the 10 MB buffered response limit or the 29 s timeout; the
 *   function answers with the prelude API Gateway REST expects
 *   (functions/core/http/api-gateway-rest.ts). The integration waits up to
 *   15 minutes, streaming's longest ("Response streaming maximum duration
 *   is 15 minutes", "you can configure the integration timeout up to 15
 *   minutes": https://docs.aws.amazon.com/apigateway/latest/developerguide/response-transfer-mode.html,
 *   https://docs.aws.amazon.com/apigateway/latest/developerguide/response-streaming-http.html),
 *   and the function may run as long, Lambda's longest timeout, which bounds
 *   the whole stream. What else bounds a download: after its first 10 MB
 *   API Gateway streams at most 2 MB/s, after its first 6 MB Lambda does too
 *   (https://docs.aws.amazon.com/lambda/latest/dg/configuration-response-streaming.html),
 *   a streamed response holds at most 200 MB (same page), and a stream that
 *   sends nothing for 5 minutes is closed (regional endpoints). Larger
 *   objects are read in ranges.
 * - `/` and `/{proxy+}`, method HEAD, the same function through a buffered
 *   Lambda proxy integration (Lambda's Invoke): a HEAD's answer is its
 *   headers, and the object's size is its Content-Length. For a function
 *   that writes the streaming format, a buffered integration through Invoke
 *   is the combination for which API Gateway documents "returns the HTTP
 *   headers and status code but not the response body"
 *   (https://docs.aws.amazon.com/apigateway/latest/developerguide/response-transfer-mode-lambda.html);
 *   for a streamed answer whose Content-Length announces a body that never
 *   comes, AWS documents nothing (and users of streamed Function URLs report
 *   the size arriving as x-amzn-remapped-content-length). An explicit method
 *   takes precedence over ANY, which "catches any
 *   HTTP method that wasn't explicitly declared"
 *   (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-swagger-extensions-any-method.html).
 * - Binary media types `*` + `/` + `*`: every request body reaches the
 *   function base64-encoded and byte for byte, whatever its Content-Type.
 * - Request bodies: API Gateway takes at most 10 MB, but a Lambda
 *   invocation at most 6 MB (6,291,456 bytes) of event, in which the body
 *   is base64 (4/3 of its size). So the function's CAIRN_MAX_REQUEST_BODY is
 *   4 MiB (5.33 MiB as base64, room left for headers); the function answers
 *   larger declared bodies EntityTooLarge itself, and API Gateway's own
 *   413 for bodies over 10 MB is given the same S3 error here (gateway
 *   responses). A body between the two limits is refused by Lambda, which
 *   API Gateway reports as a 5xx.
 * - The stage logs every request (JSON access log, no query strings:
 *   presigned URLs carry signatures), execution errors, and X-Ray traces.
 */
import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import {
  AccessLogField,
  AccessLogFormat,
  EndpointType,
  LambdaIntegration,
  LogGroupLogDestination,
  MethodLoggingLevel,
  ResponseTransferMode,
  ResponseType,
  RestApi,
  type Stage,
} from 'aws-cdk-lib/aws-apigateway';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

/** The largest request API Gateway REST accepts (its own 413 beyond). */
export const API_GATEWAY_MAX_REQUEST_BYTES = 10 * 1000 * 1000;
/** The largest synchronous Lambda invocation event. */
export const LAMBDA_MAX_EVENT_BYTES = 6 * 1024 * 1024;
/**
 * The largest object body one request may carry through the REST API: the
 * base64 body plus the rest of the event must fit a Lambda invocation.
 * The function's CAIRN_MAX_REQUEST_BODY.
 */
export const REST_MAX_REQUEST_BODY = 4 * 1024 * 1024;

/**
 * How long a streamed response may run: Lambda's longest function timeout
 * (https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html)
 * and API Gateway's longest streamed response (above). The S3 and gateway
 * functions' timeout and their REST integrations' wait.
 */
export const STREAMING_TIMEOUT = Duration.minutes(15);
/**
 * The buffered HEAD integration's wait: API Gateway's default ceiling for a
 * buffered integration (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html).
 */
export const HEAD_INTEGRATION_TIMEOUT = Duration.seconds(29);

/** The stage of the S3 API: clients of the execute-api address sign `/<stage>/<bucket>/<key>`. */
export const STORAGE_API_STAGE = 's3';

/** How API Gateway's own refusals read: as S3 errors (XML) or as plain text. */
export type GatewayErrorShape = 's3' | 'text';

export interface StreamingRestApiProps {
  /** The function every request goes to. */
  readonly handler: IFunction;
  readonly restApiName: string;
  readonly description: string;
  readonly stageName: string;
  /** How long a streamed response may run, at most STREAMING_TIMEOUT: the function's own timeout. */
  readonly integrationTimeout: Duration;
  readonly errorShape: GatewayErrorShape;
  /**
   * Why the methods have no API Gateway authorizer: who checks the caller
   * instead (cdk-nag AwsSolutions-APIG4 and COG4 are acknowledged with it).
   */
  readonly authorization: string;
  /**
   * Another API of the stack that holds the account's CloudWatch role for
   * API Gateway logs (one AWS::ApiGateway::Account per account and region):
   * this one waits for it instead of making its own.
   * @default - this API makes it
   */
  readonly logsRoleFrom?: StreamingRestApi;
  /**
   * Answer only on custom domains: the execute-api address answers 403.
   * @default false
   */
  readonly disableExecuteApiEndpoint?: boolean;
}

/** An S3 error document; `$context` variables are filled in by API Gateway. */
function s3ErrorXml(code: string, message: string): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<Error><Code>${code}</Code><Message>${message}</Message><RequestId>$context.requestId</RequestId></Error>`
  );
}

export class StreamingRestApi extends Construct {
  readonly api: RestApi;
  readonly stage: Stage;
  readonly accessLogs: LogGroup;
  /** `https://<api id>.execute-api.<region>.<suffix>/<stage>`, no trailing slash. */
  readonly executeApiUrl: string;

  constructor(scope: Construct, id: string, props: StreamingRestApiProps) {
    super(scope, id);

    this.accessLogs = new LogGroup(this, 'AccessLogs', { retention: RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.DESTROY });

    if (!props.integrationTimeout.isUnresolved() && props.integrationTimeout.toSeconds() > STREAMING_TIMEOUT.toSeconds()) {
      throw new Error(
        `a streamed integration waits at most ${STREAMING_TIMEOUT.toMinutes()} minutes, got ${props.integrationTimeout.toHumanString()}`,
      );
    }

    const integration = new LambdaIntegration(props.handler, {
      proxy: true,
      responseTransferMode: ResponseTransferMode.STREAM,
      timeout: props.integrationTimeout,
      // One permission for the whole API rather than two per method.
      scopePermissionToMethod: false,
    });

    this.api = new RestApi(this, 'Api', {
      restApiName: props.restApiName,
      description: props.description,
      endpointConfiguration: { types: [EndpointType.REGIONAL] },
      binaryMediaTypes: ['*/*'],
      disableExecuteApiEndpoint: props.disableExecuteApiEndpoint ?? false,
      // The role and API Gateway's account settings that point at it are one
      // per account and region, shared by every REST API there: kept when the
      // stack goes (CDK's default), so another API's logging does not lose
      // its role. docs/aws.md says how to remove them.
      cloudWatchRole: props.logsRoleFrom === undefined,
      ...(props.logsRoleFrom === undefined ? { cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN } : {}),
      defaultIntegration: integration,
      deployOptions: {
        stageName: props.stageName,
        accessLogDestination: new LogGroupLogDestination(this.accessLogs),
        accessLogFormat: AccessLogFormat.custom(
          JSON.stringify({
            requestId: AccessLogField.contextRequestId(),
            extendedRequestId: AccessLogField.contextExtendedRequestId(),
            ip: AccessLogField.contextIdentitySourceIp(),
            requestTime: AccessLogField.contextRequestTime(),
            domainName: AccessLogField.contextDomainName(),
            httpMethod: AccessLogField.contextHttpMethod(),
            path: AccessLogField.contextPath(),
            status: AccessLogField.contextStatus(),
            protocol: AccessLogField.contextProtocol(),
            responseLength: AccessLogField.contextResponseLength(),
            responseLatency: AccessLogField.contextResponseLatency(),
            integrationLatency: AccessLogField.contextIntegrationLatency(),
            integrationStatus: AccessLogField.contextIntegrationStatus(),
            errorMessage: AccessLogField.contextErrorMessage(),
            userAgent: AccessLogField.contextIdentityUserAgent(),
          }),
        ),
        // Execution logs: errors only, and never the bodies (they carry data and secrets).
        loggingLevel: MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        metricsEnabled: false,
        tracingEnabled: true,
      },
    });
    if (props.logsRoleFrom) {
      // The stage's logging settings need the account's CloudWatch role in place.
      const account = props.logsRoleFrom.api.node.tryFindChild('Account');
      if (account) this.api.deploymentStage.node.addDependency(account);
    }
    this.stage = this.api.deploymentStage;

    // cdk-nag: what is checked by design elsewhere, with why.
    const acknowledge = Validations.of(this.api);
    acknowledge.acknowledge(
      { id: 'AwsSolutions-APIG4', reason: props.authorization },
      { id: 'AwsSolutions-COG4', reason: `There are no Cognito users: ${props.authorization}` },
      {
        id: 'AwsSolutions-APIG2',
        reason:
          "API Gateway's request validators check parameters and JSON bodies against models; these requests (S3's XML and binary bodies, signed headers, any path) are validated by the function, which answers the protocol's own errors",
      },
      {
        id: 'AwsSolutions-APIG3',
        reason:
          'No AWS WAF web ACL by default: it would cost $5 a month plus $1 per rule and $0.60 per million requests, more than the idle stack, while the function authenticates every request and the stage throttles at the account limits. Associate one (AWS::WAFv2::WebACLAssociation on the stage) if the endpoint draws abuse',
      },
    );
    const logsRole = this.api.node.tryFindChild('CloudWatchRole');
    if (logsRole) {
      Validations.of(logsRole).acknowledge({
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
        reason:
          "API Gateway's account-wide role for writing access and execution logs: the managed policy AWS keeps for exactly that (CloudWatch Logs only)",
      });
    }

    // Every path and method, the root included, goes to the function:
    // streamed, but for HEAD, whose Content-Length must reach the client.
    const head = new LambdaIntegration(props.handler, {
      proxy: true,
      responseTransferMode: ResponseTransferMode.BUFFERED,
      timeout: HEAD_INTEGRATION_TIMEOUT,
      scopePermissionToMethod: false,
    });
    const proxy = this.api.root.addResource('{proxy+}');
    for (const resource of [this.api.root, proxy]) {
      resource.addMethod('ANY');
      resource.addMethod('HEAD', head);
    }

    if (props.errorShape === 's3') {
      const xml = (code: string, message: string) => ({
        responseHeaders: { 'Content-Type': "'application/xml'" },
        templates: { 'application/json': s3ErrorXml(code, message), 'application/xml': s3ErrorXml(code, message) },
      });
      this.api.addGatewayResponse('EntityTooLarge', {
        type: ResponseType.REQUEST_TOO_LARGE,
        statusCode: '400',
        ...xml(
          'EntityTooLarge',
          `Your proposed upload exceeds the maximum allowed size. This endpoint runs on AWS Lambda and takes at most ${REST_MAX_REQUEST_BODY} bytes per request. Upload larger objects with a multipart upload in parts of at most ${REST_MAX_REQUEST_BODY} bytes.`,
        ),
      });
      this.api.addGatewayResponse('SlowDown', {
        type: ResponseType.THROTTLED,
        statusCode: '503',
        ...xml('SlowDown', 'Please reduce your request rate.'),
      });
      this.api.addGatewayResponse('AccessDenied', {
        type: ResponseType.ACCESS_DENIED,
        statusCode: '403',
        ...xml('AccessDenied', 'Access Denied'),
      });
      this.api.addGatewayResponse('Default4xx', { type: ResponseType.DEFAULT_4XX, ...xml('InvalidRequest', '$context.error.message') });
      // A body between Lambda's 6 MB and API Gateway's 10 MB is refused by Lambda
      // (RequestTooLargeException, https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html),
      // for which API Gateway documents no response type of its own
      // (https://docs.aws.amazon.com/apigateway/latest/developerguide/supported-gateway-response-types.html);
      // INTEGRATION_FAILURE is every failed integration, so an EntityTooLarge there
      // would mislead. It stays InternalError here (docs/aws.md says why).
      this.api.addGatewayResponse('Default5xx', {
        type: ResponseType.DEFAULT_5XX,
        ...xml('InternalError', 'We encountered an internal error. Please try again.'),
      });
    }

    const stack = Stack.of(this);
    this.executeApiUrl = `https://${this.api.restApiId}.execute-api.${stack.region}.${stack.urlSuffix}/${this.stage.stageName}`;
  }
}
