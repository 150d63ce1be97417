/**
 * XML request bodies are XML 1.0: character references (`&#34;`, `&#x22;`),
 * which Go's encoding/xml writes for `"`, `'`, tabs and newlines (rclone,
 * minio-go, aws-sdk-go), decode like the five predefined entities, once.
 */
import { parseXmlBody } from '../../functions/s3/xml-input.js';
import { S3Error } from '../../functions/s3/errors.js';

const keyOf = (xml: string) => {
  const doc = parseXmlBody(Buffer.from(`<Delete><Object><Key>${xml}</Key></Object></Delete>`), 'Delete', ['Object']);
  return (doc.Object as Array<{ Key: string }>)[0]!.Key;
};

test('decimal and hexadecimal character references decode', () => {
  expect(keyOf('&#34;quoted&#34; &#39;single&#39;')).toBe(`"quoted" 'single'`);
  expect(keyOf('tab&#x9;newline&#xA;cr&#xD;')).toBe('tab\tnewline\ncr\r');
  expect(keyOf('&#x1F600;&#128512;')).toBe('😀😀');
});

test('a CompleteMultipartUpload ETag as Go escapes it is the plain quoted ETag', () => {
  const doc = parseXmlBody(
    Buffer.from(
      '<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&#34;6c72d2482f383d920a08d5e0f2cbee87&#34;</ETag></Part></CompleteMultipartUpload>',
    ),
    'CompleteMultipartUpload',
    ['Part'],
  );
  expect(doc.Part).toEqual([{ PartNumber: '1', ETag: '"6c72d2482f383d920a08d5e0f2cbee87"' }]);
});

test('the predefined entities still decode, each reference exactly once', () => {
  expect(keyOf('&lt;a&gt; &amp; &quot;b&quot; &apos;c&apos;')).toBe(`<a> & "b" 'c'`);
  expect(keyOf('&amp;#34; &amp;amp; &amp;lt;')).toBe('&#34; &amp; &lt;');
});

test('CDATA is literal', () => {
  expect(keyOf('<![CDATA[&#34;x&#34;]]>')).toBe('&#34;x&#34;');
});

test.each([
  ['an HTML-only entity', '&nbsp;'],
  ['an undefined entity', '&bogus;'],
  ['a reference to NUL', '&#0;'],
  ['a reference past Unicode', '&#x110000;'],
  ['a reference to a surrogate', '&#xD800;'],
])('%s is MalformedXML', (_name, xml) => {
  let err: unknown;
  try {
    keyOf(xml);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(S3Error);
  expect((err as S3Error).code).toBe('MalformedXML');
});
