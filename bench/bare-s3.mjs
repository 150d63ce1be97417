/**
 * The bench's ceiling (`npm run bench:s3`, server "bare"): an in-memory
 * HTTP server that answers just the requests the bench sends, and does no S3
 * work at all: no authentication, no hashing (its ETags are counters), no
 * storage but a Map. Whatever it reaches is the most any server could reach
 * with this client on this machine, so its figures bound the goals: a goal
 * above its ratio to s3rver is out of every server's reach.
 *
 * It keeps what S3 tells a client that changes the client's work: a
 * PutObject's `x-amz-checksum-*` header is remembered and returned on a GET
 * that asks for it (`x-amz-checksum-mode: ENABLED`), as S3 and Cairn do, so
 * the client validates it here too (s3rver returns none, and its clients
 * check nothing).
 *
 * Plain JavaScript, run by plain node: PORT from the environment; prints
 * "ready" once listening.
 */
import http from 'node:http';
import { Readable } from 'node:stream';

/** key -> object */
const objects = new Map();
let etags = 0;

const xml = (res, status, body) => {
  res.writeHead(status, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) });
  res.end(body);
};
const escape = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const error = (res, status, code) =>
  xml(res, status, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`);

function put(req, res, key) {
  if (/aws-chunked/.test(req.headers['content-encoding'] ?? '')) {
    req.resume();
    return error(res, 501, 'NotImplemented');
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const checksums = Object.entries(req.headers).filter(
      ([name]) => name.startsWith('x-amz-checksum-') && name !== 'x-amz-checksum-algorithm',
    );
    const etag = `"${(++etags).toString(16).padStart(32, '0')}"`;
    objects.set(key, { body: Buffer.concat(chunks), etag, checksums, modified: new Date() });
    res.writeHead(200, { etag, 'content-length': 0 });
    res.end();
  });
}

function get(req, res, key) {
  const o = objects.get(key);
  if (!o) return error(res, 404, 'NoSuchKey');
  const headers = {
    'content-length': o.body.length,
    'content-type': 'application/octet-stream',
    etag: o.etag,
    'last-modified': o.modified.toUTCString(),
    'accept-ranges': 'bytes',
  };
  if (String(req.headers['x-amz-checksum-mode']).toUpperCase() === 'ENABLED')
    for (const [name, value] of o.checksums) headers[name] = value;
  res.writeHead(200, headers);
  Readable.from(slices(o.body), { objectMode: false }).pipe(res);
}

function* slices(body) {
  for (let at = 0; at < body.length; at += 256 * 1024) yield body.subarray(at, at + 256 * 1024);
}

function list(res, bucket, query) {
  const prefix = query.get('prefix') ?? '';
  const max = Math.min(1000, Number(query.get('max-keys') ?? 1000));
  const after = query.get('continuation-token') ?? '';
  const keys = [...objects.keys()].filter((k) => k.startsWith(`${bucket}/${prefix}`) && k > `${bucket}/${after}`).sort();
  const page = keys.slice(0, max);
  const truncated = keys.length > max;
  const contents = page.map((k) => {
    const o = objects.get(k);
    return `<Contents><Key>${escape(k.slice(bucket.length + 1))}</Key><LastModified>${o.modified.toISOString()}</LastModified><ETag>${escape(o.etag)}</ETag><Size>${o.body.length}</Size><StorageClass>STANDARD</StorageClass></Contents>`;
  });
  const next = truncated ? `<NextContinuationToken>${escape(page.at(-1).slice(bucket.length + 1))}</NextContinuationToken>` : '';
  xml(
    res,
    200,
    `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>${escape(bucket)}</Name><Prefix>${escape(prefix)}</Prefix><KeyCount>${page.length}</KeyCount><MaxKeys>${max}</MaxKeys><IsTruncated>${truncated}</IsTruncated>${contents.join('')}${next}</ListBucketResult>`,
  );
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://bare');
  const path = decodeURIComponent(url.pathname.slice(1));
  const slash = path.indexOf('/');
  const bucket = slash < 0 ? path : path.slice(0, slash);
  const key = slash < 0 ? '' : path.slice(slash + 1);
  if (req.method === 'PUT' && key) return put(req, res, `${bucket}/${key}`);
  if (req.method === 'GET' && key) return get(req, res, `${bucket}/${key}`);
  if (req.method === 'GET' && bucket && url.searchParams.get('list-type') === '2') return list(res, bucket, url.searchParams);
  req.resume();
  error(res, 501, 'NotImplemented');
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('ready\n'));
