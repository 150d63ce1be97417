/**
 * Parts above 4 MiB around the S3 function (docs/aws.md, "Parts above
 * 4 MiB: the staging path"): the storage API's CloudFront distribution and
 * the API's part-staging resource.
 *
 * - The distribution is the S3-compatible endpoint clients are given. Its
 *   viewer-request CloudFront Function (functions/cdn/s3-viewer-request.js)
 *   passes the viewer's Host and Authorization on in headers of its own and
 *   sends an UploadPart over 4 MiB to `/_parts/<bucket>/<key>`; everything
 *   else goes on to the API as it came. Every method is allowed, nothing is
 *   cached (the managed CachingDisabled policy), and the origin request
 *   carries every viewer header, cookie and query string but Host (the
 *   managed AllViewerExceptHostHeader policy, "intended for use with Amazon
 *   API Gateway and AWS Lambda function URL origins. These origins expect
 *   the Host header to contain the origin domain name":
 *   https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/using-managed-origin-request-policies.html,
 *   https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/using-managed-cache-policies.html).
 *   The origin path is the API's stage, so clients sign `/<bucket>/<key>`
 *   on the distribution's host.
 * - `/_parts/{proxy+}`, PUT: a Lambda REQUEST authoriser (functions/part-staging/,
 *   its own function and role; result cache off, since every request is
 *   signed anew: https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-use-lambda-authorizer.html)
 *   and an AWS service integration that PUTs the body into the block bucket
 *   under `part-staging/<uploadId>/<partNumber>`, both from the query
 *   string, with the request's signing and checksum headers as the object's
 *   user metadata (`x-amz-meta-<name>`, STAGED_HEADERS), and answers S3's
 *   ETag (https://docs.aws.amazon.com/apigateway/latest/developerguide/integrating-api-with-aws-services-s3.html;
 *   parameter mappings: https://docs.aws.amazon.com/apigateway/latest/developerguide/rest-api-parameter-mapping-sources.html).
 *   API Gateway takes a body of up to 10 MB; the integration's role may
 *   only put objects under the prefix. CompleteMultipartUpload reads the
 *   staged parts back and checks them (the S3 function, told the bucket as
 *   CAIRN_PART_STAGING_BUCKET).
 * - The edge key: a random value the distribution sends the API as an
 *   origin header (x-cairn-edge-key) on every request, and the S3 function
 *   and the authoriser are told (CAIRN_EDGE_KEY). A request carrying it came
 *   through the distribution, so the viewer address the CloudFront Function
 *   passes on (x-cairn-viewer-ip) is the one a bucket policy's aws:SourceIp
 *   sees (functions/core/http/api-gateway-rest.ts); a caller reaching the
 *   API directly cannot claim an address. It lives in a Secrets Manager
 *   secret and reaches the template as dynamic references only, which
 *   "can be used in all resource properties" while "the secret value may
 *   show up in the service whose resource it's being used in"
 *   (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/dynamic-references-secretsmanager.html):
 *   whoever may read the distribution's configuration (its origin headers)
 *   or the functions' reads it, and could claim any address to a bucket
 *   policy, nothing more (every request is still signed and checked).
 */
import * as path from 'node:path';
import { Duration, RemovalPolicy, type Stack, Validations } from 'aws-cdk-lib';
import { AuthorizationType, AwsIntegration, type Method, PassthroughBehavior, RequestAuthorizer } from 'aws-cdk-lib/aws-apigateway';
import {
  AllowedMethods,
  CachedMethods,
  CachePolicy,
  Distribution,
  Function as CloudFrontFunction,
  FunctionCode,
  FunctionEventType,
  FunctionRuntime,
  HttpVersion,
  OriginRequestPolicy,
  PriceClass,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { RestApiOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { EDGE_KEY, VIEWER_AUTHORIZATION } from '../functions/core/http/api-gateway-rest.js';
import { PART_STAGING_PREFIX, STAGED_HEADERS } from '../functions/core/ports/staged-parts.js';
import type { CairnData } from './data.js';
import { CairnFunction, PROJECT_ROOT } from './functions.js';
import { acknowledgeTableGrants, acknowledgeWildcard, nagRef } from './grant-acknowledgements.js';
import type { StreamingRestApi } from './storage-api.js';

/** The storage distribution's viewer-request function, shipped as it is in the repository. */
export const S3_VIEWER_REQUEST_CODE_PATH = path.join(PROJECT_ROOT, 'functions', 'cdn', 's3-viewer-request.js');

/** The staging resource's first path segment (functions/cdn/s3-viewer-request.js and functions/part-staging/authorize.ts). */
export const PARTS_PATH_PART = '_parts';

/** The header of the origin request each staged header's metadata entry is mapped from. */
export function stagedHeaderSource(name: (typeof STAGED_HEADERS)[number]): string {
  // CloudFront passes the viewer's Authorization on under the function's own name (functions/cdn/s3-viewer-request.js).
  return name === 'authorization' ? VIEWER_AUTHORIZATION : name;
}

/** An S3 error document; `$context` variables are filled in by API Gateway. */
function s3ErrorXml(code: string, message: string): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<Error><Code>${code}</Code><Message>${message}</Message><RequestId>$context.requestId</RequestId></Error>`
  );
}

export interface PartStagingProps {
  readonly data: CairnData;
  /** The functions' common environment (lib/stack-options.ts). */
  readonly environment: Record<string, string>;
  /** The storage REST API the resource is added to, and the distribution's origin. */
  readonly storageApi: StreamingRestApi;
  /** The S3 function, which reads, lists and removes staged parts at Complete and Abort. */
  readonly s3: NodejsFunction;
}

export class PartStaging extends Construct {
  /** The storage API's distribution: the S3-compatible endpoint. */
  readonly distribution: Distribution;
  readonly viewerRequest: CloudFrontFunction;
  /** The REQUEST authoriser's function. */
  readonly authorizerFunction: NodejsFunction;
  readonly authorizer: RequestAuthorizer;
  /** `PUT /_parts/{proxy+}`. */
  readonly method: Method;
  /** The role API Gateway puts staged parts into the bucket with. */
  readonly integrationRole: Role;
  /** `https://<distribution domain>`. */
  readonly endpoint: string;
  /** The value the distribution sends as its origin header, which the functions check. */
  readonly edgeKey: Secret;

  constructor(scope: Construct, id: string, props: PartStagingProps) {
    super(scope, id);
    const { tables, blockBucket, secretsKey } = props.data;
    const { api } = props.storageApi;

    this.edgeKey = new Secret(this, 'EdgeKey', {
      description: "Cairn: the storage distribution's origin header; requests with it came through the distribution",
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
      // It holds no data: a new stack makes a new one.
      removalPolicy: RemovalPolicy.DESTROY,
    });
    Validations.of(this.edgeKey).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'Not rotated by Secrets Manager: CloudFormation reads it into the distribution and the functions only when the stack is deployed, so a rotated value would split them until the next deploy (requests through the distribution would lose their viewer address). It carries no data access; a new value is made by replacing the secret in a deploy',
    });
    const edgeKey = this.edgeKey.secretValue.unsafeUnwrap();
    props.s3.addEnvironment('CAIRN_EDGE_KEY', edgeKey);

    // The authoriser: what the S3 function checks of an UploadPart before its body, on the same tables.
    this.authorizerFunction = new CairnFunction(this, 'Authorizer', {
      name: 'part-staging',
      tracing: true,
      description: 'Cairn: authorises UploadParts staged around the S3 function',
      memorySize: 512,
      // API Gateway waits at most 29 s for any integration or authoriser.
      timeout: Duration.seconds(10),
      environment: { ...props.environment, CAIRN_EDGE_KEY: edgeKey },
    }).function;
    // Key pairs and buckets (with their policies) are in the accounts table, uploads in the objects table;
    // opening a key pair's sealed secret needs the key's Decrypt. Nothing is written.
    tables.accounts.grantReadData(this.authorizerFunction);
    tables.objects.grantReadData(this.authorizerFunction);
    secretsKey.grant(this.authorizerFunction, 'kms:Decrypt');
    acknowledgeTableGrants(this.authorizerFunction, [tables.accounts, tables.objects]);

    this.authorizer = new RequestAuthorizer(this, 'RequestAuthorizer', {
      handler: this.authorizerFunction,
      // No identity source: with caching off API Gateway needs none, and so invokes the authoriser for every
      // request, whose Deny is the stack's ACCESS_DENIED response (S3 XML AccessDenied) whatever is missing.
      identitySources: [],
      resultsCacheTtl: Duration.seconds(0),
    });

    this.integrationRole = new Role(this, 'IntegrationRole', {
      assumedBy: new ServicePrincipal('apigateway.amazonaws.com'),
      description: 'Cairn: API Gateway puts staged UploadPart bodies under part-staging/ of the block bucket',
    });
    this.integrationRole.addToPolicy(
      new PolicyStatement({ actions: ['s3:PutObject'], resources: [blockBucket.arnForObjects(`${PART_STAGING_PREFIX}*`)] }),
    );
    acknowledgeWildcard(
      this.integrationRole,
      `Resource::<${nagRef(blockBucket)}.Arn>/${PART_STAGING_PREFIX}*`,
      "The staging integration names each part's object from the request (part-staging/<uploadId>/<partNumber>), so its one grant, s3:PutObject, covers the staging prefix of the block bucket and nothing else",
    );

    const headerMappings: Record<string, string> = {};
    const headerParameters: Record<string, boolean> = {};
    for (const name of STAGED_HEADERS) {
      headerMappings[`integration.request.header.x-amz-meta-${name}`] = `method.request.header.${stagedHeaderSource(name)}`;
      headerParameters[`method.request.header.${stagedHeaderSource(name)}`] = false;
    }
    const xml = "'application/xml'";
    const integration = new AwsIntegration({
      service: 's3',
      integrationHttpMethod: 'PUT',
      path: `${blockBucket.bucketName}/${PART_STAGING_PREFIX}{uploadId}/{partNumber}`,
      options: {
        credentialsRole: this.integrationRole,
        // No mapping template: the body (binary, the API's binary media types are */*) goes to S3 as it came.
        passthroughBehavior: PassthroughBehavior.WHEN_NO_TEMPLATES,
        requestParameters: {
          'integration.request.path.uploadId': 'method.request.querystring.uploadId',
          'integration.request.path.partNumber': 'method.request.querystring.partNumber',
          ...headerMappings,
        },
        integrationResponses: [
          // S3's answer to the PUT: its ETag (the MD5 of the bytes, SSE-S3) is what the client names at Complete.
          {
            statusCode: '200',
            selectionPattern: '2\\d{2}',
            responseParameters: { 'method.response.header.ETag': 'integration.response.header.ETag' },
          },
          // Anything else S3 answers is the service's failure, never the client's: retried as S3's own 500 is.
          {
            statusCode: '500',
            responseParameters: { 'method.response.header.Content-Type': xml },
            responseTemplates: {
              'application/json': s3ErrorXml('InternalError', 'We encountered an internal error. Please try again.'),
              'application/xml': s3ErrorXml('InternalError', 'We encountered an internal error. Please try again.'),
            },
          },
        ],
      },
    });
    const parts = api.root.addResource(PARTS_PATH_PART).addResource('{proxy+}');
    this.method = parts.addMethod('PUT', integration, {
      authorizationType: AuthorizationType.CUSTOM,
      authorizer: this.authorizer,
      requestParameters: {
        'method.request.querystring.uploadId': true,
        'method.request.querystring.partNumber': true,
        ...headerParameters,
      },
      methodResponses: [
        { statusCode: '200', responseParameters: { 'method.response.header.ETag': true } },
        { statusCode: '500', responseParameters: { 'method.response.header.Content-Type': true } },
      ],
    });

    // Complete reads a staged part (HeadObject, GetObject with If-Match), Complete and Abort list and remove
    // an upload's parts: the S3 function's read/write grant on the block bucket covers all of it
    // (lib/s3-endpoint.ts); it is told where they are.
    props.s3.addEnvironment('CAIRN_PART_STAGING_BUCKET', blockBucket.bucketName);

    this.viewerRequest = new CloudFrontFunction(this, 'ViewerRequest', {
      comment: 'Cairn: storage API; UploadParts over 4 MiB to /_parts, the signed Host and Authorization passed on',
      code: FunctionCode.fromFile({ filePath: S3_VIEWER_REQUEST_CODE_PATH }),
      runtime: FunctionRuntime.JS_2_0,
    });

    this.distribution = new Distribution(this, 'Distribution', {
      comment: 'Cairn: S3-compatible storage endpoint',
      defaultBehavior: {
        // The API's execute-api address, the stage as origin path. CloudFront waits up to 60 s for the
        // origin's first byte (its longest without a quota increase): a staged part's PUT into S3 and a
        // streamed GET's first bytes come well within it; a stream's length is the function's own timeout.
        // The edge key goes with every origin request, over CloudFront's own (https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/add-origin-custom-headers.html).
        origin: new RestApiOrigin(api, { readTimeout: Duration.seconds(60), customHeaders: { [EDGE_KEY]: edgeKey } }),
        // S3 clients sign their requests: an http:// request redirected would be sent again unsigned or not at all.
        viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
        allowedMethods: AllowedMethods.ALLOW_ALL,
        cachedMethods: CachedMethods.CACHE_GET_HEAD,
        cachePolicy: CachePolicy.CACHING_DISABLED,
        originRequestPolicy: OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
        // Bodies and their lengths and ETags reach clients as the function wrote them.
        compress: false,
        functionAssociations: [{ function: this.viewerRequest, eventType: FunctionEventType.VIEWER_REQUEST }],
      },
      httpVersion: HttpVersion.HTTP2_AND_3,
      priceClass: PriceClass.PRICE_CLASS_ALL,
    });
    this.endpoint = `https://${this.distribution.distributionDomainName}`;

    // cdk-nag: the choices made for an API's edge, with why.
    Validations.of(this.distribution).acknowledge(
      { id: 'AwsSolutions-CFR1', reason: 'Storage clients reach the endpoint from anywhere: no geographic restriction' },
      {
        id: 'AwsSolutions-CFR2',
        reason:
          "No AWS WAF web ACL by default: it would cost $5 a month plus $1 per rule and $0.60 per million requests, more than the idle stack, while every request is signed and checked by the S3 function or the staging authoriser. Associate one (the distribution's webAclId) if the endpoint draws abuse",
      },
      {
        id: 'AwsSolutions-CFR3',
        reason:
          "Standard logs would need a logging bucket with ACLs (and its own findings): the storage API's stage logs every request that reaches it (JSON access logs), and CloudFront's metrics count the rest",
      },
      {
        id: 'AwsSolutions-CFR4',
        reason:
          "The distribution has only CloudFront's default *.cloudfront.net certificate, whose TLS policy CloudFront sets; a custom storage domain is served by API Gateway with TLS 1.2",
      },
    );
  }
}

/** The part-staging path, made in the stack's own scope (lib/cairn-stack.ts). */
export function addPartStaging(stack: Stack, props: PartStagingProps): PartStaging {
  return new PartStaging(stack, 'PartStaging', props);
}
