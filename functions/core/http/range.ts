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

/** The most ranges one request may ask for in one answer; more, and the whole body is sent (RFC 9110 section 14.2 lets a server ignore such a Range). */
export const MAX_RANGES = 32;

/**
 * One or more byte ranges (`bytes=6-16,0-4`), as the IPFS path gateway
 * honours them: the satisfiable ones, in the order asked; 'unsatisfiable'
 * (416) when none is; undefined (serve the whole body) when the header is
 * not a byte-range set, names more than MAX_RANGES ranges, or asks for more
 * bytes in all than the body has (overlapping ranges would make one request
 * read a body many times over: RFC 9110 section 17.15).
 */
export function parseRanges(header: string | null, size: number): Array<{ start: number; end: number }> | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const set = /^\s*bytes\s*=(.*)$/i.exec(header);
  if (!set) return undefined;
  const specs = set[1]!.split(',');
  if (specs.length > MAX_RANGES) return undefined;
  const ranges: Array<{ start: number; end: number }> = [];
  let total = 0;
  for (const spec of specs) {
    const one = parseRange(`bytes=${spec}`, size);
    if (one === undefined) return undefined;
    if (one === 'unsatisfiable') continue;
    ranges.push(one);
    total += one.end - one.start + 1;
  }
  if (ranges.length === 0) return 'unsatisfiable';
  return ranges.length > 1 && total > size ? undefined : ranges;
}
