/**
 * GraphQL errors carry `extensions.code`; these are the codes Cairn's
 * resolvers use. (Apollo adds its own for requests that never reach them:
 * GRAPHQL_PARSE_FAILED, GRAPHQL_VALIDATION_FAILED, BAD_REQUEST.)
 */
import { GraphQLError } from 'graphql';

export type ErrorCode =
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'BAD_USER_INPUT'
  | 'NOT_FOUND'
  | 'NOT_IMPLEMENTED'
  | 'INTERNAL_SERVER_ERROR'
  /** The answer's large values (deploy logs) are over the request's byte budget (answer.ts). */
  | 'RESPONSE_TOO_LARGE'
  /** The process holds all the large answers it may at once: try again shortly (answer.ts). */
  | 'SERVICE_UNAVAILABLE';

const HTTP_STATUS: Partial<Record<ErrorCode, number>> = { UNAUTHENTICATED: 401 };

export function graphqlError(code: ErrorCode, message: string, extensions: Record<string, unknown> = {}): GraphQLError {
  const status = HTTP_STATUS[code];
  return new GraphQLError(message, { extensions: { code, ...extensions, ...(status ? { http: { status } } : {}) } });
}

/** Bad input, naming the argument or input field at fault (`input.name`, say). */
export const badInput = (message: string, field?: string) => graphqlError('BAD_USER_INPUT', message, field ? { field } : {});

/** Said the same way whether the thing is missing or belongs to another team. */
export const notFound = (what: string) => graphqlError('NOT_FOUND', `${what} not found`);

export const forbidden = (message: string) => graphqlError('FORBIDDEN', message);
