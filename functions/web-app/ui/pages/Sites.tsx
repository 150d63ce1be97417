/** The team's sites: each with its address, latest deploy and published preview. */
import { useState } from 'react';
import { siteUrl, useApp } from '../app-context.js';
import { EmptyState, ErrorNotice, ExternalLink, Loading, PageHeader, StatusBadge, TimeAgo } from '../components.js';
import { formatAgo } from '../format.js';
import { useLoad, usePolling, useTitle } from '../hooks.js';
import { SITES, type SiteSummary } from '../queries.js';
import { href } from '../router.js';

interface SitesPage {
  sites: SiteSummary[];
  nextToken: string | null;
}

export function Sites() {
  useTitle('Sites');
  const { api, team, config } = useApp();
  const [more, setMore] = useState<{ busy: boolean; error?: string }>({ busy: false });
  const loaded = useLoad(
    async () => (await api.query<{ getSitesByTeam: SitesPage }>(SITES, { teamId: team.id })).getSitesByTeam,
    [team.id],
  );
  const sites = loaded.data?.sites ?? [];
  const building = sites.some((s) => s.latestDeploy?.status === 'IN_PROGRESS');

  // While a site builds the list refreshes itself (the first page; later pages keep what they showed).
  usePolling(
    async () => {
      const first = (await api.query<{ getSitesByTeam: SitesPage }>(SITES, { teamId: team.id })).getSitesByTeam;
      loaded.setData((prev) => {
        if (!prev) return first;
        const fresh = new Map(first.sites.map((s) => [s.id, s]));
        const kept = prev.sites.map((s) => fresh.get(s.id) ?? s);
        const added = first.sites.filter((s) => !prev.sites.some((p) => p.id === s.id));
        return { sites: [...kept, ...added], nextToken: prev.nextToken };
      });
    },
    building ? 3000 : null,
  );

  const loadMore = async () => {
    if (!loaded.data?.nextToken) return;
    setMore({ busy: true });
    try {
      const next = (await api.query<{ getSitesByTeam: SitesPage }>(SITES, { teamId: team.id, nextToken: loaded.data.nextToken }))
        .getSitesByTeam;
      loaded.setData((prev) => ({ sites: [...(prev?.sites ?? []), ...next.sites], nextToken: next.nextToken }));
      setMore({ busy: false });
    } catch (err) {
      setMore({ busy: false, error: (err as Error).message });
    }
  };

  return (
    <>
      <PageHeader
        title="Sites"
        subtitle={`Web sites of ${team.name}, served from IPFS.`}
        actions={
          <a className="button button-primary" href={href({ name: 'new-site' })}>
            New site
          </a>
        }
      />
      {loaded.loading && !loaded.data ? <Loading label="Loading sites…" /> : null}
      {loaded.error ? <ErrorNotice retry={() => void loaded.reload()}>Could not load the sites: {loaded.error}</ErrorNotice> : null}
      {loaded.data && sites.length === 0 ? (
        <EmptyState title="No sites yet">
          <p>Create a site from a git repository or from content already on IPFS; each deploy is published at the site's own address.</p>
          <a className="button button-primary" href={href({ name: 'new-site' })}>
            Create your first site
          </a>
        </EmptyState>
      ) : null}
      {sites.length ? (
        <ul className="site-grid" aria-label="Sites">
          {sites.map((site) => (
            <SiteCard key={site.id} site={site} address={siteUrl(config, site.slug)} />
          ))}
        </ul>
      ) : null}
      {loaded.data?.nextToken ? (
        <div className="more">
          <button type="button" className="button" disabled={more.busy} onClick={() => void loadMore()}>
            {more.busy ? 'Loading…' : 'Load more sites'}
          </button>
          {more.error ? <ErrorNotice>{more.error}</ErrorNotice> : null}
        </div>
      ) : null}
    </>
  );
}

function SiteCard({ site, address }: { site: SiteSummary; address: string }) {
  const latest = site.latestDeploy;
  const preview = site.publishedDeploy?.previewImage;
  const source = site.deploySettings.source;
  return (
    <li className="site-card" data-site={site.slug}>
      <a className="site-card-preview" href={href({ name: 'site', siteId: site.id })} tabIndex={-1} aria-hidden="true">
        {preview ? (
          <img src={preview} alt="" loading="lazy" />
        ) : (
          <span className="preview-placeholder">{site.publishedDeploy ? 'No preview image' : 'Not published yet'}</span>
        )}
      </a>
      <div className="site-card-body">
        <h2 className="site-card-title">
          <a href={href({ name: 'site', siteId: site.id })}>{site.name}</a>
        </h2>
        <p className="site-card-address">
          {site.publishedDeploy ? (
            <ExternalLink href={address}>{address.replace(/^https?:\/\//, '').replace(/\/$/, '')}</ExternalLink>
          ) : (
            <span className="muted">Not published yet</span>
          )}
        </p>
        <p className="site-card-source muted">
          {source.__typename === 'Repository'
            ? `${source.url?.replace(/^https?:\/\//, '')} · ${source.branch}`
            : `IPFS ${source.cid ?? ''}`}
        </p>
        <div className="site-card-deploy">
          {latest ? (
            <>
              <StatusBadge status={latest.status} phase={latest.phase} />
              <span className="muted">
                Latest deploy <TimeAgo iso={latest.startedAt} formatted={formatAgo(latest.startedAt)} />
              </span>
            </>
          ) : (
            <span className="muted">No deploys yet</span>
          )}
        </div>
      </div>
    </li>
  );
}
