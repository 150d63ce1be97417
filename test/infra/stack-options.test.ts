/**
 * Deployer options (CairnStackProps, set from `-c cairn:*` context in
 * bin/app.ts) reach the functions' environment, without cycles.
 */
import * as fs from 'node:fs';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { CairnStack } from '../../lib/cairn-stack.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

// The bundles are covered by cairn-stack.test.ts; skip bundling here.
const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

let stack: CairnStack;
const apps: App[] = [];
let resources: Record<string, Json>;

beforeAll(() => {
  const app = new App({ context: NO_BUNDLING });
  apps.push(app);
  stack = new CairnStack(app, 'CairnOptions', {
    bucketEndpointDomain: 's3.example.com',
    storagePublicDomain: 'storage.example.com',
    publicGatewayUrl: 'https://ipfs.example.net',
    logLevel: 'debug',
  });
  resources = Template.fromStack(stack).toJSON().Resources;
}, 120_000);

afterAll(() => {
  for (const app of apps) fs.rmSync(app.outdir, { recursive: true, force: true });
});

function env(name: keyof CairnStack['functions']): Record<string, Json> {
  const logicalId = stack.getLogicalId(stack.functions[name].node.defaultChild as CfnElement);
  return resources[logicalId].Properties.Environment.Variables;
}

test.each([['graphql'], ['s3'], ['gateway'], ['deployWorker']] as const)('%s gets every deployer option', (name) => {
  const vars = env(name);
  expect(vars.CAIRN_BUCKET_ENDPOINT_DOMAIN).toBe('s3.example.com');
  expect(vars.CAIRN_STORAGE_PUBLIC_DOMAIN).toBe('storage.example.com');
  expect(vars.CAIRN_PUBLIC_GATEWAY_URL).toBe('https://ipfs.example.net');
  expect(vars.CAIRN_LOG_LEVEL).toBe('debug');
});

test('without options, domains are left to the runtime and the public gateway defaults to our gateway', () => {
  const app = new App({ context: NO_BUNDLING });
  apps.push(app);
  const plain = new CairnStack(app, 'CairnPlain');
  // No synthesis needed: read the construct tree.
  const cfn = (name: keyof CairnStack['functions']) =>
    plain.resolve((plain.functions[name].node.defaultChild as Json).environment).variables as Record<string, Json>;
  for (const name of ['graphql', 's3', 'gateway', 'deployWorker'] as const) {
    const vars = cfn(name);
    expect(vars.CAIRN_BUCKET_ENDPOINT_DOMAIN).toBeUndefined();
    expect(vars.CAIRN_STORAGE_PUBLIC_DOMAIN).toBeUndefined();
    expect(vars.CAIRN_LOG_LEVEL).toBe('info');
  }
  expect(cfn('graphql').CAIRN_PUBLIC_GATEWAY_URL).toEqual(cfn('graphql').CAIRN_GATEWAY_URL);
  // The gateway is never given its own URL.
  expect(cfn('gateway').CAIRN_PUBLIC_GATEWAY_URL).toBeUndefined();
  expect(cfn('gateway').CAIRN_GATEWAY_URL).toBeUndefined();
});
