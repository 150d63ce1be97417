/**
 * A site's own domains: each with its state (pending DNS, verifying,
 * issuing its certificate, active, failed with the reason), the exact DNS
 * records to create (each with a copy button), and for the team's owners
 * an add form (the name checked here by the API's own rules first),
 * Verify, Make primary (of an apex and its `www`; the other redirects to
 * it) and Remove (asked twice). Members see the domains and their records
 * without the controls: the API refuses them the changes anyway.
 */
import { useState, type FormEvent } from 'react';
import type { WebAppConfig } from '../../app-config.js';
import { asciiDomainFault, hostOf, typedDomainFault } from '../../../core/hosting/domain-name-rules.js';
import { useApp } from '../app-context.js';
import { ActionNotice, ConfirmButton, CopyButton, EmptyState, Mono, PageHeader, siteNotReady, TimeAgo } from '../components.js';
import { formatAgo } from '../format.js';
import { useActions, useLoad, usePolling, useTitle } from '../hooks.js';
import { ADD_DOMAIN, REMOVE_DOMAIN, SET_PRIMARY_DOMAIN, SITE_DOMAINS, VERIFY_DOMAIN, type Domain, type DomainStatus } from '../queries.js';
import { href } from '../router.js';

interface SiteDomainsData {
  getCurrentMember: { accountId: string; role: 'OWNER' | 'MEMBER' } | null;
  getSiteById: { id: string; name: string; slug: string; domains: Domain[] } | null;
}

const STATUS_TEXT: Record<DomainStatus, string> = {
  PENDING_DNS: 'Pending DNS',
  VERIFYING: 'Verifying',
  ISSUING_CERTIFICATE: 'Issuing certificate',
  ACTIVE: 'Active',
  FAILED: 'Failed',
};
const STATUS_CLASS: Record<DomainStatus, string> = {
  PENDING_DNS: 'badge-cancelled',
  VERIFYING: 'badge-in-progress',
  ISSUING_CERTIFICATE: 'badge-in-progress',
  ACTIVE: 'badge-deployed',
  FAILED: 'badge-failed',
};

/** The service's own host names (never a site's domain), as the app knows them. */
function ownDomains(config: WebAppConfig): string[] {
  const hosts = [config.sites.domain, config.publicFiles.domain, window.location.host];
  for (const u of [config.gatewayUrl, config.storageEndpoint]) {
    try {
      hosts.push(new URL(u).host);
    } catch {
      // (the service's URLs always parse)
    }
  }
  return hosts.map(hostOf).filter((h) => h !== '' && !/^[\d.]+$/.test(h) && !h.startsWith('['));
}

/** What the API would say is wrong with the name (the same rules, converted by the browser's URL parser), or null. */
export function domainNameFault(input: string, own: readonly string[]): string | null {
  const typed = typedDomainFault(input);
  if ('fault' in typed) return typed.fault;
  let ascii: string;
  try {
    ascii = new URL(`http://${typed.trimmed}/`).hostname.toLowerCase().replace(/\.$/, '');
  } catch {
    return `"${typed.trimmed.slice(0, 80)}" is not a valid domain name`;
  }
  return asciiDomainFault(ascii, own) ?? null;
}

/** The apex/`www` pair of a name (the API's pairOf). */
const pairOf = (domain: string): string | undefined =>
  domain.startsWith('www.') ? (domain.slice(4).includes('.') ? domain.slice(4) : undefined) : `www.${domain}`;

export function SiteDomains({ siteId }: { siteId: string }) {
  const { api, config } = useApp();
  const data = useLoad(() => api.query<SiteDomainsData>(SITE_DOMAINS, { siteId }), [siteId]);
  const site = { ...data, data: data.data?.getSiteById ?? undefined };
  useTitle(site.data ? `Domains of ${site.data.name}` : 'Domains');
  // A verification or a certificate under way is followed until it settles.
  const moving = !!site.data?.domains.some((d) => d.status === 'VERIFYING' || d.status === 'ISSUING_CERTIFICATE');
  usePolling(() => data.reload(true), moving ? 3000 : null);
  const actions = useActions();
  const [name, setName] = useState('');
  const [fault, setFault] = useState<string | null>(null);

  const gate = siteNotReady(site);
  if (gate || !site.data) return gate;
  const s = site.data;
  const owner = data.data?.getCurrentMember?.role === 'OWNER';
  const busy = actions.pending !== null;
  const onChanged = () => void data.reload(true);

  const add = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const wrong = domainNameFault(name, ownDomains(config));
    setFault(wrong);
    if (wrong) return;
    const added = await actions.run(
      `Adding ${name.trim()}`,
      () => api.mutate<{ addDomain: Domain }>(ADD_DOMAIN, { siteId: s.id, domain: name }),
      (r) => `${r.addDomain.domain} is added: create the records shown, then verify it.`,
    );
    if (added) {
      setName('');
      onChanged();
    }
  };
  const verify = async (d: Domain) => {
    await actions.run(
      `Verifying ${d.domain}`,
      () => api.mutate<{ verifyDomain: Domain }>(VERIFY_DOMAIN, { siteId: s.id, domain: d.domain }),
      (r) =>
        r.verifyDomain.status === 'FAILED'
          ? `${d.domain} is not verified yet: ${r.verifyDomain.reason ?? 'its records are not right'}`
          : r.verifyDomain.status === 'ACTIVE'
            ? `${d.domain} is verified and served.`
            : `${d.domain} is verified; its certificate is on its way.`,
    );
    onChanged();
  };
  const makePrimary = async (d: Domain) => {
    const done = await actions.run(
      `Making ${d.domain} primary`,
      () => api.mutate(SET_PRIMARY_DOMAIN, { siteId: s.id, domain: d.domain }),
      () => `${d.domain} is primary: ${pairOf(d.domain)} redirects to it.`,
    );
    if (done) onChanged();
  };
  const remove = async (d: Domain) => {
    const done = await actions.run(
      `Removing ${d.domain}`,
      () => api.mutate(REMOVE_DOMAIN, { siteId: s.id, domain: d.domain }),
      () => `${d.domain} is removed: it is no longer served.`,
    );
    if (done) onChanged();
  };

  const names = new Set(s.domains.map((d) => d.domain));
  return (
    <>
      <PageHeader
        title="Domains"
        back={{ href: href({ name: 'site', siteId: s.id }), label: s.name }}
        subtitle="The site at your own domain names: add one, create its DNS records, then verify it."
      />
      <div className="stack">
        {owner ? (
          <section className="card" aria-labelledby="add-domain-title">
            <h2 id="add-domain-title">Add a domain</h2>
            <form className="form" noValidate onSubmit={(e) => void add(e)}>
              <div className="field">
                <label htmlFor="domain-name">Domain name</label>
                <input
                  id="domain-name"
                  className="mono"
                  value={name}
                  onChange={(e) => {
                    setName(e.currentTarget.value);
                    setFault(null);
                  }}
                  placeholder="www.example.com"
                  autoComplete="off"
                  spellCheck={false}
                  maxLength={1024}
                  aria-invalid={fault ? true : undefined}
                  aria-describedby="domain-name-hint"
                />
                <p id="domain-name-hint" className="hint">
                  {fault ? (
                    <span className="field-error" role="alert">
                      {fault}
                    </span>
                  ) : (
                    <>
                      A subdomain (<code>www.example.com</code>) points at the site with a CNAME; an apex (<code>example.com</code>) with
                      the records shown. Add both an apex and its <code>www</code>: one is primary, the other redirects to it.
                    </>
                  )}
                </p>
              </div>
              <div className="form-actions">
                <button type="submit" className="button button-primary" disabled={busy}>
                  Add domain
                </button>
              </div>
            </form>
          </section>
        ) : (
          <p className="notice notice-info" data-testid="domains-read-only">
            Only the team's owners add, verify and remove domains; you see them and their records here.
          </p>
        )}
        <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
        {s.domains.length === 0 ? (
          <EmptyState title="No domains yet.">
            <p>
              The site is at <code>{`${s.slug}.${config.sites.domain}`}</code>.
            </p>
          </EmptyState>
        ) : (
          s.domains.map((d) => {
            const pair = pairOf(d.domain);
            const paired = pair !== undefined && names.has(pair);
            return (
              <section key={d.domain} className="card domain" data-domain={d.domain} aria-labelledby={`domain-${d.domain}`}>
                <div className="domain-head">
                  <h2 id={`domain-${d.domain}`} className="mono">
                    {d.domain}
                  </h2>
                  <span className={`badge ${STATUS_CLASS[d.status]}`} data-status={d.status}>
                    {STATUS_TEXT[d.status]}
                  </span>
                </div>
                {d.status === 'FAILED' && d.reason ? (
                  <p className="notice notice-error" data-testid="domain-reason">
                    {d.reason}
                  </p>
                ) : null}
                {paired ? (
                  <p data-testid="domain-pair">
                    {d.primary ? (
                      <>
                        Primary: <code>{pair}</code> redirects here (301, path and query kept).
                      </>
                    ) : (
                      <>
                        Redirects to <code>{pair}</code>, the primary (301, path and query kept).
                      </>
                    )}
                  </p>
                ) : null}
                <p className="muted">
                  Added <TimeAgo iso={d.createdAt} formatted={formatAgo(d.createdAt)} />
                  {d.verifiedAt ? (
                    <>
                      , verified <TimeAgo iso={d.verifiedAt} formatted={formatAgo(d.verifiedAt)} />
                    </>
                  ) : null}
                  {d.certificateExpiresAt ? (
                    <>
                      ; its certificate expires{' '}
                      <TimeAgo iso={d.certificateExpiresAt} formatted={new Date(d.certificateExpiresAt).toLocaleDateString()} />
                    </>
                  ) : null}
                  .
                </p>
                <h3>DNS records to create</h3>
                <table className="table dns-records">
                  <thead>
                    <tr>
                      <th scope="col">Type</th>
                      <th scope="col">Name</th>
                      <th scope="col">Value</th>
                      <th scope="col">
                        <span className="visually-hidden">Copy</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.dnsRecords.map((r) => (
                      <tr key={`${r.type} ${r.name} ${r.value}`} data-record={r.type}>
                        <td data-label="Type">
                          <code>{r.type}</code>
                        </td>
                        <td data-label="Name">
                          <Mono>{r.name}</Mono>
                        </td>
                        <td data-label="Value">
                          <Mono>{r.value}</Mono>
                        </td>
                        <td className="actions">
                          <CopyButton text={r.value} label={`Copy ${r.type} value`} about={`for ${r.name}`} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
                <p className="hint">
                  The <code>TXT</code> record proves the name is yours: it is needed only to take the name from another site that serves it.
                </p>
                {owner ? (
                  <div className="toolbar section-actions">
                    <button type="button" className="button" disabled={busy} onClick={() => void verify(d)}>
                      Verify
                    </button>
                    {paired && !d.primary ? (
                      <button type="button" className="button" disabled={busy} onClick={() => void makePrimary(d)}>
                        Make primary
                      </button>
                    ) : null}
                    <ConfirmButton
                      small={false}
                      label="Remove"
                      confirmLabel={`Remove ${d.domain}`}
                      disabled={busy}
                      onConfirm={() => void remove(d)}
                    />
                  </div>
                ) : null}
              </section>
            );
          })
        )}
      </div>
    </>
  );
}
