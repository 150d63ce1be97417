/** S3's XML: escaping and a tiny element builder. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}

export type XmlValue = string | number | boolean | null | undefined | XmlNode | XmlNode[];
export interface XmlNode {
  [element: string]: XmlValue;
}

/** One element (or one per item of an array), as a document renders it. */
export function render(name: string, value: XmlValue): string {
  if (value === undefined || value === null) return '';
  if (Array.isArray(value)) return value.map((v) => render(name, v)).join('');
  if (typeof value === 'object') {
    return `<${name}>${Object.entries(value)
      .map(([k, v]) => render(k, v))
      .join('')}</${name}>`;
  }
  return `<${name}>${escapeXml(String(value))}</${name}>`;
}

export const S3_NS = 'http://s3.amazonaws.com/doc/2006-03-01/';

/** A complete document: `<?xml?>` and one root element (with S3's namespace unless told otherwise). */
export function xmlDocument(root: string, body: XmlNode, ns: string | null = S3_NS): string {
  const inner = Object.entries(body)
    .map(([k, v]) => render(k, v))
    .join('');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<${root}${ns ? ` xmlns="${ns}"` : ''}>${inner}</${root}>`;
}

export function xmlResponse(root: string, body: XmlNode, init: { status?: number; headers?: Record<string, string> } = {}): Response {
  return new Response(xmlDocument(root, body), {
    status: init.status ?? 200,
    headers: { 'content-type': 'application/xml', ...init.headers },
  });
}
