/**
 * CloudFront's KeyValueStore (the sites' host map the edge reads) as the
 * test/aws suites see it: a stand-in on aws-sdk-client-mock that keeps the
 * keys in `store`, answers GetKey and DeleteKey of a missing key with
 * ResourceNotFoundException, refuses a PutKey or DeleteKey whose IfMatch is
 * not the store's current ETag with ConflictException, and gives every
 * change a new ETag (`E<version>`)
 * (https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_kvs_GetKey.html,
 * API_kvs_PutKey.html, API_kvs_DeleteKey.html).
 */
import {
  CloudFrontKeyValueStoreClient,
  ConflictException,
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
  const getKey = (input: { Key: string }) => {
    if (!store.has(input.Key)) throw new ResourceNotFoundException({ message: 'no such key', $metadata: {} });
    return { Key: input.Key, Value: store.get(input.Key) };
  };
  const write = (ifMatch: string | undefined, change: () => void) => {
    if (ifMatch !== `E${etag}`) throw new ConflictException({ message: 'the store changed', $metadata: {} });
    change();
    return { ETag: `E${++etag}`, ItemCount: store.size };
  };
  /** Empties the store and sets the answers again (after `mock.reset()`, or a test's own answers). */
  const reset = () => {
    mock.reset();
    store.clear();
    etag = 1;
    mock.on(DescribeKeyValueStoreCommand).callsFake(() => ({ KvsARN: arn, ETag: `E${etag}`, ItemCount: store.size }));
    mock.on(GetKeyCommand).callsFake(getKey);
    mock.on(PutKeyCommand).callsFake((input: PutKeyCommandInput) => write(input.IfMatch, () => store.set(input.Key!, input.Value!)));
    mock.on(DeleteKeyCommand).callsFake((input: { Key: string; IfMatch?: string }) => {
      if (!store.has(input.Key)) throw new ResourceNotFoundException({ message: 'no such key', $metadata: {} });
      return write(input.IfMatch, () => store.delete(input.Key));
    });
  };
  reset();
  return {
    mock,
    store,
    reset,
    /** GetKey's answer, for a test that answers it its own way first. */
    getKey,
    /** The store's version: its ETag is `E<version>`; a test may move it (another writer). */
    get version() {
      return etag;
    },
    set version(value: number) {
      etag = value;
    },
  };
}
