/**
 * DateTime: ISO-8601 in UTC with milliseconds on the wire
 * (`2024-05-01T12:00:00.000Z`), parsed strictly as input: a UTC `Z`
 * timestamp naming a real instant (no 2024-02-30, no hour 24, no offsets).
 */
import { GraphQLError, GraphQLScalarType, Kind } from 'graphql';
import { LRUCache } from 'lru-cache';

const ISO_UTC = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?Z$/;

function invalid(): GraphQLError {
  return new GraphQLError('DateTime must be an ISO-8601 UTC timestamp like 2024-05-01T12:00:00.000Z', {
    extensions: { code: 'BAD_USER_INPUT' },
  });
}

export function parseDateTime(value: unknown): Date {
  if (typeof value !== 'string') throw invalid();
  const m = ISO_UTC.exec(value);
  if (!m) throw invalid();
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const date = new Date(value);
  // Date would roll 2024-02-30 over to March; a strict parse refuses it.
  if (
    Number.isNaN(date.getTime()) ||
    date.getUTCFullYear() !== year ||
    date.getUTCMonth() + 1 !== month ||
    date.getUTCDate() !== day ||
    date.getUTCHours() !== hour ||
    date.getUTCMinutes() !== minute ||
    date.getUTCSeconds() !== second
  ) {
    throw invalid();
  }
  return date;
}

/**
 * Stored instants serialised lately, by what was stored: a page of sites
 * with their deploys carries a hundred, the same ones request after
 * request, and Date's parse and toISOString were a fair part of such an
 * answer's CPU. A pure function of the string; at most SERIALISED_KEPT
 * kept, the least recently used forgotten first.
 */
const SERIALISED_KEPT = 10_000;
const serialised = new LRUCache<string, string>({ max: SERIALISED_KEPT });

function serializeDateTime(value: unknown): string {
  if (typeof value === 'string') {
    const known = serialised.get(value);
    if (known !== undefined) return known;
  }
  const d = value instanceof Date ? value : typeof value === 'string' || typeof value === 'number' ? new Date(value) : new Date(NaN);
  if (Number.isNaN(d.getTime())) throw new GraphQLError('DateTime cannot represent an invalid date');
  const out = d.toISOString();
  if (typeof value === 'string' && value.length <= 64) serialised.set(value, out);
  return out;
}

export const DateTime = new GraphQLScalarType({
  name: 'DateTime',
  description: 'An instant, as an ISO-8601 string in UTC with milliseconds: 2024-05-01T12:00:00.000Z.',
  serialize: serializeDateTime,
  parseValue: parseDateTime,
  parseLiteral(ast) {
    if (ast.kind !== Kind.STRING) throw invalid();
    return parseDateTime(ast.value);
  },
});
