/** Single byte ranges (`bytes=a-b`, `bytes=a-`, `bytes=-n`), as S3 and gateways honour them. */
export type RangeResult = { start: number; end: number } | 'unsatisfiable' | undefined;

/**
 * undefined: no usable Range header (serve the whole body, as S3 does for
 * syntax it does not understand); 'unsatisfiable': 416.
 */
export function parseRange(header: string | null, size: number): RangeResult {
  if (!header) return undefined;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}
