/** DateTime: ISO-8601 in UTC with milliseconds on the wire, parsed strictly as input. */
import { GraphQLScalarType, Kind } from 'graphql';
import { GraphQLError } from 'graphql';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;

function parse(value: unknown): Date {
  if (typeof value !== 'string' || !ISO_UTC.test(value) || Number.isNaN(Date.parse(value))) {
    throw new GraphQLError('DateTime must be an ISO-8601 UTC timestamp like 2024-05-01T12:00:00.000Z', {
      extensions: { code: 'BAD_USER_INPUT' },
    });
  }
  return new Date(value);
}

export const DateTime = new GraphQLScalarType({
  name: 'DateTime',
  description: 'An ISO-8601 timestamp in UTC with milliseconds, e.g. 2024-05-01T12:00:00.000Z',
  serialize(value) {
    const d = value instanceof Date ? value : new Date(String(value));
    if (Number.isNaN(d.getTime())) throw new GraphQLError('DateTime cannot represent an invalid date');
    return d.toISOString();
  },
  parseValue: parse,
  parseLiteral(ast) {
    if (ast.kind !== Kind.STRING) throw new GraphQLError('DateTime must be a string', { extensions: { code: 'BAD_USER_INPUT' } });
    return parse(ast.value);
  },
});
