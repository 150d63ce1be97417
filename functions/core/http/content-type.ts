/**
 * The Content-Type of a file served from IPFS, where nothing stored says it:
 * from the name's extension, else from the first bytes (the few signatures
 * WHATWG's sniffing algorithm and Go's http.DetectContentType recognise, as
 * Kubo's gateway does). Text types carry `charset=utf-8`.
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

export function sniffType(head: Uint8Array): string {
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
  // Binary when any byte is a control character text never holds (Go's rule).
  for (const b of head.subarray(0, SNIFF_BYTES)) {
    if (b <= 0x08 || b === 0x0b || (b >= 0x0e && b <= 0x1a) || (b >= 0x1c && b <= 0x1f)) return 'application/octet-stream';
  }
  return 'text/plain; charset=utf-8';
}
