/**
 * Preview images in AWS: the preview function (functions/preview/handler.ts),
 * which the deploy worker invokes asynchronously after a deploy ends
 * DEPLOYED. It runs @sparticuz/chromium, whose packed Amazon Linux build is
 * x86_64 only and must stay beside its own code (so the package, and
 * playwright-core, are left out of the esbuild bundle and copied into the
 * function's node_modules). It reads the site and deploy, the deploy's
 * blocks, and writes the picture's blocks, its pin, the deploy's
 * previewImage (with its reference item in the objects table) and a line of
 * the deploy's log. The worker gets CAIRN_PREVIEW=on and the function's
 * name only here, so a stack without this construct takes no pictures.
 */
import { Duration } from 'aws-cdk-lib';
import { Architecture, type IFunction } from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import type { CairnData } from './data.js';
import { CairnFunction } from './functions.js';
import { acknowledgeBucketGrant, acknowledgeTableGrants } from './grant-acknowledgements.js';

/** Left out of the bundle and copied with their dependencies (lib/functions.ts). */
export const PREVIEW_EXTERNAL_PACKAGES = ['@sparticuz/chromium', 'playwright-core'];

export interface DeployPreviewsProps {
  readonly data: CairnData;
  /** The functions' common environment (tables, bucket, log level, ...). */
  readonly environment: Record<string, string>;
  /** The worker that asks for pictures: it may invoke the function and is told its name. */
  readonly deployWorker: IFunction & Pick<NodejsFunction, 'addEnvironment'>;
}

export class DeployPreviews extends Construct {
  readonly function: NodejsFunction;

  constructor(scope: Construct, id: string, props: DeployPreviewsProps) {
    super(scope, id);
    const { tables, blockBucket } = props.data;

    this.function = new CairnFunction(this, 'Preview', {
      name: 'preview',
      description: "Cairn: preview images (a deploy's index page in headless Chromium, stored on IPFS)",
      // @sparticuz/chromium ships x64 binaries only.
      architecture: Architecture.X86_64,
      // Chromium's own guidance for Lambda; it also buys the CPU share a page needs to render.
      memorySize: 1600,
      // A cold start unpacks Chromium (seconds); a shot is given up at CAIRN_PREVIEW_TIMEOUT (30 s).
      timeout: Duration.seconds(60),
      environment: props.environment,
      externalPackages: PREVIEW_EXTERNAL_PACKAGES,
      tracing: true,
    }).function;
    // A picture is best effort: a failed invocation is not tried again, and a request waits at most an hour.
    this.function.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.hours(1) });

    tables.sites.grantReadData(this.function);
    tables.deploys.grantReadWriteData(this.function);
    tables.objects.grantReadWriteData(this.function);
    blockBucket.grantReadWrite(this.function);
    acknowledgeTableGrants(this.function, [tables.sites, tables.deploys, tables.objects]);
    acknowledgeBucketGrant(this.function, blockBucket, 'readWrite');

    this.function.grantInvoke(props.deployWorker);
    props.deployWorker.addEnvironment('CAIRN_PREVIEW', 'on');
    props.deployWorker.addEnvironment('CAIRN_PREVIEW_FUNCTION', this.function.functionName);
  }
}
