/**
 * RFC 2047 encoded-words (`=?UTF-8?Q?...?=`, `=?UTF-8?B?...?=`), the form S3
 * gives user metadata that is not plain ASCII: "Values of such headers are
 * character decoded as per RFC 2047 before storing and encoded as per RFC
 * 2047 to make them mail-safe before returning. If the string contains only
 * US-ASCII characters, it is presented as is."
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html#UserMetadata).
 *
 * The encoding's details are S3's as observed (LocalStack's snapshot tests,
 * recorded against S3, tests/aws/services/s3/test_s3.py
 * `test_user_metadata_rfc2047_encoded`): printable ASCII is answered as it
 * is; anything else is Q-encoded (`_` for a space, `=XX` for each UTF-8
 * byte outside the printable set, and for `=`, `?` and `_`), or B-encoded
 * (base64) when the text holds a control character or U+FFFD.
 */

/** Printable ASCII but `=`, `?`, `_` and space, and tab: what Q-encoding keeps as it is. */
const Q_KEPT = /^[!-<>@-^`-~\t]$/;
/** What is answered as it is, without encoding: printable ASCII and tab. */
const PLAIN = /^[\x20-\x7e\t]*$/;
/** A control, format or unassigned character (Unicode category C) or U+FFFD: base64 rather than Q. */
const B_WORTHY = /[\p{C}\ufffd]/u;

/** A stored value as a header carries it: as it is when plain, else one encoded-word. */
export function encodeWord(text: string): string {
  if (PLAIN.test(text)) return text;
  const bytes = Buffer.from(text, 'utf8');
  if (B_WORTHY.test(text)) return `=?UTF-8?B?${bytes.toString('base64')}?=`;
  let out = '';
  for (const b of bytes) {
    const ch = String.fromCharCode(b);
    out += b === 0x20 ? '_' : Q_KEPT.test(ch) ? ch : `=${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return `=?UTF-8?Q?${out}?=`;
}

/** One encoded-word; RFC 2047 §2 keeps one under 76 characters, but S3 takes longer ones, and so does this. */
const WORD = /=\?([^?\s]+)\?([BbQq])\?([^?\s]*)\?=/g;
/** Whitespace between two encoded-words is not part of the text (RFC 2047 §6.2). */
const BETWEEN_WORDS = /(\?=)[ \t]+(?==\?[^?\s]+\?[BbQq]\?[^?\s]*\?=)/g;

const CHARSETS: Record<string, BufferEncoding> = { 'utf-8': 'utf8', 'us-ascii': 'latin1', 'iso-8859-1': 'latin1' };

/**
 * A header's text with its encoded-words decoded (UTF-8, US-ASCII and
 * ISO-8859-1; a word in another charset is kept as written). Linear: one
 * pass of each expression, neither of which backtracks past a `?`.
 */
export function decodeWords(text: string): string {
  if (!text.includes('=?')) return text;
  return text.replace(BETWEEN_WORDS, '$1').replace(WORD, (word: string, charset: string, kind: string, data: string) => {
    const encoding = CHARSETS[charset.toLowerCase()];
    if (!encoding) return word;
    const bytes =
      kind.toUpperCase() === 'B'
        ? Buffer.from(data, 'base64')
        : Buffer.from(
            data.replace(/_/g, ' ').replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
            'latin1',
          );
    return bytes.toString(encoding);
  });
}
