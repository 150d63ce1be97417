/**
 * CloudFront's KeyValueStore (the sites' host map the edge reads) as the
 * test/aws suites see it: a stand-in on aws-sdk-client-mock that keeps the
 * keys in `store`, answers GetKey and DeleteKey of a missing key with
 * ResourceNotFoundException, and gives every change a new ETag
 * (https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_kvs_GetKey.html,
 * API_kvs_PutKey.html, API_kvs_DeleteKey.html). test/aws/cdn.test.ts keeps
 * a stricter one of its own that also refuses a stale If-Match.
 */
import {
  CloudFrontKeyValueStoreClient,
  DeleteKeyCommand,
  DescribeKeyValueStoreCommand,
  GetKeyCommand,
  PutKeyCommand,
  ResourceNotFoundException,
  type PutKeyCommandInput,
} from '@aws-sdk/client-cloudfront-keyvaluestore';
import { mockClient } from 'aws-sdk-client-mock';

export function keyValueStoreStandIn(arn: string) {
  const mock = mockClient(CloudFrontKeyValueStoreClient);
  const store = new Map<string, string>();
  let etag = 1;
  /** Empties the store and sets the answers again (after `mock.reset()`, or a test's own answers). */
  const reset = () => {
    mock.reset();
    store.clear();
    mock.on(DescribeKeyValueStoreCommand).callsFake(() => ({ KvsARN: arn, ETag: `E${etag}`, ItemCount: store.size }));
    mock.on(GetKeyCommand).callsFake((input: { Key: string }) => {
      if (!store.has(input.Key)) throw new ResourceNotFoundException({ message: 'no such key', $metadata: {} });
      return { Key: input.Key, Value: store.get(input.Key) };
    });
    mock.on(PutKeyCommand).callsFake((input: PutKeyCommandInput) => {
      store.set(input.Key!, input.Value!);
      return { ETag: `E${++etag}`, ItemCount: store.size };
    });
    mock.on(DeleteKeyCommand).callsFake((input: { Key: string }) => {
      if (!store.delete(input.Key)) throw new ResourceNotFoundException({ message: 'no such key', $metadata: {} });
      return { ETag: `E${++etag}`, ItemCount: store.size };
    });
  };
  reset();
  return { mock, store, reset };
}
