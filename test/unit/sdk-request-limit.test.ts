/** The storage SDK takes an endpoint's request limit from its header, within bounds: a limit under 1 MiB is not honoured. */
import { S3Client } from '@aws-sdk/client-s3';
import { limitSeen, MAX_REQUEST_BODY_HEADER, MIN_HONOURED_LIMIT, noteLimit } from '../../packages/storage-sdk/src/limits.js';

const client = () =>
  new S3Client({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });

test("a server's 4 MiB limit is taken", () => {
  const s3 = client();
  noteLimit(s3, { [MAX_REQUEST_BODY_HEADER]: String(4 * 1024 * 1024) });
  expect(limitSeen(s3)).toBe(4 * 1024 * 1024);
});

test.each(['1', '65536', String(MIN_HONOURED_LIMIT - 1), '-5', '4MiB', '1e9', ''])(
  'a limit of %j is not taken: parts keep their size (not one request per byte)',
  (value) => {
    const s3 = client();
    noteLimit(s3, { [MAX_REQUEST_BODY_HEADER]: value });
    expect(limitSeen(s3)).toBeUndefined();
  },
);
