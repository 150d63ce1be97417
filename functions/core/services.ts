/**
 * The services every entry point builds once per process (a Lambda
 * container, the local server, a test): the stores over one database, and
 * the adapters the entry point chose for what differs between one machine
 * and AWS (functions/local/adapters.ts, functions/aws/adapters.ts). Core
 * picks none of them itself, and nothing is swapped on the result: an
 * adapter that needs the services (the local queue and outbox) is built
 * first and started with them afterwards.
 */
import type { Config } from './config.js';
import { createLogger, type Logger } from './logger.js';
import { createDatabase, type Database, type InProcessTransport } from './data/dynamo.js';
import { AccountStore } from './data/accounts.js';
import { TeamStore } from './data/teams.js';
import { ApiKeyStore } from './data/api-keys.js';
import { StorageKeyStore } from './data/storage-keys.js';
import { SigningKeyStore } from './data/signing-keys.js';
import { PasskeyStore } from './data/passkeys.js';
import { PersonStore } from './data/people.js';
import { RecoveryCodeStore } from './data/recovery-codes.js';
import { SessionStore } from './data/sessions.js';
import { SignInAttemptStore } from './data/sign-in-attempts.js';
import { InvitationStore } from './data/invitations.js';
import { AccountLinkStore } from './data/account-links.js';
import { RateLimitStore } from './data/rate-limits.js';
import { BucketStore } from './data/buckets.js';
import { VersionedObjectStore } from './data/object-versions-store.js';
import { UploadStore } from './data/uploads.js';
import { SiteStore } from './data/sites.js';
import { DomainStore } from './data/domains.js';
import { DeployStore } from './data/deploys.js';
import { SiteSecretStore } from './data/site-secrets.js';
import { IpnsNameStore } from './data/ipns-records.js';
import { HookDeliveryStore } from './data/hook-deliveries.js';
import { NotificationUrlStore } from './data/notification-urls.js';
import { NotificationDeliveryStore } from './data/notification-deliveries.js';
import type { NotificationOutbox } from './ports/notifications.js';
import type { SecretSealer } from './auth/secrets.js';
import type { IpfsNode } from './ipfs/node.js';
import type { UploadGate } from './ports/upload-gate.js';
import type { DigestName } from './hashing/digests.js';
import type { LogStore } from './ports/log-store.js';
import type { DeployQueue } from './ports/deploy-queue.js';
import type { CdnPurger, SiteCache, SiteHostMap } from './ports/site-cache.js';
import type { LeafHasher } from './hashing/leaf-hasher.js';
import type { Mailer } from './ports/mail.js';
import type { StagedPartStore } from './ports/staged-parts.js';
import { noDomainCertificates, type DomainCertificates } from './ports/domain-certificates.js';
import { noDnsLinkZone, type DnsLinkZone } from './ports/dnslink-zone.js';

export interface Services {
  config: Config;
  logger: Logger;
  db: Database;
  accounts: AccountStore;
  /** Teams and their members. */
  teams: TeamStore;
  /** Teams' keys for the GraphQL API. */
  apiKeys: ApiKeyStore;
  /** Accounts' key pairs for the S3 API. */
  storageKeys: StorageKeyStore;
  /** Keys the service signs its own tokens with. */
  signingKeys: SigningKeyStore;
  /** People's e-mail and password identities (one per account at most). */
  people: PersonStore;
  /** People's passkeys, the accounts that ask for one after the password, and the challenges handed out for them. */
  passkeys: PasskeyStore;
  /** One-time codes that stand in for a passkey after the password (kept as digests). */
  recoveryCodes: RecoveryCodeStore;
  /** People's sessions in the web app. */
  sessions: SessionStore;
  /** Failed sign-ins, per e-mail and per client address. */
  signInAttempts: SignInAttemptStore;
  /** Invitations to join teams, by e-mail. */
  invitations: InvitationStore;
  /** One-time links that act on an account: password resets, the first owner's. */
  accountLinks: AccountLinkStore;
  /** Counts of actions in a window (invitations sent, reset links asked for). */
  rateLimits: RateLimitStore;
  buckets: BucketStore;
  objects: VersionedObjectStore;
  /** Multipart uploads and their parts (in the objects table). */
  uploads: UploadStore;
  /** Multipart parts staged around the S3 function (in AWS, parts over what an invocation carries); none on one machine. */
  stagedParts?: StagedPartStore;
  sites: SiteStore;
  /** Sites' own domains, the claims that say which site serves a name, their certificates (keys sealed). */
  domains: DomainStore;
  /** Gets verified domains their certificates (ACME on one machine) and gives the gateway what it serves them with. */
  domainCertificates: DomainCertificates;
  /** The DNS zones sites' DNSLink records are written in (RFC 2136 locally, Route 53 in AWS); none when no zone is configured. */
  dnsLink: DnsLinkZone;
  deploys: DeployStore;
  /** Sites' webhook secrets, repository tokens (both sealed) and build hooks. */
  siteSecrets: SiteSecretStore;
  /** Sites' IPNS keys (sealed) and the latest record of every name the gateway answers for. */
  ipnsNames: IpnsNameStore;
  /** Git host webhook deliveries already taken (so a redelivery acts once). */
  hookDeliveries: HookDeliveryStore;
  /** Sites' deploy notification URLs (their signing secrets sealed). */
  notificationUrls: NotificationUrlStore;
  /** Deploy notifications recorded, pending or done (the outbox's truth). */
  notificationDeliveries: NotificationDeliveryStore;
  /** Gets recorded notifications sent: the local server's loop, or the deploy queue in AWS (recording only where neither runs). */
  notificationOutbox: NotificationOutbox;
  /** The IPFS node, started on first use (the GraphQL function never needs one). */
  ipfs(): Promise<IpfsNode>;
  /** Uploads hold it shared from import to commit; garbage collection holds it alone. */
  gate: UploadGate;
  /** Hashes an upload's leaves and computes `digests` over its bytes: on the hash thread when it is large and the server local. */
  leafHasher(digests: readonly DigestName[], sizeHint?: number): LeafHasher;
  /** Deploy logs (outside the deploys table: a log outgrows an item). */
  deployLogs: LogStore;
  /** Gets queued deploys run: the local server's worker, or SQS in AWS (polling only where neither runs). */
  deployQueue: DeployQueue;
  /**
   * The response cache the gateway answers site addresses from: the local
   * server's; none in a Lambda, where a CDN in
   * front caches and this process could never see another one's purge.
   */
  siteCache?: SiteCache;
  /** What publishing and purgeCache empty of a site (the local cache, or a CDN). */
  cdn: CdnPurger;
  /** The CDN's map of site hosts to site ids, kept current where sites change (a CloudFront KeyValueStore in AWS; none locally). */
  siteHosts: SiteHostMap;
  /** Sends invitations and password reset links: over SMTP, or nowhere (and says so). */
  mailer: Mailer;
  close(): Promise<void>;
}

/*
 * The narrow views. A function declares the members it reads, not the whole
 * set: its signature then says what it touches, a test or a tool builds only
 * that, and a door cannot start leaning on a store it was never meant to
 * use without the type saying so. A full Services satisfies every one of
 * them, so each entry point still composes once and passes what it built.
 * The views shared across doors are here; the others are named beside the
 * code that reads them: NotifyServices and NotificationSendServices
 * (core/hosting/notifications.ts), DeployRequestServices (deploys.ts),
 * GitHookServices (git-hooks.ts), PipelineServices, AnnounceServices,
 * WorkerServices and TickServices (functions/deploy-worker), the preview's
 * (functions/preview), GraphqlServices and the side routes'
 * (functions/graphql).
 */

/** Writes an object's bytes: hashed and imported under the shared gate, its record committed (functions/s3/store.ts). */
export type ObjectWriteServices = Pick<Services, 'gate' | 'ipfs' | 'leafHasher' | 'logger' | 'objects'>;

/** Imports a CAR under the shared gate, pinning its root for a while (core/storage/car-ingest.ts). */
export type CarImportServices = Pick<Services, 'config' | 'db' | 'gate' | 'ipfs' | 'logger' | 'objects'>;

/** Garbage collection: import pins, finished uploads, then unreferenced blocks under the exclusive gate. */
export type CollectionServices = Pick<Services, 'config' | 'db' | 'gate' | 'ipfs' | 'logger' | 'uploads'>;

/** The lifecycle expiry run: buckets with rules, their versions and uploads, deleted through the stores (core/storage/lifecycle.ts). */
export type LifecycleServices = Pick<Services, 'db' | 'logger' | 'buckets' | 'objects' | 'uploads' | 'stagedParts'>;

/** The integrity check (npm run fsck): every object's DAG read back, the pin index rebuilt. */
export type IntegrityServices = Pick<Services, 'db' | 'gate' | 'ipfs' | 'logger' | 'objects'>;

/** What a site's change reaches outside the database: the CDN's cache and its map of site hosts, its IPNS record and its DNSLink records (core/hosting). */
export type SiteEdgeServices = Pick<Services, 'cdn' | 'deploys' | 'dnsLink' | 'domains' | 'ipnsNames' | 'logger' | 'siteHosts' | 'sites'>;

/** The S3-compatible door: keys to authenticate, buckets and objects, multipart uploads, the block store. */
export type StorageServices = Pick<
  Services,
  | 'config'
  | 'logger'
  | 'storageKeys'
  | 'accounts'
  | 'people'
  | 'buckets'
  | 'objects'
  | 'uploads'
  | 'stagedParts'
  | 'ipfs'
  | 'gate'
  | 'leafHasher'
>;

/** The gateway: public objects, /ipfs/ and /ipns/ content, sites by host and by their own domains (their published deploys, the site cache), the routing API's IPNS records. */
export type GatewayServices = Pick<
  Services,
  | 'config'
  | 'logger'
  | 'sites'
  | 'domains'
  | 'domainCertificates'
  | 'deploys'
  | 'siteCache'
  | 'objects'
  | 'buckets'
  | 'ipfs'
  | 'ipnsNames'
  | 'rateLimits'
>;

/**
 * What an entry point chooses for what differs between one machine and
 * AWS: one adapter per port, built before the services.
 */
export interface Adapters {
  /** Seals secrets at rest: AES-256-GCM with a local key, or KMS. */
  sealer: SecretSealer;
  /** Opens the IPFS node; called once, on first use (the GraphQL function never needs one). */
  openIpfs(): Promise<IpfsNode>;
  /** The upload gate, over the services' database: in-process locally, in DynamoDB across Lambda instances. */
  gate(db: Database): UploadGate;
  leafHasher: Services['leafHasher'];
  deployLogs: LogStore;
  deployQueue: DeployQueue;
  notificationOutbox: NotificationOutbox;
  cdn: CdnPurger;
  siteHosts: SiteHostMap;
  siteCache?: SiteCache;
  mailer: Mailer;
  stagedParts?: StagedPartStore;
  /** Certificates for sites' own domains; none issued when absent. */
  domainCertificates?: DomainCertificates;
  /** The same, where they live at the CDN and keep their own records (AWS: CloudFront tenants), made over the services' stores. */
  edgeDomains?(parts: { db: Database; domains: DomainStore; cdn: CdnPurger; siteHosts: SiteHostMap; logger: Logger }): DomainCertificates;
  /** Where sites' DNSLink records are written; nowhere when absent. */
  dnsLink?: DnsLinkZone;
}

export interface ServiceOptions {
  /** Every line the services write goes through it (a Lambda's Powertools logger); one at the config's level otherwise. */
  logger?: Logger;
  /** Reach the embedded database in this process directly (the local service). */
  dynamo?: InProcessTransport;
}

export async function createServices(config: Config, adapters: Adapters, options: ServiceOptions = {}): Promise<Services> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const db = createDatabase(config, options.dynamo);
  const { sealer } = adapters;
  const storageKeys = new StorageKeyStore(db, sealer);
  const apiKeys = new ApiKeyStore(db);
  let node: Promise<IpfsNode> | undefined;
  const domains = new DomainStore(db, sealer);
  // A deploy's end publishes its site in the same transaction: the site store forgets what it remembered of it.
  const sites = new SiteStore(db, sealer, undefined, config.dynamodb.recentReadsMs);
  const { cdn, siteHosts } = adapters;
  return {
    config,
    logger,
    db,
    accounts: new AccountStore(db, storageKeys),
    teams: new TeamStore(db, apiKeys),
    apiKeys,
    storageKeys,
    signingKeys: new SigningKeyStore(db, sealer),
    people: new PersonStore(db),
    passkeys: new PasskeyStore(db),
    recoveryCodes: new RecoveryCodeStore(db),
    sessions: new SessionStore(db),
    signInAttempts: new SignInAttemptStore(db),
    invitations: new InvitationStore(db),
    accountLinks: new AccountLinkStore(db),
    rateLimits: new RateLimitStore(db),
    buckets: new BucketStore(db),
    objects: new VersionedObjectStore(db),
    uploads: new UploadStore(db),
    stagedParts: adapters.stagedParts,
    sites,
    domains,
    domainCertificates:
      adapters.domainCertificates ?? adapters.edgeDomains?.({ db, domains, cdn, siteHosts, logger }) ?? noDomainCertificates,
    dnsLink: adapters.dnsLink ?? noDnsLinkZone,
    deploys: new DeployStore(db, undefined, sites, config.dynamodb.recentReadsMs),
    siteSecrets: new SiteSecretStore(db, sealer),
    ipnsNames: new IpnsNameStore(db, sealer),
    hookDeliveries: new HookDeliveryStore(db),
    notificationUrls: new NotificationUrlStore(db, sealer),
    notificationDeliveries: new NotificationDeliveryStore(db),
    notificationOutbox: adapters.notificationOutbox,
    deployLogs: adapters.deployLogs,
    deployQueue: adapters.deployQueue,
    siteCache: adapters.siteCache,
    cdn: adapters.cdn,
    siteHosts: adapters.siteHosts,
    mailer: adapters.mailer,
    ipfs: () => (node ??= adapters.openIpfs()),
    gate: adapters.gate(db),
    leafHasher: adapters.leafHasher,
    async close() {
      if (node) await (await node).stop();
      db.client.destroy();
    },
  };
}
