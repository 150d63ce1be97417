/**
 * The GraphQL side: one urql client per API key, speaking to `/graphql` on
 * the app's own origin with `Authorization: <API key>`. Every answer is data
 * or an ApiError carrying the API's `extensions.code`; an UNAUTHENTICATED
 * one (a wrong, revoked or deleted key) also ends the session.
 */
import { Client, fetchExchange, type CombinedError } from '@urql/core';

export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export type Variables = Record<string, unknown>;

export interface Api {
  query<T>(document: string, variables?: Variables): Promise<T>;
  mutate<T>(document: string, variables?: Variables): Promise<T>;
}

function apiErrorOf(error: CombinedError): ApiError {
  const first = error.graphQLErrors[0];
  if (first) {
    const ext = (first.extensions ?? {}) as { code?: unknown; field?: unknown };
    return new ApiError(
      first.message,
      typeof ext.code === 'string' ? ext.code : 'INTERNAL_SERVER_ERROR',
      typeof ext.field === 'string' ? ext.field : undefined,
    );
  }
  return new ApiError('The service could not be reached. Check your connection and try again.', 'NETWORK_ERROR');
}

export function createApi(graphqlPath: string, apiKey: string, onUnauthenticated: (error: ApiError) => void): Api {
  const client = new Client({
    url: graphqlPath,
    exchanges: [fetchExchange],
    requestPolicy: 'network-only',
    preferGetMethod: false,
    fetchOptions: () => ({ headers: { authorization: apiKey } }),
  });
  const settle = <T>(result: { data?: unknown; error?: CombinedError }): T => {
    if (result.error) {
      const err = apiErrorOf(result.error);
      if (err.code === 'UNAUTHENTICATED') onUnauthenticated(err);
      throw err;
    }
    return result.data as T;
  };
  return {
    query: async <T>(document: string, variables: Variables = {}) => settle<T>(await client.query(document, variables).toPromise()),
    mutate: async <T>(document: string, variables: Variables = {}) => settle<T>(await client.mutation(document, variables).toPromise()),
  };
}

/** A message for an error of any kind, for the page. */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
