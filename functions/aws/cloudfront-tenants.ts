/**
 * Sites' own domains in AWS: each verified domain becomes a distribution
 * tenant of the stack's multi-tenant CloudFront distribution (lib/site-cdn.ts),
 * in its connection group, asking for a CloudFront-managed certificate
 * validated over HTTP, which CloudFront answers itself once the domain's
 * CNAME names the connection group's routing endpoint
 * (ManagedCertificateRequest, ValidationTokenHost `cloudfront`:
 * https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_ManagedCertificateRequest.html).
 * One tenant per domain, not per site: CloudFront allows one pending
 * certificate request per tenant, and a tenant's new certificate replaces
 * the old (https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/managed-cloudfront-certificates.html,
 * "Domain considerations"), so a `www` added later would put the apex's
 * live certificate at stake; per domain, each is issued, fails and goes
 * alone.
 *
 * A Lambda stops between events, so nothing here runs in the background:
 * `request` creates the tenant before it resolves, and the deploy worker's
 * minute tick (`settle`) follows each one's certificate
 * (GetManagedCertificateDetails: pending-validation | issued | inactive |
 * expired | validation-timed-out | revoked | failed,
 * https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_ManagedCertificateDetails.html)
 * and moves the domain ISSUING_CERTIFICATE -> ACTIVE (its host map entry
 * written, the site purged) or FAILED with the reason. What waits is kept
 * in DynamoDB (core/data/edge-tenants.ts), so a retry or another instance
 * picks it up.
 *
 * Letting a domain go disables its tenant, then deletes it: CloudFront
 * refuses to delete a tenant not disabled (ResourceNotDisabled), and every
 * change names the version read (If-Match with GetDistributionTenant's
 * ETag; a stale one is PreconditionFailed, read again)
 * (https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_DeleteDistributionTenant.html,
 * API_UpdateDistributionTenant.html). What cannot be done now is done by
 * a later tick. A name CloudFront already serves elsewhere (another
 * distribution or tenant, in any account) is CNAMEAlreadyExists: the
 * domain FAILS with that reason. Throttling is tried again with pauses
 * (core/retry.ts); every other failure is logged and left to the tick.
 */
import { createHash } from 'node:crypto';
import {
  CreateDistributionTenantCommand,
  DeleteDistributionTenantCommand,
  GetDistributionTenantCommand,
  GetManagedCertificateDetailsCommand,
  UpdateDistributionTenantCommand,
  type CloudFrontClient,
  type DistributionTenant,
} from '@aws-sdk/client-cloudfront';
import type { Logger } from '../core/logger.js';
import type { CdnPurger, SiteHostMap } from '../core/ports/site-cache.js';
import type { DomainCertificates } from '../core/ports/domain-certificates.js';
import type { DomainStore } from '../core/data/domains.js';
import { EdgeTenantStore, type EdgeTenant } from '../core/data/edge-tenants.js';
import { retry } from '../core/retry.js';
import { domainHostEntry } from '../core/hosting/site-host-map.js';
import { pairOf } from '../core/hosting/domain-names.js';

export interface CloudFrontTenantsParts {
  cloudFront: CloudFrontClient;
  distributionId: string;
  connectionGroupId: string;
  domains: DomainStore;
  tenants: EdgeTenantStore;
  cdn: CdnPurger;
  siteHosts: SiteHostMap;
  logger: Logger;
  now?: () => Date;
}

/** Tenants looked at per phase per tick: each is one or two calls. */
const PER_TICK = 25;
/** CloudFront's throttling, as the SDK names the error (its code). */
const THROTTLED = new Set(['Throttling', 'ThrottlingException', 'TooManyRequestsException', 'RequestLimitExceeded']);
const THROTTLE_RETRY = { attempts: 4, baseMs: 250, maxMs: 2000, jitter: 'full' as const };

const nameOf = (err: unknown) => (err as { name?: string } | undefined)?.name ?? '';

/** Why a certificate in this state will not be issued without a new request (ManagedCertificateDetails' CertificateStatus). */
const CERTIFICATE_FAILED: Record<string, string> = {
  'validation-timed-out':
    'the certificate was not issued: its HTTP validation timed out (CloudFront could not reach the domain; check that its CNAME names the routing endpoint shown, then verify again)',
  failed: 'the certificate request failed at AWS Certificate Manager; verify again to ask anew',
  revoked: 'the certificate was revoked; verify again to ask for a new one',
  expired: 'the certificate expired without renewal (the domain stopped pointing at the CDN); verify again',
  inactive: 'the certificate is inactive; verify again to ask for a new one',
};

export class CloudFrontTenants implements DomainCertificates {
  readonly issues = true;
  private readonly now: () => Date;

  constructor(private readonly parts: CloudFrontTenantsParts) {
    this.now = parts.now ?? (() => new Date());
  }

  challengeAnswer(): undefined {
    // CloudFront answers the certificate's HTTP validation itself.
    return undefined;
  }

  /**
   * The tenant's name: unique in the account, so derived from the
   * distribution and the domain (two stacks in one account never share a
   * tenant), and of the characters a name may have.
   */
  tenantName(domain: string): string {
    // The name pattern is [a-zA-Z0-9][a-zA-Z0-9-.]{1,126}[a-zA-Z0-9] (https://docs.aws.amazon.com/cli/latest/reference/cloudfront/create-distribution-tenant.html).
    return `cairn-${createHash('sha256').update(`${this.parts.distributionId}:${domain}`).digest('hex').slice(0, 40)}`;
  }

  private send<T>(command: unknown): Promise<T> {
    return retry(() => this.parts.cloudFront.send(command as never) as Promise<T>, {
      ...THROTTLE_RETRY,
      retryable: (err) => THROTTLED.has(nameOf(err)),
    });
  }

  async request(siteId: string, domain: string): Promise<void> {
    try {
      const held = await this.parts.tenants.get(domain);
      const record = await this.parts.tenants.put({ domain, siteId, tenantId: held?.tenantId ?? null, phase: 'issuing' });
      await this.provision(record);
    } catch (err) {
      // Left for the tick: the record says what is wanted.
      this.parts.logger.warn('could not ask CloudFront for a domain; tried again at the next tick', { domain, err });
    }
  }

  async released(domain: string): Promise<void> {
    try {
      const held = await this.parts.tenants.get(domain);
      // Another site's domain record of the same name removed: the holder's tenant stays.
      const holder = held && (await this.parts.domains.claimOf(domain))?.siteId;
      if (held && holder !== held.siteId) {
        const record = await this.parts.tenants.put({ ...held, phase: 'releasing', since: undefined });
        await this.letGo(record);
      }
      await this.parts.siteHosts.reconcile(domain, () => domainHostEntry(this.parts, domain));
    } catch (err) {
      this.parts.logger.warn('could not let a domain go at CloudFront; tried again at the next tick', { domain, err });
    }
  }

  async settle(): Promise<void> {
    for (const phase of ['releasing', 'issuing'] as const) {
      let due: EdgeTenant[];
      try {
        due = await this.parts.tenants.inPhase(phase, PER_TICK);
      } catch (err) {
        this.parts.logger.error('could not read the domains waiting on CloudFront', { phase, err });
        continue;
      }
      for (const record of due) {
        try {
          if (phase === 'releasing') await this.letGo(record);
          else await this.follow(record);
        } catch (err) {
          this.parts.logger.warn('a domain waiting on CloudFront could not be moved along; tried again at the next tick', {
            domain: record.domain,
            phase,
            err,
          });
        }
      }
    }
  }

  /** The tenant, made or (a tenant let go and asked for again) enabled again, for the site. */
  private async provision(record: EdgeTenant): Promise<void> {
    const { domain, siteId } = record;
    let tenant: DistributionTenant | undefined;
    try {
      if (record.tenantId) tenant = await this.enabled(record.tenantId);
      if (!tenant) {
        const out = await this.send<{ DistributionTenant?: DistributionTenant }>(
          new CreateDistributionTenantCommand({
            DistributionId: this.parts.distributionId,
            Name: this.tenantName(domain),
            Domains: [{ Domain: domain }],
            ConnectionGroupId: this.parts.connectionGroupId,
            ManagedCertificateRequest: { ValidationTokenHost: 'cloudfront', PrimaryDomainName: domain },
            Enabled: true,
            Tags: { Items: [{ Key: 'cairn:domain', Value: domain }] },
          }),
        );
        tenant = out.DistributionTenant;
      }
    } catch (err) {
      if (nameOf(err) === 'EntityAlreadyExists') {
        // A create that went through before (a retry): the tenant of this name is ours.
        tenant = await this.enabled(this.tenantName(domain));
      } else if (nameOf(err) === 'CNAMEAlreadyExists') {
        await this.fail(
          record,
          `${domain} is already served by another CloudFront distribution or tenant (perhaps in another AWS account): remove it there, then verify again`,
        );
        return;
      } else throw err;
    }
    if (!tenant?.Id) throw new Error(`CloudFront answered no tenant id for ${domain}`);
    await this.parts.tenants.put({ ...record, tenantId: tenant.Id, since: record.since });
    this.parts.logger.info('domain asked of CloudFront', { domain, siteId, tenantId: tenant.Id });
  }

  /** The tenant by id or name, enabled (re-enabled if it was let go); undefined when CloudFront has none. */
  private async enabled(identifier: string): Promise<DistributionTenant | undefined> {
    for (let stale = 0; ; stale++) {
      let got: { DistributionTenant?: DistributionTenant; ETag?: string };
      try {
        got = await this.send(new GetDistributionTenantCommand({ Identifier: identifier }));
      } catch (err) {
        if (nameOf(err) === 'EntityNotFound') return undefined;
        throw err;
      }
      const tenant = got.DistributionTenant;
      if (!tenant) return undefined;
      // A tenant let go after its certificate failed asks for a new one as it comes back.
      const certificate = await this.certificateStatus(tenant.Id!);
      const renew = certificate === undefined || certificate in CERTIFICATE_FAILED;
      if (tenant.Enabled && !renew) return tenant;
      try {
        const out = await this.send<{ DistributionTenant?: DistributionTenant }>(
          new UpdateDistributionTenantCommand({
            Id: tenant.Id,
            IfMatch: got.ETag,
            Enabled: true,
            ...(renew
              ? { ManagedCertificateRequest: { ValidationTokenHost: 'cloudfront', PrimaryDomainName: tenant.Domains?.[0]?.Domain } }
              : {}),
          }),
        );
        return out.DistributionTenant ?? tenant;
      } catch (err) {
        if (nameOf(err) !== 'PreconditionFailed' || stale >= 3) throw err;
      }
    }
  }

  /** One look at an issuing tenant: its certificate issued makes the domain ACTIVE; failed, FAILED. */
  private async follow(record: EdgeTenant): Promise<void> {
    const { domain, siteId } = record;
    const own = await this.parts.domains.get(siteId, domain);
    const claim = await this.parts.domains.claimOf(domain);
    if (!own || own.status !== 'ISSUING_CERTIFICATE' || claim?.siteId !== siteId) {
      // Removed, taken or verified anew meanwhile: whoever did that let go of it or asked again.
      if (!own || claim?.siteId !== siteId) await this.parts.tenants.put({ ...record, phase: 'releasing', since: undefined });
      return;
    }
    if (!record.tenantId) return this.provision(record);
    const status = await this.certificateStatus(record.tenantId);
    // The tenant is gone (deleted by hand): ask again.
    if (status === undefined) return this.provision({ ...record, tenantId: null });
    if (status === 'issued') {
      const done = await this.parts.domains.setStatus(siteId, domain, 'ACTIVE', null, { from: ['ISSUING_CERTIFICATE'] });
      await this.parts.tenants.put({ ...record, phase: done ? 'active' : 'releasing', since: undefined });
      if (!done) return;
      await this.syncHosts(domain);
      await this.parts.cdn.purgeSite(siteId);
      this.parts.logger.info('domain active on CloudFront', { domain, siteId, tenantId: record.tenantId });
      return;
    }
    const failed = status && CERTIFICATE_FAILED[status];
    if (failed) await this.fail(record, failed);
    // pending-validation: ACM's HTTP validation takes minutes, or days while the CNAME is missing; looked at again next tick.
  }

  /** The tenant's managed certificate's status; undefined when CloudFront has no such tenant or certificate. */
  private async certificateStatus(tenantId: string): Promise<string | undefined> {
    try {
      const out = await this.send<{ ManagedCertificateDetails?: { CertificateStatus?: string } }>(
        new GetManagedCertificateDetailsCommand({ Identifier: tenantId }),
      );
      return out.ManagedCertificateDetails?.CertificateStatus;
    } catch (err) {
      if (nameOf(err) === 'EntityNotFound') return undefined;
      throw err;
    }
  }

  private async fail(record: EdgeTenant, reason: string): Promise<void> {
    await this.parts.domains.setStatus(record.siteId, record.domain, 'FAILED', reason, { from: ['ISSUING_CERTIFICATE'] });
    // A tenant whose certificate will not come holds the name at CloudFront: let it go, so a new verification can ask afresh.
    if (record.tenantId) await this.letGo(await this.parts.tenants.put({ ...record, phase: 'releasing', since: undefined }));
    else await this.parts.tenants.delete(record.domain);
    this.parts.logger.warn('domain failed at CloudFront', { domain: record.domain, siteId: record.siteId, reason });
  }

  /** Disables the tenant, then deletes it; what CloudFront does not allow yet is left for the next tick. */
  private async letGo(record: EdgeTenant): Promise<void> {
    if (!record.tenantId) {
      await this.parts.tenants.delete(record.domain);
      return;
    }
    for (let stale = 0; ; stale++) {
      let got: { DistributionTenant?: DistributionTenant; ETag?: string };
      try {
        got = await this.send(new GetDistributionTenantCommand({ Identifier: record.tenantId }));
      } catch (err) {
        if (nameOf(err) !== 'EntityNotFound') throw err;
        await this.gone(record);
        return;
      }
      try {
        if (got.DistributionTenant?.Enabled) {
          await this.send(new UpdateDistributionTenantCommand({ Id: record.tenantId, IfMatch: got.ETag, Enabled: false }));
          continue; // read the new version, then delete
        }
        await this.send(new DeleteDistributionTenantCommand({ Id: record.tenantId, IfMatch: got.ETag }));
        await this.gone(record);
        return;
      } catch (err) {
        const name = nameOf(err);
        if (name === 'EntityNotFound') return this.gone(record);
        // Disabled, but not deployed as such yet: deleted at a later tick.
        if (name === 'ResourceNotDisabled') return;
        if (name !== 'PreconditionFailed' || stale >= 3) throw err;
      }
    }
  }

  private async gone(record: EdgeTenant): Promise<void> {
    // Asked for again meanwhile (another site took the name): that record is the new one.
    const now = await this.parts.tenants.get(record.domain);
    if (now && now.phase === 'releasing' && now.tenantId === record.tenantId) await this.parts.tenants.delete(record.domain);
    else if (now && now.tenantId === record.tenantId) await this.parts.tenants.put({ ...now, tenantId: null });
    this.parts.logger.info('domain let go at CloudFront', { domain: record.domain, tenantId: record.tenantId });
  }

  /** The host map entries of the domain and its apex/`www` pair (the pair's redirect follows the primary). */
  private async syncHosts(domain: string): Promise<void> {
    for (const name of [domain, pairOf(domain)].filter((n): n is string => !!n))
      await this.parts.siteHosts.reconcile(name, () => domainHostEntry(this.parts, name));
  }
}
