/** GraphQL errors carry `extensions.code`; these are the codes Cairn uses. */
import { GraphQLError } from 'graphql';

export type ErrorCode = 'UNAUTHENTICATED' | 'FORBIDDEN' | 'BAD_USER_INPUT' | 'NOT_FOUND' | 'NOT_IMPLEMENTED' | 'INTERNAL_SERVER_ERROR';

const HTTP_STATUS: Partial<Record<ErrorCode, number>> = { UNAUTHENTICATED: 401 };

export function graphqlError(code: ErrorCode, message: string): GraphQLError {
  const status = HTTP_STATUS[code];
  return new GraphQLError(message, { extensions: { code, ...(status ? { http: { status } } : {}) } });
}
