#!/usr/bin/env node
/**
 * The Cairn CDK app. Synthesizes offline: the stack is environment-agnostic
 * (no account or region lookups) and reads only plain context values:
 *
 *   cdk deploy -c cairn:storagePublicDomain=storage.example.com \
 *              -c cairn:bucketEndpointDomain=s3.example.com \
 *              -c cairn:publicGatewayUrl=https://ipfs.io \
 *              -c cairn:sitesDomain=sites.example.com \
 *              -c cairn:sitesCertificateArn=arn:aws:acm:us-east-1:...:certificate/... \
 *              -c cairn:logLevel=debug -c cairn:stackName=CairnStaging
 */
import { App } from 'aws-cdk-lib';
import { CairnStack, type CairnLogLevel } from '../lib/cairn-stack.js';

const app = new App();

function context(key: string): string | undefined {
  const value: unknown = app.node.tryGetContext(`cairn:${key}`);
  if (value === undefined || value === null || value === '') return undefined;
  return String(value);
}

const LOG_LEVELS: readonly CairnLogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];
const logLevel = context('logLevel');
if (logLevel !== undefined && !LOG_LEVELS.includes(logLevel as CairnLogLevel)) {
  throw new Error(`cairn:logLevel must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
}

new CairnStack(app, context('stackName') ?? 'Cairn', {
  description: 'Cairn: team web sites and S3-compatible storage on IPFS',
  bucketEndpointDomain: context('bucketEndpointDomain'),
  storagePublicDomain: context('storagePublicDomain'),
  publicGatewayUrl: context('publicGatewayUrl'),
  sitesDomain: context('sitesDomain'),
  sitesCertificateArn: context('sitesCertificateArn'),
  logLevel: logLevel as CairnLogLevel | undefined,
});

app.synth();
