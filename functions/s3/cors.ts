/**
 * Bucket CORS, as S3 defines it: PutBucketCors/GetBucketCors/DeleteBucketCors
 * keep a bucket's CORSRules on its record; OPTIONS preflights are answered
 * from them without authentication (browsers send no credentials on a
 * preflight); and every other response to a request with a matching Origin
 * carries the rule's Access-Control-* headers, errors included, so a page
 * can read what went wrong.
 *
 * The service's own web app (served from the API's origin, see
 * functions/web-app/) is allowed on every bucket and on ListBuckets,
 * before and whatever each bucket's own rules say: it signs every request
 * with the user's key pair, so the allowance gives it no access, only the
 * browser's leave to make the requests and read the answers.
 */
import type { Config } from '../core/config.js';
import type { Bucket, CorsRule } from '../core/data/buckets.js';
import type { HttpRequest } from '../core/http/types.js';
import type { Services } from '../core/services.js';
import type { S3Context } from './context.js';
import { errors, S3Error } from './errors.js';
import { isValidBucketName } from './names.js';
import type { S3Request } from './router.js';
import { escapeXml, S3_NS } from './xml.js';
import { parseXmlBody, readSmallBody } from './xml-input.js';
import { webAppOrigins } from '../core/web-app-origins.js';

/** The methods a rule may allow (S3 refuses any other, OPTIONS and PATCH included). */
const CORS_METHODS: ReadonlySet<string> = new Set(['GET', 'PUT', 'POST', 'DELETE', 'HEAD']);
const MAX_RULES = 100;
/** S3's size limit for a CORS configuration; it also keeps the bucket's item far below DynamoDB's 400 KB. */
export const MAX_CORS_BODY = 64 * 1024;
const MAX_ID = 255;
/** MaxAgeSeconds is an xsd:int in S3's schema. */
const MAX_AGE = 2 ** 31 - 1;
const RULE_ELEMENTS = new Set(['ID', 'AllowedOrigin', 'AllowedMethod', 'AllowedHeader', 'ExposeHeader', 'MaxAgeSeconds']);
const LIST_ELEMENTS = ['CORSRule', ...RULE_ELEMENTS];
const VARY = 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method';

function strings(rule: Record<string, unknown>, name: string): string[] {
  const values = (rule[name] as unknown[] | undefined) ?? [];
  // An element with children where text belongs is not S3's schema.
  if (values.some((v) => typeof v !== 'string')) throw errors.malformedXml();
  return values as string[];
}

function onlyElements(node: Record<string, unknown>, allowed: ReadonlySet<string>): void {
  for (const [name, value] of Object.entries(node)) {
    if (name === '#text' ? typeof value === 'string' && value.trim() !== '' : !allowed.has(name)) throw errors.malformedXml();
  }
}

function wildcards(value: string): number {
  return value.split('*').length - 1;
}

function parseRule(raw: unknown): CorsRule {
  if (typeof raw !== 'object' || raw === null) throw errors.malformedXml();
  const node = raw as Record<string, unknown>;
  onlyElements(node, RULE_ELEMENTS);
  const ids = strings(node, 'ID');
  const ages = strings(node, 'MaxAgeSeconds');
  const allowedOrigins = strings(node, 'AllowedOrigin');
  const allowedMethods = strings(node, 'AllowedMethod');
  const allowedHeaders = strings(node, 'AllowedHeader');
  const exposeHeaders = strings(node, 'ExposeHeader');
  if (ids.length > 1 || ages.length > 1 || !allowedOrigins.length || !allowedMethods.length) throw errors.malformedXml();
  for (const method of allowedMethods) {
    if (!CORS_METHODS.has(method))
      throw errors.invalidRequest(`Found unsupported HTTP method in CORS config. Unsupported method is ${method}`);
  }
  for (const origin of allowedOrigins) {
    if (wildcards(origin) > 1) throw errors.invalidRequest(`AllowedOrigin "${origin}" can not have more than one wildcard.`);
  }
  for (const header of allowedHeaders) {
    if (wildcards(header) > 1) throw errors.invalidRequest(`AllowedHeader "${header}" can not have more than one wildcard.`);
  }
  for (const header of exposeHeaders) {
    if (header.includes('*'))
      throw errors.invalidRequest(`ExposeHeader "${header}" contains wildcard. We currently do not support wildcard for ExposeHeader.`);
  }
  const rule: CorsRule = { allowedOrigins, allowedMethods, allowedHeaders, exposeHeaders };
  if (ids.length) {
    if (ids[0]!.length > MAX_ID)
      throw errors.invalidArgument(`The ID of a CORS rule can be at most ${MAX_ID} characters long.`, 'ID', ids[0]);
    rule.id = ids[0];
  }
  if (ages.length) {
    const age = ages[0]!;
    if (!/^\d+$/.test(age) || Number(age) > MAX_AGE) throw errors.malformedXml();
    rule.maxAgeSeconds = Number(age);
  }
  return rule;
}

/** A CORSConfiguration document's rules, validated as S3 validates them. */
export function parseCorsConfiguration(body: Buffer): CorsRule[] {
  const doc = parseXmlBody(body, 'CORSConfiguration', LIST_ELEMENTS);
  onlyElements(doc, new Set(['CORSRule']));
  const rules = (doc.CORSRule as unknown[] | undefined) ?? [];
  if (!rules.length || rules.length > MAX_RULES) throw errors.malformedXml();
  return rules.map(parseRule);
}

export async function putBucketCors(ctx: S3Context): Promise<Response> {
  const body = await readSmallBody(ctx, MAX_CORS_BODY);
  // Everything is validated before the write: a refused configuration leaves the old one in place.
  const rules = parseCorsConfiguration(body);
  if (!(await ctx.services.buckets.setCors(ctx.bucket!.name, rules))) throw errors.noSuchBucket(ctx.bucket!.name);
  return new Response(null, { status: 200 });
}

export async function getBucketCors(ctx: S3Context): Promise<Response> {
  const bucket = ctx.bucket!;
  if (!bucket.cors) {
    throw new S3Error('NoSuchCORSConfiguration', 404, 'The CORS configuration does not exist', { BucketName: bucket.name });
  }
  const elements = (name: string, values: string[]) => values.map((v) => `<${name}>${escapeXml(v)}</${name}>`).join('');
  const rules = bucket.cors.map(
    (r) =>
      '<CORSRule>' +
      (r.id !== undefined ? elements('ID', [r.id]) : '') +
      elements('AllowedHeader', r.allowedHeaders) +
      elements('AllowedMethod', r.allowedMethods) +
      elements('AllowedOrigin', r.allowedOrigins) +
      elements('ExposeHeader', r.exposeHeaders) +
      (r.maxAgeSeconds !== undefined ? elements('MaxAgeSeconds', [String(r.maxAgeSeconds)]) : '') +
      '</CORSRule>',
  );
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<CORSConfiguration xmlns="${S3_NS}">${rules.join('')}</CORSConfiguration>`;
  return new Response(body, { status: 200, headers: { 'content-type': 'application/xml' } });
}

export async function deleteBucketCors(ctx: S3Context): Promise<Response> {
  if (!(await ctx.services.buckets.setCors(ctx.bucket!.name, undefined))) throw errors.noSuchBucket(ctx.bucket!.name);
  return new Response(null, { status: 204 });
}

/** `pattern` with at most one `*` (any run of characters) against `value`. */
function wildcardMatch(pattern: string, value: string): boolean {
  const star = pattern.indexOf('*');
  if (star < 0) return pattern === value;
  const head = pattern.slice(0, star);
  const tail = pattern.slice(star + 1);
  return value.length >= head.length + tail.length && value.startsWith(head) && value.endsWith(tail);
}

interface Match {
  rule: CorsRule;
  /** The AllowedOrigin that matched: `*` makes the answer `*`, anything else echoes the origin. */
  allowedOrigin: string;
}

/** The first rule that allows this origin, method and every requested header (S3 takes rules in order). */
function matchRule(rules: CorsRule[], origin: string, method: string, requestedHeaders: string[]): Match | undefined {
  for (const rule of rules) {
    if (!rule.allowedMethods.includes(method)) continue;
    const allowedOrigin = rule.allowedOrigins.find((o) => wildcardMatch(o, origin));
    if (allowedOrigin === undefined) continue;
    // Header names are case-insensitive.
    const allowed = rule.allowedHeaders.map((h) => h.toLowerCase());
    if (!requestedHeaders.every((h) => allowed.some((a) => wildcardMatch(a, h)))) continue;
    return { rule, allowedOrigin };
  }
  return undefined;
}

function allowHeaders({ rule, allowedOrigin }: Match, origin: string): Record<string, string> {
  const headers: Record<string, string> = {
    'access-control-allow-origin': allowedOrigin === '*' ? '*' : origin,
    'access-control-allow-methods': rule.allowedMethods.join(', '),
  };
  // As S3: a named origin may send credentials; `*` cannot (browsers refuse the pair).
  if (allowedOrigin !== '*') headers['access-control-allow-credentials'] = 'true';
  if (rule.exposeHeaders.length) headers['access-control-expose-headers'] = rule.exposeHeaders.join(', ');
  if (rule.maxAgeSeconds !== undefined) headers['access-control-max-age'] = String(rule.maxAgeSeconds);
  return headers;
}

function corsForbidden(message: string, method: string, s3: S3Request): S3Error {
  return new S3Error('AccessForbidden', 403, message, { Method: method, ResourceType: s3.key === undefined ? 'BUCKET' : 'OBJECT' });
}

/** What the web app reads from S3's answers besides the CORS-safelisted headers. */
const APP_EXPOSE_HEADERS = [
  'ETag',
  'x-service-ipfs-hash',
  'x-service-ipfs-hash-v0',
  'x-amz-request-id',
  'x-amz-version-id',
  'Content-Length',
  'Content-Range',
];
const APP_METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'HEAD'];
const APP_MAX_AGE = 600;

const appOriginsOf = new WeakMap<Config, ReadonlySet<string>>();

/** Whether `origin` is one the web app is served from (derived from the configuration once). */
export function isWebAppOrigin(config: Config, origin: string): boolean {
  let origins = appOriginsOf.get(config);
  if (!origins) {
    origins = new Set(webAppOrigins(config));
    appOriginsOf.set(config, origins);
  }
  return origins.has(origin);
}

function appHeaders(origin: string): Record<string, string> {
  return {
    'access-control-allow-origin': origin,
    'access-control-allow-methods': APP_METHODS.join(', '),
    'access-control-expose-headers': APP_EXPOSE_HEADERS.join(', '),
    'access-control-max-age': String(APP_MAX_AGE),
    vary: VARY,
  };
}

/** An OPTIONS preflight on a bucket or object path, or on the service root (ListBuckets; the web app only). */
export async function preflight(services: Pick<Services, 'buckets' | 'config'>, req: HttpRequest, s3: S3Request): Promise<Response> {
  const origin = req.headers.get('origin');
  if (!origin) throw new S3Error('BadRequest', 400, 'Insufficient information. Origin request header needed.');
  const method = req.headers.get('access-control-request-method');
  if (method === null || !CORS_METHODS.has(method))
    throw new S3Error('BadRequest', 400, `Invalid Access-Control-Request-Method: ${method}`);
  const requested = (req.headers.get('access-control-request-headers') ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '');
  if (isWebAppOrigin(services.config, origin)) {
    const headers = appHeaders(origin);
    if (requested.length) headers['access-control-allow-headers'] = requested.join(', ');
    return new Response(null, { status: 200, headers });
  }
  // A missing bucket answers as one without CORS: unauthenticated callers learn nothing about which names exist.
  const bucket = s3.bucket !== undefined && isValidBucketName(s3.bucket) ? await services.buckets.get(s3.bucket) : undefined;
  if (!bucket?.cors) throw corsForbidden('CORSResponse: CORS is not enabled for this bucket.', method, s3);
  const match = matchRule(bucket.cors, origin, method, requested);
  if (!match) {
    throw corsForbidden(
      "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.",
      method,
      s3,
    );
  }
  const headers = allowHeaders(match, origin);
  if (requested.length) headers['access-control-allow-headers'] = requested.join(', ');
  headers.vary = VARY;
  return new Response(null, { status: 200, headers });
}

/**
 * Adds the CORS headers of the bucket's matching rule to the response of an
 * actual (non-preflight) request. `known` is the bucket if the request
 * already loaded it; otherwise it is looked up only for requests that carry
 * an Origin (browsers'), so other clients pay nothing.
 */
export async function addCorsHeaders(
  services: Pick<Services, 'buckets' | 'config' | 'logger'>,
  req: HttpRequest,
  s3: S3Request,
  known: Bucket | undefined,
  response: Response,
): Promise<void> {
  const origin = req.headers.get('origin');
  if (origin && isWebAppOrigin(services.config, origin)) {
    for (const [name, value] of Object.entries(appHeaders(origin))) response.headers.set(name, value);
    return;
  }
  let bucket = known;
  if (!bucket && origin && s3.bucket !== undefined && isValidBucketName(s3.bucket)) {
    try {
      bucket = await services.buckets.get(s3.bucket);
    } catch (err) {
      // The response itself is already decided; only its CORS headers are lost.
      services.logger.error('s3 CORS lookup failed', { err, bucket: s3.bucket });
      return;
    }
  }
  if (!bucket?.cors) return;
  // Caches must not hand one origin's answer to another.
  response.headers.set('vary', VARY);
  if (!origin) return;
  const match = matchRule(bucket.cors, origin, req.method.toUpperCase(), []);
  if (!match) return;
  for (const [name, value] of Object.entries(allowHeaders(match, origin))) response.headers.set(name, value);
}
