/**
 * The GraphQL side: one urql client per sign-in, speaking to `/graphql` on
 * the app's own origin, either with `Authorization: <API key>` (no cookie
 * goes with it), or with a person's session: the cookie (`credentials:
 * 'same-origin'`), `X-Cairn-Team` for the team chosen, and on mutations the
 * session's CSRF token, without which the API refuses them. Every answer is
 * data or an ApiError carrying the API's `extensions.code`; an
 * UNAUTHENTICATED one (a wrong, revoked or deleted key; a session signed
 * out, unused or kept too long) also ends the sign-in.
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

/** What a request is made with: an API key, or the session cookie acting in one of the person's teams. */
export type ApiAuth = { kind: 'api-key'; apiKey: string } | { kind: 'session'; csrfToken: string; teamId: string };

function fetchOptionsFor(auth: ApiAuth, mutation: boolean): RequestInit {
  if (auth.kind === 'api-key') return { credentials: 'omit', headers: { authorization: auth.apiKey } };
  return {
    credentials: 'same-origin',
    // The token only where the API wants it: what changes something.
    headers: { 'x-cairn-team': auth.teamId, ...(mutation ? { 'x-csrf-token': auth.csrfToken } : {}) },
  };
}

export function createApi(graphqlPath: string, auth: ApiAuth, onUnauthenticated: (error: ApiError) => void): Api {
  const client = new Client({
    url: graphqlPath,
    exchanges: [fetchExchange],
    requestPolicy: 'network-only',
    preferGetMethod: false,
    fetchOptions: () => fetchOptionsFor(auth, false),
  });
  const mutationContext = { fetchOptions: () => fetchOptionsFor(auth, true) };
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
    mutate: async <T>(document: string, variables: Variables = {}) =>
      settle<T>(await client.mutation(document, variables, mutationContext).toPromise()),
  };
}

/** A message for an error of any kind, for the page. */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
