/**
 * Sites' DNSLink records in AWS: written to Route 53 hosted zones
 * (functions/aws/route53-dnslink-zone.ts), through the GraphQL Lambda door
 * (verifyDomain, publishDeploy, setPrimaryDomain, removeDomain,
 * deleteSite) and the deploy worker (a deploy taken off its SQS message
 * and published; the minute tick trying failed writes again), with Route
 * 53 answered by the stand-in of test/support/route53.ts, which keeps the
 * zones' record sets as Route 53 does (an exact DELETE, all-or-none
 * batches, its TXT format). The domains are verified as in
 * test/aws/domains.test.ts: DNS from pebble-challtestsrv, CloudFront's
 * tenants from their stand-in.
 *
 * A verified primary domain carries `_dnslink.<domain> TXT
 * "dnslink=/ipfs/<cid>"`; each publish UPSERTs it, a primary change moves
 * it, removing the domain or deleting the site DELETEs it with the values
 * read first; a failure never fails the publish and the tick writes it
 * later; a domain outside the zones is shown its record and causes no call.
 */
import { mkdir, mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Route53Client } from '@aws-sdk/client-route-53';
import { SendMessageCommand, type SendMessageCommandInput } from '@aws-sdk/client-sqs';
import { startTestService, type TestService } from '../support/service.js';
import { lambdaEnv, sqsEvent, startLambdas, type AwsLambdas } from '../support/aws-mocks.js';
import { startTestDns, type TestDns } from '../support/acme-servers.js';
import { DOMAIN, domainMutations, edgeDomainsEnv, edgeDomainStandIns, ROUTING_ENDPOINT } from '../support/edge-domains.js';
import { route53StandIn } from '../support/route53.js';
import { importDirectory } from '../../functions/core/ipfs/import-directory.js';
import { DnsLinkWriteError } from '../../functions/core/ports/dnslink-zone.js';
import { Route53DnsLinkZone, route53TxtValue } from '../../functions/aws/route53-dnslink-zone.js';
import type { Services } from '../../functions/core/services.js';

const ZONE = 'r53.test';
const ZONE_ID = 'Z0R53TESTZONE1';
/** Given without its id: found by name (a private namesake beside it). */
const BY_NAME = 'byname.test';
const BY_NAME_ID = 'Z0BYNAMEPUBLIC';
/** Named with an id Route 53 does not know. */
const MISSING = 'missing.test';

const route53 = route53StandIn();
const standIns = edgeDomainStandIns();
const { sqs } = standIns;

let service: TestService;
let dns: TestDns;
let lambdas: AwsLambdas;
let aws: Services;
let gql: AwsLambdas['gql'];
let worker: AwsLambdas['worker'];
let tick: AwsLambdas['tick'];
let scratch: string;

beforeAll(async () => {
  dns = await startTestDns();
  service = await startTestService({ CAIRN_GC_INTERVAL: '0' });
  route53.addZone(ZONE_ID, ZONE);
  route53.addZone('Z0BYNAMEPRIVATE', BY_NAME, true);
  route53.addZone(BY_NAME_ID, BY_NAME);
  const env = lambdaEnv(
    service,
    'dnslink-r53-',
    edgeDomainsEnv(dns, { CAIRN_DNSLINK_ZONES: `${ZONE}=${ZONE_ID},${BY_NAME},${MISSING}=Z0MISSINGZONE1` }),
  );
  lambdas = await startLambdas(env, 'dnslink-r53');
  ({ aws, gql, worker, tick } = lambdas);
  scratch = await mkdtemp(join(tmpdir(), 'cairn-dnslink-r53-'));
}, 60_000);

afterAll(async () => {
  await lambdas?.close();
  await service?.close();
  await dns?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

beforeEach(() => {
  route53.reset();
  standIns.reset();
});

let dirs = 0;
/** The CIDv1 of a one-page site, imported into the Lambdas' node. */
async function contentCid(text: string): Promise<string> {
  const dir = join(scratch, `content-${++dirs}`);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'index.html'), text);
  return (await importDirectory((await aws.ipfs()).blockstore, dir)).cid.toV1().toString();
}
const createSite = async (cid: string) =>
  (
    await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id slug } }', {
      input: { deploySettings: { source: { ipfs: { cid } } } },
    })
  ).createSite as { id: string; slug: string };
const setSource = (siteId: string, cid: string) =>
  gql('mutation ($s: ID!, $i: UpdateSiteInput!) { updateSite(siteId: $s, input: $i) { id } }', {
    s: siteId,
    i: { deploySettings: { source: { ipfs: { cid } } } },
  });
/** A deploy of the site's source, sent to SQS through the GraphQL door and published by the worker taking its message. */
async function deployedByWorker(siteId: string): Promise<string> {
  sqs.resetHistory();
  const queued = (await gql('mutation ($s: ID!) { triggerDeploy(siteId: $s) { id } }', { s: siteId })).triggerDeploy as { id: string };
  const body = sqs
    .commandCalls(SendMessageCommand)
    .map((c) => (c.args[0].input as SendMessageCommandInput).MessageBody!)
    .find((b) => b.includes(queued.id));
  expect(await worker(sqsEvent(body!))).toEqual({ batchItemFailures: [] });
  const deploy = await aws.deploys.get(siteId, queued.id);
  expect([deploy?.status, (await aws.sites.getById(siteId))?.publishedDeployId]).toEqual(['DEPLOYED', queued.id]);
  return queued.id;
}
/** A DEPLOYED deploy of `cid`, published through publishDeploy (a rollback's path). */
const publishedByApi = (siteId: string, cid: string) => lambdas.publish(siteId, cid);
const { add, verify, addVerified } = domainMutations((q, v) => gql(q, v));
/** `domain` added to the site, its CNAME set to the routing endpoint, and verified. */
async function verified(siteId: string, domain: string) {
  const answer = await addVerified(dns, siteId, domain);
  expect(answer.status).toBe('ISSUING_CERTIFICATE');
  return answer;
}
const domainsOf = async (siteId: string) =>
  (await gql(`query ($s: ID!) { getSiteById(siteId: $s) { domains { ${DOMAIN} } } }`, { s: siteId })).getSiteById.domains as Array<{
    domain: string;
    dnsRecords: Array<{ type: string; name: string; value: string }>;
  }>;
const changes = () => route53.calls().filter(([n]) => n === 'ChangeResourceRecordSetsCommand');
const changeActions = () => changes().flatMap(([, i]) => i.ChangeBatch.Changes.map((c: any) => [c.Action, c.ResourceRecordSet.Name]));
const txtOf = (domain: string, zoneId = ZONE_ID) => route53.txt(zoneId, `_dnslink.${domain}`);
/** Makes the domain's marked retry due now, as a minute passing would. */
async function retryDue(domain: string) {
  const due = await aws.domains.dnsLinkRetriesDue(new Date(Date.now() + 24 * 3600_000), 100);
  const mark = due.find((d) => d.domain === domain);
  expect(mark).toBeDefined();
  await aws.domains.putDnsLinkRetry(domain, new Date(Date.now() - 1000), mark!.attempt);
  return mark!;
}

let names = 0;
const fresh = (zone = ZONE, prefix = 'www') => `${prefix}.shop-${process.pid}-${++names}.${zone}`;

test('a verified domain gets the record; a deploy the worker publishes replaces it; a rollback through publishDeploy too', async () => {
  const [first, second] = [await contentCid('one'), await contentCid('two')];
  const site = await createSite(first);
  const firstDeploy = await deployedByWorker(site.id);
  const domain = fresh();
  route53.reset();
  const answer = await verified(site.id, domain);
  // Cairn writes this zone: no DNSLink record for the owner to create.
  expect(answer.dnsRecords.some((r: { name: string }) => r.name.startsWith('_dnslink.'))).toBe(false);
  expect(txtOf(domain)).toEqual([`"dnslink=/ipfs/${first}"`]);
  expect(changes().map(([, i]) => i)).toEqual([
    {
      HostedZoneId: ZONE_ID,
      ChangeBatch: {
        Changes: [
          {
            Action: 'UPSERT',
            ResourceRecordSet: {
              Name: `_dnslink.${domain}`,
              Type: 'TXT',
              TTL: 60,
              ResourceRecords: [{ Value: `"dnslink=/ipfs/${first}"` }],
            },
          },
        ],
      },
    },
  ]);

  await setSource(site.id, second);
  route53.reset();
  await deployedByWorker(site.id);
  expect(txtOf(domain)).toEqual([`"dnslink=/ipfs/${second}"`]);
  expect(changeActions()).toEqual([['UPSERT', `_dnslink.${domain}`]]);

  await gql('mutation ($s: ID!, $d: ID!) { publishDeploy(siteId: $s, deployId: $d) { id } }', { s: site.id, d: firstDeploy });
  expect(txtOf(domain)).toEqual([`"dnslink=/ipfs/${first}"`]);
  // One set, one value: the zone's other sets untouched.
  const zone = route53.zones.get(ZONE_ID)!;
  expect(zone.sets.filter((s) => s.Name === `_dnslink.${domain}.`)).toHaveLength(1);
  expect(zone.sets.filter((s) => s.Type === 'SOA' || s.Type === 'NS')).toHaveLength(2);
}, 120_000);

test('a change of primary moves the record from one name of the pair to the other', async () => {
  const cid = await contentCid('pair');
  const site = await createSite(cid);
  await publishedByApi(site.id, cid);
  const www = fresh();
  const apex = www.slice(4);
  await verified(site.id, www);
  await add(site.id, apex);
  await dns.addA(apex, ['192.0.2.10']);
  await dns.addA(ROUTING_ENDPOINT, ['192.0.2.10']);
  try {
    expect((await verify(site.id, apex)).status).toBe('ISSUING_CERTIFICATE');
    // The first name added is the primary: it carries the record, its pair none.
    expect(txtOf(www)).toEqual([`"dnslink=/ipfs/${cid}"`]);
    expect(txtOf(apex)).toEqual([]);
    route53.reset();
    await gql(`mutation ($s: ID!, $d: String!) { setPrimaryDomain(siteId: $s, domain: $d) { ${DOMAIN} } }`, { s: site.id, d: apex });
    expect(txtOf(apex)).toEqual([`"dnslink=/ipfs/${cid}"`]);
    expect(txtOf(www)).toEqual([]);
    expect(changeActions()).toEqual([
      ['UPSERT', `_dnslink.${apex}`],
      ['DELETE', `_dnslink.${www}.`],
    ]);
    // The DELETE repeated the set as Route 53 listed it, after reading it bounded to that name and type.
    const list = route53.calls().find(([n]) => n === 'ListResourceRecordSetsCommand')![1];
    expect(list).toEqual({ HostedZoneId: ZONE_ID, StartRecordName: `_dnslink.${www}`, StartRecordType: 'TXT', MaxItems: 10 });
  } finally {
    await dns.clearA(apex);
    await dns.clearA(ROUTING_ENDPOINT);
  }
}, 120_000);

test('removing the domain deletes the record; a record already gone is no failure; deleting the site deletes its records', async () => {
  const cid = await contentCid('removed');
  const site = await createSite(cid);
  await publishedByApi(site.id, cid);
  const [kept, removed] = [fresh(), fresh()];
  await verified(site.id, removed);
  expect(txtOf(removed)).toEqual([`"dnslink=/ipfs/${cid}"`]);
  route53.reset();
  expect(
    (await gql('mutation ($s: ID!, $d: String!) { removeDomain(siteId: $s, domain: $d) }', { s: site.id, d: removed })).removeDomain,
  ).toBe(true);
  expect(txtOf(removed)).toEqual([]);
  expect(changeActions()).toEqual([['DELETE', `_dnslink.${removed}.`]]);
  expect(await aws.domains.dnsLinkRetriesDue(new Date(Date.now() + 24 * 3600_000), 100)).not.toContainEqual(
    expect.objectContaining({ domain: removed }),
  );

  // Gone already (removed by hand): only read, nothing changed, nothing to retry.
  route53.reset();
  await aws.dnsLink.remove(removed);
  expect(route53.calls().map(([n]) => n)).toEqual(['ListResourceRecordSetsCommand']);

  const other = await createSite(cid);
  await publishedByApi(other.id, cid);
  const otherDomain = fresh();
  await verified(other.id, otherDomain);
  await verified(site.id, kept);
  expect(txtOf(kept)).toEqual([`"dnslink=/ipfs/${cid}"`]);
  route53.reset();
  expect((await gql('mutation ($s: ID!) { deleteSite(siteId: $s) }', { s: site.id })).deleteSite).toBe(true);
  expect(txtOf(kept)).toEqual([]);
  expect(changeActions()).toEqual([['DELETE', `_dnslink.${kept}.`]]);
  // Another site's record stays.
  expect(txtOf(otherDomain)).toEqual([`"dnslink=/ipfs/${cid}"`]);
}, 120_000);

test('a record changed between its read and its DELETE is read again and deleted', async () => {
  const cid = await contentCid('raced');
  const site = await createSite(cid);
  await publishedByApi(site.id, cid);
  const domain = fresh();
  await verified(site.id, domain);
  route53.reset();
  let raced = false;
  // Another writer's UPSERT lands after the read, before the first DELETE.
  route53.beforeChange = (zone) => {
    if (raced) return;
    raced = true;
    const set = zone.sets.find((s) => s.Name === `_dnslink.${domain}.`)!;
    set.ResourceRecords = [{ Value: '"dnslink=/ipfs/bafkqaaa"' }];
  };
  await gql('mutation ($s: ID!, $d: String!) { removeDomain(siteId: $s, domain: $d) }', { s: site.id, d: domain });
  expect(txtOf(domain)).toEqual([]);
  expect(route53.calls().map(([n]) => n)).toEqual([
    'ListResourceRecordSetsCommand',
    'ChangeResourceRecordSetsCommand', // refused: the values do not match the current values
    'ListResourceRecordSetsCommand',
    'ChangeResourceRecordSetsCommand',
  ]);
  expect(changes()[1]![1].ChangeBatch.Changes[0].ResourceRecordSet.ResourceRecords).toEqual([{ Value: '"dnslink=/ipfs/bafkqaaa"' }]);
}, 120_000);

test('throttling never fails the publish: the write is marked, and the tick writes the current root', async () => {
  const [first, second] = [await contentCid('throttled 1'), await contentCid('throttled 2')];
  const site = await createSite(first);
  await publishedByApi(site.id, first);
  const domain = fresh();
  await verified(site.id, domain);
  route53.failNext('Throttling');
  const deployId = await publishedByApi(site.id, second);
  // Published all the same; the record still holds the old root.
  expect((await aws.sites.getById(site.id))?.publishedDeployId).toBe(deployId);
  expect(txtOf(domain)).toEqual([`"dnslink=/ipfs/${first}"`]);
  const mark = await retryDue(domain);
  expect(mark.attempt).toBe(1);
  route53.reset();
  expect((await tick()).dnsLinks).toBeGreaterThanOrEqual(1);
  expect(txtOf(domain)).toEqual([`"dnslink=/ipfs/${second}"`]);
  expect(changeActions()).toContainEqual(['UPSERT', `_dnslink.${domain}`]);
  expect(await aws.domains.dnsLinkRetriesDue(new Date(Date.now() + 24 * 3600_000), 100)).not.toContainEqual(
    expect.objectContaining({ domain }),
  );
}, 120_000);

test('a zone Route 53 does not know, or a role denied, fails for good: the publish goes, the write is retried later', async () => {
  const cid = await contentCid('missing zone');
  const site = await createSite(cid);
  const domain = fresh(MISSING);
  route53.reset();
  await verified(site.id, domain);
  const deployId = await publishedByApi(site.id, cid);
  expect((await aws.sites.getById(site.id))?.publishedDeployId).toBe(deployId);
  const calls = route53.calls();
  expect(calls.length).toBeGreaterThan(0);
  expect(calls.every(([, i]) => i.HostedZoneId === 'Z0MISSINGZONE1')).toBe(true);
  await retryDue(domain);
  // Still no such zone at the tick: marked again, one attempt later.
  await tick();
  const again = (await aws.domains.dnsLinkRetriesDue(new Date(Date.now() + 24 * 3600_000), 100)).find((d) => d.domain === domain);
  expect(again?.attempt).toBe(2);

  // The port's errors say which kind they are.
  const zone = new Route53DnsLinkZone(new Route53Client({ region: 'us-east-1' }), {
    zones: [ZONE, MISSING],
    hostedZoneIds: { [ZONE]: ZONE_ID, [MISSING]: 'Z0MISSINGZONE1' },
  });
  const failure = (p: Promise<void>) =>
    p.then(
      () => undefined,
      (err: unknown) => err,
    );
  const missing = await failure(zone.set(`shop.${MISSING}`, '/ipfs/bafkqaaa'));
  expect(missing).toBeInstanceOf(DnsLinkWriteError);
  expect(missing).toMatchObject({ retryable: false, message: expect.stringMatching(/NoSuchHostedZone/) });
  route53.failNext('AccessDenied');
  expect(await failure(zone.set(`shop.${ZONE}`, '/ipfs/bafkqaaa'))).toMatchObject({
    retryable: false,
    message: expect.stringMatching(/AccessDenied/),
  });
  for (const code of ['Throttling', 'PriorRequestNotComplete']) {
    route53.failNext(code);
    expect(await failure(zone.set(`shop.${ZONE}`, '/ipfs/bafkqaaa'))).toMatchObject({
      retryable: true,
      message: expect.stringContaining(code),
    });
  }
  // Nothing of these was written.
  expect(txtOf(`shop.${ZONE}`)).toEqual([]);
}, 120_000);

test('a zone named without its id is found by name: the public one, not its private namesake', async () => {
  const cid = await contentCid('by name');
  const site = await createSite(cid);
  await publishedByApi(site.id, cid);
  const domain = fresh(BY_NAME);
  route53.reset();
  await verified(site.id, domain);
  expect(txtOf(domain, BY_NAME_ID)).toEqual([`"dnslink=/ipfs/${cid}"`]);
  expect(txtOf(domain, 'Z0BYNAMEPRIVATE')).toEqual([]);
  expect(route53.calls().filter(([n]) => n === 'ListHostedZonesByNameCommand')).toEqual([
    ['ListHostedZonesByNameCommand', { DNSName: BY_NAME, MaxItems: 10 }],
  ]);
}, 120_000);

test('a domain in no configured zone causes no Route 53 call, and is shown its record, current with the last publish', async () => {
  const [first, second] = [await contentCid('shown 1'), await contentCid('shown 2')];
  const site = await createSite(first);
  await publishedByApi(site.id, first);
  const outside = `shop-${process.pid}.elsewhere.test`;
  route53.reset();
  const added = await add(site.id, outside);
  expect(added.dnsRecords).toContainEqual({ type: 'TXT', name: `_dnslink.${outside}`, value: `dnslink=/ipfs/${first}` });
  await dns.setCname(outside, ROUTING_ENDPOINT);
  expect((await verify(site.id, outside)).status).toBe('ISSUING_CERTIFICATE');
  await publishedByApi(site.id, second);
  const [shown] = await domainsOf(site.id);
  expect(shown!.dnsRecords.filter((r) => r.name.startsWith('_dnslink.'))).toEqual([
    { type: 'TXT', name: `_dnslink.${outside}`, value: `dnslink=/ipfs/${second}` },
  ]);
  expect(route53.calls()).toEqual([]);
}, 120_000);

test("TXT values in Route 53's format: quoted, escaped, cut in strings of 255", async () => {
  expect(route53TxtValue('dnslink=/ipfs/bafkqaaa')).toBe('"dnslink=/ipfs/bafkqaaa"');
  expect(route53TxtValue('a "b" \\ c\u0001é')).toBe('"a\\040\\"b\\"\\040\\\\\\040c\\001\\303\\251"');
  const long = `dnslink=/ipns/${'k'.repeat(600)}`;
  const value = route53TxtValue(long);
  const strings = value.split(' ');
  expect(strings.map((s) => s.length - 2)).toEqual([255, 255, long.length - 510]);
  expect(strings.map((s) => s.slice(1, -1)).join('')).toBe(long);
  expect(route53TxtValue('')).toBe('""');
  // Route 53's stand-in takes it, and refuses an unquoted or overlong value as Route 53 does.
  const zone = new Route53DnsLinkZone(new Route53Client({ region: 'us-east-1' }), { zones: [ZONE], hostedZoneIds: { [ZONE]: ZONE_ID } });
  await zone.set(`long.${ZONE}`, `/ipns/${'k'.repeat(600)}`);
  expect(txtOf(`long.${ZONE}`)).toEqual([value]);
  await zone.remove(`long.${ZONE}`);
  expect(txtOf(`long.${ZONE}`)).toEqual([]);
});
