/**
 * The S3 client under the SDK, with the two things the v3 client does not
 * give: the raw response headers (Cairn answers each object's CIDs in
 * x-service-ipfs-hash and x-service-ipfs-hash-v0) and the raw listing XML
 * (Cairn's `ipfs-hashes=true` listing extension adds <IpfsHash> elements the
 * v3 deserializer drops).
 */
import { ListObjectsV2Command, S3Client, type ListObjectsV2CommandInput, type ListObjectsV2CommandOutput } from '@aws-sdk/client-s3';
import { noteLimit } from './limits.js';
import type { Credentials, ResolvedOptions, StorageOptions } from './types.js';

export const HASH_HEADER = 'x-service-ipfs-hash';
export const HASH_V0_HEADER = 'x-service-ipfs-hash-v0';

type Headers = Record<string, string | undefined>;

/** Raw response headers by command output, filled by the client's middleware. */
const responseHeaders = new WeakMap<object, Headers>();

export function headersOf(output: object): Headers {
  return responseHeaders.get(output) ?? {};
}

interface RawResponse {
  statusCode?: number;
  headers?: Headers;
  body?: unknown;
}

interface HandlerArgs {
  request: unknown;
}
interface HandlerResult {
  response: unknown;
  output?: unknown;
}
type RawHandler = (args: HandlerArgs) => Promise<HandlerResult>;

/** The part of a command's middleware stack the SDK uses, without the per-command generics. */
export interface RawStack {
  add(
    middleware: (next: RawHandler) => RawHandler,
    options: { step: 'build' | 'deserialize'; priority?: 'high' | 'normal' | 'low'; name?: string },
  ): void;
  addRelativeTo(
    middleware: (next: RawHandler) => RawHandler,
    options: { relation: 'before' | 'after'; toMiddleware: string; name?: string },
  ): void;
}

export function stackOf(command: { middlewareStack: unknown }): RawStack {
  return command.middlewareStack as RawStack;
}

/** Per-request hook the platform may install to count the bytes of a request body as they are sent. */
export type BodyTracker = (command: { middlewareStack: unknown }, onSent: (bytesThisAttempt: number) => void) => void;

export interface Platform {
  trackBody?: BodyTracker;
}

export function createS3Client(options: ResolvedOptions, credentials: Credentials, extra: StorageOptions['clientConfig'] = {}): S3Client {
  const s3 = new S3Client({
    ...extra,
    endpoint: options.endpoint,
    region: options.region,
    forcePathStyle: true,
    credentials: { accessKeyId: credentials.apiKey, secretAccessKey: credentials.apiSecret },
  });
  // At the deserialize step, outside the deserializer: sees { response, output } of every call.
  s3.middlewareStack.add(
    (next) => async (args) => {
      const result = await next(args);
      const response = result.response as RawResponse | undefined;
      if (result.output && typeof result.output === 'object' && response?.headers) responseHeaders.set(result.output, response.headers);
      return result;
    },
    { step: 'deserialize', priority: 'high', name: 'cairnResponseHeaders' },
  );
  // Inside the deserializer, once per attempt: sees every raw answer, errors included, for the endpoint's body limit.
  s3.middlewareStack.add(
    (next) => async (args) => {
      const result = await next(args);
      noteLimit(s3, (result.response as RawResponse | undefined)?.headers);
      return result;
    },
    { step: 'deserialize', priority: 'low', name: 'cairnBodyLimit' },
  );
  return s3;
}

export interface ListedPage {
  output: ListObjectsV2CommandOutput;
  /** CIDs of each Contents entry in order, when the server answered the listing extension. */
  hashes?: Array<{ hash: string; hashV0: string } | undefined>;
}

function text(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes);
}

/** The <IpfsHash>/<IpfsHashV0> of each <Contents>, in document order ('<' cannot occur unescaped in text, so this is exact). */
export function parseListingHashes(xml: string): Array<{ hash: string; hashV0: string } | undefined> {
  const out: Array<{ hash: string; hashV0: string } | undefined> = [];
  for (const m of xml.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
    const body = m[1]!;
    const hash = /<IpfsHash>([^<]+)<\/IpfsHash>/.exec(body)?.[1];
    const hashV0 = /<IpfsHashV0>([^<]+)<\/IpfsHashV0>/.exec(body)?.[1];
    out.push(hash && hashV0 ? { hash: hash.trim(), hashV0: hashV0.trim() } : undefined);
  }
  return out;
}

/** One ListObjectsV2 page; with `hashes`, asks for Cairn's listing extension and reads it from the raw XML. */
export async function listPage(s3: S3Client, input: ListObjectsV2CommandInput, hashes: boolean): Promise<ListedPage> {
  const command = new ListObjectsV2Command(input);
  let xml: string | undefined;
  if (hashes) {
    stackOf(command).add(
      (next) => async (args) => {
        const request = args.request as { query?: Record<string, string | string[] | null> };
        request.query = { ...request.query, 'ipfs-hashes': 'true' };
        return next(args);
      },
      // Before signing, so the parameter is part of the signed request.
      { step: 'build', name: 'cairnListingHashesQuery' },
    );
    stackOf(command).addRelativeTo(
      (next) => async (args) => {
        const result = await next(args);
        const response = result.response as RawResponse;
        if (response.statusCode === 200 && response.body !== undefined) {
          // Read the body once, keep its text, and hand the deserializer the same bytes.
          const bytes = await s3.config.streamCollector(response.body as never);
          xml = text(bytes);
          response.body = bytes;
        }
        return result;
      },
      { relation: 'after', toMiddleware: 'deserializerMiddleware', name: 'cairnListingRawBody' },
    );
  }
  const output = await s3.send(command);
  if (!hashes || xml === undefined) return { output };
  const found = parseListingHashes(xml);
  return { output, hashes: found.length === (output.Contents?.length ?? 0) ? found : undefined };
}
