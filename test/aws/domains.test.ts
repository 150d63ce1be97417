/**
 * Sites' own domains as they run in AWS: each verified domain a tenant of
 * the multi-tenant CloudFront distribution with a CloudFront-managed
 * certificate (functions/aws/cloudfront-tenants.ts), CloudFront's calls
 * answered and recorded by the stand-in of test/support/cloudfront-tenants.ts,
 * the KeyValueStore and SQS recorded as in test/aws/cdn.test.ts, DNS from a
 * real server (pebble-challtestsrv) and the records in the embedded
 * DynamoDB. Through the Lambda doors: addDomain shows the CNAME to the
 * connection group's routing endpoint, verifyDomain makes the tenant, the
 * deploy worker's minute tick follows its certificate to ACTIVE (host map
 * entry, purge) or FAILED with the reason; and the failures: a name
 * CloudFront serves elsewhere, a validation that timed out, throttling,
 * a retry, removal (disable, then delete once CloudFront allows it).
 */
import { CreateInvalidationCommand, type CreateInvalidationCommandInput } from '@aws-sdk/client-cloudfront';
import { startTestService, type TestService } from '../support/service.js';
import { lambdaEnv, startLambdas, type AwsLambdas } from '../support/aws-mocks.js';
import { startTestDns, type TestDns } from '../support/acme-servers.js';
import {
  CONNECTION_GROUP,
  DOMAIN,
  domainMutations,
  edgeDomainsEnv,
  edgeDomainStandIns,
  ROUTING_ENDPOINT,
  TENANT_DISTRIBUTION,
} from '../support/edge-domains.js';
import { EdgeTenantStore } from '../../functions/core/data/edge-tenants.js';
import type { Services } from '../../functions/core/services.js';

const DISTRIBUTION = 'E2QWRUHEXAMPLE';

const standIns = edgeDomainStandIns();
const { cf, store } = standIns;

let service: TestService;
let dns: TestDns;
let lambdas: AwsLambdas;
let aws: Services;
let gql: AwsLambdas['gql'];
let tick: AwsLambdas['tick'];

beforeAll(async () => {
  dns = await startTestDns();
  service = await startTestService({ CAIRN_GC_INTERVAL: '0' });
  const env = lambdaEnv(service, 'edge-domains-', edgeDomainsEnv(dns, { CAIRN_CDN_DISTRIBUTION_ID: DISTRIBUTION }));
  lambdas = await startLambdas(env, 'edge-domains');
  ({ aws, gql, tick } = lambdas);
}, 60_000);

afterAll(async () => {
  await lambdas?.close();
  await service?.close();
  await dns?.close();
});

beforeEach(() => standIns.reset());

const createSite = async () =>
  (
    await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', {
      input: { deploySettings: { source: { ipfs: { cid: 'bafkqaaa' } } } },
    })
  ).createSite as { id: string; slug: string };
const { add, verify, remove, setPrimary, addVerified } = domainMutations((q, v) => gql(q, v));
const statusOf = async (siteId: string, domain: string) => (await aws.domains.get(siteId, domain))?.status;
const invalidated = () =>
  cf.mock
    .commandCalls(CreateInvalidationCommand)
    .map((c) => (c.args[0].input as CreateInvalidationCommandInput).InvalidationBatch?.Paths?.Items);
const named = (name: string) => cf.calls().filter(([n]) => n === name);

let names = 0;
const fresh = (prefix = 'www') => `${prefix}.shop-${process.pid}-${++names}.test`;

/** A site with `domain` added and its CNAME set to the routing endpoint, verified: ISSUING_CERTIFICATE with its tenant made. */
async function verified(domain = fresh()) {
  const site = await createSite();
  const answer = await addVerified(dns, site.id, domain);
  return { site, domain, answer };
}

test('addDomain shows the CNAME to the connection group routing endpoint; verify makes a tenant asking for a managed certificate', async () => {
  const site = await createSite();
  const domain = fresh();
  const added = await add(site.id, domain);
  expect(added.status).toBe('PENDING_DNS');
  expect(added.dnsRecords).toEqual([
    { type: 'CNAME', name: domain, value: ROUTING_ENDPOINT },
    { type: 'TXT', name: `_cairn-challenge.${domain}`, value: expect.any(String) },
  ]);
  // Pointing at the site's own address is not enough in AWS: CloudFront routes custom domains by the routing endpoint.
  await dns.setCname(domain, `${site.slug}.sites.example.com`);
  const wrong = await verify(site.id, domain);
  expect(wrong.status).toBe('FAILED');
  expect(wrong.reason).toContain(ROUTING_ENDPOINT);
  expect(named('CreateDistributionTenantCommand')).toEqual([]);

  await dns.setCname(domain, ROUTING_ENDPOINT);
  const answer = await verify(site.id, domain);
  expect(answer.status).toBe('ISSUING_CERTIFICATE');
  const creates = named('CreateDistributionTenantCommand');
  expect(creates).toHaveLength(1);
  expect(creates[0]![1]).toMatchObject({
    DistributionId: TENANT_DISTRIBUTION,
    Domains: [{ Domain: domain }],
    ConnectionGroupId: CONNECTION_GROUP,
    ManagedCertificateRequest: { ValidationTokenHost: 'cloudfront', PrimaryDomainName: domain },
    Enabled: true,
  });
  expect(creates[0]![1].Name).toMatch(/^cairn-[0-9a-f]{40}$/);
  // Not served before its certificate is: no host map entry yet.
  expect(store.has(domain)).toBe(false);
});

test('the tick follows the certificate: pending stays ISSUING_CERTIFICATE, issued makes the domain ACTIVE, mapped and purged', async () => {
  const { site, domain } = await verified();
  const tenantId = cf.byDomain(domain)!.tenant.Id;
  await tick();
  expect(await statusOf(site.id, domain)).toBe('ISSUING_CERTIFICATE');
  expect(named('GetManagedCertificateDetailsCommand').map(([, i]) => i.Identifier)).toContain(tenantId);
  expect(store.has(domain)).toBe(false);

  cf.issue(domain);
  await tick();
  expect(await statusOf(site.id, domain)).toBe('ACTIVE');
  expect(store.get(domain)).toBe(site.id);
  expect(invalidated()).toContainEqual([`/sites/${site.id}/*`]);
  const domains = (await gql(`query ($s: ID!) { getSiteById(siteId: $s) { domains { ${DOMAIN} } } }`, { s: site.id })).getSiteById.domains;
  expect(domains.find((d: { domain: string }) => d.domain === domain)).toMatchObject({ status: 'ACTIVE', reason: null });
  // An active tenant is no longer looked at.
  cf.mock.resetHistory();
  await tick();
  expect(named('GetManagedCertificateDetailsCommand').map(([, i]) => i.Identifier)).not.toContain(tenantId);
}, 60_000);

test('a name CloudFront serves elsewhere fails with that reason and leaves nothing half-made', async () => {
  const site = await createSite();
  const domain = fresh();
  cf.elsewhere.add(domain);
  await add(site.id, domain);
  await dns.setCname(domain, ROUTING_ENDPOINT);
  const answer = await verify(site.id, domain);
  expect(answer.status).toBe('FAILED');
  expect(answer.reason).toMatch(/already served by another CloudFront distribution or tenant/);
  expect(cf.byDomain(domain)).toBeUndefined();
  expect(await new EdgeTenantStore(aws.db).get(domain)).toBeUndefined();
  expect(store.has(domain)).toBe(false);
  // Freed elsewhere, verifying again goes through.
  cf.elsewhere.delete(domain);
  expect((await verify(site.id, domain)).status).toBe('ISSUING_CERTIFICATE');
  expect(cf.byDomain(domain)).toBeDefined();
});

test('a validation that timed out fails the domain with the reason; its tenant is disabled, then deleted once CloudFront allows', async () => {
  const { site, domain } = await verified();
  const tenantId = cf.byDomain(domain)!.tenant.Id!;
  cf.state.deployLag = true;
  cf.setCertificate(domain, 'validation-timed-out');
  await tick();
  const record = await aws.domains.get(site.id, domain);
  expect(record?.status).toBe('FAILED');
  expect(record?.reason).toMatch(/HTTP validation timed out/);
  // Disabled with the ETag it read; the delete refused while the disable deploys.
  const updates = named('UpdateDistributionTenantCommand');
  expect(updates.at(-1)![1]).toMatchObject({ Id: tenantId, Enabled: false, IfMatch: expect.stringMatching(/^E/) });
  expect(cf.tenants.get(tenantId)?.tenant.Enabled).toBe(false);
  expect(named('DeleteDistributionTenantCommand')).toHaveLength(1);
  expect(cf.tenants.has(tenantId)).toBe(true);
  await tick();
  expect(cf.tenants.has(tenantId)).toBe(false);
  expect(await new EdgeTenantStore(aws.db).get(domain)).toBeUndefined();
  // Verify again: a new tenant, a new certificate request.
  expect((await verify(site.id, domain)).status).toBe('ISSUING_CERTIFICATE');
  expect(cf.byDomain(domain)?.tenant.Id).not.toBe(tenantId);
}, 60_000);

test('throttling is tried again; a request asked twice makes one tenant', async () => {
  const site = await createSite();
  const domain = fresh();
  await add(site.id, domain);
  await dns.setCname(domain, ROUTING_ENDPOINT);
  cf.throttleNext(2);
  expect((await verify(site.id, domain)).status).toBe('ISSUING_CERTIFICATE');
  expect(named('CreateDistributionTenantCommand')).toHaveLength(3);
  expect(cf.tenants.size).toBe(1);
  // The same request again (a retried call): the tenant it made is used, no second one.
  await aws.domainCertificates.request(site.id, domain);
  expect(cf.tenants.size).toBe(1);
  // Its record lost (a create whose answer never came back): CloudFront's EntityAlreadyExists finds the same tenant by name.
  await new EdgeTenantStore(aws.db).delete(domain);
  await aws.domainCertificates.request(site.id, domain);
  expect(cf.tenants.size).toBe(1);
  expect((await new EdgeTenantStore(aws.db).get(domain))?.tenantId).toBe(cf.byDomain(domain)!.tenant.Id);
});

test('a create that fails for good is left to the tick, which makes the tenant', async () => {
  const site = await createSite();
  const domain = fresh();
  await add(site.id, domain);
  await dns.setCname(domain, ROUTING_ENDPOINT);
  cf.throttleNext(10);
  expect((await verify(site.id, domain)).status).toBe('ISSUING_CERTIFICATE');
  expect(cf.byDomain(domain)).toBeUndefined();
  cf.state.throttle = 0;
  await tick();
  expect(cf.byDomain(domain)).toBeDefined();
  expect(await statusOf(site.id, domain)).toBe('ISSUING_CERTIFICATE');
}, 60_000);

test('removeDomain stops serving: host map entry gone, tenant disabled and deleted', async () => {
  const { site, domain } = await verified();
  const tenantId = cf.byDomain(domain)!.tenant.Id!;
  cf.issue(domain);
  await tick();
  expect(store.get(domain)).toBe(site.id);
  expect(await remove(site.id, domain)).toBe(true);
  expect(store.has(domain)).toBe(false);
  expect(cf.tenants.has(tenantId)).toBe(false);
  const order = cf
    .calls()
    .filter(([n]) => n === 'UpdateDistributionTenantCommand' || n === 'DeleteDistributionTenantCommand')
    .map(([n, i]) => [n, i.Enabled]);
  expect(order).toEqual([
    ['UpdateDistributionTenantCommand', false],
    ['DeleteDistributionTenantCommand', undefined],
  ]);
}, 60_000);

test('apex and www: the one not primary maps to a redirect to the primary, and follows a change of primary', async () => {
  const site = await createSite();
  const www = fresh();
  const apex = www.slice(4);
  await add(site.id, www);
  await add(site.id, apex);
  await dns.setCname(www, ROUTING_ENDPOINT);
  await dns.addA(apex, ['192.0.2.10']);
  await dns.addA(ROUTING_ENDPOINT, ['192.0.2.10']);
  expect((await verify(site.id, www)).status).toBe('ISSUING_CERTIFICATE');
  expect((await verify(site.id, apex)).status).toBe('ISSUING_CERTIFICATE');
  // Two tenants: one per name, each with its own certificate.
  expect(cf.byDomain(www)!.tenant.Id).not.toBe(cf.byDomain(apex)!.tenant.Id);
  cf.issue(www);
  cf.issue(apex);
  await tick();
  expect(store.get(www)).toBe(site.id);
  expect(store.get(apex)).toBe(`>${www}`);
  await setPrimary(site.id, apex);
  expect(store.get(apex)).toBe(site.id);
  expect(store.get(www)).toBe(`>${apex}`);
  await dns.clearA(apex);
  await dns.clearA(ROUTING_ENDPOINT);
}, 60_000);
