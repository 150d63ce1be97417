/**
 * Sites' own domains as they run in AWS, for the test/aws suites that
 * verify them (domains, dnslink-route53): the Lambda environment of a
 * stack with a multi-tenant CloudFront distribution (each verified domain
 * a tenant, its CNAME to the connection group's routing endpoint,
 * functions/aws/cloudfront-tenants.ts), the stand-ins it calls (CloudFront
 * with its tenants and invalidations, the sites' KeyValueStore host map,
 * SQS), and the GraphQL mutations that add and verify a domain.
 */
import { randomUUID } from 'node:crypto';
import { CreateInvalidationCommand } from '@aws-sdk/client-cloudfront';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import type { TestDns } from './acme-servers.js';
import type { AwsLambdas } from './aws-mocks.js';
import { cloudFrontTenantsStandIn } from './cloudfront-tenants.js';
import { keyValueStoreStandIn } from './key-value-store.js';

export const TENANT_DISTRIBUTION = 'E3MULTITENANT1';
export const CONNECTION_GROUP = 'cg_2whCJoXMYCjHcxaLGrkllvyABC';
export const ROUTING_ENDPOINT = 'd111111abcdef8.cloudfront.net';
export const KVS_ARN = 'arn:aws:cloudfront::123456789012:key-value-store/a1b2c3d4-5678-90ab-cdef-EXAMPLE11111';

/** What the stack sets on its functions for tenant domains, DNS asked of `dns`; `extra` adds or overrides. */
export function edgeDomainsEnv(dns: TestDns, extra: Record<string, string> = {}): Record<string, string> {
  return {
    CAIRN_DNS_RESOLVER: dns.address,
    CAIRN_DOMAIN_TARGET: ROUTING_ENDPOINT,
    CAIRN_DOMAIN_DISTRIBUTION_ID: TENANT_DISTRIBUTION,
    CAIRN_DOMAIN_CONNECTION_GROUP_ID: CONNECTION_GROUP,
    CAIRN_SITE_HOSTS_KVS_ARN: KVS_ARN,
    CAIRN_LOG_LEVEL: process.env.CAIRN_TEST_LOG_LEVEL ?? 'silent',
    ...extra,
  };
}

/**
 * The AWS services those functions call, as stand-ins: CloudFront's tenants
 * (test/support/cloudfront-tenants.ts) also answering CreateInvalidation,
 * the KeyValueStore (its keys in `store`), SQS taking every message.
 * `reset()` before each test forgets the calls and the state.
 */
export function edgeDomainStandIns() {
  const cf = cloudFrontTenantsStandIn();
  const kvs = keyValueStoreStandIn(KVS_ARN);
  const sqs = mockClient(SQSClient);
  return {
    cf,
    store: kvs.store,
    sqs,
    reset() {
      cf.reset();
      kvs.reset();
      sqs.reset();
      sqs.on(SendMessageCommand).resolves({ MessageId: randomUUID() });
      cf.mock.on(CreateInvalidationCommand).callsFake(() => ({ Location: 'x', Invalidation: { Id: 'I1', Status: 'InProgress' } }));
    },
  };
}

/** The fields of a domain the suites read. */
export const DOMAIN = 'domain status reason primary dnsRecords { type name value }';

/** addDomain, verifyDomain, removeDomain and setPrimaryDomain through `gql` (an account's GraphQL Lambda door), each its answer's field. */
export function domainMutations(gql: AwsLambdas['gql']) {
  const call = async (name: string, fields: string, siteId: string, domain: string) =>
    (await gql(`mutation ($s: ID!, $d: String!) { ${name}(siteId: $s, domain: $d)${fields} }`, { s: siteId, d: domain }))[name];
  const add = (siteId: string, domain: string) => call('addDomain', ` { ${DOMAIN} }`, siteId, domain);
  const verify = (siteId: string, domain: string) => call('verifyDomain', ` { ${DOMAIN} }`, siteId, domain);
  return {
    add,
    verify,
    remove: (siteId: string, domain: string) => call('removeDomain', '', siteId, domain),
    setPrimary: (siteId: string, domain: string) => call('setPrimaryDomain', ` { ${DOMAIN} }`, siteId, domain),
    /** `domain` added to the site, its CNAME set to the routing endpoint in `dns`, and verified: verifyDomain's answer. */
    async addVerified(dns: TestDns, siteId: string, domain: string) {
      await add(siteId, domain);
      await dns.setCname(domain, ROUTING_ENDPOINT);
      return verify(siteId, domain);
    },
  };
}
