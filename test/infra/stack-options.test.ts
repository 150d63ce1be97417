/**
 * Deployer options (CairnStackProps, set from `-c cairn:*` context by
 * lib/app.ts) reach the functions' environment, without cycles; with a
 * hosted zone they become certificates, custom domains and records
 * (lib/domains.ts), with and without a region of us-east-1.
 */
import * as fs from 'node:fs';
import { App, type CfnElement, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { addCairnStacks } from '../../lib/app.js';
import { CairnStack } from '../../lib/cairn-stack.js';
import { STREAMING_TIMEOUT, StreamingRestApi } from '../../lib/storage-api.js';

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

test('cairn:signup (or the signup prop) tells the GraphQL function who may sign up; invite by default; a bad one stops synthesis', () => {
  const signupOf = (context: Record<string, unknown>, props: { signup?: 'open' | 'invite' | 'closed' } = {}) => {
    const a = new App({ context: { ...NO_BUNDLING, ...context } });
    apps.push(a);
    const s = new CairnStack(a, 'CairnSignup', props);
    const vars = (name: keyof CairnStack['functions']) =>
      s.resolve((s.functions[name].node.defaultChild as Json).environment).variables as Record<string, Json>;
    // Only the function that answers /auth/ is told.
    for (const other of ['s3', 'gateway', 'deployWorker'] as const) expect(vars(other).CAIRN_SIGNUP).toBeUndefined();
    return vars('graphql').CAIRN_SIGNUP;
  };
  expect(signupOf({})).toBe('invite');
  expect(signupOf({ 'cairn:signup': 'open' })).toBe('open');
  expect(signupOf({ 'cairn:signup': 'open' }, { signup: 'closed' })).toBe('closed');
  expect(() => signupOf({ 'cairn:signup': 'everyone' })).toThrow('cairn:signup must be "open", "invite" or "closed", got "everyone"');
});

// ------------------------------------------------------------ custom domains

describe('custom domains', () => {
  const ZONE = { 'cairn:hostedZoneId': 'Z0123456789ABCDEFGHIJ', 'cairn:hostedZoneName': 'example.com' };
  const ALL = {
    ...ZONE,
    'cairn:bucketEndpointDomain': 's3.example.com',
    'cairn:storagePublicDomain': 'storage.example.com',
    'cairn:sitesDomain': 'sites.example.com',
    'cairn:apiDomain': 'api.example.com',
  };

  function app(context: Record<string, unknown>, region?: string) {
    const a = new App({ context: { ...NO_BUNDLING, ...context } });
    apps.push(a);
    return addCairnStacks(a, region ? { CDK_DEFAULT_REGION: region } : {});
  }
  const of = (s: Stack, c: IConstruct) => s.getLogicalId(c.node.defaultChild as CfnElement);
  const byType = (json: Json, type: string): Array<[string, Json]> =>
    Object.entries<Json>(json.Resources).filter(([, r]) => r.Type === type);

  test('without a hosted zone: no certificate, custom domain or record; the S3 API at its distribution', () => {
    const { stack: s, sitesCertificateStack } = app({ 'cairn:bucketEndpointDomain': 's3.example.com' });
    expect(sitesCertificateStack).toBeUndefined();
    const json = Template.fromStack(s).toJSON();
    for (const type of [
      'AWS::CertificateManager::Certificate',
      'AWS::ApiGateway::DomainName',
      'AWS::ApiGateway::BasePathMapping',
      'AWS::Route53::RecordSet',
    ]) {
      expect(byType(json, type)).toEqual([]);
    }
    expect(byType(json, 'AWS::ApiGateway::RestApi')).toHaveLength(1);
    expect(s.domains).toBeUndefined();
    // Clients are given the storage API's distribution; the API's own address is an output of its own.
    expect(json.Outputs.StorageEndpoint.Value).toEqual({
      'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [of(s, s.partStaging.distribution), 'DomainName'] }]],
    });
    expect(json.Outputs.StorageApiUrl.Value['Fn::Join'][1][0]).toBe('https://');
    expect(json.Outputs.StorageApiUrl.Value['Fn::Join'][1]).toContainEqual({ Ref: of(s, s.storageApi.api) });
    // The name still reaches the functions (virtual-host addressing once a wildcard is routed to the API by hand).
    expect(json.Resources[of(s, s.functions.s3)].Properties.Environment.Variables.CAIRN_BUCKET_ENDPOINT_DOMAIN).toBe('s3.example.com');
  });

  test('cairn:deployConcurrency and cairn:buildTimeoutSeconds size the worker, its queue and the build project', () => {
    const { stack: s } = app({ 'cairn:deployConcurrency': '5', 'cairn:buildTimeoutSeconds': '3600' });
    const json = Template.fromStack(s).toJSON();
    const worker = json.Resources[of(s, s.functions.deployWorker)].Properties;
    // The queue bounds the deploys; nothing is reserved unless asked for.
    expect(worker.ReservedConcurrentExecutions).toBeUndefined();
    expect(worker.Environment.Variables.CAIRN_BUILD_TIMEOUT).toBe('3600');
    const [[, mapping]] = byType(json, 'AWS::Lambda::EventSourceMapping');
    expect(mapping.Properties.ScalingConfig).toEqual({ MaximumConcurrency: 5 });
    expect(json.Resources[of(s, s.buildProject)].Properties.TimeoutInMinutes).toBe(60);
    expect(() => app({ 'cairn:deployConcurrency': 'four' })).toThrow('cairn:deployConcurrency must be a whole number, got "four"');
    expect(() => app({ 'cairn:buildTimeoutSeconds': '-1' })).toThrow('cairn:buildTimeoutSeconds must be a whole number, got "-1"');
  });

  test('cairn:workerConcurrency reserves the deploy worker that much concurrency, and no other function any', () => {
    const { stack: s } = app({ 'cairn:deployConcurrency': '3', 'cairn:workerConcurrency': '5' });
    const json = Template.fromStack(s).toJSON();
    expect(json.Resources[of(s, s.functions.deployWorker)].Properties.ReservedConcurrentExecutions).toBe(5);
    const reserving = byType(json, 'AWS::Lambda::Function').filter(([, f]) => f.Properties.ReservedConcurrentExecutions !== undefined);
    expect(reserving.map(([id]) => id)).toEqual([of(s, s.functions.deployWorker)]);
  });

  test.each([
    [{ 'cairn:workerConcurrency': 'ten' }, 'cairn:workerConcurrency must be a whole number, got "ten"'],
    [{ 'cairn:workerConcurrency': '-4' }, 'cairn:workerConcurrency must be a whole number, got "-4"'],
    // Below the queue's deploys plus the tick and a build's end event, the worker would throttle itself.
    [{ 'cairn:workerConcurrency': '3' }, 'must be a whole number of at least 4: cairn:deployConcurrency (2) plus'],
    [{ 'cairn:workerConcurrency': '0' }, 'must be a whole number of at least 4'],
    [{ 'cairn:deployConcurrency': '5', 'cairn:workerConcurrency': '6' }, 'at least 7: cairn:deployConcurrency (5)'],
  ])('a bad cairn:workerConcurrency stops synthesis: %j', (context, message) => {
    expect(() => app(context)).toThrow(message);
  });

  test('a reservation given as a prop is checked the same way', () => {
    const a = new App({ context: NO_BUNDLING });
    apps.push(a);
    expect(() => new CairnStack(a, 'CairnHalf', { workerConcurrency: 4.5 })).toThrow('got 4.5');
  });

  describe('with a hosted zone, the stack in us-east-1', () => {
    let s: CairnStack;
    let json: Json;
    beforeAll(() => {
      const made = app(ALL, 'us-east-1');
      expect(made.sitesCertificateStack).toBeUndefined();
      s = made.stack;
      json = Template.fromStack(s).toJSON();
    });
    const domainNamed = (name: string) => {
      const found = byType(json, 'AWS::ApiGateway::DomainName').filter(([, d]) => d.Properties.DomainName === name);
      expect(found).toHaveLength(1);
      return found[0]!;
    };

    test('one regional certificate for the API domains and one for *.<sitesDomain>, both validated by DNS in the zone', () => {
      const certs = byType(json, 'AWS::CertificateManager::Certificate').map(([id, c]) => [id, c.Properties] as const);
      expect(certs).toHaveLength(2);
      const api = certs.find(([, p]) => p.DomainName === 's3.example.com')![1];
      expect(api.SubjectAlternativeNames).toEqual(['*.s3.example.com', '*.storage.example.com', 'api.example.com']);
      expect(api.ValidationMethod).toBe('DNS');
      for (const o of api.DomainValidationOptions) expect(o.HostedZoneId).toBe('Z0123456789ABCDEFGHIJ');
      const sites = certs.find(([, p]) => p.DomainName === '*.sites.example.com')!;
      expect(sites[1].DomainValidationOptions).toEqual([{ DomainName: '*.sites.example.com', HostedZoneId: 'Z0123456789ABCDEFGHIJ' }]);
      const dist = json.Resources[of(s, s.siteCdn.distribution)].Properties.DistributionConfig;
      expect(dist.Aliases).toEqual(['*.sites.example.com']);
      expect(dist.ViewerCertificate).toEqual({
        AcmCertificateArn: { Ref: sites[0] },
        SslSupportMethod: 'sni-only',
        MinimumProtocolVersion: 'TLSv1.2_2021',
      });
    });

    test('<bucketEndpointDomain> and its wildcard: regional custom domains (TLS 1.2) mapped with no base path to the S3 API stage, with alias records', () => {
      const [certId] = byType(json, 'AWS::CertificateManager::Certificate').find(([, c]) => c.Properties.DomainName === 's3.example.com')!;
      for (const name of ['s3.example.com', '*.s3.example.com']) {
        const [domainId, domain] = domainNamed(name);
        expect(domain.Properties).toEqual({
          DomainName: name,
          EndpointConfiguration: { Types: ['REGIONAL'] },
          RegionalCertificateArn: { Ref: certId },
          SecurityPolicy: 'TLS_1_2',
        });
        const mappings = byType(json, 'AWS::ApiGateway::BasePathMapping').filter(([, m]) => m.Properties.DomainName.Ref === domainId);
        expect(mappings.map(([, m]) => m.Properties)).toEqual([
          { DomainName: { Ref: domainId }, RestApiId: { Ref: of(s, s.storageApi.api) }, Stage: { Ref: of(s, s.storageApi.stage) } },
        ]);
        const records = byType(json, 'AWS::Route53::RecordSet').filter(([, r]) => r.Properties.Name === `${name}.`);
        expect(records.map(([, r]) => r.Properties)).toEqual([
          {
            Name: `${name}.`,
            Type: 'A',
            HostedZoneId: 'Z0123456789ABCDEFGHIJ',
            AliasTarget: {
              DNSName: { 'Fn::GetAtt': [domainId, 'RegionalDomainName'] },
              HostedZoneId: { 'Fn::GetAtt': [domainId, 'RegionalHostedZoneId'] },
            },
          },
        ]);
      }
    });

    test('StorageEndpoint and every function that hands it out say https://<bucketEndpointDomain>; the functions know the domains', () => {
      expect(json.Outputs.StorageEndpoint.Value).toBe('https://s3.example.com');
      const vars = (fn: keyof CairnStack['functions']) => json.Resources[of(s, s.functions[fn])].Properties.Environment.Variables;
      expect(vars('graphql').CAIRN_STORAGE_ENDPOINT).toBe('https://s3.example.com');
      expect(vars('deployWorker').CAIRN_STORAGE_ENDPOINT).toBe('https://s3.example.com');
      for (const fn of ['graphql', 's3', 'gateway', 'deployWorker'] as const) {
        expect(vars(fn)).toMatchObject({
          CAIRN_BUCKET_ENDPOINT_DOMAIN: 's3.example.com',
          CAIRN_STORAGE_PUBLIC_DOMAIN: 'storage.example.com',
          CAIRN_SITES_DOMAIN: 'sites.example.com',
        });
      }
    });

    test('*.<storagePublicDomain>: a REST API of its own streaming to the gateway, reachable by that domain only', () => {
      const apis = byType(json, 'AWS::ApiGateway::RestApi');
      expect(apis).toHaveLength(2);
      const publicApi = s.domains!.publicObjectsApi!;
      const apiId = of(s, publicApi.api);
      expect(json.Resources[apiId].Properties).toMatchObject({
        DisableExecuteApiEndpoint: true,
        BinaryMediaTypes: ['*/*'],
        EndpointConfiguration: { Types: ['REGIONAL'] },
      });
      const methods = byType(json, 'AWS::ApiGateway::Method').filter(([, m]) => m.Properties.RestApiId.Ref === apiId);
      expect(methods.map(([, m]) => m.Properties.HttpMethod).sort()).toEqual(['ANY', 'ANY', 'HEAD', 'HEAD']);
      const gatewayArn = { 'Fn::GetAtt': [of(s, s.functions.gateway), 'Arn'] };
      for (const [, m] of methods) {
        const uri = JSON.stringify(m.Properties.Integration.Uri);
        expect(uri).toContain(JSON.stringify(gatewayArn));
        if (m.Properties.HttpMethod === 'ANY') {
          // Streamed for as long as the gateway may run (15 minutes).
          expect(m.Properties.Integration).toMatchObject({ Type: 'AWS_PROXY', ResponseTransferMode: 'STREAM', TimeoutInMillis: 900_000 });
          expect(uri).toContain('response-streaming-invocations');
        } else {
          // HEAD buffered, through Invoke: its headers, Content-Length included, reach the client.
          expect(m.Properties.Integration).toMatchObject({ Type: 'AWS_PROXY', TimeoutInMillis: 29_000 });
          expect(m.Properties.Integration.ResponseTransferMode ?? 'BUFFERED').toBe('BUFFERED');
          expect(uri).toContain('/2015-03-31/functions/');
          expect(uri).not.toContain('response-streaming-invocations');
        }
      }
      expect(json.Resources[of(s, s.functions.gateway)].Properties.Timeout).toBe(900);
      const [domainId] = domainNamed('*.storage.example.com');
      expect(
        byType(json, 'AWS::ApiGateway::BasePathMapping')
          .filter(([, m]) => m.Properties.DomainName.Ref === domainId)
          .map(([, m]) => m.Properties),
      ).toEqual([{ DomainName: { Ref: domainId }, RestApiId: { Ref: apiId }, Stage: { Ref: of(s, publicApi.stage) } }]);
      expect(
        byType(json, 'AWS::Route53::RecordSet')
          .filter(([, r]) => r.Properties.Name === '*.storage.example.com.')
          .map(([, r]) => r.Properties.Type),
      ).toEqual(['A']);
      // Plain-text refusals (not S3 XML), and the account's CloudWatch role made once, by the S3 API.
      expect(byType(json, 'AWS::ApiGateway::GatewayResponse').filter(([, r]) => r.Properties.RestApiId.Ref === apiId)).toEqual([]);
      expect(byType(json, 'AWS::ApiGateway::Account')).toHaveLength(1);
      const permissions = byType(json, 'AWS::Lambda::Permission').filter(
        ([, p]) =>
          JSON.stringify(p.Properties.FunctionName) === JSON.stringify(gatewayArn) && p.Properties.Principal === 'apigateway.amazonaws.com',
      );
      expect(permissions).toHaveLength(1);
      expect(JSON.stringify(permissions[0]![1].Properties.SourceArn)).toContain(JSON.stringify({ Ref: apiId }));
      // Watched like the S3 API: its 5xx rate alarms to the topic.
      const alarm = json.Resources[of(s, s.monitoring.alarms.publicObjectsApi5xx!)].Properties;
      expect(alarm.AlarmName).toBe(`${s.stackName}-public-objects-api-5xx-rate`);
      const apiName = json.Resources[apiId].Properties.Name;
      expect(alarm.Metrics.filter((m: Json) => m.MetricStat).map((m: Json) => m.MetricStat.Metric.Dimensions)).toEqual([
        [{ Name: 'ApiName', Value: apiName }],
        [{ Name: 'ApiName', Value: apiName }],
      ]);
    });

    test('<apiDomain>: the HTTP API (GraphQL, hooks, web app) on a regional custom domain, with an alias record; the URLs handed out say so', () => {
      const domains = byType(json, 'AWS::ApiGatewayV2::DomainName');
      expect(domains).toHaveLength(1);
      const [domainId, domain] = domains[0]!;
      const certId = byType(json, 'AWS::CertificateManager::Certificate').find(([, c]) => c.Properties.DomainName === 's3.example.com')![0];
      expect(domain.Properties).toMatchObject({
        DomainName: 'api.example.com',
        DomainNameConfigurations: [{ CertificateArn: { Ref: certId }, EndpointType: 'REGIONAL', SecurityPolicy: 'TLS_1_2' }],
      });
      const mappings = byType(json, 'AWS::ApiGatewayV2::ApiMapping').map(([, m]) => m.Properties);
      expect(mappings).toEqual([
        expect.objectContaining({ ApiId: { Ref: of(s, s.api) }, DomainName: { Ref: domainId }, Stage: '$default' }),
      ]);
      const records = byType(json, 'AWS::Route53::RecordSet').filter(([, r]) => r.Properties.Name === 'api.example.com.');
      expect(records.map(([, r]) => r.Properties.Type)).toEqual(['A']);
      expect(JSON.stringify(records[0]![1].Properties.AliasTarget)).toContain(domainId);
      expect(s.apiUrl).toBe('https://api.example.com');
      for (const name of ['graphql', 's3'] as const)
        expect(json.Resources[of(s, s.functions[name])].Properties.Environment.Variables.CAIRN_BASE_URL).toBe('https://api.example.com');
      expect(json.Outputs.GraphqlUrl.Value).toBe('https://api.example.com/graphql');
      expect(json.Outputs.WebAppUrl.Value).toBe('https://api.example.com/');
    });

    test('an apiDomain without a hosted zone stops synthesis with a clear error', () => {
      expect(() => app({ 'cairn:apiDomain': 'api.example.com' })).toThrow(/apiDomain needs hostedZoneId/);
    });

    test('*.<sitesDomain>: A and AAAA aliases to the distribution', () => {
      const records = byType(json, 'AWS::Route53::RecordSet').filter(([, r]) => r.Properties.Name === '*.sites.example.com.');
      expect(records.map(([, r]) => r.Properties.Type).sort()).toEqual(['A', 'AAAA']);
      for (const [, r] of records)
        expect(r.Properties.AliasTarget.DNSName).toEqual({ 'Fn::GetAtt': [of(s, s.siteCdn.distribution), 'DomainName'] });
    });
  });

  test('the stack in another region: a us-east-1 stack holds the sites certificate, passed across regions; the API certificate stays in the stack', () => {
    const { stack: s, sitesCertificateStack: edge } = app(ALL, 'eu-west-1');
    expect(edge).toBeDefined();
    expect(edge!.region).toBe('us-east-1');
    expect(s.region).toBe('eu-west-1');
    const edgeJson = Template.fromStack(edge!).toJSON();
    expect(byType(edgeJson, 'AWS::CertificateManager::Certificate').map(([, c]) => c.Properties.DomainName)).toEqual([
      '*.sites.example.com',
    ]);
    const json = Template.fromStack(s).toJSON();
    expect(byType(json, 'AWS::CertificateManager::Certificate').map(([, c]) => c.Properties.DomainName)).toEqual(['s3.example.com']);
    const viewer = json.Resources[of(s, s.siteCdn.distribution)].Properties.DistributionConfig.ViewerCertificate;
    expect(viewer.AcmCertificateArn['Fn::GetAtt'][0]).toMatch(/^ExportsReader/);
    expect(s.dependencies).toContain(edge);
  });

  test('a hosted zone with a sites certificate ARN: that certificate, none made for the sites, and no region needed', () => {
    const CERT = 'arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-1111-2222-3333-444455556666';
    const { stack: s, sitesCertificateStack } = app({ ...ALL, 'cairn:sitesCertificateArn': CERT });
    expect(sitesCertificateStack).toBeUndefined();
    const json = Template.fromStack(s).toJSON();
    expect(byType(json, 'AWS::CertificateManager::Certificate').map(([, c]) => c.Properties.DomainName)).toEqual(['s3.example.com']);
    expect(json.Resources[of(s, s.siteCdn.distribution)].Properties.DistributionConfig.ViewerCertificate.AcmCertificateArn).toBe(CERT);
  });

  test.each([
    [{ 'cairn:hostedZoneId': 'Z0123456789ABCDEFGHIJ' }, /go together/],
    [{ 'cairn:hostedZoneName': 'example.com' }, /go together/],
    [{ ...ZONE, 'cairn:hostedZoneId': 'example.com' }, /hosted zone id/],
    [{ ...ZONE, 'cairn:bucketEndpointDomain': 's3.example.org' }, /not in the hosted zone example\.com/],
    [{ ...ZONE, 'cairn:storagePublicDomain': 'https://storage.example.com' }, /storagePublicDomain must be a domain name/],
    [{ ...ZONE, 'cairn:sitesDomain': 'sites.elsewhere.net', 'cairn:region': 'us-east-1' }, /not in the hosted zone/],
    [{ ...ZONE, 'cairn:sitesDomain': 'sites.example.com' }, /region must be known/],
  ])('%j is refused at synthesis with what to change', (context, message) => {
    expect(() => app(context)).toThrow(message);
  });

  test('a stack given the zone and a sites domain but neither a certificate nor a known region is refused', () => {
    const a = new App({ context: NO_BUNDLING });
    apps.push(a);
    expect(
      () =>
        new CairnStack(a, 'CairnNoRegion', {
          hostedZoneId: 'Z0123456789ABCDEFGHIJ',
          hostedZoneName: 'example.com',
          sitesDomain: 'sites.example.com',
        }),
    ).toThrow(/us-east-1/);
  });
});

test('a streamed REST integration waits at most 15 minutes, streaming and Lambda both stop there', () => {
  const a = new App({ context: NO_BUNDLING });
  apps.push(a);
  const st = new Stack(a, 'Streaming');
  const handler = new LambdaFunction(st, 'Handler', {
    runtime: Runtime.NODEJS_24_X,
    handler: 'index.handler',
    code: Code.fromInline('export const handler = async () => ({});'),
  });
  const props = {
    handler,
    restApiName: 'streaming',
    description: 'test',
    stageName: 'test',
    errorShape: 'text' as const,
    authorization: 'test',
  };
  expect(() => new StreamingRestApi(st, 'TooLong', { ...props, integrationTimeout: Duration.minutes(16) })).toThrow('at most 15 minutes');
  const api = new StreamingRestApi(st, 'Longest', { ...props, integrationTimeout: STREAMING_TIMEOUT });
  const methods = Object.values<Json>(Template.fromStack(st).toJSON().Resources).filter(
    (r) =>
      r.Type === 'AWS::ApiGateway::Method' &&
      JSON.stringify(r.Properties.RestApiId).includes(st.getLogicalId(api.api.node.defaultChild as CfnElement)),
  );
  expect(methods.map((m) => [m.Properties.HttpMethod, m.Properties.Integration.TimeoutInMillis]).sort()).toEqual([
    ['ANY', 900_000],
    ['ANY', 900_000],
    ['HEAD', 29_000],
    ['HEAD', 29_000],
  ]);
});
