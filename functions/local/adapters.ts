/**
 * The adapters of the service on one machine: the in-process upload gate
 * (one process owns the data directory), large uploads hashed on a helper
 * thread, and what the server runs itself (its deploy worker, notification
 * loop and site cache), given by the server; an offline tool (fsck, admin)
 * gives none and gets the ones that only record (the deploys and
 * deliveries tables are the queues) and no cache to purge. Data goes where
 * the configuration puts it (configuredStores, functions/adapters/stores.ts):
 * the data directory unless a block bucket or a KMS key is named.
 */
import type { Config } from '../core/config.js';
import type { Adapters } from '../core/services.js';
import { pollingQueue, type DeployQueue } from '../core/ports/deploy-queue.js';
import { recordOnlyOutbox, type NotificationOutbox } from '../core/ports/notifications.js';
import { noCdn, noSiteHostMap, type SiteCache } from '../core/ports/site-cache.js';
import { inlineLeafHasher, ownHashThread, RemoteHashing, type HashChannel } from '../core/hashing/leaf-hasher.js';
import { configuredStores } from '../adapters/stores.js';
import { LocalUploadGate } from './upload-gate.js';
import type { DomainCertificates } from '../core/ports/domain-certificates.js';
import { rfc2136Zone } from '../adapters/rfc2136-dnslink-zone.js';

/** What the local server runs itself, built before its services and started with them. */
export interface LocalParts {
  deployQueue?: DeployQueue;
  notificationOutbox?: NotificationOutbox;
  /** The response cache of site addresses, which is also what publishing purges. */
  siteCache?: SiteCache;
  /** Certificates for sites' own domains (the ACME client), when configured. */
  domainCertificates?: DomainCertificates;
  /** A thread that hashes large uploads (the local service's helper thread); without one, the process starts its own when needed. */
  hashing?: HashChannel;
}

/**
 * Uploads at least this large are hashed on the hash thread. Smaller ones
 * gain little: a client that sends them in parallel (multipart parts of
 * 4-5 MiB) keeps the cores busy anyway, and leaves away to the other thread
 * cannot be reused meanwhile, so each upload holds more buffers.
 */
export const HASH_THREAD_MIN_BYTES = 8 * 1024 * 1024;

/** One RemoteHashing per channel: its job numbers are its own. */
const remotes = new WeakMap<HashChannel, RemoteHashing>();
function remoteFor(channel: HashChannel): RemoteHashing {
  let remote = remotes.get(channel);
  if (!remote) remotes.set(channel, (remote = new RemoteHashing(channel)));
  return remote;
}

/** The process's own hash thread, for services given none (started on first use, and again if it died). */
let ownHashing: RemoteHashing | undefined;
function processHashing(): RemoteHashing {
  if (!ownHashing || ownHashing.dead) ownHashing = new RemoteHashing(ownHashThread());
  return ownHashing;
}

export async function localAdapters(config: Config, parts: LocalParts = {}): Promise<Adapters> {
  const given = parts.hashing ? remoteFor(parts.hashing) : undefined;
  const remote = () => (given && !given.dead ? given : processHashing());
  return {
    ...(await configuredStores(config)),
    deployQueue: parts.deployQueue ?? pollingQueue,
    notificationOutbox: parts.notificationOutbox ?? recordOnlyOutbox,
    siteCache: parts.siteCache,
    domainCertificates: parts.domainCertificates,
    // DNSLink records by RFC 2136 updates, where CAIRN_DNSLINK_SERVER names a server.
    dnsLink: rfc2136Zone(config),
    cdn: parts.siteCache ?? noCdn,
    // No CDN maps hosts: the gateway reads the Host itself.
    siteHosts: noSiteHostMap,
    gate: () => new LocalUploadGate(),
    leafHasher: (digests, sizeHint) =>
      sizeHint !== undefined && sizeHint >= HASH_THREAD_MIN_BYTES ? remote().hasher(digests) : inlineLeafHasher(digests),
  };
}
