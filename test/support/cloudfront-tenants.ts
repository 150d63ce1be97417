/**
 * CloudFront's distribution tenants as the test/aws suites see them: a
 * stand-in on aws-sdk-client-mock (as the other CloudFront stand-ins are,
 * test/aws/cdn.test.ts) that keeps tenants and answers as the API
 * reference says, recording every call:
 *
 *  - CreateDistributionTenant: a unique Name (EntityAlreadyExists), each
 *    domain on one CloudFront resource only, in any account
 *    (CNAMEAlreadyExists; `elsewhere` holds names other distributions
 *    serve), an ETag with the answer; a managed certificate request starts
 *    `pending-validation`.
 *  - GetDistributionTenant by id or name (EntityNotFound), with its ETag.
 *  - UpdateDistributionTenant with If-Match: a stale or missing version is
 *    PreconditionFailed / InvalidIfMatchVersion, and each change makes a new ETag.
 *  - DeleteDistributionTenant with If-Match, refused while enabled
 *    (ResourceNotDisabled); `deployLag` makes the first delete after a
 *    disable refused too, as while the disable is still deploying.
 *  - GetManagedCertificateDetails: the tenant's certificate status, which a
 *    test moves (`issue`, `setCertificate`).
 *  - Throttling: `throttleNext(n)` answers the next n calls with
 *    CloudFront's `Throttling` error.
 *
 * https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_CreateDistributionTenant.html,
 * API_UpdateDistributionTenant.html, API_DeleteDistributionTenant.html,
 * API_GetManagedCertificateDetails.html, API_ManagedCertificateDetails.html.
 */
import { randomBytes } from 'node:crypto';
import {
  CloudFrontClient,
  CloudFrontServiceException,
  CNAMEAlreadyExists,
  CreateDistributionTenantCommand,
  DeleteDistributionTenantCommand,
  EntityAlreadyExists,
  EntityNotFound,
  GetDistributionTenantCommand,
  GetManagedCertificateDetailsCommand,
  InvalidIfMatchVersion,
  PreconditionFailed,
  ResourceNotDisabled,
  UpdateDistributionTenantCommand,
  type CreateDistributionTenantCommandInput,
  type DistributionTenant,
  type UpdateDistributionTenantCommandInput,
} from '@aws-sdk/client-cloudfront';
import { mockClient } from 'aws-sdk-client-mock';

export type CertificateStatus = 'pending-validation' | 'issued' | 'inactive' | 'expired' | 'validation-timed-out' | 'revoked' | 'failed';

interface Kept {
  tenant: DistributionTenant;
  etag: string;
  certificate: CertificateStatus | undefined;
  /** Disabled, and the disable not deployed yet: a delete now is refused. */
  deploying: boolean;
}

const meta = { httpStatusCode: 400 } as const;

export function cloudFrontTenantsStandIn() {
  const mock = mockClient(CloudFrontClient);
  const tenants = new Map<string, Kept>();
  /** Names other CloudFront resources serve (CNAMEAlreadyExists). */
  const elsewhere = new Set<string>();
  const state = { throttle: 0, deployLag: false };
  const newEtag = () => `E${randomBytes(6).toString('hex').toUpperCase()}`;

  const find = (identifier: string): Kept => {
    for (const kept of tenants.values())
      if (kept.tenant.Id === identifier || kept.tenant.Name === identifier || kept.tenant.Arn === identifier) return kept;
    throw new EntityNotFound({ message: 'The specified distribution tenant does not exist.', $metadata: meta });
  };
  const throttled = () => {
    if (state.throttle <= 0) return;
    state.throttle--;
    throw new CloudFrontServiceException({ name: 'Throttling', $fault: 'client', message: 'Rate exceeded', $metadata: meta });
  };
  const inUse = (domain: string, except?: string) =>
    elsewhere.has(domain) ||
    [...tenants.values()].some((k) => k.tenant.Id !== except && k.tenant.Domains?.some((d) => d.Domain === domain));
  const checkIfMatch = (kept: Kept, ifMatch: string | undefined) => {
    if (!ifMatch) throw new InvalidIfMatchVersion({ message: 'The If-Match version is missing or not valid.', $metadata: meta });
    if (ifMatch !== kept.etag)
      throw new PreconditionFailed({
        message: 'The precondition given in one or more of the request fields evaluated to false.',
        $metadata: meta,
      });
  };
  const answer = (kept: Kept) => ({ DistributionTenant: structuredClone(kept.tenant), ETag: kept.etag });

  mock.on(CreateDistributionTenantCommand).callsFake((input: CreateDistributionTenantCommandInput) => {
    throttled();
    if ([...tenants.values()].some((k) => k.tenant.Name === input.Name))
      throw new EntityAlreadyExists({ message: 'A distribution tenant with this name already exists.', $metadata: meta });
    for (const d of input.Domains ?? [])
      if (inUse(d.Domain!))
        throw new CNAMEAlreadyExists({
          message: 'One or more of the CNAMEs you provided are already associated with a different resource.',
          $metadata: meta,
        });
    const id = `dt_${randomBytes(14).toString('hex')}`;
    const now = new Date();
    const kept: Kept = {
      tenant: {
        Id: id,
        Arn: `arn:aws:cloudfront::123456789012:distribution-tenant/${id}`,
        DistributionId: input.DistributionId,
        Name: input.Name,
        Domains: (input.Domains ?? []).map((d) => ({ Domain: d.Domain!, Status: 'inactive' })),
        ConnectionGroupId: input.ConnectionGroupId,
        Enabled: input.Enabled ?? true,
        Status: 'InProgress',
        CreatedTime: now,
        LastModifiedTime: now,
        Tags: input.Tags,
      },
      etag: newEtag(),
      certificate: input.ManagedCertificateRequest ? 'pending-validation' : undefined,
      deploying: false,
    };
    tenants.set(id, kept);
    return answer(kept);
  });
  mock.on(GetDistributionTenantCommand).callsFake((input: { Identifier: string }) => {
    throttled();
    return answer(find(input.Identifier));
  });
  mock.on(UpdateDistributionTenantCommand).callsFake((input: UpdateDistributionTenantCommandInput) => {
    throttled();
    const kept = find(input.Id!);
    checkIfMatch(kept, input.IfMatch);
    if (input.Enabled !== undefined) {
      if (kept.tenant.Enabled && !input.Enabled && state.deployLag) kept.deploying = true;
      kept.tenant.Enabled = input.Enabled;
    }
    if (input.Domains) {
      for (const d of input.Domains)
        if (inUse(d.Domain!, kept.tenant.Id))
          throw new CNAMEAlreadyExists({
            message: 'One or more of the CNAMEs you provided are already associated with a different resource.',
            $metadata: meta,
          });
      kept.tenant.Domains = input.Domains.map((d) => ({ Domain: d.Domain!, Status: 'inactive' }));
    }
    if (input.ManagedCertificateRequest) kept.certificate = 'pending-validation';
    kept.tenant.LastModifiedTime = new Date();
    kept.etag = newEtag();
    return answer(kept);
  });
  mock.on(DeleteDistributionTenantCommand).callsFake((input: { Id: string; IfMatch?: string }) => {
    throttled();
    const kept = find(input.Id);
    checkIfMatch(kept, input.IfMatch);
    if (kept.tenant.Enabled || kept.deploying) {
      kept.deploying = false;
      throw new ResourceNotDisabled({ message: 'The specified CloudFront resource hasn\u2019t been disabled yet.', $metadata: meta });
    }
    tenants.delete(kept.tenant.Id!);
    return {};
  });
  mock.on(GetManagedCertificateDetailsCommand).callsFake((input: { Identifier: string }) => {
    throttled();
    const kept = find(input.Identifier);
    if (!kept.certificate) throw new EntityNotFound({ message: 'The tenant has no managed certificate.', $metadata: meta });
    return {
      ManagedCertificateDetails: {
        CertificateArn: `arn:aws:acm:us-east-1:123456789012:certificate/${kept.tenant.Id}`,
        CertificateStatus: kept.certificate,
        ValidationTokenHost: 'cloudfront',
      },
    };
  });

  const byDomain = (domain: string) => [...tenants.values()].find((k) => k.tenant.Domains?.some((d) => d.Domain === domain));
  return {
    mock,
    tenants,
    elsewhere,
    state,
    byDomain,
    /** ACM issued the domain's certificate: its domain turns active, the tenant deployed. */
    issue(domain: string) {
      const kept = byDomain(domain);
      if (!kept) throw new Error(`no tenant holds ${domain}`);
      kept.certificate = 'issued';
      kept.tenant.Domains = kept.tenant.Domains!.map((d) => ({ ...d, Status: 'active' }));
      kept.tenant.Status = 'Deployed';
      kept.etag = newEtag();
    },
    setCertificate(domain: string, status: CertificateStatus) {
      const kept = byDomain(domain);
      if (!kept) throw new Error(`no tenant holds ${domain}`);
      kept.certificate = status;
      kept.etag = newEtag();
    },
    throttleNext(n: number) {
      state.throttle = n;
    },
    /** Every call made, in order, as [command name, input]. */
    calls(): Array<[string, Record<string, unknown>]> {
      return mock.calls().map((c) => [c.args[0].constructor.name, c.args[0].input as Record<string, unknown>]);
    },
    reset() {
      mock.resetHistory();
      tenants.clear();
      elsewhere.clear();
      state.throttle = 0;
      state.deployLag = false;
    },
  };
}

export type CloudFrontTenantsStandIn = ReturnType<typeof cloudFrontTenantsStandIn>;
