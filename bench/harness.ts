/**
 * What the benchmarks share to run (bench:deploy, bench:sites,
 * bench:edge-sites, bench:graphql-side-by-side): settings read from the
 * environment, progress lines on stderr (stdout holds the results), and
 * autocannon's API, typed. Loads nothing of the service: the benchmarks'
 * client stays lean.
 */
import { createRequire } from 'node:module';

/** The positive number in the environment variable `name`, else `fallback`. */
export const num = (name: string, fallback: number) => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
};

/** A progress line, on stderr. */
export const log = (line: string) => process.stderr.write(line + '\n');

// autocannon has no type declarations of its own; the part of its API the benchmarks use.
export interface AutocannonClient {
  on(event: 'headers', listener: (info: { statusCode: number; headers: string[] }) => void): void;
  on(event: 'response', listener: (status: number, bytes: number, ms: number) => void): void;
}
export interface AutocannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  resets: number;
  mismatches: number;
  '2xx': number;
  requests: { total: number };
  latency: { p50: number; p99: number };
}
export type Autocannon = (opts: {
  url: string;
  connections: number;
  duration: number;
  headers?: Record<string, string>;
  requests?: Array<{ method?: string; path: string; headers?: Record<string, string>; body?: string }>;
  setupClient?: (client: AutocannonClient) => void;
}) => Promise<AutocannonResult>;
export const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;
