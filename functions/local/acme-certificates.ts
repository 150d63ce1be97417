/**
 * Certificates for sites' own domains on one machine: an ACME client
 * (RFC 8555, the acme-client library) orders one when a domain is
 * verified, answering the CA's HTTP-01 challenge on the gateway's HTTP
 * port (`/.well-known/acme-challenge/<token>`, RFC 8555 section 8.3),
 * keeps it with its private key sealed (data/domains.ts), marks the domain
 * ACTIVE, and renews it CAIRN_ACME_RENEW_BEFORE_DAYS (30) days before it
 * expires. The gateway's HTTPS listener serves each by SNI.
 *
 * The renewal timer catches and logs every failure and tries again at a
 * later check (backing off, at most a day apart); it never takes the
 * process down. Orders run two at a time, one per domain; the challenges
 * held in memory are only those of orders under way.
 */
import { readFile } from 'node:fs/promises';
import { Agent } from 'node:https';
import { createSecureContext, type SecureContext } from 'node:tls';
import * as acme from 'acme-client';
import { LRUCache } from 'lru-cache';
import type { Config } from '../core/config.js';
import type { Logger } from '../core/logger.js';
import type { Services } from '../core/services.js';
import type { DomainCertificates } from '../core/ports/domain-certificates.js';
import { taskLimit } from '../core/task-limit.js';
import { normalizeDomain } from '../core/hosting/domain-names.js';

type AcmeServices = Pick<Services, 'cdn' | 'config' | 'domains' | 'logger'>;

/** Orders under way at once: each is a few requests and a key generation. */
const ORDERS_AT_ONCE = 2;
/** Certificates looked at per renewal check (the soonest to expire first). */
const RENEWALS_PER_CHECK = 50;
/** A failed renewal is tried again after the check interval, doubling, at most this far apart. */
const MAX_RETRY_MS = 24 * 3600 * 1000;
/** How much of the CA's error a domain's reason keeps. */
const MAX_REASON = 300;

export class AcmeCertificates implements DomainCertificates {
  readonly issues = true;
  private services?: AcmeServices;
  private client?: Promise<acme.Client>;
  private readonly challenges = new Map<string, string>();
  private readonly ordering = new Map<string, Promise<void>>();
  private readonly contexts = new LRUCache<string, SecureContext>({ max: 1000 });
  private readonly failures = new Map<string, { count: number; notBefore: number }>();
  private readonly limit = taskLimit(ORDERS_AT_ONCE);
  private timer?: NodeJS.Timeout;
  private checking: Promise<void> = Promise.resolve();

  constructor(
    private readonly settings: NonNullable<Config['domains']['acme']>,
    private readonly logger: Logger,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Starts renewing; orders asked for before are refused (nothing asks before the services exist). */
  start(services: AcmeServices): void {
    this.services = services;
    let busy = false;
    this.timer = setInterval(() => {
      if (busy) return;
      busy = true;
      this.checking = this.renewDue()
        .catch((err: unknown) => this.logger.error('the certificate renewal check failed; tried again at the next one', { err }))
        .finally(() => (busy = false));
    }, this.settings.checkEverySeconds * 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.checking;
    await Promise.allSettled([...this.ordering.values()]);
  }

  challengeAnswer(token: string): string | undefined {
    return this.challenges.get(token);
  }

  released(domain: string): void {
    this.contexts.delete(domain);
    this.failures.delete(domain);
  }

  request(siteId: string, domain: string): void {
    void this.order(siteId, domain, false);
  }

  /** The TLS listener's SNI callback: the domain's certificate, or a failed handshake for a name with none. */
  sniCallback = (servername: string, callback: (err: Error | null, ctx?: SecureContext) => void): void => {
    this.contextOf(servername).then(
      (ctx) => (ctx ? callback(null, ctx) : callback(new Error('no certificate for this name'))),
      (err: unknown) => {
        this.logger.error('could not read a certificate for a TLS handshake', { err, servername: servername.slice(0, 253) });
        callback(new Error('no certificate for this name'));
      },
    );
  };

  private async contextOf(servername: string): Promise<SecureContext | undefined> {
    const services = this.services;
    if (!services || servername.length > 253) return undefined;
    let name: string;
    try {
      name = normalizeDomain(servername, services.config);
    } catch {
      return undefined;
    }
    const kept = this.contexts.get(name);
    if (kept) return kept;
    const cert = await services.domains.certificateOf(name);
    if (!cert) return undefined;
    const ctx = createSecureContext({ key: cert.privateKeyPem, cert: cert.certificatePem });
    this.contexts.set(name, ctx);
    return ctx;
  }

  private acmeClient(): Promise<acme.Client> {
    this.client ??= (async () => {
      const services = this.services!;
      if (this.settings.caFile) {
        // acme-client sends every request through its one axios instance.
        acme.axios.defaults.httpsAgent = new Agent({ ca: await readFile(this.settings.caFile) });
      }
      const { directoryUrl, email } = this.settings;
      const accountKey =
        (await services.domains.acmeAccountKey(directoryUrl)) ??
        (await services.domains.keepAcmeAccountKey(directoryUrl, (await acme.crypto.createPrivateEcdsaKey()).toString()));
      const client = new acme.Client({ directoryUrl, accountKey });
      await client.createAccount({ termsOfServiceAgreed: true, ...(email ? { contact: [`mailto:${email}`] } : {}) });
      return client;
    })();
    // A failed start (the CA unreachable) is tried afresh by the next order.
    this.client.catch(() => (this.client = undefined));
    return this.client;
  }

  /** One order for the domain at a time; a renewal leaves the domain ACTIVE when it fails (its certificate is still good). */
  private order(siteId: string, domain: string, renewal: boolean): Promise<void> {
    const running = this.ordering.get(domain);
    if (running) return running;
    const work = this.limit(() => this.issue(siteId, domain, renewal))
      .catch(async (err: unknown) => {
        const said = String((err as Error)?.message ?? err).slice(0, MAX_REASON);
        const failed = this.failures.get(domain);
        const count = (failed?.count ?? 0) + 1;
        const wait = Math.min(this.settings.checkEverySeconds * 1000 * 2 ** (count - 1), MAX_RETRY_MS);
        this.failures.set(domain, { count, notBefore: this.now().getTime() + wait });
        this.logger.warn(renewal ? 'a certificate renewal failed; tried again later' : 'a certificate order failed', { domain, err });
        const services = this.services;
        if (!services) return;
        if (!renewal)
          await services.domains.setStatus(siteId, domain, 'FAILED', `the certificate could not be issued: ${said}`, {
            from: ['ISSUING_CERTIFICATE'],
          });
        else {
          const cert = await services.domains.certificateOf(domain).catch(() => undefined);
          // Expired and not renewed: nothing valid is left to serve.
          if (cert && Date.parse(cert.notAfter) <= this.now().getTime()) {
            await services.domains.setStatus(siteId, domain, 'FAILED', `the certificate expired and could not be renewed: ${said}`, {
              from: ['ACTIVE'],
              also: { certificateExpiresAt: null },
            });
            this.contexts.delete(domain);
            await services.cdn.purgeSite(siteId);
          }
        }
      })
      .catch((err: unknown) => this.logger.error('could not record a certificate failure', { domain, err }))
      .finally(() => this.ordering.delete(domain));
    this.ordering.set(domain, work);
    return work;
  }

  private async issue(siteId: string, domain: string, renewal: boolean): Promise<void> {
    const services = this.services;
    if (!services) throw new Error('the certificate service has not started');
    const client = await this.acmeClient();
    const [key, csr] = await acme.crypto.createCsr({ commonName: domain, altNames: [domain] }, await acme.crypto.createPrivateEcdsaKey());
    const tokens: string[] = [];
    let certificate: string;
    try {
      certificate = await client.auto({
        csr,
        email: this.settings.email,
        termsOfServiceAgreed: true,
        challengePriority: ['http-01'],
        // The CA checks from where it is; a check from here would ask this machine's resolvers, not the domain's.
        skipChallengeVerification: true,
        challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
          if (challenge.type !== 'http-01') throw new Error(`unexpected challenge type ${challenge.type}`);
          this.challenges.set(challenge.token, keyAuthorization);
          tokens.push(challenge.token);
        },
        challengeRemoveFn: async (_authz, challenge) => {
          this.challenges.delete(challenge.token);
        },
      });
    } finally {
      for (const t of tokens) this.challenges.delete(t);
    }
    const info = acme.crypto.readCertificateInfo(certificate);
    const notAfter = info.notAfter.toISOString();
    const kept = await services.domains.putCertificate({
      domain,
      siteId,
      certificatePem: certificate,
      privateKeyPem: key.toString(),
      notAfter,
      issuedAt: this.now().toISOString(),
    });
    // Removed, or taken by another site, while the order ran: the certificate is of no use to this site.
    if (!kept) return;
    this.contexts.delete(domain);
    this.failures.delete(domain);
    await services.domains.setStatus(siteId, domain, 'ACTIVE', null, {
      from: renewal ? ['ACTIVE', 'FAILED'] : ['ISSUING_CERTIFICATE'],
      also: { certificateExpiresAt: notAfter },
    });
    await services.cdn.purgeSite(siteId);
    this.logger.info(renewal ? 'certificate renewed' : 'certificate issued', { domain, notAfter });
  }

  /** Renews what expires within the renewal window, a failed one no sooner than its back-off allows. */
  async renewDue(): Promise<void> {
    const services = this.services;
    if (!services) return;
    const now = this.now().getTime();
    const before = new Date(now + this.settings.renewBeforeDays * 24 * 3600 * 1000);
    const due = await services.domains.certificatesExpiringBefore(before, RENEWALS_PER_CHECK);
    await Promise.all(
      due.filter((c) => (this.failures.get(c.domain)?.notBefore ?? 0) <= now).map((c) => this.order(c.siteId, c.domain, true)),
    );
  }
}
