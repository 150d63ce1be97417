/**
 * The gateway as it runs in AWS, through its Lambda door: blocks in the
 * stack's bucket (a bucket on Cairn's own S3 endpoint) and its own tables
 * in the embedded DynamoDB. What it touches there is what its IAM grants
 * must allow (lib/gateway.ts, asserted in test/infra/cairn-stack.test.ts):
 * a site reads the sites and deploys tables; in the bucket it reads, and
 * its IPFS node's first start on a fresh bucket writes one object,
 * `datastore/version` (Helia records its datastore's version), nothing else.
 */
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestService, type TestService } from '../support/service.js';
import { lambdaEnv, stackBucketEnv, startLambdas, type AwsLambdas } from '../support/aws-mocks.js';
import { lambdaFetch, type LambdaFn } from '../support/lambda-door.js';
import { finishedDeploy } from '../support/graphql.js';
import { importDirectory } from '../../functions/core/ipfs/import-directory.js';

const BUCKET = 'cairn-gateway-bucket';
const ORIGIN = 'https://abcdefghij.lambda-url.us-east-1.on.aws';

let service: TestService;
let lambdas: AwsLambdas;
let bucket: S3Client;
let gateway: (url: string, init?: { headers?: Record<string, string> }) => Promise<Response>;

beforeAll(async () => {
  service = await startTestService({ CAIRN_GC_INTERVAL: '0' });
  bucket = service.s3();
  const env = lambdaEnv(service, 'gw-', await stackBucketEnv(service, BUCKET));
  lambdas = await startLambdas(env, 'gw');
  gateway = lambdaFetch(((await import('../../functions/gateway/handler.js')) as unknown as { handler: LambdaFn }).handler);
}, 60_000);

afterAll(async () => {
  await lambdas?.close();
  await service?.close();
});

async function keys(): Promise<string[]> {
  const out = await bucket.send(new ListObjectsV2Command({ Bucket: BUCKET }));
  return (out.Contents ?? []).map((o) => o.Key!).sort();
}

// Helia, whose start writes its datastore's version marker, is started only where Helia's own API is asked for (core/ipfs/node.ts).
test('on a fresh bucket the first request writes nothing', async () => {
  expect(await keys()).toEqual([]);
  const res = await gateway(`${ORIGIN}/ipfs/bafkqaaa`);
  expect(res.status).toBe(200);
  expect(await keys()).toEqual([]);
});

test('a published site and its preview serve from the bucket, reading the sites and deploys tables; the gateway writes nothing', async () => {
  const { aws, gql } = lambdas;
  const dir = await mkdtemp(join(tmpdir(), 'cairn-gw-'));
  let root: string;
  try {
    await writeFile(join(dir, 'index.html'), 'served from S3');
    root = (await importDirectory((await aws.ipfs()).blockstore, dir)).cid.toV1().toString();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const site = (
    await gql('mutation ($input: CreateSiteInput!) { createSite(input: $input) { id } }', {
      input: { deploySettings: { source: { ipfs: { cid: root } } } },
    })
  ).createSite as { id: string };
  const id = await finishedDeploy(aws, site.id, root);
  const before = await keys();
  const unpublished = await gateway(`${ORIGIN}/sites/${site.id}/`);
  expect([unpublished.status, unpublished.headers.get('cache-control')]).toEqual([404, 'no-store']);
  await gql('mutation ($s: ID!, $d: ID!) { publishDeploy(siteId: $s, deployId: $d) { id } }', { s: site.id, d: id });
  const published = await gateway(`${ORIGIN}/sites/${site.id}/`);
  expect([published.status, await published.text()]).toEqual([200, 'served from S3']);
  const preview = await gateway(`${ORIGIN}/previews/${site.id}/${id.toLowerCase()}/`);
  expect([preview.status, await preview.text()]).toEqual([200, 'served from S3']);
  expect(await keys()).toEqual(before);
});
