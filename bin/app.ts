#!/usr/bin/env node
/**
 * The Cairn CDK app. Synthesizes offline: the stack is environment-agnostic
 * (no account or region lookups) and reads only plain context values
 * (every one is listed in lib/app.ts and docs/aws.md):
 *
 *   cdk deploy -c cairn:hostedZoneId=Z0123456789ABCDEFGHIJ -c cairn:hostedZoneName=example.com \
 *              -c cairn:bucketEndpointDomain=s3.example.com \
 *              -c cairn:storagePublicDomain=storage.example.com \
 *              -c cairn:sitesDomain=sites.example.com \
 *              -c cairn:publicGatewayUrl=https://ipfs.io \
 *              -c cairn:logLevel=debug -c cairn:stackName=CairnStaging
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { addCairnStacks } from '../lib/app.js';

const app = new App();
// cdk-nag's AwsSolutions rules run on every synth and deploy: a finding
// neither fixed nor acknowledged (with its reason) fails it.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
addCairnStacks(app);
app.synth();
