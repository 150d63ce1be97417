/**
 * cdk-nag's AwsSolutions rules over the whole app: the Cairn stack without
 * custom domains, with them in us-east-1, and with them elsewhere (then
 * also the us-east-1 stack holding the sites' certificate). Every finding
 * is fixed or acknowledged next to its construct with a reason
 * (`Validations.of(construct).acknowledge`, cdk-nag v3's suppression), so
 * the checks report nothing; and the acknowledgments are narrow enough
 * that a new wildcard or an unprotected resource is still reported.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { App, type CfnElement, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { addCairnStacks, type CairnApp } from '../../lib/app.js';
import { PROJECT_ROOT } from '../../lib/functions.js';

type Json = any;

// The bundles are covered by cairn-stack.test.ts; the rules read the template.
const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };
// The feature flags the CDK CLI passes from cdk.json, as `cdk deploy` runs the checks: with a
// known region, enablePartitionLiterals writes `arn:aws:` where an acknowledgment might expect a token.
const CDK_JSON_CONTEXT = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'cdk.json'), 'utf8')).context;
const DOMAINS = {
  'cairn:hostedZoneId': 'Z0123456789ABCDEFGHIJ',
  'cairn:hostedZoneName': 'example.com',
  'cairn:bucketEndpointDomain': 's3.example.com',
  'cairn:storagePublicDomain': 'storage.example.com',
  'cairn:sitesDomain': 'sites.example.com',
  'cairn:apiDomain': 'api.example.com',
  'cairn:alarmEmail': 'ops@example.com',
};

// OIDC sign-in and e-mail (lib/sign-in-settings.ts): the stack makes the secret holding their secrets.
const SIGN_IN = {
  'cairn:oidcIssuer': 'https://accounts.example.org',
  'cairn:oidcClientId': 'cairn-web',
  'cairn:mailFrom': 'cairn@example.org',
};

const apps: App[] = [];
afterAll(() => {
  for (const app of apps) fs.rmSync(app.outdir, { recursive: true, force: true });
});

function cairnApp(context: Record<string, unknown> = {}, region?: string): CairnApp {
  const app = new App({ context: { ...CDK_JSON_CONTEXT, ...NO_BUNDLING, ...context } });
  apps.push(app);
  return addCairnStacks(app, region ? { CDK_DEFAULT_REGION: region } : {});
}

/** Every finding the AwsSolutions pack reports in a stack, as `<rule> at <construct path>`. */
function findings(stack: Stack): string[] {
  const report = new AwsSolutionsChecks().validateScope(stack);
  return report.violations
    .flatMap((v) => v.violatingResources.map((r) => `${v.ruleName} at ${r.constructPath ?? r.resourceLogicalId}`))
    .sort();
}

describe.each([
  ['without custom domains', {}, undefined],
  ['with custom domains, in us-east-1', DOMAINS, 'us-east-1'],
  ['with custom domains, in eu-west-1', DOMAINS, 'eu-west-1'],
  ['with OIDC sign-in and e-mail, their secret made by the stack', SIGN_IN, undefined],
] as const)('AwsSolutions %s', (_name, context, region) => {
  let made: CairnApp;
  beforeAll(() => {
    made = cairnApp(context, region);
  });

  test('finds nothing unacknowledged in the Cairn stack', () => {
    expect(findings(made.stack)).toEqual([]);
  });

  test('finds nothing unacknowledged in the sites certificate stack, when there is one', () => {
    expect(made.sitesCertificateStack !== undefined).toBe(region === 'eu-west-1');
    if (made.sitesCertificateStack) expect(findings(made.sitesCertificateStack)).toEqual([]);
  });
});

describe('the acknowledgments', () => {
  let made: CairnApp;
  let resources: Record<string, Json>;
  beforeAll(() => {
    made = cairnApp(DOMAINS, 'us-east-1');
    resources = Template.fromStack(made.stack).toJSON().Resources;
  });
  const id = (c: IConstruct) => made.stack.getLogicalId(c.node.defaultChild as CfnElement);

  test('every one gives a reason', () => {
    const acknowledged: Array<[string, string]> = [];
    for (const c of made.stack.node.findAll()) {
      for (const m of c.node.metadata.filter((e) => e.type === 'aws:cdk:acknowledged-rules')) {
        for (const [rule, reason] of Object.entries(m.data as Record<string, string>)) acknowledged.push([rule, reason]);
      }
    }
    expect(acknowledged.length).toBeGreaterThan(20);
    for (const [rule, reason] of acknowledged) {
      expect(rule).toMatch(/AwsSolutions-[A-Z]+\d+/);
      expect(reason.length).toBeGreaterThan(40);
    }
  });

  test("the only resource * in any function role's policies is X-Ray's, and the worker's ListSecrets, which take no resource (what IAM5[Resource::*] is acknowledged for)", () => {
    const roleIds = new Set(Object.values(made.stack.functions).map((fn) => id(fn.role!)));
    const everyStarred = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((role: Json) => roleIds.has(role.Ref)))
      .flatMap((p) => p.Properties.PolicyDocument.Statement)
      .filter((s: Json) => [s.Resource].flat().includes('*'));
    const listing = { Sid: 'ListBuildSecrets', Effect: 'Allow', Action: 'secretsmanager:ListSecrets', Resource: '*' };
    const isListing = (s: Json) => s.Sid === listing.Sid;
    expect(everyStarred.filter(isListing)).toEqual([listing]);
    const starred = everyStarred.filter((s: Json) => !isListing(s));
    expect(starred.length).toBe(roleIds.size);
    // The first account's handler runs once, untraced: no * at all.
    expect(
      JSON.stringify(
        Object.values(resources).filter(
          (r) =>
            r.Type === 'AWS::IAM::Policy' &&
            r.Properties.Roles.some((role: Json) => role.Ref === id(made.stack.firstAccount.function.role!)),
        ),
      ),
    ).not.toContain('"*"');
    for (const s of starred) expect([s.Action].flat().sort()).toEqual(['xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
  });

  test('a resource added without care is still reported: an unlogged, TLS-optional bucket', () => {
    const extra = cairnApp();
    new Bucket(extra.stack, 'Careless');
    expect(findings(extra.stack)).toEqual(
      expect.arrayContaining([
        `AwsSolutions-S1 at ${extra.stack.stackName}/Careless/Resource`,
        `AwsSolutions-S10 at ${extra.stack.stackName}/Careless/Resource`,
      ]),
    );
  });

  test('a wildcard grant nobody acknowledged is still reported: write access to the bucket for the read-only gateway', () => {
    const extra = cairnApp();
    extra.stack.data.blockBucket.grantWrite(extra.stack.functions.gateway);
    const found = findings(extra.stack);
    expect(found).toContain(
      `AwsSolutions-IAM5[Action::s3:DeleteObject*] at ${extra.stack.stackName}/Gateway/Function/ServiceRole/DefaultPolicy/Resource`,
    );
    expect(found.every((f) => f.includes('/Gateway/'))).toBe(true);
  });
});
