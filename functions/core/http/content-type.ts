/**
 * The Content-Type of a file served from IPFS, where nothing stored says it:
 * from the name's extension, else from the first bytes (the few signatures
 * WHATWG's sniffing algorithm and Go's http.DetectContentType recognise, as
 * Kubo's gateway does, and JSON, which Kubo's detector also tells from
 * text). Text types carry `charset=utf-8`.
 */

const BY_EXTENSION: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  htm: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  mjs: 'text/javascript; charset=utf-8',
  cjs: 'text/javascript; charset=utf-8',
  json: 'application/json',
  map: 'application/json',
  webmanifest: 'application/manifest+json',
  txt: 'text/plain; charset=utf-8',
  md: 'text/markdown; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  xml: 'application/xml',
  rss: 'application/rss+xml',
  atom: 'application/atom+xml',
  svg: 'image/svg+xml',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  avif: 'image/avif',
  ico: 'image/vnd.microsoft.icon',
  bmp: 'image/bmp',
  woff: 'font/woff',
  woff2: 'font/woff2',
  ttf: 'font/ttf',
  otf: 'font/otf',
  wasm: 'application/wasm',
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  tar: 'application/x-tar',
  mp4: 'video/mp4',
  webm: 'video/webm',
  mp3: 'audio/mpeg',
  ogg: 'audio/ogg',
  wav: 'audio/wav',
  car: 'application/vnd.ipld.car',
};

export function typeFromName(name: string): string | undefined {
  const dot = name.lastIndexOf('.');
  if (dot < 0 || dot === name.length - 1) return undefined;
  return BY_EXTENSION[name.slice(dot + 1).toLowerCase()];
}

const startsWith = (bytes: Uint8Array, signature: number[], at = 0) => signature.every((b, i) => bytes[at + i] === b);
const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));

/** How many leading bytes sniffing looks at. */
export const SNIFF_BYTES = 512;

const isSpace = (c: number | undefined) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const LITERAL = /^(?:true|false|null|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)$/;
const LITERAL_START = /^(?:t(?:r(?:ue?)?)?|f(?:a(?:l(?:se?)?)?)?|n(?:u(?:ll?)?)?|-?(?:0|[1-9][0-9]*)?(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?)$/;

/**
 * Whether `bytes` are a JSON object or array (RFC 8259), or, when `cut`
 * (the file goes on past them), the start of one: what Kubo's gateway
 * (boxo, with gabriel-vasile/mimetype) answers `application/json` for. One
 * pass with a stack of the open brackets: linear, never recursive.
 */
export function isJsonStart(bytes: Uint8Array, cut: boolean): boolean {
  let i = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  while (isSpace(bytes[i])) i++;
  if (bytes[i] !== 0x7b && bytes[i] !== 0x5b) return false;
  const open: number[] = [];
  /** What may come next: a value, an object's key (or its end), `:`, or `,` / the end of the open bracket. */
  let want = 'value' as 'value' | 'first-value' | 'key' | 'first-key' | 'colon' | 'next';
  for (;;) {
    while (isSpace(bytes[i])) i++;
    if (i >= bytes.length) return cut || (open.length === 0 && want === 'next');
    const c = bytes[i]!;
    if (open.length === 0 && want === 'next') return false; // something after the one value
    if ((want === 'first-value' && c === 0x5d) || (want === 'first-key' && c === 0x7d) || (want === 'next' && c === open.at(-1)! + 2)) {
      open.pop(); // `]` is `[` + 2, `}` is `{` + 2
      i++;
      want = 'next';
    } else if (want === 'next') {
      if (c !== 0x2c) return false;
      i++;
      want = open.at(-1) === 0x7b ? 'key' : 'value';
    } else if (want === 'colon') {
      if (c !== 0x3a) return false;
      i++;
      want = 'value';
    } else if (c === 0x22) {
      // A string: up to its closing quote, escapes skipped, no control characters.
      for (i++; ; i++) {
        if (i >= bytes.length) return cut;
        const s = bytes[i]!;
        if (s === 0x22) break;
        if (s < 0x20) return false;
        if (s === 0x5c) i++;
      }
      i++;
      want = want === 'key' || want === 'first-key' ? 'colon' : 'next';
    } else if (want === 'key' || want === 'first-key') {
      return false;
    } else if (c === 0x7b || c === 0x5b) {
      open.push(c);
      i++;
      want = c === 0x7b ? 'first-key' : 'first-value';
    } else {
      let end = i;
      while (end < bytes.length && /[0-9a-zA-Z.+-]/.test(String.fromCharCode(bytes[end]!))) end++;
      const word = String.fromCharCode(...bytes.subarray(i, end));
      if (end >= bytes.length) return cut && LITERAL_START.test(word);
      if (!LITERAL.test(word)) return false;
      i = end;
      want = 'next';
    }
  }
}

/** The type of content that begins with `head`; `whole` when `head` is all of it (JSON is then checked to its end). */
export function sniffType(head: Uint8Array, whole = false): string {
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(head, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (startsWith(head, ascii('GIF87a')) || startsWith(head, ascii('GIF89a'))) return 'image/gif';
  if (startsWith(head, ascii('RIFF')) && startsWith(head, ascii('WEBP'), 8)) return 'image/webp';
  if (startsWith(head, ascii('%PDF-'))) return 'application/pdf';
  if (startsWith(head, [0x1f, 0x8b, 0x08])) return 'application/x-gzip';
  if (startsWith(head, ascii('PK\x03\x04'))) return 'application/zip';
  if (startsWith(head, [0x00, 0x61, 0x73, 0x6d])) return 'application/wasm';
  if (startsWith(head, ascii('wOFF'))) return 'font/woff';
  if (startsWith(head, ascii('wOF2'))) return 'font/woff2';
  let text = Buffer.from(head.subarray(0, SNIFF_BYTES)).toString('latin1');
  if (text.startsWith('\xef\xbb\xbf')) text = text.slice(3);
  const lead = text.trimStart().toLowerCase();
  for (const tag of [
    '<!doctype html',
    '<html',
    '<head',
    '<body',
    '<script',
    '<iframe',
    '<h1',
    '<div',
    '<font',
    '<table',
    '<a',
    '<style',
    '<title',
    '<b',
    '<br',
    '<p',
    '<!--',
  ]) {
    if (lead.startsWith(tag) && /[ >]/.test(lead.charAt(tag.length))) return 'text/html; charset=utf-8';
  }
  if (lead.startsWith('<?xml')) return lead.includes('<svg') ? 'image/svg+xml' : 'text/xml; charset=utf-8';
  if (lead.startsWith('<svg')) return 'image/svg+xml';
  if ((lead.startsWith('{') || lead.startsWith('[')) && isJsonStart(head.subarray(0, SNIFF_BYTES), !whole || head.length > SNIFF_BYTES))
    return 'application/json';
  // Binary when any byte is a control character text never holds (Go's rule).
  for (const b of head.subarray(0, SNIFF_BYTES)) {
    if (b <= 0x08 || b === 0x0b || (b >= 0x0e && b <= 0x1a) || (b >= 0x1c && b <= 0x1f)) return 'application/octet-stream';
  }
  return 'text/plain; charset=utf-8';
}
