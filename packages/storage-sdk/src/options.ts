/**
 * Settings: what createStorage was given, else the environment variables the
 * Cairn server's README names, else the local server's defaults.
 */
import { invalidArgument } from './errors.js';
import type { ResolvedOptions, StorageOptions } from './types.js';

export const MiB = 1024 * 1024;

export const DEFAULTS = {
  endpoint: 'http://127.0.0.1:4001',
  gatewayUrl: 'http://127.0.0.1:4002',
  publicDomain: 'storage.localhost:4002',
  /**
   * S3's least part size (a smaller part but the last is EntityTooSmall); an
   * endpoint's advertised limit lowers it (limits.ts: 4 MiB behind Cairn's
   * Lambda route, which takes parts that size).
   */
  partSize: 5 * MiB,
  concurrency: 4,
  region: 'us-east-1',
} as const;

export const ENV = {
  endpoint: 'CAIRN_STORAGE_ENDPOINT',
  gatewayUrl: 'CAIRN_GATEWAY_URL',
  publicDomain: 'CAIRN_STORAGE_PUBLIC_DOMAIN',
} as const;

/** S3 allows parts up to 5 GiB. */
const MAX_PART_SIZE = 5 * 1024 * MiB;

function env(name: string): string | undefined {
  // No `process` in browsers; bundlers may still define process.env.
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  const value = proc?.env?.[name];
  return value ? value : undefined;
}

function url(name: string, value: string): string {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw invalidArgument(`${name} must be an absolute http(s) URL, got "${value}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw invalidArgument(`${name} must be an http(s) URL, got "${value}"`);
  return value.replace(/\/+$/, '');
}

function integer(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw invalidArgument(`${name} must be an integer from ${min} to ${max}, got ${String(value)}`);
  }
  return value;
}

export function resolveOptions(options: StorageOptions = {}): ResolvedOptions {
  const endpoint = url('endpoint', options.endpoint ?? env(ENV.endpoint) ?? DEFAULTS.endpoint);
  // Fleek's config gives the gateway with its /ipfs path; the SDK adds /ipfs/<hash> itself.
  const gatewayUrl = url('gatewayUrl', options.gatewayUrl ?? env(ENV.gatewayUrl) ?? DEFAULTS.gatewayUrl).replace(/\/ipfs$/, '');
  const publicDomain = (options.publicDomain ?? env(ENV.publicDomain) ?? DEFAULTS.publicDomain).replace(/^\.+|\/+$/g, '');
  if (!publicDomain || /[/\s]/.test(publicDomain))
    throw invalidArgument(`publicDomain must be a host name (with an optional port), got "${publicDomain}"`);
  return {
    endpoint,
    gatewayUrl,
    publicDomain,
    partSize: integer('partSize', options.partSize ?? DEFAULTS.partSize, 1, MAX_PART_SIZE),
    concurrency: integer('concurrency', options.concurrency ?? DEFAULTS.concurrency, 1, 64),
    region: options.region ?? DEFAULTS.region,
  };
}
