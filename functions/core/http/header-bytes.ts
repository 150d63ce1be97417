/**
 * Header values as bytes. HTTP carries a header value as bytes; a
 * web-standard `Headers` holds it as a ByteString (one character per byte,
 * U+0000-U+00FF: it refuses anything above), and Node's HTTP parser reads
 * each byte as that character (Latin-1). So every door hands the core a
 * request whose header values are the bytes the client sent, one character
 * each, and SigV4 hashes exactly those bytes (functions/s3/sigv4/canonical.ts).
 *
 * The Lambda doors get text instead: the front (Function URL, API
 * Gateway) puts the header into the event's JSON, which Lambda's Node.js
 * runtime reads as UTF-8 (aws-lambda-nodejs-runtime-interface-client,
 * src/client/rapid-client.ts, `setEncoding("utf-8")` before `JSON.parse`),
 * so UTF-8 bytes arrive as the characters they encode (é, 中), and bytes
 * that are not UTF-8 as U+FFFD (lost before the function runs; such a
 * signed header fails the signature there, cleanly). `bytesOfText` turns
 * the event's text back into those bytes; `textOfBytes` does the opposite
 * for a response's headers, which the runtime writes as JSON text
 * (src/stream/http-response-stream.ts: `JSON.stringify(prelude)`) and the
 * front sends as UTF-8.
 */

const NON_ASCII = /[^\x00-\x7f]/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Text as the ByteString of its UTF-8 bytes (ASCII unchanged). */
export function bytesOfText(text: string): string {
  return NON_ASCII.test(text) ? Buffer.from(text, 'utf8').toString('latin1') : text;
}

/** A ByteString's bytes read as UTF-8 when they are UTF-8; otherwise the ByteString as it is (each byte its Latin-1 character). */
export function textOfBytes(bytes: string): string {
  if (!NON_ASCII.test(bytes)) return bytes;
  try {
    return utf8.decode(Buffer.from(bytes, 'latin1'));
  } catch {
    return bytes;
  }
}
