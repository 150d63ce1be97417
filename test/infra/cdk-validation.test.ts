/**
 * CDK's own CloudFormation validation over the whole stack: aws-cdk-lib
 * checks a synthesized template against the CloudFormation resource
 * schemas with a WebAssembly rule engine (test/support/cdk-synthesis.ts
 * turns it off for the other suites, which synthesize dozens of times).
 * Here it runs once over Cairn's stack and must find nothing, and once over
 * a stack with known faults and must find them. Long (about 40 s of CPU):
 * `npm run test:full` and CI run it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { App, CfnResource, Stack } from 'aws-cdk-lib';
import { CairnStack } from '../../lib/cairn-stack.js';
import { PROJECT_ROOT } from '../../lib/functions.js';

type Json = any;

describe("CDK's own CloudFormation validation", () => {
  /** Synthesizes with the validation the other tests go without (test/support/cdk-synthesis.ts), and answers its findings. */
  function validated(build: (app: App) => void): Json[] {
    const saved = process.env.CDK_VALIDATION;
    delete process.env.CDK_VALIDATION;
    const cdkJson = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'cdk.json'), 'utf8'));
    const checked = new App({ context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } });
    try {
      build(checked);
      const report = JSON.parse(fs.readFileSync(path.join(checked.synth().directory, 'validation-report.json'), 'utf8'));
      return report.pluginReports.flatMap((r: Json) => r.violations);
    } finally {
      process.env.CDK_VALIDATION = saved;
      fs.rmSync(checked.outdir, { recursive: true, force: true });
    }
  }

  test('finds nothing in the whole stack', () => {
    expect(validated((checked) => new CairnStack(checked, 'Cairn'))).toEqual([]);
  }, 120_000);

  test('finds what is wrong: an unknown property and a wrong type', () => {
    const found = validated((checked) => {
      const bad = new Stack(checked, 'Bad');
      new CfnResource(bad, 'Queue', { type: 'AWS::SQS::Queue', properties: { VisibilityTimeout: 'soon', NoSuchProperty: 1 } });
    });
    expect(found.map((v) => v.description).sort()).toEqual([
      expect.stringContaining('NoSuchProperty'),
      expect.stringContaining('VisibilityTimeout'),
    ]);
  }, 60_000);
});
