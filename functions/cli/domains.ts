/**
 * `cairn domains add|ls|rm|verify|primary`: a site's own domains, with the
 * DNS records to create for each (records are printed one a line, tab
 * separated, so they can be copied or cut).
 */
import type { Command } from 'commander';
import type { Context } from './context.js';
import { CliError, table } from './output.js';
import { findSite } from './sites.js';

interface DnsRecord {
  type: string;
  name: string;
  value: string;
}

interface Domain {
  domain: string;
  status: string;
  reason?: string | null;
  primary: boolean;
  dnsRecords: DnsRecord[];
  certificateExpiresAt?: string | null;
}

const FIELDS = 'domain status reason primary certificateExpiresAt dnsRecords { type name value }';

const recordLines = (d: Domain) => d.dnsRecords.map((r) => `  ${r.type}\t${r.name}\t${r.value}`);

function describe(d: Domain): string[] {
  return [
    `${d.domain}: ${d.status}${d.primary ? '' : ' (redirects to its pair when both are active)'}`,
    ...(d.reason ? [`  ${d.reason}`] : []),
    ...(d.certificateExpiresAt ? [`  certificate until ${d.certificateExpiresAt}`] : []),
  ];
}

async function addDomain(ref: string, domain: string, ctx: Context): Promise<void> {
  const api = await ctx.api();
  const site = await findSite(api, ref);
  const added = (
    await api.request<{ addDomain: Domain }>(`mutation ($s: ID!, $d: String!) { addDomain(siteId: $s, domain: $d) { ${FIELDS} } }`, {
      s: site.id,
      d: domain,
    })
  ).addDomain;
  ctx.out.result(added, () => [
    ...describe(added),
    'Create these records at your DNS host (the TXT one only to take the name from another site), then: cairn domains verify',
    ...recordLines(added),
  ]);
}

async function listDomains(ref: string, ctx: Context): Promise<void> {
  const api = await ctx.api();
  const site = await findSite(api, ref);
  const { getSiteById } = await api.request<{ getSiteById: { domains: Domain[] } | null }>(
    `query ($s: ID!) { getSiteById(siteId: $s) { domains { ${FIELDS} } } }`,
    { s: site.id },
  );
  const domains = getSiteById?.domains ?? [];
  ctx.out.result(domains, () =>
    domains.length === 0
      ? `${site.name} has no domains of its own (cairn domains add ${site.name} <domain>).`
      : [
          ...table(
            ['DOMAIN', 'STATUS', 'PRIMARY', 'CERTIFICATE UNTIL'],
            domains.map((d) => [d.domain, d.status, d.primary ? 'yes' : 'no', d.certificateExpiresAt ?? '-']),
          ),
          ...domains.flatMap((d) => [...(d.reason ? [`${d.domain}: ${d.reason}`] : []), ...recordLines(d)]),
        ],
  );
}

async function verifyDomain(ref: string, domain: string, ctx: Context): Promise<void> {
  const api = await ctx.api();
  const site = await findSite(api, ref);
  const verified = (
    await api.request<{ verifyDomain: Domain }>(`mutation ($s: ID!, $d: String!) { verifyDomain(siteId: $s, domain: $d) { ${FIELDS} } }`, {
      s: site.id,
      d: domain,
    })
  ).verifyDomain;
  ctx.out.result(verified, () => [...describe(verified), ...(verified.status === 'FAILED' ? recordLines(verified) : [])]);
  if (verified.status === 'FAILED') throw new CliError(`${verified.domain} is not verified: ${verified.reason ?? 'see above'}`);
}

async function removeDomain(ref: string, domain: string, ctx: Context): Promise<void> {
  const api = await ctx.api();
  const site = await findSite(api, ref);
  await api.request<{ removeDomain: boolean }>('mutation ($s: ID!, $d: String!) { removeDomain(siteId: $s, domain: $d) }', {
    s: site.id,
    d: domain,
  });
  ctx.out.result({ removed: true, domain, site: site.name }, () => `Removed ${domain} from ${site.name}: it is no longer served.`);
}

async function primaryDomain(ref: string, domain: string, ctx: Context): Promise<void> {
  const api = await ctx.api();
  const site = await findSite(api, ref);
  const made = (
    await api.request<{ setPrimaryDomain: Domain }>(
      `mutation ($s: ID!, $d: String!) { setPrimaryDomain(siteId: $s, domain: $d) { ${FIELDS} } }`,
      { s: site.id, d: domain },
    )
  ).setPrimaryDomain;
  ctx.out.result(made, () => describe(made));
}

export function registerDomains(program: Command, context: (command: Command) => Context): void {
  const domains = program.command('domains').description("a site's own domains: add, list, verify, remove");
  domains
    .command('add <site> <domain>')
    .description('add a domain to a site (by name or id) and print the DNS records to create')
    .action(async (site: string, domain: string, _o: unknown, command: Command) => addDomain(site, domain, context(command)));
  domains
    .command('ls <site>')
    .alias('list')
    .description("the site's domains, their state and their records")
    .action(async (site: string, _o: unknown, command: Command) => listDomains(site, context(command)));
  domains
    .command('verify <site> <domain>')
    .description('look the records up and, when right, serve the domain (exits non-zero when they are not)')
    .action(async (site: string, domain: string, _o: unknown, command: Command) => verifyDomain(site, domain, context(command)));
  domains
    .command('rm <site> <domain>')
    .alias('remove')
    .description('stop serving the domain and forget it')
    .action(async (site: string, domain: string, _o: unknown, command: Command) => removeDomain(site, domain, context(command)));
  domains
    .command('primary <site> <domain>')
    .description('serve this one of an apex and its www; the other redirects to it')
    .action(async (site: string, domain: string, _o: unknown, command: Command) => primaryDomain(site, domain, context(command)));
}
