/**
 * SigV4-signed PUTs whose header values are bytes (ByteStrings, one
 * character a byte), signed over exactly those bytes. Node's HTTP client
 * refuses header characters above U+00FF, so the AWS SDK cannot send, say,
 * CJK user metadata from Node; this signer builds the canonical request by
 * hand (it does not share the server's code) and sends the bytes as a
 * client that writes UTF-8 (boto3, a browser's SDK) puts them on the wire.
 */
import { createHash, createHmac } from 'node:crypto';
import type { ApiTarget } from './api-target.js';
import { REST_API_ENDPOINT } from './lambda-door.js';
import type { S3Door } from './s3-doors.js';

/** Text as the ByteString of its UTF-8 bytes: what a client that writes UTF-8 puts on the wire, one character a byte. */
export const utf8Bytes = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');
const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();

/** PUTs `body` at `bucket/key` through `door` with `extra` headers (ByteStrings), signed by `target`'s account. */
export async function signedPut(
  target: ApiTarget,
  door: S3Door,
  bucket: string,
  key: string,
  extra: Record<string, string>,
  body = 'bytes',
): Promise<Response> {
  const rest = door.name === 'REST API door';
  const base = new URL(rest ? REST_API_ENDPOINT : target.endpoints.s3);
  const path = `${base.pathname.replace(/\/$/, '')}/${bucket}/${key}`;
  const amzDate = new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const headers: Record<string, string> = {
    host: base.host,
    'content-length': String(Buffer.byteLength(body)),
    'x-amz-content-sha256': sha256(body),
    'x-amz-date': amzDate,
    ...extra,
  };
  const names = Object.keys(headers).sort();
  const canonical = [
    'PUT',
    path,
    '',
    ...names.map((n) => `${n}:${headers[n]!.replace(/^[ \t]+|[ \t]+$/g, '')}`),
    '',
    names.join(';'),
    headers['x-amz-content-sha256'],
  ].join('\n');
  const scope = `${day}/${target.region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(Buffer.from(canonical, 'latin1'))].join('\n');
  const secret = target.account.secretAccessKey;
  const key4 = hmac(hmac(hmac(hmac(`AWS4${secret}`, day), target.region), 's3'), 'aws4_request');
  const signature = createHmac('sha256', key4).update(toSign).digest('hex');
  const authorization = `AWS4-HMAC-SHA256 Credential=${target.account.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`;
  const { host: _host, ...sent } = headers;
  return door.fetch(`${base.origin}${path}`, { method: 'PUT', headers: { ...sent, authorization }, body });
}
