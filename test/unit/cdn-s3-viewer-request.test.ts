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
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { restToHttpRequest, viewerSigned } from '../../functions/core/http/api-gateway-rest.js';
import { stagingRequest } from '../../functions/part-staging/authorize.js';

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

test("the viewer's address goes on as x-cairn-viewer-ip on every request, over what a viewer sent under that name", () => {
  const forged = { ...signedBy, 'x-cairn-viewer-ip': '10.0.0.1' };
  for (const e of [
    event('GET', '/bucket/key', {}, forged),
    event('PUT', '/bucket/key', part, { ...forged, 'content-length': String(8 * MiB) }),
  ]) {
    expect(handler(e).headers['x-cairn-viewer-ip']).toEqual({ value: '203.0.113.7' });
  }
});

describe("the REST door takes the viewer's address only from the distribution: with the viewer host and the edge key", () => {
  const KEY = 'k'.repeat(64);
  const CLOUDFRONT = '130.176.0.1';
  const fromCloudFront = (headers: Record<string, string>): APIGatewayProxyEvent =>
    ({
      httpMethod: 'GET',
      path: '/bucket/key',
      headers,
      multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
      queryStringParameters: null,
      multiValueQueryStringParameters: null,
      pathParameters: null,
      stageVariables: null,
      body: null,
      isBase64Encoded: false,
      resource: '/{proxy+}',
      requestContext: { path: '/s3/bucket/key', identity: { sourceIp: CLOUDFRONT } },
    }) as unknown as APIGatewayProxyEvent;
  const viewer = {
    host: 'abc.execute-api.us-east-1.amazonaws.com',
    'x-cairn-viewer-host': 'd1.cloudfront.net',
    'x-cairn-viewer-ip': '203.0.113.7',
  };

  test.each([
    ['the viewer host and the edge key', { ...viewer, 'x-cairn-edge-key': KEY }, KEY, '203.0.113.7'],
    ['an IPv6 viewer', { ...viewer, 'x-cairn-viewer-ip': '2001:db8::7', 'x-cairn-edge-key': KEY }, KEY, '2001:db8::7'],
    ['no edge key (a caller straight at the API)', viewer, KEY, CLOUDFRONT],
    ['a wrong edge key', { ...viewer, 'x-cairn-edge-key': 'guess' }, KEY, CLOUDFRONT],
    ['the edge key without the viewer host', { ...viewer, 'x-cairn-viewer-host': undefined, 'x-cairn-edge-key': KEY }, KEY, CLOUDFRONT],
    ['no key configured (a stack without the distribution)', { ...viewer, 'x-cairn-edge-key': KEY }, undefined, CLOUDFRONT],
    ['an empty key sent to a door with none', { ...viewer, 'x-cairn-edge-key': '' }, undefined, CLOUDFRONT],
    ['an address that is not one', { ...viewer, 'x-cairn-viewer-ip': 'evil, 10.0.0.1', 'x-cairn-edge-key': KEY }, KEY, CLOUDFRONT],
  ])('%s', (_name, headers, edgeKey, address) => {
    const present = Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined)) as Record<string, string>;
    const req = restToHttpRequest(fromCloudFront(present), { edgeKey });
    expect(req.remoteAddress).toBe(address);
    // Neither the address nor the key reaches what follows (signature checks, policies, logs).
    expect(req.headers.has('x-cairn-viewer-ip')).toBe(false);
    expect(req.headers.has('x-cairn-edge-key')).toBe(false);
  });

  test("the part-staging authoriser decides on the same address: the viewer's with the key, CloudFront's without", () => {
    const authorizerEvent = (headers: Record<string, string>) =>
      ({
        ...fromCloudFront(headers),
        httpMethod: 'PUT',
        path: '/_parts/bucket/key',
        requestContext: { path: '/s3/_parts/bucket/key', identity: { sourceIp: CLOUDFRONT } },
        type: 'REQUEST',
        methodArn: 'arn:aws:execute-api:us-east-1:123456789012:abc/s3/PUT/_parts/bucket/key',
      }) as never;
    const vouched = stagingRequest(authorizerEvent({ ...viewer, 'x-cairn-edge-key': KEY }), KEY);
    expect(vouched.remoteAddress).toBe('203.0.113.7');
    expect(vouched.rawPath).toBe('/bucket/key');
    expect(vouched.headers.has('x-cairn-edge-key')).toBe(false);
    expect(stagingRequest(authorizerEvent(viewer), KEY).remoteAddress).toBe(CLOUDFRONT);
    expect(stagingRequest(authorizerEvent({ ...viewer, 'x-cairn-edge-key': KEY })).remoteAddress).toBe(CLOUDFRONT);
  });

  test('viewerSigned answers the vouched address beside the paths, and nothing without the key', () => {
    const headers = () => new Headers({ ...viewer, 'x-cairn-edge-key': KEY });
    const paths = { rawPath: '/b/k', signedPath: '/s3/b/k' };
    expect(viewerSigned(headers(), paths, KEY)).toEqual({ rawPath: '/b/k', signedPath: '/b/k', viewerAddress: '203.0.113.7' });
    expect(viewerSigned(headers(), paths)).toEqual({ rawPath: '/b/k', signedPath: '/b/k' });
  });
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

test('a browser upload (POST Object) over 4 MiB is EntityTooLarge at the edge; smaller ones and other POSTs go on', () => {
  const form = { 'content-type': 'multipart/form-data; boundary=xyz' };
  const out = handler(event('POST', '/bucket', {}, { ...form, 'content-length': String(5 * MiB) }));
  expect(out.statusCode).toBe(400);
  expect(out.body).toContain('<Code>EntityTooLarge</Code>');
  expect(out.body).toContain('browser upload (POST)');
  for (const [query, headers] of [
    [{}, { ...form, 'content-length': String(4 * MiB) }],
    [{ delete: '' }, { 'content-type': 'application/xml', 'content-length': String(5 * MiB) }],
    [{ uploadId: 'abc' }, { 'content-length': String(5 * MiB) }],
  ] as const) {
    expect(handler(event('POST', '/bucket', query, headers)).statusCode).toBeUndefined();
  }
});
