/**
 * The stack's `cairn:s3MinPartSize` context value: the S3 function's
 * CAIRN_S3_MIN_PART_SIZE, which a stack that the S3 suites run against sets
 * to 0 for their tiny parts (docs/testing.md). Without it the function
 * keeps its default (S3's 5 MiB, lowered to the REST API's 4 MiB body).
 */
import * as fs from 'node:fs';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { CairnStack } from '../../lib/cairn-stack.js';
import { loadConfig } from '../../functions/core/config.js';

const apps: App[] = [];
afterAll(() => {
  for (const app of apps) fs.rmSync(app.outdir, { recursive: true, force: true });
});

/** The part-size settings of the S3 function's environment in a stack synthesized with `context`. */
function s3Environment(context: Record<string, unknown>): Record<string, string> {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [], ...context } });
  apps.push(app);
  const stack = new CairnStack(app, `CairnPartSize${apps.length}`);
  const json = Template.fromStack(stack).toJSON();
  const vars = json.Resources[stack.getLogicalId(stack.functions.s3.node.defaultChild as CfnElement)].Properties.Environment.Variables;
  const { CAIRN_MAX_REQUEST_BODY, CAIRN_S3_MIN_PART_SIZE } = vars;
  return { CAIRN_MAX_REQUEST_BODY, ...(CAIRN_S3_MIN_PART_SIZE === undefined ? {} : { CAIRN_S3_MIN_PART_SIZE }) };
}

test('without the context value the S3 function keeps its default; with it, the function reads the size given', () => {
  const plain = s3Environment({});
  expect(plain.CAIRN_S3_MIN_PART_SIZE).toBeUndefined();
  expect(loadConfig(plain).storage.minPartSize).toBe(4 * 1024 * 1024);
  for (const [value, bytes] of [
    ['0', 0],
    [0, 0],
    ['64KiB', 64 * 1024],
  ] as const) {
    const env = s3Environment({ 'cairn:s3MinPartSize': value });
    expect(env.CAIRN_S3_MIN_PART_SIZE).toBe(String(value));
    expect(loadConfig(env).storage.minPartSize).toBe(bytes);
  }
});

test.each(['-1', '5 MB', 'small', '0KiB'])('cairn:s3MinPartSize=%s is refused at synthesis, as the function would refuse it', (value) => {
  expect(() => s3Environment({ 'cairn:s3MinPartSize': value })).toThrow(/cairn:s3MinPartSize must be a size/);
  expect(() => loadConfig({ CAIRN_S3_MIN_PART_SIZE: value })).toThrow(/^CAIRN_S3_MIN_PART_SIZE: /);
});
