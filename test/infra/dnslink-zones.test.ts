/**
 * DNSLink zones on the stack (CairnStackProps.dnsLinkZones, context
 * `cairn:dnslinkZones`, lib/domains.ts grantDnsLinkRecords): the functions
 * that publish (the GraphQL API, the deploy worker) are told the zones and
 * may change only `_dnslink` TXT records in exactly those hosted zones,
 * UPSERT and DELETE, and list their records; no other function may, and a
 * stack without zones grants nothing of Route 53. Read from the
 * synthesized template.
 */
import * as fs from 'node:fs';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { addCairnStacks } from '../../lib/app.js';
import { CairnStack } from '../../lib/cairn-stack.js';

type Json = any;

// The bundles are covered by cairn-stack.test.ts; skip bundling here.
const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };
const apps: App[] = [];
afterAll(() => {
  for (const app of apps) fs.rmSync(app.outdir, { recursive: true, force: true });
});

const arr = <T = Json>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const newApp = (context: Record<string, unknown> = {}) => {
  const app = new App({ context: { ...NO_BUNDLING, ...context } });
  apps.push(app);
  return app;
};

/** Every statement of the policies on each function's role, and each function's variables. */
function read(stack: CairnStack) {
  const resources: Record<string, Json> = Template.fromStack(stack).toJSON().Resources;
  const roleOf = (name: keyof CairnStack['functions']) =>
    resources[stack.getLogicalId(stack.functions[name].node.defaultChild as CfnElement)].Properties.Role['Fn::GetAtt'][0];
  const statements = (name: keyof CairnStack['functions']) =>
    Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && arr(r.Properties.Roles).some((ref: Json) => ref.Ref === roleOf(name)))
      .flatMap((p) => arr(p.Properties.PolicyDocument.Statement));
  const variables = (name: keyof CairnStack['functions']) =>
    resources[stack.getLogicalId(stack.functions[name].node.defaultChild as CfnElement)].Properties.Environment.Variables;
  const route53 = (name: keyof CairnStack['functions']) =>
    statements(name).filter((s) => arr<string>(s.Action).some((a) => a.startsWith('route53:')));
  const everyRoute53 = Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy')
    .flatMap((p) => arr(p.Properties.PolicyDocument.Statement))
    .filter((s) => arr<string>(s.Action).some((a) => a.startsWith('route53:')));
  return { route53, variables, everyRoute53 };
}

const zoneArn = (id: string) => ({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:route53:::hostedzone/${id}`]] });

test('the API and the deploy worker may change only _dnslink TXT records, UPSERT or DELETE, in exactly the zones named', () => {
  const stack = new CairnStack(newApp(), 'CairnDnsLink', {
    dnsLinkZones: [
      { zoneName: 'Example.com.', hostedZoneId: 'Z0123456789ABC' },
      { zoneName: 'sites.example.org', hostedZoneId: '/hostedzone/Z0DEF456' },
    ],
  });
  const { route53, variables, everyRoute53 } = read(stack);
  for (const name of ['graphql', 'deployWorker'] as const) {
    expect(variables(name).CAIRN_DNSLINK_ZONES).toBe('example.com=Z0123456789ABC,sites.example.org=Z0DEF456');
    expect(route53(name)).toEqual([
      {
        Sid: 'WriteDnsLinkRecords',
        Effect: 'Allow',
        Action: 'route53:ChangeResourceRecordSets',
        Resource: [zoneArn('Z0123456789ABC'), zoneArn('Z0DEF456')],
        Condition: {
          'ForAllValues:StringLike': {
            'route53:ChangeResourceRecordSetsNormalizedRecordNames': [
              '_dnslink.example.com',
              '_dnslink.*.example.com',
              '_dnslink.sites.example.org',
              '_dnslink.*.sites.example.org',
            ],
          },
          'ForAllValues:StringEquals': {
            'route53:ChangeResourceRecordSetsRecordTypes': ['TXT'],
            'route53:ChangeResourceRecordSetsActions': ['UPSERT', 'DELETE'],
          },
          Null: {
            'route53:ChangeResourceRecordSetsNormalizedRecordNames': 'false',
            'route53:ChangeResourceRecordSetsRecordTypes': 'false',
            'route53:ChangeResourceRecordSetsActions': 'false',
          },
        },
      },
      {
        Sid: 'ReadDnsLinkRecords',
        Effect: 'Allow',
        Action: 'route53:ListResourceRecordSets',
        Resource: [zoneArn('Z0123456789ABC'), zoneArn('Z0DEF456')],
      },
    ]);
  }
  // Nobody else: not the S3 function, the gateway or the preview function.
  for (const name of ['s3', 'gateway', 'preview'] as const) {
    expect(route53(name)).toEqual([]);
    expect(variables(name).CAIRN_DNSLINK_ZONES).toBeUndefined();
  }
  expect(everyRoute53).toHaveLength(4);
}, 120_000);

test('without zones, no function is told of any or granted anything of Route 53', () => {
  const { route53, variables, everyRoute53 } = read(new CairnStack(newApp(), 'CairnNoDnsLink'));
  expect(everyRoute53).toEqual([]);
  for (const name of ['graphql', 'deployWorker'] as const) {
    expect(route53(name)).toEqual([]);
    expect(variables(name).CAIRN_DNSLINK_ZONES).toBeUndefined();
  }
}, 120_000);

test('cairn:dnslinkZones gives the zones as name=id pairs; a zone without its id, a bad id or a name twice stops synthesis', () => {
  const { stack } = addCairnStacks(newApp({ 'cairn:dnslinkZones': 'example.com=Z0123456789ABC, example.net=Z0NET1' }), {});
  expect(stack.resolve((stack.functions.deployWorker.node.defaultChild as Json).environment).variables.CAIRN_DNSLINK_ZONES).toBe(
    'example.com=Z0123456789ABC,example.net=Z0NET1',
  );
  const refused = (value: string) => () => addCairnStacks(newApp({ 'cairn:dnslinkZones': value }), {});
  expect(refused('example.com')).toThrow(/each zone needs its hosted zone id/);
  expect(refused('example.com=not-an-id')).toThrow(/hostedZoneId must be a Route 53 hosted zone id/);
  expect(refused('exa mple.com=Z0123')).toThrow(/must be a domain name/);
  expect(refused('example.com=Z01,Example.com.=Z02')).toThrow(/names example.com twice/);
  expect(() => new CairnStack(newApp(), 'CairnBadZone', { dnsLinkZones: [{ zoneName: '*.example.com', hostedZoneId: 'Z0123' }] })).toThrow(
    /must be a domain name/,
  );
}, 120_000);
