/**
 * One typed configuration, read once from the environment by each entry point.
 * Every variable is documented in the README; a bad value throws a ConfigError
 * whose message is one line naming the variable.
 */
import { RECENT_READS_MS } from './data/recent-reads.js';
import { createHmac } from 'node:crypto';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import type { TableName } from './data/tables.js';

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

/**
 * A TSIG key (RFC 8945) for signing DNS updates. The secret is a private
 * field: it is in no JSON, no `util.inspect` and no log line of the
 * config, and only the signer reads it.
 */
export class TsigKey {
  readonly #secret: Buffer;
  constructor(
    /** The key's name, as the server knows it (lower case, no trailing dot). */
    readonly name: string,
    readonly algorithm: 'hmac-sha256' | 'hmac-sha384' | 'hmac-sha512',
    secret: Buffer,
  ) {
    this.#secret = Buffer.from(secret);
  }
  /** An HMAC over `data` with the key. */
  mac(data: Buffer): Buffer {
    return createHmac(this.algorithm.slice(5), this.#secret).update(data).digest();
  }
  toJSON() {
    return { name: this.name, algorithm: this.algorithm, secret: '(redacted)' };
  }
  [Symbol.for('nodejs.util.inspect.custom')]() {
    return `TsigKey(${this.name}, ${this.algorithm})`;
  }
}

export interface DnsLinkSettings {
  /** The zones whose `_dnslink` records Cairn writes (CAIRN_DNSLINK_ZONES): lower case, no trailing dot. */
  zones: string[];
  /** Route 53 hosted zone ids by zone name, where given (`name=ZONEID`); the others are found by name. */
  hostedZoneIds: Record<string, string>;
  /** The DNS server that takes RFC 2136 updates (CAIRN_DNSLINK_SERVER); without it, in AWS, Route 53. */
  server?: { host: string; port: number };
  /** The TSIG key the updates are signed with (CAIRN_DNSLINK_TSIG). */
  tsig?: TsigKey;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export interface Config {
  /** `local` runs everything in one process; `aws` inside Lambda. */
  runtime: 'local' | 'aws';
  dataDir: string;
  host: string;
  ports: { api: number; s3: number; gateway: number };
  urls: {
    /** GraphQL API base; the endpoint is `${baseUrl}/graphql`. */
    baseUrl: string;
    /** The S3-compatible endpoint clients point at. */
    storageEndpoint: string;
    /** `<bucket>.<bucketEndpointDomain>` addresses a bucket (virtual-host style). */
    bucketEndpointDomain: string;
    /** Public URLs are `<scheme>://<bucket>.<storagePublicDomain>/<key>`. */
    storagePublicDomain: string;
    /** The service's own gateway (`/ipfs/<cid>`). */
    gatewayUrl: string;
    /** A public IPFS gateway users can also fetch from. */
    publicGatewayUrl: string;
  };
  region: string;
  dynamodb: {
    endpoint?: string;
    /** How long the GraphQL API's reads of sites and finished deploys are answered from memory at most (core/data/recent-reads.ts). */
    recentReadsMs: number;
  };
  tables: Record<TableName, string>;
  /** In AWS: the S3 bucket holding IPFS blocks and the node's datastore. */
  blockBucket?: string;
  /** In AWS: the bucket the storage API stages parts over 4 MiB in (`part-staging/`), read back at CompleteMultipartUpload. */
  partStagingBucket?: string;
  /**
   * In AWS: the key the storage distribution sends as an origin header; a request carrying it came through the
   * distribution, whose viewer address it passes on (core/http/api-gateway-rest.ts).
   */
  edgeKey?: string;
  /** Key sealing secrets at rest: a 32-byte key (local), or a KMS key (AWS). */
  secretKey?: Buffer;
  kmsKeyId?: string;
  bootstrap: {
    accessKeyId?: string;
    secretAccessKey?: string;
    apiToken?: string;
    file?: string;
  };
  logLevel: LogLevel;
  storage: {
    /** `md5`: S3's ETags (default). `cid`: ETags are the object's CIDv1, for Fleek's published SDK. */
    etag: 'md5' | 'cid';
    /** Seconds between garbage collections of unreferenced blocks (local runtime); 0 turns it off. */
    gcIntervalSeconds: number;
    /**
     * The length of a lifecycle rule's "day" in seconds (86400): shorter
     * only to test rules in seconds rather than days, as RGW's
     * rgw_lc_debug_interval does (ceph's s3-tests set it).
     */
    lifecycleDaySeconds: number;
    /**
     * The largest body one PutObject or UploadPart may carry: S3's 5 GiB
     * locally, 4 MiB through Lambda (whose events carry at most 6 MB,
     * base64-encoded). Larger uploads use multipart.
     */
    maxRequestBody: number;
    /**
     * The least size of a multipart part other than the last, checked at
     * CompleteMultipartUpload (EntityTooSmall): S3's 5 MiB, or the largest
     * body a request may carry where that is smaller (4 MiB through Lambda,
     * whose parts cannot reach 5 MiB). 0 takes parts of any size.
     */
    minPartSize: number;
  };
  graphql: {
    /** Schema introspection: on locally, off in AWS unless CAIRN_GRAPHQL_INTROSPECTION=true. */
    introspection: boolean;
    /** The GraphiQL playground at GET /graphql for browsers. */
    playground: boolean;
    /** Where the playground's files are (the Lambda bundle's copy); node_modules when unset. */
    playgroundDir?: string;
  };
  /** Site addresses on the gateway (functions/gateway/sites.ts). */
  sites: {
    /** `<slug>.<domain>` serves a site's published deploy, `<deployId>--<slug>.<domain>` one deploy. */
    domain: string;
    /** The local response cache in front of site addresses, in bytes. */
    cacheBytes: number;
    /** Threads answering the local gateway's site cache hits (CAIRN_GATEWAY_THREADS; functions/local/gateway-threads.ts). */
    gatewayThreads: number;
  };
  /** Sites' own domains (core/hosting/domains.ts) and their certificates on one machine (local/acme-certificates.ts). */
  domains: {
    /** `host:port` of the DNS server verification asks (CAIRN_DNS_RESOLVER); the system's resolvers when unset. */
    resolver?: { host: string; port: number };
    /** The gateway's public addresses an apex domain's A/AAAA records must name (CAIRN_DOMAIN_ADDRESSES); none: apexes cannot be verified. */
    addresses: string[];
    /** Domains one site may have at once. */
    maxPerSite: number;
    /** Domains all of one team's sites may have at once. */
    maxPerTeam: number;
    /**
     * The name every domain's CNAME (or an apex's ALIAS) must point at instead
     * of the site's own address (CAIRN_DOMAIN_TARGET): in AWS the CloudFront
     * connection group's routing endpoint, which the stack sets.
     */
    target?: string;
    /** The multi-tenant distribution and connection group domains become tenants of (AWS; set by the stack). */
    tenants?: { distributionId: string; connectionGroupId: string };
    /** The gateway's HTTPS listener (CAIRN_HTTPS_PORT), serving domains' certificates by SNI; none when unset. */
    httpsPort?: number;
    /** ACME (RFC 8555) issuing domains' certificates; off unless CAIRN_ACME_DIRECTORY is set. */
    acme?: {
      directoryUrl: string;
      /** PEM file of the CA that signs the ACME directory's TLS certificate (a test CA's); the system's roots otherwise. */
      caFile?: string;
      email?: string;
      /** A certificate is renewed this many days before it expires. */
      renewBeforeDays: number;
      /** How often certificates are checked for renewal, in seconds. */
      checkEverySeconds: number;
    };
    /** DNSLink records Cairn writes for sites' primary domains (core/hosting/dnslink.ts); none when no zone is named. */
    dnslink: DnsLinkSettings;
    /** The gateway resolves `_dnslink.<host>` for Host headers that are no site's (CAIRN_GATEWAY_DNSLINK; off by default). */
    gatewayDnsLink: boolean;
  };
  /** Site builds on this machine (functions/local/bwrap-runner.ts). */
  build: {
    /** `bwrap`: bubblewrap sandbox (builds refuse to run without it). `none`: a plain child process, no isolation. */
    sandbox: 'bwrap' | 'none';
    /** Past this a build's whole process tree is killed and the deploy fails. */
    timeoutMs: number;
    /** How many builds run at once. */
    concurrency: number;
    /**
     * `none`: builds have no network but their own loopback. `outside`: a
     * network of their own through slirp4netns, to fetch dependencies,
     * which reaches other machines but not this one's loopback, where the
     * service's ports listen (bubblewrap sandbox only). `host`: they share
     * this machine's network, and so also reach the service's own ports on
     * 127.0.0.1 (the embedded database among them): only for repositories
     * the operator trusts.
     */
    network: 'none' | 'outside' | 'host';
    /** In AWS: the CodeBuild project build commands run in (Lambda has no sandbox for them). */
    codeBuildProject?: string;
    /** In AWS: the secret holding the key that names each deploy's secret of build variables (functions/aws/build-secrets.ts). */
    secretNamesKeyArn?: string;
    /**
     * What one build may use on this machine (functions/local/bwrap-runner.ts),
     * sized like a CodeBuild small instance (3 GB, 2 vCPUs) and the service's
     * own time limit. Past each the build is ended and the log names the limit.
     */
    limits: BuildLimits;
  };
  /**
   * Who may make an account by signing up with an e-mail and a password
   * (docs/accounts.md): `open`, anyone; `invite` (the default), only
   * someone with an invitation from a team's owner, for the e-mail they
   * sign up with; `closed`, no one (accounts are made by the operator).
   * CAIRN_SIGNUP.
   */
  signup: 'open' | 'invite' | 'closed';
  /**
   * How many teams one account may make with createTeam (the team an
   * account is made with is not counted), so that no account's list of
   * teams, read at every sign-in, grows without bound.
   * CAIRN_TEAMS_PER_ACCOUNT (100).
   */
  teamsPerAccount: number;
  /**
   * Sending e-mail (invitations, password resets): `smtp` from
   * CAIRN_SMTP_URL (`smtp://user:password@host:port`, STARTTLS when offered,
   * or `smtps://` for TLS from the start), `from` from CAIRN_MAIL_FROM
   * (required with it). Unset, nothing is sent (docs/accounts.md).
   */
  mail: {
    from?: string;
    smtp?: { host: string; port: number; secure: boolean; user?: string; password?: string };
  };
  /**
   * Sign-in with an OpenID Connect provider (docs/accounts.md), when
   * CAIRN_OIDC_ISSUER, CAIRN_OIDC_CLIENT_ID and CAIRN_OIDC_CLIENT_SECRET are
   * all set; `name` (CAIRN_OIDC_NAME, default the issuer's host) is what the
   * sign-in page's button says. The issuer is https, or http on a loopback
   * address (a provider on this machine).
   */
  oidc?: { issuer: string; clientId: string; clientSecret: string; name: string };
  /** Every request the service makes to an address a user chose (clones, notifications, commit statuses). */
  outbound: {
    /**
     * `refuse` (the default): loopback, private, link-local, CGNAT, multicast
     * and reserved addresses, in every IPv4-in-IPv6 form, are never connected
     * to. `allow`: they are, for local development (a git server or receiver
     * on this machine). CAIRN_OUTBOUND_PRIVATE.
     */
    private: 'allow' | 'refuse';
  };
  /** In AWS: the SQS queue triggerDeploy sends deploys to; unset, the deploys table alone is the queue. */
  deployQueueUrl?: string;
  /**
   * In AWS: the CloudFront distribution in front of site addresses
   * (lib/site-cdn.ts). Unset (the local server), the local response cache
   * is the only cache and no host map is kept.
   */
  cdn: {
    /** Purges invalidate `/sites/<siteId>/*` there. */
    distributionId?: string;
    /** The KeyValueStore mapping each site's host label (its slug) to its id, read by the distribution's viewer-request function. */
    siteHostsKvsArn?: string;
  };
  /** Preview images of deploys (functions/preview/take-preview.ts). */
  preview: {
    /**
     * On locally unless CAIRN_PREVIEW=off. Off in AWS unless CAIRN_PREVIEW=on
     * (the stack sets it, with CAIRN_PREVIEW_FUNCTION, on the deploy worker).
     */
    enabled: boolean;
    /** The Chromium (or Chrome) executable on this machine. */
    chromiumPath: string;
    /**
     * In AWS only (undefined locally): true when the preview function uses
     * its bundled @sparticuz/chromium, false when CAIRN_CHROMIUM_PATH names
     * another Chromium.
     */
    bundledChromium?: boolean;
    /** In AWS: the preview Lambda the deploy worker invokes after a deploy ends DEPLOYED (CAIRN_PREVIEW_FUNCTION, a name or ARN). */
    functionName?: string;
    /** Past this one shot is abandoned and the deploy has no preview image. */
    timeoutMs: number;
  };
  /** The CAR import endpoint (functions/core/hosting/imports.ts). */
  imports: {
    /**
     * The largest CAR one POST /imports/car may carry (CAIRN_MAX_IMPORT_BYTES):
     * 1 GiB locally, 4 MiB through Lambda (whose events carry at most 6 MB,
     * base64-encoded); a larger import is sent as several CARs.
     */
    maxBytes: number;
    /** How long an import pin keeps its DAG from collection, in seconds (CAIRN_IMPORT_PIN_TTL, a day by default). */
    pinSeconds: number;
  };
  /** Deploy notifications (functions/core/hosting/notifications.ts). */
  notifications: {
    /** The first retry's delay in seconds, doubled for each one after (at most 900 s); CAIRN_NOTIFICATION_RETRY_BASE, 10 by default. */
    retryBaseSeconds: number;
    /** How long a failing delivery is tried again before it is given up (one hour). */
    retryForSeconds: number;
  };
  /**
   * Where commit statuses are posted for a site's repository, by the host of
   * its URL (`host[:port]`, lower case): github.com and gitlab.com, and what
   * CAIRN_GIT_HOST_APIS adds or replaces (functions/core/hosting/commit-status.ts).
   */
  gitHostApis: Record<string, GitHostApi>;
}

/** One build's limits (config.build.limits): each set by its variable, sizes as bytes or with KiB/MiB/GiB. */
export interface BuildLimits {
  /** Memory of the build's processes together, the RAM-backed /tmp included (CAIRN_BUILD_MEMORY, 3 GiB). */
  memoryBytes: number;
  /** Processes and threads at once (CAIRN_BUILD_PROCESSES, 512). */
  processes: number;
  /** CPU time of all the build's processes (CAIRN_BUILD_CPU_SECONDS, 1800: two cores for the 15-minute time limit). */
  cpuSeconds: number;
  /** Bytes the build may write to its workspace and /tmp together (CAIRN_BUILD_DISK, 10 GiB). */
  diskBytes: number;
  /** The size of the build's /tmp, a tmpfs (CAIRN_BUILD_TMP, 1 GiB; counted in memory and disk too). */
  tmpBytes: number;
  /** Bytes the build may print (CAIRN_BUILD_OUTPUT, 64 MiB; the log keeps its first and last 2 MiB). */
  outputBytes: number;
}

/** A git host's API: which one it speaks and its base URL (no trailing slash). */
export interface GitHostApi {
  kind: 'github' | 'gitlab';
  baseUrl: string;
}

/** The hosts whose APIs are known without CAIRN_GIT_HOST_APIS. */
export const DEFAULT_GIT_HOST_APIS: Readonly<Record<string, GitHostApi>> = {
  'github.com': { kind: 'github', baseUrl: 'https://api.github.com' },
  'gitlab.com': { kind: 'gitlab', baseUrl: 'https://gitlab.com/api/v4' },
};

type Env = Record<string, string | undefined>;

function str(env: Env, name: string, fallback: string): string {
  const v = env[name];
  return v === undefined || v === '' ? fallback : v;
}

function opt(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

function port(env: Env, name: string, fallback: number): number {
  const raw = opt(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) > 65535) {
    throw new ConfigError(name, `must be a port number from 0 to 65535, got "${raw}"`);
  }
  return Number(raw);
}

function url(env: Env, name: string, fallback: string): string {
  const raw = str(env, name, fallback);
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be an absolute http(s) URL, got "${raw}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(name, `must be an http(s) URL, got "${raw}"`);
  }
  return raw.replace(/\/+$/, '');
}

function domain(env: Env, name: string, fallback: string): string {
  const raw = str(env, name, fallback).toLowerCase();
  if (!/^[a-z0-9.-]+(:\d{1,5})?$/.test(raw) || raw.startsWith('.') || raw.includes('..')) {
    throw new ConfigError(name, `must be a domain name, optionally with a port (like "s3.example.com"), got "${raw}"`);
  }
  return raw;
}

function secretKey(env: Env): Buffer | undefined {
  const raw = opt(env, 'CAIRN_SECRET_KEY');
  if (raw === undefined) return undefined;
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (key.length !== 32) {
    throw new ConfigError('CAIRN_SECRET_KEY', 'must be 32 bytes, as 64 hex digits or base64');
  }
  return key;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = opt(env, name);
  if (raw === undefined) return fallback;
  if (/^(true|1|yes|on)$/i.test(raw)) return true;
  if (/^(false|0|no|off)$/i.test(raw)) return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

export function loadConfig(env: Env = process.env): Config {
  const runtime: Config['runtime'] = env.AWS_LAMBDA_FUNCTION_NAME ? 'aws' : 'local';
  const host = str(env, 'CAIRN_HOST', '127.0.0.1');
  const ports = {
    api: port(env, 'CAIRN_API_PORT', 4000),
    s3: port(env, 'CAIRN_S3_PORT', 4001),
    gateway: port(env, 'CAIRN_GATEWAY_PORT', 4002),
  };
  const local = (p: number) => `http://${host.includes(':') ? `[${host}]` : host}:${p}`;
  const logLevel = str(env, 'CAIRN_LOG_LEVEL', 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('CAIRN_LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const prefix = str(env, 'CAIRN_TABLE_PREFIX', 'cairn-');
  const maxRequestBody = bytes(env, 'CAIRN_MAX_REQUEST_BODY', runtime === 'aws' ? LAMBDA_MAX_REQUEST_BODY : S3_MAX_PUT);
  return {
    runtime,
    dataDir: str(env, 'CAIRN_DATA_DIR', './data'),
    host,
    ports,
    urls: {
      baseUrl: url(env, 'CAIRN_BASE_URL', local(ports.api)),
      storageEndpoint: url(env, 'CAIRN_STORAGE_ENDPOINT', local(ports.s3)),
      bucketEndpointDomain: domain(env, 'CAIRN_BUCKET_ENDPOINT_DOMAIN', `s3.localhost:${ports.s3}`),
      storagePublicDomain: domain(env, 'CAIRN_STORAGE_PUBLIC_DOMAIN', `storage.localhost:${ports.gateway}`),
      gatewayUrl: url(env, 'CAIRN_GATEWAY_URL', local(ports.gateway)),
      publicGatewayUrl: url(env, 'CAIRN_PUBLIC_GATEWAY_URL', local(ports.gateway)),
    },
    region: str(env, 'AWS_REGION', 'us-east-1'),
    dynamodb: {
      endpoint: opt(env, 'DYNAMODB_ENDPOINT'),
      recentReadsMs: positive(env, 'CAIRN_RECENT_READS_MS', RECENT_READS_MS, 'milliseconds'),
    },
    tables: {
      accounts: str(env, 'CAIRN_ACCOUNTS_TABLE', `${prefix}accounts`),
      sites: str(env, 'CAIRN_SITES_TABLE', `${prefix}sites`),
      deploys: str(env, 'CAIRN_DEPLOYS_TABLE', `${prefix}deploys`),
      objects: str(env, 'CAIRN_OBJECTS_TABLE', `${prefix}objects`),
    },
    blockBucket: opt(env, 'CAIRN_BLOCK_BUCKET'),
    partStagingBucket: opt(env, 'CAIRN_PART_STAGING_BUCKET'),
    edgeKey: opt(env, 'CAIRN_EDGE_KEY'),
    secretKey: secretKey(env),
    kmsKeyId: opt(env, 'CAIRN_KMS_KEY_ID'),
    bootstrap: {
      accessKeyId: opt(env, 'CAIRN_BOOTSTRAP_ACCESS_KEY'),
      secretAccessKey: opt(env, 'CAIRN_BOOTSTRAP_SECRET_KEY'),
      apiToken: opt(env, 'CAIRN_BOOTSTRAP_API_TOKEN'),
      file: opt(env, 'CAIRN_BOOTSTRAP_FILE'),
    },
    logLevel,
    storage: {
      etag: etagMode(env),
      gcIntervalSeconds: seconds(env, 'CAIRN_GC_INTERVAL', 60),
      lifecycleDaySeconds: positive(env, 'CAIRN_LIFECYCLE_DAY_SECONDS', 86_400, 'seconds'),
      maxRequestBody,
      minPartSize: sizeOrZero(env, 'CAIRN_S3_MIN_PART_SIZE', Math.min(S3_MIN_PART_SIZE, maxRequestBody)),
    },
    graphql: {
      introspection: bool(env, 'CAIRN_GRAPHQL_INTROSPECTION', runtime === 'local'),
      playground: bool(env, 'CAIRN_GRAPHQL_PLAYGROUND', true),
      playgroundDir: opt(env, 'CAIRN_GRAPHQL_PLAYGROUND_DIR'),
    },
    sites: {
      domain: domain(env, 'CAIRN_SITES_DOMAIN', `sites.localhost:${ports.gateway}`),
      cacheBytes: bytes(env, 'CAIRN_SITE_CACHE_BYTES', 256 * 1024 ** 2),
      gatewayThreads: gatewayThreads(env),
    },
    domains: domainSettings(env),
    build: {
      sandbox: buildSandbox(env),
      timeoutMs: positive(env, 'CAIRN_BUILD_TIMEOUT', 900, 'seconds') * 1000,
      concurrency: positive(env, 'CAIRN_BUILD_CONCURRENCY', 1, 'builds'),
      network: buildNetwork(env, buildSandbox(env)),
      codeBuildProject: opt(env, 'CAIRN_BUILD_PROJECT'),
      secretNamesKeyArn: secretArn(env, 'CAIRN_BUILD_SECRET_NAMES_KEY_ARN'),
      limits: {
        memoryBytes: size(env, 'CAIRN_BUILD_MEMORY', 3 * 1024 ** 3),
        processes: positive(env, 'CAIRN_BUILD_PROCESSES', 512, 'processes'),
        cpuSeconds: positive(env, 'CAIRN_BUILD_CPU_SECONDS', 1800, 'seconds'),
        diskBytes: size(env, 'CAIRN_BUILD_DISK', 10 * 1024 ** 3),
        tmpBytes: size(env, 'CAIRN_BUILD_TMP', 1024 ** 3),
        outputBytes: size(env, 'CAIRN_BUILD_OUTPUT', 64 * 1024 ** 2),
      },
    },
    signup: signupPolicy(env),
    teamsPerAccount: positive(env, 'CAIRN_TEAMS_PER_ACCOUNT', 100, 'teams'),
    mail: mailSettings(env),
    oidc: oidcSettings(env),
    outbound: outboundRules(env),
    deployQueueUrl: opt(env, 'CAIRN_DEPLOY_QUEUE_URL'),
    cdn: {
      distributionId: distributionId(env),
      siteHostsKvsArn: kvsArn(env),
    },
    preview: {
      enabled: bool(env, 'CAIRN_PREVIEW', runtime === 'local'),
      chromiumPath: absolutePath(env, 'CAIRN_CHROMIUM_PATH', '/usr/bin/chromium'),
      bundledChromium: runtime === 'aws' ? opt(env, 'CAIRN_CHROMIUM_PATH') === undefined : undefined,
      functionName: opt(env, 'CAIRN_PREVIEW_FUNCTION'),
      timeoutMs: positive(env, 'CAIRN_PREVIEW_TIMEOUT', 30, 'seconds') * 1000,
    },
    imports: {
      maxBytes: bytes(env, 'CAIRN_MAX_IMPORT_BYTES', runtime === 'aws' ? LAMBDA_MAX_REQUEST_BODY : DEFAULT_MAX_IMPORT),
      pinSeconds: positive(env, 'CAIRN_IMPORT_PIN_TTL', 24 * 3600, 'seconds'),
    },
    notifications: {
      retryBaseSeconds: positive(env, 'CAIRN_NOTIFICATION_RETRY_BASE', 10, 'seconds'),
      retryForSeconds: 3600,
    },
    gitHostApis: gitHostApis(env),
  };
}

/**
 * CAIRN_GIT_HOST_APIS: comma-separated `host[:port]=github|gitlab@<API base URL>`,
 * for GitHub Enterprise, self-managed GitLab (or a host's API elsewhere).
 * Added to github.com and gitlab.com, or replacing them when named. The
 * base URL must be http(s) without credentials, a query or a fragment;
 * whether its address may be private is decided at each request, by the
 * outbound rule (config.outbound, functions/core/net/outbound.ts).
 */
function gitHostApis(env: Env): Record<string, GitHostApi> {
  const name = 'CAIRN_GIT_HOST_APIS';
  const apis: Record<string, GitHostApi> = { ...DEFAULT_GIT_HOST_APIS };
  const named = new Set<string>();
  for (const entry of (opt(env, name) ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')) {
    const m = /^([^=@\s]+)=(github|gitlab)@(\S+)$/i.exec(entry);
    if (!m)
      throw new ConfigError(
        name,
        `"${entry}" must be host[:port]=github|gitlab@<API base URL>, like "git.example.com=gitlab@https://git.example.com/api/v4"`,
      );
    const host = m[1]!.toLowerCase();
    if (!/^[a-z0-9.-]+(:\d{1,5})?$/.test(host) || host.startsWith('.') || host.includes('..'))
      throw new ConfigError(name, `"${m[1]}" is not a host name, optionally with a port (like "git.example.com:8443")`);
    if (named.has(host)) throw new ConfigError(name, `${host} is named twice`);
    named.add(host);
    let base: URL;
    try {
      base = new URL(m[3]!);
    } catch {
      throw new ConfigError(name, `the API base URL of ${host} is not an absolute URL, got "${m[3]}"`);
    }
    if (base.protocol !== 'https:' && base.protocol !== 'http:')
      throw new ConfigError(name, `the API base URL of ${host} must be an http(s) URL, got "${m[3]}"`);
    // The token goes in a header; a URL's own credentials would be sent (and logged) besides.
    if (base.username !== '' || base.password !== '' || base.search !== '' || base.hash !== '') {
      throw new ConfigError(name, `the API base URL of ${host} must carry no credentials, query or fragment`);
    }
    apis[host] = { kind: m[2]!.toLowerCase() as GitHostApi['kind'], baseUrl: `${base.origin}${base.pathname.replace(/\/+$/, '')}` };
  }
  return apis;
}

/** CAIRN_DNS_RESOLVER, CAIRN_DOMAIN_ADDRESSES, CAIRN_DOMAINS_PER_SITE and _PER_TEAM, CAIRN_HTTPS_PORT and the ACME settings. */
function domainSettings(env: Env): Config['domains'] {
  const rawResolver = opt(env, 'CAIRN_DNS_RESOLVER');
  const resolver = rawResolver === undefined ? undefined : serverAddress('CAIRN_DNS_RESOLVER', rawResolver);
  const addresses = (opt(env, 'CAIRN_DOMAIN_ADDRESSES') ?? '')
    .split(',')
    .map((a) => a.trim().toLowerCase())
    .filter((a) => a !== '');
  for (const a of addresses)
    if (isIP(a) === 0) throw new ConfigError('CAIRN_DOMAIN_ADDRESSES', `must be IP addresses separated by commas, got "${a}"`);
  const directoryUrl = opt(env, 'CAIRN_ACME_DIRECTORY');
  let acme: Config['domains']['acme'];
  if (directoryUrl !== undefined) {
    const checked = url(env, 'CAIRN_ACME_DIRECTORY', directoryUrl);
    const email = opt(env, 'CAIRN_ACME_EMAIL');
    if (email !== undefined && !/^[^\s@:,<>]+@[^\s@:,<>]+$/.test(email))
      throw new ConfigError('CAIRN_ACME_EMAIL', `must be an e-mail address, got "${email}"`);
    acme = {
      directoryUrl: checked,
      caFile: opt(env, 'CAIRN_ACME_CA_FILE'),
      email,
      renewBeforeDays: positive(env, 'CAIRN_ACME_RENEW_BEFORE_DAYS', 30, 'days'),
      checkEverySeconds: positive(env, 'CAIRN_ACME_CHECK_INTERVAL', 3600, 'seconds'),
    };
  }
  const https = opt(env, 'CAIRN_HTTPS_PORT');
  const target = opt(env, 'CAIRN_DOMAIN_TARGET')?.toLowerCase().replace(/\.$/, '');
  if (target !== undefined && !/^(?=.{1,253}$)[a-z0-9-]+(?:\.[a-z0-9-]+)+$/.test(target))
    throw new ConfigError('CAIRN_DOMAIN_TARGET', `must be a host name (like d111111abcdef8.cloudfront.net), got "${target}"`);
  const tenantDistribution = opt(env, 'CAIRN_DOMAIN_DISTRIBUTION_ID');
  const connectionGroup = opt(env, 'CAIRN_DOMAIN_CONNECTION_GROUP_ID');
  if (!tenantDistribution !== !connectionGroup)
    throw new ConfigError('CAIRN_DOMAIN_DISTRIBUTION_ID', 'goes with CAIRN_DOMAIN_CONNECTION_GROUP_ID: set both or neither');
  return {
    resolver,
    addresses,
    maxPerSite: positive(env, 'CAIRN_DOMAINS_PER_SITE', 10, 'domains'),
    maxPerTeam: positive(env, 'CAIRN_DOMAINS_PER_TEAM', 100, 'domains'),
    target,
    tenants: tenantDistribution && connectionGroup ? { distributionId: tenantDistribution, connectionGroupId: connectionGroup } : undefined,
    httpsPort: https === undefined ? undefined : port(env, 'CAIRN_HTTPS_PORT', 443),
    acme,
    dnslink: dnsLinkSettings(env),
    gatewayDnsLink: bool(env, 'CAIRN_GATEWAY_DNSLINK', false),
  };
}

const DNS_NAME = /^(?=.{1,253}$)([a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?)(\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?)*$/;

/** `host:port` with an IP address (`[v6]:port` for IPv6), as CAIRN_DNS_RESOLVER and CAIRN_DNSLINK_SERVER take it. */
function serverAddress(name: string, raw: string): { host: string; port: number } {
  const m = /^(?:\[([0-9a-f:.]+)\]|([0-9.]+)):(\d{1,5})$/i.exec(raw);
  const host = m?.[1] ?? m?.[2];
  const portNumber = Number(m?.[3]);
  if (!host || isIP(host) === 0 || !(portNumber >= 1 && portNumber <= 65535))
    throw new ConfigError(name, `must be an IP address and port (like "127.0.0.1:53" or "[::1]:53"), got "${raw}"`);
  return { host, port: portNumber };
}

/** CAIRN_DNSLINK_ZONES, CAIRN_DNSLINK_SERVER and CAIRN_DNSLINK_TSIG. */
function dnsLinkSettings(env: Env): DnsLinkSettings {
  const zones: string[] = [];
  const hostedZoneIds: Record<string, string> = {};
  for (const entry of (opt(env, 'CAIRN_DNSLINK_ZONES') ?? '')
    .split(',')
    .map((z) => z.trim())
    .filter((z) => z !== '')) {
    const [rawName, id] = entry.split('=', 2) as [string, string | undefined];
    const zone = rawName.toLowerCase().replace(/\.$/, '');
    if (!DNS_NAME.test(zone) || !zone.includes('.'))
      throw new ConfigError(
        'CAIRN_DNSLINK_ZONES',
        `must be zone names separated by commas (like "example.com" or "example.com=Z0123456789ABC"), got "${entry.slice(0, 80)}"`,
      );
    if (id !== undefined && !/^[A-Z0-9]{1,32}$/.test(id))
      throw new ConfigError('CAIRN_DNSLINK_ZONES', `"${id.slice(0, 40)}" is not a Route 53 hosted zone id (like Z0123456789ABC)`);
    zones.push(zone);
    if (id) hostedZoneIds[zone] = id;
  }
  const rawServer = opt(env, 'CAIRN_DNSLINK_SERVER');
  const server = rawServer === undefined ? undefined : serverAddress('CAIRN_DNSLINK_SERVER', rawServer);
  const rawTsig = opt(env, 'CAIRN_DNSLINK_TSIG');
  let tsig: TsigKey | undefined;
  if (rawTsig !== undefined) {
    // The value holds the secret: no message repeats it.
    const m = /^([A-Za-z0-9._-]{1,253}):(hmac-sha256|hmac-sha384|hmac-sha512):([A-Za-z0-9+/]+={0,2})$/.exec(rawTsig);
    const name = m?.[1]?.toLowerCase().replace(/\.$/, '');
    const secret = m ? Buffer.from(m[3]!, 'base64') : Buffer.alloc(0);
    if (!m || !name || !DNS_NAME.test(name))
      throw new ConfigError(
        'CAIRN_DNSLINK_TSIG',
        'must be name:algorithm:base64 secret, the algorithm hmac-sha256, hmac-sha384 or hmac-sha512',
      );
    if (secret.length < 16) throw new ConfigError('CAIRN_DNSLINK_TSIG', 'the secret must be at least 16 bytes (RFC 8945 section 6)');
    tsig = new TsigKey(name, m[2] as TsigKey['algorithm'], secret);
  }
  if (server && zones.length === 0)
    throw new ConfigError('CAIRN_DNSLINK_SERVER', 'needs CAIRN_DNSLINK_ZONES: the zones it takes updates for');
  if (server && !tsig) throw new ConfigError('CAIRN_DNSLINK_SERVER', 'needs CAIRN_DNSLINK_TSIG: updates are signed');
  return { zones, hostedZoneIds, server, tsig };
}

function absolutePath(env: Env, name: string, fallback: string): string {
  const raw = str(env, name, fallback);
  if (!raw.startsWith('/')) throw new ConfigError(name, `must be an absolute path, got "${raw}"`);
  return raw;
}

function distributionId(env: Env): string | undefined {
  const raw = opt(env, 'CAIRN_CDN_DISTRIBUTION_ID');
  if (raw !== undefined && !/^[A-Z0-9]{1,64}$/.test(raw))
    throw new ConfigError('CAIRN_CDN_DISTRIBUTION_ID', `must be a CloudFront distribution id (like E2QWRUHEXAMPLE), got "${raw}"`);
  return raw;
}

function kvsArn(env: Env): string | undefined {
  const raw = opt(env, 'CAIRN_SITE_HOSTS_KVS_ARN');
  if (raw !== undefined && !/^arn:aws[a-z-]*:cloudfront::\d{12}:key-value-store\/[0-9a-zA-Z-]+$/.test(raw)) {
    throw new ConfigError(
      'CAIRN_SITE_HOSTS_KVS_ARN',
      `must be a CloudFront KeyValueStore ARN (arn:aws:cloudfront::<account>:key-value-store/<id>), got "${raw}"`,
    );
  }
  return raw;
}

function secretArn(env: Env, name: string): string | undefined {
  const raw = opt(env, name);
  if (raw !== undefined && !/^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+$/.test(raw)) {
    throw new ConfigError(
      name,
      `must be a Secrets Manager secret ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>), got "${raw}"`,
    );
  }
  return raw;
}

function buildSandbox(env: Env): 'bwrap' | 'none' {
  const raw = str(env, 'CAIRN_BUILD_SANDBOX', 'bwrap').toLowerCase();
  if (raw !== 'bwrap' && raw !== 'none') {
    throw new ConfigError('CAIRN_BUILD_SANDBOX', `must be "bwrap" or "none", got "${raw}"`);
  }
  return raw;
}

function buildNetwork(env: Env, sandbox: 'bwrap' | 'none'): 'none' | 'outside' | 'host' {
  const raw = str(env, 'CAIRN_BUILD_NETWORK', 'none').toLowerCase();
  if (raw !== 'none' && raw !== 'outside' && raw !== 'host')
    throw new ConfigError('CAIRN_BUILD_NETWORK', `must be "none", "outside" or "host", got "${raw}"`);
  // A plain child process has this machine's whole network: `outside` would be a promise nothing keeps.
  if (raw === 'outside' && sandbox === 'none')
    throw new ConfigError('CAIRN_BUILD_NETWORK', '"outside" needs the bubblewrap sandbox, and CAIRN_BUILD_SANDBOX is "none"');
  return raw;
}

/**
 * config.outbound from an environment (exported for a caller handed no
 * config: the clone step, functions/deploy-worker/steps/clone/).
 * CAIRN_NOTIFICATION_PRIVATE_ADDRESSES, the notifications' own rule before
 * every outbound request had one, is still read where
 * CAIRN_OUTBOUND_PRIVATE is unset (deprecated): true allows, false
 * refuses, now for every kind of request.
 */
export function outboundRules(env: Env = process.env): Config['outbound'] {
  const legacy = opt(env, 'CAIRN_NOTIFICATION_PRIVATE_ADDRESSES');
  if (opt(env, 'CAIRN_OUTBOUND_PRIVATE') === undefined && legacy !== undefined) {
    return { private: bool(env, 'CAIRN_NOTIFICATION_PRIVATE_ADDRESSES', false) ? 'allow' : 'refuse' };
  }
  const raw = str(env, 'CAIRN_OUTBOUND_PRIVATE', 'refuse').toLowerCase();
  if (raw !== 'allow' && raw !== 'refuse') throw new ConfigError('CAIRN_OUTBOUND_PRIVATE', `must be "allow" or "refuse", got "${raw}"`);
  return { private: raw };
}

/** CAIRN_SMTP_URL and CAIRN_MAIL_FROM; the password never appears in an error. */
function mailSettings(env: Env): Config['mail'] {
  const raw = opt(env, 'CAIRN_SMTP_URL');
  const from = opt(env, 'CAIRN_MAIL_FROM');
  if (from !== undefined && (/[\u0000-\u001f\u007f]/.test(from) || !/^[^@\s<>]+@[^@\s<>]+$|<[^@\s<>]+@[^@\s<>]+>$/.test(from.trim())))
    throw new ConfigError('CAIRN_MAIL_FROM', `must be an address, or a name and <address>, on one line, got "${from}"`);
  if (raw === undefined) return { from: from?.trim() };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('CAIRN_SMTP_URL', 'must be a URL like smtp://user:password@host:587 or smtps://user:password@host:465');
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:')
    throw new ConfigError('CAIRN_SMTP_URL', `must start with smtp:// or smtps://, got "${url.protocol}//"`);
  if (!url.hostname) throw new ConfigError('CAIRN_SMTP_URL', 'names no host');
  if (from === undefined) throw new ConfigError('CAIRN_MAIL_FROM', 'must be set when CAIRN_SMTP_URL is (the sender of every message)');
  const secure = url.protocol === 'smtps:';
  const decode = (part: string) => (part === '' ? undefined : decodeURIComponent(part));
  return {
    from: from.trim(),
    smtp: {
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port ? Number(url.port) : secure ? 465 : 587,
      secure,
      user: decode(url.username),
      password: decode(url.password),
    },
  };
}

/** CAIRN_OIDC_*: all three of issuer, client id and secret, or none; the secret never appears in an error. */
function oidcSettings(env: Env): Config['oidc'] {
  const issuer = opt(env, 'CAIRN_OIDC_ISSUER');
  const clientId = opt(env, 'CAIRN_OIDC_CLIENT_ID');
  const clientSecret = opt(env, 'CAIRN_OIDC_CLIENT_SECRET');
  const name = opt(env, 'CAIRN_OIDC_NAME');
  if (issuer === undefined && clientId === undefined && clientSecret === undefined) return undefined;
  for (const [variable, value] of [
    ['CAIRN_OIDC_ISSUER', issuer],
    ['CAIRN_OIDC_CLIENT_ID', clientId],
    ['CAIRN_OIDC_CLIENT_SECRET', clientSecret],
  ] as const)
    if (value === undefined)
      throw new ConfigError(variable, 'must be set with the other CAIRN_OIDC_ settings (issuer, client id and secret)');
  let url: URL;
  try {
    url = new URL(issuer!);
  } catch {
    throw new ConfigError('CAIRN_OIDC_ISSUER', `must be the provider's issuer URL, like https://accounts.example.org, got "${issuer}"`);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const loopback = host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback))
    throw new ConfigError('CAIRN_OIDC_ISSUER', `must be https (http only on a loopback address), got "${issuer}"`);
  if (name !== undefined && (/[\u0000-\u001f\u007f]/.test(name) || name.length > 60))
    throw new ConfigError('CAIRN_OIDC_NAME', 'must be one line of at most 60 characters');
  return { issuer: issuer!, clientId: clientId!, clientSecret: clientSecret!, name: name ?? url.host };
}

function signupPolicy(env: Env): Config['signup'] {
  const raw = str(env, 'CAIRN_SIGNUP', 'invite').toLowerCase();
  if (raw !== 'open' && raw !== 'invite' && raw !== 'closed')
    throw new ConfigError('CAIRN_SIGNUP', `must be "open", "invite" or "closed", got "${raw}"`);
  return raw;
}

function etagMode(env: Env): 'md5' | 'cid' {
  const raw = str(env, 'CAIRN_ETAG', 'md5').toLowerCase();
  if (raw !== 'md5' && raw !== 'cid') throw new ConfigError('CAIRN_ETAG', `must be "md5" or "cid", got "${raw}"`);
  return raw;
}

/** S3's largest single PUT. */
export const S3_MAX_PUT = 5 * 1024 ** 3;
/** S3's least size of a multipart part other than the last. */
export const S3_MIN_PART_SIZE = 5 * 1024 ** 2;
/** The largest CAR one import request carries on one machine. */
export const DEFAULT_MAX_IMPORT = 1024 ** 3;
/** The largest body the Lambda object route takes: 6 MB events, base64-encoded, less headroom. */
export const LAMBDA_MAX_REQUEST_BODY = 4 * 1024 ** 2;

function bytes(env: Env, name: string, fallback: number): number {
  const raw = opt(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new ConfigError(name, `must be a positive number of bytes, got "${raw}"`);
  return Number(raw);
}

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, kib: 1024, m: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gib: 1024 ** 3 };

/** A size: whole bytes, or with K/KiB, M/MiB, G/GiB (powers of 1024). */
function size(env: Env, name: string, fallback: number): number {
  const raw = opt(env, name);
  if (raw === undefined) return fallback;
  const m = /^(\d+)\s*([a-z]*)$/i.exec(raw);
  const unit = m ? SIZE_UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined || Number(m[1]) < 1)
    throw new ConfigError(name, `must be a size such as 3GiB, 512MiB or a number of bytes, got "${raw}"`);
  return Number(m[1]) * unit;
}

/** A size as size() reads it, or 0. */
function sizeOrZero(env: Env, name: string, fallback: number): number {
  const raw = opt(env, name);
  if (raw !== undefined && /^0+$/.test(raw.trim())) return 0;
  return size(env, name, fallback);
}

function seconds(env: Env, name: string, fallback: number): number {
  const raw = opt(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number of seconds, got "${raw}"`);
  return Number(raw);
}

/** More threads than this gain nothing on the gateway's port (each is another copy of the hit path's memory). */
export const MAX_GATEWAY_THREADS = 8;

/**
 * The gateway's threads where CAIRN_GATEWAY_THREADS is unset: one per core (os.availableParallelism(),
 * which counts the cores this process may run on), at most MAX_GATEWAY_THREADS. On a quiet two-core
 * machine two threads answered 1.33-1.68x the site hits of one (bench/RESULTS.md, `bench:edge`).
 */
export function defaultGatewayThreads(cores = availableParallelism()): number {
  return Math.max(1, Math.min(cores, MAX_GATEWAY_THREADS));
}

/** CAIRN_GATEWAY_THREADS: defaultGatewayThreads() when unset, at most MAX_GATEWAY_THREADS; 1 is the main thread alone. */
function gatewayThreads(env: Env): number {
  const n = positive(env, 'CAIRN_GATEWAY_THREADS', defaultGatewayThreads(), 'threads');
  if (n > MAX_GATEWAY_THREADS) throw new ConfigError('CAIRN_GATEWAY_THREADS', `must be at most ${MAX_GATEWAY_THREADS}, got "${n}"`);
  return n;
}

function positive(env: Env, name: string, fallback: number, unit: string): number {
  const raw = opt(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new ConfigError(name, `must be a whole number of ${unit}, at least 1, got "${raw}"`);
  return Number(raw);
}
