/** One site: its address, settings and deploys (newest first, paged), and what can be done with them. */
import { useState, type FormEvent } from 'react';
import { ipnsLink, siteUrl, useApp } from '../app-context.js';
import {
  ActionNotice,
  ConfirmButton,
  CopyButton,
  EmptyState,
  ErrorNotice,
  ExternalLink,
  Loading,
  Mono,
  MoreButton,
  PageHeader,
  siteNotReady,
  StatusBadge,
  TimeAgo,
} from '../components.js';
import { DeployActions } from '../deploy-actions.js';
import { formatAgo, formatDuration, shortId } from '../format.js';
import { useActions, useLoad, useMore, usePolling, useTitle } from '../hooks.js';
import {
  DELETE_SITE,
  DEPLOY_SUMMARY_QUERY,
  DEPLOYS,
  PURGE_CACHE,
  SITE,
  TRIGGER_DEPLOY,
  type DeploySummary,
  type EnvironmentVariable,
  type Site as SiteData,
} from '../queries.js';
import { href, navigate } from '../router.js';

const PAGE = 10;

interface DeployPage {
  deploys: DeploySummary[];
  nextToken: string | null;
}

export function Site({ siteId }: { siteId: string }) {
  const { api, config } = useApp();
  const site = useLoad(async () => (await api.query<{ getSiteById: SiteData | null }>(SITE, { siteId })).getSiteById, [siteId]);
  const deploys = useLoad(
    async () => (await api.query<{ getDeploysBySite: DeployPage | null }>(DEPLOYS, { siteId, limit: PAGE })).getDeploysBySite,
    [siteId],
  );
  const actions = useActions();
  const [commit, setCommit] = useState('');
  const more = useMore(async () => {
    const token = deploys.data?.nextToken;
    if (!token) return;
    const next = (await api.query<{ getDeploysBySite: DeployPage | null }>(DEPLOYS, { siteId, limit: PAGE, nextToken: token }))
      .getDeploysBySite;
    deploys.setData((prev) => ({ deploys: [...(prev?.deploys ?? []), ...(next?.deploys ?? [])], nextToken: next?.nextToken ?? null }));
  });
  const [refreshError, setRefreshError] = useState<string | null>(null);
  useTitle(site.data?.name ?? 'Site');

  const list = deploys.data?.deploys ?? [];
  const running = list.some((d) => d.status === 'IN_PROGRESS');

  /** A fresh first page merged into what is shown (later pages keep what they showed). */
  const refresh = async () => {
    let first: DeployPage | null;
    try {
      first = (await api.query<{ getDeploysBySite: DeployPage | null }>(DEPLOYS, { siteId, limit: PAGE })).getDeploysBySite;
      setRefreshError(null);
    } catch (err) {
      setRefreshError((err as Error).message);
      return;
    }
    if (!first) return;
    const latest: DeployPage = first;
    const wasRunning = list.filter((d) => d.status === 'IN_PROGRESS').map((d) => d.id);
    // Deploys in progress further down the list are asked for one by one.
    const further = wasRunning.filter((id) => !latest.deploys.some((d) => d.id === id));
    const extra = (
      await Promise.all(
        further.map((deployId) =>
          api.query<{ getDeployById: DeploySummary | null }>(DEPLOY_SUMMARY_QUERY, { siteId, deployId }).catch(() => null),
        ),
      )
    )
      .map((r) => r?.getDeployById)
      .filter((d): d is DeploySummary => !!d);
    const updates = [...latest.deploys, ...extra];
    deploys.setData((prev) => {
      if (!prev) return latest;
      const updated = new Map(updates.map((d) => [d.id, d]));
      const newer = latest.deploys.filter((d) => !prev.deploys.some((p) => p.id === d.id));
      return { deploys: [...newer, ...prev.deploys.map((d) => updated.get(d.id) ?? d)], nextToken: prev.nextToken };
    });
    // A deploy that ended may have moved the published one.
    const ended = wasRunning.some((id) => updates.find((d) => d.id === id)?.status !== 'IN_PROGRESS');
    if (ended || latest.deploys.some((d) => d.published) !== !!site.data?.publishedDeploy) await site.reload(true);
  };
  usePolling(refresh, running ? 2000 : null);

  const afterAction = () => {
    void refresh();
    void site.reload(true);
  };

  const gate = siteNotReady(site);
  if (gate || !site.data) return gate;
  const s = site.data;
  const address = siteUrl(config, s.slug);
  const source = s.deploySettings.source;
  const published = s.publishedDeploy;

  const trigger = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const c = commit.trim();
    await actions.run(
      'Starting a deploy',
      () => api.mutate<{ triggerDeploy: DeploySummary }>(TRIGGER_DEPLOY, { siteId: s.id, commit: c || null }),
      (r) => `Deploy ${shortId(r.triggerDeploy.id)} started${c ? ` for commit ${c.slice(0, 12)}` : ''}.`,
    );
    setCommit('');
    afterAction();
  };
  const purge = async () => {
    await actions.run(
      'Purging the cache',
      () => api.mutate(PURGE_CACHE, { siteId: s.id }),
      () => 'The cache was purged: the next visits get the published deploy fresh.',
    );
  };
  const remove = async () => {
    const gone = await actions.run(
      `Deleting ${s.name}`,
      () => api.mutate<{ deleteSite: boolean }>(DELETE_SITE, { siteId: s.id }),
      () => `${s.name} was deleted.`,
    );
    if (gone?.deleteSite) navigate({ name: 'sites' });
  };

  return (
    <>
      <PageHeader
        title={s.name}
        back={{ href: href({ name: 'sites' }), label: 'Sites' }}
        subtitle={
          published ? (
            <ExternalLink href={address}>{address}</ExternalLink>
          ) : (
            <span className="muted">Not published yet: its address will be {address}</span>
          )
        }
        actions={
          <>
            <a className="button" href={href({ name: 'site-settings', siteId: s.id })}>
              Edit settings
            </a>
            <a className="button" href={href({ name: 'site-integrations', siteId: s.id })}>
              Git &amp; notifications
            </a>
            <a className="button" href={href({ name: 'site-domains', siteId: s.id })}>
              Domains
            </a>
            <ConfirmButton
              small={false}
              label="Delete site"
              confirmLabel="Delete the site and its deploys"
              disabled={actions.pending !== null}
              onConfirm={() => void remove()}
            />
          </>
        }
      />
      <div className="stack">
        <section className="card site-overview" aria-label="Overview">
          <div className="site-overview-preview">
            <h2>Published</h2>
            {published ? (
              <>
                {published.previewImage ? (
                  <img className="preview" src={published.previewImage} alt={`Preview of ${s.name}`} />
                ) : (
                  <div className="preview preview-placeholder">No preview image</div>
                )}
                <p className="caption">
                  Deploy <a href={href({ name: 'deploy', siteId: s.id, deployId: published.id })}>{shortId(published.id)}</a>
                  {published.repository.commit ? (
                    <>
                      {' '}
                      of <code>{published.repository.commit.slice(0, 7)}</code>
                    </>
                  ) : null}
                  , <TimeAgo iso={published.completedAt} formatted={formatAgo(published.completedAt)} />
                </p>
              </>
            ) : (
              <div className="preview preview-placeholder">
                {s.deploySettings.autoPublishing
                  ? 'Nothing published yet: a successful deploy is published at once.'
                  : 'Nothing published yet: publish a successful deploy.'}
              </div>
            )}
          </div>
          <div className="site-overview-facts">
            <h2>Settings</h2>
            <dl className="facts">
              <dt>Source</dt>
              <dd>
                {source.__typename === 'Repository' ? (
                  <>
                    {source.url} <span className="muted">({source.branch})</span>
                  </>
                ) : (
                  <Mono>{source.cid ?? ''}</Mono>
                )}
              </dd>
              <dt>Build command</dt>
              <dd>{s.buildSettings.buildCommand ? <code>{s.buildSettings.buildCommand}</code> : <span className="muted">none</span>}</dd>
              <dt>Publish directory</dt>
              <dd>
                <code>{[s.buildSettings.baseDirectoryPath, s.buildSettings.publishDirectoryPath].filter(Boolean).join('/') || '/'}</code>
              </dd>
              <dt>Auto-publishing</dt>
              <dd>{s.deploySettings.autoPublishing ? 'on' : 'off'}</dd>
              <dt>IPNS name</dt>
              <dd>
                {s.ipnsName ? (
                  <span className="copy-row">
                    <Mono>{s.ipnsName}</Mono>
                    <CopyButton text={s.ipnsName} label="Copy name" />
                    <ExternalLink href={ipnsLink(config.gatewayUrl, s.ipnsName)}>/ipns/</ExternalLink>
                  </span>
                ) : (
                  <span className="muted">made on the first publish</span>
                )}
              </dd>
              {s.description ? (
                <>
                  <dt>Description</dt>
                  <dd>{s.description}</dd>
                </>
              ) : null}
            </dl>
            {s.buildSettings.environmentVariables.length ? <EnvList vars={s.buildSettings.environmentVariables} /> : null}
          </div>
        </section>

        <section className="card site-deploys" aria-labelledby="deploys-title">
          <div className="section-header">
            <h2 id="deploys-title">Deploys</h2>
            <div className="toolbar">
              <form className="inline-form deploy-toolbar" onSubmit={(e) => void trigger(e)}>
                {source.__typename === 'Repository' ? (
                  <>
                    <label htmlFor="deploy-commit" className="visually-hidden">
                      Commit to deploy (optional; the branch's latest when empty)
                    </label>
                    <input
                      id="deploy-commit"
                      className="mono commit-input"
                      placeholder="commit (optional)"
                      value={commit}
                      onChange={(e) => setCommit(e.currentTarget.value)}
                      spellCheck={false}
                      autoComplete="off"
                    />
                  </>
                ) : null}
                <button type="submit" className="button button-primary" disabled={actions.pending !== null}>
                  Trigger deploy
                </button>
                <button type="button" className="button" disabled={actions.pending !== null} onClick={() => void purge()}>
                  Purge cache
                </button>
              </form>
            </div>
          </div>
          <ActionNotice result={actions.result} pending={actions.pending} onDismiss={actions.clear} />
          {deploys.loading && !deploys.data ? <Loading label="Loading deploys…" /> : null}
          {deploys.error ? (
            <ErrorNotice retry={() => void deploys.reload()}>Could not load the deploys: {deploys.error}</ErrorNotice>
          ) : null}
          {refreshError && !deploys.error ? (
            <p className="notice notice-error" role="status">
              Could not refresh the deploys ({refreshError}); trying again.
            </p>
          ) : null}
          {deploys.data && list.length === 0 ? (
            <EmptyState title="No deploys yet">Trigger the first one: it builds the branch's latest commit.</EmptyState>
          ) : null}
          {list.length ? (
            <ol className="deploy-list" aria-label="Deploys, newest first">
              {list.map((d) => (
                <li key={d.id} className="deploy-row" data-deploy={d.id} data-status={d.status}>
                  <div className="deploy-main">
                    <StatusBadge status={d.status} phase={d.phase} />
                    <a
                      className="deploy-id"
                      href={href({ name: 'deploy', siteId: s.id, deployId: d.id })}
                      aria-label={`Deploy ${shortId(d.id)}`}
                    >
                      {shortId(d.id)}
                    </a>
                    {d.published ? <span className="tag tag-published">Published</span> : null}
                    {d.preview ? <span className="tag">Preview</span> : null}
                  </div>
                  <div className="deploy-meta">
                    <span className="deploy-commit">
                      {d.repository.commit ? <code title={d.repository.commit}>{d.repository.commit.slice(0, 7)}</code> : null}
                      {d.repository.message ? (
                        <span className="commit-message">{d.repository.message}</span>
                      ) : d.repository.branch ? (
                        <span className="muted">{d.repository.branch}</span>
                      ) : null}
                    </span>
                    <span className="muted">
                      <TimeAgo iso={d.startedAt} formatted={formatAgo(d.startedAt)} />
                      {d.totalTime !== null ? ` · ${formatDuration(d.totalTime)}` : ''}
                    </span>
                  </div>
                  <DeployActions
                    api={api}
                    siteId={s.id}
                    deploy={d}
                    publishedId={published?.id ?? null}
                    actions={actions}
                    onChanged={afterAction}
                  />
                </li>
              ))}
            </ol>
          ) : null}
          {deploys.data?.nextToken ? <MoreButton more={more} label="Older deploys" /> : null}
        </section>
      </div>
    </>
  );
}

const SCOPE_NOTE: Record<EnvironmentVariable['scope'], string> = {
  ALL: '',
  PRODUCTION: ' (production only)',
  PREVIEWS: ' (previews only)',
};

function EnvList({ vars }: { vars: EnvironmentVariable[] }) {
  const [shown, setShown] = useState(false);
  return (
    <div className="env-view">
      <div className="env-header">
        <h3>Environment variables</h3>
        <button type="button" className="button button-small" aria-pressed={shown} onClick={() => setShown(!shown)}>
          {shown ? 'Hide values' : 'Show values'}
        </button>
      </div>
      <dl className="facts mono">
        {vars.map((v) => (
          <div key={v.name} className="fact">
            <dt>{v.name}</dt>
            <dd>
              {v.secret ? (
                <span className="muted">secret (set)</span>
              ) : v.value === null ? (
                <span className="muted">(not readable)</span>
              ) : shown ? (
                v.value
              ) : (
                '••••••••'
              )}
              {SCOPE_NOTE[v.scope] ? <span className="muted">{SCOPE_NOTE[v.scope]}</span> : null}
            </dd>
          </div>
        ))}
      </dl>
    </div>
  );
}
