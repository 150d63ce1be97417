/**
 * The CloudFront KeyValueStore API is global and takes only SigV4a
 * signatures. The SDK signs that way once a SigV4a signer is registered,
 * which the host-map adapter does by importing @aws-sdk/signature-v4a: a
 * request it sends (caught here before it leaves) is signed with
 * AWS4-ECDSA-P256-SHA256 for every region, at the account's KVS endpoint.
 */
import { CloudFrontKeyValueStoreClient, DescribeKeyValueStoreCommand } from '@aws-sdk/client-cloudfront-keyvaluestore';
import '../../functions/aws/kvs-site-hosts.js';

const KVS_ARN = 'arn:aws:cloudfront::123456789012:key-value-store/a1b2c3d4-5678-90ab-cdef-EXAMPLE11111';

test('requests to the store are signed with SigV4a for region set *', async () => {
  const seen: Array<{ hostname: string; path: string; headers: Record<string, string> }> = [];
  const client = new CloudFrontKeyValueStoreClient({
    region: 'eu-west-1',
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', sessionToken: 'token' },
    maxAttempts: 1,
    requestHandler: {
      handle: async (request: { hostname: string; path: string; headers: Record<string, string> }) => {
        seen.push(request);
        throw Object.assign(new Error('caught before it left'), { name: 'Caught' });
      },
    } as never,
  });
  await expect(client.send(new DescribeKeyValueStoreCommand({ KvsARN: KVS_ARN }))).rejects.toThrow('caught before it left');
  expect(seen).toHaveLength(1);
  const [request] = seen;
  expect(request!.hostname).toBe('123456789012.cloudfront-kvs.global.api.aws');
  expect(request!.headers.authorization).toMatch(
    /^AWS4-ECDSA-P256-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/cloudfront-keyvaluestore\/aws4_request, /,
  );
  expect(request!.headers['x-amz-region-set']).toBe('*');
  expect(request!.headers['x-amz-security-token']).toBe('token');
});
