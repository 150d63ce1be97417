/**
 * The command line's GraphQL client: one POST to `<api url>/graphql` per
 * operation with the hosting API key, as any client of the public API.
 * The first GraphQL error becomes the CliError the user sees, with its
 * `extensions.code`.
 */
import { CliError, reasonOf } from './output.js';
import type { Settings } from './config-store.js';

const TIMEOUT_MS = 60_000;

export class ApiError extends CliError {
  override name = 'ApiError';
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

interface GraphqlResponse<T> {
  data?: T | null;
  errors?: Array<{ message?: string; extensions?: { code?: string; field?: string } }>;
}

export class GraphqlClient {
  readonly endpoint: string;

  constructor(
    readonly apiUrl: string,
    readonly apiKey: string,
  ) {
    this.endpoint = `${apiUrl}/graphql`;
  }

  async request<T = Record<string, unknown>>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
    let response: Response;
    try {
      response = await fetch(this.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', authorization: this.apiKey },
        body: JSON.stringify({ query, variables }),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (err) {
      throw new CliError(`cannot reach the API at ${this.apiUrl}: ${reasonOf(err)}`);
    }
    const text = await response.text().catch(() => '');
    let body: GraphqlResponse<T>;
    try {
      body = JSON.parse(text) as GraphqlResponse<T>;
    } catch {
      throw new CliError(`${this.endpoint} answered ${response.status} with no GraphQL response: is it a Cairn API?`);
    }
    const first = body.errors?.[0];
    if (first) {
      const code = first.extensions?.code;
      const message = first.message ?? `the API answered ${response.status}`;
      if (code === 'UNAUTHENTICATED') throw new ApiError(`${message}: run cairn login (or set CAIRN_API_KEY)`, code);
      throw new ApiError(code ? `${message} (${code})` : message, code);
    }
    if (!body.data) throw new CliError(`${this.endpoint} answered ${response.status} without data`);
    return body.data;
  }
}

/** The client for the settings in force; not logged in is an error that says what to do. */
export function clientFor(settings: Settings): GraphqlClient {
  if (!settings.apiKey) throw new CliError('not logged in: run cairn login (or set CAIRN_API_KEY)');
  return new GraphqlClient(settings.apiUrl, settings.apiKey);
}
