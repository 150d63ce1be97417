/**
 * The storage API distribution's viewer-request function
 * (functions/cdn/s3-viewer-request.js), run in Node as CloudFront's
 * JavaScript runtime 2.0 runs it: the file as an ES module with an `export`
 * of its handler added. Events have CloudFront Functions' shape
 * (https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/functions-event-structure.html):
 * lowercase header names, `{ value }` objects, the query by name.
 */
import * as fs from 'node:fs';
import * as vm from 'node:vm';
import { viewerSigned } from '../../functions/core/http/api-gateway-rest.js';

type Json = any;
let handler: (event: Json) => Json;

async function loadViewerRequest(code: string): Promise<(event: Json) => Json> {
  const mod = new vm.SourceTextModule(`${code}\nexport { handler };\n`, { identifier: 's3-viewer-request.js' });
  await mod.link(async (specifier) => {
    throw new Error(`the function imports ${specifier}`);
  });
  await mod.evaluate();
  return (mod.namespace as { handler: (event: Json) => Json }).handler;
}

beforeAll(async () => {
  handler = await loadViewerRequest(fs.readFileSync('functions/cdn/s3-viewer-request.js', 'utf8'));
});

const MiB = 1024 * 1024;

function event(method: string, uri: string, query: Record<string, string>, headers: Record<string, string>): Json {
  return {
    version: '1.0',
    context: { eventType: 'viewer-request', distributionDomainName: 'd1.cloudfront.net' },
    viewer: { ip: '203.0.113.7' },
    request: {
      method,
      uri,
      querystring: Object.fromEntries(Object.entries(query).map(([k, v]) => [k, { value: v }])),
      headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, { value: v }])),
      cookies: {},
    },
  };
}

const part = { partNumber: '2', uploadId: 'abc' };
const signedBy = { host: 'd1.cloudfront.net', authorization: 'AWS4-HMAC-SHA256 Credential=K/20260101/us-east-1/s3/aws4_request, ...' };

test('an UploadPart over 4 MiB goes to the part-staging resource; its host and Authorization come along', () => {
  const out = handler(event('PUT', '/bucket/a/key', part, { ...signedBy, 'content-length': String(8 * MiB) }));
  expect(out.uri).toBe('/_parts/bucket/a/key');
  expect(out.headers['x-cairn-viewer-host']).toEqual({ value: 'd1.cloudfront.net' });
  expect(out.headers['x-cairn-viewer-authorization']).toEqual({ value: signedBy.authorization });
  expect(out.querystring).toEqual(event('PUT', '/', part, {}).request.querystring);
});

test.each([
  ['a part of exactly 4 MiB', 'PUT', part, { 'content-length': String(4 * MiB) }],
  ['a part without a length', 'PUT', part, {}],
  ['a length that is not a number', 'PUT', part, { 'content-length': '9e9' }],
  ['a PutObject of 4 MiB', 'PUT', {}, { 'content-length': String(4 * MiB) }],
  ['an UploadPart without an uploadId', 'PUT', { partNumber: '1' }, { 'content-length': String(8 * MiB) }],
  ['an UploadPartCopy', 'PUT', part, { 'content-length': String(8 * MiB), 'x-amz-copy-source': '/b/k' }],
  ['a POST (Complete)', 'POST', { uploadId: 'abc' }, { 'content-length': String(8 * MiB) }],
])('%s goes on to the S3 function as it came', (_name, method, query, headers) => {
  const out = handler(event(method, '/bucket/key', query, { ...signedBy, ...headers }));
  expect(out.uri).toBe('/bucket/key');
  expect(out.headers['x-cairn-viewer-host']).toEqual({ value: 'd1.cloudfront.net' });
});

test('what a viewer sends under the forwarded names is overwritten, or dropped when it sent no Authorization', () => {
  const out = handler(
    event('GET', '/bucket/key', {}, { host: 'd1.cloudfront.net', 'x-cairn-viewer-host': 'evil', 'x-cairn-viewer-authorization': 'forged' }),
  );
  expect(out.headers['x-cairn-viewer-host']).toEqual({ value: 'd1.cloudfront.net' });
  expect(out.headers['x-cairn-viewer-authorization']).toBeUndefined();
});

test('the S3 function puts the viewer host and Authorization back, and checks the path without the stage', () => {
  const headers = new Headers({
    host: 'api.execute-api.us-east-1.amazonaws.com',
    'x-cairn-viewer-host': 'd1.cloudfront.net',
    'x-cairn-viewer-authorization': 'A',
  });
  const paths = viewerSigned(headers, { rawPath: '/bucket/key', signedPath: '/s3/bucket/key' });
  expect(paths).toEqual({ rawPath: '/bucket/key', signedPath: '/bucket/key' });
  expect([...headers]).toEqual([
    ['authorization', 'A'],
    ['host', 'd1.cloudfront.net'],
  ]);
  // Straight to the API (no distribution in front): nothing changes.
  const direct = new Headers({ host: 'api.execute-api.us-east-1.amazonaws.com' });
  expect(viewerSigned(direct, { rawPath: '/b/k', signedPath: '/s3/b/k' })).toEqual({ rawPath: '/b/k', signedPath: '/s3/b/k' });
});

test("a PutObject over 4 MiB is answered at the edge: S3 XML EntityTooLarge naming the clients' settings", () => {
  const out = handler(event('PUT', '/bucket/key', {}, { ...signedBy, 'content-length': String(6 * MiB) }));
  expect(out.statusCode).toBe(400);
  expect(out.headers['x-cairn-max-request-body']).toEqual({ value: String(4 * MiB) });
  expect(out.body).toContain('<Code>EntityTooLarge</Code>');
  expect(out.body).toContain(`<ProposedSize>${6 * MiB}</ProposedSize>`);
  expect(out.body).toContain('multipart_threshold');
  expect(out.body).toContain('--s3-upload-cutoff');
});
