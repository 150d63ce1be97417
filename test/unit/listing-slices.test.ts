/**
 * S3 listings rendered in slices (functions/s3/list.ts, xmlResponseInSlices):
 * the same document xmlResponse renders, byte for byte, and a page of 1,000
 * keys of 1,024 bytes (the most a page and a key may be) rendered without
 * holding the event loop for 50 ms, where one xmlDocument call holds it
 * for all of it.
 */
import { xmlResponseInSlices } from '../../functions/s3/list.js';
import { xmlDocument, xmlResponse, type XmlNode } from '../../functions/s3/xml.js';
import { leastCpuMs, leastStalled, stallsDuring } from '../support/event-loop.js';

/** A page as ListObjectsV2 builds it: 1,000 keys of 1,024 bytes, each full of characters XML escapes. */
function page(): XmlNode {
  const contents = Array.from({ length: 1000 }, (_, i) => ({
    Key: `${'<&>"\''.repeat(204)}${String(i).padStart(4, '0')}`,
    LastModified: '2026-11-28T12:00:00.000Z',
    ETag: '"9b2cf535f27731c974343645a3985328"',
    Size: i,
    StorageClass: 'STANDARD',
    Owner: { ID: 'owner', DisplayName: 'owner' },
  }));
  return {
    Name: 'bucket',
    Prefix: '',
    MaxKeys: 1000,
    KeyCount: 1000,
    IsTruncated: true,
    Contents: contents,
    CommonPrefixes: [{ Prefix: 'a/' }, { Prefix: 'b/' }],
    EncodingType: undefined,
  };
}

test('the document rendered in slices is the one xmlResponse renders, with its status and type', async () => {
  const body = page();
  const sliced = await xmlResponseInSlices('ListBucketResult', body);
  const whole = xmlResponse('ListBucketResult', body);
  expect(sliced.status).toBe(200);
  expect(sliced.headers.get('content-type')).toBe(whole.headers.get('content-type'));
  const text = await sliced.text();
  expect(text).toBe(await whole.text());
  expect(text.length).toBeGreaterThan(1000 * 1024 * 4);
  expect(await (await xmlResponseInSlices('ListPartsResult', { Bucket: 'b', Part: [] })).text()).toBe(
    xmlDocument('ListPartsResult', { Bucket: 'b', Part: [] }),
  );
});

test('three 1,000-key pages of long keys render without a 50 ms gap of the event loop', async () => {
  const bodies = [page(), page(), page()];
  // Read as a door sends it, a piece at a time (collecting it whole is the reader's own long turn).
  const runs = await leastStalled(
    () => bodies,
    async (pages) => {
      let bytes = 0;
      for (const body of pages) {
        const reader = (await xmlResponseInSlices('ListBucketResult', body)).body!.getReader();
        for (let piece = await reader.read(); !piece.done; piece = await reader.read()) bytes += piece.value.byteLength;
      }
      return bytes;
    },
  );
  for (const run of runs) expect(run.result).toBeGreaterThan(3 * 1000 * 1024 * 4);
  const sliced = { cpuMs: leastCpuMs(runs) };
  expect(sliced.cpuMs).toBeLessThan(50);
  // Rendered whole, for scale: one gap as long as all three.
  const whole = await stallsDuring(async () => {
    for (const body of bodies) xmlDocument('ListBucketResult', body);
  });
  expect(whole.cpuMs).toBeGreaterThan(sliced.cpuMs);
});
