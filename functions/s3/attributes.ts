/**
 * GetObjectAttributes (`GET /<key>?attributes`,
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObjectAttributes.html):
 * what `x-amz-object-attributes` names of ETag, Checksum, ObjectParts,
 * StorageClass and ObjectSize, without the object's bytes. ObjectParts is
 * paged by `x-amz-max-parts` (at most 1,000) and `x-amz-part-number-marker`.
 *
 * Who may ask, as S3 documents it: READ access to the object, and where a
 * bucket policy grants s3:GetObject, the policy must grant
 * s3:GetObjectAttributes too (the operation needs both permissions).
 */
import type { ObjectRecord } from '../core/data/objects.js';
import { mayReadObject, verdictFor } from './access.js';
import { presentedEtag, versionHeader, type S3Context } from './context.js';
import { errors } from './errors.js';
import { checksumElement } from './multipart/uploads.js';
import { objectParts } from './object-parts.js';
import { readVersion, requestedVersion } from './versions.js';
import { xmlResponse, type XmlNode } from './xml.js';

const ATTRIBUTES = ['ETag', 'Checksum', 'ObjectParts', 'StorageClass', 'ObjectSize'] as const;
type Attribute = (typeof ATTRIBUTES)[number];

const MAX_PARTS = 1000;

function requestedAttributes(headers: Headers): Set<Attribute> {
  const raw = headers.get('x-amz-object-attributes');
  if (raw === null || raw.trim() === '') {
    throw errors.invalidArgument(
      'The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty',
      'x-amz-object-attributes',
      '',
    );
  }
  const out = new Set<Attribute>();
  for (const name of raw.split(',').map((n) => n.trim())) {
    const known = ATTRIBUTES.find((a) => a.toLowerCase() === name.toLowerCase());
    if (!known) throw errors.invalidArgument('Invalid attribute name specified.', 'x-amz-object-attributes', name);
    out.add(known);
  }
  return out;
}

function integerHeader(headers: Headers, name: string, fallback: number): number {
  const raw = headers.get(name);
  if (raw === null) return fallback;
  if (!/^\d{1,10}$/.test(raw.trim()) || Number(raw) > 2147483647) {
    throw errors.invalidArgument(`Provided ${name} not an integer or within integer range`, name, raw);
  }
  return Number(raw);
}

/** Whether the caller may read this object's attributes (see the header comment). */
function mayReadAttributes(ctx: S3Context, record: ObjectRecord): boolean {
  const bucket = ctx.bucket!;
  const principal = ctx.auth.principal;
  if (principal.kind === 'account' && principal.accountId === bucket.accountId) return true;
  if (!mayReadObject(ctx, bucket, record)) return false;
  // A read the object's ACL grants needs nothing more; one a policy grants needs the policy's s3:GetObjectAttributes as well.
  if (verdictFor(ctx, bucket, 's3:GetObject', record.key, { existingTags: record.tags ?? [] }) === 'none') return true;
  return verdictFor(ctx, bucket, 's3:GetObjectAttributes', record.key) === 'allow';
}

export async function getObjectAttributes(ctx: S3Context): Promise<Response> {
  const { headers } = ctx.req;
  const wanted = requestedAttributes(headers);
  const maxParts = Math.min(integerHeader(headers, 'x-amz-max-parts', MAX_PARTS), MAX_PARTS);
  const marker = integerHeader(headers, 'x-amz-part-number-marker', 0);
  const record = await readVersion(ctx, ctx.bucket!, ctx.s3.key!, requestedVersion(ctx));
  if (!mayReadAttributes(ctx, record)) throw errors.accessDenied();
  const body: XmlNode = {};
  const [algorithm, checksum] = Object.entries(record.checksums ?? {})[0] ?? [];
  // A composite checksum (of the parts' checksums) ends in -<part count>; S3 gives it without that suffix here.
  const composite = checksum?.includes('-') ?? false;
  // GetObjectAttributes gives the ETag without its quotes (the API reference's example).
  if (wanted.has('ETag')) body.ETag = presentedEtag(ctx, record).slice(1, -1);
  if (wanted.has('Checksum') && algorithm && checksum) {
    body.Checksum = {
      [checksumElement(algorithm)]: composite ? checksum.slice(0, checksum.indexOf('-')) : checksum,
      ChecksumType: composite ? 'COMPOSITE' : 'FULL_OBJECT',
    };
  }
  if (wanted.has('ObjectParts') && record.parts) {
    const page = maxParts === 0 ? [] : objectParts(record, marker, maxParts + 1);
    const truncated = page.length > maxParts || (maxParts === 0 && marker < record.parts);
    const shown = page.slice(0, maxParts);
    body.ObjectParts = {
      PartsCount: record.parts,
      PartNumberMarker: marker,
      NextPartNumberMarker: shown.length ? shown.at(-1)!.partNumber : marker,
      MaxParts: maxParts,
      IsTruncated: truncated,
      Part: shown.map((p) => {
        const node: XmlNode = {};
        if (algorithm && p.checksum) node[checksumElement(algorithm)] = p.checksum;
        node.PartNumber = p.partNumber;
        node.Size = p.size;
        return node;
      }),
    };
  }
  if (wanted.has('StorageClass')) body.StorageClass = 'STANDARD';
  if (wanted.has('ObjectSize')) body.ObjectSize = record.size;
  return xmlResponse('GetObjectAttributesResponse', body, {
    headers: { 'last-modified': new Date(record.lastModified).toUTCString(), ...versionHeader(ctx, record) },
  });
}
